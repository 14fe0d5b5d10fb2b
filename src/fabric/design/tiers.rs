//! `fabric.design`: which tier each switch is in, and a fat tree's rules.
//!
//! Tiers are read from the cabling alone (no names, no port counts): a switch with hosts is a
//! leaf, a switch one hop above the leaves a spine, two hops a core. A fat tree then wants
//! every leaf to reach every spine of its tree with the same number of cables (and every spine
//! every core of its plane): a leaf missing a spine loses that spine's share of the bisection
//! and its routes through it, uneven uplinks concentrate traffic on fewer cables.
//!
//! "Its tree" matters: in a three-tier fabric a pod's leaves reach only the pod's spines, and
//! in a rail-optimized fabric with one spine group per rail the rails never meet below the
//! core. So the rules compare within each connected group of the bipartite graph of the two
//! tiers, never across groups. Links within one tier (a Dragonfly+'s global links) are judged
//! by their count alone.

use crate::fabric::design::dragonfly::group_pair_rules;
use crate::fabric::design::groups::{groups, most_common, Group};
use crate::fabric::design::planned::{say, Planned};
use crate::fabric::design::topology::Topology;
use crate::fabric::discovery::links::{node_name, Index};
use crate::fabric::discovery::model::Fabric;
use crate::fabric::expect::FabricExpect;
use crate::fabric::judgement::{Cabling, Noted};
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::FindingId;
use crate::outcome::Severity;
use crate::units::rate as gbps;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The tier a switch was judged to be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Leaf,
    Spine,
    Core,
    Unknown,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Leaf => "leaf",
            Tier::Spine => "spine",
            Tier::Core => "core",
            Tier::Unknown => "unknown",
        }
    }
}

/// A switch's tier and the cabling that decided it, in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub tier: Tier,
    pub reason: String,
}

/// One switch's neighbours: links to hosts (CAs, routers; a SHARP Aggregation Node is none)
/// and to each other switch.
#[derive(Debug, Default)]
struct Adjacent {
    hosts: usize,
    host_gbps: f64,
    switches: BTreeMap<Guid, (usize, f64)>,
}

fn adjacency(index: &Index) -> BTreeMap<Guid, Adjacent> {
    let mut adj: BTreeMap<Guid, Adjacent> = BTreeMap::new();
    for n in index.by_guid.values().filter(|n| n.node_type == NodeType::Switch) {
        adj.entry(n.guid).or_default();
    }
    for link in &index.links {
        let rate = link.a.port.info.rate_gbps().unwrap_or(0.0);
        let (a, b) = (link.a.node, link.b.node);
        match (a.node_type == NodeType::Switch, b.node_type == NodeType::Switch) {
            (true, true) if a.guid != b.guid => {
                for (x, y) in [(a.guid, b.guid), (b.guid, a.guid)] {
                    let e = adj.entry(x).or_default().switches.entry(y).or_default();
                    e.0 += 1;
                    e.1 += rate;
                }
            }
            (true, false) | (false, true) => {
                let (sw, other) = if a.node_type == NodeType::Switch { (a.guid, b) } else { (b.guid, a) };
                if crate::mad::attributes::is_aggregation_node(&other.description) {
                    continue;
                }
                let e = adj.entry(sw).or_default();
                e.hosts += 1;
                e.host_gbps += rate;
            }
            _ => {}
        }
    }
    adj
}

