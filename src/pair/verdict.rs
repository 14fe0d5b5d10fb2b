//! Judging a pair run (pure): bandwidth against the link's data rate, latency against an
//! optional limit, retransmissions and tails as findings with likely causes.

use super::side::Side;
use crate::model::Direction;
use crate::model::LinkLayer;
use crate::outcome::FindingId;
use crate::outcome::TestResult;
use crate::outcome::{Finding, Severity, Verdict};
use crate::perf::counters;
use crate::probe::catype::CaKind;
use crate::units;
use crate::units::rate as gbps;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Criteria {
    /// Share of the link's data rate the largest-size bandwidth must reach (0.9).
    pub bw_fraction: f64,
    pub max_lat_us: Option<f64>,
    /// What each end's link should be (`--expect`, `--profile`).
    pub expect: crate::diagnose::Expectations,
}

/// Smallest size judged against line rate: smaller messages are bound by message rate.
pub const JUDGED_MIN_SIZE: u32 = 65536;

/// What the pair's bandwidth is judged against: the slower end's link data rate, or its PCIe
/// link's usable bandwidth where that is smaller (see `probe::capacity`).
pub fn capacity(a: &Side, b: &Side) -> Option<crate::probe::capacity::Capacity> {
    let end = |s: &Side| s.rate_gbps.map(|r| crate::probe::capacity::capacity(r, s.pcie_gbps));
    match (end(a), end(b)) {
        (Some(x), Some(y)) => Some(if x.gbps <= y.gbps { x } else { y }),
        (x, y) => x.or(y),
    }
}

/// Bytes of framing around every RoCE v2 packet's payload: preamble and SFD (8) and the
/// minimum inter-frame gap (12), the Ethernet header (14) and FCS (4) (IEEE 802.3 clause 3/4),
/// the IP header (IPv4 20; IPv6 40, RFC 8200), UDP (8), the base transport header (12) and the
/// invariant CRC (4) (IBTA Annex A17, RoCE v2).
const ROCE_FRAMING: u32 = 8 + 12 + 14 + 4 + 8 + 12 + 4;
/// Around every InfiniBand packet's payload: LRH (8), BTH (12), ICRC (4), VCRC (2) (IBTA vol. 1
/// ch. 7); line encoding is already out of the data rate.
const IB_FRAMING: u32 = 8 + 12 + 4 + 2;

/// The share of the wire a large transfer's payload can fill at the path MTU (the smaller of
/// the two ends' MTUs), and that MTU: RoCE at MTU 1024 tops out near 92.6%, at 4096 near 98%.
/// `None` where the MTU or the link layer is not known.
pub fn payload_efficiency(a: &Side, b: &Side) -> Option<(f64, u32)> {
    let mtu = a.mtu?.min(b.mtu?);
    let framing = match a.link_layer {
        crate::model::LinkLayer::Ethernet => {
            let v6 = [a.gid, b.gid].iter().flatten().any(|g| g.to_ipv4_mapped().is_none());
            ROCE_FRAMING + if v6 { 40 } else { 20 }
        }
        crate::model::LinkLayer::InfiniBand => IB_FRAMING,
        _ => return None,
    };
    (mtu > 0).then(|| (f64::from(mtu) / f64::from(mtu + framing), mtu))
}

