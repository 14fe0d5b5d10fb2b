//! Burn-in (issue #55): a pair stopped by SIGTERM in the middle of a long test writes the
//! document of the tests that finished (`--output` too) and leaves nothing running on either
//! node, against fake agents (`fake_cluster`) whose second test hangs.

use super::fake_cluster::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Polls `done` until it holds or `bound` passes (a generous bound for ordering, no timing).
fn wait_for(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < bound {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn a_pair_stopped_by_sigterm_writes_what_ran_and_leaves_no_agent_running() {
    // fake00 is the active end of `--direction ab`; its write_bw says `running`, then nothing.
    let knobs = vec![Knobs { hang_on: Some(fabcheck::model::TestKind::WriteBw), ..Knobs::default() }, Knobs::default()];
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let dir = std::env::temp_dir().join(format!("fabcheck-burn-in-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let output = dir.join("pair.json");
    let child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", &cluster.endpoints[0], &cluster.endpoints[1], "--json", "--tests", "send_lat,write_bw", "--direction", "ab"])
        .args(["--timeout", "600", "--output"])
        .arg(&output)
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // send_lat is over once both agents were prepared for write_bw (targets 3 and 4).
    let prepared = || cluster.fabric.targets.lock().unwrap().len() >= 4;
    assert!(wait_for(HANG_GUARD, prepared), "write_bw never started");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "killed by the signal? {:?} {err}", out.status);
    assert!(err.contains("interrupted by SIGTERM after 1 finished test(s)") && err.contains("the agents were told to stop"), "{err}");
    // The document of what ran, in the --output file: send_lat's result, and no pass.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    assert_eq!(doc["schema"], "fabcheck.pair.v1");
    assert_eq!(doc["verdict"], "fail", "an interrupted pair never passes: {doc:#}");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{doc:#}");
    assert_eq!(results[0]["test"], "send_lat");
    assert!(results[0]["lat_us"]["p50"].as_f64().is_some(), "{doc:#}");
    // Nothing left running: every agent session's channel was closed by the controller.
    assert!(
        wait_for(Duration::from_secs(30), || cluster.fabric.open.load(std::sync::atomic::Ordering::SeqCst) == 0),
        "an agent session is still open"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `--progress-json` records of a file, each checked against the contract's keys.
fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for r in &records {
        assert_eq!(r["schema"], "fabcheck.progress.v1", "{r}");
        assert!(r["t"].is_f64() && r["test"].is_string(), "{r}");
        assert!(r.get("gbps").is_some() && r.get("lat_us").is_some(), "{r}");
    }
    records
}

/// Each record valid against docs/schemas/fabcheck.progress.v1.json (a real validator, as
/// schemas.rs runs it).
fn valid_against_the_schema(dir: &std::path::Path, records: &[serde_json::Value]) {
    let files: Vec<std::path::PathBuf> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let path = dir.join(format!("record-{i}.json"));
            std::fs::write(&path, r.to_string()).unwrap();
            path
        })
        .collect();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/validate.py");
    let out = std::process::Command::new("/usr/bin/python3").arg(script).args(&files).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn report_every_1_over_a_10_s_pair_writes_ten_records_and_ten_lines() {
    // The fake agents send one `progress` per interval of the duration at once: counted, not timed.
    let cluster = FakeCluster::healthy(2);
    let dir = std::env::temp_dir().join(format!("fabcheck-report-every-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("progress.jsonl");
    let ep = &cluster.endpoints;
    let common = ["pair", &ep[0], &ep[1], "--tests", "write_bw,send_lat", "--direction", "ab", "-D", "10", "--report-every", "1"];
    let out = run_fabcheck(&[&common[..], &["--json", "--progress-json", file.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&file);
    valid_against_the_schema(&dir, &recs);
    let of = |test: &str| recs.iter().filter(|r| r["test"] == test).collect::<Vec<_>>();
    let (bw, lat) = (of("write_bw"), of("send_lat"));
    assert_eq!((bw.len(), lat.len()), (10, 10), "{recs:#?}");
    assert!(bw.iter().all(|r| r["gbps"].as_f64() == Some(NORMAL_GBPS) && r["lat_us"].is_null() && r["endpoint"] == ep[0].as_str()), "{bw:#?}");
    assert!(lat.iter().all(|r| r["lat_us"]["p50"].as_f64() == Some(LAT_P50_US) && r["gbps"].is_null()), "{lat:#?}");
    // JSON mode with a file: the records go there, and stdout is the one document.
    assert_eq!(super::json(&out)["schema"], "fabcheck.pair.v1");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Gb/s"), "{}", String::from_utf8_lossy(&out.stderr));
    // Human mode: a figure line per interval on stderr.
    let out = run_fabcheck(&common);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let bw_line = format!("write_bw a->b 65536 B {}: 190.00 Gb/s", ep[0]);
    assert_eq!(err.lines().filter(|l| l.contains(&bw_line)).count(), 10, "{err}");
    let lat_line = format!("send_lat a->b 2 B {}: p50 1.90 us", ep[0]);
    assert_eq!(err.lines().filter(|l| l.contains(&lat_line)).count(), 10, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_every_on_a_mesh_writes_each_pairs_intervals() {
    let cluster = FakeCluster::healthy(3);
    let dir = std::env::temp_dir().join(format!("fabcheck-mesh-report-every-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("progress.jsonl");
    let mut args = vec!["mesh", "--json", "--tests", "write_bw", "-D", "4", "--report-every", "2", "--progress-json", file.to_str().unwrap()];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&file);
    // 3 pairs, each direction of each pair (mesh's default `both`... as many tests as results),
    // two intervals per test.
    let doc = super::json(&out);
    let tests: usize = doc["pairs"].as_array().unwrap().iter().map(|p| p["results"].as_array().unwrap().len()).sum();
    assert!(tests >= 3, "{doc:#}");
    assert_eq!(recs.len(), 2 * tests, "{recs:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_every_is_bounded_and_needs_nothing_else_to_write_a_file() {
    let out = run_fabcheck(&["pair", "localhost", "localhost", "--report-every", "0.01"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--report-every 0.01: give at least 0.1"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run_fabcheck(&["pair", "localhost", "localhost", "--progress-json", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2), "--progress-json without --report-every");
    // 7 days is a burn-in's longest test; a second more is refused before any agent starts.
    let out = run_fabcheck(&["pair", "localhost", "localhost", "-D", "604801"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 604800 seconds (7 days)"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn validate_passes_clean_data_and_names_the_offset_of_a_changed_byte() {
    // write_bw a->b: B receives, and its agent checks. The fakes report what their check found.
    for (corrupt, exit) in [(false, 0), (true, 1)] {
        let knobs = vec![Knobs::default(), Knobs { corrupt, ..Knobs::default() }];
        let cluster = FakeCluster::start(knobs, Duration::ZERO);
        let ep = &cluster.endpoints;
        let out = run_fabcheck(&["pair", &ep[0], &ep[1], "--json", "--tests", "write_bw", "--direction", "ab", "--validate"]);
        let doc = super::json(&out);
        assert_eq!(out.status.code(), Some(exit), "{doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
        // The seed went to both agents.
        let data: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.data").collect();
        if corrupt {
            assert_eq!(data.len(), 1, "{doc:#}");
            assert_eq!(data[0]["severity"], "error");
            let m = data[0]["message"].as_str().unwrap();
            assert!(
                m.contains("write_bw a->b 65536 B: 1 of 5500 messages checked arrived changed")
                    && m.contains("message 812, offset 4100, bits 0b00010000"),
                "{m}"
            );
            assert_eq!(doc["verdict"], "fail");
        } else {
            assert!(data.is_empty(), "{doc:#}");
        }
    }
    // Nothing to check: refused before any agent starts.
    let out = run_fabcheck(&["pair", "localhost", "localhost", "--tests", "send_lat", "--validate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--validate checks send_bw, write_bw and read_bw"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// lat_under_load against fake agents whose load lifts the latency LOADED_FACTOR (5) times: the
/// result carries both phases and their ratio, `pair.loaded_latency` is an error at the default
/// 4x (exit 1) and an info at `--load-threshold 10` (exit 0), and every format says it.
#[test]
fn lat_under_load_is_judged_against_the_idle_latency_in_every_format() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let common = ["pair", &ep[0], &ep[1], "--tests", "lat_under_load"];
    let out = run_fabcheck(&[&common[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    let r = &doc["results"][0];
    assert_eq!((r["test"].as_str(), r["direction"].as_str(), r["size"].as_u64()), (Some("lat_under_load"), Some("a->b"), Some(2)), "{r:#}");
    let u = &r["under_load"];
    assert_eq!(u["idle_lat_us"]["p50"].as_f64(), Some(LAT_P50_US), "{r:#}");
    assert_eq!(r["lat_us"]["p50"].as_f64(), Some(LAT_P50_US * LOADED_FACTOR), "{r:#}");
    assert_eq!(
        (u["p99_ratio"].as_f64(), u["p50_ratio"].as_f64(), u["load_qps"].as_u64()),
        (Some(LOADED_FACTOR), Some(LOADED_FACTOR), Some(1)),
        "{r:#}"
    );
    assert!(u["load_gbps"].as_f64().is_some_and(|g| (g - NORMAL_GBPS).abs() < 1.0), "{r:#}");
    let found: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.loaded_latency").collect();
    assert_eq!(found.len(), 1, "{}", doc["findings"]);
    assert_eq!((found[0]["severity"].as_str(), found[0]["action"].as_str()), (Some("error"), Some("contact-fabric-team")), "{}", found[0]);
    assert!(found[0]["message"].as_str().unwrap().contains("above --load-threshold 4x"), "{}", found[0]);
    // Within a higher threshold: an info, and the pair passes.
    let out = run_fabcheck(&[&common[..], &["--json", "--load-threshold", "10"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    assert!(doc["findings"].as_array().unwrap().iter().any(|f| f["id"] == "pair.loaded_latency" && f["severity"] == "info"), "{doc:#}");
    // Human: both phases and the ratio on the test's line.
    let out = run_fabcheck(&common);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("lat_under_load") && l.contains("p99 5x idle")), "{text}");
    // oneline names the finding; prom has the two series and passes promtool; JUnit fails the case.
    let out = run_fabcheck(&[&common[..], &["--format", "oneline"]].concat());
    assert!(String::from_utf8_lossy(&out.stdout).contains("pair.loaded_latency"), "{}", String::from_utf8_lossy(&out.stdout));
    let out = run_fabcheck(&[&common[..], &["--format", "prom"]].concat());
    let page = String::from_utf8_lossy(&out.stdout).to_string();
    for series in ["fabcheck_latency_idle_p99_seconds{", "fabcheck_loaded_latency_ratio{"] {
        assert!(page.lines().any(|l| l.starts_with(series) && l.contains(r#"test="lat_under_load""#)), "no {series} in\n{page}");
    }
    assert!(page.lines().any(|l| l.starts_with("fabcheck_loaded_latency_ratio{") && l.ends_with(" 5")), "{page}");
    let (ok, said) = super::health_outputs::promtool_check(&page);
    assert!(ok && said.trim().is_empty(), "promtool check metrics says:\n{said}");
    let out = run_fabcheck(&[&common[..], &["--format", "junit"]].concat());
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(xml.contains(r#"classname="fabcheck.pair.lat_under_load""#) && xml.contains("above --load-threshold 4x</failure>"), "{xml}");
    // Refused before any work: --cm, a threshold under 1.
    let out = run_fabcheck(&[&common[..], &["--cm"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("without --cm"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(run_fabcheck(&[&common[..], &["--load-threshold", "0.5"]].concat()).status.code(), Some(2));
}

/// `--report-every` keeps the last interval in `--live-dir` while the run lasts and removes it
/// at the end: nothing of a finished run is left for the exporter to serve.
#[test]
fn the_live_state_of_a_report_every_run_is_gone_when_it_ends() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let dir = std::env::temp_dir().join(format!("fabcheck-live-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = run_fabcheck(&[
        "pair",
        &ep[0],
        &ep[1],
        "--tests",
        "write_bw",
        "--direction",
        "ab",
        "-D",
        "3",
        "--report-every",
        "1",
        "--json",
        "--live-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.is_dir(), "the run made its live directory");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "a finished run leaves no live state");
    let _ = std::fs::remove_dir_all(&dir);
}

/// mesh takes lat_under_load as pair does: each pair's result carries both phases, and its
/// finding is the pair's.
#[test]
fn mesh_runs_lat_under_load_on_every_pair() {
    let cluster = FakeCluster::healthy(3);
    let mut args = vec!["mesh", "--json", "--tests", "lat_under_load"];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let out = run_fabcheck(&args);
    let doc = super::json(&out);
    eprintln!("mesh lat_under_load: exit {:?}", out.status.code());
    let pairs = doc["pairs"].as_array().unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(pairs.len(), 3, "{doc:#}");
    for p in pairs {
        let r = &p["results"][0];
        assert_eq!(r["test"], "lat_under_load", "{p:#}");
        assert_eq!(r["under_load"]["p99_ratio"].as_f64(), Some(LOADED_FACTOR), "{p:#}");
        assert_eq!(p["verdict"], "fail", "{LOADED_FACTOR}x is above the default --load-threshold 4: {p:#}");
    }
    // Each failed pair is a link suspect of the mesh, said with pair's own words; the mesh fails.
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    let suspects = doc["suspects"].as_array().unwrap_or_else(|| panic!("{doc:#}"));
    for p in pairs {
        let link = format!("{}<->{}", p["a"].as_str().unwrap(), p["b"].as_str().unwrap());
        let s = suspects.iter().find(|s| s["subject"] == link.as_str()).unwrap_or_else(|| panic!("{link} named: {suspects:#?}"));
        assert_eq!(s["kind"], "link");
        assert!(s["reason"].as_str().unwrap().contains("pair.loaded_latency"), "{s}");
    }
}
