use super::*;
use crate::outcome::Severity;

fn all_pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).collect()
}

fn names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("n{i}/mlx5_0")).collect()
}

fn m(a: usize, b: usize, bw: f64, lat: f64) -> PairMeasure {
    PairMeasure { a, b, bw_gbps: Some(bw), lat_us: Some(lat), failed: false, preempted: None }
}

fn failed(a: usize, b: usize) -> PairMeasure {
    PairMeasure { a, b, bw_gbps: None, lat_us: None, failed: true, preempted: None }
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
    // 0.3: suspects gain `severity` (contract, "Health-check outputs").
    assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"kind":"node","subject":"n3/mlx5_0","reason":"r","severity":"error"}"#);
    let w = Suspect::warning(SuspectKind::Node, "n3/mlx5_0", "regression: r");
    assert_eq!(serde_json::to_string(&w).unwrap(), r#"{"kind":"node","subject":"n3/mlx5_0","reason":"regression: r","severity":"warning"}"#);
    // A 0.2 document (no severity) reads as an error.
    let back: Suspect = serde_json::from_str(r#"{"kind":"config","subject":"x","reason":"y"}"#).unwrap();
    assert_eq!((back.kind, back.severity), (SuspectKind::Config, Severity::Error));
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

/// 12 endpoints on 3 leaves of 4 (0-3 leaf0, 4-7 leaf1, 8-11 leaf2).
fn three_leaves() -> Leaves {
    Leaves {
        of: (0..12).map(|e| Some(e / 4)).collect(),
        names: vec!["leaf0".into(), "leaf1".into(), "leaf2".into()],
        uplinks: vec![vec!["spine0".into()], vec!["spine0".into(), "spine1".into()], vec![]],
    }
}

#[test]
fn a_leaf_slow_across_the_spine_and_fine_inside_is_an_uplink() {
    let leaf = |e: usize| e / 4;
    let first = mesh(12, |a, b| (leaf(a) != leaf(b) && (leaf(a) == 1 || leaf(b) == 1)).then(|| m(a, b, 57.0, 1.9)));
    let c = crit();
    let retest = rerun(&first, &c, |a, b| m(a, b, 57.0, 1.9));
    let s = analyse_with(&names(12), &first, &retest, &[], &c, Some(&three_leaves()));
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Uplink, "leaf1<->spine0,spine1"));
    assert!(s[0].reason.contains("4 of 4 endpoints on leaf1") && s[0].reason.contains("6 of 6 pairs inside the leaf are fine"), "{}", s[0].reason);
    // Without the topology the same pairs are four slow nodes.
    let plain = analyse(&names(12), &first, &retest, &c);
    assert_eq!(plain.iter().filter(|s| s.kind == SuspectKind::Node).count(), 4, "{plain:?}");
}

/// Issue #57: a slow node (5) inside a leaf (leaf1) whose uplinks are also slow was never named:
/// bad in all its pairs, it was folded into the uplink suspect.
#[test]
fn a_slow_node_inside_a_leaf_with_slow_uplinks_is_named() {
    let leaf = |e: usize| e / 4;
    let slow = |a: usize, b: usize| (leaf(a) != leaf(b) && (leaf(a) == 1 || leaf(b) == 1)) || a == 5 || b == 5;
    // 16 endpoints on 4 leaves: 51 of the 120 pairs slow, judged against the median.
    let leaves = Leaves {
        of: (0..16).map(|e| Some(e / 4)).collect(),
        names: (0..4).map(|l| format!("leaf{l}")).collect(),
        uplinks: vec![vec!["spine0".into()]; 4],
    };
    let first = mesh(16, |a, b| slow(a, b).then(|| m(a, b, 57.0, 1.9)));
    let c = crit();
    let retest = rerun(&first, &c, |a, b| m(a, b, 57.0, 1.9));
    let s = analyse_with(&names(16), &first, &retest, &[], &c, Some(&leaves));
    assert!(s.iter().any(|s| s.kind == SuspectKind::Uplink && s.subject == "leaf1<->spine0"), "{s:?}");
    let nodes: Vec<&str> = s.iter().filter(|s| s.kind == SuspectKind::Node).map(|s| s.subject.as_str()).collect();
    assert_eq!(nodes, [names(16)[5].as_str()], "{s:?}");
}