pub fn judge(a: &Side, b: &Side, results: &[TestResult], criteria: &Criteria) -> (Verdict, Vec<Finding>) {
    let mut findings = Vec::new();
    let soft = CaKind::of(&a.ca_type).is_software() || CaKind::of(&b.ca_type).is_software();
    let cap = capacity(a, b);
    let link = cap.map(|c| c.gbps);
    let subject = format!("{}/{} <-> {}/{}", a.host, a.device, b.host, b.device);
    ends(a, b, criteria, &subject, &mut findings);
    if let (Some(c), false) = (cap, soft) {
        if c.pcie_bound {
            findings.push(Finding {
                id: FindingId::PcieBound,
                severity: Severity::Warning,
                subject: subject.clone().into(),
                message: format!(
                    "bandwidth is judged against {} Gb/s, what the slower end's PCIe link carries, not its link rate",
                    gbps(c.gbps.round())
                ),
                remedy: match crate::gpu::bound::sets_capacity(c.gbps, [a.gpu_pcie_gbps, b.gpu_pcie_gbps]) {
                    true => crate::gpu::bound::GPU_BOUND_REMEDY,
                    false => "seat the adapter in a slot that can feed its port (NDR 400 needs PCIe Gen5 x16); `fabcheck check` shows pci.link and pcie.bound",
                }
                .into(),
                about: None,
            });
        }
    }

    for r in results.iter().filter(|r| r.error.is_some()) {
        findings.push(Finding {
            id: FindingId::failed_test(r.test),
            severity: Severity::Error,
            subject: subject.clone().into(),
            message: format!("{} {} failed: {}", r.test, r.direction, r.error.clone().unwrap_or_default()),
            remedy: r.remedy.clone().unwrap_or_else(|| "run `fabcheck check` on both nodes".into()),
            about: None,
        });
    }

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
            subject: subject.clone().into(),
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
            subject: subject.clone().into(),
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
                    subject: subject.clone().into(),
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

    if criteria.max_lat_us.is_none() && results.iter().any(|r| r.error.is_none() && r.lat_us.is_some()) {
        findings.push(Finding {
            id: FindingId::PairLatency,
            severity: Severity::Info,
            subject: subject.clone().into(),
            message: "latency is reported, not judged: no limit was given".into(),
            remedy: "give --max-lat-us (p50, one-way for send/write, round trip for read, as perftest reports) to judge it".into(),
            about: None,
        });
    }
    for r in results.iter().filter(|r| r.error.is_none()) {
        let Some(lat) = &r.lat_us else { continue };
        if let Some(p) = lat.spoiled() {
            findings.push(preempted(&subject, r, &p));
            continue;
        }
        if let Some(max) = criteria.max_lat_us {
            if lat.p50 > max {
                findings.push(Finding {
                    id: FindingId::PairLatency,
                    severity: Severity::Error,
                    subject: subject.clone().into(),
                    message: format!("{} {}: typical latency {} us exceeds --max-lat-us {}", r.test, r.direction, units::three(lat.p50), max),
                    remedy: "check the path (switch hops, congestion), CPU frequency scaling and NUMA placement of both processes".into(),
                    about: None,
                });
            }
        }
        if lat.p999 > 10.0 * lat.p50 && lat.p999 - lat.p50 > 20.0 {
            findings.push(Finding {
                id: FindingId::PairTail,
                severity: Severity::Warning,
                subject: subject.clone().into(),
                message: format!(
                    "{} {}: long latency tail, p99.9 {} us vs p50 {} us",
                    r.test,
                    r.direction,
                    units::three(lat.p999),
                    units::three(lat.p50)
                ),
                remedy: "retransmissions (packet loss) or interference: see the counters, check the link's error counters and, \
                         on RoCE, pair.qos (the priority the bytes rode) and `fabcheck check` on both nodes (roce.qos)"
                    .into(),
                about: None,
            });
        }
    }

    for r in results {
        let of_kind = |kind: counters::Kind| -> Vec<String> {
            r.counters
                .iter()
                .filter(|(name, _)| counters::kind(name.split(':').nth(1).unwrap_or(name)) == kind)
                .map(|(n, v)| format!("{n} +{v}"))
                .collect()
        };
        let rnr = of_kind(counters::Kind::ReceiverNotReady);
        if !rnr.is_empty() {
            findings.push(Finding {
                id: FindingId::PairFlowControl,
                severity: Severity::Info,
                subject: subject.clone().into(),
                message: format!(
                    "{} {} at {} bytes: the receiver was not ready (RNR) at times: {}; this is receive flow control, not loss",
                    r.test,
                    r.direction,
                    r.size,
                    rnr.join(", ")
                ),
                remedy: "nothing on the fabric; an application sees this when its receives are posted too late".into(),
                about: Some(r.key()),
            });
        }
        let congestion = of_kind(counters::Kind::Congestion);
        if !congestion.is_empty() {
            findings.push(Finding {
                id: FindingId::PairCongestion,
                severity: Severity::Info,
                subject: subject.clone().into(),
                message: format!("{} {} at {} bytes: congestion control acted: {}", r.test, r.direction, r.size, congestion.join(", ")),
                remedy: "expected under load on RoCE with ECN/DCQCN; if bandwidth is short, look for other traffic on the path".into(),
                about: Some(r.key()),
            });
        }
        let retrans = of_kind(counters::Kind::Loss);
        if !retrans.is_empty() {
            findings.push(Finding {
                id: FindingId::PairRetransmission,
                severity: Severity::Warning,
                subject: subject.clone().into(),
                message: format!("{} {} at {} bytes: retransmission counters rose: {}", r.test, r.direction, r.size, retrans.join(", ")),
                remedy: "packets are being lost: on RoCE, pair.qos says which priority the bytes rode and whether PFC holds it, and \
                         `fabcheck check` on both nodes judges their lossless set-up (roce.qos); then the switches' PFC for that priority, and the cabling; \
                         on InfiniBand check symbol errors and link_downed with `fabcheck check`"
                    .into(),
                about: Some(r.key()),
            });
        }
    }

    if let (Some(ma), Some(mb)) = (a.mtu, b.mtu) {
        if ma != mb {
            findings.push(Finding {
                id: FindingId::PairMtu,
                severity: Severity::Warning,
                subject: subject.clone().into(),
                message: format!("active MTUs differ ({ma} vs {mb}); the connection used {}", ma.min(mb)),
                remedy: "set the same MTU on both ends (netdev MTU 9000 for RoCE 4096, the SM partition MTU on InfiniBand)".into(),
                about: None,
            });
        }
    }

    findings.sort_by_key(|f| f.severity);
    let verdict = if findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    (verdict, findings)
}

