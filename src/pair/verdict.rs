//! Judging a pair run (pure): bandwidth against the link's data rate, latency against an
//! optional limit, retransmissions and tails as findings with likely causes.

use super::report::{Side, TestResult};
use crate::diagnose::{gbps, Finding, Severity, Verdict};
use crate::perf::counters;
use crate::spec::LinkLayer;
use crate::units;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy)]
pub struct Criteria {
    /// Share of the link's data rate the largest-size bandwidth must reach (0.9).
    pub bw_fraction: f64,
    pub max_lat_us: Option<f64>,
}

/// Smallest size judged against line rate: smaller messages are bound by message rate.
pub const JUDGED_MIN_SIZE: u32 = 65536;

pub fn judge(a: &Side, b: &Side, results: &[TestResult], criteria: &Criteria) -> (Verdict, Vec<Finding>) {
    let mut findings = Vec::new();
    let soft = a.ca_type.starts_with("Soft-") || b.ca_type.starts_with("Soft-");
    let link = match (a.rate_gbps, b.rate_gbps) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let subject = format!("{}/{} <-> {}/{}", a.host, a.device, b.host, b.device);

    for r in results.iter().filter(|r| r.error.is_some()) {
        findings.push(Finding {
            id: format!("pair.{}", r.test),
            severity: Severity::Error,
            subject: subject.clone(),
            message: format!("{} {} failed: {}", r.test, r.direction, r.error.clone().unwrap_or_default()),
            remedy: r.remedy.clone().unwrap_or_else(|| "run `fabcheck check` on both nodes".into()),
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
    if soft && !largest.is_empty() {
        findings.push(Finding {
            id: "pair.bw".into(),
            severity: Severity::Info,
            subject: subject.clone(),
            message: "Soft-RoCE's link rate is synthesized from its netdev and its speed is CPU-bound: bandwidth is reported, not judged".into(),
            remedy: "judge real adapters; on rxe compare against perftest on the same device (benches/)".into(),
        });
    } else if let Some(rate) = link {
        for ((test, direction), r) in &largest {
            if r.size < JUDGED_MIN_SIZE {
                continue;
            }
            let capacity = if *direction == "bidi" { 2.0 * rate } else { rate };
            let need = criteria.bw_fraction * capacity;
            let got = r.bw_gbps.unwrap_or(0.0);
            if got < need {
                findings.push(Finding {
                    id: "pair.bw".into(),
                    severity: Severity::Error,
                    subject: subject.clone(),
                    message: format!(
                        "{test} {direction} at {} bytes: {} Gb/s is {:.0}% of the {} Gb/s link (needs {:.0}%)",
                        r.size,
                        gbps(got),
                        100.0 * got / capacity,
                        gbps(capacity),
                        100.0 * criteria.bw_fraction
                    ),
                    remedy: bw_remedy(a, b),
                });
            }
        }
    }

    for r in results.iter().filter(|r| r.error.is_none()) {
        let Some(lat) = &r.lat_us else { continue };
        if let Some(max) = criteria.max_lat_us {
            if lat.p50 > max {
                findings.push(Finding {
                    id: "pair.latency".into(),
                    severity: Severity::Error,
                    subject: subject.clone(),
                    message: format!("{} {}: typical latency {} us exceeds --max-lat-us {}", r.test, r.direction, units::three(lat.p50), max),
                    remedy: "check the path (switch hops, congestion), CPU frequency scaling and NUMA placement of both processes".into(),
                });
            }
        }
        if lat.p999 > 10.0 * lat.p50 && lat.p999 - lat.p50 > 20.0 {
            findings.push(Finding {
                id: "pair.tail".into(),
                severity: Severity::Warning,
                subject: subject.clone(),
                message: format!(
                    "{} {}: long latency tail, p99.9 {} us vs p50 {} us",
                    r.test,
                    r.direction,
                    units::three(lat.p999),
                    units::three(lat.p50)
                ),
                remedy: "retransmissions (packet loss) or interference: see the counters, check the link's error counters and, \
                         on RoCE, PFC/ECN configuration"
                    .into(),
            });
        }
    }

    for r in results {
        let retrans: Vec<String> = r
            .counters
            .iter()
            .filter(|(name, _)| counters::is_retransmission(name.split(':').nth(1).unwrap_or(name)))
            .map(|(n, v)| format!("{n} +{v}"))
            .collect();
        if !retrans.is_empty() {
            findings.push(Finding {
                id: "pair.retransmission".into(),
                severity: Severity::Warning,
                subject: subject.clone(),
                message: format!("{} {} at {} bytes: retransmission counters rose: {}", r.test, r.direction, r.size, retrans.join(", ")),
                remedy: "packets are being lost: on RoCE check PFC (lossless class) and ECN on NICs and switches, and the cabling; \
                         on InfiniBand check symbol errors and link_downed with `fabcheck check`"
                    .into(),
            });
        }
    }

    if let (Some(ma), Some(mb)) = (a.mtu, b.mtu) {
        if ma != mb {
            findings.push(Finding {
                id: "pair.mtu".into(),
                severity: Severity::Warning,
                subject: subject.clone(),
                message: format!("active MTUs differ ({ma} vs {mb}); the connection used {}", ma.min(mb)),
                remedy: "set the same MTU on both ends (netdev MTU 9000 for RoCE 4096, the SM partition MTU on InfiniBand)".into(),
            });
        }
    }

    findings.sort_by_key(|f| f.severity);
    let verdict = if findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    (verdict, findings)
}

fn bw_remedy(a: &Side, b: &Side) -> String {
    let mut causes = vec![
        "the adapter's PCIe link or slot (run `fabcheck check`: pci.link)",
        "the process far from the adapter's NUMA node (pin with numactl -N <node>)",
        "a link at reduced width or speed (link.width, link.rate)",
    ];
    if a.link_layer == LinkLayer::Ethernet || b.link_layer == LinkLayer::Ethernet {
        causes.push("on RoCE: MTU below 4096 (netdev MTU 9000), PFC/ECN not configured, or the wrong GID (a RoCE v1 or non-routed one)");
    }
    format!("likely causes: {}", causes.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::summary::LatencySummary;
    use crate::spec::TestKind;

    fn side(ca: &str, rate: f64) -> Side {
        Side {
            host: "n".into(),
            device: "mlx5_0".into(),
            port: 1,
            gid_index: Some(3),
            gid: None,
            link_layer: LinkLayer::InfiniBand,
            rate_gbps: Some(rate),
            ca_type: ca.into(),
            mtu: Some(4096),
        }
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
        Criteria { bw_fraction: 0.9, max_lat_us: Some(5.0) }
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
        r.lat_us = Some(LatencySummary { min: 1.0, p50: 6.0, p90: 7.0, p99: 8.0, p999: 200.0, max: 300.0, mean: 6.5, stdev: 1.0 });
        r.counters.insert("a:out_of_sequence".into(), 4);
        let (v, f) = judge(&a, &b, &[r], &criteria());
        assert_eq!(v, Verdict::Fail);
        let ids: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
        assert!(ids.contains(&"pair.latency") && ids.contains(&"pair.tail") && ids.contains(&"pair.retransmission"), "{ids:?}");
    }

    #[test]
    fn threshold_90_fails_89_percent_and_passes_91() {
        let (a, b) = (side("ConnectX-6", 200.0), side("ConnectX-6", 200.0));
        let at_90 = Criteria { bw_fraction: 0.90, max_lat_us: None };
        let (v, f) = judge(&a, &b, &[bw("write_bw", "a->b", 65536, 178.0)], &at_90);
        assert_eq!(v, Verdict::Fail, "89% of the link at --threshold 90");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].id.as_str(), f[0].severity), ("pair.bw", Severity::Error));
        assert!(f[0].message.contains("is 89% of the 200 Gb/s link (needs 90%)"), "{}", f[0].message);
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
        let lat = |p50: f64| {
            let mut r = bw("send_lat", "a->b", 2, 0.0);
            r.bw_gbps = None;
            r.lat_us =
                Some(LatencySummary { min: p50 - 0.2, p50, p90: p50 + 0.1, p99: p50 + 0.2, p999: p50 + 0.5, max: p50 + 1.0, mean: p50, stdev: 0.1 });
            r
        };
        let c = Criteria { bw_fraction: 0.9, max_lat_us: Some(2.0) };
        let (v, f) = judge(&a, &b, &[lat(2.0)], &c);
        assert_eq!(v, Verdict::Pass, "{f:?}");
        let (v, f) = judge(&a, &b, &[lat(2.1)], &c);
        assert_eq!(v, Verdict::Fail);
        assert_eq!((f[0].id.as_str(), f[0].severity), ("pair.latency", Severity::Error));
        let (v, _) = judge(&a, &b, &[lat(50.0)], &Criteria { bw_fraction: 0.9, max_lat_us: None });
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
}
