//! `fabcheck pair` on rxe0: every test runs and passes, the JSON has the contract's shape,
//! and the numbers are within sanity bounds of perftest on the same device.

use super::{fabcheck, json, require_rxe, sh, DEVICE};
use fabcheck::pair::report::PairDoc;
use std::process::{Command, Stdio};
use std::time::Duration;

fn pair(extra: &[&str]) -> (std::process::Output, PairDoc) {
    let mut args = vec!["pair", "localhost", "localhost", "--device", DEVICE, "--json"];
    args.extend_from_slice(extra);
    let out = fabcheck(&args);
    let value = json(&out);
    let doc: PairDoc = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("not a pair document ({e}): {value}"));
    (out, doc)
}

#[test]
fn every_test_runs_and_passes() {
    let _serial = require_rxe();
    let (out, doc) = pair(&["--iters", "300"]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", String::from_utf8_lossy(&out.stderr), serde_json::to_string_pretty(&doc.findings).unwrap());
    assert_eq!(doc.schema, "fabcheck.pair.v1");
    assert_eq!(doc.a.device, DEVICE);
    assert_eq!(doc.a.gid.as_deref(), Some("::ffff:198.18.0.1"), "the routable RoCE v2 GID must be chosen");
    for test in ["send_lat", "write_lat", "read_lat"] {
        let r = doc.results.iter().find(|r| r.test == test).unwrap_or_else(|| panic!("{test} missing"));
        let lat = r.lat_us.unwrap_or_else(|| panic!("{test} has no latency"));
        assert!(lat.min > 0.0 && lat.min <= lat.p50 && lat.p50 <= lat.p99 && lat.p99 <= lat.max, "{test}: {lat:?}");
        assert_eq!(r.iterations, 300, "{test}");
    }
    for test in ["write_bw", "read_bw", "send_bw"] {
        for dir in ["a->b", "b->a", "bidi"] {
            let r = doc.results.iter().find(|r| r.test == test && r.direction == dir).unwrap_or_else(|| panic!("{test} {dir} missing"));
            assert!(r.bw_gbps.unwrap() > 0.0 && r.msg_rate_mpps.unwrap() > 0.0, "{test} {dir}: {r:?}");
            assert!(r.peak_gbps.unwrap() >= r.bw_gbps.unwrap() * 0.99, "{test} {dir}: peak below average");
        }
    }
    // Soft-RoCE bandwidth is reported, not judged.
    assert!(doc.findings.iter().any(|f| f.id == "pair.bw" && format!("{:?}", f.severity) == "Info"));
}

#[test]
fn qps_sweep_and_duration() {
    let _serial = require_rxe();
    let (out, doc) = pair(&["--tests", "write_bw", "--qps", "4", "--iters", "200", "--direction", "ab"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(doc.results[0].qps, 4);
    assert_eq!(doc.results[0].iterations, 800);
    let (out, doc) = pair(&["--tests", "send_bw", "--sweep", "--iters", "20", "--direction", "ab"]);
    assert_eq!(out.status.code(), Some(0), "{}\n{:?}", String::from_utf8_lossy(&out.stderr), doc.findings);
    let sizes: Vec<u32> = doc.results.iter().map(|r| r.size).collect();
    assert_eq!(sizes.first(), Some(&2));
    assert_eq!(sizes.last(), Some(&(8 << 20)));
    let (out, doc) = pair(&["--tests", "send_lat,write_bw", "--duration", "1", "--direction", "ab"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(doc.results.iter().all(|r| r.iterations > 0));
}

#[test]
fn human_output_names_both_ends_and_the_verdict() {
    let _serial = require_rxe();
    let out = fabcheck(&["pair", "localhost", "localhost", "--device", DEVICE, "--tests", "send_lat", "--iters", "100"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("rxe0/1") && text.contains("send_lat") && text.contains("PASS"), "{text}");
}

#[test]
fn through_fabcheck_serve_with_a_token() {
    let _serial = require_rxe();
    let port = 18000 + (std::process::id() % 1000) as u16;
    let listen = format!("127.0.0.1:{port}");
    let mut server = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["serve", "--listen", &listen, "--token", "s3cret", "--max-sessions", "3"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let endpoint = format!("tcp://{listen}");
    let wrong = fabcheck(&["pair", &endpoint, "localhost", "--device", DEVICE, "--tests", "send_lat", "--token", "wrong"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("token"), "{}", String::from_utf8_lossy(&wrong.stderr));
    let out = fabcheck(&[
        "pair",
        &endpoint,
        &endpoint,
        "--device",
        DEVICE,
        "--tests",
        "send_lat,write_bw",
        "--iters",
        "200",
        "--direction",
        "ab",
        "--token",
        "s3cret",
        "--json",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: PairDoc = serde_json::from_value(json(&out)).unwrap();
    assert_eq!(doc.results.len(), 2);
}

/// Runs a perftest server and client on rxe0 over 127.0.0.1 and returns the client's stdout.
/// Every run gets its own port, and the server never outlives the client by more than 10 s:
/// a client that could not connect must not leave the test waiting on a server forever.
pub fn perftest(tool: &str, args: &str) -> String {
    static RUNS: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let port = 20000 + (std::process::id() % 1000) as u16 * 16 + RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 16;
    let mut server = Command::new(tool)
        .args(args.split_whitespace())
        .args(["-d", DEVICE, "-x", "1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{tool} not installed ({e}): apt install perftest"));
    std::thread::sleep(Duration::from_millis(1500));
    let client = sh(&format!("timeout 120 {tool} {args} -d {DEVICE} -x 1 -p {port} 127.0.0.1"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = server.kill();
            let _ = server.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = String::from_utf8_lossy(&client.stdout).into_owned();
    assert!(client.status.success(), "{tool} failed: {text}\n{}", String::from_utf8_lossy(&client.stderr));
    text
}

/// The numeric columns of perftest's result line (the first line starting with the size).
pub fn perftest_row(text: &str, size: u32) -> Vec<f64> {
    text.lines()
        .map(str::trim)
        .find(|l| l.split_whitespace().next() == Some(&size.to_string()))
        .unwrap_or_else(|| panic!("no result row for size {size} in:\n{text}"))
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Every test against the perftest tool it mirrors, same device, same guest: a sanity bound
/// within 100x (a unit slip would be 1000x), not a performance claim (benches/ compares).
/// perftest's columns: latency `#bytes #iterations t_min t_max t_typical ...` (t_typical is
/// index 4); bandwidth `#bytes #iterations BW_peak BW_average MsgRate` (BW_average, index 3).
#[test]
fn every_test_is_within_sanity_bounds_of_its_perftest_peer() {
    let _serial = require_rxe();
    let cases: [(&str, &str, u32, usize); 6] = [
        ("send_lat", "ib_send_lat", 2, 4),
        ("write_lat", "ib_write_lat", 2, 4),
        ("read_lat", "ib_read_lat", 2, 4),
        ("write_bw", "ib_write_bw", 65536, 3),
        ("read_bw", "ib_read_bw", 65536, 3),
        ("send_bw", "ib_send_bw", 65536, 3),
    ];
    let mut report = Vec::new();
    for (test, tool, size, column) in cases {
        let latency = test.ends_with("_lat");
        let extra = if latency { "" } else { " --report_gbits" };
        let better = |best: f64, v: f64| if latency { best.min(v) } else { best.max(v) };
        let worst = if latency { f64::MAX } else { 0.0 };
        // Best of three on both sides: the guest's CPUs are shared by two busy pollers and
        // rxe's own work, so either tool can lose a scheduler slice (milliseconds) at random.
        let theirs = (0..3).map(|_| perftest_row(&perftest(tool, &format!("-s {size} -n 300{extra}")), size)[column]).fold(worst, better);
        let size_text = size.to_string();
        let ours = (0..3)
            .map(|_| {
                let (_, doc) = pair(&["--tests", test, "--size", &size_text, "--iters", "300", "--direction", "ab"]);
                let r = &doc.results[0];
                if latency {
                    r.lat_us.unwrap().p50
                } else {
                    r.bw_gbps.unwrap()
                }
            })
            .fold(worst, better);
        let ratio = ours / theirs;
        report.push(format!("{test}: fabcheck {ours} vs {tool} {theirs} ({}) ratio {ratio:.2}", if latency { "us" } else { "Gb/s" }));
        assert!((0.01..=100.0).contains(&ratio), "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn mesh_of_four_endpoints_on_one_device() {
    let _serial = require_rxe();
    let html = "/tmp/fabcheck-mesh.html";
    let out = fabcheck(&["mesh", "localhost/rxe0", "localhost/rxe0", "localhost/rxe0", "localhost/rxe0", "--iters", "200", "--json", "--html", html]);
    let doc = json(&out);
    // Four busy-polling agents share two emulated CPUs: latency outliers may be named, so the
    // verdict is not asserted; the schedule, the results and the document are.
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(doc["schema"], "fabcheck.mesh.v1");
    let names: Vec<&str> = doc["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(names, ["localhost/rxe0", "localhost/rxe0#2", "localhost/rxe0#3", "localhost/rxe0#4"]);
    let first: Vec<&serde_json::Value> = doc["pairs"].as_array().unwrap().iter().filter(|p| p["retest"].is_null()).collect();
    assert_eq!(first.len(), 6, "every pair of four, once");
    for p in &first {
        let tests: Vec<&str> = p["results"].as_array().unwrap().iter().map(|r| r["test"].as_str().unwrap()).collect();
        assert_eq!(tests, ["write_bw", "send_lat"], "{p}");
    }
    for s in doc["suspects"].as_array().unwrap() {
        assert!(["node", "link", "config"].contains(&s["kind"].as_str().unwrap()), "{s}");
    }
    let page = std::fs::read_to_string(html).unwrap();
    assert!(page.contains("<svg") && page.contains("localhost/rxe0#4"));
}

/// `fabcheck pair` with `tests/<fake_dir>` first on the PATH: a stand-in for ssh or srun that
/// checks the argument vector and runs the agent here.
fn pair_through_fake(fake_dir: &str, endpoints: [&str; 2], extra: &[&str]) -> PairDoc {
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(fake_dir);
    let out = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", endpoints[0], endpoints[1], "--remote-fabcheck", env!("CARGO_BIN_EXE_fabcheck")])
        .args(["--tests", "send_lat,write_bw", "--iters", "100", "--direction", "ab", "--json"])
        .args(extra)
        .env("PATH", format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: PairDoc = serde_json::from_value(json(&out)).unwrap();
    assert_eq!(doc.results.len(), 2);
    assert!(doc.results.iter().all(|r| r.error.is_none() && r.iterations > 0), "{:?}", doc.results);
    doc
}

#[test]
fn over_ssh_stdio() {
    let _serial = require_rxe();
    let doc = pair_through_fake("fake-ssh", ["nodeA/rxe0", "root@nodeB/rxe0:1"], &[]);
    assert_eq!((doc.a.device.as_str(), doc.b.port), ("rxe0", 1));
}

#[test]
fn through_srun() {
    let _serial = require_rxe();
    let doc = pair_through_fake("fake-slurm", ["n01/rxe0", "n02/rxe0:1"], &["--launcher", "srun"]);
    assert_eq!((doc.a.device.as_str(), doc.b.port), ("rxe0", 1));
}

#[test]
fn through_rdma_cm() {
    let _serial = require_rxe();
    let (out, doc) = pair(&["--cm", "--tests", "all", "--iters", "100", "--direction", "both", "--qps", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(doc.results.len(), 6 * 2, "six tests, each way");
    assert!(doc.results.iter().all(|r| r.error.is_none() && r.iterations > 0), "{:?}", doc.results);
    assert!(doc.results.iter().filter(|r| r.bw_gbps.is_some()).all(|r| r.qps == 2));
}
