//! `fabcheck mesh --pattern ...` on rxe0: the four-endpoint mesh with every pattern. The
//! patterns' logic is tested on the host tier (`tests/integration/mesh_patterns.rs`); here each
//! one must run real pairs on a real device and produce a whole document.

use super::{fabcheck, json, require_rxe};
use std::collections::BTreeSet;

#[test]
fn mesh_of_four_endpoints_with_every_pattern() {
    let _serial = require_rxe();
    // shift on 4: shift 1 (two rounds of two pairs) then shift 2 (one round), every pair once.
    for (pattern, want_pairs) in [("shift", 6), ("ring", 4), ("random:2", 4), ("all-pairs", 6)] {
        let e = "localhost/rxe0";
        let out = fabcheck(&["mesh", e, e, e, e, "--pattern", pattern, "--seed", "3", "--tests", "write_bw,send_lat", "--iters", "200", "--json"]);
        // Four busy-polling agents share two emulated CPUs: latency outliers may be named, so
        // the verdict is not asserted; the pairs, the results and the document are.
        assert!(matches!(out.status.code(), Some(0) | Some(1)), "{pattern}: {}", String::from_utf8_lossy(&out.stderr));
        let doc = json(&out);
        assert_eq!(doc["schema"], "fabcheck.mesh.v1");
        assert_eq!(doc["pattern"]["name"], pattern);
        let first: Vec<&serde_json::Value> =
            doc["pairs"].as_array().unwrap().iter().filter(|p| p["retest"].is_null() && p["zoom"].is_null()).collect();
        let distinct: BTreeSet<(String, String)> = first.iter().map(|p| (p["a"].to_string(), p["b"].to_string())).collect();
        assert_eq!(distinct.len(), first.len(), "{pattern}: a pair measured twice in the first pass");
        // random:2 may draw a pair twice (measured once): at most 4.
        if pattern == "random:2" {
            assert!((2..=want_pairs).contains(&first.len()), "{pattern}: {} pairs", first.len());
        } else {
            assert_eq!(first.len(), want_pairs, "{pattern}");
        }
        for p in &first {
            let tests: Vec<&str> = p["results"].as_array().unwrap().iter().map(|r| r["test"].as_str().unwrap()).collect();
            assert_eq!(tests, ["write_bw", "send_lat"], "{pattern}: {p}");
        }
        for s in doc["suspects"].as_array().unwrap() {
            assert!(["node", "link", "config"].contains(&s["kind"].as_str().unwrap()), "{pattern}: {s}");
        }
    }
}
