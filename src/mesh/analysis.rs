//! Reading a mesh (pure): which pairs are bad, and which nodes, links or settings explain them.
//!
//! A pair is bad when it failed, when its bandwidth is short of the expected rate (or, with no
//! expected rate, well below the cluster's median), or when its latency is well above the
//! cluster's median. The bad pairs of a first pass are run again once (`to_retest`): bad twice
//! is bad, bad then good is flaky.
//!
//! `analyse` then explains the bad pairs, most sweeping explanation first:
//! - a NODE (endpoint) is suspect when all or nearly all (at least 2/3, and at least 2) of its
//!   pairs are bad while the others are mostly good with each other. Nodes are peeled off one at
//!   a time, worst first, and a node's pairs stop counting against its peers once it is blamed
//!   (two bad nodes of four would otherwise make the good two look 2/3 bad);
//! - when nearly every pair is bad, no node stands out: one `config` suspect with subject
//!   `cluster` (a cluster-wide cause, or an expected rate that is wrong);
//! - a LINK is suspect when a pair is bad twice but is not explained by a suspect node;
//! - a FLAKY pair (bad, then good on retest) is a `link` suspect whose reason starts `flaky:`,
//!   listed after the others; a flaky pair of a suspect node is left to the node.
//!
//! `config_drift` compares per-endpoint settings (firmware, MTU, rate...) against the majority.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One pair's figures as the verdict sees them: the headline bandwidth (largest size) and
/// latency of the pair run, `None` when not measured. `failed`: the pair could not be run or a
/// test errored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairMeasure {
    pub a: usize,
    pub b: usize,
    pub bw_gbps: Option<f64>,
    pub lat_us: Option<f64>,
    pub failed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuspectKind {
    Node,
    Link,
    Config,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    pub kind: SuspectKind,
    /// node, config: the endpoint as given; link: `A<->B`; cluster-wide: `cluster`.
    pub subject: String,
    pub reason: String,
}

impl Suspect {
    /// A flaky link (bad in the first pass, good on retest): a lesser suspect than the others.
    pub fn is_flaky(&self) -> bool {
        self.kind == SuspectKind::Link && self.reason.starts_with(FLAKY)
    }
}

const FLAKY: &str = "flaky:";

/// Subject of the cluster-wide suspect (kind `config`).
pub const CLUSTER: &str = "cluster";

#[derive(Debug, Clone, PartialEq)]
pub struct Criteria {
    /// The link's data rate when known (e.g. from the ports' `rate_gbps`, or `--expect rate`).
    pub expected_bw_gbps: Option<f64>,
    /// Share of `expected_bw_gbps` a pair must reach (0.9).
    pub bw_fraction: f64,
    /// With no expected rate: share of the cluster's median bandwidth a pair must reach (0.8).
    pub outlier_fraction: f64,
    /// A pair's latency above this many times the cluster's median is bad (1.5).
    pub lat_outlier_factor: f64,
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria { expected_bw_gbps: None, bw_fraction: 0.9, outlier_fraction: 0.8, lat_outlier_factor: 1.5 }
    }
}

