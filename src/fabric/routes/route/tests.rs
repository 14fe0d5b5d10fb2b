//! Route walks on constructed fabrics and tables: a healthy two-tier tree, then one fault
//! each (a hole, a dead port, a loop, a misdelivery, a detour, a lopsided leaf, a table not
//! read). Each fault test first checks the same fabric without the fault has no finding.

use super::*;
use crate::fabric::discovery::model::{LocalView, Node, Port, Tables};
use crate::fabric::judgement::Cabling;
use crate::fabric::routes::judge;
use crate::mad::attributes::{Guid, NodeType, PortInfo, SpeedSet, WidthSet};
use crate::outcome::Severity;
use crate::port::{PhysState, PortState, Speed, Width};

fn info(lid: u16, state: PortState) -> PortInfo {
    PortInfo {
        lid,
        sm_lid: 1,
        lmc: 0,
        capability_mask: 0,
        state,
        phys_state: if state == PortState::Down { PhysState::Polling } else { PhysState::LinkUp },
        width_active: Width::X4,
        width_enabled: WidthSet(2),
        width_supported: WidthSet(2),
        speed_active: Speed::Hdr,
        speed_enabled: SpeedSet(Speed::Hdr.raw()),
        speed_supported: SpeedSet(Speed::Hdr.raw()),
    }
}

fn switch(guid: u64, name: &str, lid: u16, ports: u8) -> Node {
    let ports = (0..=ports)
        .map(|n| Port {
            number: n,
            guid: Guid(guid),
            lid,
            info: info(if n == 0 { lid } else { 0 }, if n == 0 { PortState::Active } else { PortState::Down }),
            remote: None,
            counters: None,
        })
        .collect();
    Node { guid: Guid(guid), node_type: NodeType::Switch, description: name.into(), num_ports: 8, ports }
}

fn ca(guid: u64, name: &str, lid: u16) -> Node {
    let port = Port { number: 1, guid: Guid(guid + 1), lid, info: info(lid, PortState::Down), remote: None, counters: None };
    Node { guid: Guid(guid), node_type: NodeType::Ca, description: name.into(), num_ports: 1, ports: vec![port] }
}

struct Net {
    f: Fabric,
    t: Tables,
}

impl Net {
    fn new(nodes: Vec<Node>) -> Net {
        let f = Fabric {
            local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 10, sm_lid: 1, state: PortState::Active },
            nodes,
            master: None,
            others: vec![],
            gaps: vec![],
            counters_read: true,
        };
        Net { f, t: Tables { read: true, ..Tables::default() } }
    }

    fn cable(&mut self, (a, pa): (u64, u8), (b, pb): (u64, u8)) {
        for (x, px, y, py) in [(a, pa, b, pb), (b, pb, a, pa)] {
            let port = self.f.nodes.iter_mut().find(|n| n.guid == Guid(x)).unwrap().ports.iter_mut().find(|p| p.number == px).unwrap();
            port.info.state = PortState::Active;
            port.info.phys_state = PhysState::LinkUp;
            port.remote = Some((Guid(y), py));
        }
    }

    fn route(&mut self, switch: u64, entries: &[(u16, u8)]) {
        let lft = self.t.lfts.entry(Guid(switch)).or_insert_with(|| Lft { ports: vec![Lft::NONE; 64] });
        for &(lid, port) in entries {
            lft.ports[usize::from(lid)] = port;
        }
    }

    fn judge(&self) -> (judge::RouteFigures, Vec<(String, Severity, String, String)>) {
        let (figures, findings) = judge::judge(&self.f, &self.t, 7, Cabling::Even);
        (figures, findings.into_iter().map(|f| (f.id.to_string(), f.severity, f.subject.to_string(), f.message)).collect())
    }
}

const L1: u64 = 0x10;
const L2: u64 = 0x20;
const S1: u64 = 0x30;
const S2: u64 = 0x40;
const L3: u64 = 0x50;