/// Every switch's tier. A switch with host links is a leaf, unless it is cabled to two or more
/// leaves by more links than it has hosts (a spine with a management node plugged in);
/// switches one hop from a leaf are spines, two hops cores (unless cabled only to spines one
/// leaf reaches: a leaf without hosts yet); the rest `unknown`.
pub fn tiers(index: &Index) -> BTreeMap<Guid, Placed> {
    let adj = adjacency(index);
    let has_hosts: BTreeSet<Guid> = adj.iter().filter(|(_, a)| a.hosts > 0).map(|(g, _)| *g).collect();
    let mut placed = BTreeMap::new();
    // Spine-like: cabled to two or more host switches by more links than it has hosts.
    let spine_like = |g: &Guid, leaves: &BTreeSet<Guid>| {
        let a = &adj[g];
        let to_leaves: Vec<usize> = a.switches.iter().filter(|(s, _)| leaves.contains(*s)).map(|(_, (n, _))| *n).collect();
        to_leaves.len() >= 2 && to_leaves.iter().sum::<usize>() > a.hosts
    };
    let plain: BTreeSet<Guid> = has_hosts.iter().filter(|g| !spine_like(g, &has_hosts)).copied().collect();
    // A spine-like switch stays a leaf unless two or more plain leaves are below it (switches
    // with hosts cabled in a ring or a mesh are all leaves).
    let mut leaves = BTreeSet::new();
    for g in &has_hosts {
        if !plain.contains(g) && spine_like(g, &plain) {
            continue; // judged a spine below, with its hosts said
        }
        leaves.insert(*g);
        placed.insert(*g, Placed { tier: Tier::Leaf, reason: format!("{} host link(s)", adj[g].hosts) });
    }
    let mut spines = BTreeSet::new();
    for (g, a) in adj.iter().filter(|(g, _)| !leaves.contains(*g)) {
        let below: Vec<&Guid> = a.switches.keys().filter(|s| leaves.contains(*s)).collect();
        if below.is_empty() {
            continue;
        }
        let links: usize = a.switches.iter().filter(|(s, _)| leaves.contains(*s)).map(|(_, (n, _))| n).sum();
        let hosts = if a.hosts > 0 { format!(" (and {} host link(s): a management node?)", a.hosts) } else { " and no hosts".into() };
        spines.insert(*g);
        placed.insert(*g, Placed { tier: Tier::Spine, reason: format!("{links} link(s) to {} leaf switch(es){hosts}", below.len()) });
    }
    // The spines each leaf reaches: a switch without hosts cabled only to spines that one leaf
    // reaches is a leaf whose hosts are not plugged in yet (a core reaches the spines of many
    // pods, a leaf those of its own). Taken for a core, it joined the cores' groups into one,
    // and every core was blamed for the spines of the others' (NVIDIA Selene's storage fabric,
    // tests/fixtures/wild-fabrics: four empty leaves, 36 false errors).
    let reach: Vec<(Guid, BTreeSet<Guid>)> =
        leaves.iter().map(|l| (*l, adj[l].switches.keys().filter(|s| spines.contains(*s)).copied().collect())).collect();
    for (g, a) in adj.iter().filter(|(g, _)| !leaves.contains(*g) && !spines.contains(*g)) {
        let below: Vec<&Guid> = a.switches.keys().filter(|s| spines.contains(*s)).collect();
        let only_spines = below.len() == a.switches.len();
        let like = reach.iter().find(|(_, up)| below.len() >= 2 && only_spines && below.iter().all(|s| up.contains(*s)));
        let placed_as = if below.is_empty() {
            Placed { tier: Tier::Unknown, reason: "no hosts, and no link to a leaf or a spine".into() }
        } else if let Some((leaf, _)) = like {
            let name = index.by_guid.get(leaf).map_or_else(|| leaf.to_string(), |n| node_name(n));
            Placed { tier: Tier::Leaf, reason: format!("no hosts yet; its {} spine link(s) reach spines leaf {name} reaches", below.len()) }
        } else {
            let links: usize = a.switches.iter().filter(|(s, _)| spines.contains(*s)).map(|(_, (n, _))| n).sum();
            Placed { tier: Tier::Core, reason: format!("{links} link(s) to {} spine(s), none to a leaf or host", below.len()) }
        };
        placed.insert(*g, placed_as);
    }
    placed
}

/// A leaf's bandwidth toward its hosts and toward the spines, and their ratio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Oversubscription {
    pub host_links: usize,
    pub host_gbps: f64,
    pub up_links: usize,
    pub up_gbps: f64,
}