#[test]
fn a_leaf_slow_inside_too_is_a_switch() {
    let first = mesh(12, |a, b| (a / 4 == 1 || b / 4 == 1).then(|| m(a, b, 57.0, 1.9)));
    // Over half the pairs are slow: judged against the link's rate, not the median.
    let c = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    let retest = rerun(&first, &c, |a, b| m(a, b, 57.0, 1.9));
    let s = analyse_with(&names(12), &first, &retest, &[], &c, Some(&three_leaves()));
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Switch, "leaf1"));
}

/// `mesh --rails` on a rail-optimized fabric: 4 hosts x 3 rails, rail k of every host on leaf
/// `rail{k}`, and pairs only inside a rail (so inside a leaf).
fn rail_leaves() -> (Vec<PairMeasure>, Leaves) {
    let rail = |e: usize| e % 3;
    let pairs = all_pairs(12).into_iter().filter(|&(a, b)| rail(a) == rail(b) && a / 3 != b / 3);
    let first = pairs.map(|(a, b)| if rail(a) == 1 { m(a, b, 57.0, 1.9) } else { m(a, b, 195.0, 1.9) }).collect();
    let leaves = Leaves {
        of: (0..12).map(|e| Some(rail(e))).collect(),
        names: vec!["rail0".into(), "rail1".into(), "rail2".into()],
        uplinks: vec![vec![]; 3],
    };
    (first, leaves)
}

#[test]
fn a_rail_leaf_whose_every_pair_is_slow_is_its_switch_not_nodes_and_a_link() {
    let (first, leaves) = rail_leaves();
    let c = crit();
    let retest = rerun(&first, &c, |a, b| m(a, b, 57.0, 1.9));
    let s = analyse_with(&names(12), &first, &retest, &[], &c, Some(&leaves));
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Switch, "rail1"));
    assert!(s[0].reason.contains("4 of 4 endpoints on rail1") && s[0].reason.contains("6 of 6 pairs inside the leaf too"), "{}", s[0].reason);
}

#[test]
fn one_slow_link_inside_a_small_leaf_stays_a_link() {
    // A leaf of 3: one bad pair of its 3 inside is not "mostly bad", so it is not the leaf's.
    let leaves = Leaves { of: (0..6).map(|e| Some(e / 3)).collect(), names: vec!["leaf0".into(), "leaf1".into()], uplinks: vec![vec![]; 2] };
    let first = mesh(6, |a, b| ((a, b) == (0, 1)).then(|| m(a, b, 57.0, 1.9)));
    let c = crit();
    let retest = rerun(&first, &c, |a, b| m(a, b, 57.0, 1.9));
    let s = analyse_with(&names(6), &first, &retest, &[], &c, Some(&leaves));
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].kind, SuspectKind::Link, "{s:?}");
}

#[test]
fn one_slow_node_on_a_leaf_stays_a_node() {
    let first = mesh(12, |a, b| (a == 5 || b == 5).then(|| m(a, b, 57.0, 1.9)));
    let c = crit();
    let retest = rerun(&first, &c, |a, b| m(a, b, 57.0, 1.9));
    let s = analyse_with(&names(12), &first, &retest, &[], &c, Some(&three_leaves()));
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Node, "n6/mlx5_0"));
}

#[test]
fn zoom_pairs_are_evidence_a_sparse_pattern_lacks() {
    // A ring of 8 (each endpoint with two neighbours): endpoint 3 slow. Its two pairs alone
    // would do; the zoom-in against known-good 0, 6 and 7 confirms it is the node.
    let ring: Vec<PairMeasure> = (0..8)
        .map(|i| (i, (i + 1) % 8))
        .map(|(a, b)| if a == 3 || b == 3 { m(a.min(b), a.max(b), 57.0, 1.9) } else { m(a.min(b), a.max(b), 195.0, 1.9) })
        .collect();
    let c = crit();
    let retest = rerun(&ring, &c, |a, b| m(a, b, 57.0, 1.9));
    let (still_bad, good) = zoom_input(8, &ring, &retest, &c);
    assert_eq!(still_bad, vec![(2, 3), (3, 4)]);
    assert_eq!(good, vec![true, true, false, false, false, true, true, true]);
    let zoom = [m(0, 3, 57.0, 1.9), m(3, 6, 57.0, 1.9), m(3, 7, 57.0, 1.9), m(0, 2, 195.0, 1.9), m(2, 6, 195.0, 1.9), m(4, 7, 195.0, 1.9)];
    let s = analyse_with(&names(8), &ring, &retest, &zoom, &c, None);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Node, "n4/mlx5_0"));
    assert!(s[0].reason.starts_with("5 of 5 pairs"), "{}", s[0].reason);
}