/// leaf1 (LID 1) and leaf2 (LID 2) under spine1 (LID 3) and spine2 (LID 4), ports 5 and 6;
/// hostA (10) and hostB (11) on leaf1 ports 1-2, hostC (12) and hostD (13) on leaf2; routed
/// as minhop would, each leaf spreading the remote hosts over both spines.
fn tree() -> Net {
    let mut net = Net::new(vec![
        switch(L1, "leaf1", 1, 8),
        switch(L2, "leaf2", 2, 8),
        switch(S1, "spine1", 3, 8),
        switch(S2, "spine2", 4, 8),
        ca(0x100, "hostA", 10),
        ca(0x200, "hostB", 11),
        ca(0x300, "hostC", 12),
        ca(0x400, "hostD", 13),
    ]);
    net.cable((L1, 1), (0x100, 1));
    net.cable((L1, 2), (0x200, 1));
    net.cable((L2, 1), (0x300, 1));
    net.cable((L2, 2), (0x400, 1));
    for (leaf, down) in [(L1, 1), (L2, 2)] {
        net.cable((leaf, 5), (S1, down));
        net.cable((leaf, 6), (S2, down));
    }
    net.route(L1, &[(1, 0), (2, 5), (3, 5), (4, 6), (10, 1), (11, 2), (12, 5), (13, 6)]);
    net.route(L2, &[(1, 5), (2, 0), (3, 5), (4, 6), (10, 5), (11, 6), (12, 1), (13, 2)]);
    for s in [S1, S2] {
        net.route(s, &[(1, 1), (2, 2), (10, 1), (11, 1), (12, 2), (13, 2)]);
    }
    net.route(S1, &[(3, 0)]);
    net.route(S2, &[(4, 0)]);
    net
}

#[test]
fn a_healthy_tree_walks_every_pair_without_findings() {
    let (figures, findings) = tree().judge();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!((figures.hosts, figures.pairs, figures.walked, figures.seed), (4, 12, 12, None));
    assert_eq!((figures.depth, figures.longest_route, figures.switches_with_tables), (2, 3, 4));
    let leaf1 = figures.uplinks.iter().find(|u| u.leaf == "leaf1").expect("leaf1 has two uplinks");
    let loads: Vec<(u8, &str, usize)> = leaf1.ports.iter().map(|p| (p.port, p.to.as_str(), p.destinations)).collect();
    assert_eq!(loads, vec![(5, "spine1[1]", 1), (6, "spine2[1]", 1)]);
    assert_eq!(leaf1.destinations, 2);
}

#[test]
fn a_missing_entry_is_a_hole_at_that_switch() {
    let mut net = tree();
    net.route(L1, &[(12, Lft::NONE)]);
    let (_, findings) = net.judge();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let (id, severity, subject, message) = &findings[0];
    assert_eq!((id.as_str(), *severity, subject.as_str()), ("fabric.route", Severity::Error, "leaf1"));
    assert_eq!(
        message,
        "leaf1 has no route (forwarding entry 0xFF) to LID 12 (hostC[1]): packets to them are dropped there; 2 of 12 host pairs walked end here"
    );
}

/// The tree with LMC 1 on hostC (LIDs 12 and 14): its second path routed over the other
/// spine, as OpenSM spreads an LMC range.
fn tree_with_lmc() -> Net {
    let mut net = tree();
    let host_c = net.f.nodes.iter_mut().find(|n| n.guid == Guid(0x300)).unwrap();
    host_c.ports[0].info.lid = 14;
    host_c.ports[0].info.lmc = 1;
    host_c.ports[0].lid = 14;
    net.route(L1, &[(14, 6), (15, 5)]);
    net.route(L2, &[(14, 1), (15, 1)]);
    for s in [S1, S2] {
        net.route(s, &[(14, 2), (15, 2)]);
    }
    net
}

#[test]
fn every_lid_of_an_lmc_range_is_walked_and_a_hole_on_one_path_named() {
    let (figures, findings) = tree_with_lmc().judge();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!((figures.hosts, figures.pairs, figures.walked), (4, 12, 12));
    // The base LID's route is whole; the second path's entry at leaf1 is a hole.
    let mut net = tree_with_lmc();
    net.route(L1, &[(15, Lft::NONE)]);
    let (_, findings) = net.judge();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let (id, severity, subject, message) = &findings[0];
    assert_eq!((id.as_str(), *severity, subject.as_str()), ("fabric.route", Severity::Error, "leaf1"));
    assert_eq!(
        message,
        "leaf1 has no route (forwarding entry 0xFF) to LID 15 (hostC[1], LMC path 2 of 2): packets to them are dropped there; \
         2 of 15 routes (host pairs times LMC paths) walked end here"
    );
}