impl Oversubscription {
    /// Host-facing over spine-facing bandwidth (2.0: twice as much can enter as can leave).
    pub fn ratio(&self) -> f64 {
        self.host_gbps / self.up_gbps
    }
}

/// Each leaf with both hosts and uplinks (to switches of a higher tier), by GUID.
pub fn oversubscription(index: &Index, tiers: &BTreeMap<Guid, Placed>) -> BTreeMap<Guid, Oversubscription> {
    let adj = adjacency(index);
    let mut out = BTreeMap::new();
    for (g, p) in tiers.iter().filter(|(_, p)| p.tier == Tier::Leaf) {
        let a = &adj[g];
        let up: Vec<(usize, f64)> = a.switches.iter().filter(|(s, _)| tiers.get(*s).is_some_and(|t| t.tier > p.tier)).map(|(_, v)| *v).collect();
        let o = Oversubscription {
            host_links: a.hosts,
            host_gbps: a.host_gbps,
            up_links: up.iter().map(|u| u.0).sum(),
            up_gbps: up.iter().map(|u| u.1).sum(),
        };
        if o.host_gbps > 0.0 && o.up_gbps > 0.0 {
            out.insert(*g, o);
        }
    }
    out
}

/// The fat-tree rules over the discovered fabric, and how they found it cabled. With a plan
/// (`--topology`, `--plan`), a switch pair cabled as the plan cables it is said as `info`: the
/// plan is the design.
pub fn rules(fabric: &Fabric, expect: &FabricExpect, plan: Option<&Topology>) -> (Vec<Noted>, Cabling) {
    let index = Index::new(fabric);
    let planned = plan.map(|p| Planned::new(fabric, &index, p));
    let tiers = tiers(&index);
    let adj = adjacency(&index);
    let mut out = Vec::new();
    let name = |g: &Guid| index.by_guid.get(g).map_or_else(|| g.to_string(), |n| node_name(n));
    let count = |l: &Guid, u: &Guid| adj[l].switches.get(u).map_or(0, |v| v.0);
    let as_planned = |l: &Guid, u: &Guid| planned.as_ref().is_some_and(|p| p.as_planned(l, u, count(l, u)));
    for (lower, upper) in [(Tier::Leaf, Tier::Spine), (Tier::Spine, Tier::Core)] {
        let lows: Vec<Guid> = tiers.iter().filter(|(_, p)| p.tier == lower).map(|(g, _)| *g).collect();
        let ups: BTreeSet<Guid> = tiers.iter().filter(|(_, p)| p.tier == upper).map(|(g, _)| *g).collect();
        if ups.is_empty() {
            continue;
        }
        // A lower switch with no uplink at all, while the tier above exists.
        for l in lows.iter().filter(|l| ups.iter().all(|u| count(l, u) == 0)) {
            let words = |_: &[String]| {
                format!(
                    "{} {} has no link to any {}: its hosts reach the rest of the fabric only through other {}, or not at all",
                    lower.name(),
                    name(l),
                    upper.name(),
                    plural(lower)
                )
            };
            let remedy = "cable its uplinks as the other switches of its tier are (a --topology or --plan run names the ports), or check the uplinks' port state";
            say(&mut out, Severity::Error, &name(l), &[(String::new(), ups.iter().all(|u| as_planned(l, u)))], words, remedy);
        }
        for group in groups(&lows, &ups, &count) {
            out.extend(group_rules(&group, lower, upper, &count, &as_planned, &name));
        }
    }
    out.extend(same_tier_rules(&tiers, &adj, &count, &as_planned, &name));
    let cabling = if out.is_empty() {
        Cabling::Even
    } else if out.iter().all(|n| n.finding.severity == Severity::Info) {
        Cabling::UnevenAsPlanned
    } else {
        Cabling::Uneven
    };
    // Oversubscription, judged only against an expectation (the ratio is always in the JSON).
    if let Some(limit) = expect.oversubscription {
        for (g, o) in oversubscription(&index, &tiers) {
            let text = format!(
                "{:.2}:1 (host-facing {} Gb/s over {} link(s), spine-facing {} Gb/s over {} link(s))",
                o.ratio(),
                gbps(o.host_gbps),
                o.host_links,
                gbps(o.up_gbps),
                o.up_links
            );
            if o.ratio() > limit + 1e-9 {
                out.push(Noted::new(
                    FindingId::FabricDesign,
                    Severity::Warning,
                    name(&g),
                    format!("leaf {} is oversubscribed {text}, above the expected {limit}:1", name(&g)),
                    "add uplinks to the spines (or move hosts to a leaf with spare uplinks); a slower uplink than the host links also raises the ratio",
                    &[],
                ));
            } else {
                out.push(Noted::new(
                    FindingId::FabricDesign,
                    Severity::Info,
                    name(&g),
                    format!("leaf {} oversubscription {text}", name(&g)),
                    "none needed",
                    &[],
                ));
            }
        }
    }
    (out, cabling)
}

