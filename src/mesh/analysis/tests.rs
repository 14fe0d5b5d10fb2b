use super::*;

fn all_pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).collect()
}

fn names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("n{i}/mlx5_0")).collect()
}

fn m(a: usize, b: usize, bw: f64, lat: f64) -> PairMeasure {
    PairMeasure { a, b, bw_gbps: Some(bw), lat_us: Some(lat), failed: false }
}

fn failed(a: usize, b: usize) -> PairMeasure {
    PairMeasure { a, b, bw_gbps: None, lat_us: None, failed: true }
}

/// A healthy n-endpoint mesh with a little jitter, then `tweak` per pair.
fn mesh(n: usize, tweak: impl Fn(usize, usize) -> Option<PairMeasure>) -> Vec<PairMeasure> {
    all_pairs(n)
        .into_iter()
        .map(|(a, b)| tweak(a, b).unwrap_or_else(|| m(a, b, 195.0 + ((a * 7 + b * 3) % 5) as f64 * 0.5, 1.9 + ((a + b) % 3) as f64 * 0.02)))
        .collect()
}

/// The retest: re-measure the bad pairs with `again`.
fn rerun(first: &[PairMeasure], c: &Criteria, again: impl Fn(usize, usize) -> PairMeasure) -> Vec<PairMeasure> {
    to_retest(first, c).into_iter().map(|(a, b)| again(a, b)).collect()
}

fn crit() -> Criteria {
    Criteria::default()
}

#[test]
fn healthy_cluster_has_no_suspects() {
    let first = mesh(8, |_, _| None);
    let c = crit();
    assert!(to_retest(&first, &c).is_empty());
    assert!(analyse(&names(8), &first, &[], &c).is_empty());
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    assert!(to_retest(&first, &c).is_empty());
    assert!(analyse(&names(8), &first, &[], &c).is_empty());
}

#[test]
fn one_bad_node_among_eight() {
    let slow = |a: usize, b: usize| (a == 3 || b == 3).then(|| m(a, b, 48.0, 2.0));
    let first = mesh(8, slow);
    let c = crit();
    let re = to_retest(&first, &c);
    assert_eq!(re.len(), 7);
    let retest = rerun(&first, &c, |a, b| slow(a, b).unwrap());
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].kind, SuspectKind::Node);
    assert_eq!(s[0].subject, "n4/mlx5_0");
    assert!(s[0].reason.starts_with("7 of 7 pairs at ~48 Gb/s vs cluster median 19"), "{}", s[0].reason);
    assert!(s[0].reason.contains("NIC, PCIe slot"), "{}", s[0].reason);
}

#[test]
fn bad_node_against_expected_rate() {
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    let slow = |a: usize, b: usize| (a == 0 || b == 0).then(|| m(a, b, 97.0, 2.0));
    let first = mesh(8, slow);
    let retest = rerun(&first, &c, |a, b| slow(a, b).unwrap());
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Node, "n1/mlx5_0"));
    assert!(s[0].reason.contains("~97 Gb/s vs expected 200 Gb/s"), "{}", s[0].reason);
}

#[test]
fn nearly_all_pairs_bad_is_still_the_node() {
    // 6 of 7 pairs slow: at least 2/3.
    let slow = |a: usize, b: usize| ((a == 5 || b == 5) && a != 0).then(|| m(a, b, 60.0, 2.0));
    let first = mesh(8, slow);
    let c = crit();
    let retest = rerun(&first, &c, |a, b| slow(a, b).unwrap());
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].subject, "n6/mlx5_0");
    assert!(s[0].reason.starts_with("6 of 7 pairs"), "{}", s[0].reason);
}

#[test]
fn two_bad_nodes_among_four_do_not_blame_the_good_two() {
    let slow = |a: usize, b: usize| (a <= 1 || b <= 1).then(|| m(a, b, 50.0, 2.0));
    let first = mesh(4, slow);
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    let retest = rerun(&first, &c, |a, b| slow(a, b).unwrap());
    let s = analyse(&names(4), &first, &retest, &c);
    let subjects: Vec<&str> = s.iter().map(|s| s.subject.as_str()).collect();
    assert_eq!(subjects, ["n1/mlx5_0", "n2/mlx5_0"], "{s:#?}");
    assert!(s.iter().all(|s| s.kind == SuspectKind::Node));
}

