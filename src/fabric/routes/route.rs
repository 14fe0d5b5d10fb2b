//! `fabric.route`: the SM's linear forwarding tables walked hop by hop between host ports, as
//! a packet would go (ibdiagnet `-r`'s questions). Pure: a `Fabric` and the tables in, typed
//! outcomes out; `routes::judge` turns them into findings and figures.
//!
//! Every LID of a destination's LMC range is walked (ibdiagnet `-r` does the same): with LMC
//! the SM routes each LID of a port apart, and a hole on one of those paths is invisible from
//! the base LID.
//!
//! A walk starts at the switch a host port is cabled to and follows each switch's entry for
//! the destination LID until it reaches a CA port. It ends early at a hole (no entry, or an
//! entry pointing at a port that is not ACTIVE), at a CA that does not own the LID, at a
//! switch it already passed (a loop), or at a switch whose table was not read.

use crate::fabric::discovery::model::{Fabric, Lft, Node, Tables};

use crate::mad::attributes::{is_aggregation_node, Guid, NodeType};
use crate::port::PortState;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Every ordered pair of host ports is walked up to this many pairs; above it, a sample.
pub const MAX_PAIRS: usize = 10_000;

/// A host (CA) port routes are walked from and to: ACTIVE, with a LID, cabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    pub node: Guid,
    pub port: u8,
    pub lid: u16,
    /// Its LMC: it owns `lid .. lid + 2^lmc - 1`, each LID one path the SM may route apart.
    pub lmc: u8,
    /// The node and port at the other end of its cable (where its packets enter the fabric).
    pub peer: (Guid, u8),
}

impl Host {
    /// Every LID of its LMC range, base LID first (what `fabric.route` walks to).
    pub fn lids(&self) -> impl Iterator<Item = u16> {
        let count = 1u32 << self.lmc.min(7);
        (u32::from(self.lid)..u32::from(self.lid) + count).filter_map(|l| u16::try_from(l).ok())
    }
}

/// Where one walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Reached the port owning the LID, through these switches (in order).
    Delivered { switches: Vec<Guid> },
    /// The switch has no entry for the LID (0xFF, or past its table's top).
    NoEntry { at: Guid },
    /// The entry points at a port that is not ACTIVE (down, not cabled, or no such port).
    DeadPort { at: Guid, port: u8 },
    /// The LID was delivered to a port that does not own it (or to the switch itself).
    Misdelivered { at: Guid, to: (Guid, u8) },
    /// The walk came back to a switch it had passed: these switches, in order.
    Loop { cycle: Vec<Guid> },
    /// A switch on the way whose table was not read.
    Unread { at: Guid },
}

/// The fabric indexed for walking.
pub struct Walker<'a> {
    nodes: HashMap<Guid, &'a Node>,
    lfts: &'a std::collections::BTreeMap<Guid, Lft>,
    /// LID -> the port owning it (CA ports: base LID .. base + 2^LMC - 1; switches: port 0).
    owners: HashMap<u16, (Guid, u8)>,
}

impl<'a> Walker<'a> {
    pub fn new(fabric: &'a Fabric, tables: &'a Tables) -> Self {
        let nodes: HashMap<Guid, &Node> = fabric.nodes.iter().map(|n| (n.guid, n)).collect();
        let mut owners = HashMap::new();
        for node in &fabric.nodes {
            for p in node.ports.iter().filter(|p| (node.node_type == NodeType::Switch) == (p.number == 0)) {
                if p.info.lid == 0 && p.lid == 0 {
                    continue;
                }
                let base = if node.node_type == NodeType::Switch { p.lid } else { p.info.lid };
                let count = 1u32 << p.info.lmc.min(7);
                for lid in (u32::from(base)..u32::from(base) + count).filter_map(|l| u16::try_from(l).ok()) {
                    owners.entry(lid).or_insert((node.guid, p.number));
                }
            }
        }
        Walker { nodes, lfts: &tables.lfts, owners }
    }

