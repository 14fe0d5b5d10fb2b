//! A pair that is bad once and good on retest (`examples/mesh_sim.rs --flaky I:J`, scripted, not
//! waited for as noise) is a suspect of severity `warning`: the mesh passes unless `--fail-on
//! warning` (issue #28, "a flaky pair fails the run on noise").

use super::compare::{scratch, text, Sim};
use super::{fabcheck, json};

#[test]
fn a_pair_bad_once_and_good_on_retest_warns_and_fails_only_with_fail_on_warning() {
    let dir = scratch("flaky");
    let sim = Sim::start(&dir, "flaky", 4, &["--flaky", "1:2"]);
    let mut args = vec!["mesh", "--json", "--tests", "write_bw"];
    args.extend(sim.endpoints.iter().map(String::as_str));
    let out = fabcheck(&args);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "a flaky pair alone must not fail the mesh: {}", text(&out));
    assert_eq!(doc["verdict"], "pass");
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 1, "{suspects:#?}");
    let s = &suspects[0];
    assert_eq!((s["kind"].as_str(), s["severity"].as_str()), (Some("link"), Some("warning")), "{s}");
    assert!(s["reason"].as_str().unwrap().starts_with("flaky:"), "{s}");
    // The same run with --fail-on warning fails, in every format (a fresh simulator each time:
    // its flaky pair is slow only the first time it is measured).
    drop(sim);
    let sim = Sim::start(&dir, "strict", 4, &["--flaky", "1:2"]);
    let mut strict = vec!["mesh", "--json", "--fail-on", "warning", "--tests", "write_bw"];
    strict.extend(sim.endpoints.iter().map(String::as_str));
    let out = fabcheck(&strict);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(json(&out)["verdict"], "fail");
    drop(sim);
    let sim = Sim::start(&dir, "oneline", 4, &["--flaky", "1:2"]);
    let mut line = vec!["--format", "oneline", "--fail-on", "warning", "mesh", "--tests", "write_bw"];
    line.extend(sim.endpoints.iter().map(String::as_str));
    let out = fabcheck(&line);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("fabcheck mesh FAIL"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
