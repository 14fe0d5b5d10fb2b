//! Burn-in on a live rxe0 (issue #55): `--report-every` over a timed run, `--validate` with and
//! without the test-only fault knob, and a run stopped by SIGTERM. Short: the guest is emulated.

use super::{bin, json, require_rxe, DEVICE};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> std::path::PathBuf {
    // /var/tmp: the guest hides the host's /tmp under a tmpfs, which is fine for files it makes.
    let dir = std::env::temp_dir().join(format!("fabcheck-rxe-burn-in-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON record ({e}): {l}"))).collect()
}

#[test]
fn report_every_1_over_10_s_gives_about_ten_records() {
    let _serial = require_rxe();
    let dir = scratch("report");
    let file = dir.join("progress.jsonl");
    let out = Command::new(bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json", "--tests", "write_bw", "--direction", "ab"])
        .args(["-D", "10", "--report-every", "1", "--progress-json"])
        .arg(&file)
        .output()
        .unwrap();
    let doc = json(&out);
    assert!(doc["results"][0]["error"].is_null(), "{doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&file);
    eprintln!("--report-every 1 -D 10: {} records: {:?}", recs.len(), recs.iter().map(|r| r["gbps"].clone()).collect::<Vec<_>>());
    for r in &recs {
        assert_eq!((r["schema"].as_str(), r["test"].as_str()), (Some("fabcheck.progress.v1"), Some("write_bw")), "{r}");
    }
    // About ten intervals of the 10 s measured phase carry a figure; the reporter's clock starts
    // with the run, so the warm-up's intervals (2 s under a loaded host, measured) say `null`.
    let measured: Vec<f64> = recs.iter().filter_map(|r| r["gbps"].as_f64()).collect();
    assert!((9..=11).contains(&measured.len()), "{} measured intervals: {recs:#?}", measured.len());
    assert!(measured.iter().all(|g| *g > 0.0), "{recs:#?}");
    // A latency test's records carry its percentiles.
    let lat = dir.join("lat.jsonl");
    let out = Command::new(bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json", "--tests", "send_lat", "-D", "3", "--report-every", "1"])
        .arg("--progress-json")
        .arg(&lat)
        .output()
        .unwrap();
    assert!(json(&out)["results"][0]["error"].is_null());
    let recs = records(&lat);
    assert!(recs.iter().any(|r| r["lat_us"]["p99"].as_f64().is_some_and(|p| p > 0.0)), "{recs:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_passes_and_with_the_fault_knob_fails_naming_the_offset() {
    let _serial = require_rxe();
    let run = |fault: Option<&str>| {
        let mut cmd = Command::new(bin());
        cmd.args(["pair", "localhost", "localhost", "--device", DEVICE, "--json", "--tests", "send_bw,write_bw,read_bw"]).args([
            "--direction",
            "ab",
            "--iters",
            "200",
            "--validate",
        ]);
        if let Some(f) = fault {
            // The local agents inherit the controller's environment.
            cmd.env("FABCHECK_TEST_CORRUPT", f);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), json(&out))
    };
    let (code, doc) = run(None);
    let data = |doc: &serde_json::Value| -> Vec<String> {
        doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.data").map(|f| f["message"].as_str().unwrap().to_string()).collect()
    };
    assert!(data(&doc).is_empty(), "{doc:#}");
    assert!(doc["results"].as_array().unwrap().iter().all(|r| r["error"].is_null()), "{doc:#}");
    eprintln!("--validate clean: exit {code:?}, verdict {}", doc["verdict"]);
    let (code, doc) = run(Some("100:0x10"));
    let found = data(&doc);
    eprintln!("--validate with FABCHECK_TEST_CORRUPT=100:0x10: exit {code:?}: {found:#?}");
    assert_eq!(code, Some(1), "{doc:#}");
    assert_eq!(found.len(), 3, "one per test: {found:#?}");
    assert!(found.iter().all(|m| m.contains("offset 100, bits 0b00010000")), "{found:#?}");
    assert!(found.iter().any(|m| m.starts_with("send_bw a->b 65536 B: ") && m.contains("first: message 0,")), "{found:#?}");
}

#[test]
fn sigterm_ends_a_long_run_with_its_document_and_no_agent_left() {
    let _serial = require_rxe();
    let dir = scratch("sigterm");
    let (file, output) = (dir.join("progress.jsonl"), dir.join("pair.json"));
    let child = Command::new(bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json", "--tests", "send_lat,write_bw", "--direction", "ab"])
        .args(["-D", "60", "--report-every", "1", "--progress-json"])
        .arg(&file)
        .arg("--output")
        .arg(&output)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once write_bw reports, send_lat has finished and write_bw is running (ordering, not timing:
    // the bound is only a guard).
    let start = Instant::now();
    while !records(&file).iter().any(|r| r["test"] == "write_bw") {
        assert!(start.elapsed() < Duration::from_secs(150), "write_bw never reported");
        std::thread::sleep(Duration::from_millis(200));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("interrupted by SIGTERM after 1 finished test(s)"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    assert_eq!((doc["verdict"].as_str(), doc["results"].as_array().map(Vec::len)), (Some("fail"), Some(1)), "{doc:#}");
    // No fabcheck agent left: none of this binary's processes but this test's.
    let me = std::fs::canonicalize(bin()).unwrap();
    let start = Instant::now();
    let agents = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|x| x == me))
            .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.split(|b| *b == 0).any(|w| w == b"agent")))
            .count()
    };
    while agents() > 0 {
        assert!(start.elapsed() < Duration::from_secs(30), "an agent is still running");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// lat_under_load on rxe0 (issue #55): both phases measured on the one connection, the load
/// moving bytes while the loaded phase runs, the ratios the two phases' figures, and the finding
/// an info (Soft-RoCE is reported, not judged) in the result and on the prom page.
///
/// What this test does not claim: that the loaded p99 is above the idle one. In this one guest
/// rxe0 talks to itself and rxe's loopback never passes the netdev (a tbf on va counted 3
/// packets of a run), so no qdisc can shape what the probe waits behind; the ordering came from
/// the guest's two CPUs and held in most runs but not all (a rehearsal on a quiet machine gave
/// p99 18.8 us loaded against 30.8 us idle). A shaped wire needs the two guests, where tbf
/// panicked the guest kernel (tests/rxe/two-hosts.sh).
///
/// The load's thread shares the guest's two CPUs with the probe and both agents' busy polling;
/// seen once in CI, it sat out a retry timeout (one completer retry, 63 duplicate requests) and
/// moved nothing while the probe ran. That run must say so (a finding that names it, never
/// "within"), and it runs once more: a second starved run fails the test. The same for a phase
/// preempted past the bound (`pair.latency` says it, and it is not judged under load).
#[test]
fn lat_under_load_measures_both_phases_on_one_connection() {
    let _serial = require_rxe();
    let run = || {
        let out = Command::new(bin())
            .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json", "--tests", "lat_under_load", "--iters", "1000"])
            .output()
            .unwrap();
        let doc = json(&out);
        eprintln!("lat_under_load: exit {:?}\n{}", out.status.code(), doc["results"]);
        doc
    };
    let said = |doc: &serde_json::Value, id: &str, words: &dyn Fn(&str) -> bool| {
        doc["findings"].as_array().unwrap().iter().any(|f| f["id"] == id && f["message"].as_str().is_some_and(words))
    };
    let mut doc = run();
    if doc["results"][0]["under_load"]["load_gbps"].as_f64() == Some(0.0) {
        let starved = said(&doc, "pair.loaded_latency", &|m| m.contains("moved nothing measurable") && !m.contains("within"));
        assert!(starved, "a load that moved nothing must be said: {}", doc["findings"]);
        eprintln!("the load moved nothing while the probe ran (the guest's CPUs): once more");
        doc = run();
    } else if said(&doc, "pair.latency", &|m| m.starts_with("lat_under_load") && m.contains("preempted")) || idle_preempted(&doc) {
        // A phase whose loop lost its CPU past the bound is not judged under load (seen in CI:
        // one 16 ms gap in a 150 ms loaded phase, said by pair.latency; one 1 ms gap in a 28 ms
        // idle phase, which only the document's `preempt` shows): once more.
        eprintln!("a phase was preempted (the guest's CPUs): once more");
        doc = run();
    }
    let r = &doc["results"][0];
    assert_eq!((r["test"].as_str(), r["error"].as_str()), (Some("lat_under_load"), None), "{doc:#}");
    let u = &r["under_load"];
    let (loaded, idle) = (&r["lat_us"], &u["idle_lat_us"]);
    for (phase, lat) in [("loaded", loaded), ("idle", idle)] {
        let (p50, p99) = (lat["p50"].as_f64().unwrap_or(0.0), lat["p99"].as_f64().unwrap_or(0.0));
        assert!(p50 > 0.0 && p99 >= p50, "{phase} phase not measured: {r:#}");
    }
    // The ratios are the two phases' own figures (both rounded to 3 places in the document).
    let ratio = loaded["p99"].as_f64().unwrap() / idle["p99"].as_f64().unwrap();
    assert!((u["p99_ratio"].as_f64().unwrap() - ratio).abs() <= 0.01 * ratio.max(1.0), "{r:#}");
    assert!(u["load_qps"].as_u64().is_some_and(|q| q >= 1), "{r:#}");
    assert!(u["load_gbps"].as_f64().is_some_and(|g| g > 0.0), "the load moved nothing: {r:#}");
    let found: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.loaded_latency").collect();
    assert_eq!(found.len(), 1, "{}", doc["findings"]);
    assert_eq!(found[0]["severity"], "info", "Soft-RoCE is reported, not judged: {}", found[0]);
    // Every format carries it: the prom page's two lat_under_load series.
    let prom = Command::new(bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--format", "prom", "--tests", "lat_under_load", "--iters", "100"])
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&prom.stdout);
    for series in ["fabcheck_latency_idle_p99_seconds{", "fabcheck_loaded_latency_ratio{"] {
        assert!(page.lines().any(|l| l.starts_with(series) && l.contains("test=\"lat_under_load\"")), "no {series} in:\n{page}");
    }
}

fn scrape(addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the exporter");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The exporter serves a running burn-in's last interval (`--live-dir`), and once the run
/// ends its series go: `pair --report-every` on rxe0 beside `fabcheck exporter` on this guest.
#[test]
fn the_exporter_serves_a_running_burn_in_s_last_interval() {
    use std::io::BufRead;
    let _serial = require_rxe();
    let dir = scratch("live");
    let live = dir.join("live");
    let mut exporter = Command::new(bin())
        .args(["exporter", "--listen", "127.0.0.1:0", "--interval", "60", "--live-dir"])
        .arg(&live)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(exporter.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let addr: std::net::SocketAddr =
        line.split("http://").nth(1).and_then(|s| s.split('/').next()).and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    let mut pair = Command::new(bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json", "--tests", "write_bw", "--direction", "ab"])
        .args(["-D", "8", "--report-every", "1", "--live-dir"])
        .arg(&live)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let wait = |what: &str, ok: &dyn Fn(&str) -> bool| {
        let start = Instant::now();
        loop {
            let page = scrape(addr);
            if ok(&page) {
                return page;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "{what} never showed:\n{page}");
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    let series = "fabcheck_live_bandwidth_bytes_per_second{test=\"write_bw\",direction=\"a->b\",size=\"65536\"";
    let page = wait("the running write_bw's last interval", &|p| p.contains(series));
    eprintln!("{}", page.lines().filter(|l| l.starts_with("fabcheck_live_")).collect::<Vec<_>>().join("\n"));
    assert!(pair.wait().unwrap().success());
    wait("the ended run's series gone", &|p| p.contains("\nfabcheck_up 1") && !p.contains("fabcheck_live_"));
    let _ = exporter.kill();
    let _ = exporter.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether lat_under_load's idle phase lost its CPU (its `preempt` gap in the document): the
/// ratio is then not judged, and pair.latency (which speaks of the loaded phase) does not say so.
fn idle_preempted(doc: &serde_json::Value) -> bool {
    !doc["results"][0]["under_load"]["idle_lat_us"]["preempt"].is_null()
}