    pub fn node(&self, guid: Guid) -> Option<&'a Node> {
        self.nodes.get(&guid).copied()
    }

    /// Follows the forwarding tables from `from`'s switch to `lid`.
    pub fn walk(&self, from: &Host, lid: u16) -> Outcome {
        let owner = self.owners.get(&lid).copied();
        let (mut at, _) = from.peer;
        if self.node(at).is_some_and(|n| n.node_type != NodeType::Switch) {
            // Back to back, no switch between.
            return if owner == Some(from.peer) {
                Outcome::Delivered { switches: vec![] }
            } else {
                Outcome::Misdelivered { at: from.node, to: from.peer }
            };
        }
        let mut passed: Vec<Guid> = Vec::new();
        loop {
            if let Some(i) = passed.iter().position(|g| *g == at) {
                return Outcome::Loop { cycle: passed[i..].to_vec() };
            }
            passed.push(at);
            let Some(lft) = self.lfts.get(&at) else { return Outcome::Unread { at } };
            let Some(switch) = self.node(at) else { return Outcome::Unread { at } };
            let out = lft.port_for(lid);
            if out == Lft::NONE {
                return Outcome::NoEntry { at };
            }
            if out == 0 {
                return if owner == Some((at, 0)) { Outcome::Delivered { switches: passed } } else { Outcome::Misdelivered { at, to: (at, 0) } };
            }
            let next = switch.port(out).filter(|p| p.info.state == PortState::Active).and_then(|p| p.remote);
            let Some((guid, number)) = next else { return Outcome::DeadPort { at, port: out } };
            match self.node(guid) {
                Some(n) if n.node_type == NodeType::Switch => at = guid,
                _ if owner == Some((guid, number)) => return Outcome::Delivered { switches: passed },
                _ => return Outcome::Misdelivered { at, to: (guid, number) },
            }
        }
    }
}

/// The host ports of the fabric, in GUID and port order. A port whose LID another port also
/// holds is left out: where its packets go is ambiguous, and `fabric.lid` names it.
pub fn hosts(fabric: &Fabric) -> Vec<Host> {
    let mut holders: HashMap<u16, usize> = HashMap::new();
    for node in &fabric.nodes {
        for p in node.ports.iter().filter(|p| (node.node_type == NodeType::Switch) == (p.number == 0)) {
            let lid = if node.node_type == NodeType::Switch { p.lid } else { p.info.lid };
            if lid != 0 {
                *holders.entry(lid).or_default() += 1;
            }
        }
    }
    let mut hosts: Vec<Host> = fabric
        .nodes
        .iter()
        .filter(|n| n.node_type == NodeType::Ca)
        .flat_map(|n| n.ports.iter().map(move |p| (n, p)))
        .filter(|(_, p)| p.number != 0 && p.info.state == PortState::Active && p.info.lid != 0 && holders.get(&p.info.lid) == Some(&1))
        .filter_map(|(n, p)| Some(Host { node: n.guid, port: p.number, lid: p.info.lid, lmc: p.info.lmc, peer: p.remote? }))
        .collect();
    hosts.sort_by_key(|h| (h.node, h.port));
    hosts
}

/// Which ordered pairs (source index, destination index) of `n` hosts to walk: all of them up
/// to [`MAX_PAIRS`], else `MAX_PAIRS` distinct pairs drawn from `seed` (the same seed, the
/// same pairs). Returns the pairs and whether they are a sample.
pub fn pairs(n: usize, seed: u64) -> (Vec<(usize, usize)>, bool) {
    let total = n.saturating_mul(n.saturating_sub(1));
    if total <= MAX_PAIRS {
        let all = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).collect();
        return (all, false);
    }
    let mut rng = SplitMix(seed);
    let mut chosen = BTreeSet::new();
    while chosen.len() < MAX_PAIRS {
        let k = (rng.next() % total as u64) as usize;
        let (i, j) = (k / (n - 1), k % (n - 1));
        chosen.insert((i, if j >= i { j + 1 } else { j }));
    }
    (chosen.into_iter().collect(), true)
}

