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
//! - a FLAKY pair (bad, then good on retest) is a `link` suspect marked `flaky` (its reason
//!   starts `flaky:`) of severity `warning`: it does not fail the mesh unless `--fail-on
//!   warning`; listed after the others; a flaky pair of a suspect node is left to the node.
//!
//! Classification lives here, node peeling in `peel` (counters per endpoint, updated as nodes are
//! blamed), the words in `prose`. `config_drift` compares per-endpoint settings (firmware, MTU, rate...) against the majority.

mod capacity;
mod collision;
mod criteria;
mod drift;
mod pair_findings;
mod peel;
mod prose;
mod suspect;

pub use capacity::slow_ports;
pub use collision::name_route_collisions;
pub use criteria::{pair_capacity, Criteria, HopMedians};
pub use drift::config_drift;
pub use pair_findings::pair_suspect;
pub use suspect::{Suspect, SuspectKind};

use crate::units::median;
use crate::units::sig3 as fmt;
use prose::Symptoms;
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
    /// The latency loop lost its CPU beyond the bound ([`crate::perf::preempt`]): `lat_us` is
    /// then `None`, the pair's latency not judged and no link blamed for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted: Option<crate::perf::preempt::Preempt>,
}

impl PairMeasure {
    /// The headline figures of a pair's results: the slowest direction's bandwidth at the
    /// largest size, and the first latency test's p50.
    pub fn of(a: usize, b: usize, results: &[crate::outcome::TestResult], failed: bool) -> PairMeasure {
        use crate::model::Direction;
        let largest = results.iter().filter(|r| r.bw_gbps.is_some()).map(|r| r.size).max();
        let bw = results.iter().filter(|r| Some(r.size) == largest && r.direction != Direction::Bidi).filter_map(|r| r.bw_gbps).reduce(f64::min);
        let lat = results.iter().find_map(|r| r.lat_us);
        let preempted = lat.and_then(|l| l.spoiled());
        PairMeasure { a, b, bw_gbps: bw, lat_us: lat.filter(|_| preempted.is_none()).map(|l| l.p50), failed, preempted }
    }
}

/// Subject of the cluster-wide suspect (kind `config`).
pub const CLUSTER: &str = "cluster";

/// The median of the non-failed pairs' bandwidth and latency (NaNs ignored).
pub fn medians(measures: &[PairMeasure]) -> (Option<f64>, Option<f64>) {
    let ok = || measures.iter().filter(|m| !m.failed);
    (median(ok().filter_map(|m| m.bw_gbps).collect()), median(ok().filter_map(|m| m.lat_us).collect()))
}

/// Bandwidth short of what it should be: of the expected rate when known, else of the median.
pub(super) fn slow(m: &PairMeasure, c: &Criteria, median_bw: Option<f64>) -> bool {
    let Some(bw) = m.bw_gbps else { return false };
    match (c.expected_for(m.a, m.b), median_bw) {
        (Some(exp), _) => bw < c.bw_fraction * exp,
        (None, Some(med)) => bw < c.outlier_fraction * med,
        (None, None) => false,
    }
}

/// Latency well above the median's: of the pairs of its own hop count when `--topology` gives
/// them ([`HopMedians`]: a pair across the spine is slower by design), else of all pairs.
pub(super) fn laggy(m: &PairMeasure, c: &Criteria, median_lat: Option<f64>) -> bool {
    let median_lat = c.hops.as_ref().and_then(|h| h.median_for(m.a, m.b)).or(median_lat);
    match (m.lat_us, median_lat) {
        (Some(lat), Some(med)) => lat > c.lat_outlier_factor * med,
        _ => false,
    }
}

