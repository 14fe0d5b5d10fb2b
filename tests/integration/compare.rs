//! `fabcheck compare` on documents that `pair` and `mesh` wrote against simulated agents
//! (`examples/mesh_sim.rs`): a node made slow between two runs (same hosts, new agent ports)
//! is named; documents that cannot be compared are exit 2 naming why.

use super::{fabcheck, fixtures_dir, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The simulator, built into this test binary's target directory if it is not there yet.
fn mesh_sim() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).expect("target/debug/deps/THIS").to_path_buf();
    let sim = target.join("debug/examples/mesh_sim");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--example", "mesh_sim", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .status()
        .expect("run cargo to build examples/mesh_sim");
    assert!(built.success() && sim.exists(), "cannot build {}", sim.display());
    sim
}

/// A running simulator, killed when dropped.
pub(super) struct Sim {
    child: Child,
    pub(super) endpoints: Vec<String>,
}

impl Sim {
    pub(super) fn start(dir: &Path, name: &str, agents: usize, faults: &[&str]) -> Sim {
        let hostfile = dir.join(format!("{name}.hosts"));
        let child = Command::new(mesh_sim())
            .args(["--agents", &agents.to_string(), "--hostfile"])
            .arg(&hostfile)
            .args(faults)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mesh_sim");
        let started = Instant::now();
        let endpoints = loop {
            let lines: Vec<String> = std::fs::read_to_string(&hostfile).unwrap_or_default().lines().map(str::to_string).collect();
            if lines.len() == agents {
                break lines;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "mesh_sim never wrote its hostfile");
            std::thread::sleep(Duration::from_millis(50));
        };
        Sim { child, endpoints }
    }

