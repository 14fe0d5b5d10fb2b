//! `fabcheck pair` against two fake agents (`fake_cluster`) whose figures the test sets: the
//! verdict's thresholds, figures no link can carry, latency limits, the GID index.

use super::fake_cluster::*;
use std::process::Output;
use std::time::Duration;

/// One `fabcheck pair --json` between two endpoints (fake agents), under the hang guard's limit.
pub(crate) fn run_pair(endpoints: [&str; 2], extra: &[&str]) -> Output {
    let mut args = vec!["pair", endpoints[0], endpoints[1], "--json"];
    args.extend_from_slice(extra);
    run_fabcheck(&args)
}

#[test]
fn pair_threshold_90_fails_at_89_percent_with_exit_1_and_passes_at_91() {
    // 4X HDR: 200 Gb/s. 178 Gb/s is 89%, 182 Gb/s is 91%.
    for (gbps, want_exit, verdict) in [(178.0, 1, "fail"), (182.0, 0, "pass")] {
        let cluster = FakeCluster::start_at(vec![Knobs::default(); 2], Duration::ZERO, gbps);
        let ep = &cluster.endpoints;
        let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw", "--direction", "ab", "--threshold", "90"]);
        let doc = super::json(&out);
        assert_eq!(out.status.code(), Some(want_exit), "{gbps} Gb/s at --threshold 90: {doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(doc["schema"], "fabcheck.pair.v1");
        assert_eq!(doc["verdict"], verdict, "{doc:#}");
        let results = doc["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{doc:#}");
        assert_eq!((results[0]["test"].as_str(), results[0]["direction"].as_str()), (Some("write_bw"), Some("a->b")));
        let bw = results[0]["bw_gbps"].as_f64().unwrap();
        assert!((bw - gbps).abs() < 0.5, "bw_gbps {bw}, the fakes report {gbps}");
        let findings: Vec<(&str, &str)> =
            doc["findings"].as_array().unwrap().iter().map(|f| (f["id"].as_str().unwrap(), f["severity"].as_str().unwrap())).collect();
        if want_exit == 1 {
            assert_eq!(findings, [("pair.bw", "error")], "{doc:#}");
            let message = doc["findings"][0]["message"].as_str().unwrap();
            assert!(
                message.contains("89% of the 200 Gb/s link (needs ") && message.contains("90% of what the link's payload can carry"),
                "{message}"
            );
        } else {
            assert_eq!(findings, [], "{doc:#}");
        }
    }
    // The same 89% passes at the default threshold's neighbour --threshold 85.
    let cluster = FakeCluster::start_at(vec![Knobs::default(); 2], Duration::ZERO, 178.0);
    let out = run_pair([&cluster.endpoints[0], &cluster.endpoints[1]], &["--tests", "write_bw", "--direction", "ab", "--threshold", "85"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn impossible_figures_from_an_agent_are_a_protocol_error_not_a_pass() {
    // Regression (issue #27 item 14): an agent reporting 1e308 Gb/s passed every threshold,
    // and -5 Gb/s failed as a slow link; both are now a broken agent (exit 2, named).
    for gbps in [1e308, -5.0] {
        let cluster = FakeCluster::start_at(vec![Knobs::default(); 2], Duration::ZERO, gbps);
        let ep = &cluster.endpoints;
        let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw", "--direction", "ab"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{gbps} Gb/s: {err}");
        assert!(err.contains(&format!("it sent a bad message: it reported a peak_gbps of {gbps} Gb/s")), "{err}");
    }
}

#[test]
fn pair_max_latency_is_exit_1_above_and_0_at_the_limit() {
    // The fakes report a p50 of 1.9 us.
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "send_lat", "--direction", "ab", "--max-lat-us", "1.8"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!((doc["findings"][0]["id"].as_str(), doc["findings"][0]["severity"].as_str()), (Some("pair.latency"), Some("error")));
    assert_eq!(doc["results"][0]["lat_us"]["p50"].as_f64(), Some(LAT_P50_US));
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "send_lat", "--direction", "ab", "--max-lat-us", "1.9"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn gid_index_reaches_both_agents() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "send_lat", "--direction", "ab", "--gid-index", "3"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let targets = cluster.fabric.targets.lock().unwrap().clone();
    assert_eq!(targets.len(), 2, "one prepare per side: {targets:?}");
    assert!(targets.iter().all(|t| t.gid_index == Some(3)), "{targets:?}");
    assert_eq!(doc["a"]["gid_index"], 3, "{doc:#}");
    assert_eq!(doc["b"]["gid_index"], 3, "{doc:#}");
    // Without the flag the agents choose.
    let cluster = FakeCluster::healthy(2);
    let out = run_pair([&cluster.endpoints[0], &cluster.endpoints[1]], &["--tests", "send_lat", "--direction", "ab"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(cluster.fabric.targets.lock().unwrap().iter().all(|t| t.gid_index.is_none()));
}