/// Which figures of a pair are bad (see [`is_bad`]): bandwidth short, latency an outlier.
pub fn blame(m: &PairMeasure, c: &Criteria, median_bw: Option<f64>, median_lat: Option<f64>) -> crate::outcome::PairBlame {
    crate::outcome::PairBlame { bandwidth: slow(m, c, median_bw), latency: laggy(m, c, median_lat) }
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

/// What the zoom-in starts from: the pairs bad in the first pass and again on retest (or not
/// retested), and, per endpoint of `0..n`, whether it is known-good (none of its first-pass
/// pairs was bad, and it had at least one).
pub fn zoom_input(n: usize, first: &[PairMeasure], retest: &[PairMeasure], c: &Criteria) -> (Vec<(usize, usize)>, Vec<bool>) {
    let (mb, ml) = medians(first);
    let judged = classify(first, retest, c, mb, ml);
    let mut seen = vec![false; n];
    let mut good = vec![true; n];
    let mut still_bad = Vec::new();
    for (&(a, b), j) in &judged.pairs {
        if a >= n || b >= n {
            continue;
        }
        seen[a] = true;
        seen[b] = true;
        if j.state != State::Good {
            good[a] = false;
            good[b] = false;
        }
        if j.state == State::Bad {
            still_bad.push((a, b));
        }
    }
    for (g, s) in good.iter_mut().zip(seen) {
        *g &= s;
    }
    (still_bad, good)
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

/// A pair's standing after both passes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Good,
    /// Bad in the first pass, good on retest.
    Flaky,
    /// Bad in the first pass and on retest (or not retested).
    Bad,
}

/// Explains the bad pairs of a mesh. `first`: the first pass; `retest`: the re-run of the bad
/// ones (`to_retest`). A bad pair with no retest measure counts as bad twice. Order: nodes (by
/// endpoint), the cluster-wide suspect, links, flaky links.
pub fn analyse(endpoints: &[String], first: &[PairMeasure], retest: &[PairMeasure], c: &Criteria) -> Vec<Suspect> {
    analyse_with(endpoints, first, retest, &[], c, None)
}

/// Which leaf switch each endpoint is on, for switch and uplink suspects.
#[derive(Debug, Clone)]
pub struct Leaves {
    /// By endpoint index.
    pub of: Vec<Option<usize>>,
    /// By leaf: its name (`leaf3`).
    pub names: Vec<String>,
    /// By leaf: the switches its uplinks lead to (`spine1`...), when known.
    pub uplinks: Vec<Vec<String>>,
}

/// [`analyse`] for a pattern that measures some pairs only: `zoom` holds the zoom-in's pairs
/// (an endpoint of a still-bad pair against known-good partners, judged with the first pass's
/// medians and not retested), which count as evidence like any other pair. With `leaves`,
/// node suspects that make up most of a leaf (at least 2 and 2/3 of its endpoints) become one
/// `uplink` suspect (the leaf's pairs inside it are fine, or none was measured) or one
/// `switch` suspect (they are bad too).
pub fn analyse_with(
    endpoints: &[String],
    first: &[PairMeasure],
    retest: &[PairMeasure],
    zoom: &[PairMeasure],
    c: &Criteria,
    leaves: Option<&Leaves>,
) -> Vec<Suspect> {
    let (mb, ml) = medians(first);
    let evidence: Vec<PairMeasure>;
    let first = if zoom.is_empty() {
        first
    } else {
        evidence = first.iter().chain(zoom).cloned().collect();
        &evidence
    };
    let judged = classify(first, retest, c, mb, ml);
    let width = judged.pairs.keys().map(|&(_, b)| b + 1).max().unwrap_or(0).max(endpoints.len());
    let mut peeled = peel::Peeled::new(width, judged.pairs.iter().map(|(&k, j)| (k, j.state == State::Bad)));
    peeled.peel();

    let mut out = Vec::new();
    let cluster_wide = peeled.cluster_wide();
    if cluster_wide {
        out.push(cluster_suspect(&judged, peeled.total_bad(), c, mb, ml));
        peeled.forgive_all();
    }
    let mut by_leaf = Vec::new();
    if let (Some(leaves), false) = (leaves, cluster_wide) {
        by_leaf = leaf_groups(leaves, &peeled, &judged);
        for (l, members) in &by_leaf {
            let leaf = leaf_suspect(leaves, *l, members, &judged, &peeled, c, mb, ml);
            let uplink = leaf.kind == SuspectKind::Uplink;
            out.push(leaf);
            // A slow node inside a leaf whose uplinks are slow too (issue #57): bad with every
            // partner on its own leaf, where the leaf's other pairs are fine.
            if uplink {
                for e in slow_inside_leaf(leaves, *l, members, &judged, &peeled) {
                    out.push(node_suspect(endpoints, e, &judged, &peeled, c, mb, ml));
                }
            }
        }
    }
    for e in peeled.blamed_in_order() {
        if by_leaf.iter().any(|(_, members)| members.contains(&e)) {
            continue;
        }
        out.push(node_suspect(endpoints, e, &judged, &peeled, c, mb, ml));
    }
    let mut flaky = Vec::new();
    for (&k, j) in &judged.pairs {
        if cluster_wide || peeled.is_blamed(k.0) || peeled.is_blamed(k.1) {
            continue;
        }
        // A pair inside a leaf already named is that leaf's.
        if by_leaf.iter().any(|(_, members)| members.contains(&k.0) && members.contains(&k.1)) {
            continue;
        }
        match j.state {
            State::Good => {}
            State::Flaky => flaky.push(flaky_suspect(endpoints, k, j, c, mb, ml)),
            State::Bad => out.push(link_suspect(endpoints, k, j, &judged, &peeled, c, mb, ml)),
        }
    }
    out.extend(flaky);
    out
}

/// One pair after both passes: its standing, its first measure, its retest if any, and the
/// measure that stands for it (the retest when bad twice).
struct Judged<'m> {
    state: State,
    first: &'m PairMeasure,
    retest: Option<&'m PairMeasure>,
    standing: &'m PairMeasure,
}