/// The median of the non-failed pairs' bandwidth and latency (NaNs ignored).
pub fn medians(measures: &[PairMeasure]) -> (Option<f64>, Option<f64>) {
    let ok = || measures.iter().filter(|m| !m.failed);
    (median(ok().filter_map(|m| m.bw_gbps).collect()), median(ok().filter_map(|m| m.lat_us).collect()))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// Bandwidth short of what it should be: of the expected rate when known, else of the median.
fn slow(m: &PairMeasure, c: &Criteria, median_bw: Option<f64>) -> bool {
    let Some(bw) = m.bw_gbps else { return false };
    match (c.expected_bw_gbps, median_bw) {
        (Some(exp), _) => bw < c.bw_fraction * exp,
        (None, Some(med)) => bw < c.outlier_fraction * med,
        (None, None) => false,
    }
}

fn laggy(m: &PairMeasure, c: &Criteria, median_lat: Option<f64>) -> bool {
    match (m.lat_us, median_lat) {
        (Some(lat), Some(med)) => lat > c.lat_outlier_factor * med,
        _ => false,
    }
}

/// A bad pair: failed, bandwidth short (see [`Criteria`]) or latency an outlier. Judge a retest
/// with the first pass's medians: the retest holds only bad pairs, its own median means nothing.
pub fn is_bad(m: &PairMeasure, c: &Criteria, median_bw: Option<f64>, median_lat: Option<f64>) -> bool {
    m.failed || slow(m, c, median_bw) || laggy(m, c, median_lat)
}

/// The bad pairs of a first pass, as `(lower, higher)`, each once, in the order measured.
pub fn to_retest(measures: &[PairMeasure], c: &Criteria) -> Vec<(usize, usize)> {
    let (mb, ml) = medians(measures);
    let mut out: Vec<(usize, usize)> = Vec::new();
    for m in measures.iter().filter(|m| is_bad(m, c, mb, ml)) {
        let key = key(m.a, m.b);
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

fn key(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

fn name(endpoints: &[String], i: usize) -> String {
    endpoints.get(i).cloned().unwrap_or_else(|| format!("#{i}"))
}

fn link_name(endpoints: &[String], (a, b): (usize, usize)) -> String {
    format!("{}<->{}", name(endpoints, a), name(endpoints, b))
}

/// Gb/s and µs as a person reads them: three significant figures at most.
pub fn fmt(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}").trim_end_matches(".0").to_string()
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A pair's standing after both passes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Good,
    /// Bad in the first pass, good on retest.
    Flaky,
    /// Bad in the first pass and on retest (or not retested).
    Bad,
}

/// What the bad pairs of a group (a node's, a link's) have in common, in words.
struct Symptoms {
    failed: usize,
    slow: Vec<f64>,
    laggy: Vec<f64>,
}

impl Symptoms {
    fn of<'m>(ms: impl Iterator<Item = &'m PairMeasure>, c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> Symptoms {
        let mut s = Symptoms { failed: 0, slow: Vec::new(), laggy: Vec::new() };
        for m in ms {
            if m.failed {
                s.failed += 1;
                continue;
            }
            if slow(m, c, mb) {
                s.slow.extend(m.bw_gbps);
            }
            if laggy(m, c, ml) {
                s.laggy.extend(m.lat_us);
            }
        }
        s
    }

    /// "at ~48 Gb/s vs cluster median 196 Gb/s", "failed", ...
    fn figure(&self, c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> String {
        let mut parts = Vec::new();
        if self.failed > 0 {
            parts.push(if self.slow.is_empty() && self.laggy.is_empty() { "failed".to_string() } else { format!("{} failed", self.failed) });
        }
        if let Some(typ) = median(self.slow.clone()) {
            let against = match (c.expected_bw_gbps, mb) {
                (Some(exp), Some(med)) if med < c.bw_fraction * exp => {
                    format!("expected {} Gb/s (cluster median {} Gb/s)", fmt(exp), fmt(med))
                }
                (Some(exp), _) => format!("expected {} Gb/s", fmt(exp)),
                (None, Some(med)) => format!("cluster median {} Gb/s", fmt(med)),
                (None, None) => "the others".into(),
            };
            parts.push(format!("at ~{} Gb/s vs {against}", fmt(typ)));
        }
        if let (Some(typ), Some(med)) = (median(self.laggy.clone()), ml) {
            parts.push(format!("~{} us latency vs cluster median {} us", fmt(typ), fmt(med)));
        }
        parts.join(", ")
    }

    fn only_failed(&self) -> bool {
        self.failed > 0 && self.slow.is_empty() && self.laggy.is_empty()
    }
}

/// Explains the bad pairs of a mesh. `first`: the first pass; `retest`: the re-run of the bad
/// ones (`to_retest`). A bad pair with no retest measure counts as bad twice. Order: nodes (by
/// endpoint), the cluster-wide suspect, links, flaky links.
pub fn analyse(endpoints: &[String], first: &[PairMeasure], retest: &[PairMeasure], c: &Criteria) -> Vec<Suspect> {
    let (mb, ml) = medians(first);
    let bad = |m: &PairMeasure| is_bad(m, c, mb, ml);

    // The first measure of each pair, and its retest if any.
    let mut pairs: BTreeMap<(usize, usize), (&PairMeasure, Option<&PairMeasure>)> = BTreeMap::new();
    for m in first.iter().filter(|m| m.a != m.b) {
        pairs.entry(key(m.a, m.b)).or_insert((m, None));
    }
    for m in retest {
        if let Some(e) = pairs.get_mut(&key(m.a, m.b)) {
            e.1.get_or_insert(m);
        }
    }
    // State of each pair, and the measure that stands for it (the retest when bad twice).
    let judged: BTreeMap<(usize, usize), (State, &PairMeasure)> = pairs
        .iter()
        .map(|(&k, &(m1, m2))| {
            let v = if !bad(m1) {
                (State::Good, m1)
            } else {
                match m2 {
                    Some(m2) if !bad(m2) => (State::Flaky, m1),
                    Some(m2) => (State::Bad, m2),
                    None => (State::Bad, m1),
                }
            };
            (k, v)
        })
        .collect();

    let width = judged.keys().map(|&(_, b)| b + 1).max().unwrap_or(0).max(endpoints.len());
    let is_bad_pair = |k: &(usize, usize)| judged.get(k).is_some_and(|(s, _)| *s == State::Bad);

    // Peel suspect nodes off, worst first.
    let mut blamed = vec![false; width];
    let mut order: Vec<usize> = Vec::new();
    loop {
        let mut best: Option<(usize, usize, usize)> = None; // (endpoint, bad, total)
        for e in (0..width).filter(|&e| !blamed[e]) {
            let (mut nbad, mut total) = (0, 0);
            for (&(a, b), (s, _)) in &judged {
                if (a == e || b == e) && !blamed[a + b - e] {
                    total += 1;
                    nbad += usize::from(*s == State::Bad);
                }
            }
            if nbad >= 2 && nbad * 3 >= total * 2 {
                let better = match best {
                    None => true,
                    // Higher share of bad pairs, then more bad pairs, then lower index.
                    Some((_, bb, bt)) => nbad * bt > bb * total || (nbad * bt == bb * total && nbad > bb),
                };
                if better {
                    best = Some((e, nbad, total));
                }
            }
        }
        match best {
            Some((e, _, _)) => {
                blamed[e] = true;
                order.push(e);
            }
            None => break,
        }
    }

    // What the unblamed endpoints show among themselves.
    let rest: Vec<&(usize, usize)> = judged.keys().filter(|&&(a, b)| !blamed[a] && !blamed[b]).collect();
    let rest_bad = rest.iter().filter(|k| is_bad_pair(k)).count();
    let total_bad = judged.values().filter(|(s, _)| *s == State::Bad).count();
    let cluster_wide = total_bad >= 3 && rest_bad * 3 >= rest.len() * 2;

    let mut out = Vec::new();
    if cluster_wide {
        let sym = Symptoms::of(judged.values().filter(|(s, _)| *s == State::Bad).map(|(_, m)| *m), c, mb, ml);
        let what = sym.figure(c, mb, ml);
        let cause = if sym.only_failed() {
            "a cluster-wide cause: agents unreachable, GIDs or routing (RoCE: IP, VLAN, firewall), or the ports not ACTIVE: run `fabcheck check` on each node"
        } else if c.expected_bw_gbps.is_some() && mb.is_some_and(|m| m < c.bw_fraction * c.expected_bw_gbps.unwrap_or(0.0)) {
            "a cluster-wide cause: an expected rate that is wrong, links trained down (width, speed), MTU, PFC/ECN, or congestion from other jobs"
        } else {
            "a cluster-wide cause: MTU, PFC/ECN or congestion control, adaptive routing, or congestion from other jobs"
        };
        out.push(Suspect {
            kind: SuspectKind::Config,
            subject: CLUSTER.into(),
            reason: format!("{total_bad} of {} pairs {what}, no node or link stands out: {cause}", judged.len()),
        });
        blamed.iter_mut().for_each(|b| *b = false);
        order.clear();
    }

    // Nodes, in endpoint order.
    order.sort_unstable();
    for &e in &order {
        let mine: Vec<&(usize, usize)> = judged.keys().filter(|&&(a, b)| a == e || b == e).collect();
        let nbad = mine.iter().filter(|k| is_bad_pair(k)).count();
        let sym = Symptoms::of(mine.iter().filter(|k| is_bad_pair(k)).map(|k| judged[*k].1), c, mb, ml);
        let cause = if sym.only_failed() {
            "agent unreachable, port down, or no usable GID: run `fabcheck check` on it"
        } else if sym.slow.is_empty() {
            "NUMA placement, CPU frequency or power saving, interrupt moderation, or firmware"
        } else {
            "NIC, PCIe slot (width/speed), NUMA placement or firmware"
        };
        out.push(Suspect {
            kind: SuspectKind::Node,
            subject: name(endpoints, e),
            reason: format!("{nbad} of {} pairs {}: {cause}", mine.len(), sym.figure(c, mb, ml)),
        });
    }

    // Links: bad twice and not explained by a node (nor by the cluster).
    let mut flaky = Vec::new();
    for (&k, &(s, m)) in &judged {
        if blamed[k.0] || blamed[k.1] || s == State::Good {
            continue;
        }
        if s == State::Flaky {
            if cluster_wide {
                continue;
            }
            let (m1, m2) = pairs[&k];
            let before = Symptoms::of(std::iter::once(m1), c, mb, ml).figure(c, mb, ml);
            let after = m2.and_then(|m| m.bw_gbps.map(|bw| format!("{} Gb/s", fmt(bw))).or(m.lat_us.map(|l| format!("{} us", fmt(l)))));
            flaky.push(Suspect {
                kind: SuspectKind::Link,
                subject: link_name(endpoints, k),
                reason: format!(
                    "{FLAKY} {before} in the first pass, good on retest{}: watch the port's error counters (symbol errors, link downed, retransmits) on both ends, or other traffic on the path",
                    after.map(|a| format!(" ({a})")).unwrap_or_default()
                ),
            });
            continue;
        }
        if cluster_wide {
            continue;
        }
        // Bad twice. Are both ends fine with everyone else?
        // Pairs with a blamed node are the node's, not held against this link's ends.
        let others =
            |e: usize| judged.keys().filter(|&&p| p != k && (p.0 == e || p.1 == e) && !blamed[p.0] && !blamed[p.1] && is_bad_pair(&p)).count();
        let (oa, ob) = (others(k.0), others(k.1));
        let sym = Symptoms::of(std::iter::once(m), c, mb, ml);
        let figure = sym.figure(c, mb, ml);
        let verb = if sym.only_failed() { "failed" } else { "is slow" };
        let passes = if pairs[&k].1.is_some() { " in both passes" } else { "" };
        let fig = if sym.only_failed() { String::new() } else { format!(" ({figure})") };
        let lead = if judged.len() == 1 {
            format!("the only pair {verb}{passes}{fig}: with two endpoints a node and a link look the same, add a third to tell them apart")
        } else if oa == 0 && ob == 0 {
            format!("only this pair {verb}{passes}{fig}, both ends are fine with everyone else")
        } else {
            format!("this pair {verb}{passes}{fig}, while both ends are fine with most others")
        };
        let cause = if sym.only_failed() {
            "route between them (RoCE: IP, VLAN, firewall; IB: partition, SM routes) or a port flapping"
        } else {
            "cable, switch port or route between them"
        };
        out.push(Suspect { kind: SuspectKind::Link, subject: link_name(endpoints, k), reason: format!("{lead}: {cause}") });
    }
    out.extend(flaky);
    out
}

/// Settings that differ from the majority. `items`: per endpoint, its `(key, value)` settings
/// (e.g. `("fw_ver", "20.39.1002")`, `("active_mtu", "4096")`, `("rate_gbps", "200")`). An
/// endpoint without a key is not compared on it. When the top values tie there is no majority:
/// every endpoint on the key is reported. Ordered by endpoint, then key.
pub fn config_drift(items: &[(String, Vec<(String, String)>)]) -> Vec<Suspect> {
    // key -> value -> endpoints (indices into items) holding it.
    let mut by_key: BTreeMap<&str, BTreeMap<&str, Vec<usize>>> = BTreeMap::new();
    for (i, (_, kvs)) in items.iter().enumerate() {
        for (k, v) in kvs {
            let holders = by_key.entry(k.as_str()).or_default().entry(v.as_str()).or_default();
            if !holders.contains(&i) {
                holders.push(i);
            }
        }
    }
    let mut found: Vec<(usize, &str, String)> = Vec::new();
    for (k, values) in &by_key {
        if values.len() < 2 {
            continue;
        }
        let top = values.values().map(Vec::len).max().unwrap_or(0);
        let leaders: Vec<&str> = values.iter().filter(|(_, h)| h.len() == top).map(|(v, _)| *v).collect();
        let compared: usize = values.values().map(Vec::len).sum();
        if leaders.len() == 1 {
            let major = leaders[0];
            for (v, holders) in values.iter().filter(|(v, _)| **v != major) {
                for &i in holders {
                    let others = compared - 1;
                    let whom = if top == others {
                        if others == 1 {
                            "the other endpoint".to_string()
                        } else {
                            format!("the other {others} endpoints")
                        }
                    } else {
                        format!("{top} of the other {others} endpoints")
                    };
                    found.push((i, k, format!("{k} {v} differs from {whom} ({major})")));
                }
            }
        } else {
            let split: Vec<String> = values.iter().map(|(v, h)| format!("{v} on {}", h.len())).collect();
            for (v, holders) in values {
                for &i in holders {
                    found.push((
                        i,
                        k,
                        format!("{k} {v} here, but no majority among the {compared} endpoints ({}): make them all the same", split.join(", ")),
                    ));
                }
            }
        }
    }
    found.sort_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));
    found.into_iter().map(|(i, _, reason)| Suspect { kind: SuspectKind::Config, subject: items[i].0.clone(), reason }).collect()
}

#[cfg(test)]
mod tests {
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
        let s = Suspect { kind: SuspectKind::Node, subject: "n3/mlx5_0".into(), reason: "r".into() };
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
}
