//! Judging a pair run (pure): the one list of its topics, and bandwidth against the link's data
//! rate. The ends (`ends`), latency and counters (`signals`) and what the link carries (`wire`)
//! are their own files.

use super::side::Side;
pub use super::wire::{capacity, payload_efficiency};
use crate::model::Direction;
use crate::model::LinkLayer;
use crate::outcome::FindingId;
use crate::outcome::TestResult;
use crate::outcome::{Finding, Severity, Verdict};
use crate::probe::catype::CaKind;
use crate::units::rate as gbps;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Criteria {
    /// Share of the link's data rate the largest-size bandwidth must reach (0.9).
    pub bw_fraction: f64,
    pub max_lat_us: Option<f64>,
    /// What each end's link should be (`--expect`, `--profile`).
    pub expect: crate::diagnose::Expectations,
    /// lat_under_load: the loaded p99 may be this many times the idle one (`--load-threshold`).
    pub load_threshold: f64,
}

/// Smallest size judged against line rate: smaller messages are bound by message rate.
pub const JUDGED_MIN_SIZE: u32 = 65536;

/// What every topic of a pair reads: both ends, the results, the criteria, and what follows
/// from them once (Soft-RoCE on either end, the capacity judged against, the subject).
struct Pair<'a> {
    a: &'a Side,
    b: &'a Side,
    results: &'a [TestResult],
    criteria: &'a Criteria,
    soft: bool,
    cap: Option<crate::probe::capacity::Capacity>,
    subject: String,
}

