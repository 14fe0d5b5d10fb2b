//! The judgments: SM, LIDs, links (width, speed, down), reachability, cabling against the
//! expected topology, and error counters. Pure: a `Fabric` (and optional `Topology`) in,
//! findings with cause and remedy out, in the same shape as `check`.

use crate::fabric::design::planned::Resolver;
use crate::fabric::design::topology::{NodeKey, Topology};
use crate::fabric::discovery::links::{end_name, node_name, Index, Link, LinkKey};
use crate::fabric::discovery::model::{Fabric, Gap, Node};
use crate::fabric::expect::FabricExpect;
use crate::mad::attributes::{ErrorCounter, Guid, NodeType, SmState};
use crate::outcome::FindingId;
use crate::outcome::{Finding, Severity};
use crate::port::{link_rate, PhysState, PortState, Speed, Width};
use std::collections::{BTreeMap, HashSet};

use crate::fabric::judgement::Judgement;

struct Sheet {
    j: Judgement,
}

impl Sheet {
    fn add(&mut self, id: FindingId, severity: Severity, subject: String, message: String, remedy: &str, ends: &[(Guid, u8)]) {
        for end in ends {
            self.j.marks.entry(*end).or_default().push(id);
        }
        self.j.findings.push(Finding::new(id, severity, subject, message, remedy));
    }
}

pub fn judge(fabric: &Fabric, topology: Option<&Topology>, expect: &FabricExpect) -> Judgement {
    let index = Index::new(fabric);
    let mut sheet = Sheet { j: Judgement::default() };
    sm_rules(fabric, expect, &mut sheet);
    if fabric.master.is_some() {
        lid_rules(fabric, &mut sheet);
    }
    count_rules(fabric, expect, &mut sheet);
    for link in &index.links {
        if fabric.master.as_ref().is_some_and(|m| m.state == SmState::Master) {
            state_rules(link, &mut sheet);
        }
        link_rules(link, expect, &mut sheet);
        counter_rules(link, expect, &mut sheet);
    }
    let named = gap_rules(fabric, &index, topology, &mut sheet);
    if let Some(topology) = topology {
        topology_rules(fabric, &index, topology, &named, &mut sheet);
    }
    sheet.j.findings.sort_by_key(|f| f.severity);
    sheet.j
}

const START_SM: &str = "start a subnet manager: `systemctl enable --now opensm` on a management node (or enable the SM of a managed switch), \
                        then rerun; `sminfo` shows the master once it has swept";

fn sm_rules(fabric: &Fabric, expect: &FabricExpect, sheet: &mut Sheet) {
    let ports: Vec<_> = fabric.nodes.iter().flat_map(|n| n.ports.iter().map(move |p| (n, p))).filter(|(_, p)| p.info.link_up()).collect();
    let unconfigured = ports.iter().filter(|(_, p)| matches!(p.info.state, PortState::Init | PortState::Armed)).count();
    match &fabric.master {
        None => {
            let message = format!(
                "no master subnet manager: the local port {}/{} has SM LID {} and is {}; {unconfigured} of {} linked ports are INIT/ARMED (no LIDs, no routes)",
                fabric.local.ca,
                fabric.local.port,
                fabric.local.sm_lid,
                fabric.local.state,
                ports.len()
            );
            sheet.add(FindingId::FabricSm, Severity::Error, "subnet".into(), message, START_SM, &[]);
            return;
        }
        Some(m) if m.state != SmState::Master => {
            let message = format!("the SM at LID {} ({}) answers as {}, not MASTER: the subnet has no master", m.lid, m.guid, m.state.name());
            sheet.add(FindingId::FabricSm, Severity::Error, format!("SM lid {}", m.lid), message, START_SM, &[]);
        }
        Some(_) => {}
    }
    let master = fabric.master.as_ref().expect("checked above");
    for other in fabric.others.iter().filter(|o| o.state == SmState::Master && o.guid != master.guid) {
        sheet.add(
            FindingId::FabricSm,
            Severity::Error,
            format!("SM lid {} and lid {}", master.lid, other.lid),
            format!(
                "two master SMs: LID {} ({}) and LID {} ({}): the subnet is split or two SMs fight over it",
                master.lid, master.guid, other.lid, other.guid
            ),
            "keep one master: give the intended master the highest priority (`sm_priority` in opensm.conf) and stop or demote the other; \
             check for a cable that splits the subnet",
            &[],
        );
    }
    let standbys: Vec<_> = fabric.others.iter().filter(|o| o.state == SmState::Standby).collect();
    if let Some(want) = expect.sm_standby {
        if standbys.len() < want {
            sheet.add(
                FindingId::FabricSm,
                Severity::Error,
                "subnet".into(),
                format!("{} standby SM(s), expected at least {want}: if the master (LID {}) fails, nobody takes over", standbys.len(), master.lid),
                "start OpenSM on a second management node (`systemctl enable --now opensm`) with a lower `sm_priority` than the master, \
                 so it waits as STANDBY",
                &[],
            );
        }
    }
    for s in standbys.iter().filter(|s| s.priority > master.priority) {
        sheet.add(
            FindingId::FabricSm,
            Severity::Warning,
            format!("SM lid {}", s.lid),
            format!(
                "standby SM at LID {} ({}) has priority {} above the master's {} (LID {}): it will take over at the next handover",
                s.lid, s.guid, s.priority, master.priority, master.lid
            ),
            "give the SM meant to be master the highest `sm_priority` (0..15) in opensm.conf on each SM node, and restart them",
            &[],
        );
    }
}

