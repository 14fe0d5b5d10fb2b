//! What a pair's latency and counters say (pure): latency against `--max-lat-us`, a preempted
//! loop, long tails, and the counters that rose during a test (receiver not ready, congestion
//! control, retransmissions).

use crate::outcome::{Finding, FindingId, Severity, TestResult};
use crate::perf::counters;
use crate::units;

/// Latency's findings: reported or judged against `max_lat_us`, preempted loops, long tails.
pub(super) fn latency(results: &[TestResult], max_lat_us: Option<f64>, subject: &str, findings: &mut Vec<Finding>) {
    if max_lat_us.is_none() && results.iter().any(|r| r.error.is_none() && r.lat_us.is_some()) {
        findings.push(Finding {
            id: FindingId::PairLatency,
            severity: Severity::Info,
            subject: subject.into(),
            message: "latency is reported, not judged: no limit was given".into(),
            remedy: "give --max-lat-us (p50, one-way for send/write, round trip for read, as perftest reports) to judge it".into(),
            about: None,
        });
    }
    for r in results.iter().filter(|r| r.error.is_none()) {
        let Some(lat) = &r.lat_us else { continue };
        if let Some(p) = lat.spoiled() {
            findings.push(preempted(subject, r, &p));
            continue;
        }
        if let Some(max) = max_lat_us {
            if lat.p50 > max {
                findings.push(Finding {
                    id: FindingId::PairLatency,
                    severity: Severity::Error,
                    subject: subject.into(),
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
                subject: subject.into(),
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
}

/// The counters that rose during each test, each kind its own finding.
pub(super) fn counters(results: &[TestResult], subject: &str, findings: &mut Vec<Finding>) {
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
                subject: subject.into(),
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
                subject: subject.into(),
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
                subject: subject.into(),
                message: format!("{} {} at {} bytes: retransmission counters rose: {}", r.test, r.direction, r.size, retrans.join(", ")),
                remedy: "packets are being lost: on RoCE, pair.qos says which priority the bytes rode and whether PFC holds it, and \
                         `fabcheck check` on both nodes judges their lossless set-up (roce.qos); then the switches' PFC for that priority, and the cabling; \
                         on InfiniBand check symbol errors and link_downed with `fabcheck check`"
                    .into(),
                about: Some(r.key()),
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