#[test]
fn an_entry_past_the_table_top_is_a_hole_too() {
    let mut net = tree();
    net.t.lfts.get_mut(&Guid(S2)).unwrap().ports.truncate(12);
    let (_, findings) = net.judge();
    assert_eq!(findings.iter().map(|f| (f.1, f.2.as_str())).collect::<Vec<_>>(), vec![(Severity::Error, "spine2")], "{findings:#?}");
    assert!(findings[0].3.contains("LID 13 (hostD[1])"), "{findings:#?}");
}

#[test]
fn an_entry_through_a_down_port_is_a_hole_naming_the_port() {
    let mut net = tree();
    let port = net.f.nodes.iter_mut().find(|n| n.guid == Guid(S1)).unwrap().ports.iter_mut().find(|p| p.number == 2).unwrap();
    port.info.state = PortState::Down;
    let (_, findings) = net.judge();
    let subjects: Vec<&str> = findings.iter().map(|f| f.2.as_str()).collect();
    assert_eq!(subjects, vec!["spine1[2]"], "{findings:#?}");
    assert!(
        findings[0].3.starts_with("spine1 forwards LID 12 (hostC[1]) out of port 2, which is DOWN: packets to them are dropped; 2 of 12"),
        "{}",
        findings[0].3
    );
}

#[test]
fn tables_that_send_a_lid_back_and_forth_are_a_loop() {
    let mut net = tree();
    net.route(S1, &[(12, 1)]);
    let (_, findings) = net.judge();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!((findings[0].1, findings[0].2.as_str()), (Severity::Error, "leaf1 -> spine1"));
    assert!(findings[0].3.starts_with("packets to LID 12 (hostC[1]) loop through leaf1 -> spine1"), "{}", findings[0].3);
    // Entered from leaf2's side (hostD to hostA through a loop of leaf2 and spine2) it is named
    // from its lowest GUID all the same.
    let mut net = tree();
    net.route(S2, &[(11, 2)]);
    let (_, findings) = net.judge();
    assert_eq!(findings.iter().map(|f| f.2.as_str()).collect::<Vec<_>>(), vec!["leaf2 -> spine2"]);
}

#[test]
fn a_lid_delivered_to_the_wrong_host_is_named() {
    let mut net = tree();
    net.route(L2, &[(12, 2)]);
    let (_, findings) = net.judge();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].2, "leaf2");
    assert!(findings[0].3.contains("sends LID 12 (hostC[1]) to hostD[1], which does not own them"), "{}", findings[0].3);
}

/// A third leaf (hostE, LID 14) lets a route detour: leaf1 -> spine1 -> leaf3 -> spine2 -> leaf2.
#[test]
fn a_route_longer_than_the_tree_is_a_warning() {
    let mut net = tree();
    net.f.nodes.push(switch(L3, "leaf3", 5, 8));
    net.f.nodes.push(ca(0x500, "hostE", 14));
    net.cable((L3, 1), (0x500, 1));
    net.cable((L3, 5), (S1, 3));
    net.cable((L3, 6), (S2, 3));
    net.route(L3, &[(5, 0), (14, 1), (10, 5), (11, 5), (12, 6), (13, 6)]);
    for s in [S1, S2] {
        net.route(s, &[(14, 3)]);
    }
    net.route(L1, &[(14, 5)]);
    net.route(L2, &[(14, 5)]);
    assert!(net.judge().1.is_empty(), "{:#?}", net.judge().1);
    net.route(S1, &[(12, 3)]);
    let (figures, findings) = net.judge();
    assert_eq!(findings.iter().map(|f| (f.1, f.2.as_str())).collect::<Vec<_>>(), vec![(Severity::Warning, "routes")], "{findings:#?}");
    assert!(
        findings[0].3.contains("longer than a 2-tier tree needs (3 switches at most)")
            && findings[0].3.contains("crosses 5 switches: leaf1 -> spine1 -> leaf3 -> spine2 -> leaf2"),
        "{}",
        findings[0].3
    );
    assert_eq!(figures.longest_route, 5);
}

