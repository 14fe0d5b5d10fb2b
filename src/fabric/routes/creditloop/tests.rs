//! Credit loops on constructed rings: five switches in a ring routed shortest-path (what
//! OpenSM's minhop does on a ring) close a loop each way round; the same ring routed as a line
//! (what up/down routing does: it never turns down-then-up) has none.

use super::*;
use crate::fabric::discovery::model::{LocalView, Node, Port};
use crate::mad::attributes::PortInfo;

const N: u64 = 5;

fn info(lid: u16) -> PortInfo {
    PortInfo { lid, ..crate::fabric::discovery::fixture::hdr() }
}

fn sw(i: u64) -> Guid {
    Guid(0x10 * (i + 1))
}

fn host(i: u64) -> Guid {
    Guid(0x1000 + i)
}

/// Switch i (LID i+1): port 1 to host i (LID 10+i), port 2 to switch i+1, port 3 to switch i-1.
fn ring() -> Fabric {
    let mut nodes = Vec::new();
    for i in 0..N {
        let port = |number: u8, remote: Option<(Guid, u8)>| Port { number, guid: sw(i), lid: (i + 1) as u16, info: info(0), remote, counters: None };
        let mut ports = vec![port(0, None)];
        ports[0].info.lid = (i + 1) as u16;
        ports.push(port(1, Some((host(i), 1))));
        ports.push(port(2, Some((sw((i + 1) % N), 3))));
        ports.push(port(3, Some((sw((i + N - 1) % N), 2))));
        nodes.push(Node { guid: sw(i), node_type: NodeType::Switch, description: format!("sw{i}"), num_ports: 3, ports });
        let hp = Port { number: 1, guid: host(i), lid: (10 + i) as u16, info: info((10 + i) as u16), remote: Some((sw(i), 1)), counters: None };
        nodes.push(Node { guid: host(i), node_type: NodeType::Ca, description: format!("h{i}"), num_ports: 1, ports: vec![hp] });
    }
    Fabric {
        local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 10, sm_lid: 1, state: PortState::Active },
        nodes,
        master: None,
        others: vec![],
        gaps: vec![],
        counters_read: true,
    }
}

/// Forwarding tables from `port_of(at, to)`: the out port at switch `at` towards host `to`.
fn routed(port_of: impl Fn(u64, u64) -> u8) -> Tables {
    let mut t = Tables { read: true, ..Tables::default() };
    for at in 0..N {
        let mut lft = Lft { ports: vec![Lft::NONE; 64] };
        lft.ports[(at + 1) as usize] = 0;
        for to in 0..N {
            lft.ports[(10 + to) as usize] = port_of(at, to);
        }
        t.lfts.insert(sw(at), lft);
    }
    t
}

/// Shortest path: on a ring of five every switch two away has one shortest way round.
fn minhop(at: u64, to: u64) -> u8 {
    match (to + N - at) % N {
        0 => 1,
        1 | 2 => 2,
        _ => 3,
    }
}

#[test]
fn a_ring_routed_shortest_path_has_a_credit_loop_each_way_round() {
    let fabric = ring();
    let found = judge(&fabric, &routed(minhop), &Sl2Vl::new());
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().all(|f| f.id == FindingId::FabricCreditloop && f.severity == Severity::Error));
    assert_eq!(
        found[0].message,
        "credit loop on VL 0: the routes make these 5 links wait on each other in a cycle: sw0[2] -> sw1[3], sw1[2] -> sw2[3], sw2[2] -> sw3[3], \
         sw3[2] -> sw4[3], sw4[2] -> sw0[3]; under load every buffer on it can fill and the fabric stops moving on them"
    );
    assert_eq!(found[0].subject.to_string(), "sw0[2] -> sw1[3]");
    assert!(found[1].message.contains("sw0[3] -> sw4[2], sw4[3] -> sw3[2]"), "{}", found[1].message);
}

#[test]
fn the_same_ring_routed_up_and_down_has_none() {
    // The cable sw4 - sw0 is never used: routes run along the line sw0 .. sw4.
    let line = |at: u64, to: u64| {
        if to == at {
            1
        } else if to > at {
            2
        } else {
            3
        }
    };
    let fabric = ring();
    let g = graph(&fabric, &routed(line), &Sl2Vl::new(), 0);
    assert!(g.edges.len() >= 8, "the line's channels are in the graph: {g:?}");
    assert!(judge(&fabric, &routed(line), &Sl2Vl::new()).is_empty());
}

#[test]
fn channels_are_on_the_vl_the_sl2vl_tables_give() {
    // Every switch maps every SL to VL 2 between any two ports: the loops are on VL 2 only.
    let mut sl2vl = Sl2Vl::new();
    for i in 0..N {
        for inp in 0..=3u8 {
            for out in 1..=3u8 {
                let map = [2u8; 16];
                sl2vl.insert((sw(i), inp, out), map);
            }
        }
    }
    let g = graph(&ring(), &routed(minhop), &sl2vl, 0);
    assert!(!g.edges.is_empty() && g.edges.keys().all(|c| c.2 == 2), "{g:?}");
    let found = judge(&ring(), &routed(minhop), &sl2vl);
    assert_eq!(found.len(), 2);
    assert!(found[0].message.starts_with("credit loop on VL 2:"), "{}", found[0].message);
}

#[test]
fn a_forwarding_loop_is_left_to_fabric_route() {
    // sw0 sends host 2 clockwise to sw1, and sw1 sends it back: packets to it never arrive
    // (fabric.route's loop); no credit loop is made of it. The rest is routed as a line.
    let line = |at: u64, to: u64| {
        if to == at {
            1
        } else if to > at {
            2
        } else {
            3
        }
    };
    let mut tables = routed(line);
    tables.lfts.get_mut(&sw(1)).unwrap().ports[12] = 3;
    assert!(judge(&ring(), &tables, &Sl2Vl::new()).is_empty());
}

#[test]
fn every_sl_is_walked_and_a_loop_on_several_vls_is_said_once() {
    // SL i to VL i (OpenSM's default): the ring's two loops are on every VL, said once each.
    let mut sl2vl = Sl2Vl::new();
    let map: [u8; 16] = std::array::from_fn(|sl| if sl == 15 { 7 } else { sl as u8 });
    for i in 0..5 {
        for (inp, out) in [(1, 2), (1, 3), (2, 3), (3, 2), (2, 1), (3, 1)] {
            sl2vl.insert((sw(i), inp, out), map);
        }
    }
    assert_eq!(distinct_sls(&sl2vl).len(), 15, "SL 15 goes where SL 7 does");
    assert_eq!(distinct_sls(&Sl2Vl::new()), vec![0]);
    let found = judge(&ring(), &routed(minhop), &sl2vl);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].message.starts_with("credit loop on VLs 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14: "), "{}", found[0].message);
    let line = |at: u64, to: u64| {
        if to == at {
            1
        } else if to > at {
            2
        } else {
            3
        }
    };
    assert!(judge(&ring(), &routed(line), &sl2vl).is_empty());
}