/// SplitMix64: small, and the same everywhere, so a seed repeats a sample.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A seed when none is given: from the clock (printed, so `--seed` repeats the sample).
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    SplitMix(nanos ^ u64::from(std::process::id())).next() >> 11
}

/// The switch graph: ACTIVE switch-to-switch cables, and the leaves (switches with an ACTIVE
/// host port cabled to them; a SHARP Aggregation Node is no host).
pub struct Tiers {
    links: HashMap<Guid, Vec<Guid>>,
    pub leaves: BTreeSet<Guid>,
    /// Switch tiers of the tree (1: a single switch layer; 2: leaves and spines; ...): half
    /// the most hops between two leaves, plus one.
    pub depth: usize,
}

impl Tiers {
    pub fn new(fabric: &Fabric) -> Self {
        let switch = |g: Guid| fabric.node(g).is_some_and(|n| n.node_type == NodeType::Switch);
        // A SHARP Aggregation Node is a CA on the switch itself (every switch of a SHARP
        // fabric has one): it makes no switch a leaf.
        let host = |g: Guid| fabric.node(g).is_some_and(|n| n.node_type != NodeType::Switch && !is_aggregation_node(&n.description));
        let mut links: HashMap<Guid, Vec<Guid>> = HashMap::new();
        let mut leaves = BTreeSet::new();
        for node in fabric.nodes.iter().filter(|n| n.node_type == NodeType::Switch) {
            for (guid, _) in node.ports.iter().filter(|p| p.number != 0 && p.info.state == PortState::Active).filter_map(|p| p.remote) {
                if switch(guid) {
                    links.entry(node.guid).or_default().push(guid);
                } else if host(guid) {
                    leaves.insert(node.guid);
                }
            }
        }
        let mut tiers = Tiers { links, leaves, depth: 0 };
        tiers.depth = tiers.leaf_span().map_or(0, |span| 1 + span / 2);
        tiers
    }

    /// The most hops between two leaves (found by two sweeps: from a leaf to the leaf farthest
    /// from it, then from there): 2 in a two-tier tree, 4 in a three-tier one, 3 between a
    /// Dragonfly+'s groups. The tree's depth is read from it rather than from how far any switch
    /// is from a leaf: a switch without hosts hanging off the top (a management spine and leaf
    /// whose nodes are not cabled yet, as NVIDIA Selene's compute fabric has) made a three-tier
    /// tree read as five. None without leaves.
    fn leaf_span(&self) -> Option<usize> {
        let farthest = |from: Guid| -> (Guid, usize) {
            let seen = self.distances(std::iter::once(from));
            self.leaves.iter().filter_map(|l| seen.get(l).map(|d| (*l, *d))).max_by_key(|(l, d)| (*d, std::cmp::Reverse(*l))).unwrap_or((from, 0))
        };
        let first = *self.leaves.first()?;
        let (other_end, _) = farthest(first);
        Some(farthest(other_end).1)
    }

    /// Hops over switch-to-switch cables from the nearest of `from` to every switch reached.
    pub fn distances(&self, from: impl Iterator<Item = Guid>) -> HashMap<Guid, usize> {
        let mut seen: HashMap<Guid, usize> = from.map(|g| (g, 0)).collect();
        let mut queue: VecDeque<Guid> = seen.keys().copied().collect();
        while let Some(g) = queue.pop_front() {
            let d = seen[&g];
            for next in self.links.get(&g).into_iter().flatten() {
                if !seen.contains_key(next) {
                    seen.insert(*next, d + 1);
                    queue.push_back(*next);
                }
            }
        }
        seen
    }

    /// The most switches an up-then-down route crosses in a tree this deep (leaf, up to the
    /// top tier, down to a leaf): 2 * depth - 1.
    pub fn longest_expected(&self) -> usize {
        (2 * self.depth).saturating_sub(1)
    }
}

#[cfg(test)]
#[path = "route/tests.rs"]
mod tests;
