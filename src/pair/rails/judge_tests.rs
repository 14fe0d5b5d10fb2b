//! Judging rails: own capacity, siblings, the aggregate over the union of windows, unreachable.

use super::*;
use crate::diagnose::Expectations;
use crate::pair::side::test_side;
use crate::perf::summary::LatencySummary;
use std::time::{Duration, Instant};

const SECOND: u64 = 1_000_000_000;

fn criteria() -> Criteria {
    Criteria { bw_fraction: 0.9, max_lat_us: None, expect: Expectations::default(), load_threshold: 4.0 }
}

fn side(host: &str, device: &str, rate: Option<f64>, ca_type: &str) -> Side {
    Side { host: host.into(), device: device.into(), rate_gbps: rate, ca_type: ca_type.into(), ..test_side() }
}

fn bw(gbps: f64) -> TestResult {
    TestResult {
        paths: Vec::new(),
        test: TestKind::WriteBw,
        direction: Direction::AtoB,
        size: 65536,
        iterations: 1000,
        qps: 1,
        lat_us: None,
        bw_gbps: Some(gbps),
        peak_gbps: Some(gbps),
        msg_rate_mpps: Some(gbps / 0.524288 / 1000.0),
        counters: Default::default(),
        error: None,
        remedy: None,
        under_load: None,
    }
}

fn lat(p50: f64) -> TestResult {
    let l = LatencySummary { min: p50, p50, p90: p50, p99: p50, p999: p50, max: p50, mean: p50, stdev: 0.0, preempt: None };
    TestResult { test: TestKind::SendLat, size: 2, lat_us: Some(l), bw_gbps: None, peak_gbps: None, msg_rate_mpps: None, ..bw(0.0) }
}

/// Rail `k` (`mlx5_k` on n1 and n2) with these results; each bandwidth result moved
/// `gbps` for one second from `start + offset_s`.
fn rail(k: usize, rate: Option<f64>, ca: &str, results: Vec<TestResult>, start: Instant, offset_s: f64) -> RailRun {
    let dev = format!("mlx5_{k}");
    let windows = results
        .iter()
        .map(|r| {
            r.bw_gbps.filter(|_| !r.test.is_latency()).map(|g| Window {
                start: start + Duration::from_secs_f64(offset_s),
                elapsed_ns: SECOND,
                bytes: (g * 1e9 / 8.0) as u64,
                messages: 1000,
            })
        })
        .collect();
    RailRun { record: RailRecord { rail: k, a: side("n1", &dev, rate, ca), b: side("n2", &dev, rate, ca), results }, windows, unreachable: None }
}

fn ids_on(findings: &[Finding], subject: &str) -> Vec<String> {
    findings.iter().filter(|f| f.subject == subject && f.severity != Severity::Info).map(|f| f.id.to_string()).collect()
}

