//! `fabric.mcast`: each multicast group's spanning tree, as the switches' multicast forwarding
//! tables (MFT) draw it, reaches every member port and has no loop (ibdiagnet `-r`'s multicast
//! check; the IPoIB broadcast group `ff12:401b:ffff::ffff:ffff` is the one every IPoIB host
//! needs for ARP). Pure: the groups (MLID, name, member ports) and the MFT port masks in,
//! findings out.
//!
//! From each member, a packet enters the member's switch and is copied out of every port of
//! that switch's MFT entry for the MLID except the one it came in by (IBTA vol. 1 18.2.4.3.4);
//! at a CA port it is delivered, at a switch it goes on. A member never reached is an MFT hole
//! on its way; a switch reached twice in one flood is a loop (copies multiply).

use crate::fabric::discovery::links::{end_name, node_name};
use crate::fabric::discovery::model::Fabric;
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::{Finding, FindingId, Severity};
use crate::port::PortState;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One multicast group: its MLID, a name for people (the MGID), and its member ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub mlid: u16,
    pub mgid: String,
    pub members: BTreeSet<(Guid, u8)>,
}

/// The MFT entries: (switch, MLID) -> the ports the switch copies the group's packets to.
pub type Mfts = BTreeMap<(Guid, u16), BTreeSet<u8>>;

/// What one flood from a member found.
#[derive(Debug, Default, PartialEq, Eq)]
struct Flood {
    delivered: BTreeSet<(Guid, u8)>,
    /// Switches reached more than once.
    looped: BTreeSet<Guid>,
    /// Every switch reached.
    reached: BTreeSet<Guid>,
}

fn flood(fabric: &Fabric, mfts: &Mfts, mlid: u16, from: (Guid, u8)) -> Flood {
    let mut out = Flood::default();
    let Some(entry) = fabric.node(from.0).and_then(|n| n.port(from.1)).filter(|p| p.info.state == PortState::Active).and_then(|p| p.remote) else {
        return out;
    };
    let mut seen: BTreeSet<Guid> = BTreeSet::new();
    let mut queue = VecDeque::from([entry]);
    // Bounded: each switch is expanded once, so a loop is seen, not followed.
    while let Some((at, in_port)) = queue.pop_front() {
        let Some(node) = fabric.node(at) else { continue };
        if node.node_type != NodeType::Switch {
            out.delivered.insert((at, in_port));
            continue;
        }
        if !seen.insert(at) {
            out.looped.insert(at);
            continue;
        }
        out.reached.insert(at);
        for &port in mfts.get(&(at, mlid)).into_iter().flatten().filter(|&&p| p != in_port && p != 0) {
            if let Some(next) = node.port(port).filter(|p| p.info.state == PortState::Active).and_then(|p| p.remote) {
                queue.push_back(next);
            }
        }
    }
    out
}

/// `fabric.mcast` findings: per group, the members some other member cannot reach (an error
/// naming the unreached port and the switch whose entry lacks the port toward it), and loops.
pub fn judge(fabric: &Fabric, groups: &[Group], mfts: &Mfts) -> Vec<Finding> {
    let mut findings = Vec::new();
    for group in groups.iter().filter(|g| g.members.len() >= 2) {
        let mut unreached: BTreeMap<(Guid, u8), BTreeSet<(Guid, u8)>> = BTreeMap::new();
        let mut looped: BTreeSet<Guid> = BTreeSet::new();
        for &from in &group.members {
            let f = flood(fabric, mfts, group.mlid, from);
            looped.extend(f.looped);
            for &member in group.members.iter().filter(|m| **m != from && !f.delivered.contains(m)) {
                unreached.entry(member).or_default().insert(from);
            }
        }
        let name = |(g, p): (Guid, u8)| fabric.node(g).map_or_else(|| format!("{g}[{p}]"), |n| end_name(n, p));
        for (member, from) in &unreached {
            // The member's switch port: the entry that should list it.
            let at = fabric.node(member.0).and_then(|n| n.port(member.1)).and_then(|p| p.remote);
            let hole = match at {
                Some((sw, port)) if !mfts.get(&(sw, group.mlid)).is_some_and(|m| m.contains(&port)) => {
                    let switch = fabric.node(sw).map_or_else(|| sw.to_string(), node_name);
                    format!("{switch}'s MFT entry for MLID 0x{:04x} lacks port {port}", group.mlid)
                }
                Some((sw, _)) => on_the_way(fabric, mfts, group.mlid, from.iter().next().copied(), sw),
                None => "a switch on the way lacks the port toward it in its MFT entry".to_string(),
            };
            let senders: Vec<String> = from.iter().take(3).map(|s| name(*s)).collect();
            let more = if from.len() > 3 { format!(" and {} more", from.len() - 3) } else { String::new() };
            findings.push(Finding {
                id: FindingId::FabricMcast,
                severity: Severity::Error,
                subject: name(*member).into(),
                message: format!(
                    "multicast group {}MLID 0x{:04x}) does not reach member {} from {}{more}: {hole}",
                    titled(&group.mgid),
                    group.mlid,
                    name(*member),
                    senders.join(", ")
                ),
                remedy: "the SM's multicast tree has a hole (an MFT changed behind it, or a link that was down when it routed): have the SM \
                         resweep (`kill -HUP $(pidof opensm)`), check its log for multicast errors; `ibroute -M LID` prints a switch's MFT"
                    .into(),
                about: None,
            });
        }
        if !looped.is_empty() {
            let names: Vec<String> = looped.iter().map(|g| fabric.node(*g).map_or_else(|| g.to_string(), node_name)).collect();
            findings.push(Finding {
                id: FindingId::FabricMcast,
                severity: Severity::Error,
                subject: names.join(", ").into(),
                message: format!(
                    "multicast group {}MLID 0x{:04x}) loops: its MFT entries copy packets back to {} (copies multiply until dropped)",
                    titled(&group.mgid),
                    group.mlid,
                    names.join(", ")
                ),
                remedy: "the MFT entries do not form a tree: have the SM resweep, and check that only one SM is master".into(),
                about: None,
            });
        }
    }
    findings
}

