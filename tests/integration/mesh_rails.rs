//! `mesh --rails` against the fake 8-NIC nodes of `rails` (issue #29 item 4): four hosts of 8
//! rails each, rail k of a host paired only with rail k of the others. One degraded NIC is one
//! `rail` suspect naming `HOST/DEV`; every rail of one host degraded is that host's `node`. The
//! simulator of `benches/mesh-scale.sh` (`examples/mesh_sim.rs --rails N`) is run here too.

use super::mesh_patterns::mesh_sim;
use super::rails::{start, Knobs, HANG_GUARD};
use serde_json::Value;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const RAILS: usize = 8;

/// Four fake nodes `n1`..`n4`, `n{slow_host}` with `knobs`.
fn nodes(slow_host: usize, knobs: Knobs) -> Vec<String> {
    (1..=4).map(|i| start(&format!("n{i}"), if i == slow_host { knobs.clone() } else { Knobs::default() })).collect()
}

fn mesh(endpoints: &[String], extra: &[&str]) -> Output {
    super::output_within(
        Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .arg("mesh")
            .args(endpoints)
            // Both directions: a fake node is slow where it sends, as a degraded NIC is either way.
            .args(["--tests", "write_bw", "--direction", "both", "--iters", "1000000"])
            .args(extra)
            .env_remove("FABCHECK_TOKEN")
            .env_remove("FABCHECK_FORMAT"),
        HANG_GUARD,
        "fabcheck mesh --rails",
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn suspects(doc: &Value) -> Vec<(String, String)> {
    doc["suspects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["kind"].as_str().unwrap().to_string(), s["subject"].as_str().unwrap().to_string()))
        .collect()
}

/// Every pair record pairs rail k with rail k and says so.
fn assert_rail_k_with_rail_k(doc: &Value) {
    let pairs = doc["pairs"].as_array().unwrap();
    assert!(pairs.len() >= 6 * RAILS, "every rail of the 6 host pairs: {}", pairs.len());
    for p in pairs {
        let k = p["rail"].as_u64().unwrap_or_else(|| panic!("a rail on every record: {p}"));
        for end in ["a", "b"] {
            assert!(p[end].as_str().unwrap().ends_with(&format!("/mlx5_{k}")), "rail {k} pairs mlx5_{k} with mlx5_{k}: {p}");
        }
        assert_ne!(p["a"].as_str().unwrap().split('/').next(), p["b"].as_str().unwrap().split('/').next(), "two hosts: {p}");
    }
}

#[test]
fn one_degraded_nic_is_a_rail_suspect_and_nothing_else_is_blamed() {
    let hosts = nodes(3, Knobs { slow: Some("mlx5_5".into()), ..Knobs::default() });
    let csv = std::env::temp_dir().join(format!("fabcheck-mesh-rails-{}.csv", std::process::id()));
    let html = csv.with_extension("html");
    let out = mesh(&hosts, &["--rails", "auto", "--json", "--csv", csv.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    assert_eq!(suspects(&doc), [("rail".to_string(), "n3/mlx5_5".to_string())]);
    let endpoints = doc["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 4 * RAILS);
    assert_eq!((endpoints[0].as_str(), endpoints[RAILS * 2 + 5].as_str()), (Some("n1/mlx5_0"), Some("n3/mlx5_5")));
    assert_rail_k_with_rail_k(&doc);
    let first: Vec<&Value> = doc["pairs"].as_array().unwrap().iter().filter(|p| p["retest"] != true).collect();
    assert_eq!(first.len(), 6 * RAILS, "all-pairs over the 4 hosts, every rail of each host pair");
    let text = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    assert!(page.contains("n3/mlx5_5") && page.contains("n1/mlx5_0"), "the heat map's rows are the rails");
    assert!(page.contains("one NIC of a node bad while its other rails are fine"), "the rail suspect explained");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("a,b,rail,test,direction,size,value,unit,verdict,pass,error"));
    assert!(lines.any(|l| l.contains("n3/mlx5_5,") && l.split(',').nth(2) == Some("5")), "{text}");
}

#[test]
fn every_rail_of_one_host_degraded_is_a_node_suspect() {
    let hosts = nodes(2, Knobs { all_slow: true, ..Knobs::default() });
    let out = mesh(&hosts, &["--rails", "auto", "--json"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    assert_eq!(suspects(&doc), [("node".to_string(), "n2".to_string())]);
    let reason = doc["suspects"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("every rail bad (8 of 8)"), "{reason}");
    assert_rail_k_with_rail_k(&doc);
}

#[test]
fn healthy_rails_pass_and_prom_and_junit_label_the_rail() {
    let hosts = nodes(0, Knobs::default());
    let out = mesh(&hosts, &["--rails", "4", "--json"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", stderr(&out));
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(doc["endpoints"].as_array().unwrap().len(), 4 * 4, "--rails 4: the first 4 rails of each host");
    // A shift round loads every rail of every host at once, still rail k with rail k.
    let shift = mesh(&hosts, &["--rails", "auto", "--json", "--pattern", "shift", "--rounds", "1"]);
    let doc = super::json(&shift);
    assert_eq!(shift.status.code(), Some(0), "{doc:#}\n{}", stderr(&shift));
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2 * RAILS, "one shift round over 4 hosts: 2 host pairs, every rail of each");
    let busy: std::collections::BTreeSet<&str> = pairs.iter().flat_map(|p| [p["a"].as_str().unwrap(), p["b"].as_str().unwrap()]).collect();
    assert_eq!(busy.len(), 4 * RAILS, "every rail of every host in the round");
    for p in pairs {
        let k = p["rail"].as_u64().unwrap();
        assert!(p["a"].as_str().unwrap().ends_with(&format!("/mlx5_{k}")) && p["b"].as_str().unwrap().ends_with(&format!("/mlx5_{k}")), "{p}");
    }
    let prom = mesh(&hosts, &["--rails", "4", "--format", "prom"]);
    let prom = String::from_utf8_lossy(&prom.stdout);
    for k in 0..4 {
        assert!(prom.contains(&format!("a=\"n1/mlx5_{k}\",b=\"n2/mlx5_{k}\",rail=\"{k}\",test=\"write_bw\"")), "rail {k}: {prom}");
    }
    assert!(prom.contains("mesh_suspects{kind=\"rail\"} 0"), "{prom}");
    // The human matrix: rail k's cells measured, cells across rails `.` (never run), not `fail`.
    let human = mesh(&hosts, &["--rails", "2"]);
    let text = String::from_utf8_lossy(&human.stdout);
    let row = text.lines().find(|l| l.starts_with("n1/mlx5_0 ")).unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row.split_whitespace().skip(1).take(8).collect();
    assert_eq!(cells.iter().filter(|c| **c == ".").count(), 4, "{text}");
    assert!(!text.contains("fail "), "{text}");
    let junit = mesh(&hosts, &["--rails", "4", "--format", "junit"]);
    let junit = String::from_utf8_lossy(&junit.stdout);
    assert!(junit.contains("name=\"rail 3: n1/mlx5_3 &lt;-&gt; n2/mlx5_3"), "{junit}");
}

#[test]
fn rails_with_a_device_an_old_agent_or_a_rail_count_mismatch_is_exit_2() {
    let hosts = nodes(4, Knobs { old: true, ..Knobs::default() });
    let out = mesh(&hosts, &["--rails", "auto"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("predates --rails"), "{}", stderr(&out));
    let short = nodes(2, Knobs { devices: Some(4), ..Knobs::default() });
    let out = mesh(&short, &["--rails", "auto"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("has 8 rails") && stderr(&out).contains("has 4"), "{}", stderr(&out));
    let with_device = [format!("{}/mlx5_0", hosts[0]), hosts[1].clone()];
    let out = mesh(&with_device, &["--rails", "auto"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--rails picks each host's devices"), "{}", stderr(&out));
}

/// A host that cannot be asked for its rails is listed unreachable on every rail (as `mesh`
/// lists any endpoint it cannot reach), and the other hosts' rails still run.
#[test]
fn a_host_that_cannot_say_its_rails_is_unreachable_on_every_rail_and_the_rest_runs() {
    let hosts = nodes(2, Knobs::default());
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let out = mesh(&[hosts[0].clone(), hosts[1].clone(), format!("tcp://{gone}")], &["--rails", "auto", "--json"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    let unreachable = doc["unreachable"].as_array().unwrap();
    assert_eq!(unreachable.len(), 8, "{unreachable:?}");
    for (k, u) in unreachable.iter().enumerate() {
        assert!(u["endpoint"].as_str().unwrap().ends_with(&format!("/rail {k}")), "{u}");
        assert!(u["error"].as_str().unwrap().contains(&gone.to_string()), "names the host: {u}");
    }
    let ran = doc["pairs"].as_array().unwrap().iter().filter(|p| p["error"].is_null()).count();
    assert!(ran >= 8, "the two reachable hosts' rails ran: {}", doc["pairs"]);
}

/// A rail-optimized fabric as ibnetdiscover writes it: rail k of every host (`nH mlx5_k`, as
/// rdma-ndd describes the CA) on leaf `rail{k}-leaf`, each leaf with two spine uplinks.
fn rail_optimized_topology(hosts: usize) -> String {
    let mut text = String::new();
    for spine in 0..2 {
        text += &format!("Switch\t64 \"S-00000000000f000{spine}\"\t\t# \"spine{spine}\" enhanced port 0 lid {} lmc 0\n", 1000 + spine);
        for k in 0..RAILS {
            text += &format!("[{}]\t\"S-00000000000a000{k}\"[{}]\t\t# \"rail{k}-leaf\" lid {} 4xNDR\n", k + 1, 33 + spine, 900 + k);
        }
        text += "\n";
    }
    for k in 0..RAILS {
        text += &format!("Switch\t64 \"S-00000000000a000{k}\"\t\t# \"rail{k}-leaf\" enhanced port 0 lid {} lmc 0\n", 900 + k);
        for h in 1..=hosts {
            let guid = h * 16 + k;
            text += &format!("[{h}]\t\"H-{guid:016x}\"[1]({:x}) \t\t# \"n{h} mlx5_{k}\" lid {} 4xNDR\n", guid + 1, guid);
        }
        for spine in 0..2 {
            text += &format!("[{}]\t\"S-00000000000f000{spine}\"[{}]\t\t# \"spine{spine}\" lid {} 4xNDR\n", 33 + spine, k + 1, 1000 + spine);
        }
        text += "\n";
    }
    text
}

/// With the topology, each rail endpoint sits on its own NIC's leaf: rail 5 slow on every host
/// is rail 5's leaf switch, not four NICs; one degraded NIC is still that NIC.
#[test]
fn with_the_topology_a_rail_slow_on_every_host_is_its_leaf_switch() {
    let topology = std::env::temp_dir().join(format!("fabcheck-mesh-rails-{}.topo", std::process::id()));
    std::fs::write(&topology, rail_optimized_topology(4)).unwrap();
    let slow_rail = Knobs { slow: Some("mlx5_5".into()), ..Knobs::default() };
    let hosts: Vec<String> = (1..=4).map(|i| start(&format!("n{i}"), slow_rail.clone())).collect();
    let out = mesh(&hosts, &["--rails", "auto", "--json", "--topology", topology.to_str().unwrap()]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    assert_eq!(suspects(&doc), [("switch".to_string(), "rail5-leaf".to_string())], "{:#} {}", doc["suspects"], doc["pattern"]);
    assert_eq!(doc["pattern"]["leaves"], 4 * RAILS, "every rail endpoint placed on its leaf: {}", doc["pattern"]);
    assert_rail_k_with_rail_k(&doc);
    // One degraded NIC on a healthy fabric: still that NIC.
    let hosts = nodes(3, slow_rail);
    let out = mesh(&hosts, &["--rails", "auto", "--json", "--topology", topology.to_str().unwrap()]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    assert_eq!(suspects(&doc), [("rail".to_string(), "n3/mlx5_5".to_string())]);
    let _ = std::fs::remove_file(&topology);
}

#[test]
fn mesh_sim_nodes_of_rails_name_a_slow_rail_and_a_slow_node() {
    let mut o = mesh_sim::Options { agents: 6, rails: 4, ..mesh_sim::Options::default() };
    o.slow_rails.insert((2, 1));
    o.slow_nodes.insert(4);
    let sim = mesh_sim::Sim::bind(o);
    let endpoints = sim.endpoints.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || sim.run(&flag));
    let out = mesh(&endpoints, &["--rails", "auto", "--json"]);
    stop.store(true, Ordering::SeqCst);
    thread.join().unwrap();
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    let mut found = suspects(&doc);
    found.sort();
    assert_eq!(found, [("node".to_string(), "n00004".to_string()), ("rail".to_string(), "n00002/mlx5_1".to_string())]);
    assert_eq!(doc["endpoints"].as_array().unwrap().len(), 6 * 4);
}
