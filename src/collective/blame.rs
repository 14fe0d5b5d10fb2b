//! Blame (pure): the slow hops and rings a judgment found, put into `mesh`'s suspect kinds.
//!
//! - `node`: a host whose every hop out (two or more), or every hop in (two or more, from two
//!   hosts or more), or every hop in and out is slow;
//! - `rail`: one NIC of a host (`HOST/DEV`) whose every hop is slow while the host's others are
//!   not, or one rail's ring (`rail K`) below its bar or slower than the other rings;
//! - `switch` / `uplink` (with `--topology`): every hop that crosses a leaf's uplinks slow (two
//!   or more), and the hops inside the leaf slow too (`switch`) or not (`uplink`);
//! - `link`: a slow hop no wider suspect explains (`A/DEV -> B/DEV`).

use super::figures::Figures;
use super::judge::{Criteria, RingJudgment};
use super::member::Member;
use crate::mesh::analysis::{Suspect, SuspectKind};
use crate::mesh::topology::{LeafId, Topology};
use crate::model::collective::MemberId;
use crate::sanitise::one_line;
use std::collections::{BTreeMap, BTreeSet};

/// One data hop, as blame sees it.
#[derive(Debug, Clone, Copy)]
struct Hop {
    from: MemberId,
    to: MemberId,
    slow: bool,
    ratio: f64,
    ring: usize,
}

/// Host `h` as a `node` suspect: with `both_ways`, when its every hop in and every hop out is
/// slow (whatever another node explains already: two slow nodes side by side share a hop);
/// otherwise when its every hop out (two or more) or every hop in (two or more, from two
/// hosts or more) is slow and none of them is explained already. Marks its hops explained.
/// `out` and `inn` are the indexes of its hops out and in.
fn node_suspect<'m>(
    h: &str,
    (out, inn): (&[usize], &[usize]),
    hops: &[Hop],
    explained: &mut [bool],
    both_ways: bool,
    host: &impl Fn(MemberId) -> &'m str,
) -> Option<Suspect> {
    let all_slow = |v: &[usize]| !v.is_empty() && v.iter().all(|i| hops[*i].slow);
    let fresh = |v: &[usize]| v.iter().all(|i| !explained[*i]);
    let senders: BTreeSet<&str> = inn.iter().map(|i| host(hops[*i].from)).collect();
    let node = if both_ways {
        all_slow(out) && all_slow(inn)
    } else {
        (out.len() >= 2 && all_slow(out) && fresh(out)) || (inn.len() >= 2 && senders.len() >= 2 && all_slow(inn) && fresh(inn))
    };
    if !node {
        return None;
    }
    let worst = out.iter().chain(inn).map(|i| hops[*i].ratio).fold(0.0, f64::max);
    let which = match (all_slow(out), all_slow(inn)) {
        (true, true) => "into and out of it",
        (true, false) => "out of it",
        _ => "into it",
    };
    for i in out.iter().chain(inn) {
        explained[*i] = true;
    }
    Some(Suspect::new(
        SuspectKind::Node,
        one_line(h),
        format!("every hop {which} is slow ({} hops, up to {worst:.1}x its ring's median hop)", out.len() + inn.len()),
    ))
}

/// A member as the documents name it: `host/device`.
pub fn label(m: &Member) -> String {
    format!("{}/{}", one_line(&m.host), one_line(&m.device))
}

/// A hop as the documents name it: `a/dev -> b/dev`.
pub fn hop_label(members: &[Member], from: MemberId, to: MemberId) -> String {
    let name = |m: MemberId| members.get(m.0 as usize).map_or_else(|| format!("member {}", m.0), label);
    format!("{} -> {}", name(from), name(to))
}

/// The rail a ring is, as named: `rail K`, or `ring` for a run without rails.
pub fn ring_label(rail: Option<u16>) -> String {
    rail.map_or_else(|| "ring".to_string(), |r| format!("rail {r}"))
}