/// Links within one tier: a Dragonfly+'s global links between its groups' spines, a ring of
/// leaves. Where most switches of a tier have such links, each should have as many as the most
/// common count (the larger on a tie); one with fewer lost one, and is said by name (both ends
/// of a missing link are short: each names the other when they have no link between them).
/// More than the usual count is not judged.
fn same_tier_rules(
    tiers: &BTreeMap<Guid, Placed>,
    adj: &BTreeMap<Guid, Adjacent>,
    count: &impl Fn(&Guid, &Guid) -> usize,
    as_planned: &impl Fn(&Guid, &Guid) -> bool,
    name: &impl Fn(&Guid) -> String,
) -> Vec<Noted> {
    let mut out = Vec::new();
    for tier in [Tier::Leaf, Tier::Spine, Tier::Core] {
        let members: BTreeSet<Guid> = tiers.iter().filter(|(_, p)| p.tier == tier).map(|(g, _)| *g).collect();
        let within = |g: &Guid| -> usize { adj[g].switches.iter().filter(|(u, _)| members.contains(u)).map(|(_, v)| v.0).sum() };
        let counts: BTreeMap<Guid, usize> = members.iter().map(|g| (*g, within(g))).collect();
        let linked = counts.values().filter(|c| **c > 0).count();
        if linked * 2 <= members.len() {
            continue;
        }
        let Some(usual) = most_common(counts.values().copied()) else { continue };
        let short: Vec<Guid> = counts.iter().filter(|(_, c)| **c < usual).map(|(g, _)| *g).collect();
        for g in &short {
            let apart: Vec<String> = short.iter().filter(|o| *o != g && !adj[g].switches.contains_key(o)).map(name).collect();
            let hint = match apart.len() {
                0 => String::new(),
                1 => format!("; {} is short too and has no link to it: likely that cable", apart[0]),
                _ => format!("; short too, with no link to it: {}", apart.join(", ")),
            };
            let words = |_: &[String]| {
                format!(
                    "{} {} has {} link(s) to other {}, where the {} of this fabric have {usual} each: a link between them missing (a Dragonfly+ global link, a ring's){hint}",
                    tier.name(),
                    name(g),
                    counts[g],
                    plural(tier),
                    plural(tier)
                )
            };
            let planned = members.iter().filter(|u| *u != g).all(|u| as_planned(g, u));
            let remedy = "cable the missing link (a --topology or --plan run names the ports), or check its port state at both ends";
            say(&mut out, Severity::Warning, &name(g), &[(String::new(), planned)], words, remedy);
        }
        if tier == Tier::Spine {
            let leaves: Vec<Guid> = tiers.iter().filter(|(_, p)| p.tier == Tier::Leaf).map(|(g, _)| *g).collect();
            let short: BTreeSet<Guid> = short.into_iter().collect();
            out.extend(group_pair_rules(&groups(&leaves, &members, count), &short, count, as_planned, name));
        }
    }
    out
}

