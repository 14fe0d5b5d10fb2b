//! `fabric.route` and `fabric.pkey` against a two-tier fat tree routed by OpenSM (minhop, updn,
//! ftree), then with a table broken behind the SM by `examples/ibsim_set.rs` (one Set SMP):
//! a forwarding hole, a loop, a partition key missing on one end of a cable.
//!
//! OpenSM runs with `-s 0` (no periodic sweep) where a table is changed: it routes once and
//! does not rewrite what the helper broke, yet stays master (`--once` would exit, and the
//! subnet would have no SM to answer SMInfo: a `fabric.sm` error in every run).

use super::harness::{errors, finding, findings, Sim};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The helper, built into this test binary's target directory if it is not there yet.
pub(super) fn ibsim_set() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).expect("target/debug/deps/THIS").to_path_buf();
    let helper = target.join("debug/examples/ibsim_set");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--example", "ibsim_set", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .status()
        .expect("run cargo to build examples/ibsim_set");
    assert!(built.success() && helper.exists(), "cannot build {}", helper.display());
    helper
}

/// Two leaves under two spines (leaf ports 7 and 8 up), two hosts per leaf.
pub(super) fn tree_net() -> String {
    "width=15\n\n\
     Hca 2 \"hostA\"\n[1] \"leaf1\"[1]\n\n\
     Switch 8 \"spine1\"\n[1] \"leaf1\"[7]\n[2] \"leaf2\"[7]\n\n\
     Switch 8 \"spine2\"\n[1] \"leaf1\"[8]\n[2] \"leaf2\"[8]\n\n\
     Switch 8 \"leaf1\"\n[1] \"hostA\"[1]\n[2] \"hostB\"[1]\n[7] \"spine1\"[1]\n[8] \"spine2\"[1]\n\n\
     Switch 8 \"leaf2\"\n[1] \"hostC\"[1]\n[2] \"hostD\"[1]\n[7] \"spine1\"[2]\n[8] \"spine2\"[2]\n\n\
     Hca 2 \"hostB\"\n[1] \"leaf1\"[2]\n\n\
     Hca 2 \"hostC\"\n[1] \"leaf2\"[1]\n\n\
     Hca 2 \"hostD\"\n[1] \"leaf2\"[2]\n"
        .into()
}

pub(super) fn of(doc: &Value, id: &str) -> Vec<(String, String, String)> {
    findings(doc).into_iter().filter(|f| f.0 == id).collect()
}

fn lid_of(doc: &Value, description: &str) -> u64 {
    doc["nodes"].as_array().unwrap().iter().find(|n| n["description"] == description).and_then(|n| n["lid"].as_u64()).expect("the host's LID")
}