struct Classified<'m> {
    pairs: BTreeMap<(usize, usize), Judged<'m>>,
}

/// Classification: every pair good, flaky or bad, from its first measure and its retest.
fn classify<'m>(first: &'m [PairMeasure], retest: &'m [PairMeasure], c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> Classified<'m> {
    let bad = |m: &PairMeasure| is_bad(m, c, mb, ml);
    let mut seen: BTreeMap<(usize, usize), (&PairMeasure, Option<&PairMeasure>)> = BTreeMap::new();
    for m in first.iter().filter(|m| m.a != m.b) {
        seen.entry(key(m.a, m.b)).or_insert((m, None));
    }
    for m in retest {
        if let Some(e) = seen.get_mut(&key(m.a, m.b)) {
            e.1.get_or_insert(m);
        }
    }
    let pairs = seen
        .into_iter()
        .map(|(k, (m1, m2))| {
            let (state, standing) = if !bad(m1) {
                (State::Good, m1)
            } else {
                match m2 {
                    Some(m2) if !bad(m2) => (State::Flaky, m1),
                    Some(m2) => (State::Bad, m2),
                    None => (State::Bad, m1),
                }
            };
            (k, Judged { state, first: m1, retest: m2, standing })
        })
        .collect();
    Classified { pairs }
}

impl Classified<'_> {
    fn is_bad(&self, k: (usize, usize)) -> bool {
        self.pairs.get(&k).is_some_and(|j| j.state == State::Bad)
    }
}

fn cluster_suspect(judged: &Classified<'_>, total_bad: usize, c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> Suspect {
    let sym = Symptoms::of(judged.pairs.values().filter(|j| j.state == State::Bad).map(|j| j.standing), c, mb, ml);
    let what = sym.figure(c, mb, ml);
    let cause = if sym.only_failed() {
        "a cluster-wide cause: agents unreachable, GIDs or routing (RoCE: IP, VLAN, firewall), or the ports not ACTIVE: run `fabcheck check` on each node"
    } else if c.typical_rate().is_some_and(|rate| mb.is_some_and(|m| m < c.bw_fraction * rate)) {
        "a cluster-wide cause: an expected rate that is wrong, links trained down (width, speed), MTU, PFC/ECN, or congestion from other jobs"
    } else {
        "a cluster-wide cause: MTU, PFC/ECN or congestion control, adaptive routing, or congestion from other jobs"
    };
    Suspect::new(SuspectKind::Config, CLUSTER, format!("{total_bad} of {} pairs {what}, no node or link stands out: {cause}", judged.pairs.len()))
}

