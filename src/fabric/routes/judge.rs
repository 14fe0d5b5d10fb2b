//! `fabric.route` findings and figures from the walks of `route`: holes, misdeliveries and
//! loops (errors: traffic to those LIDs is lost), routes longer than the tree's depth and
//! leaves that send most destinations up one cable (warnings), tables not read (warning), and
//! the figures (pairs walked, the seed of a sample, each leaf's uplink load) for the report.
//! Pure.

use crate::fabric::discovery::links::{end_name, node_name};
use crate::fabric::discovery::model::{Fabric, Lft, Tables};
use crate::fabric::judgement::Cabling;
use crate::fabric::routes::route::{self, Host, Outcome, Tiers, Walker};
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::FindingId;
use crate::outcome::{Finding, Severity};
use crate::port::PortState;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The figures of a route walk (the JSON document's `routes`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteFigures {
    pub hosts: usize,
    /// Ordered host pairs in the fabric, and how many were walked.
    pub pairs: u64,
    pub walked: usize,
    /// The seed of the sample (`--seed` repeats it); null when every pair was walked.
    pub seed: Option<u64>,
    pub switches_with_tables: usize,
    /// SMPs spent reading the tables.
    pub mads: u64,
    /// Switch tiers, and the most switches a delivered route crossed.
    pub depth: usize,
    pub longest_route: usize,
    /// Each leaf with two or more uplinks: how many remote host destinations each carries.
    pub uplinks: Vec<LeafUplinks>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeafUplinks {
    pub leaf: String,
    pub guid: Guid,
    pub destinations: usize,
    pub ports: Vec<UplinkLoad>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UplinkLoad {
    pub port: u8,
    /// The switch port at the other end.
    pub to: String,
    pub destinations: usize,
}

/// Destinations listed in a message before the rest are counted.
const LISTED: usize = 5;

/// Walks the pairs (all, or a sample from `seed`) and judges them. `cabling`: when the cabling
/// itself is uneven (`fabric.design` names a leaf missing a spine, or uneven uplinks, as a fault
/// or as planned), an uplink imbalance it causes is said as info, the cause being named already.
pub fn judge(fabric: &Fabric, tables: &Tables, seed: u64, cabling: Cabling) -> (RouteFigures, Vec<Finding>) {
    let walker = Walker::new(fabric, tables);
    let tiers = Tiers::new(fabric);
    let hosts = route::hosts(fabric);
    let (pairs, sampled) = route::pairs(hosts.len(), seed);
    let mut findings = Vec::new();
    // (kind of trouble) -> destinations it hits, and pairs walked into it.
    let mut troubles: BTreeMap<Trouble, (BTreeSet<u16>, usize)> = BTreeMap::new();
    let mut long: Vec<(Host, Host, Vec<Guid>, usize)> = Vec::new();
    let mut longest = 0;
    let mut from_leaf: HashMap<Guid, HashMap<Guid, usize>> = HashMap::new();
    let mut walks = 0usize;
    let hosts_ref = &hosts;
    for (src, dst, lid) in pairs.iter().flat_map(|&(i, j)| hosts_ref[j].lids().map(move |lid| (&hosts_ref[i], &hosts_ref[j], lid))) {
        walks += 1;
        let trouble = match walker.walk(src, lid) {
            Outcome::Delivered { switches } => {
                longest = longest.max(switches.len());
                let shortest = match (switches.first(), switches.last()) {
                    (Some(a), Some(b)) => from_leaf.entry(*a).or_insert_with(|| tiers.distances(std::iter::once(*a))).get(b).map_or(0, |d| d + 1),
                    _ => 0,
                };
                let allowed = tiers.longest_expected().max(shortest);
                if switches.len() > allowed {
                    long.push((*src, *dst, switches, allowed));
                }
                continue;
            }
            Outcome::NoEntry { at } => Trouble::NoEntry(at),
            Outcome::DeadPort { at, port } => Trouble::DeadPort(at, port),
            Outcome::Misdelivered { at, to } => Trouble::Misdelivered(at, to),
            Outcome::Loop { cycle } => Trouble::Loop(rotated(cycle)),
            Outcome::Unread { at } => Trouble::Unread(at),
        };
        let entry = troubles.entry(trouble).or_default();
        entry.0.insert(lid);
        entry.1 += 1;
    }
    let names = Names { fabric, hosts: hosts.iter().flat_map(|h| h.lids().map(move |l| (l, *h))).collect() };
    // With LMC each pair is walked once per destination LID: said as routes, not pairs.
    let what = if walks == pairs.len() { "host pairs" } else { "routes (host pairs times LMC paths)" };
    for (trouble, (lids, hits)) in &troubles {
        findings.push(names.trouble(trouble, lids, *hits, walks, what));
    }
    if let Some(f) = long_routes(&names, &long, &tiers) {
        findings.push(f);
    }
    for guid in &tables.lft_unread {
        let name = fabric.node(*guid).map_or_else(|| guid.to_string(), node_name);
        if !troubles.contains_key(&Trouble::Unread(*guid)) {
            findings.push(Finding {
                id: FindingId::FabricRoute,
                severity: Severity::Warning,
                subject: name.clone().into(),
                message: format!("the forwarding table of {name} could not be read: routes through it are not walked"),
                remedy: unread_remedy(tables),
                about: None,
            });
        }
    }
    let uplinks = uplink_loads(fabric, tables, &hosts, &tiers);
    findings.extend(uplinks.iter().filter_map(|leaf| unbalanced(leaf, cabling)));
    let figures = RouteFigures {
        hosts: hosts.len(),
        pairs: (hosts.len() as u64).saturating_mul(hosts.len().saturating_sub(1) as u64),
        walked: pairs.len(),
        seed: sampled.then_some(seed),
        switches_with_tables: tables.lfts.len(),
        mads: tables.mads,
        depth: tiers.depth,
        longest_route: longest,
        uplinks,
    };
    (figures, findings)
}

/// One kind of trouble at one place; the destinations it hits are gathered under it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Trouble {
    NoEntry(Guid),
    DeadPort(Guid, u8),
    Misdelivered(Guid, (Guid, u8)),
    Loop(Vec<Guid>),
    Unread(Guid),
}

/// A loop named from its lowest GUID, so the same loop entered anywhere is one finding.
fn rotated(mut cycle: Vec<Guid>) -> Vec<Guid> {
    if let Some(i) = cycle.iter().enumerate().min_by_key(|(_, g)| **g).map(|(i, _)| i) {
        cycle.rotate_left(i);
    }
    cycle
}

const RESWEEP: &str = "have the SM route again (`kill -HUP $(pidof opensm)` forces a heavy sweep; check its log for routing errors), \
                       and make sure only one SM is master; `ibroute LID` prints a switch's table to compare";

fn unread_remedy(tables: &Tables) -> String {
    match &tables.cut_short {
        Some(why) => format!("{why}: raise --deadline (or lower --timeout-ms) to read every table"),
        None => "the switch did not answer LinearForwardingTable SMPs: check it answers (`smpquery -D nodeinfo PATH`) and rerun".into(),
    }
}

struct Names<'a> {
    fabric: &'a Fabric,
    hosts: HashMap<u16, Host>,
}