pub(super) fn set(sim: &Sim, helper: &Path, args: &[&str]) -> String {
    let out = sim.tool(helper.to_str().unwrap(), args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "ibsim_set {args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("ibsim_set: {}", stdout.trim());
    stdout
}

#[test]
fn healthy_routes_under_minhop_updn_and_ftree() {
    for engine in ["minhop", "updn", "ftree"] {
        let mut sim = Sim::start(&format!("routes-{engine}"), &tree_net());
        sim.start_sm_with(None, 0, &["-R", engine]);
        sim.wait_settled();
        let doc = sim.json(&[]);
        let routes = &doc["routes"];
        let logs = sim.log("osm0/opensm.log") + &sim.log("osm0/stdout");
        let used: Vec<&str> = logs.lines().filter(|l| l.to_lowercase().contains("routing") || l.contains(engine)).take(4).collect();
        eprintln!("-R {engine}: {used:?}\nroutes: {routes}");
        assert_eq!(
            (routes["hosts"].as_u64(), routes["pairs"].as_u64(), routes["walked"].as_u64()),
            (Some(4), Some(12), Some(12)),
            "{engine}: {routes}"
        );
        assert!(routes["seed"].is_null(), "every pair walked, no sample");
        assert_eq!(
            (routes["depth"].as_u64(), routes["longest_route"].as_u64(), routes["switches_with_tables"].as_u64()),
            (Some(2), Some(3), Some(4))
        );
        assert!(routes["mads"].as_u64().unwrap() >= 4, "{routes}");
        let uplinks = routes["uplinks"].as_array().unwrap();
        assert_eq!(uplinks.len(), 2, "both leaves have two uplinks: {routes}");
        for leaf in uplinks {
            assert_eq!(leaf["destinations"], 2, "{engine}: each leaf routes both remote hosts up: {leaf}");
        }
        assert!(findings(&doc).iter().all(|f| f.0 == "fabric.link.speed"), "{engine}: {:#?}", findings(&doc));
        let text = String::from_utf8_lossy(&sim.fabcheck(&["fabric"]).stdout).to_string();
        assert!(text.contains("Routes: 12 host pairs walked (every pair) through 4 switch forwarding tables"), "{text}");
    }
}

#[test]
fn a_forwarding_entry_changed_behind_the_sm_is_a_hole_then_a_loop() {
    let helper = ibsim_set();
    let mut sim = Sim::start("route-break", &tree_net());
    sim.start_sm_with(None, 0, &["-R", "minhop", "-s", "0"]);
    sim.wait_settled();
    let doc = sim.json(&[]);
    assert!(of(&doc, "fabric.route").is_empty(), "{:#?}", findings(&doc));
    let lid_c = lid_of(&doc, "hostC").to_string();
    // A hole: leaf1 forgets hostC's LID.
    let said = set(&sim, &helper, &["lft", "leaf1", &lid_c, "255"]);
    let up: u8 = said.split("port ").nth(1).and_then(|s| s.split(' ').next()).and_then(|p| p.parse().ok()).expect("the old entry");
    assert!(up == 7 || up == 8, "leaf1 sent hostC's LID up to a spine: {said}");
    let doc = sim.json(&[]);
    assert_eq!(of(&doc, "fabric.route"), vec![("fabric.route".into(), "error".into(), "leaf1".into())], "{:#?}", findings(&doc));
    let msg = finding(&doc, "fabric.route", "leaf1")["message"].as_str().unwrap().to_string();
    assert!(msg.contains(&format!("no route (forwarding entry 0xFF) to LID {lid_c} (hostC[1])")) && msg.contains("2 of 12 host pairs"), "{msg}");
    assert!(errors(&doc).iter().all(|e| e.0 == "fabric.route"), "nothing else blamed: {:#?}", errors(&doc));
    // A loop: leaf1 sends it up again, and that spine sends it back down to leaf1 (its port 1).
    set(&sim, &helper, &["lft", "leaf1", &lid_c, &up.to_string()]);
    let spine = if up == 7 { "spine1" } else { "spine2" };
    set(&sim, &helper, &["lft", spine, &lid_c, "1"]);
    let doc = sim.json(&[]);
    let route = of(&doc, "fabric.route");
    assert_eq!(route.len(), 1, "{:#?}", findings(&doc));
    assert_eq!(route[0].1, "error");
    let subject = &route[0].2;
    assert!(subject == &format!("leaf1 -> {spine}") || subject == &format!("{spine} -> leaf1"), "{subject}");
    let msg = finding(&doc, "fabric.route", subject)["message"].as_str().unwrap().to_string();
    assert!(msg.starts_with(&format!("packets to LID {lid_c} (hostC[1]) loop through")), "{msg}");
    assert!(errors(&doc).iter().all(|e| e.0 == "fabric.route"), "nothing else blamed: {:#?}", errors(&doc));
}

#[test]
fn a_partition_key_changed_on_a_switch_port_is_named() {
    let helper = ibsim_set();
    let mut sim = Sim::start("pkey", &tree_net());
    sim.start_sm_with(None, 0, &["-s", "0"]);
    sim.wait_settled();
    let doc = sim.json(&[]);
    assert!(of(&doc, "fabric.pkey").is_empty(), "{:#?}", findings(&doc));
    // leaf2's port to hostD now holds partition 0x0001 instead of the default.
    set(&sim, &helper, &["pkey", "leaf2", "2", "0", "0x8001"]);
    let doc = sim.json(&[]);
    let pkey = of(&doc, "fabric.pkey");
    assert!(pkey.iter().all(|f| f.2 == "leaf2[2] <-> hostD[1]"), "{pkey:#?}");
    assert_eq!(errors(&doc), vec![("fabric.pkey".into(), "error".into(), "leaf2[2] <-> hostD[1]".into())], "{:#?}", findings(&doc));
    let said: Vec<&str> =
        doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "fabric.pkey").filter_map(|f| f["message"].as_str()).collect();
    assert!(said.iter().any(|m| m.contains("hostD[1] holds P_Key 0xffff (the default partition) that its switch port leaf2[2] lacks")), "{said:#?}");
}