/// Within a group every lower switch should have the same number of links to every upper one:
/// the most common count.
fn group_rules(
    group: &Group,
    lower: Tier,
    upper: Tier,
    count: &impl Fn(&Guid, &Guid) -> usize,
    as_planned: &impl Fn(&Guid, &Guid) -> bool,
    name: &impl Fn(&Guid) -> String,
) -> Vec<Noted> {
    let mut out = Vec::new();
    if group.lows.len() < 2 && group.ups.len() < 2 {
        return out;
    }
    let Some(usual) = most_common(group.lows.iter().flat_map(|l| group.ups.iter().map(move |u| count(l, u)))) else { return out };
    // Counted once (a scan per pair would be cubic on a large tree).
    let mut missing_low: BTreeMap<Guid, usize> = BTreeMap::new();
    let mut missing_up: BTreeMap<Guid, usize> = BTreeMap::new();
    for l in &group.lows {
        for u in group.ups.iter().filter(|u| count(l, u) == 0) {
            *missing_low.entry(*l).or_default() += 1;
            *missing_up.entry(*u).or_default() += 1;
        }
    }
    let missing_of_low = |l: &Guid| missing_low.get(l).copied().unwrap_or(0);
    let missing_of_up = |u: &Guid| missing_up.get(u).copied().unwrap_or(0);
    // A pair with no link is said once: by the upper switch when it misses more lower ones than
    // the lower one misses upper ones (a spine cabled to few leaves), else by the lower one.
    let by_upper = |l: &Guid, u: &Guid| missing_of_up(u) >= 2 && missing_of_up(u) > missing_of_low(l);
    for u in &group.ups {
        let lacking: Vec<(String, bool)> =
            group.lows.iter().filter(|l| count(l, u) == 0 && by_upper(l, u)).map(|l| (name(l), as_planned(l, u))).collect();
        let words = |lacking: &[String]| {
            format!(
                "{} {} has no link to {} {} of its tree ({}), which the other {} reach with {usual} link(s) each",
                upper.name(),
                name(u),
                lacking.len(),
                plural(lower),
                lacking.join(", "),
                plural(upper)
            )
        };
        let remedy = "cable it to those switches as the other spines are (a --topology or --plan run names the ports), or check those ports' state";
        say(&mut out, Severity::Error, &name(u), &lacking, words, remedy);
    }
    for l in &group.lows {
        let absent: Vec<(String, bool)> =
            group.ups.iter().filter(|u| count(l, u) == 0 && !by_upper(l, u)).map(|u| (name(u), as_planned(l, u))).collect();
        let words = |absent: &[String]| {
            format!(
                "{} {} has no link to {} {}, which the other {} of its tree reach with {usual} link(s) each: a missing or unplugged uplink",
                lower.name(),
                name(l),
                upper.name(),
                absent.join(", "),
                plural(lower)
            )
        };
        let remedy = "cable the missing uplink (a --topology or --plan run names the ports), or check its port state on both switches";
        say(&mut out, Severity::Error, &name(l), &absent, words, remedy);
        let uneven: Vec<(String, bool)> = group
            .ups
            .iter()
            .filter(|u| count(l, u) > 0 && count(l, u) != usual)
            .map(|u| (format!("{} to {}", count(l, u), name(u)), as_planned(l, u)))
            .collect();
        let words = |uneven: &[String]| {
            format!(
                "uneven uplinks: {} {} has {} link(s), where the {} of its tree have {usual} to each {}",
                lower.name(),
                name(l),
                uneven.join(", "),
                plural(lower),
                upper.name()
            )
        };
        let remedy = "spread the uplinks evenly over the spines (a cable missing, or one plugged into the wrong spine): the routing then balances";
        say(&mut out, Severity::Warning, &name(l), &uneven, words, remedy);
    }
    out
}

fn plural(t: Tier) -> &'static str {
    match t {
        Tier::Leaf => "leaves",
        Tier::Spine => "spines",
        Tier::Core => "cores",
        Tier::Unknown => "switches",
    }
}

#[cfg(test)]
#[path = "tiers_tests.rs"]
mod tests;