impl Names<'_> {
    fn switch(&self, guid: Guid) -> String {
        self.fabric.node(guid).map_or_else(|| guid.to_string(), node_name)
    }

    fn end(&self, (guid, port): (Guid, u8)) -> String {
        self.fabric.node(guid).map_or_else(|| format!("{guid}[{port}]"), |n| end_name(n, port))
    }

    fn lid(&self, lid: u16) -> String {
        match self.hosts.get(&lid) {
            Some(h) if h.lmc > 0 => format!("LID {lid} ({}, LMC path {} of {})", self.end((h.node, h.port)), lid - h.lid + 1, 1u32 << h.lmc.min(7)),
            Some(h) => format!("LID {lid} ({})", self.end((h.node, h.port))),
            None => format!("LID {lid}"),
        }
    }

    fn lids(&self, lids: &BTreeSet<u16>) -> String {
        let mut shown: Vec<String> = lids.iter().take(LISTED).map(|&l| self.lid(l)).collect();
        if lids.len() > LISTED {
            shown.push(format!("and {} more", lids.len() - LISTED));
        }
        shown.join(", ")
    }

    fn trouble(&self, trouble: &Trouble, lids: &BTreeSet<u16>, walks: usize, walked: usize, what: &str) -> Finding {
        let hit = format!("{walks} of {walked} {what} walked end here");
        let (severity, subject, message, remedy) = match trouble {
            Trouble::NoEntry(at) => (
                Severity::Error,
                self.switch(*at),
                format!("{} has no route (forwarding entry 0xFF) to {}: packets to them are dropped there; {hit}", self.switch(*at), self.lids(lids)),
                RESWEEP.to_string(),
            ),
            Trouble::DeadPort(at, port) => {
                let state = self.fabric.node(*at).and_then(|n| n.port(*port)).map_or("no such port".to_string(), |p| {
                    if p.remote.is_none() {
                        format!("{} (not cabled)", p.info.state.name())
                    } else {
                        p.info.state.name().into_owned()
                    }
                });
                (
                    Severity::Error,
                    self.end((*at, *port)),
                    format!(
                        "{} forwards {} out of port {port}, which is {state}: packets to them are dropped; {hit}",
                        self.switch(*at),
                        self.lids(lids)
                    ),
                    format!(
                        "the SM routed over a link that is gone: fix or reseat the cable of {}, or have the SM route around it; {RESWEEP}",
                        self.end((*at, *port))
                    ),
                )
            }
            Trouble::Misdelivered(at, to) => (
                Severity::Error,
                self.switch(*at),
                format!("{} sends {} to {}, which does not own them; {hit}", self.switch(*at), self.lids(lids), self.end(*to)),
                RESWEEP.to_string(),
            ),
            Trouble::Loop(cycle) => {
                let names: Vec<String> = cycle.iter().map(|g| self.switch(*g)).collect();
                (
                    Severity::Error,
                    names.join(" -> "),
                    format!(
                        "packets to {} loop through {} and back (they are dropped when their hop limit runs out); {hit}",
                        self.lids(lids),
                        names.join(" -> ")
                    ),
                    format!("forwarding tables that loop disagree with each other: a table was changed behind the SM, or two SMs fight; {RESWEEP}"),
                )
            }
            Trouble::Unread(at) => (
                Severity::Warning,
                self.switch(*at),
                format!(
                    "routes to {} pass {}, whose forwarding table was not read: they are not walked further; {hit}",
                    self.lids(lids),
                    self.switch(*at)
                ),
                "rerun with a longer --deadline; check the switch answers SMPs".to_string(),
            ),
        };
        Finding { id: FindingId::FabricRoute, severity, subject: subject.into(), message, remedy, about: None }
    }
}