/// A topic: what it judges of the pair, its findings appended.
type Topic = fn(&Pair<'_>, &mut Vec<Finding>);

/// Every topic of a pair, in the order a reader meets their findings within a severity.
const TOPICS: &[(&str, Topic)] = &[
    // Each end's link against --expect, and against the other end.
    ("ends", |p, findings| super::ends::judge(p.a, p.b, &p.criteria.expect, &p.subject, findings)),
    ("pcie bound", |p, findings| {
        if let (Some(c), false) = (p.cap, p.soft) {
            if c.pcie_bound {
                findings.push(pcie_bound(p.a, p.b, c.gbps, &p.subject));
            }
        }
    }),
    ("failed tests", |p, findings| failed(p.results, &p.subject, findings)),
    ("bandwidth", |p, findings| bandwidth(p.a, p.b, p.results, p.criteria, (p.soft, p.cap.map(|c| c.gbps)), &p.subject, findings)),
    ("latency", |p, findings| super::signals::latency(p.results, p.criteria.max_lat_us, &p.subject, findings)),
    ("latency under load", |p, findings| super::loaded::judge(p.results, p.criteria.load_threshold, p.soft, &p.subject, findings)),
    ("counters", |p, findings| super::signals::counters(p.results, &p.subject, findings)),
    ("paths", |p, findings| super::paths::judge(p.results, &p.subject, findings)),
    ("path MTU", |p, findings| super::ends::mtus_differ(p.a, p.b, &p.subject, findings)),
];

/// Judges a pair run: each topic's findings in the one order of `TOPICS`, then the verdict
/// from the errors.
pub fn judge(a: &Side, b: &Side, results: &[TestResult], criteria: &Criteria) -> (Verdict, Vec<Finding>) {
    let pair = Pair {
        a,
        b,
        results,
        criteria,
        soft: CaKind::of(&a.ca_type).is_software() || CaKind::of(&b.ca_type).is_software(),
        cap: capacity(a, b),
        subject: format!("{}/{} <-> {}/{}", a.host, a.device, b.host, b.device),
    };
    let mut findings = Vec::new();
    for (_, topic) in TOPICS {
        topic(&pair, &mut findings);
    }
    findings.sort_by_key(|f| f.severity);
    let verdict = if findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    (verdict, findings)
}

/// Bandwidth judged against what the slower end's PCIe link carries, not its link rate.
fn pcie_bound(a: &Side, b: &Side, capacity_gbps: f64, subject: &str) -> Finding {
    Finding {
        id: FindingId::PcieBound,
        severity: Severity::Warning,
        subject: subject.into(),
        message: format!(
            "bandwidth is judged against {} Gb/s, what the slower end's PCIe link carries, not its link rate",
            gbps(capacity_gbps.round())
        ),
        remedy: match crate::gpu::bound::sets_capacity(capacity_gbps, [a.gpu_pcie_gbps, b.gpu_pcie_gbps]) {
            true => crate::gpu::bound::GPU_BOUND_REMEDY,
            false => {
                "seat the adapter in a slot that can feed its port (NDR 400 needs PCIe Gen5 x16); `fabcheck check` shows pci.link and pcie.bound"
            }
        }
        .into(),
        about: None,
    }
}

/// The tests that could not complete: each its own finding (`pair.<test>`).
fn failed(results: &[TestResult], subject: &str, findings: &mut Vec<Finding>) {
    for r in results.iter().filter(|r| r.error.is_some()) {
        findings.push(Finding {
            id: FindingId::failed_test(r.test),
            severity: Severity::Error,
            subject: subject.into(),
            message: format!("{} {} failed: {}", r.test, r.direction, r.error.clone().unwrap_or_default()),
            remedy: r.remedy.clone().unwrap_or_else(|| "run `fabcheck check` on both nodes".into()),
            about: None,
        });
    }
}

/// Bandwidth: the largest size of each test and direction against the link (`link`: its
/// capacity in Gb/s; `soft`: Soft-RoCE, reported not judged).
fn bandwidth(
    a: &Side,
    b: &Side,
    results: &[TestResult],
    criteria: &Criteria,
    (soft, link): (bool, Option<f64>),
    subject: &str,
    findings: &mut Vec<Finding>,
) {
    // Bandwidth: the largest size of each test and direction (keyed by name: findings come in
    // the order of the names, as they always have).
    let mut largest: BTreeMap<(&str, &str), &TestResult> = BTreeMap::new();
    for r in results.iter().filter(|r| r.bw_gbps.is_some() && r.error.is_none()) {
        let e = largest.entry((r.test.name(), r.direction.name())).or_insert(r);
        if r.size > e.size {
            *e = r;
        }
    }
    if !soft && largest.values().all(|r| r.size < JUDGED_MIN_SIZE) && !largest.is_empty() {
        findings.push(Finding {
            id: FindingId::PairBw,
            severity: Severity::Info,
            subject: subject.into(),
            message: format!(
                "bandwidth is reported, not judged: the largest size was {} bytes, and below {JUDGED_MIN_SIZE} a transfer is bound by message rate, not the link",
                largest.values().map(|r| r.size).max().unwrap_or(0)
            ),
            remedy: format!("add --size {JUDGED_MIN_SIZE} (or --sweep) to judge the link"),
            about: None,
        });
    }
    if soft && !largest.is_empty() {
        findings.push(Finding {
            id: FindingId::PairBw,
            severity: Severity::Info,
            subject: subject.into(),
            message: "Soft-RoCE's link rate is synthesized from its netdev and its speed is CPU-bound: bandwidth is reported, not judged".into(),
            remedy: "judge real adapters; on rxe compare against perftest on the same device (benches/)".into(),
            about: None,
        });
    } else if let Some(rate) = link {
        for ((test, direction), r) in &largest {
            if r.size < JUDGED_MIN_SIZE {
                continue;
            }
            let capacity = if r.direction == Direction::Bidi { 2.0 * rate } else { rate };
            // The bar accounts for framing: the payload's share of the wire at the path MTU.
            let (efficiency, framing) = match payload_efficiency(a, b) {
                Some((e, mtu)) => (e, format!(", {:.1}% payload at MTU {mtu}", 100.0 * e)),
                None => (1.0, String::new()),
            };
            let need = criteria.bw_fraction * capacity * efficiency;
            let got = r.bw_gbps.unwrap_or(0.0);
            if got < need {
                findings.push(Finding {
                    id: FindingId::PairBw,
                    severity: Severity::Error,
                    subject: subject.into(),
                    message: format!(
                        "{test} {direction} at {} bytes: {} Gb/s is {:.0}% of the {} Gb/s link (needs {:.1}%: {:.0}% of what the link's payload can carry{framing})",
                        r.size,
                        gbps(got),
                        100.0 * got / capacity,
                        gbps(capacity),
                        100.0 * criteria.bw_fraction * efficiency,
                        100.0 * criteria.bw_fraction
                    ),
                    remedy: bw_remedy(a, b),
                    about: Some(r.key()),
                });
            }
        }
    }
}

fn bw_remedy(a: &Side, b: &Side) -> String {
    let mut causes = vec![
        "the adapter's PCIe link or slot (run `fabcheck check`: pci.link)",
        "the process far from the adapter's NUMA node (pin with numactl -N <node>)",
        "a link at reduced width or speed (link.width, link.rate)",
    ];
    if a.link_layer == LinkLayer::Ethernet || b.link_layer == LinkLayer::Ethernet {
        causes.push("on RoCE: MTU below 4096 (netdev MTU 9000), traffic on a priority PFC does not hold (pair.qos; `fabcheck check`'s roce.qos), or the wrong GID (a RoCE v1 or non-routed one)");
    }
    format!("likely causes: {}", causes.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TestKind;
    use crate::perf::summary::LatencySummary;

    fn side(ca: &str, rate: f64) -> Side {
        Side { gid_index: Some(3), rate_gbps: Some(rate), ca_type: ca.into(), ..super::super::side::test_side() }
    }

    fn bw(test: &str, dir: &str, size: u32, gbps: f64) -> TestResult {
        TestResult {
            paths: Vec::new(),
            test: TestKind::from_name(test).expect("a test name"),
            direction: serde_json::from_value(serde_json::Value::from(dir)).expect("a direction"),
            size,
            iterations: 5000,
            qps: 1,
            lat_us: None,
            bw_gbps: Some(gbps),
            peak_gbps: Some(gbps),
            msg_rate_mpps: Some(1.0),
            counters: BTreeMap::new(),
            error: None,
            remedy: None,
            under_load: None,
        }
    }

    fn criteria() -> Criteria {
        Criteria { bw_fraction: 0.9, max_lat_us: Some(5.0), expect: Default::default(), load_threshold: 4.0 }
    }

    #[test]
    fn hdr_link_at_full_rate_passes_and_at_half_fails() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 195.0)], &criteria());
        assert_eq!(v, Verdict::Pass, "{f:?}");
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 98.0)], &criteria());
        assert_eq!(v, Verdict::Fail);
        assert!(f[0].message.contains("49%"), "{}", f[0].message);
        // Bidirectional is judged against both directions' capacity.
        let (v, _) = judge(&a, &b, &[bw("write_bw", "bidi", 65536, 250.0)], &criteria());
        assert_eq!(v, Verdict::Fail);
    }

    #[test]
    fn slowest_end_sets_the_bar_and_small_sizes_are_not_judged() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 100.0));
        let (v, _) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 95.0)], &criteria());
        assert_eq!(v, Verdict::Pass);
        let (v, _) = judge(&a, &b, &[bw("write_bw", "a->b", 64, 1.0)], &criteria());
        assert_eq!(v, Verdict::Pass);
    }

    #[test]
    fn soft_roce_is_reported_not_judged() {
        let (a, b) = (side("Soft-RoCE (rxe)", 10.0), side("Soft-RoCE (rxe)", 10.0));
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 0.4)], &criteria());
        assert_eq!(v, Verdict::Pass);
        assert_eq!(f[0].severity, Severity::Info);
    }

    #[test]
    fn latency_limit_tail_and_retransmissions() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let mut r = bw("send_lat", "a->b", 2, 0.0);
        r.bw_gbps = None;
        r.lat_us = Some(LatencySummary { min: 1.0, p50: 6.0, p90: 7.0, p99: 8.0, p999: 200.0, max: 300.0, mean: 6.5, stdev: 1.0, preempt: None });
        r.counters.insert("a:out_of_sequence".into(), 4);
        let (v, f) = judge(&a, &b, &[r], &criteria());
        assert_eq!(v, Verdict::Fail);
        let ids: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
        assert!(ids.contains(&"pair.latency") && ids.contains(&"pair.tail") && ids.contains(&"pair.retransmission"), "{ids:?}");
    }

    #[test]
    fn threshold_90_fails_89_percent_and_passes_91() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let at_90 = Criteria { bw_fraction: 0.90, max_lat_us: None, expect: Default::default(), load_threshold: 4.0 };
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 178.0)], &at_90);
        assert_eq!(v, Verdict::Fail, "89% of the link at --threshold 90");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].id.as_str(), f[0].severity), ("pair.bw", Severity::Error));
        assert!(
            f[0].message.contains("is 89% of the 200 Gb/s link (needs 89.4%: 90% of what the link's payload can carry, 99.4% payload at MTU 4096)"),
            "{}",
            f[0].message
        );
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 182.0)], &at_90);
        assert_eq!(v, Verdict::Pass, "91% of the link at --threshold 90: {f:?}");
        assert!(f.is_empty(), "{f:?}");
        // Bidirectional: against twice the link.
        let (v, _) = judge(&a, &b, &[bw("write_bw", "bidi", 65536, 356.0)], &at_90);
        assert_eq!(v, Verdict::Fail, "89% of 400");
        let (v, _) = judge(&a, &b, &[bw("write_bw", "bidi", 65536, 364.0)], &at_90);
        assert_eq!(v, Verdict::Pass, "91% of 400");
        // The largest size of a sweep is the one judged.
        let sweep = [bw("write_bw", "a->b", 65536, 182.0), bw("write_bw", "a->b", 1 << 20, 178.0)];
        assert_eq!(judge(&a, &b, &sweep, &at_90).0, Verdict::Fail);
    }

    #[test]
    fn max_latency_is_judged_on_p50() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let c = Criteria { bw_fraction: 0.9, max_lat_us: Some(2.0), expect: Default::default(), load_threshold: 4.0 };
        let (v, f) = judge(&a, &b, &[lat(2.0)], &c);
        assert_eq!(v, Verdict::Pass, "{f:?}");
        let (v, f) = judge(&a, &b, &[lat(2.1)], &c);
        assert_eq!(v, Verdict::Fail);
        assert_eq!((f[0].id.as_str(), f[0].severity), ("pair.latency", Severity::Error));
        let (v, _) = judge(&a, &b, &[lat(50.0)], &Criteria { bw_fraction: 0.9, max_lat_us: None, expect: Default::default(), load_threshold: 4.0 });
        assert_eq!(v, Verdict::Pass, "no limit, no latency verdict");
    }

    #[test]
    fn differing_mtus_warn_with_the_one_used() {
        let (a, mut b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        b.mtu = Some(1024);
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 195.0)], &criteria());
        assert_eq!(v, Verdict::Pass);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].id.as_str(), f[0].severity), ("pair.mtu", Severity::Warning));
        assert!(f[0].message.contains("(4096 vs 1024); the connection used 1024"), "{}", f[0].message);
        b.mtu = Some(4096);
        assert!(judge(&a, &b, &[bw("write_bw", "a->b", 65536, 195.0)], &criteria()).1.is_empty());
    }

    #[test]
    fn failed_test_is_an_error_with_its_remedy() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let mut r = bw("write_bw", "a->b", 65536, 0.0);
        r.error = Some("the peer stopped acknowledging".into());
        r.remedy = Some("check the link".into());
        let (v, f) = judge(&a, &b, &[r], &criteria());
        assert_eq!(v, Verdict::Fail);
        assert_eq!(f[0].remedy, "check the link");
    }

    fn lat(p50: f64) -> TestResult {
        let mut r = bw("send_lat", "a->b", 2, 0.0);
        r.bw_gbps = None;
        r.lat_us = Some(LatencySummary {
            min: p50 - 0.2,
            p50,
            p90: p50 + 0.1,
            p99: p50 + 0.2,
            p999: p50 + 0.5,
            max: p50 + 1.0,
            mean: p50,
            stdev: 0.1,
            preempt: None,
        });
        r
    }

    #[test]
    fn a_preempted_latency_is_said_not_judged() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let mut r = lat(8000.0);
        let gaps = crate::perf::preempt::Preempt { gaps: 40, gap_ns: 320_000_000, elapsed_ns: 1_000_000_000 };
        r.lat_us = r.lat_us.map(|l| LatencySummary { preempt: Some(gaps), ..l });
        let (v, f) = judge(&a, &b, std::slice::from_ref(&r), &criteria());
        assert_ne!(v, Verdict::Fail, "{f:?}");
        assert_eq!(ids(&f), vec![(FindingId::PairLatency.to_string(), Severity::Info)]);
        assert_eq!(f[0].message, "send_lat a->b: latency not judged: preempted (40 gaps, 320 ms)");
        // Preempted below the bound: judged as usual.
        r.lat_us = r.lat_us.map(|l| LatencySummary { preempt: Some(crate::perf::preempt::Preempt { gap_ns: 1_000_000, ..gaps }), ..l });
        assert_eq!(judge(&a, &b, &[r], &criteria()).0, Verdict::Fail);
    }

    fn ids(findings: &[Finding]) -> Vec<(String, Severity)> {
        findings.iter().map(|f| (f.id.to_string(), f.severity)).collect()
    }

    #[test]
    fn a_pcie_bound_pair_is_judged_against_pcie() {
        // NDR 400 behind PCIe Gen4 x16 (230 Gb/s usable): 220 passes, 150 fails against 230.
        let mut a = side("ConnectX-7", 400.0);
        a.pcie_gbps = Some(230.5);
        let b = side("ConnectX-7", 400.0);
        assert_eq!(capacity(&a, &b), Some(crate::probe::capacity::Capacity { gbps: 230.5, pcie_bound: true }));
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 220.0)], &criteria());
        assert_eq!(v, Verdict::Pass, "{f:#?}");
        assert!(ids(&f).contains(&("pcie.bound".into(), Severity::Warning)));
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 150.0)], &criteria());
        assert_eq!(v, Verdict::Fail);
        assert!(f.iter().any(|f| f.id == FindingId::PairBw && f.message.contains("of the 230.5 Gb/s link")), "{f:#?}");
        let nic = f.iter().find(|f| f.id == FindingId::PcieBound).unwrap();
        assert!(nic.remedy.contains("seat the adapter"), "{nic:?}");
        // --mem cuda: a Gen4 x16 GPU sets the bound, not the NIC's slot.
        a.gpu_pcie_gbps = Some(230.5);
        let (_, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 220.0)], &criteria());
        let gpu = f.iter().find(|f| f.id == FindingId::PcieBound).unwrap();
        assert_eq!(gpu.remedy, crate::gpu::bound::GPU_BOUND_REMEDY, "{gpu:?}");
    }

    #[test]
    fn an_end_that_trained_low_fails_the_pair_even_at_full_negotiated_rate() {
        // A 4X HDR card trained at 4X EDR runs 97 of 100 Gb/s: the negotiated rate would pass it.
        let a = side("ConnectX-6", 200.0);
        let mut b = side("ConnectX-6", 100.0);
        b.host = "n2".into();
        b.trained_low = Some("speed EDR of HDR".into());
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 97.0)], &criteria());
        assert_eq!(v, Verdict::Fail);
        let cap = f.iter().find(|f| f.id == FindingId::PairCapacity).expect("pair.capacity");
        assert!(cap.message.starts_with("B (n2/mlx5_0) trained below") && cap.message.contains("EDR of HDR"), "{}", cap.message);
        assert!(ids(&f).contains(&("pair.rate".into(), Severity::Warning)), "ends at 200 and 100: {f:#?}");
    }

    #[test]
    fn the_bar_accounts_for_framing() {
        // RoCE at MTU 1024: 1024 of every 1106 bytes on the wire are payload (92.6%); a 400G
        // link moving 340 Gb/s is at 92% of the payload it can carry, above a 90% bar.
        let mut a = side("ConnectX-7", 400.0);
        a.link_layer = crate::model::LinkLayer::Ethernet;
        a.mtu = Some(1024);
        a.gid = Some("::ffff:198.18.3.10".parse().unwrap());
        let b = Side { host: "n2".into(), ..a.clone() };
        let (e, mtu) = payload_efficiency(&a, &b).unwrap();
        assert_eq!((format!("{:.3}", e), mtu), ("0.926".to_string(), 1024));
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 340.0)], &criteria());
        assert_eq!(v, Verdict::Pass, "{f:#?}");
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 320.0)], &criteria());
        assert_eq!(v, Verdict::Fail);
        let m = &f.iter().find(|f| f.id == FindingId::PairBw).unwrap().message;
        assert!(m.contains("needs 83.3%") && m.contains("92.6% payload at MTU 1024"), "{m}");
        // InfiniBand at 4096: LRH+BTH+ICRC+VCRC, 99.4%.
        let ib = side("ConnectX-6", 200.0);
        assert_eq!(payload_efficiency(&ib, &ib).map(|(e, _)| format!("{e:.3}")), Some("0.994".into()));
    }

    #[test]
    fn expectations_apply_to_both_ends() {
        let mut c = criteria();
        c.expect.set("rate=200").unwrap();
        let (v, f) = judge(&side("ConnectX-6", 200.0), &side("ConnectX-6", 200.0), &[bw("write_bw", "a->b", 65536, 190.0)], &c);
        assert_eq!(v, Verdict::Pass, "{f:#?}");
        let (v, f) = judge(&side("ConnectX-6", 100.0), &side("ConnectX-6", 100.0), &[bw("write_bw", "a->b", 65536, 97.0)], &c);
        assert_eq!(v, Verdict::Fail);
        assert_eq!(f.iter().filter(|f| f.id == FindingId::PairCapacity).count(), 2, "both ends named: {f:#?}");
        // 4X FDR: `--expect rate=56` is the nominal figure check judges; the ends carry 54.5 of data.
        let mut fdr = criteria();
        fdr.expect.set("rate=56").unwrap();
        let (_, f) = judge(&side("ConnectX-3", 54.5), &side("ConnectX-3", 54.5), &[bw("write_bw", "a->b", 65536, 52.0)], &fdr);
        assert!(f.iter().all(|f| f.id != FindingId::PairCapacity), "one judge of rate=56: {f:#?}");
    }

    #[test]
    fn what_is_not_judged_says_so() {
        let c = Criteria { bw_fraction: 0.9, max_lat_us: None, expect: Default::default(), load_threshold: 4.0 };
        let (v, f) = judge(&side("ConnectX-7", 400.0), &side("ConnectX-7", 400.0), &[bw("write_bw", "a->b", 4096, 50.0), lat(3.0)], &c);
        assert_eq!(v, Verdict::Pass);
        let bw_info = f.iter().find(|f| f.id == FindingId::PairBw).expect("pair.bw info");
        assert_eq!(bw_info.severity, Severity::Info);
        assert!(bw_info.message.contains("4096 bytes"), "{}", bw_info.message);
        assert!(f.iter().any(|f| f.id == FindingId::PairLatency && f.severity == Severity::Info), "{f:#?}");
    }

    #[test]
    fn counters_are_read_for_what_they_mean() {
        let mut r = bw("send_bw", "a->b", 65536, 390.0);
        r.counters.insert("b:rnr_nak_retry_err".into(), 12);
        r.counters.insert("a:np_cnp_sent".into(), 40);
        let (v, f) = judge(&side("ConnectX-7", 400.0), &side("ConnectX-7", 400.0), &[r.clone()], &criteria());
        assert_eq!(v, Verdict::Pass);
        assert!(ids(&f).contains(&("pair.flow_control".into(), Severity::Info)), "RNR is flow control: {f:#?}");
        assert!(ids(&f).contains(&("pair.congestion".into(), Severity::Info)), "{f:#?}");
        assert!(!f.iter().any(|f| f.id == FindingId::PairRetransmission), "neither is loss: {f:#?}");
        r.counters.insert("a:out_of_sequence".into(), 3);
        let (_, f) = judge(&side("ConnectX-7", 400.0), &side("ConnectX-7", 400.0), &[r], &criteria());
        assert!(ids(&f).contains(&("pair.retransmission".into(), Severity::Warning)), "{f:#?}");
    }
}