#[test]
fn a_leaf_sending_most_destinations_up_one_cable_is_a_warning() {
    let mut net = tree();
    net.f.nodes.push(ca(0x600, "hostE", 15));
    net.f.nodes.push(ca(0x700, "hostF", 16));
    net.cable((L2, 3), (0x600, 1));
    net.cable((L2, 4), (0x700, 1));
    net.route(L2, &[(15, 3), (16, 4)]);
    for s in [S1, S2] {
        net.route(s, &[(15, 2), (16, 2)]);
    }
    net.route(L1, &[(15, 5), (16, 6)]);
    assert!(net.judge().1.is_empty(), "balanced 2:2: {:#?}", net.judge().1);
    net.route(L1, &[(13, 5), (16, 5)]);
    let (figures, findings) = net.judge();
    assert_eq!(findings.iter().map(|f| (f.1, f.2.as_str())).collect::<Vec<_>>(), vec![(Severity::Warning, "leaf1[5]")], "{findings:#?}");
    assert_eq!(findings[0].3, "leaf1 sends 4 of its 4 remote host destinations up one cable (port 5 to spine1[1]) of 2 uplinks (port 5 4, port 6 0)");
    let leaf1 = figures.uplinks.iter().find(|u| u.leaf == "leaf1").unwrap();
    assert_eq!(leaf1.ports.iter().map(|p| p.destinations).collect::<Vec<_>>(), vec![4, 0]);
    // Where fabric.design already names uneven cabling, the same imbalance is said as info.
    let (_, explained) = judge::judge(&net.f, &net.t, 7, Cabling::Uneven);
    assert_eq!((explained[0].severity, explained[0].subject.to_string().as_str()), (Severity::Info, "leaf1[5]"));
    assert!(
        explained[0].message.ends_with(": expected while fabric.design names missing or uneven uplinks; fix those first"),
        "{}",
        explained[0].message
    );
}

#[test]
fn a_duplicate_lid_is_left_to_fabric_lid() {
    let mut net = tree();
    net.f.nodes.iter_mut().find(|n| n.description == "hostC").unwrap().ports[0].info.lid = 11;
    let (figures, findings) = net.judge();
    assert!(findings.is_empty(), "hostB and hostC share LID 11: not walked, not blamed on the routes: {findings:#?}");
    assert_eq!(figures.hosts, 2);
}

#[test]
fn a_switch_whose_table_was_not_read_is_said_not_guessed() {
    let mut net = tree();
    net.t.lfts.remove(&Guid(S2));
    net.t.lft_unread.push(Guid(S2));
    let (_, findings) = net.judge();
    assert_eq!(findings.iter().map(|f| (f.1, f.2.as_str())).collect::<Vec<_>>(), vec![(Severity::Warning, "spine2")], "{findings:#?}");
    assert!(findings[0].3.contains("LID 13 (hostD[1])") && findings[0].3.contains("was not read"), "{}", findings[0].3);
}

#[test]
fn every_pair_up_to_the_limit_then_a_seeded_sample() {
    let (all, sampled) = pairs(100, 1);
    assert_eq!((all.len(), sampled), (9900, false));
    let (a, sampled) = pairs(101, 42);
    assert!(sampled);
    assert_eq!(a.len(), MAX_PAIRS);
    assert!(a.iter().all(|&(i, j)| i != j && i < 101 && j < 101));
    assert_eq!(a.iter().collect::<BTreeSet<_>>().len(), MAX_PAIRS, "distinct pairs");
    assert_eq!(pairs(101, 42).0, a, "the same seed, the same sample");
    assert_ne!(pairs(101, 43).0, a);
    assert_eq!(pairs(0, 1).0.len() + pairs(1, 1).0.len(), 0);
}

#[test]
fn a_sample_says_its_seed() {
    // One switch, 102 hosts: 10,302 ordered pairs, above the limit.
    let mut nodes = vec![switch(L1, "star", 1, 110)];
    nodes.extend((0..102u16).map(|h| ca(0x1000 + u64::from(h) * 16, &format!("n{h:03}"), 10 + h)));
    let mut net = Net::new(nodes);
    for h in 0..102u16 {
        net.cable((L1, h as u8 + 1), (0x1000 + u64::from(h) * 16, 1));
    }
    net.t.lfts.insert(Guid(L1), Lft { ports: (0..256u16).map(|lid| if (10..112).contains(&lid) { (lid - 9) as u8 } else { Lft::NONE }).collect() });
    let (figures, findings) = judge::judge(&net.f, &net.t, 99, Cabling::Even);
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!((figures.hosts, figures.pairs, figures.walked, figures.seed), (102, 10_302, MAX_PAIRS, Some(99)));
    assert_eq!((figures.depth, figures.longest_route), (1, 1));
}

