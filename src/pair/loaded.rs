//! `pair.loaded_latency` (pure): lat_under_load's loaded p99 against its idle p99 at
//! `--load-threshold`. Judged (an error above it, as bandwidth below the link is): a latency
//! class that queues behind bulk traffic is what a burn-in of a lossless fabric looks for.
//! Soft-RoCE's figures are the CPU's (the load's copies share the probe's CPUs): reported, not
//! judged. A preempted loaded phase is `pair.latency`'s to say (`signals`), not judged here; a
//! preempted idle phase is said here (a warning, info on Soft-RoCE), as is a load that moved
//! nothing while the probe ran; neither is ever "within".

use crate::outcome::{Finding, FindingId, Severity, TestResult};
use crate::units;

/// `--load-threshold`'s default: the loaded p99 may be up to 4 times the idle one.
pub const DEFAULT_THRESHOLD: f64 = 4.0;

/// Each lat_under_load result's finding: an error above `threshold` (an info on Soft-RoCE),
/// else an info with the two p99s.
pub(super) fn judge(results: &[TestResult], threshold: f64, soft: bool, subject: &str, findings: &mut Vec<Finding>) {
    for r in results.iter().filter(|r| r.error.is_none()) {
        let (Some(u), Some(lat)) = (&r.under_load, &r.lat_us) else { continue };
        if lat.spoiled().is_some() {
            continue; // pair.latency says the loaded phase was preempted
        }
        if let Some(p) = u.idle_lat_us.spoiled() {
            findings.push(Finding {
                id: FindingId::PairLoadedLatency,
                severity: if soft { Severity::Info } else { Severity::Warning },
                subject: subject.into(),
                message: format!(
                    "{} {} at {} bytes: the idle phase's loop lost its CPU ({}), so the ratio to it is not judged",
                    r.test,
                    r.direction,
                    r.size,
                    p.describe()
                ),
                remedy: "rerun; if it recurs, keep other work off the cores the loop is pinned to (`--cpu`) while testing".into(),
                about: Some(r.key()),
            });
            continue;
        }
        if units::round(u.load_gbps, 3) <= 0.0 {
            findings.push(unloaded(r, u, lat.p99, soft, subject));
            continue;
        }
        let figures = format!(
            "{} {} at {} bytes: p99 {} us under load ({} Gb/s on {} QP{}) vs {} us idle, {}x (p50 {} vs {} us)",
            r.test,
            r.direction,
            r.size,
            units::three(lat.p99),
            units::rate(units::round(u.load_gbps, 3)),
            u.load_qps,
            if u.load_qps == 1 { "" } else { "s" },
            units::three(u.idle_lat_us.p99),
            units::three(u.p99_ratio),
            units::three(lat.p50),
            units::three(u.idle_lat_us.p50),
        );
        let over = u.p99_ratio > threshold;
        let (severity, message, remedy) = match (over, soft) {
            (true, false) => (
                Severity::Error,
                format!("{figures}: above --load-threshold {threshold}x"),
                "the latency class queues behind bulk traffic on the path: check the switches' buffers and QoS (latency traffic on its own \
                 priority), PFC and ECN on every hop (`fabcheck check` on both nodes: roce.qos; pair.qos), and that the ports are not \
                 oversubscribed"
                    .to_string(),
            ),
            (true, true) => (
                Severity::Info,
                format!("{figures}: reported, not judged: Soft-RoCE's latency under load is its CPUs'"),
                "judge real adapters; on rxe compare with ib_send_lat run while ib_write_bw runs on the same device".to_string(),
            ),
            (false, _) => (
                Severity::Info,
                format!("{figures}: within --load-threshold {threshold}x"),
                "nothing to do; a burn-in repeats it (-D) to see the tail under hours of load".to_string(),
            ),
        };
        findings.push(Finding { id: FindingId::PairLoadedLatency, severity, subject: subject.into(), message, remedy, about: Some(r.key()) });
    }
}