    /// What the 0.3 mesh JSON adds (the host each agent reported), for documents of this
    /// build's mesh, which names endpoints only as given: agent i says it is host nIIIII.
    fn hosts(&self) -> serde_json::Value {
        serde_json::Value::Object(self.endpoints.iter().enumerate().map(|(i, e)| (e.clone(), format!("n{i:05}").into())).collect())
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-compare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, doc: &serde_json::Value) -> String {
    std::fs::write(path, serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

pub(super) fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn mesh_doc(sim: &Sim, tests: &str) -> serde_json::Value {
    let mut args = vec!["mesh", "--json", "--tests", tests];
    args.extend(sim.endpoints.iter().map(String::as_str));
    let out = fabcheck(&args);
    assert!(out.status.code().is_some_and(|c| c <= 1), "mesh: {}", text(&out));
    json(&out)
}

#[test]
fn mesh_baseline_names_the_node_that_slowed_though_its_agent_moved_ports() {
    let dir = scratch("mesh");
    let (mut old, old_hosts) = {
        let sim = Sim::start(&dir, "old", 6, &[]);
        (mesh_doc(&sim, "write_bw,send_lat"), sim.hosts())
    };
    let (mut new, new_hosts) = {
        let sim = Sim::start(&dir, "new", 6, &["--slow-node", "3"]);
        (mesh_doc(&sim, "write_bw,send_lat"), sim.hosts())
    };
    assert_ne!(old["endpoints"], new["endpoints"], "the agents were meant to move ports");
    old["hosts"] = old_hosts;
    new["hosts"] = new_hosts;
    let (old_file, new_file) = (write(&dir.join("old.json"), &old), write(&dir.join("new.json"), &new));
    let out = fabcheck(&["compare", &old_file, &new_file]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("slowed since the baseline: n00003 (5 of its 5 pairs regressed)"), "{said}");
    assert!(said.contains("REGRESSION") && said.contains("below the baseline's"), "{said}");
    let out = fabcheck(&["compare", "--json", &old_file, &new_file]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["schema"], "fabcheck.compare.v1");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["command"], "mesh");
    assert_eq!(doc["slowed"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["slowed"][0]["endpoint"], "n00003");
    let regressions = doc["regressions"].as_array().unwrap();
    assert!(!regressions.is_empty() && regressions.iter().all(|r| r["message"].as_str().unwrap().contains("n00003")), "{doc}");
    // Against itself: nothing to report, exit 0.
    let out = fabcheck(&["compare", &old_file, &old_file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("PASS: no figure more than 5% worse"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

fn pair_doc(sim: &Sim) -> serde_json::Value {
    let out = fabcheck(&["pair", "--json", "--tests", "write_bw,send_lat", &sim.endpoints[0], &sim.endpoints[1]]);
    assert!(out.status.code().is_some_and(|c| c <= 1), "pair: {}", text(&out));
    json(&out)
}

#[test]
fn pair_baseline_matches_by_reported_host_and_device_and_the_threshold_is_a_flag() {
    let dir = scratch("pair");
    let old = pair_doc(&Sim::start(&dir, "old", 2, &[]));
    let new = pair_doc(&Sim::start(&dir, "new", 2, &["--slow-node", "1"]));
    assert_eq!(old["a"]["host"], "n00000", "{old}");
    let (old_file, new_file) = (write(&dir.join("old.json"), &old), write(&dir.join("new.json"), &new));
    let out = fabcheck(&["compare", "--json", &old_file, &new_file]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc = json(&out);
    let bw = doc["regressions"].as_array().unwrap().iter().find(|r| r["figure"] == "bw_gbps").unwrap_or_else(|| panic!("{doc}"));
    assert!(bw["message"].as_str().unwrap().starts_with("n00000/"), "{bw}");
    assert!(bw["current"].as_f64().unwrap() < bw["baseline"].as_f64().unwrap());
    // The slow share is 0.3 of the rate: a 75% threshold lets it pass.
    let out = fabcheck(&["compare", "--regression", "75", &old_file, &new_file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn documents_that_cannot_be_compared_are_exit_2_naming_why() {
    let dir = scratch("refused");
    let check = fabcheck(&["check", "--json", "--sysfs-root", fixtures_dir().join("hdr-ib-healthy").to_str().unwrap()]);
    let check_file = write(&dir.join("check.json"), &json(&check));
    let pair = serde_json::json!({"schema": "fabcheck.pair.v1", "verdict": "pass", "a": {}, "b": {}, "results": [], "findings": []});
    let pair_file = write(&dir.join("pair.json"), &pair);
    let mesh_file = write(&dir.join("mesh.json"), &serde_json::json!({"schema": "fabcheck.mesh.v1", "pairs": []}));
    let future_file = write(&dir.join("future.json"), &serde_json::json!({"schema": "fabcheck.pair.v7", "results": []}));
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let cases: [(&str, &str, &str); 5] = [
        (&check_file, &pair_file, "fabcheck.check.v1"),
        (&pair_file, &mesh_file, "different commands"),
        (&pair_file, &future_file, "fabcheck.pair.v7"),
        (&pair_file, garbage.to_str().unwrap(), "is not a JSON document"),
        (&pair_file, "/nonexistent/x.json", "cannot read /nonexistent/x.json"),
    ];
    for (old, new, why) in cases {
        let out = fabcheck(&["compare", old, new]);
        assert_eq!(out.status.code(), Some(2), "{old} {new}: {}", text(&out));
        assert!(text(&out).contains(why), "{old} {new}: expected {why:?} in {}", text(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mesh_baseline_flag_names_the_node_that_slowed_as_a_warning_suspect() {
    let dir = scratch("mesh-flag");
    let old = {
        let sim = Sim::start(&dir, "old", 6, &[]);
        mesh_doc(&sim, "write_bw")
    };
    // The 0.3 mesh document says which host each agent reported: what matches across ports.
    assert_eq!(old["hosts"].as_object().map(|m| m.len()), Some(6), "{}", old["hosts"]);
    let old_file = write(&dir.join("old.json"), &old);
    let sim = Sim::start(&dir, "new", 6, &["--slow-node", "3"]);
    let mut args = vec!["mesh", "--json", "--tests", "write_bw", "--baseline", &old_file];
    args.extend(sim.endpoints.iter().map(String::as_str));
    let out = fabcheck(&args);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", text(&out));
    let doc = json(&out);
    let regressed: Vec<&serde_json::Value> =
        doc["suspects"].as_array().unwrap().iter().filter(|s| s["reason"].as_str().unwrap().starts_with("regression:")).collect();
    assert_eq!(regressed.len(), 1, "one node slowed, nothing else blamed: {:#?}", doc["suspects"]);
    assert_eq!((regressed[0]["kind"].as_str(), regressed[0]["severity"].as_str()), (Some("node"), Some("warning")), "{}", regressed[0]);
    assert!(regressed[0]["subject"].as_str().unwrap().starts_with("n00003"), "{}", regressed[0]);
    // Every other suspect is the mesh's own judgement, an error as before.
    assert!(doc["suspects"].as_array().unwrap().iter().filter(|s| !regressed.contains(s)).all(|s| s["severity"] == "error"));
    // A baseline of another command is refused before any pair runs.
    let check = fabcheck(&["check", "--json", "--sysfs-root", fixtures_dir().join("hdr-ib-healthy").to_str().unwrap()]);
    let check_file = write(&dir.join("check.json"), &json(&check));
    let mut args = vec!["mesh", "--baseline", &check_file];
    args.extend(sim.endpoints.iter().map(String::as_str));
    let out = fabcheck(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("fabcheck.check.v1"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pair_baseline_flag_adds_a_regression_warning_naming_both_figures() {
    let dir = scratch("pair-flag");
    let old = pair_doc(&Sim::start(&dir, "old", 2, &[]));
    let old_file = write(&dir.join("old.json"), &old);
    let sim = Sim::start(&dir, "new", 2, &["--slow-node", "1"]);
    let out = fabcheck(&["pair", "--json", "--tests", "write_bw,send_lat", "--baseline", &old_file, &sim.endpoints[0], &sim.endpoints[1]]);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", text(&out));
    let doc = json(&out);
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "pair.regression").unwrap_or_else(|| panic!("{}", doc["findings"]));
    assert_eq!(f["severity"], "warning");
    assert!(f["message"].as_str().unwrap().contains("below the baseline's"), "{f}");
    // Against itself: no regression finding.
    let same = pair_doc(&Sim::start(&dir, "same", 2, &[]));
    let same_file = write(&dir.join("same.json"), &same);
    let sim = Sim::start(&dir, "again", 2, &[]);
    let out =
        fabcheck(&["pair", "--json", "--tests", "write_bw", "--regression", "90", "--baseline", &same_file, &sim.endpoints[0], &sim.endpoints[1]]);
    assert!(json(&out)["findings"].as_array().unwrap().iter().all(|f| f["id"] != "pair.regression"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A mesh document of `endpoints` endpoints, every pair once, each with a bandwidth and a
/// latency result (about 600 bytes a pair, as `mesh --json` writes them); `scale` multiplies
/// the figures.
pub(super) fn large_mesh_doc(path: &Path, endpoints: usize, scale: f64) {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let name = |i: usize| format!("tcp://10.{}.{}.{}:18515/mlx5_0", i / 65536, i / 256 % 256, i % 256);
    write!(out, "{{\"schema\":\"fabcheck.mesh.v1\",\"time\":\"2026-12-01T00:00:00Z\",\"host\":\"ctl\",\"verdict\":\"pass\",\"endpoints\":[").unwrap();
    for i in 0..endpoints {
        write!(out, "{}\"{}\"", if i == 0 { "" } else { "," }, name(i)).unwrap();
    }
    write!(out, "],\"hosts\":{{").unwrap();
    for i in 0..endpoints {
        write!(out, "{}\"{}\":\"n{i:05}\"", if i == 0 { "" } else { "," }, name(i)).unwrap();
    }
    write!(out, "}},\"pairs\":[").unwrap();
    let mut first = true;
    for a in 0..endpoints {
        for b in a + 1..endpoints {
            let bw = scale * (90.0 + ((a * 7 + b * 13) % 100) as f64 / 10.0);
            let lat = 1.5 + ((a + b) % 10) as f64 / 100.0;
            write!(
                out,
                "{}{{\"a\":\"{}\",\"b\":\"{}\",\"verdict\":\"pass\",\"results\":[{{\"test\":\"write_bw\",\"direction\":\"a->b\",\"size\":65536,\"iterations\":5000,\"qps\":1,\"bw_gbps\":{bw:.3},\"peak_gbps\":{:.3},\"msg_rate_mpps\":{:.6}}},{{\"test\":\"send_lat\",\"direction\":\"a->b\",\"size\":2,\"iterations\":1000,\"qps\":1,\"lat_us\":{{\"min\":{:.3},\"p50\":{lat:.3},\"p90\":{:.3},\"p99\":{:.3},\"p999\":{:.3},\"max\":{:.3},\"mean\":{lat:.3},\"stdev\":0.021}}}}]}}",
                if first { "" } else { "," },
                name(a),
                name(b),
                bw * 1.01,
                bw / 0.524288 / 1000.0,
                lat - 0.1,
                lat + 0.1,
                lat + 0.3,
                lat + 0.9,
                lat + 4.0,
            )
            .unwrap();
            first = false;
        }
    }
    write!(out, "],\"suspects\":[]}}").unwrap();
    out.flush().unwrap();
}

#[test]
fn comparing_large_documents_takes_memory_in_proportion() {
    // Regression (issue #46 item 5): compare parsed both documents into serde_json::Value trees:
    // 8.8 GB and 36 s for a 230 MB document. Two 13 MB documents (250 endpoints, 31,125 pairs)
    // must now be compared within an address space of 320 MiB (this build takes about 70 MB;
    // 0.3 ran out: `memory allocation of 3014656 bytes failed`). benches/compare-memory.sh
    // measures the 230 MB case.
    let dir = scratch("large");
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    large_mesh_doc(&old, 250, 1.0);
    large_mesh_doc(&new, 250, 0.5);
    let size = std::fs::metadata(&old).unwrap().len();
    assert!(size > 12 << 20, "{size} bytes");
    let out = Command::new("prlimit")
        .arg(format!("--as={}", 320u64 << 20))
        .arg(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["compare", "--json"])
        .args([&old, &new])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run prlimit (util-linux)");
    assert_eq!(out.status.code(), Some(1), "every bandwidth halved is a regression: {}", String::from_utf8_lossy(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["regressions"].as_array().map(Vec::len), Some(31_125 * 2), "bandwidth and message rate of every pair");
    let _ = std::fs::remove_dir_all(&dir);
}
