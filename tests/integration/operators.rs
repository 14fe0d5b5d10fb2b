//! Issue #57: what a first-time SRE meets. A misspelled flag (exit 2 before any work) still
//! replaces `--output` and prints the `--format` document of an error, so a stale PASS never
//! survives; a mesh in which no test could run is exit 2 with one cause in every format.

use super::fake_cluster::{run_fabcheck, FakeCluster, Knobs};
use std::path::PathBuf;
use std::time::Duration;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-operators-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Issue #57 (and #58's oneline item): a misspelled flag used to exit 2 with nothing on stdout
/// and `--output` untouched, so yesterday's PASS stayed in the textfile.
#[test]
fn a_misspelled_flag_replaces_a_stale_pass_in_every_format() {
    let dir = scratch("typo");
    for (format, stale, says) in [
        ("prom", "fabcheck_verdict_pass 1\n", "fabcheck_up{command=\"check\"} 0"),
        ("oneline", "fabcheck check PASS\n", "fabcheck check ERROR: unexpected argument"),
        ("json", "{\"verdict\":\"pass\"}\n", "\"verdict\": \"error\""),
        ("junit", "<testsuites tests=\"1\" failures=\"0\" errors=\"0\"/>\n", "errors=\"1\""),
    ] {
        let file = dir.join(format!("out.{format}"));
        std::fs::write(&file, stale).unwrap();
        let out = run_fabcheck(&["check", "--format", format, "--output", file.to_str().unwrap(), "--jsno"]);
        assert_eq!(out.status.code(), Some(2), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("pass") && !text.contains("PASS"), "{format}: a stale PASS survived: {text}");
        assert!(text.contains(says), "{format}: {text}");
        // The tip names the flag meant.
        assert!(String::from_utf8_lossy(&out.stderr).contains("what to do: use --json"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Without --output the document goes to stdout, before the command is even known.
    let out = run_fabcheck(&["chekc", "--format", "oneline"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1, "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("fabcheck ERROR: unrecognized subcommand"), "{out:?}");
    // --help and --version are not errors: nothing is written.
    let file = dir.join("help.prom");
    std::fs::write(&file, "kept\n").unwrap();
    let out = run_fabcheck(&["check", "--format", "prom", "--output", file.to_str().unwrap(), "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept\n");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue #57: perftest's spellings of flags fabcheck lacks name the equivalent, or say there is none.
#[test]
fn an_unknown_perftest_flag_names_fabchecks_equivalent() {
    let out = run_fabcheck(&["pair", "a", "b", "--tos", "106"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tos is perftest's; fabcheck's equivalent is --tclass (-T)"), "{out:?}");
    let out = run_fabcheck(&["pair", "a", "b", "--rx-depth", "128"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("fabcheck has no equivalent"), "{out:?}");
}

/// Issue #57: a mesh whose agents answer but have no device used to deliver a failed matrix
/// (`verdict: fail`, `fabcheck_up 1`, two oneline lines) calling them UNREACHABLE.
#[test]
fn a_mesh_where_no_test_could_run_is_one_cause_in_every_format() {
    let knobs = vec![Knobs { no_device: true, ..Knobs::default() }; 3];
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep: Vec<&str> = cluster.endpoints.iter().map(String::as_str).collect();
    let mesh = |format: &str| {
        let mut args = vec!["mesh", "--no-progress", "--format", format];
        args.extend(&ep);
        let out = run_fabcheck(&args);
        assert_eq!(out.status.code(), Some(2), "{format}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !stdout.contains("UNREACHABLE") && !stderr.contains("UNREACHABLE"),
            "{format}: agents that answered called unreachable: {stdout}{stderr}"
        );
        assert!(stderr.contains("none of the 3 endpoints has a usable RDMA device"), "{format}: {stderr}");
        stdout
    };
    assert!(mesh("human").is_empty(), "no matrix of pairs that never ran");
    let line = mesh("oneline");
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("fabcheck mesh ERROR: no test could run"), "{line}");
    let doc: serde_json::Value = serde_json::from_str(&mesh("json")).unwrap();
    assert_eq!((doc["verdict"].as_str(), doc["schema"].as_str()), (Some("error"), Some("fabcheck.mesh.v1")));
    assert!(doc["error"]["cause"].as_str().unwrap().contains("no test could run"));
    let prom = mesh("prom");
    assert!(prom.contains("fabcheck_up{command=\"mesh\"} 0") && !prom.contains("fabcheck_up{command=\"mesh\"} 1"), "{prom}");
    let junit = mesh("junit");
    assert!(junit.contains("errors=\"1\"") && junit.contains("tests=\"1\""), "{junit}");
}

/// Issue #57: on a loaded host two pairs of a four-endpoint mesh showed ~8 ms latency and were
/// blamed as bad links; their loops saw the gaps between their iterations, and the mesh says so.
#[test]
fn a_mesh_says_a_preempted_pairs_latency_and_blames_no_link() {
    use super::fake_cluster::host;
    let mut knobs = vec![Knobs::default(); 4];
    knobs[0].preempted_with = Some(host(1));
    knobs[2].preempted_with = Some(host(3));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let mut args = vec!["mesh", "--no-progress", "--tests", "write_bw,send_lat"];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let out = run_fabcheck(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said: Vec<&str> = stdout.lines().filter(|l| l.starts_with("PREEMPTED")).collect();
    assert_eq!(said.len(), 2, "{stdout}");
    assert!(said.iter().all(|l| l.contains("latency not judged: preempted (30 gaps, 240 ms)")), "{stdout}");
    assert!(!stdout.contains("SUSPECT"), "{stdout}");
}

/// Issue #57: `compare` printed every unchanged figure and its oneline said only FAIL.
#[test]
fn compare_regressions_lists_only_what_regressed_and_oneline_names_the_first() {
    let dir = scratch("compare");
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    super::compare::large_mesh_doc(&old, 4, 1.0);
    super::compare::large_mesh_doc(&new, 4, 0.5);
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    let out = run_fabcheck(&["compare", "--regressions", old, new]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = said.lines().filter(|l| l.contains("<->") && !l.starts_with("regression:")).collect();
    assert_eq!(rows.len(), 12, "the bandwidth and message rate of each of the 6 pairs: {said}");
    assert!(rows.iter().all(|r| r.contains("write_bw") && r.contains("REGRESSION")), "{said}");
    // By default the unchanged latency figures are counted, not listed.
    let out = run_fabcheck(&["compare", old, new]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.lines().any(|l| l.contains("send_lat")), "{said}");
    assert!(said.contains("as in the baseline (not listed"), "{said}");
    let out = run_fabcheck(&["compare", "--regressions", "--format", "oneline", old, new]);
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.starts_with("fabcheck compare FAIL: ") && line.contains("pair.regression") && line.contains("write_bw"), "{line}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue #57: `sudo fabcheck bundle`'s remedy named `--sysfs-root`, which bundle refuses. Every
/// flag a remedy of bundle names must be one bundle accepts.
#[test]
fn bundles_remedy_names_only_flags_bundle_accepts() {
    let dir = scratch("bundle");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run_fabcheck(&["bundle", dir.join("out").to_str().unwrap(), "--from-root", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let remedy = stderr.lines().find(|l| l.contains("what to do:")).unwrap_or_else(|| panic!("{stderr}"));
    let help = String::from_utf8_lossy(&run_fabcheck(&["bundle", "--help"]).stdout).into_owned();
    for flag in remedy.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).filter(|w| w.starts_with("--")) {
        assert!(help.contains(flag), "the remedy names {flag}, which bundle does not take: {remedy}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue #57: the heat map had no date or version; a PASS summary did not count skipped checks.
#[test]
fn the_heat_map_is_stamped_and_the_summary_counts_skipped_checks() {
    let dir = scratch("stamp");
    let cluster = FakeCluster::healthy(3);
    let html = dir.join("mesh.html");
    let mut args = vec!["mesh", "--no-progress", "--html", html.to_str().unwrap()];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    let stamp = format!(" by fabcheck {} on ", env!("CARGO_PKG_VERSION"));
    let row = page.lines().find(|l| l.contains("<th>run</th>")).unwrap_or_else(|| panic!("no run row"));
    assert!(row.contains(&stamp) && row.contains("T") && row.contains("Z by"), "{row}");
    let fixture = super::fixtures_dir().join("ib-disabled");
    let out = run_fabcheck(&["check", "--sysfs-root", fixture.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    let skipped = said.lines().filter(|l| l.starts_with("skip ")).count();
    assert!(skipped > 0, "the fixture has skipped checks: {said}");
    let summary = said.lines().last().unwrap();
    assert!(summary.ends_with(&format!(", {skipped} skipped")), "{summary}");
    std::fs::remove_dir_all(&dir).ok();
}