#[allow(clippy::too_many_arguments)]
fn node_suspect(
    endpoints: &[String],
    e: usize,
    judged: &Classified<'_>,
    peeled: &peel::Peeled,
    c: &Criteria,
    mb: Option<f64>,
    ml: Option<f64>,
) -> Suspect {
    let mine = peeled.pairs_of(e);
    let bad: Vec<(usize, usize)> = mine.iter().copied().filter(|&k| judged.is_bad(k)).collect();
    let sym = Symptoms::of(bad.iter().map(|k| judged.pairs[k].standing), c, mb, ml);
    let cause = if sym.only_failed() {
        "agent unreachable, port down, or no usable GID: run `fabcheck check` on it"
    } else if sym.slow.is_empty() {
        "NUMA placement, CPU frequency or power saving, interrupt moderation, or firmware"
    } else {
        "NIC, PCIe slot (width/speed), NUMA placement or firmware"
    };
    Suspect::new(SuspectKind::Node, name(endpoints, e), format!("{} of {} pairs {}: {cause}", bad.len(), mine.len(), sym.figure(c, mb, ml)))
}

/// Leaves most of whose endpoints (at least 2, and 2/3) are blamed nodes, with those nodes.
/// In a leaf whose measured pairs inside it are mostly bad, the ends of the bad pairs peeling
/// left unblamed count too: peeling a leaf whose endpoints meet only each other (a rail's
/// leaf under `mesh --rails`, every pair bad) blames all but the last two and leaves their
/// pair as a link.
fn leaf_groups(leaves: &Leaves, peeled: &peel::Peeled, judged: &Classified<'_>) -> Vec<(usize, Vec<usize>)> {
    let count = leaves.names.len();
    let leaf = |e: usize| leaves.of.get(e).copied().flatten().filter(|&l| l < count);
    let mut members = vec![0usize; count];
    let mut blamed: Vec<Vec<usize>> = vec![Vec::new(); count];
    for e in 0..leaves.of.len() {
        let Some(l) = leaf(e) else { continue };
        members[l] += 1;
        if peeled.is_blamed(e) {
            blamed[l].push(e);
        }
    }
    let (mut inside, mut inside_bad) = (vec![0usize; count], vec![0usize; count]);
    for &k in judged.pairs.keys() {
        if let (Some(l), true) = (leaf(k.0), leaf(k.0) == leaf(k.1)) {
            inside[l] += 1;
            inside_bad[l] += usize::from(judged.is_bad(k));
        }
    }
    for &k in judged.pairs.keys() {
        let Some(l) = leaf(k.0).filter(|&l| leaf(k.1) == Some(l) && inside_bad[l] * 2 > inside[l]) else { continue };
        if judged.is_bad(k) && !peeled.is_blamed(k.0) && !peeled.is_blamed(k.1) {
            for e in [k.0, k.1] {
                if !blamed[l].contains(&e) {
                    blamed[l].push(e);
                }
            }
        }
    }
    for b in &mut blamed {
        b.sort_unstable();
    }
    blamed.into_iter().enumerate().filter(|(l, b)| b.len() >= 2 && b.len() * 3 >= members[*l] * 2).collect()
}

