//! `pair --paths N` and `mesh --paths N` against fake agents (`fake_cluster`): N labelled QPs per
//! bandwidth test, each path's figures in the document (valid against docs/schemas), and a path
//! below half its siblings' median named by its UDP source port as `pair.path`.

use super::fake_cluster::*;
use super::pair_fake::run_pair;
use std::time::Duration;

/// The UDP source port of path `k` as the kernel derives it from fabcheck's label.
fn port(k: u32) -> u64 {
    u64::from(fabcheck::model::paths::flow_label_to_udp_sport(fabcheck::model::paths::flow_label(k)))
}

#[test]
fn paths_8_reports_each_path_and_names_only_the_slow_ones_port() {
    let knobs = vec![Knobs { slow_path: Some(5), ..Knobs::default() }, Knobs::default()];
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw,send_lat", "--direction", "ab", "--paths", "8"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "a bad path is an error: {doc:#}");
    let bw = doc["results"].as_array().unwrap().iter().find(|r| r["test"] == "write_bw").expect("write_bw ran");
    assert_eq!(bw["qps"], 8, "{bw:#}");
    let paths = bw["paths"].as_array().expect("paths in the result");
    assert_eq!(paths.len(), 8);
    for (k, p) in paths.iter().enumerate() {
        assert_eq!(p["udp_sport"].as_u64(), Some(port(k as u32)), "{p}");
        assert_eq!(p["flow_label"].as_u64(), Some(u64::from(fabcheck::model::paths::flow_label(k as u32))));
        assert!(p["gbps"].as_f64().is_some_and(|g| g > 0.0));
        assert!(p["retransmits"].is_null(), "no per-QP counter is read: null, not absent");
    }
    let lat = doc["results"].as_array().unwrap().iter().find(|r| r["test"] == "send_lat").expect("send_lat ran");
    assert!(lat.get("paths").is_none() && lat["qps"] == 1, "a ping-pong is one flow: {lat:#}");
    let findings: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.path").collect();
    assert_eq!(findings.len(), 1, "{doc:#}");
    let text = format!("{} {}", findings[0]["message"], findings[0]["remedy"]);
    assert!(text.contains(&port(5).to_string()), "{text}");
    for k in (0..8).filter(|&k| k != 5) {
        assert!(!text.contains(&port(k).to_string()), "path {k}'s port {} is good: {text}", port(k));
    }
    assert_eq!(findings[0]["action"], "contact-fabric-team", "{:#}", findings[0]);
    let file = std::env::temp_dir().join(format!("fabcheck-pair-paths-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
    super::schemas::assert_valid("pair --paths 8", std::slice::from_ref(&file));
    let _ = std::fs::remove_file(&file);
}

#[test]
fn paths_on_healthy_paths_names_none_and_paths_is_refused_beside_qps_and_out_of_range() {
    let cluster = FakeCluster::start(vec![Knobs::default(); 2], Duration::ZERO);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw", "--direction", "ab", "--paths", "4"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_eq!(doc["results"][0]["paths"].as_array().map(Vec::len), Some(4), "{doc:#}");
    for extra in [&["--paths", "4", "--qps", "2"][..], &["--paths", "0"], &["--paths", "65"], &["--paths", "2", "--cm"]] {
        let mut args = vec!["--tests", "write_bw"];
        args.extend_from_slice(extra);
        let out = run_pair([&ep[0], &ep[1]], &args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn mesh_passes_paths_to_every_pair_and_judges_each() {
    let knobs = vec![Knobs { slow_path: Some(2), ..Knobs::default() }, Knobs::default(), Knobs::default()];
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let out = run_fabcheck(&["mesh", &ep[0], &ep[1], &ep[2], "--tests", "write_bw", "--paths", "4", "--json"]);
    let doc = super::json(&out);
    let pairs = doc["pairs"].as_array().expect("pair records");
    assert_eq!(pairs.len(), 3, "{doc:#}");
    // Each pair judged on its own (pair's verdict, pair.path included): the pairs fake00
    // measures (its side has the slow path) fail, the other passes.
    let slow_side = ep[0].as_str();
    for p in pairs {
        let paths = p["results"][0]["paths"].as_array().unwrap_or_else(|| panic!("paths in every pair's result: {p:#}"));
        assert_eq!(paths.len(), 4);
        let measured_by_slow = p["a"] == slow_side;
        assert_eq!(p["verdict"], if measured_by_slow { "fail" } else { "pass" }, "{p:#}");
        let slowest = paths.iter().map(|q| q["gbps"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
        assert_eq!(paths[2]["gbps"].as_f64() == Some(slowest) && measured_by_slow, measured_by_slow, "{p:#}");
    }
    // The mesh fails where its pairs did: each failed pair is a link suspect naming path 2's
    // UDP source port, and the pair that passed is not named.
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    assert_eq!(doc["verdict"], "fail");
    let port = pairs.iter().find(|p| p["a"] == slow_side).unwrap()["results"][0]["paths"][2]["udp_sport"].to_string();
    let suspects = doc["suspects"].as_array().expect("suspects");
    let named: Vec<&str> = suspects.iter().filter(|s| s["kind"] == "link").map(|s| s["subject"].as_str().unwrap()).collect();
    let failed: Vec<String> =
        pairs.iter().filter(|p| p["verdict"] == "fail").map(|p| format!("{}<->{}", p["a"].as_str().unwrap(), p["b"].as_str().unwrap())).collect();
    assert_eq!(named.len(), failed.len(), "{suspects:#?}");
    for f in &failed {
        let s = suspects.iter().find(|s| s["subject"] == f.as_str()).unwrap_or_else(|| panic!("{f} named: {suspects:#?}"));
        assert!(s["reason"].as_str().unwrap().contains(&port), "{s}");
    }
}
