//! `--paths N` (RoCE ECMP, contract "Many paths"), pure: the plan's bandwidth tests run N QPs,
//! each with its own flow label and so its own UDP source port (`model::paths`); each path's
//! rate is figured from the measuring sides' per-QP runs; a path below half the median of its
//! siblings is `pair.path`, naming its UDP source port for the network team's hash trace.
//!
//! Why N paths: switches spread RoCE v2 flows over equal-cost links by a hash of the UDP source
//! port (with the addresses). One QP is one flow, one hash, one link: a single-QP test either
//! misses a bad member or lands on it every time and looks like a slow pair. N labels are N
//! draws of the hash.

use super::plan::PlannedTest;
use crate::model::paths::{flow_label_to_udp_sport, PathRun};
use crate::model::RunResult;
use crate::outcome::paths::PathFigure;
use crate::outcome::{Finding, FindingId, Severity, TestResult};
use crate::units::measured_gbps as gbps;

/// A path below this share of its siblings' median rate is a finding.
pub const SLOW_SHARE: f64 = 0.5;

/// Most paths: one QP each, `model::MAX_QPS`.
pub const MAX_PATHS: u32 = crate::model::MAX_QPS;

/// Sets `--paths n` on a built plan: its bandwidth tests run `n` QPs with a flow label each;
/// latency tests stay one QP (a ping-pong is one flow). `n` is checked here: 1..=MAX_PATHS.
pub fn apply(plan: &mut [PlannedTest], n: u32) -> Result<(), String> {
    if n == 0 || n > MAX_PATHS {
        return Err(format!("--paths must be 1..{MAX_PATHS}"));
    }
    for t in plan.iter_mut().filter(|t| !t.spec.test.is_latency()) {
        t.spec.qps = n;
        t.spec.paths = true;
    }
    Ok(())
}

/// Each path's figures from the measuring sides' runs (one side, or both for bidi): path k's
/// bytes summed over the sides, over the longer of their times on it. Empty when no side
/// reported paths (an older agent, or no `--paths`).
pub fn figures(active: &[&RunResult]) -> Vec<PathFigure> {
    let n = active.iter().map(|r| r.paths.len()).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            let runs: Vec<&PathRun> = active.iter().filter_map(|r| r.paths.get(k)).collect();
            let bytes: u64 = runs.iter().map(|p| p.bytes).sum();
            let elapsed = runs.iter().map(|p| p.elapsed_ns).max().unwrap_or(0);
            let flow_label = runs.first().map_or(0, |p| p.flow_label);
            figure(&PathRun { flow_label, bytes, elapsed_ns: elapsed })
        })
        .collect()
}

/// One path's figure from what it moved: its label, the UDP source port the label gives, its
/// rate (`collective --paths` reads each hop's paths with it too).
pub fn figure(run: &PathRun) -> PathFigure {
    PathFigure {
        flow_label: run.flow_label,
        udp_sport: flow_label_to_udp_sport(run.flow_label),
        gbps: crate::perf::summary::gbps(run.bytes, run.elapsed_ns),
        retransmits: None,
    }
}

/// A slow path: its index, its rate and the median of its siblings (every other path).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slow {
    pub index: usize,
    pub gbps: f64,
    pub siblings_median: f64,
}

/// The paths below [`SLOW_SHARE`] of the median of their siblings. Fewer than two paths: none
/// (a lone path has nothing to be judged against).
pub fn slow(paths: &[PathFigure]) -> Vec<Slow> {
    if paths.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let others = paths.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, q)| q.gbps).collect();
        let Some(m) = crate::units::median(others) else { continue };
        if m > 0.0 && p.gbps < SLOW_SHARE * m {
            out.push(Slow { index: i, gbps: p.gbps, siblings_median: m });
        }
    }
    out
}

/// `pair.path`: for each result with paths, the slow ones by UDP source port (one finding per
/// test, direction and size).
pub fn judge(results: &[TestResult], subject: &str, findings: &mut Vec<Finding>) {
    for r in results.iter().filter(|r| r.error.is_none()) {
        let slow = slow(&r.paths);
        if !slow.is_empty() {
            findings.push(finding(subject, &format!("{} {} at {} bytes", r.test, r.direction, r.size), &r.paths, &slow));
        }
    }
}

