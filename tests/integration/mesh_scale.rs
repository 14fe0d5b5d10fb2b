//! `fabcheck mesh` end to end at scale, with no RDMA device: the real controller binary against
//! dozens of fake agents (`fake_cluster`). The `fabcheck mesh` child always runs under a hang
//! guard: still running after [`HANG_GUARD`], it is killed and the test fails. That is a guard,
//! not a timing assertion.

use super::fake_cluster::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One `fabcheck mesh --json` run.
pub(crate) struct MeshRun {
    output: Output,
    /// Largest `Threads:` seen in the child's /proc status, and how many samples were read.
    max_threads: usize,
    samples: usize,
    /// Largest resident set seen (`VmHWM`), KiB.
    peak_rss_kib: usize,
    /// User + system CPU time of the controller at the last sample, in clock ticks.
    cpu_ticks: u64,
}

impl MeshRun {
    pub(crate) fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    pub(crate) fn doc(&self) -> Value {
        super::json(&self.output)
    }

    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// Runs `fabcheck mesh --json ENDPOINTS... EXTRA...` under the hang guard, reading its
/// thread count from /proc every ~5 ms while it runs.
pub(crate) fn run_mesh(endpoints: &[String], extra: &[&str]) -> MeshRun {
    run_mesh_with_env(endpoints, extra, &[])
}

/// `run_mesh` with extra environment (e.g. a PATH holding a fake ssh).
pub(crate) fn run_mesh_with_env(endpoints: &[String], extra: &[&str], env: &[(&str, String)]) -> MeshRun {
    // FABCHECK_MESH_BIN measures another build (e.g. target/release/fabcheck) by hand.
    let bin = std::env::var("FABCHECK_MESH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_fabcheck").into());
    let mut child = Command::new(bin)
        .arg("mesh")
        .arg("--json")
        .args(endpoints)
        .args(extra)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fabcheck mesh");
    // Drained on their own threads: 780 pairs of JSON are far more than a pipe holds.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status_path = format!("/proc/{}/status", child.id());
    let start = Instant::now();
    let (mut max_threads, mut samples, mut peak_rss_kib, mut cpu_ticks) = (0, 0, 0, 0);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for fabcheck mesh") {
            break status;
        }
        if let Some(n) = threads_of(&status_path) {
            max_threads = max_threads.max(n);
            samples += 1;
        }
        if let Some(kib) = status_field(&status_path, "VmHWM:") {
            peak_rss_kib = peak_rss_kib.max(kib);
        }
        cpu_ticks = cpu_ticks_of(&status_path.replace("status", "stat")).unwrap_or(cpu_ticks);
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
            panic!("hang guard: fabcheck mesh of {} endpoints still running after {HANG_GUARD:?}; killed. stderr:\n{err}", endpoints.len());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    MeshRun { output, max_threads, samples, peak_rss_kib, cpu_ticks }
}

/// `Threads:` of a /proc/PID/status; `None` once the process is gone.
fn threads_of(status_path: &str) -> Option<usize> {
    status_field(status_path, "Threads:")
}