/// "MGID (" where the group's MGID is known, else "(": the group is then named by its MLID.
fn titled(mgid: &str) -> String {
    if mgid.is_empty() {
        "(".into()
    } else {
        format!("{mgid} (")
    }
}

/// Where a flood from `sender` stops short of `target` (a member's switch whose own entry is
/// whole): the reached switch nearest `target` and its port toward it that its entry lacks.
fn on_the_way(fabric: &Fabric, mfts: &Mfts, mlid: u16, sender: Option<(Guid, u8)>, target: Guid) -> String {
    let unknown = || "a switch on the way lacks the port toward it in its MFT entry".to_string();
    let Some(sender) = sender else { return unknown() };
    let reached = flood(fabric, mfts, mlid, sender).reached;
    // Hops from every switch to `target` over ACTIVE switch-to-switch cables.
    let links = |g: Guid| -> Vec<(u8, Guid)> {
        fabric.node(g).map_or_else(Vec::new, |n| {
            n.ports
                .iter()
                .filter(|p| p.number != 0 && p.info.state == PortState::Active)
                .filter_map(|p| {
                    p.remote.filter(|(r, _)| fabric.node(*r).is_some_and(|n| n.node_type == NodeType::Switch)).map(|(r, _)| (p.number, r))
                })
                .collect()
        })
    };
    let mut hops: BTreeMap<Guid, usize> = BTreeMap::from([(target, 0)]);
    let mut queue = VecDeque::from([target]);
    while let Some(at) = queue.pop_front() {
        let d = hops[&at];
        for (_, next) in links(at) {
            if let std::collections::btree_map::Entry::Vacant(e) = hops.entry(next) {
                e.insert(d + 1);
                queue.push_back(next);
            }
        }
    }
    let Some((&near, &d)) = reached.iter().filter_map(|g| hops.get_key_value(g)).min_by_key(|(g, d)| (**d, **g)) else { return unknown() };
    let Some((port, toward)) = links(near).into_iter().find(|(_, r)| hops.get(r).is_some_and(|h| *h + 1 == d)) else { return unknown() };
    let switch = |g: Guid| fabric.node(g).map_or_else(|| g.to_string(), node_name);
    format!("{}'s MFT entry for MLID 0x{mlid:04x} lacks port {port} (toward {})", switch(near), switch(toward))
}

/// The groups the MFTs draw, for a fabric read without the SA's member records: every MLID
/// some switch's entry lists, its members the CA ports whose switch port that entry lists.
/// A member its own switch's entry dropped is not seen this way (ibdiagnet reads the SA's
/// MCMemberRecords for that); a hole anywhere else on the tree is.
pub fn groups_from_mfts(fabric: &Fabric, mfts: &Mfts) -> Vec<Group> {
    let mut members: BTreeMap<u16, BTreeSet<(Guid, u8)>> = BTreeMap::new();
    for ((switch, mlid), ports) in mfts {
        let Some(node) = fabric.node(*switch) else { continue };
        for port in ports.iter().filter(|&&p| p != 0) {
            let Some((peer, peer_port)) = node.port(*port).and_then(|p| p.remote) else { continue };
            if fabric.node(peer).is_some_and(|n| n.node_type != NodeType::Switch) {
                members.entry(*mlid).or_default().insert((peer, peer_port));
            }
        }
    }
    members.into_iter().map(|(mlid, members)| Group { mlid, mgid: String::new(), members }).collect()
}

#[cfg(test)]
#[path = "mcast/tests.rs"]
mod tests;