/// `pair.path` on `subject` for the `slow` ones of `paths` (non-empty), `what` saying which
/// transfer they carried (a test, direction and size; a collective's hop).
pub fn finding(subject: &str, what: &str, paths: &[PathFigure], slow: &[Slow]) -> Finding {
    let ports: Vec<String> = slow.iter().map(|s| paths[s.index].udp_sport.to_string()).collect();
    let figures: Vec<String> = slow.iter().map(|s| format!("{} Gb/s", gbps(s.gbps))).collect();
    let median = slow.iter().map(|s| s.siblings_median).fold(0.0, f64::max);
    Finding {
        id: FindingId::PairPath,
        severity: Severity::Error,
        subject: subject.into(),
        message: format!(
            "{what}: {} of {} paths below half their siblings' median ({} Gb/s): UDP source port {} ({})",
            slow.len(),
            paths.len(),
            gbps(median),
            ports.join(", "),
            figures.join(", ")
        ),
        remedy: format!(
            "an ECMP member on the way is bad: give the network team these UDP source ports (RoCE v2, destination port 4791, between these hosts' RoCE addresses) to trace the hash to the link: {}",
            ports.join(", ")
        ),
        about: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::paths::flow_label;

    fn path(k: u32, gbps: f64) -> PathFigure {
        PathFigure { flow_label: flow_label(k), udp_sport: flow_label_to_udp_sport(flow_label(k)), gbps, retransmits: None }
    }

    #[test]
    fn a_path_below_half_its_siblings_median_is_slow_and_the_good_ones_are_not() {
        let paths: Vec<PathFigure> = [10.0, 9.5, 2.0, 10.2, 9.8, 4.9, 10.1, 9.9].iter().enumerate().map(|(k, &g)| path(k as u32, g)).collect();
        let slow = slow(&paths);
        assert_eq!(slow.iter().map(|s| s.index).collect::<Vec<_>>(), vec![2, 5]);
        assert!(slow.iter().all(|s| s.siblings_median > 9.0));
        // Exactly half is not below half.
        let even = [path(0, 5.0), path(1, 10.0), path(2, 10.0)];
        assert!(super::slow(&even).is_empty());
    }

    #[test]
    fn one_path_or_all_equal_or_all_zero_names_none() {
        assert!(slow(&[path(0, 0.001)]).is_empty());
        assert!(slow(&(0..8).map(|k| path(k, 3.0)).collect::<Vec<_>>()).is_empty());
        assert!(slow(&(0..4).map(|k| path(k, 0.0)).collect::<Vec<_>>()).is_empty());
    }

    #[test]
    fn half_the_paths_bad_still_names_them_against_the_good_half() {
        // Siblings of a bad path: 4 good, 3 bad -> median good (10); of a good one: 3 good,
        // 4 bad -> median bad (1), and a good path is not below half of that.
        let paths: Vec<PathFigure> = (0..8).map(|k| path(k, if k % 2 == 0 { 10.0 } else { 1.0 })).collect();
        assert_eq!(slow(&paths).iter().map(|s| s.index).collect::<Vec<_>>(), vec![1, 3, 5, 7]);
    }

    #[test]
    fn the_finding_names_the_slow_ports_only() {
        let mut r = TestResult {
            under_load: None,
            test: crate::model::TestKind::WriteBw,
            direction: crate::model::Direction::AtoB,
            size: 65536,
            iterations: 100,
            qps: 4,
            lat_us: None,
            bw_gbps: Some(24.5),
            peak_gbps: None,
            msg_rate_mpps: None,
            counters: Default::default(),
            error: None,
            remedy: None,
            paths: Vec::new(),
        };
        r.paths = (0..4).map(|k| path(k, if k == 3 { 0.5 } else { 8.0 })).collect();
        let mut findings = Vec::new();
        judge(&[r.clone()], "a <-> b", &mut findings);
        assert_eq!(findings.len(), 1);
        let f = &findings[0];
        assert_eq!(f.id, FindingId::PairPath);
        assert_eq!(f.severity, Severity::Error);
        let bad = r.paths[3].udp_sport.to_string();
        assert!(f.message.contains(&bad) && f.remedy.contains(&bad), "{}", f.message);
        for good in &r.paths[..3] {
            assert!(!f.message.contains(&good.udp_sport.to_string()), "{}", f.message);
        }
    }

    #[test]
    fn figures_sum_the_sides_per_path_and_carry_the_port_the_label_gives() {
        let side = |bytes: u64| RunResult {
            paths: (0..3).map(|k| PathRun { flow_label: flow_label(k), bytes: bytes * u64::from(k + 1), elapsed_ns: 1_000_000 }).collect(),
            ..RunResult::default()
        };
        let (a, b) = (side(125_000), side(125_000));
        let f = figures(&[&a, &b]);
        assert_eq!(f.len(), 3);
        assert!((f[0].gbps - 2.0).abs() < 1e-9, "{}", f[0].gbps);
        assert!((f[2].gbps - 6.0).abs() < 1e-9);
        assert_eq!(f[1].udp_sport, 0xC000 | flow_label(1) as u16);
        assert!(figures(&[&RunResult::default()]).is_empty());
    }

    #[test]
    fn apply_runs_bandwidth_tests_on_n_labelled_qps_and_leaves_latency_alone() {
        let mut plan = crate::pair::plan::build(&crate::pair::plan::PlanInput {
            tests: vec![crate::model::TestKind::SendLat, crate::model::TestKind::WriteBw],
            size: None,
            sweep: false,
            iters: Some(10),
            duration_ms: None,
            qps: 1,
            directions: None,
            stall_timeout_ms: 5000,
        })
        .unwrap();
        apply(&mut plan, 8).unwrap();
        for t in &plan {
            if t.spec.test.is_latency() {
                assert_eq!((t.spec.qps, t.spec.paths), (1, false));
            } else {
                assert_eq!((t.spec.qps, t.spec.paths), (8, true));
                t.spec.validate().unwrap();
            }
        }
        assert!(apply(&mut plan, 0).is_err());
        assert!(apply(&mut plan, MAX_PATHS + 1).is_err());
    }
}