/// Findings about the two ends themselves: one trained below what it supports (the verdict
/// must not pass it at the lower rate it negotiated), ends at different rates, and the
/// expectations the user gave.
fn ends(a: &Side, b: &Side, criteria: &Criteria, subject: &str, findings: &mut Vec<Finding>) {
    for (name, s) in [("A", a), ("B", b)] {
        if let Some(what) = &s.trained_low {
            findings.push(Finding {
                id: FindingId::PairCapacity,
                severity: Severity::Error,
                subject: subject.into(),
                message: format!("{name} ({}/{}) trained below what its port supports: {what}", s.host, s.device),
                remedy: "a cable, connector or lane fault, or a switch port configured low: run `fabcheck check` on that node \
                         (link.trained); on InfiniBand `fabcheck fabric` names both ends of the link"
                    .into(),
                about: None,
            });
        }
        if let Some(want) = criteria.expect.rate {
            // The one judge of `--expect rate=N` (check's link.rate): nominal on InfiniBand.
            let ib = s.link_layer == crate::model::LinkLayer::InfiniBand;
            if let Some(rate) = crate::diagnose::expect::rate_below(want, ib, s.rate_gbps, None) {
                findings.push(Finding {
                    id: FindingId::PairCapacity,
                    severity: Severity::Error,
                    subject: subject.into(),
                    message: format!("{name} ({}/{}) runs at {} Gb/s, {} Gb/s expected", s.host, s.device, gbps(rate), gbps(want)),
                    remedy: "run `fabcheck check --expect rate=...` on that node: the link trained low or the wrong port was used".into(),
                    about: None,
                });
            }
        }
        if let Some(want) = criteria.expect.link_layer {
            if s.link_layer != want {
                findings.push(Finding {
                    id: FindingId::PairCapacity,
                    severity: Severity::Error,
                    subject: subject.into(),
                    message: format!("{name} ({}/{}) is {}, {} expected", s.host, s.device, s.link_layer, want),
                    remedy: "run `fabcheck check` on that node (port.link_layer says how to change it)".into(),
                    about: None,
                });
            }
        }
        if let (Some(want), Some(mtu)) = (criteria.expect.mtu, s.mtu) {
            if mtu < want {
                findings.push(Finding {
                    id: FindingId::PairMtu,
                    severity: Severity::Error,
                    subject: subject.into(),
                    message: format!("{name} ({}/{}) has active MTU {mtu}, {want} expected", s.host, s.device),
                    remedy: "set the netdev MTU to 9000 for a RoCE MTU of 4096; on InfiniBand the partition's MTU".into(),
                    about: None,
                });
            }
        }
    }
    if let (Some(ra), Some(rb)) = (a.rate_gbps, b.rate_gbps) {
        if (ra - rb).abs() > 0.5 {
            findings.push(Finding {
                id: FindingId::PairRate,
                severity: Severity::Warning,
                subject: subject.into(),
                message: format!("the ends run at different rates ({} vs {} Gb/s): the pair is judged against the slower", gbps(ra), gbps(rb)),
                remedy: "if both should match, run `fabcheck check` on the slower node".into(),
                about: None,
            });
        }
    }
}