/// A loaded phase the load did not fill: its first write completed (the probe waits for that)
/// and nothing after it before the probe was done, as when the load's QPs sat out a retry
/// timeout or its thread got no CPU. The figures were not taken under load, so the ratio is
/// not judged: a warning (an info on Soft-RoCE, where a starved load thread is the CPUs').
fn unloaded(r: &TestResult, u: &crate::outcome::UnderLoad, loaded_p99: f64, soft: bool, subject: &str) -> Finding {
    let message = format!(
        "{} {} at {} bytes: the load ({} QP{}) moved nothing measurable while the probe ran, so p99 {} us vs {} us idle was not \
         taken under load: not judged{}",
        r.test,
        r.direction,
        r.size,
        u.load_qps,
        if u.load_qps == 1 { "" } else { "s" },
        units::three(loaded_p99),
        units::three(u.idle_lat_us.p99),
        if soft { " (Soft-RoCE: its load thread shares the probe's CPUs)" } else { "" },
    );
    Finding {
        id: FindingId::PairLoadedLatency,
        severity: if soft { Severity::Info } else { Severity::Warning },
        subject: subject.into(),
        message,
        remedy: "rerun with more --iters or with -D so the loaded phase outlasts the load's start; if the result's counters show \
                 retries or duplicate requests, the path lost packets: `fabcheck check` on both nodes and the error counters of the \
                 ports between"
            .to_string(),
        about: Some(r.key()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, LatencySummary, TestKind};
    use crate::outcome::UnderLoad;
    use std::collections::BTreeMap;

    fn lat(p50: f64, p99: f64) -> LatencySummary {
        LatencySummary { min: p50 / 2.0, p50, p90: p99, p99, p999: p99, max: p99, mean: p50, stdev: 1.0, preempt: None }
    }

    fn result(idle_p99: f64, loaded_p99: f64) -> TestResult {
        let loaded = lat(2.0, loaded_p99);
        TestResult {
            test: TestKind::LatUnderLoad,
            paths: Vec::new(),
            direction: Direction::AtoB,
            size: 2,
            iterations: 1000,
            qps: 1,
            lat_us: Some(loaded),
            bw_gbps: None,
            peak_gbps: None,
            msg_rate_mpps: None,
            counters: BTreeMap::new(),
            error: None,
            remedy: None,
            under_load: UnderLoad::of(lat(1.5, idle_p99), &loaded, 190.0, 1),
        }
    }

    fn judged(r: TestResult, soft: bool) -> Vec<Finding> {
        let mut f = Vec::new();
        judge(&[r], DEFAULT_THRESHOLD, soft, "a <-> b", &mut f);
        f
    }

    /// A preempted idle phase (seen in CI: one 1 ms gap in a 28 ms phase) spoils the ratio: said,
    /// never silent and never "within".
    #[test]
    fn a_preempted_idle_phase_is_said_not_judged() {
        let mut r = result(2.0, 3.0);
        let gap = crate::model::preempt::Preempt { gaps: 1, gap_ns: 1_018_256, elapsed_ns: 27_691_850 };
        r.under_load.as_mut().unwrap().idle_lat_us.preempt = Some(gap);
        for (soft, severity) in [(false, Severity::Warning), (true, Severity::Info)] {
            let f = judged(r.clone(), soft);
            assert_eq!((f.len(), f[0].id, f[0].severity), (1, FindingId::PairLoadedLatency, severity), "{f:?}");
            assert!(
                f[0].message.ends_with("the idle phase's loop lost its CPU (1 gaps, 1.02 ms), so the ratio to it is not judged"),
                "{}",
                f[0].message
            );
        }
    }

    #[test]
    fn above_the_threshold_is_an_error_naming_both_p99s() {
        let f = judged(result(2.0, 9.0), false);
        assert_eq!((f.len(), f[0].id, f[0].severity), (1, FindingId::PairLoadedLatency, Severity::Error), "{f:?}");
        assert!(f[0].message.contains("p99 9 us under load") && f[0].message.contains("vs 2 us idle, 4.5x"), "{}", f[0].message);
        assert!(f[0].message.contains("above --load-threshold 4x"), "{}", f[0].message);
        assert_eq!(f[0].about, Some(result(2.0, 9.0).key()));
    }

    #[test]
    fn at_or_under_the_threshold_is_said_as_info() {
        let f = judged(result(2.0, 8.0), false);
        assert_eq!(f[0].severity, Severity::Info, "4x exactly is within: {f:?}");
        assert!(f[0].message.contains("within --load-threshold 4x"), "{}", f[0].message);
    }

    #[test]
    fn soft_roce_is_reported_not_judged() {
        let f = judged(result(2.0, 90.0), true);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("reported, not judged"), "{}", f[0].message);
    }

    /// A load that moved nothing (seen on Soft-RoCE: one retry, 63 duplicate requests, 0 Gb/s)
    /// leaves idle figures in the loaded phase: never "within the threshold".
    #[test]
    fn a_load_that_moved_nothing_is_not_judged_within() {
        let mut r = result(2.0, 2.1);
        r.under_load = r.under_load.map(|u| crate::outcome::UnderLoad { load_gbps: 0.0001, ..u });
        let f = judged(r.clone(), false);
        assert_eq!((f.len(), f[0].severity), (1, Severity::Warning), "{f:?}");
        assert!(f[0].message.contains("moved nothing measurable") && f[0].message.contains("not judged"), "{}", f[0].message);
        assert!(!f[0].message.contains("within"), "{}", f[0].message);
        assert_eq!(f[0].about, Some(r.key()));
        let soft = judged(r, true);
        assert_eq!(soft[0].severity, Severity::Info);
        assert!(soft[0].message.contains("Soft-RoCE"), "{}", soft[0].message);
    }

    #[test]
    fn failed_preempted_or_other_tests_are_not_judged() {
        let mut failed = result(2.0, 90.0);
        failed.error = Some("stalled".into());
        assert!(judged(failed, false).is_empty());
        let mut preempted = result(2.0, 90.0);
        let spoiled = crate::model::preempt::Preempt { gaps: 10, gap_ns: 900_000_000, elapsed_ns: 1_000_000_000 };
        assert!(spoiled.spoils());
        preempted.lat_us = preempted.lat_us.map(|l| LatencySummary { preempt: Some(spoiled), ..l });
        assert!(judged(preempted, false).is_empty());
        let mut plain = result(2.0, 90.0);
        plain.under_load = None;
        assert!(judged(plain, false).is_empty());
    }
}