fn lid_rules(fabric: &Fabric, sheet: &mut Sheet) {
    // Endpoints that own a LID: switch port 0 and CA/router ports.
    let mut by_lid: BTreeMap<u16, Vec<(&Node, u8)>> = BTreeMap::new();
    for node in &fabric.nodes {
        for port in node.ports.iter().filter(|p| (node.node_type == NodeType::Switch) == (p.number == 0)) {
            if port.info.state == PortState::Active && port.info.lid == 0 {
                sheet.add(
                    FindingId::FabricLid,
                    Severity::Error,
                    end_name(node, port.number),
                    format!("{} is ACTIVE without a LID: nothing can address it", end_name(node, port.number)),
                    "have the SM resweep (`kill -HUP $(pidof opensm)`); if it persists, check the SM log for LID assignment errors",
                    &[(node.guid, port.number)],
                );
            } else if port.info.lid != 0 {
                by_lid.entry(port.info.lid).or_default().push((node, port.number));
            }
        }
    }
    for (lid, owners) in by_lid {
        let distinct: HashSet<Guid> = owners.iter().map(|(n, _)| n.guid).collect();
        if distinct.len() > 1 {
            let names: Vec<String> = owners.iter().map(|(n, p)| end_name(n, *p)).collect();
            sheet.add(
                FindingId::FabricLid,
                Severity::Error,
                names.join(", "),
                format!("LID {lid} is assigned to {} ports: {}", owners.len(), names.join(", ")),
                "duplicate LIDs break routing: restart the SM with a clean LID cache (remove guid2lid in its cache directory) so it reassigns them",
                &owners.iter().map(|(n, p)| (n.guid, *p)).collect::<Vec<_>>(),
            );
        }
    }
}

fn count_rules(fabric: &Fabric, expect: &FabricExpect, sheet: &mut Sheet) {
    let switches = fabric.nodes.iter().filter(|n| n.node_type == NodeType::Switch).count();
    for (what, want, got) in [("nodes", expect.nodes, fabric.nodes.len()), ("switches", expect.switches, switches)] {
        if let Some(want) = want {
            if want != got {
                sheet.add(
                    FindingId::FabricTopologyMissing,
                    if got < want { Severity::Error } else { Severity::Warning },
                    "subnet".into(),
                    format!("{got} {what} discovered, expected {want}"),
                    "compare with `ibnetdiscover`; give --topology FILE to have the missing or extra ones named",
                    &[],
                );
            }
        }
    }
}

const LANE_FAULT: &str = "a cable, connector or lane fault: reseat the cable at both ends, then replace it; if the fault follows the port \
                          and not the cable, the port (or its transceiver) is bad";

fn wl(width: Width, speed: Speed) -> String {
    match link_rate(width, speed) {
        Some(r) => format!("{width} {speed} ({} Gb/s)", crate::units::rate(r.data_gbps)),
        None => format!("{width} {speed}"),
    }
}