/// Issue #28 item 2: 0.2 judged every pair against the slowest endpoint's rate, so one 2X port
/// (200 of 400 Gb/s) made a 250 Gb/s cable elsewhere look fine. Each pair now has its own bar.
#[test]
fn one_slow_port_does_not_hide_a_slow_link_elsewhere() {
    let mut capacity = vec![Some(400.0); 8];
    capacity[5] = Some(200.0);
    let c = Criteria { capacity_gbps: capacity, ..crit() };
    let speed = |a: usize, b: usize| match (a, b) {
        (1, 2) => Some(m(a, b, 250.0, 2.0)),
        (_, 5) | (5, _) => Some(m(a, b, 193.0, 2.0)),
        _ => Some(m(a, b, 390.0, 2.0)),
    };
    let first = mesh(8, speed);
    assert_eq!((c.expected_for(0, 1), c.expected_for(0, 5), c.expected_for(5, 7)), (Some(400.0), Some(200.0), Some(200.0)));
    assert_eq!(to_retest(&first, &c), [(1, 2)], "only the slow cable is bad; the 2X port's pairs reach its 200 Gb/s");
    let retest = rerun(&first, &c, |a, b| speed(a, b).unwrap());
    let s = analyse(&names(8), &first, &retest, &c);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!((s[0].kind, s[0].subject.as_str()), (SuspectKind::Link, "n2/mlx5_0<->n3/mlx5_0"), "{s:#?}");
    assert!(s[0].reason.contains("expected 400 Gb/s"), "{}", s[0].reason);
    // What 0.2 did: the slowest endpoint's 200 Gb/s for every pair, and nothing is found.
    let global = Criteria { expected_bw_gbps: Some(200.0), ..crit() };
    assert!(to_retest(&first, &global).is_empty());
    // And the slow port is said as what it is.
    let warned = slow_ports(&names(8), &c, &s);
    assert_eq!(warned.len(), 1);
    assert_eq!((warned[0].subject.as_str(), warned[0].is_error()), ("n6/mlx5_0", false));
}

/// Two pairs of a loaded host at 8 ms, their loops preempted: not retested, no link blamed.
#[test]
fn a_preempted_pairs_latency_is_not_blamed_on_a_link() {
    use crate::model::{Direction, LatencySummary, TestKind};
    use crate::perf::preempt::Preempt;
    let result = |p50: f64, preempt: Option<Preempt>| crate::outcome::TestResult {
        paths: Vec::new(),
        test: TestKind::SendLat,
        direction: Direction::AtoB,
        size: 2,
        iterations: 1000,
        qps: 1,
        lat_us: Some(LatencySummary { min: p50, p50, p90: p50, p99: p50, p999: p50, max: p50, mean: p50, stdev: 0.0, preempt }),
        bw_gbps: None,
        peak_gbps: None,
        msg_rate_mpps: None,
        counters: Default::default(),
        error: None,
        remedy: None,
        under_load: None,
    };
    let gaps = Preempt { gaps: 30, gap_ns: 240_000_000, elapsed_ns: 1_000_000_000 };
    let c = Criteria::default();
    let loaded = |preempt: Option<Preempt>| {
        mesh(4, |a, b| {
            let p = PairMeasure::of(a, b, &[result(8000.0, preempt)], false);
            ((a, b) == (0, 1) || (a, b) == (2, 3)).then_some(PairMeasure { bw_gbps: Some(195.0), ..p })
        })
    };
    let blamed = loaded(None);
    assert_eq!(to_retest(&blamed, &c), vec![(0, 1), (2, 3)], "not preempted: 8 ms is an outlier");
    let said = loaded(Some(gaps));
    assert!(to_retest(&said, &c).is_empty(), "{said:?}");
    let p = said.iter().find(|m| (m.a, m.b) == (0, 1)).unwrap();
    assert_eq!((p.lat_us, p.preempted), (None, Some(gaps)));
}