#[test]
fn one_bad_link_among_eight() {
    let slow = |a: usize, b: usize| (a == 2 && b == 6).then(|| m(a, b, 61.0, 2.0));
    let first = mesh(8, slow);
    let c = crit();
    assert_eq!(to_retest(&first, &c), vec![(2, 6)]);
    let retest = rerun(&first, &c, |a, b| slow(a, b).unwrap());
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].kind, SuspectKind::Link);
    assert_eq!(s[0].subject, "n3/mlx5_0<->n7/mlx5_0");
    assert!(s[0].reason.starts_with("only this pair is slow in both passes (at ~61 Gb/s vs cluster median 19"), "{}", s[0].reason);
    assert!(s[0].reason.ends_with("cable, switch port or route between them"), "{}", s[0].reason);
}

#[test]
fn latency_outlier_link() {
    let laggy = |a: usize, b: usize| (a == 1 && b == 4).then(|| m(a, b, 195.0, 4.2));
    let first = mesh(8, laggy);
    let c = crit();
    let retest = rerun(&first, &c, |a, b| laggy(a, b).unwrap());
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].subject, "n2/mlx5_0<->n5/mlx5_0");
    assert!(s[0].reason.contains("~4.2 us latency vs cluster median 1.9"), "{}", s[0].reason);
}

#[test]
fn flaky_pair() {
    let slow = |a: usize, b: usize| (a == 0 && b == 7).then(|| m(a, b, 40.0, 2.0));
    let first = mesh(8, slow);
    let c = crit();
    let retest = rerun(&first, &c, |a, b| m(a, b, 196.0, 1.9));
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].kind, SuspectKind::Link);
    assert_eq!(s[0].subject, "n1/mlx5_0<->n8/mlx5_0");
    assert!(s[0].reason.starts_with("flaky: at ~40 Gb/s"), "{}", s[0].reason);
    assert!(s[0].reason.contains("good on retest (196 Gb/s)"), "{}", s[0].reason);
    assert!(s[0].is_flaky());
}

#[test]
fn flaky_listed_after_bad() {
    let first = mesh(8, |a, b| match (a, b) {
        (0, 7) => Some(m(a, b, 40.0, 2.0)),
        (2, 5) => Some(m(a, b, 50.0, 2.0)),
        _ => None,
    });
    let c = crit();
    let retest = rerun(&first, &c, |a, b| if a == 0 { m(a, b, 196.0, 1.9) } else { m(a, b, 52.0, 2.0) });
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 2, "{s:#?}");
    assert_eq!(s[0].subject, "n3/mlx5_0<->n6/mlx5_0");
    assert!(!s[0].is_flaky());
    assert!(s[1].is_flaky());
}

#[test]
fn failed_pair_is_a_link() {
    let first = mesh(8, |a, b| (a == 1 && b == 2).then(|| failed(a, b)));
    let c = crit();
    assert_eq!(to_retest(&first, &c), vec![(1, 2)]);
    let retest = vec![failed(2, 1)];
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Link, "n2/mlx5_0<->n3/mlx5_0"));
    assert!(s[0].reason.starts_with("only this pair failed in both passes, both ends"), "{}", s[0].reason);
}

#[test]
fn unreachable_node() {
    let first = mesh(5, |a, b| (b == 4).then(|| failed(a, b)));
    let c = crit();
    let retest: Vec<PairMeasure> = to_retest(&first, &c).into_iter().map(|(a, b)| failed(a, b)).collect();
    let s = analyse(&names(5), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].subject, "n5/mlx5_0");
    assert!(s[0].reason.starts_with("4 of 4 pairs failed: agent unreachable"), "{}", s[0].reason);
}

#[test]
fn bad_node_and_bad_link_together() {
    let slow = |a: usize, b: usize| {
        if a == 3 || b == 3 {
            Some(m(a, b, 48.0, 2.0))
        } else if (a, b) == (0, 6) {
            Some(m(a, b, 90.0, 2.0))
        } else {
            None
        }
    };
    let first = mesh(8, slow);
    let c = crit();
    // A flaky pair of the bad node is left to the node.
    let retest = rerun(&first, &c, |a, b| if (a, b) == (3, 7) { m(a, b, 195.0, 1.9) } else { slow(a, b).unwrap() });
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 2, "{s:#?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Node, "n4/mlx5_0"));
    assert!(s[0].reason.starts_with("6 of 7 pairs"), "{}", s[0].reason);
    assert_eq!((s[1].kind, s[1].subject.as_str()), (SuspectKind::Link, "n1/mlx5_0<->n7/mlx5_0"));
    assert!(s[1].reason.starts_with("only this pair is slow in both passes (at ~90 Gb/s vs cluster median 19"), "{}", s[1].reason);
}

#[test]
fn whole_cluster_short_of_expected() {
    let first = mesh(6, |a, b| Some(m(a, b, 95.0 + (a + b) as f64 * 0.1, 1.9)));
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    let retest = rerun(&first, &c, |a, b| m(a, b, 95.0, 1.9));
    let s = analyse(&names(6), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Config, CLUSTER));
    assert!(s[0].reason.starts_with("15 of 15 pairs at ~95"), "{}", s[0].reason);
    assert!(s[0].reason.contains("expected rate that is wrong"), "{}", s[0].reason);
}

