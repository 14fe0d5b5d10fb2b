//! `fabric.mcast` and `fabric.vl` from tables read live off the simulated switches, one
//! OpenSM run for all of it (`-s 0`: it routes once and leaves what the helper changes).
//!
//! ibsim answers MulticastForwardingTable, SLtoVLMappingTable and VLArbitrationTable
//! (ibsim/sim_mad.c: do_multicastforwtbl, do_sl2vl, do_vlarb), with its defaults (sim_net.c:
//! SL i to VL i, VL0 weighted in the high-priority table and VL1..7 in the low one on its
//! 8-VL ports). Nothing in the simulator joins a multicast group (there is no IPoIB), so
//! OpenSM's MFTs are empty: the test writes a group's tree with `ibsim_set mft`, then opens a
//! hole in it. ibsim's console `Error "NODE" 100 0x18` drops every VLArbitrationTable SMP to
//! a switch: those ports are said "not answered", not passed.

use super::harness::{errors, Sim};
use super::route::{ibsim_set, of, set, tree_net};

#[test]
fn multicast_trees_and_vl_tables_read_live() {
    let helper = ibsim_set();
    let mut sim = Sim::start("qos", &tree_net());
    sim.start_sm_with(None, 0, &["-R", "minhop", "-s", "0"]);
    sim.wait_settled();
    let doc = sim.json(&[]);
    for id in ["fabric.mcast", "fabric.vl", "fabric.creditloop"] {
        assert!(of(&doc, id).is_empty(), "healthy: no {id} on ibsim's and OpenSM's defaults: {:#?}", of(&doc, id));
    }
    // A group at MLID 0xc001 spanning the four hosts through spine1.
    for (node, ports) in [("leaf1", "1,2,7"), ("leaf2", "1,2,7"), ("spine1", "1,2")] {
        set(&sim, &helper, &["mft", node, "0xc001", ports]);
    }
    let doc = sim.json(&[]);
    assert!(of(&doc, "fabric.mcast").is_empty(), "a whole tree: {:#?}", of(&doc, "fabric.mcast"));
    // spine1 forgets leaf2: hostC and hostD are reached from nobody on leaf1.
    set(&sim, &helper, &["mft", "spine1", "0xc001", "1"]);
    let doc = sim.json(&[]);
    let mcast = of(&doc, "fabric.mcast");
    let subjects: Vec<&str> = mcast.iter().map(|f| f.2.as_str()).collect();
    assert_eq!(subjects, vec!["hostC[1]", "hostD[1]"], "{mcast:#?}");
    let said: Vec<&str> =
        doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "fabric.mcast").filter_map(|f| f["message"].as_str()).collect();
    assert!(said[0].contains("MLID 0xc001) does not reach member hostC[1] from hostA[1], hostB[1]"), "{said:#?}");
    assert!(said[0].contains("spine1's MFT entry for MLID 0xc001 lacks port 2 (toward leaf2)"), "{said:#?}");
    assert!(errors(&doc).iter().all(|e| e.0 == "fabric.mcast"), "nothing else blamed: {:#?}", errors(&doc));
    set(&sim, &helper, &["mft", "spine1", "0xc001", "1,2"]);

    // leaf2's port to hostC gives VL 1 no weight: SL 1 is never sent there.
    set(&sim, &helper, &["vlarb", "leaf2", "1", "1", "0"]);
    let doc = sim.json(&[]);
    assert_eq!(of(&doc, "fabric.vl"), vec![("fabric.vl".into(), "error".into(), "leaf2[1]".into())], "{:#?}", of(&doc, "fabric.vl"));
    let msg = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "fabric.vl").and_then(|f| f["message"].as_str()).unwrap().to_string();
    assert!(msg.starts_with("leaf2[1] maps SL 1 -> VL 1 to VLs its VL arbitration gives no weight"), "{msg}");
    assert!(errors(&doc).iter().all(|e| e.0 == "fabric.vl"), "nothing else blamed: {:#?}", errors(&doc));

    // leaf2 stops answering VLArbitrationTable: said, not passed (and not blamed).
    sim.console("Error \"leaf2\" 100 0x18");
    let doc = sim.json(&["--timeout-ms", "200", "--retries", "0"]);
    let vl = of(&doc, "fabric.vl");
    assert_eq!(vl.len(), 1, "{vl:#?}");
    assert_eq!(vl[0].1, "warning", "{vl:#?}");
    let msg = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "fabric.vl").and_then(|f| f["message"].as_str()).unwrap().to_string();
    assert!(msg.starts_with("VLArbitrationTable not answered by leaf2[1]") && msg.contains("not judged"), "{msg}");
    assert!(errors(&doc).is_empty(), "{:#?}", errors(&doc));
}