fn long_routes(names: &Names, long: &[(Host, Host, Vec<Guid>, usize)], tiers: &Tiers) -> Option<Finding> {
    let (src, dst, switches, allowed) = long.first()?;
    let via: Vec<String> = switches.iter().map(|g| names.switch(*g)).collect();
    Some(Finding {
        id: FindingId::FabricRoute,
        severity: Severity::Warning,
        subject: "routes".into(),
        message: format!(
            "{} host pairs take routes longer than a {}-tier tree needs ({allowed} switches at most); for example {} -> {} crosses {} switches: {}",
            long.len(),
            tiers.depth,
            names.end((src.node, src.port)),
            names.end((dst.node, dst.port)),
            switches.len(),
            via.join(" -> ")
        ),
        remedy: "longer routes add latency and load spines twice: check the SM's routing engine (`-R ftree` or `updn` for fat trees, with the right \
                 root GUIDs) and for a cable that is missing so routes detour"
            .into(),
        about: None,
    })
}

/// Each leaf with two or more ACTIVE uplinks (links to other switches; a loopback cable is
/// none): how many host destinations on other switches its table sends up each one.
fn uplink_loads(fabric: &Fabric, tables: &Tables, hosts: &[Host], tiers: &Tiers) -> Vec<LeafUplinks> {
    let mut out = Vec::new();
    for guid in &tiers.leaves {
        let (Some(leaf), Some(lft)) = (fabric.node(*guid), tables.lfts.get(guid)) else { continue };
        let uplinks: Vec<(u8, String)> = leaf
            .ports
            .iter()
            .filter(|p| p.number != 0 && p.info.state == PortState::Active)
            .filter_map(|p| {
                let (g, n) = p.remote?;
                // A loopback cable (to another port of this switch) leads nowhere new.
                let peer = fabric.node(g).filter(|n| n.node_type == NodeType::Switch && g != *guid)?;
                Some((p.number, end_name(peer, n)))
            })
            .collect();
        if uplinks.len() < 2 {
            continue;
        }
        let mut counts: BTreeMap<u8, usize> = uplinks.iter().map(|(p, _)| (*p, 0)).collect();
        let mut destinations = 0;
        for host in hosts.iter().filter(|h| h.peer.0 != *guid) {
            let out = lft.port_for(host.lid);
            if out != Lft::NONE {
                if let Some(c) = counts.get_mut(&out) {
                    *c += 1;
                    destinations += 1;
                }
            }
        }
        let ports = uplinks.into_iter().map(|(port, to)| UplinkLoad { port, to, destinations: counts[&port] }).collect();
        out.push(LeafUplinks { leaf: node_name(leaf), guid: *guid, destinations, ports });
    }
    out
}