#[test]
fn one_slow_rail_is_named_by_its_siblings_even_without_a_capacity() {
    // Soft-RoCE: no capacity to judge against, only the other rails.
    let t0 = Instant::now();
    let rails: Vec<RailRun> = [9.0, 9.4, 2.1, 9.1].iter().enumerate().map(|(k, &g)| rail(k, None, "Soft-RoCE (rxe)", vec![bw(g)], t0, 0.0)).collect();
    let (verdict, findings, aggregate) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert_eq!(verdict, Verdict::Fail);
    let bad: Vec<&Finding> = findings.iter().filter(|f| f.severity == Severity::Error).collect();
    assert_eq!(bad.len(), 1, "{findings:#?}");
    assert_eq!(bad[0].id, FindingId::PairRail);
    assert_eq!(bad[0].subject, "rail 2 (n1 mlx5_2 <-> n2 mlx5_2)");
    assert!(bad[0].message.contains("below 50% of its sibling rails' median 9.100 Gb/s"), "{}", bad[0].message);
    // The node total: everything the four moved in the one second they shared.
    assert_eq!(aggregate.len(), 1);
    assert_eq!(aggregate[0].rails, 4);
    assert!((aggregate[0].bw_gbps - 29.6).abs() < 0.01, "{}", aggregate[0].bw_gbps);
    assert_eq!(aggregate[0].capacity_gbps, None);
    // A looser threshold lets it pass.
    let (verdict, _, _) = judge(&rails, &criteria(), RailThreshold::parse("20").unwrap(), None);
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn latency_above_twice_the_sibling_median() {
    let t0 = Instant::now();
    let rails: Vec<RailRun> =
        [1.9, 2.0, 4.5, 2.1].iter().enumerate().map(|(k, &us)| rail(k, Some(400.0), "MT4129", vec![lat(us)], t0, 0.0)).collect();
    let (_, findings, aggregate) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert_eq!(ids_on(&findings, "rail 2 (n1 mlx5_2 <-> n2 mlx5_2)"), ["pair.rail"], "{findings:#?}");
    assert!(ids_on(&findings, "rail 1 (n1 mlx5_1 <-> n2 mlx5_1)").is_empty());
    assert!(aggregate.is_empty(), "latency has no aggregate");
}

#[test]
fn a_rail_below_its_own_capacity_is_pair_rail() {
    let t0 = Instant::now();
    // All four at 300 of 400 Gb/s: the siblings agree, the capacity does not.
    let rails: Vec<RailRun> = (0..4).map(|k| rail(k, Some(400.0), "MT4129", vec![bw(300.0)], t0, 0.0)).collect();
    let (verdict, findings, _) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert_eq!(verdict, Verdict::Fail);
    for k in 0..4 {
        let subject = format!("rail {k} (n1 mlx5_{k} <-> n2 mlx5_{k})");
        assert!(ids_on(&findings, &subject).contains(&"pair.rail".to_string()), "{subject}: {findings:#?}");
    }
}

#[test]
fn the_aggregate_is_over_the_union_of_windows() {
    let t0 = Instant::now();
    // Each rail alone at line rate, but one after the other: the node never moved more than one
    // rail's worth. A sum of the rails' own figures would say 4 x 390.
    let rails: Vec<RailRun> = (0..4).map(|k| rail(k, Some(400.0), "MT4129", vec![bw(390.0)], t0, k as f64)).collect();
    let (verdict, findings, aggregate) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert!((aggregate[0].bw_gbps - 390.0).abs() < 0.5, "4 s of 390 Gb/s each over a 4 s union: {}", aggregate[0].bw_gbps);
    assert_eq!(aggregate[0].capacity_gbps, Some(1600.0));
    assert_eq!(verdict, Verdict::Fail);
    let agg: Vec<&Finding> = findings.iter().filter(|f| f.id == FindingId::PairAggregate).collect();
    assert_eq!(agg.len(), 1, "{findings:#?}");
    assert_eq!(agg[0].subject, "n1 <-> n2 (4 rails)");
    // Together, they pass.
    let rails: Vec<RailRun> = (0..4).map(|k| rail(k, Some(400.0), "MT4129", vec![bw(390.0)], t0, 0.0)).collect();
    let (verdict, findings, aggregate) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert!((aggregate[0].bw_gbps - 1560.0).abs() < 0.5);
    assert_eq!(verdict, Verdict::Pass, "{findings:#?}");
    // A shared bound smaller than the sum is the capacity (NICs behind one switch uplink).
    let (verdict, _, aggregate) = judge(&rails, &criteria(), RailThreshold::default(), Some(1000.0));
    assert_eq!(aggregate[0].capacity_gbps, Some(1000.0));
    assert_eq!(verdict, Verdict::Pass, "1560 of 1000: not below the bound");
}

#[test]
fn an_unreachable_rail_is_named_and_the_others_still_judged() {
    let t0 = Instant::now();
    let mut rails: Vec<RailRun> = (0..4).map(|k| rail(k, Some(400.0), "MT4129", vec![bw(390.0)], t0, 0.0)).collect();
    rails[1].record.results.clear();
    rails[1].windows.clear();
    rails[1].unreachable = Some(crate::pair::rails::judge::Idle::PortsDown(vec![("n2".into(), "mlx5_1".into(), 1)]));
    rails[3].record.results[0].bw_gbps = Some(100.0);
    rails[3].windows[0].as_mut().unwrap().bytes = (100.0e9 / 8.0) as u64;
    let (verdict, findings, aggregate) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert_eq!(verdict, Verdict::Fail);
    let unreachable: Vec<&Finding> = findings.iter().filter(|f| f.id == FindingId::PairRailUnreachable).collect();
    assert_eq!(unreachable.len(), 1);
    assert_eq!(unreachable[0].subject, "rail 1 (n1 mlx5_1 <-> n2 mlx5_1)");
    assert!(unreachable[0].message.contains("not ACTIVE"));
    assert!(ids_on(&findings, "rail 3 (n1 mlx5_3 <-> n2 mlx5_3)").contains(&"pair.rail".to_string()));
    assert!(ids_on(&findings, "rail 0 (n1 mlx5_0 <-> n2 mlx5_0)").is_empty());
    assert_eq!(aggregate[0].rails, 3, "the rails that ran");
}

/// The counters of the rehearsal run that missed 2% loss on rail 2 by bandwidth alone: rail 2's
/// sequence errors name it; the timeout retries and duplicates a starved emulated CPU raises on
/// a clean rail (rail 0) do not.
#[test]
fn a_rail_that_drops_packets_its_siblings_do_not_is_named_even_at_full_speed() {
    let t0 = Instant::now();
    let with = |counters: &[(&str, u64)]| {
        let mut r = bw(9.0);
        r.counters = counters.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        r
    };
    let results = [
        with(&[("a:completer_retry_err", 1), ("b:duplicate_request", 120)]),
        with(&[]),
        with(&[("a:completer_retry_err", 128), ("a:rcvd_seq_err", 123)]),
        with(&[]),
    ];
    let rails: Vec<RailRun> = results.into_iter().enumerate().map(|(k, r)| rail(k, None, "Soft-RoCE (rxe)", vec![r], t0, 0.0)).collect();
    let (verdict, findings, _) = judge(&rails, &criteria(), RailThreshold::default(), None);
    assert_eq!(verdict, Verdict::Fail);
    let bad: Vec<&Finding> = findings.iter().filter(|f| f.severity == Severity::Error).collect();
    assert_eq!(bad.len(), 1, "{findings:#?}");
    assert_eq!((bad[0].id.as_str(), bad[0].subject.to_string().as_str()), ("pair.rail", "rail 2 (n1 mlx5_2 <-> n2 mlx5_2)"));
    assert!(bad[0].message.contains("123 sequence errors (a:rcvd_seq_err +123)"), "{}", bad[0].message);
    // mlx5's names; a few on every rail, or siblings nearly as lossy: nothing said.
    let even: Vec<RailRun> = (0..4).map(|k| rail(k, None, "ConnectX-7", vec![with(&[("a:packet_seq_err", 30)])], t0, 0.0)).collect();
    assert!(judge(&even, &criteria(), RailThreshold::default(), None).1.iter().all(|f| f.severity != Severity::Error));
    let few: Vec<RailRun> =
        (0..4).map(|k| rail(k, None, "ConnectX-7", vec![with(&[("b:out_of_sequence", if k == 1 { 19 } else { 0 })])], t0, 0.0)).collect();
    assert!(judge(&few, &criteria(), RailThreshold::default(), None).1.iter().all(|f| f.severity != Severity::Error), "below 20: noise");
}