/// The members of an uplink leaf that are bad with every partner on their own leaf (at least
/// two measured), while a pair of the leaf without them is fine: slow nodes the leaf's slow
/// uplinks would otherwise hide.
fn slow_inside_leaf(leaves: &Leaves, l: usize, members: &[usize], judged: &Classified<'_>, peeled: &peel::Peeled) -> Vec<usize> {
    let on_leaf = |e: usize| leaves.of.get(e).copied().flatten() == Some(l);
    members
        .iter()
        .copied()
        .filter(|&e| {
            let inside: Vec<(usize, usize)> = peeled.pairs_of(e).into_iter().filter(|k| on_leaf(if k.0 == e { k.1 } else { k.0 })).collect();
            let fine_without = judged.pairs.keys().any(|&k| k.0 != e && k.1 != e && on_leaf(k.0) && on_leaf(k.1) && !judged.is_bad(k));
            inside.len() >= 2 && inside.iter().all(|&k| judged.is_bad(k)) && fine_without
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn leaf_suspect(
    leaves: &Leaves,
    l: usize,
    members: &[usize],
    judged: &Classified<'_>,
    peeled: &peel::Peeled,
    c: &Criteria,
    mb: Option<f64>,
    ml: Option<f64>,
) -> Suspect {
    let on_leaf = |e: usize| leaves.of.get(e).copied().flatten() == Some(l);
    let (mut inside, mut inside_bad, mut across, mut across_bad) = (0, 0, 0, 0);
    let mut bad_across = Vec::new();
    for &e in members {
        for k in peeled.pairs_of(e) {
            let other = if k.0 == e { k.1 } else { k.0 };
            let bad = judged.is_bad(k);
            if on_leaf(other) {
                // Counted from both ends when both are members.
                if other > e || !members.contains(&other) {
                    inside += 1;
                    inside_bad += usize::from(bad);
                }
            } else {
                across += 1;
                across_bad += usize::from(bad);
                if bad {
                    bad_across.push(judged.pairs[&k].standing);
                }
            }
        }
    }
    let name = leaves.names.get(l).cloned().unwrap_or_else(|| format!("leaf#{l}"));
    let figure = Symptoms::of(bad_across.into_iter(), c, mb, ml).figure(c, mb, ml);
    let lead = format!(
        "{} of {} endpoints on {name}: {across_bad} of {across} pairs to other leaves {figure}",
        members.len(),
        leaves.of.iter().filter(|x| **x == Some(l)).count()
    );
    if inside > 0 && inside_bad * 2 > inside {
        Suspect::new(
            SuspectKind::Switch,
            name,
            format!("{lead}, and {inside_bad} of {inside} pairs inside the leaf too: the leaf switch (firmware, port errors, power, cooling) or what every port of it shares"),
        )
    } else {
        let spines = leaves.uplinks.get(l).filter(|u| !u.is_empty()).map_or("spine".to_string(), |u| u.join(","));
        let inside = if inside > 0 {
            format!(", while {} of {inside} pairs inside the leaf are fine", inside - inside_bad)
        } else {
            ", no pair inside the leaf measured".to_string()
        };
        Suspect::new(
            SuspectKind::Uplink,
            format!("{name}<->{spines}"),
            format!(
                "{lead}{inside}: the leaf's uplinks (cables, ports at either end, their error counters and width/speed), or the routes across them"
            ),
        )
    }
}

fn flaky_suspect(endpoints: &[String], k: (usize, usize), j: &Judged<'_>, c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> Suspect {
    let before = Symptoms::of(std::iter::once(j.first), c, mb, ml).figure(c, mb, ml);
    let after = j.retest.and_then(|m| m.bw_gbps.map(|bw| format!("{} Gb/s", fmt(bw))).or(m.lat_us.map(|l| format!("{} us", fmt(l)))));
    // Bad once and good on retest: a warning (contract), not a drain, unless `--fail-on warning`.
    let mut s = Suspect::warning(
        SuspectKind::Link,
        link_name(endpoints, k),
        format!(
            "flaky: {before} in the first pass, good on retest{}: watch the port's error counters (symbol errors, link downed, retransmits) on both ends, or other traffic on the path; on a routed RoCE fabric one flow may have hashed onto a bad ECMP member, which `--paths 1` cannot see: `fabcheck pair A B --paths 8` names it by UDP source port",
            after.map(|a| format!(" ({a})")).unwrap_or_default()
        ),
    );
    s.flaky = true;
    s
}

/// Bad twice and not explained by a node (nor by the cluster). Are both ends fine with everyone
/// else? Pairs with a blamed node are the node's, not held against this link's ends.
#[allow(clippy::too_many_arguments)]
fn link_suspect(
    endpoints: &[String],
    k: (usize, usize),
    j: &Judged<'_>,
    judged: &Classified<'_>,
    peeled: &peel::Peeled,
    c: &Criteria,
    mb: Option<f64>,
    ml: Option<f64>,
) -> Suspect {
    // This pair is bad and counted at both ends: the others are the rest.
    let (oa, ob) = (peeled.bad_unblamed(k.0) - 1, peeled.bad_unblamed(k.1) - 1);
    let sym = Symptoms::of(std::iter::once(j.standing), c, mb, ml);
    let figure = sym.figure(c, mb, ml);
    let verb = if sym.only_failed() { "failed" } else { "is slow" };
    let passes = if j.retest.is_some() { " in both passes" } else { "" };
    let fig = if sym.only_failed() { String::new() } else { format!(" ({figure})") };
    let lead = if judged.pairs.len() == 1 {
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
    Suspect::new(SuspectKind::Link, link_name(endpoints, k), format!("{lead}: {cause}"))
}

#[cfg(test)]
mod tests;