/// A latency sample set whose loop lost its CPU (see [`crate::perf::preempt`]): said, not
/// judged, and not blamed on the link.
fn preempted(subject: &str, r: &TestResult, p: &crate::perf::preempt::Preempt) -> Finding {
    Finding {
        id: FindingId::PairLatency,
        severity: Severity::Info,
        subject: subject.to_string().into(),
        message: format!("{} {}: latency not judged: preempted ({})", r.test, r.direction, p.describe()),
        remedy: "the busy-polling loop lost its CPU (more pollers than CPUs, or a noisy host): rerun on an idle host, or \
                 with fewer agents per host, or with --events"
            .into(),
        about: Some(r.key()),
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
        }
    }

    fn criteria() -> Criteria {
        Criteria { bw_fraction: 0.9, max_lat_us: Some(5.0), expect: Default::default() }
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
        let at_90 = Criteria { bw_fraction: 0.90, max_lat_us: None, expect: Default::default() };
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
        let c = Criteria { bw_fraction: 0.9, max_lat_us: Some(2.0), expect: Default::default() };
        let (v, f) = judge(&a, &b, &[lat(2.0)], &c);
        assert_eq!(v, Verdict::Pass, "{f:?}");
        let (v, f) = judge(&a, &b, &[lat(2.1)], &c);
        assert_eq!(v, Verdict::Fail);
        assert_eq!((f[0].id.as_str(), f[0].severity), ("pair.latency", Severity::Error));
        let (v, _) = judge(&a, &b, &[lat(50.0)], &Criteria { bw_fraction: 0.9, max_lat_us: None, expect: Default::default() });
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
        assert!(f.iter().any(|f| f.id == "pair.bw" && f.message.contains("of the 230.5 Gb/s link")), "{f:#?}");
        let nic = f.iter().find(|f| f.id == "pcie.bound").unwrap();
        assert!(nic.remedy.contains("seat the adapter"), "{nic:?}");
        // --mem cuda: a Gen4 x16 GPU sets the bound, not the NIC's slot.
        a.gpu_pcie_gbps = Some(230.5);
        let (_, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 220.0)], &criteria());
        let gpu = f.iter().find(|f| f.id == "pcie.bound").unwrap();
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
        let cap = f.iter().find(|f| f.id == "pair.capacity").expect("pair.capacity");
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
        let m = &f.iter().find(|f| f.id == "pair.bw").unwrap().message;
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
        assert_eq!(f.iter().filter(|f| f.id == "pair.capacity").count(), 2, "both ends named: {f:#?}");
        // 4X FDR: `--expect rate=56` is the nominal figure check judges; the ends carry 54.5 of data.
        let mut fdr = criteria();
        fdr.expect.set("rate=56").unwrap();
        let (_, f) = judge(&side("ConnectX-3", 54.5), &side("ConnectX-3", 54.5), &[bw("write_bw", "a->b", 65536, 52.0)], &fdr);
        assert!(f.iter().all(|f| f.id != "pair.capacity"), "one judge of rate=56: {f:#?}");
    }

    #[test]
    fn what_is_not_judged_says_so() {
        let c = Criteria { bw_fraction: 0.9, max_lat_us: None, expect: Default::default() };
        let (v, f) = judge(&side("ConnectX-7", 400.0), &side("ConnectX-7", 400.0), &[bw("write_bw", "a->b", 4096, 50.0), lat(3.0)], &c);
        assert_eq!(v, Verdict::Pass);
        let bw_info = f.iter().find(|f| f.id == "pair.bw").expect("pair.bw info");
        assert_eq!(bw_info.severity, Severity::Info);
        assert!(bw_info.message.contains("4096 bytes"), "{}", bw_info.message);
        assert!(f.iter().any(|f| f.id == "pair.latency" && f.severity == Severity::Info), "{f:#?}");
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
        assert!(!f.iter().any(|f| f.id == "pair.retransmission"), "neither is loss: {f:#?}");
        r.counters.insert("a:out_of_sequence".into(), 3);
        let (_, f) = judge(&side("ConnectX-7", 400.0), &side("ConnectX-7", 400.0), &[r], &criteria());
        assert!(ids(&f).contains(&("pair.retransmission".into(), Severity::Warning)), "{f:#?}");
    }
}