pub fn blame(members: &[Member], figures: &Figures, judged: &[RingJudgment], criteria: &Criteria, topology: Option<&Topology>) -> Vec<Suspect> {
    let mut hops = Vec::new();
    for (ring, (f, j)) in figures.rings.iter().zip(judged).enumerate() {
        for (h, ratio) in f.hops.iter().zip(&j.hop_ratio) {
            hops.push(Hop { from: h.from, to: h.to, slow: *ratio > criteria.hop_threshold, ratio: *ratio, ring });
        }
    }
    let host = |m: MemberId| members.get(m.0 as usize).map_or("", |x| x.host.as_str());
    let mut explained = vec![false; hops.len()];
    let mut suspects = Vec::new();

    // Nodes: first the hosts whose every hop in and out is slow, then, among the hops those do
    // not explain, a host whose every hop out (or in) is. With rails every host sends to one
    // successor per ring: the host before a slow node has every hop out slow (into the node)
    // through no fault of its own, and is not named.
    // Each host's hops out and in, found once (hosts without a hop have none).
    let mut by_host: BTreeMap<&str, (Vec<usize>, Vec<usize>)> = members.iter().map(|m| (m.host.as_str(), Default::default())).collect();
    for (i, h) in hops.iter().enumerate() {
        if let Some((out, _)) = by_host.get_mut(host(h.from)) {
            out.push(i);
        }
        if let Some((_, inn)) = by_host.get_mut(host(h.to)) {
            inn.push(i);
        }
    }
    for both_ways in [true, false] {
        for (h, (out, inn)) in &by_host {
            if let Some(suspect) = node_suspect(h, (out, inn), &hops, &mut explained, both_ways, &host) {
                suspects.push(suspect);
            }
        }
    }

    // NICs: one member's every hop slow, its host not a node.
    for (index, m) in members.iter().enumerate() {
        let me = MemberId(index as u32);
        let mine: Vec<usize> = (0..hops.len()).filter(|i| hops[*i].from == me || hops[*i].to == me).collect();
        if m.rail.is_some() && mine.len() >= 2 && mine.iter().all(|i| hops[*i].slow && !explained[*i]) {
            suspects.push(Suspect::new(
                SuspectKind::Rail,
                label(m),
                format!("every hop into and out of this NIC is slow ({} hops); the host's other rails are not", mine.len()),
            ));
            for i in mine {
                explained[i] = true;
            }
        }
    }

    // Leaves: switch and uplink.
    if let Some(topo) = topology {
        let leaf: Vec<Option<LeafId>> = members.iter().map(|m| super::order::leaf_of(topo, m)).collect();
        let leaf_of = |m: MemberId| leaf.get(m.0 as usize).copied().flatten();
        let mut by_leaf: BTreeMap<LeafId, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
        for (i, h) in hops.iter().enumerate() {
            let (a, b) = (leaf_of(h.from), leaf_of(h.to));
            if a == b {
                if let Some(l) = a {
                    by_leaf.entry(l).or_default().1.push(i);
                }
            } else {
                for l in [a, b].into_iter().flatten() {
                    by_leaf.entry(l).or_default().0.push(i);
                }
            }
        }
        for (l, (cross, within)) in by_leaf {
            if cross.len() < 2 || !cross.iter().all(|i| hops[*i].slow && !explained[*i]) {
                continue;
            }
            let name = one_line(topo.leaf_name(l)).into_owned();
            let inside_slow = !within.is_empty() && within.iter().all(|i| hops[*i].slow);
            let (kind, reason) = if inside_slow {
                (SuspectKind::Switch, format!("every hop through this leaf is slow, inside it too ({} hops)", cross.len() + within.len()))
            } else if within.iter().any(|i| hops[*i].slow) {
                continue;
            } else {
                let ups = topo.uplinks(l).iter().map(|u| one_line(u).into_owned()).collect::<Vec<_>>().join(", ");
                (
                    SuspectKind::Uplink,
                    format!("every hop crossing this leaf's uplinks ({ups}) is slow ({} hops); hops inside the leaf are not", cross.len()),
                )
            };
            suspects.push(Suspect::new(kind, name, reason));
            for i in cross.iter().chain(if inside_slow { &within[..] } else { &[] }) {
                explained[*i] = true;
            }
        }
    }

    // Rails' rings: one ring slow while the others are not.
    let flagged: Vec<bool> = judged.iter().map(|j| j.below || j.slow_against_rings).collect();
    if figures.rings.len() >= 2 && flagged.iter().any(|f| !f) {
        for (ring, f) in figures.rings.iter().enumerate() {
            let nic_in_ring = suspects
                .iter()
                .any(|s| s.kind == SuspectKind::Rail && f.order.iter().any(|m| members.get(m.0 as usize).is_some_and(|x| label(x) == s.subject)));
            if flagged[ring] && !nic_in_ring {
                let why = if judged[ring].below {
                    format!("its busbw {:.1} Gb/s is below its bar ({})", f.busbw_gbps, judged[ring].bar)
                } else {
                    "its hops are slower than the other rails' by more than the hop threshold".into()
                };
                suspects.push(Suspect::new(SuspectKind::Rail, ring_label(f.rail), format!("{why}; the other rails' rings are not")));
            }
        }
    }

    // Links: what nothing wider explains.
    for (i, h) in hops.iter().enumerate() {
        if h.slow && !explained[i] {
            let rail = figures.rings[h.ring].rail.map(|r| format!(" on rail {r}")).unwrap_or_default();
            suspects.push(Suspect::new(
                SuspectKind::Link,
                hop_label(members, h.from, h.to),
                format!("its steps are {:.1}x its ring's median hop's{rail} (threshold {}x)", h.ratio, criteria.hop_threshold),
            ));
        }
    }
    suspects
}