#[test]
fn two_endpoints_one_slow_pair() {
    let first = vec![m(0, 1, 50.0, 2.0)];
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    let s = analyse(&names(2), &first, &[m(0, 1, 50.0, 2.0)], &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0].kind, SuspectKind::Link);
    assert!(s[0].reason.contains("add a third"), "{}", s[0].reason);
}

#[test]
fn is_bad_rules() {
    let c = crit();
    assert!(is_bad(&failed(0, 1), &c, Some(200.0), Some(2.0)));
    assert!(!is_bad(&m(0, 1, 170.0, 2.0), &c, Some(200.0), Some(2.0)));
    assert!(is_bad(&m(0, 1, 150.0, 2.0), &c, Some(200.0), Some(2.0)));
    assert!(is_bad(&m(0, 1, 200.0, 3.1), &c, Some(200.0), Some(2.0)));
    assert!(!is_bad(&m(0, 1, 200.0, 2.9), &c, Some(200.0), Some(2.0)));
    // Expected rate known: judged against it, not the median.
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    assert!(is_bad(&m(0, 1, 170.0, 2.0), &c, Some(170.0), None));
    assert!(!is_bad(&m(0, 1, 185.0, 2.0), &c, Some(100.0), None));
    // Nothing to compare against.
    assert!(!is_bad(&m(0, 1, 1.0, 99.0), &crit(), None, None));
}

#[test]
fn medians_skip_failed() {
    let ms = vec![m(0, 1, 100.0, 1.0), m(0, 2, 200.0, 3.0), failed(1, 2)];
    assert_eq!(medians(&ms), (Some(150.0), Some(2.0)));
    assert_eq!(medians(&[]), (None, None));
}

#[test]
fn suspects_serialize_as_in_the_contract() {
    let s = Suspect::new(SuspectKind::Node, "n3/mlx5_0", "r");
    assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"kind":"node","subject":"n3/mlx5_0","reason":"r"}"#);
    let back: Suspect = serde_json::from_str(r#"{"kind":"config","subject":"x","reason":"y"}"#).unwrap();
    assert_eq!(back.kind, SuspectKind::Config);
}

fn settings(fw: &str, mtu: &str) -> Vec<(String, String)> {
    vec![("fw_ver".into(), fw.into()), ("active_mtu".into(), mtu.into()), ("rate_gbps".into(), "200".into())]
}

#[test]
fn config_drift_names_the_odd_one() {
    let mut items: Vec<(String, Vec<(String, String)>)> = names(8).into_iter().map(|n| (n, settings("20.39.1002", "4096"))).collect();
    items[4].1 = settings("20.35.2000", "4096");
    items[6].1 = settings("20.39.1002", "1024");
    let s = config_drift(&items);
    assert_eq!(s.len(), 2, "{s:#?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Config, "n5/mlx5_0"));
    assert_eq!(s[0].reason, "fw_ver 20.35.2000 differs from the other 7 endpoints (20.39.1002)");
    assert_eq!(s[1].subject, "n7/mlx5_0");
    assert_eq!(s[1].reason, "active_mtu 1024 differs from the other 7 endpoints (4096)");
}

#[test]
fn config_drift_uniform_and_splits() {
    let items: Vec<(String, Vec<(String, String)>)> = names(4).into_iter().map(|n| (n, settings("1", "4096"))).collect();
    assert!(config_drift(&items).is_empty());
    assert!(config_drift(&[]).is_empty());

    // Two minorities: "6 of the other 7".
    let mut items: Vec<(String, Vec<(String, String)>)> = names(8).into_iter().map(|n| (n, settings("A", "4096"))).collect();
    items[0].1 = settings("B", "4096");
    items[1].1 = settings("C", "4096");
    let s = config_drift(&items);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].reason, "fw_ver B differs from 6 of the other 7 endpoints (A)");

    // A tie: no majority, every endpoint on the key is named.
    let items = vec![("x".to_string(), settings("A", "4096")), ("y".to_string(), settings("B", "4096"))];
    let s = config_drift(&items);
    assert_eq!(s.len(), 2, "{s:#?}");
    assert!(s[0].reason.contains("no majority"), "{}", s[0].reason);

    // A missing key is not drift.
    let items = vec![
        ("x".to_string(), settings("A", "4096")),
        ("y".to_string(), settings("A", "4096")),
        ("z".to_string(), vec![("fw_ver".to_string(), "A".to_string())]),
    ];
    assert!(config_drift(&items).is_empty());
}