#[test]
fn a_hole_on_one_lmc_path_names_that_lid_and_switch() {
    let helper = ibsim_set();
    let mut sim = Sim::start("route-lmc", &tree_net());
    // LMC 2: each host port owns four LIDs, each routed apart.
    sim.start_sm_with(None, 0, &["-R", "minhop", "-l", "2", "-s", "0"]);
    sim.wait_settled();
    let doc = sim.json(&[]);
    assert!(of(&doc, "fabric.route").is_empty(), "{:#?}", findings(&doc));
    let base = lid_of(&doc, "hostC");
    assert_eq!(base % 4, 0, "OpenSM aligns an LMC 2 range on four LIDs: {base}");
    // leaf1 forgets the third LID of hostC's range; the base LID still routes.
    let third = (base + 2).to_string();
    set(&sim, &helper, &["lft", "leaf1", &third, "255"]);
    let doc = sim.json(&[]);
    assert_eq!(of(&doc, "fabric.route"), vec![("fabric.route".into(), "error".into(), "leaf1".into())], "{:#?}", findings(&doc));
    let msg = finding(&doc, "fabric.route", "leaf1")["message"].as_str().unwrap().to_string();
    assert!(msg.contains(&format!("no route (forwarding entry 0xFF) to LID {third} (hostC[1], LMC path 3 of 4)")), "{msg}");
    assert!(msg.contains("2 of 48 routes (host pairs times LMC paths)"), "{msg}");
    assert!(errors(&doc).iter().all(|e| e.0 == "fabric.route"), "nothing else blamed: {:#?}", errors(&doc));
}

/// Five switches in a ring (port 2 to the next, port 3 to the previous), one host on each.
fn ring_net() -> String {
    let mut net = String::from("width=15\n\n");
    for i in 0..5 {
        let (next, prev) = ((i + 1) % 5, (i + 4) % 5);
        net.push_str(&format!(
            "Switch 8 \"sw{i}\"\n[1] \"h{i}\"[1]\n[2] \"sw{next}\"[3]\n[3] \"sw{prev}\"[2]\n\nHca 2 \"h{i}\"\n[1] \"sw{i}\"[1]\n\n"
        ));
    }
    net
}

#[test]
fn a_ring_routed_by_minhop_has_credit_loops_and_by_updn_none() {
    for engine in ["minhop", "updn"] {
        let mut sim = Sim::start(&format!("ring-{engine}"), &ring_net());
        // updn needs a root on a ring (it finds none by itself and routes nothing): sw0.
        let roots = sim.path("roots");
        let before = sim.json(&[]);
        let sw0 =
            before["nodes"].as_array().unwrap().iter().find(|n| n["description"] == "sw0").and_then(|n| n["guid"].as_str()).expect("sw0's GUID");
        std::fs::write(&roots, format!("{sw0}\n")).unwrap();
        let extra: &[&str] = if engine == "updn" { &["-R", engine, "-a", &roots] } else { &["-R", engine] };
        sim.start_sm_with(None, 0, extra);
        sim.wait_settled();
        let doc = sim.json(&[]);
        let loops = of(&doc, "fabric.creditloop");
        eprintln!("-R {engine}: {loops:#?}");
        if engine == "minhop" {
            assert_eq!(loops.len(), 2, "one loop each way round the ring: {:#?}", findings(&doc));
            let msgs: Vec<&str> =
                doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "fabric.creditloop").filter_map(|f| f["message"].as_str()).collect();
            assert!(msgs.iter().any(|m| m.contains("5 links") && m.contains("sw0[2] -> sw1[3]") && m.contains("sw4[2] -> sw0[3]")), "{msgs:#?}");
            assert!(msgs.iter().any(|m| m.contains("sw1[3] -> sw0[2]")), "{msgs:#?}");
        } else {
            assert!(loops.is_empty(), "updn is deadlock-free: {:#?}", findings(&doc));
        }
        assert!(errors(&doc).iter().all(|e| e.0 == "fabric.creditloop"), "{engine}: nothing else blamed: {:#?}", errors(&doc));
    }
}