/// A leaf whose busiest uplink carries most of its destinations, at least twice what its
/// least busy uplink carries (with enough destinations to spread: two per uplink). Info where
/// the cabling is uneven: routes cannot spread over cables that are not there.
fn unbalanced(leaf: &LeafUplinks, cabling: Cabling) -> Option<Finding> {
    let busiest = leaf.ports.iter().max_by_key(|p| p.destinations)?;
    let least = leaf.ports.iter().map(|p| p.destinations).min()?;
    if leaf.destinations < 2 * leaf.ports.len() || busiest.destinations * 2 <= leaf.destinations || busiest.destinations < 2 * least {
        return None;
    }
    let spread: Vec<String> = leaf.ports.iter().map(|p| format!("port {} {}", p.port, p.destinations)).collect();
    let explained = match cabling {
        Cabling::Even => "",
        Cabling::Uneven => ": expected while fabric.design names missing or uneven uplinks; fix those first",
        Cabling::UnevenAsPlanned => ": expected from the uneven uplinks the plan itself has (fabric.design says them as planned)",
    };
    Some(Finding {
        id: FindingId::FabricRoute,
        severity: if cabling == Cabling::Even { Severity::Warning } else { Severity::Info },
        subject: (format!("{}[{}]", leaf.leaf, busiest.port)).into(),
        message: format!(
            "{} sends {} of its {} remote host destinations up one cable (port {} to {}) of {} uplinks ({}){explained}",
            leaf.leaf,
            busiest.destinations,
            leaf.destinations,
            busiest.port,
            busiest.to,
            leaf.ports.len(),
            spread.join(", ")
        ),
        remedy: "that uplink is a bottleneck while the others idle: use a routing engine that balances (`-R ftree` or `updn`), check that every \
                 uplink was ACTIVE when the SM last routed, and resweep"
            .into(),
        about: None,
    })
}
