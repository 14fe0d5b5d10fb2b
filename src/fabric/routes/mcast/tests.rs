//! Multicast trees on a constructed two-leaf fabric: the IPoIB broadcast group spanning four
//! hosts, then an MFT hole (one port missing) and a loop (a second spine in the tree).

use super::*;
use crate::fabric::discovery::model::{LocalView, Node, Port};
use crate::mad::attributes::PortInfo;
use crate::port::PortState;

const BROADCAST: &str = "ff12:401b:ffff:0000:0000:0000:ffff:ffff";
const MLID: u16 = 0xc000;

fn port(number: u8, guid: u64, remote: Option<(u64, u8)>) -> Port {
    let state = if remote.is_some() || number == 0 { PortState::Active } else { PortState::Down };
    let info = PortInfo { state, ..crate::fabric::discovery::fixture::hdr() };
    Port { number, guid: Guid(guid), lid: 0, info, remote: remote.map(|(g, p)| (Guid(g), p)), counters: None }
}

/// leaf1 (0x10: hostA port 1, hostB port 2) and leaf2 (0x20: hostC, hostD), port 7 up to
/// spine1 (0x30) ports 1 and 2, port 8 up to spine2 (0x40) ports 1 and 2.
fn fabric() -> Fabric {
    let switch = |guid: u64, name: &str, links: &[(u8, u64, u8)]| {
        let mut ports = vec![port(0, guid, None)];
        ports.extend(links.iter().map(|&(p, g, n)| port(p, guid, Some((g, n)))));
        Node { guid: Guid(guid), node_type: NodeType::Switch, description: name.into(), num_ports: 8, ports }
    };
    let ca = |guid: u64, name: &str, sw: u64, p: u8| Node {
        guid: Guid(guid),
        node_type: NodeType::Ca,
        description: name.into(),
        num_ports: 1,
        ports: vec![port(1, guid, Some((sw, p)))],
    };
    Fabric {
        local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 10, sm_lid: 1, state: PortState::Active },
        nodes: vec![
            switch(0x10, "leaf1", &[(1, 0x100, 1), (2, 0x200, 1), (7, 0x30, 1), (8, 0x40, 1)]),
            switch(0x20, "leaf2", &[(1, 0x300, 1), (2, 0x400, 1), (7, 0x30, 2), (8, 0x40, 2)]),
            switch(0x30, "spine1", &[(1, 0x10, 7), (2, 0x20, 7)]),
            switch(0x40, "spine2", &[(1, 0x10, 8), (2, 0x20, 8)]),
            ca(0x100, "hostA", 0x10, 1),
            ca(0x200, "hostB", 0x10, 2),
            ca(0x300, "hostC", 0x20, 1),
            ca(0x400, "hostD", 0x20, 2),
        ],
        master: None,
        others: vec![],
        gaps: vec![],
        counters_read: true,
    }
}

fn broadcast() -> Vec<Group> {
    let members = [0x100, 0x200, 0x300, 0x400].into_iter().map(|g| (Guid(g), 1)).collect();
    vec![Group { mlid: MLID, mgid: BROADCAST.into(), members }]
}

/// The tree through spine1, as an SM builds it.
fn tree() -> Mfts {
    let mut m = Mfts::new();
    m.insert((Guid(0x10), MLID), [1, 2, 7].into());
    m.insert((Guid(0x20), MLID), [1, 2, 7].into());
    m.insert((Guid(0x30), MLID), [1, 2].into());
    m
}

#[test]
fn a_whole_tree_reaches_every_member() {
    assert!(judge(&fabric(), &broadcast(), &tree()).is_empty());
}

#[test]
fn an_mft_hole_names_the_unreached_port() {
    let mut mfts = tree();
    mfts.get_mut(&(Guid(0x20), MLID)).unwrap().remove(&2);
    let found = judge(&fabric(), &broadcast(), &mfts);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].id, found[0].severity, found[0].subject.to_string()), (FindingId::FabricMcast, Severity::Error, "hostD[1]".into()));
    assert_eq!(
        found[0].message,
        format!(
            "multicast group {BROADCAST} (MLID 0xc000) does not reach member hostD[1] from hostA[1], hostB[1], hostC[1]: leaf2's MFT entry for MLID \
             0xc000 lacks port 2"
        )
    );
}

#[test]
fn a_second_spine_in_the_tree_is_a_loop() {
    let mut mfts = tree();
    mfts.get_mut(&(Guid(0x10), MLID)).unwrap().insert(8);
    mfts.get_mut(&(Guid(0x20), MLID)).unwrap().insert(8);
    mfts.insert((Guid(0x40), MLID), [1, 2].into());
    let found = judge(&fabric(), &broadcast(), &mfts);
    assert_eq!(found.len(), 1, "every member is still reached, but twice: {found:#?}");
    assert!(found[0].message.contains("loops"), "{}", found[0].message);
    // A group of one member has no tree to judge.
    let lone = vec![Group { mlid: MLID, mgid: BROADCAST.into(), members: [(Guid(0x100), 1)].into() }];
    assert!(judge(&fabric(), &lone, &Mfts::new()).is_empty());
}

#[test]
fn groups_drawn_from_the_mfts_and_a_hole_up_the_tree_named_where_it_is() {
    let groups = groups_from_mfts(&fabric(), &tree());
    assert_eq!(groups.len(), 1);
    assert_eq!((groups[0].mlid, groups[0].members.len()), (MLID, 4), "{groups:?}");
    assert!(judge(&fabric(), &groups, &tree()).is_empty());
    // spine1 forgets leaf2: hostC and hostD are reached from nobody on leaf1.
    let mut mfts = tree();
    mfts.get_mut(&(Guid(0x30), MLID)).unwrap().remove(&2);
    let groups = groups_from_mfts(&fabric(), &mfts);
    let found = judge(&fabric(), &groups, &mfts);
    let subjects: Vec<String> = found.iter().map(|f| f.subject.to_string()).collect();
    assert_eq!(subjects, vec!["hostC[1]", "hostD[1]"], "{found:#?}");
    assert_eq!(
        found[0].message,
        "multicast group (MLID 0xc000) does not reach member hostC[1] from hostA[1], hostB[1]: spine1's MFT entry for MLID 0xc000 lacks port 2 \
         (toward leaf2)"
    );
}