/// utime + stime from /proc/PID/stat (fields 14 and 15, after the parenthesised name).
fn cpu_ticks_of(stat_path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(stat_path).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A number from /proc/PID/status (`Threads:`, `VmHWM:` in KiB...).
fn status_field(status_path: &str, field: &str) -> Option<usize> {
    let text = std::fs::read_to_string(status_path).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|n| n.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The doc's `pairs`, split into the first pass and the re-tests.
fn passes(doc: &Value) -> (Vec<&Value>, Vec<&Value>) {
    doc["pairs"].as_array().expect("pairs").iter().partition(|p| p["retest"] != Value::Bool(true))
}

/// A pair record's endpoints, as an ordered key.
fn pair_key(p: &Value) -> (String, String) {
    let (a, b) = (p["a"].as_str().unwrap().to_string(), p["b"].as_str().unwrap().to_string());
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Every unordered pair of `endpoints`, as ordered keys.
fn all_pairs(endpoints: &[String]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (i, a) in endpoints.iter().enumerate() {
        for b in &endpoints[i + 1..] {
            out.insert(if a <= b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) });
        }
    }
    out
}

/// The write_bw figure of a pair record.
fn write_bw(p: &Value) -> Option<f64> {
    p["results"].as_array()?.iter().find(|r| r["test"] == "write_bw")?["bw_gbps"].as_f64()
}

/// Checks a 40-endpoint healthy mesh's document and exit code.
fn assert_uniform_pass(run: &MeshRun, cluster: &FakeCluster) {
    let doc = run.doc();
    assert_eq!(run.code(), Some(0), "suspects: {:#}\nstderr: {}", doc["suspects"], run.stderr());
    assert_eq!(doc["schema"], "fabcheck.mesh.v1");
    assert_eq!(doc["verdict"], "pass");
    let endpoints: Vec<String> = doc["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect();
    assert_eq!(endpoints, cluster.endpoints, "endpoints are named as given, in order");
    let (first, retests) = passes(&doc);
    let n = cluster.endpoints.len();
    assert_eq!(first.len(), n * (n - 1) / 2, "every pair once");
    assert!(retests.is_empty(), "nothing to re-test in a healthy mesh: {} re-tests", retests.len());
    let measured: BTreeSet<(String, String)> = first.iter().map(|p| pair_key(p)).collect();
    assert_eq!(measured, all_pairs(&cluster.endpoints), "each unordered pair exactly once");
    for p in &first {
        assert_eq!(p["verdict"], "pass", "{p:#}");
        assert!(p.get("error").is_none(), "{p:#}");
        let results = p["results"].as_array().unwrap();
        let tests: Vec<(&str, &str)> = results.iter().map(|r| (r["test"].as_str().unwrap(), r["direction"].as_str().unwrap())).collect();
        assert_eq!(tests, [("write_bw", "a->b"), ("send_lat", "a->b")], "the default plan");
        let bw = write_bw(p).unwrap();
        assert!((bw - NORMAL_GBPS).abs() < 0.5, "write_bw {bw} Gb/s, the fakes report {NORMAL_GBPS}: {p:#}");
        let lat = &results[1]["lat_us"];
        assert_eq!(lat["p50"].as_f64(), Some(LAT_P50_US), "{p:#}");
        assert_eq!(results[0]["iterations"].as_u64(), Some(5000), "write_bw's default iterations");
        assert_eq!(results[1]["iterations"].as_u64(), Some(1000), "send_lat's default iterations");
    }
    assert_eq!(doc["suspects"], serde_json::json!([]), "no suspects");
    assert!(doc.get("unreachable").is_none(), "{:#}", doc["unreachable"]);
}

#[test]
fn uniform_cluster_passes() {
    // FABCHECK_MESH_SCALE=N runs it at N endpoints instead (a manual scale measurement; the
    // run's thread count, time and memory are printed with --nocapture).
    let n = std::env::var("FABCHECK_MESH_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let cluster = FakeCluster::healthy(n);
    let start = Instant::now();
    let run = run_mesh(&cluster.endpoints, &[]);
    eprintln!(
        "mesh of {n} fake endpoints: {} pairs in {:.1} s, controller CPU {:.1} s, threads max {}, peak RSS {} KiB",
        n * (n - 1) / 2,
        start.elapsed().as_secs_f64(),
        run.cpu_ticks as f64 / 100.0,
        run.max_threads,
        run.peak_rss_kib
    );
    assert_uniform_pass(&run, &cluster);
}

#[test]
fn bad_node_and_bad_link_are_named() {
    const SLOW_NODE: usize = 5;
    const LINK: (usize, usize) = (2, 11);
    let mut knobs = vec![Knobs::default(); 16];
    knobs[SLOW_NODE].slow_node = true;
    knobs[LINK.0].slow_with = Some(host(LINK.1));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let run = run_mesh(ep, &[]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "suspects: {:#}\nstderr: {}", doc["suspects"], run.stderr());
    assert_eq!(doc["verdict"], "fail");

    // The first pass measured every pair once; the slow ones, and only they, failed.
    let (first, retests) = passes(&doc);
    assert_eq!(first.len(), 16 * 15 / 2);
    let link_key = pair_key(&serde_json::json!({"a": ep[LINK.0], "b": ep[LINK.1]}));
    let is_slow = |p: &Value| p["a"] == ep[SLOW_NODE] || p["b"] == ep[SLOW_NODE] || pair_key(p) == link_key;
    for p in &first {
        let bw = write_bw(p).unwrap_or_else(|| panic!("no write_bw: {p:#}"));
        if is_slow(p) {
            assert_eq!(p["verdict"], "fail", "{p:#}");
            assert!((bw - NORMAL_GBPS * SLOW_SHARE).abs() < 0.5, "{bw} Gb/s: {p:#}");
        } else {
            assert_eq!(p["verdict"], "pass", "{p:#}");
        }
    }

    // The 15 pairs of the slow node and the slow link were re-tested, once each, still slow.
    let retested: BTreeSet<(String, String)> = retests.iter().map(|p| pair_key(p)).collect();
    let want: BTreeSet<(String, String)> = first.iter().filter(|p| is_slow(p)).map(|p| pair_key(p)).collect();
    assert_eq!(want.len(), 16);
    assert_eq!(retests.len(), 16, "each bad pair re-tested once");
    assert_eq!(retested, want);
    assert!(retests.iter().all(|p| p["verdict"] == "fail"), "the slow pairs are slow again");

    // Exactly a node and a link, named as given.
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 2, "{suspects:#?}");
    let node = &suspects[0];
    assert_eq!((node["kind"].as_str(), node["subject"].as_str()), (Some("node"), Some(ep[SLOW_NODE].as_str())), "{node:#}");
    let reason = node["reason"].as_str().unwrap();
    assert!(reason.starts_with("15 of 15 pairs at ~57 Gb/s vs expected 200 Gb/s"), "{reason}");
    assert!(reason.contains("NIC, PCIe slot"), "{reason}");
    let link = &suspects[1];
    let subject = format!("{}<->{}", ep[LINK.0], ep[LINK.1]);
    assert_eq!((link["kind"].as_str(), link["subject"].as_str()), (Some("link"), Some(subject.as_str())), "{link:#}");
    let reason = link["reason"].as_str().unwrap();
    assert!(reason.starts_with("only this pair is slow in both passes (at ~57 Gb/s vs expected 200 Gb/s)"), "{reason}");
    assert!(reason.contains("cable, switch port or route"), "{reason}");
    assert!(doc.get("unreachable").is_none(), "{:#}", doc["unreachable"]);
}

#[test]
fn dead_agent_is_unreachable_not_a_hang() {
    const DEAD: usize = 3;
    let mut knobs = vec![Knobs::default(); 8];
    knobs[DEAD].dead = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let run = run_mesh(ep, &[]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "a dead agent fails the mesh but does not stop it: {}", run.stderr());
    assert_eq!(doc["verdict"], "fail");

    // Named as unreachable, with the reason.
    let unreachable = doc["unreachable"].as_array().unwrap_or_else(|| panic!("no unreachable: {doc:#}"));
    assert_eq!(unreachable.len(), 1, "{unreachable:#?}");
    assert_eq!(unreachable[0]["endpoint"], ep[DEAD]);
    let why = unreachable[0]["error"].as_str().unwrap();
    assert!(why.contains(&format!("cannot reach {}", ep[DEAD])), "{why}");

    // Its pairs fail with that reason and no results; every other pair was still measured.
    let (first, retests) = passes(&doc);
    assert_eq!(first.len(), 8 * 7 / 2);
    let dead_pair = |p: &Value| p["a"] == ep[DEAD] || p["b"] == ep[DEAD];
    for p in &first {
        if dead_pair(p) {
            assert_eq!(p["verdict"], "fail", "{p:#}");
            assert!(p["error"].as_str().is_some_and(|e| e.contains(&ep[DEAD]) && e.contains("cannot reach")), "{p:#}");
            assert_eq!(p["results"], serde_json::json!([]), "{p:#}");
        } else {
            assert_eq!(p["verdict"], "pass", "{p:#}");
            assert!((write_bw(p).unwrap() - NORMAL_GBPS).abs() < 0.5, "{p:#}");
        }
    }
    assert_eq!(first.iter().filter(|p| !dead_pair(p)).count(), 7 * 6 / 2);

    // Its 7 failed pairs were re-tested (and failed again); nothing else was.
    assert_eq!(retests.len(), 7, "{retests:#?}");
    assert!(retests.iter().all(|p| dead_pair(p) && p["verdict"] == "fail" && p["error"].is_string()), "{retests:#?}");

    // Blamed on the node, as unreachable.
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 1, "{suspects:#?}");
    assert_eq!((suspects[0]["kind"].as_str(), suspects[0]["subject"].as_str()), (Some("node"), Some(ep[DEAD].as_str())));
    let reason = suspects[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("7 of 7 pairs failed: agent unreachable"), "{reason}");
}

#[test]
fn controller_stays_single_threaded() {
    // A short pause before each `done` stretches the run so the sampler sees it at work.
    let cluster = FakeCluster::start(vec![Knobs::default(); 40], Duration::from_millis(2));
    let run = run_mesh(&cluster.endpoints, &[]);
    // The run itself must be the healthy 780-pair mesh, or the thread count means nothing.
    assert_uniform_pass(&run, &cluster);
    assert_eq!(
        run.max_threads, 1,
        "the mesh controller ran up to {} threads (max of {} samples of /proc/PID/status every ~5 ms); it should be one event loop",
        run.max_threads, run.samples
    );
}

#[test]
fn a_hung_pair_is_abandoned_and_its_agents_come_back() {
    // fake01 <-> fake04 hangs mid-test (a measuring side that never reports): each time the
    // pair hits the test timeout, both channels are dropped, and both agents are reached
    // again for their next pairs.
    let mut knobs = vec![Knobs::default(); 6];
    knobs[1].hang_with = Some(host(4));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let run = run_mesh(ep, &["--timeout", "2"]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let (first, retests) = passes(&doc);
    assert_eq!(first.len(), 15);
    let hung = |p: &Value| (p["a"] == ep[1] && p["b"] == ep[4]) || (p["a"] == ep[4] && p["b"] == ep[1]);
    for p in first.iter().chain(&retests) {
        if hung(p) {
            let error = p["error"].as_str().unwrap_or_else(|| panic!("{p:#}"));
            assert!(error.contains("no answer within 2 s while running write_bw"), "{error}");
        } else {
            assert_eq!(p["verdict"], "pass", "every other pair runs, on fresh channels where needed: {p:#}");
        }
    }
    assert_eq!(retests.len(), 1, "{retests:#?}");
    assert!(hung(retests[0]));
    // Reached once at the start, again after each hang (first pass and re-test).
    for i in [1, 4] {
        assert!(cluster.fabric.connections(&host(i)) >= 2, "{} connected {} times", host(i), cluster.fabric.connections(&host(i)));
    }
    assert_eq!(cluster.fabric.connections(&host(0)), 1, "healthy agents keep their one channel");
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 1, "{suspects:#?}");
    assert_eq!(suspects[0]["kind"], "link", "{suspects:#?}");
    assert!(doc.get("unreachable").is_none());
}

#[test]
fn ssh_agents_start_in_bounded_parallel_and_none_outlives_the_mesh() {
    // 48 ssh endpoints through tests/fake-ssh (which runs the "remote" command here): every
    // agent is a child with its pipes on the one-thread hub, started 8 at a time. Each answers
    // hello and then fails its inventory, so every endpoint ends up named with that cause; what
    // matters here is the fan-out and the clean-up. That needs a host whose libibverbs lists no
    // device (the host tier's machines): with devices the agents would answer the inventory and
    // run 1128 pairs. Decided by the host, never skipped: elsewhere this test fails and says why.
    let host = super::host_rdma();
    if let super::HostRdma::Devices(names) = &host {
        panic!(
            "this test needs a host without RDMA devices, and this one has {names:?}: run the host tier on such a \
             host; tests/run-all.sh with FABCHECK_RXE_NATIVE=1 on an RDMA host leaves it out by name and says so"
        );
    }
    let cause = host.agent_cause("mlx5_0");
    let dir = std::env::temp_dir().join(format!("fabcheck-fanout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A path of its own, so the processes it starts can be told from other tests' agents.
    let remote = dir.join("fabcheck");
    let _ = std::fs::remove_file(&remote);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fabcheck"), &remote).unwrap();
    let log = dir.join("ssh.log");
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-ssh");
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let endpoints: Vec<String> = (0..48).map(|i| format!("node{i:02}/mlx5_0")).collect();
    let remote_arg = remote.to_str().unwrap();
    let run = run_mesh_with_env(
        &endpoints,
        &["--fanout", "8", "--remote-fabcheck", remote_arg],
        &[("PATH", path), ("FAKE_SSH_LOG", log.display().to_string())],
    );
    // Every agent answered but none had the device: no test could run (exit 2), one cause in
    // the JSON error document (issue #57: not a matrix of failed pairs calling them unreachable).
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("none of the 48 endpoints has a usable RDMA device"), "{}", run.stderr());
    let doc = run.doc();
    assert_eq!(doc["verdict"], "error", "{doc:#}");
    assert!(doc.get("suspects").is_none() && doc.get("unreachable").is_none(), "no link is blamed when nothing ran: {doc:#}");
    let said = doc["error"]["cause"].as_str().unwrap();
    assert!(said.contains(&format!("(first: node00/mlx5_0: {cause}")), "hello worked, the inventory named the cause ({host:?}): {said}");
    let calls = std::fs::read_to_string(&log).unwrap();
    let hosts: BTreeSet<&str> = calls.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(hosts.len(), 48, "{calls}");
    assert!(calls.lines().all(|l| l.ends_with(&format!("{remote_arg} agent"))), "{calls}");
    assert_eq!(run.max_threads, 1, "one thread for 48 ssh children ({} samples)", run.samples);
    // Nothing the mesh started outlives it.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(remote_arg))
        .collect();
    assert!(left.is_empty(), "agents left running: {left:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue #28 item 4: mesh pins its agents as pair does, agents of one host on distinct CPU
/// slots (the one CPU allocator's `host_slots`): fake01 says it is fake00's host.
#[test]
fn mesh_gives_agents_of_one_host_distinct_cpu_slots() {
    let mut knobs = vec![Knobs::default(); 3];
    knobs[1].reported_host = Some(host(0));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let run = run_mesh(&cluster.endpoints, &["--tests", "write_bw"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let slots = cluster.fabric.slots.lock().unwrap().clone();
    let of = |agent: &str| -> BTreeSet<Option<u8>> { slots.iter().filter(|(a, _)| a == agent).map(|(_, s)| *s).collect() };
    assert_eq!(of(&host(0)), BTreeSet::from([Some(0)]), "{slots:?}");
    assert_eq!(of(&host(1)), BTreeSet::from([Some(1)]), "fake01 is fake00's host's second agent: {slots:?}");
    assert_eq!(of(&host(2)), BTreeSet::from([Some(0)]), "alone on its host: {slots:?}");
}

#[test]
fn mesh_from_a_hostfile_and_its_threshold() {
    let cluster = FakeCluster::start_at(vec![Knobs::default(); 4], Duration::ZERO, 178.0);
    let file = std::env::temp_dir().join(format!("fabcheck-hostfile-{}", std::process::id()));
    let text =
        format!("# four fake agents\n{}\n\n{}\n{}\n{}\n", cluster.endpoints[0], cluster.endpoints[1], cluster.endpoints[2], cluster.endpoints[3]);
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap();
    // 89% of the link: every pair fails at the default 90%, and passes at 85%.
    let run = run_mesh(&[], &["--hostfile", path]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let endpoints: Vec<&str> = doc["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(endpoints, cluster.endpoints.iter().map(String::as_str).collect::<Vec<_>>(), "the hostfile's endpoints, in order");
    let (first, _) = passes(&doc);
    assert_eq!(first.len(), 6);
    assert!(first.iter().all(|p| p["verdict"] == "fail"), "{doc:#}");
    let run = run_mesh(&[], &["--hostfile", path, "--threshold", "85"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let doc = run.doc();
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(passes(&doc).0.len(), 6);
    std::fs::remove_file(&file).ok();
}