/// With a master SM, a physically up link should be ACTIVE: INIT/ARMED means the SM has not
/// configured it (or is still sweeping).
fn state_rules(link: &Link, sheet: &mut Sheet) {
    let (a, b) = (&link.a.port.info, &link.b.port.info);
    if !(a.link_up() && b.link_up()) || (a.state == PortState::Active && b.state == PortState::Active) {
        return;
    }
    sheet.add(
        FindingId::FabricLinkState,
        Severity::Error,
        link.name(),
        format!("linked up but {} / {}: the master SM has not activated it, so it carries no traffic", a.state, b.state),
        "if the SM is mid-sweep, rerun in a few seconds; otherwise look for this port in the SM log (opensm.log: M_Key, \
         partition or MTU/VL errors) and reset it (`ibportstate LID PORT reset`)",
        &[link.a.key(), link.b.key()],
    );
}

fn link_rules(link: &Link, expect: &FabricExpect, sheet: &mut Sheet) {
    let (a, b) = (&link.a.port.info, &link.b.port.info);
    if !(a.link_up() && b.link_up()) {
        return;
    }
    let ends = [link.a.key(), link.b.key()];
    let (width, speed) = (a.width_active, a.speed_active);
    // Width.
    let allowed = a.width_supported.intersect(b.width_supported).intersect(a.width_enabled).intersect(b.width_enabled).best();
    let supported = a.width_supported.intersect(b.width_supported).best();
    let lanes = |w: Option<Width>| w.and_then(|w| w.lanes()).unwrap_or(0);
    if lanes(allowed) > lanes(Some(width)) {
        let best = allowed.expect("more lanes than active");
        sheet.add(
            FindingId::FabricLinkWidth,
            Severity::Error,
            link.name(),
            format!(
                "runs {} but both ends support and enable {}: {} lanes are not training",
                wl(width, speed),
                wl(best, speed),
                lanes(allowed) - lanes(Some(width))
            ),
            LANE_FAULT,
            &ends,
        );
    } else if lanes(supported) > lanes(allowed) {
        let best = supported.expect("more lanes than allowed");
        sheet.add(
            FindingId::FabricLinkWidth,
            Severity::Warning,
            link.name(),
            format!("runs {}; both ends support {} but the enabled widths stop at {}", wl(width, speed), wl(best, speed), allowed.map_or("none".into(), |w| w.name().into_owned())),
            "a configuration choice, not a fault: enable the width on both ports (the SM's port profile, or `ibportstate LID PORT width N`) if the link should run wider",
            &ends,
        );
    }
    // Speed.
    let allowed = a.speed_supported.intersect(b.speed_supported).intersect(a.speed_enabled).intersect(b.speed_enabled).best();
    let supported = a.speed_supported.intersect(b.speed_supported).best();
    let rank = |s: Option<Speed>| s.map_or(0, Speed::rank);
    if rank(allowed) > rank(Some(speed)) {
        let best = allowed.expect("faster than active");
        sheet.add(
            FindingId::FabricLinkSpeed,
            Severity::Error,
            link.name(),
            format!("runs {} but both ends support and enable {}", wl(width, speed), wl(width, best)),
            "a cable or connector fault, or a cable not rated for the speed (check its part number): reseat, then replace it",
            &ends,
        );
    } else if rank(supported) > rank(allowed) {
        let best = supported.expect("faster than allowed");
        sheet.add(
            FindingId::FabricLinkSpeed,
            Severity::Warning,
            link.name(),
            format!("runs {}; both ends support {} but the enabled speeds stop at {}", wl(width, speed), wl(width, best), allowed.map_or("none".into(), |s| s.name().into_owned())),
            "a configuration choice, not a fault: enable the speed on both ports (the SM's port profile, or `ibportstate LID PORT speed N`) if the link should run faster",
            &ends,
        );
    }
    if let Some(want) = expect.width {
        if lanes(Some(width)) < lanes(Some(want)) {
            sheet.add(FindingId::FabricLinkWidth, Severity::Error, link.name(), format!("runs {width}, expected at least {want}"), LANE_FAULT, &ends);
        }
    }
    if let Some(want) = expect.speed {
        if speed.rank() < want.rank() {
            sheet.add(
                FindingId::FabricLinkSpeed,
                Severity::Error,
                link.name(),
                format!("runs {speed}, expected at least {want}"),
                "check that both ends and the cable are rated for the speed, then reseat or replace the cable",
                &ends,
            );
        }
    }
}