/// A loopback cable (a switch port cabled to another port of the same switch, as labs and
/// port burn-in leave them: NVIDIA's UFM lab, tests/fixtures/wild-fabrics) is no uplink. A
/// leaf with one real uplink and a loopback was judged as a leaf with three uplinks sending
/// every destination up one of them: a false warning.
#[test]
fn a_loopback_cable_is_no_uplink() {
    const A: u64 = 0x10;
    const B: u64 = 0x20;
    let mut nodes = vec![switch(A, "swA", 1, 8), switch(B, "swB", 2, 8), ca(0x100, "hostA", 10)];
    nodes.extend((0..6).map(|i| ca(0x200 + 0x10 * i, &format!("hostB{i}"), 20 + i as u16)));
    let mut net = Net::new(nodes);
    net.cable((A, 1), (B, 1));
    net.cable((A, 2), (A, 3));
    net.cable((A, 4), (0x100, 1));
    for i in 0..6u8 {
        net.cable((B, 2 + i), (0x200 + 0x10 * u64::from(i), 1));
        net.route(A, &[(20 + u16::from(i), 1)]);
        net.route(B, &[(20 + u16::from(i), 2 + i)]);
    }
    net.route(A, &[(1, 0), (2, 1), (10, 4)]);
    net.route(B, &[(1, 1), (2, 0), (10, 1)]);
    let (figures, findings) = net.judge();
    assert!(findings.is_empty(), "{findings:#?}");
    assert!(figures.uplinks.is_empty(), "each switch has one uplink: {:#?}", figures.uplinks);
    assert_eq!((figures.hosts, figures.walked), (7, 42));
}

/// A SHARP Aggregation Node (a CA on every Quantum switch with SHARP, port 41 on HDR: NVIDIA
/// Selene's fabrics, tests/fixtures/wild-fabrics) is no host: a spine with one is no leaf. Taken
/// for one, every switch of a SHARP fabric was a leaf: the tree read as 1 tier deep, and each
/// spine's links to its leaves judged as its "uplinks".
#[test]
fn an_aggregation_node_makes_no_spine_a_leaf() {
    let mut net = tree();
    for (spine, guid, lid) in [(S1, 0x900, 30), (S2, 0xa00, 31)] {
        net.f.nodes.push(ca(guid, "Mellanox Technologies Aggregation Node", lid));
        net.cable((spine, 7), (guid, 1));
        net.route(spine, &[(lid, 7)]);
    }
    net.route(S1, &[(31, 1)]);
    net.route(S2, &[(30, 1)]);
    net.route(L1, &[(30, 5), (31, 6)]);
    net.route(L2, &[(30, 5), (31, 6)]);
    let (figures, findings) = net.judge();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(figures.depth, 2);
    let leaves: Vec<&str> = figures.uplinks.iter().map(|u| u.leaf.as_str()).collect();
    assert_eq!(leaves, ["leaf1", "leaf2"]);
}

/// A switch without hosts hanging off the top of the tree (a management switch whose nodes are
/// not cabled yet) does not deepen the tree: routes run leaf to leaf. NVIDIA Selene's compute
/// fabric on ibsim read as 5 tiers deep (a three-tier tree) before the depth came from the
/// leaves' span.
#[test]
fn a_hostless_switch_off_the_top_does_not_deepen_the_tree() {
    let mut net = tree();
    net.f.nodes.push(switch(0x800, "mgmt-spine", 5, 8));
    net.f.nodes.push(switch(0x900, "mgmt-leaf", 6, 8));
    net.cable((S1, 7), (0x800, 1));
    net.cable((0x800, 2), (0x900, 1));
    let (figures, findings) = net.judge();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!((figures.depth, figures.longest_route), (2, 3));
}