fn counter_rules(link: &Link, expect: &FabricExpect, sheet: &mut Sheet) {
    for end in [link.a, link.b] {
        let Some(c) = end.port.counters else { continue };
        let over: Vec<(ErrorCounter, u64, u64)> = ErrorCounter::ALL
            .into_iter()
            .filter_map(|counter| {
                let (value, limit) = (c.error(counter), expect.threshold(counter));
                (value > limit).then_some((counter, value, limit))
            })
            .collect();
        if over.is_empty() {
            continue;
        }
        let physical = over.iter().any(|(c, ..)| c.physical());
        let list: Vec<String> = over.iter().map(|(c, v, l)| format!("{} {v} (> {l})", c.ibta())).collect();
        let remedy = if physical {
            "errors counted where this link's signal arrives: a marginal cable or connector. Reseat or replace the cable and watch whether \
             the counters grow (`fabcheck fabric --reset-counters`, then rerun later)"
        } else if over.iter().any(|(c, ..)| *c == ErrorCounter::RcvRemotePhysicalErrors) {
            "packets arrived already marked bad: look for symbol or receive errors on the links upstream of this port"
        } else {
            "packets dropped for congestion or an unresponsive destination (head-of-queue lifetime): find the congested path or the stuck node"
        };
        sheet.add(
            FindingId::FabricErrors,
            if physical { Severity::Error } else { Severity::Warning },
            link.name(),
            format!("at {}: {}", end.name(), list.join(", ")),
            remedy,
            &[link.a.key(), link.b.key()],
        );
    }
}

/// Reports ports whose far end never answered. With a topology, the far end is named from
/// it; those expected cables are returned so the topology rules do not report them again.
fn gap_rules(fabric: &Fabric, index: &Index, topology: Option<&Topology>, sheet: &mut Sheet) -> HashSet<(Guid, u8)> {
    let mut named = HashSet::new();
    let mut silent_counters = 0;
    for gap in &fabric.gaps {
        match gap {
            Gap::Unanswered { node, port } => {
                let Some(n) = index.by_guid.get(node) else { continue };
                let expected = topology.and_then(|t| expected_peer(t, n, *port));
                if expected.is_some() {
                    named.insert((*node, *port));
                }
                let peer = expected.clone().unwrap_or_else(|| "?".into());
                let per_file = expected.map_or(String::new(), |e| format!(" ({e} per the topology file)"));
                sheet.add(
                    FindingId::FabricUnreachable,
                    Severity::Error,
                    format!("{} <-> {peer}", end_name(n, *port)),
                    format!("{} is linked up but the node behind it{per_file} does not answer SMPs (timeout after every retry)", end_name(n, *port)),
                    "the node's management agent is hung or dropping MADs: check that node (firmware, driver, `ibstat` there); \
                     reset the port if it persists",
                    &[(*node, *port)],
                );
            }
            Gap::NoCounters { .. } => silent_counters += 1,
        }
    }
    if silent_counters > 0 {
        let names: Vec<String> = fabric
            .gaps
            .iter()
            .filter_map(|g| match g {
                Gap::NoCounters { node } => index.by_guid.get(node).map(|n| node_name(n)),
                _ => None,
            })
            .take(5)
            .collect();
        sheet.add(
            FindingId::FabricUnreachable,
            Severity::Warning,
            names.join(", "),
            format!("{silent_counters} node(s) did not answer PerfMgt (PortCounters): their error counters are unknown"),
            "check the nodes' performance management agent; counters of the other end of their links were still read",
            &[],
        );
    }
    named
}

/// `hostD[1]` if the topology file cables `node[port]` to it.
fn expected_peer(topology: &Topology, node: &Node, port: u8) -> Option<String> {
    let is = |id: &str| {
        let key = &topology.nodes[id].key;
        match key.guid {
            Some(g) => g == node.guid,
            None => key.description == node.description,
        }
    };
    topology.links.iter().find_map(|l| {
        let other = if is(&l.a.0) && l.a.1 == port {
            &l.b
        } else if is(&l.b.0) && l.b.1 == port {
            &l.a
        } else {
            return None;
        };
        let key = &topology.nodes[&other.0].key;
        let name = if key.description.is_empty() { key.guid.map(|g| g.to_string()).unwrap_or_default() } else { key.description.clone() };
        Some(format!("{name}[{}]", other.1))
    })
}

fn topology_rules(fabric: &Fabric, index: &Index, topology: &Topology, unanswered: &HashSet<(Guid, u8)>, sheet: &mut Sheet) {
    let resolver = Resolver::new(fabric, index);
    let resolve = |key: &NodeKey| resolver.node(key);
    let label =
        |key: &NodeKey| if key.description.is_empty() { key.guid.map(|g| g.to_string()).unwrap_or_default() } else { key.description.clone() };
    let mut expected: HashSet<LinkKey> = HashSet::new();
    let mut explained: HashSet<LinkKey> = HashSet::new();
    for link in &topology.links {
        let (ka, kb) = (&topology.nodes[&link.a.0].key, &topology.nodes[&link.b.0].key);
        let (pa, pb) = (link.a.1, link.b.1);
        let subject = format!("{}[{pa}] <-> {}[{pb}]", label(ka), label(kb));
        let (na, nb) = (resolve(ka), resolve(kb));
        // Already reported as a port whose far end does not answer.
        if na.is_some_and(|n| unanswered.contains(&(n.guid, pa))) || nb.is_some_and(|n| unanswered.contains(&(n.guid, pb))) {
            continue;
        }
        let actual_a = na.and_then(|n| index.peer_of(n.guid, pa));
        let actual_b = nb.and_then(|n| index.peer_of(n.guid, pb));
        if let (Some(x), Some(nb)) = (actual_a, nb) {
            if x.node.guid == nb.guid && x.port.number == pb {
                expected.insert(LinkKey::new((x.node.guid, pb), (na.expect("has a peer").guid, pa)));
                continue;
            }
        }
        let mut wrong = Vec::new();
        for (node, port, actual) in [(na, pa, actual_a), (nb, pb, actual_b)] {
            if let (Some(n), Some(x)) = (node, actual) {
                wrong.push(format!("{} is cabled to {}", end_name(n, port), x.name()));
                explained.insert(LinkKey::new((n.guid, port), x.key()));
            }
        }
        let mut ends: Vec<(Guid, u8)> = [(na, actual_a), (nb, actual_b)].iter().filter_map(|(_, x)| x.map(|x| x.key())).collect();
        for (n, p) in [(na, pa), (nb, pb)] {
            if let Some(n) = n {
                ends.push((n.guid, p));
            }
        }
        if !wrong.is_empty() {
            sheet.add(
                FindingId::FabricTopologyMiswired,
                Severity::Error,
                subject,
                format!("expected this cable, but {}", wrong.join("; ")),
                "move the cable to the port the topology names (a cable in the neighbouring port is the classic), or update the topology file",
                &ends,
            );
            continue;
        }
        let down: Vec<String> = [(na, pa), (nb, pb)]
            .into_iter()
            .filter_map(|(n, p)| {
                let node = n?;
                let port = node.port(p)?;
                matches!(port.info.phys_state, PhysState::Polling | PhysState::Disabled | PhysState::Sleep)
                    .then(|| format!("{} is {}/{}", end_name(node, p), port.info.state, port.info.phys_state))
            })
            .collect();
        let absent: Vec<String> = [(na, ka), (nb, kb)].into_iter().filter(|(n, _)| n.is_none()).map(|(_, k)| label(k)).collect();
        let absent_text = if absent.is_empty() { String::new() } else { format!("; not discovered: {}", absent.join(", ")) };
        if !down.is_empty() {
            sheet.add(
                FindingId::FabricLinkDown,
                Severity::Error,
                subject,
                format!("expected cable has no link: {}{absent_text}", down.join(", ")),
                "POLLING means no signal from the far end: check the cable is plugged and seated at both ends, then replace it; DISABLED \
                 means the port was turned off (`ibportstate LID PORT enable`)",
                &ends,
            );
        } else {
            sheet.add(
                FindingId::FabricTopologyMissing,
                Severity::Error,
                subject,
                format!("expected cable not found{}", if absent_text.is_empty() { String::new() } else { absent_text.replacen("; ", ": ", 1) }),
                "power on and cable the missing node, or check whether it answers (`ibstat` on it); update the topology file if it was removed",
                &ends,
            );
        }
    }
    for link in &index.links {
        let key = link.key();
        if expected.contains(&key) || explained.contains(&key) {
            continue;
        }
        sheet.add(
            FindingId::FabricTopologyExtra,
            Severity::Warning,
            link.name(),
            "a cable the topology file does not list".into(),
            "if it is meant to be there, add it to the topology file (`ibnetdiscover` prints the current cabling); otherwise remove it",
            &[link.a.key(), link.b.key()],
        );
    }
}

#[cfg(test)]
mod tests;
