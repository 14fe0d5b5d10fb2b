//! Faults injected in the guest: a killed peer, a link that goes down, packet loss, Ctrl-C,
//! refused memory registration. Each ends clearly, in bounded time, with nothing left running.

use super::{fabcheck, json, require_rxe, sh, Restore, DEVICE, NETDEV};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A fault run still going after this long is a hang: killed, and the test fails. A guard,
/// not a timing assertion: time belongs in benches/.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn spawn_pair(extra: &[&str]) -> Child {
    Command::new(super::bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the child under a hang guard (killed and failed past `limit`: a guard against a
/// hang, not a timing assertion); returns (exit code, seconds, stdout, stderr).
fn wait(mut child: Child, limit: Duration) -> (Option<i32>, f64, String, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                status.code(),
                start.elapsed().as_secs_f64(),
                String::from_utf8_lossy(&out.stdout).into(),
                String::from_utf8_lossy(&out.stderr).into(),
            );
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("fabcheck did not exit within {limit:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `PID ARGS` of every `fabcheck agent` process, read from /proc (no `ps | grep || true`
/// that would read as "none" when ps is missing).
fn agents_running() -> Vec<String> {
    let mut found: Vec<(u32, String)> = std::fs::read_dir("/proc")
        .expect("read /proc")
        .filter_map(|e| {
            let e = e.ok()?;
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<String> = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            (args.len() >= 2 && args[0].ends_with("fabcheck") && args[1] == "agent").then(|| (pid, args.join(" ")))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(pid, args)| format!("{pid} {args}")).collect()
}

fn assert_nothing_left() {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !agents_running().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(agents_running().is_empty(), "agents left running: {:?}", agents_running());
    // `rdma` itself must answer: a missing or failing tool is a failure, not "no QP".
    let qps =
        std::process::Command::new("rdma").args(["resource", "show", "qp", "link", &format!("{DEVICE}/1")]).output().expect("run rdma (iproute2)");
    let listing = String::from_utf8_lossy(&qps.stdout).into_owned();
    assert!(qps.status.success(), "rdma resource show qp failed: {}{listing}", String::from_utf8_lossy(&qps.stderr));
    // And it knows the device: its summary has a line for it (a listing of nothing proves nothing).
    let summary = std::process::Command::new("rdma").args(["resource", "show"]).output().expect("run rdma (iproute2)");
    let summary_text = String::from_utf8_lossy(&summary.stdout).into_owned();
    assert!(summary.status.success() && summary_text.contains(&format!("{DEVICE}:")), "rdma resource show does not list {DEVICE}: {summary_text:?}");
    let rc: Vec<&str> = listing.lines().filter(|l| l.contains(" type RC ")).collect();
    assert!(rc.is_empty(), "RC queue pairs left on {DEVICE}: {rc:#?}");
}

fn wait_for_agents(n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while agents_running().len() < n {
        assert!(Instant::now() < deadline, "agents never started");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until a test is running: two RC QPs in RTS on the device (the agents' preparation
/// takes longer on a busy host; a fixed sleep raced it).
fn wait_for_test_running() {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = sh("rdma resource show qp");
        assert!(out.status.success(), "rdma resource show qp failed: {}", String::from_utf8_lossy(&out.stderr));
        let rts = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("type RC") && l.contains("state RTS")).count();
        if rts >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the test never started (no two RC QPs in RTS)");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Into the measured loop, past the warm-up.
    std::thread::sleep(Duration::from_secs(1));
}

#[test]
fn peer_killed_mid_bandwidth_test() {
    let _serial = require_rxe();
    let child = spawn_pair(&["--tests", "write_bw", "--duration", "60", "--direction", "ab"]);
    wait_for_agents(2);
    std::thread::sleep(Duration::from_secs(2));
    let victim = agents_running()[1].split_whitespace().next().unwrap().to_string();
    assert!(sh(&format!("kill -9 {victim}")).status.success());
    let (code, secs, _, err) = wait(child, HANG_GUARD);
    eprintln!("peer killed mid write_bw: exit {code:?} after {secs:.1} s: {err}");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("localhost") && err.contains("agent lost"), "{err}");
    assert!(err.contains("what to do:"), "{err}");
    assert_nothing_left();
}

#[test]
fn peer_killed_mid_latency_test() {
    let _serial = require_rxe();
    let child = spawn_pair(&["--tests", "send_lat", "--duration", "60"]);
    wait_for_agents(2);
    std::thread::sleep(Duration::from_secs(2));
    let victim = agents_running()[0].split_whitespace().next().unwrap().to_string();
    assert!(sh(&format!("kill -9 {victim}")).status.success());
    let (code, secs, _, err) = wait(child, HANG_GUARD);
    eprintln!("peer killed mid send_lat: exit {code:?} after {secs:.1} s");
    assert_eq!(code, Some(2), "{err}");
    assert_nothing_left();
}

#[test]
fn sigterm_on_the_controller_stops_everything() {
    let _serial = require_rxe();
    let child = spawn_pair(&["--tests", "write_bw", "--duration", "60", "--direction", "ab"]);
    wait_for_agents(2);
    std::thread::sleep(Duration::from_secs(2));
    assert!(sh(&format!("kill -TERM {}", child.id())).status.success());
    let (code, secs, _, err) = wait(child, HANG_GUARD);
    eprintln!("SIGTERM: exit {code:?} after {secs:.1} s");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_nothing_left();
}

#[test]
fn link_down_mid_test_is_reported_not_hung() {
    let _serial = require_rxe();
    let _restore = Restore("ip link set va up");
    let child = spawn_pair(&["--tests", "write_bw", "--duration", "60", "--direction", "ab", "--stall-timeout-ms", "3000"]);
    wait_for_agents(2);
    wait_for_test_running();
    assert!(sh(&format!("ip link set {NETDEV} down")).status.success());
    let (code, secs, out, err) = wait(child, HANG_GUARD);
    eprintln!("link down mid write_bw: exit {code:?} after {secs:.1} s\n{out}\n{err}");
    // It ran and the test failed: exit 1, the result carries the failed completion's cause
    // (docs/reliability.md: retries exhausted, work flushed, local QP error, or no progress),
    // with its finding.
    assert_eq!(code, Some(1), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(doc["verdict"], "fail");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{doc}");
    assert_eq!((results[0]["test"].as_str(), results[0]["direction"].as_str()), (Some("write_bw"), Some("a->b")));
    let text = results[0]["error"].as_str().unwrap_or_else(|| panic!("the failed result has no error: {doc}"));
    // rxe, whose netdev went down under it, reports a local QP operation error (seen in the guest).
    let known = ["transport retries exhausted", "work was flushed", "no progress", "local QP operation error"];
    assert!(known.iter().any(|k| text.contains(k)), "cause {text:?} is none of the documented {known:?}");
    let finding = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "pair.write_bw").unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(finding["severity"], "error");
    assert!(finding["remedy"].as_str().is_some_and(|r| !r.is_empty()));
    assert_nothing_left();
}

#[test]
fn packet_loss_shows_in_the_result() {
    let _serial = require_rxe();
    let _restore = Restore("tc qdisc del dev va root 2>/dev/null; true");
    assert!(sh(&format!("tc qdisc add dev {NETDEV} root netem loss 3%")).status.success(), "netem unavailable");
    let out = fabcheck(&[
        "pair",
        "localhost",
        "localhost",
        "--device",
        DEVICE,
        "--json",
        "--tests",
        "send_lat,write_bw",
        "--iters",
        "300",
        "--direction",
        "ab",
    ]);
    let doc = json(&out);
    eprintln!("3% loss: exit {:?}, findings {}", out.status.code(), doc["findings"]);
    // The tests complete (warnings at most, no error: exit 0), and the loss is named by the
    // retransmission counters that rose, in the results and as a pair.retransmission warning.
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let results = doc["results"].as_array().unwrap();
    assert!(results.iter().all(|r| r["error"].is_null()), "{doc}");
    assert!(results.iter().any(|r| r["counters"].as_object().is_some_and(|c| !c.is_empty())), "no counter moved under 3% loss: {doc}");
    let retrans: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.retransmission").collect();
    assert!(!retrans.is_empty(), "3% loss passed without a pair.retransmission finding: {}", doc["findings"]);
    assert!(retrans.iter().all(|f| f["severity"] == "warning"), "{retrans:?}");
}

#[test]
fn memlock_too_low_is_named() {
    let _serial = require_rxe();
    // As an unprivileged user (root's CAP_IPC_LOCK ignores the limit) with 64 KiB locked memory.
    let _restore = Restore("chmod 600 /dev/infiniband/uverbs0");
    assert!(sh("chmod 666 /dev/infiniband/uverbs0").status.success());
    // The checkout may live where that user cannot reach (a 0700 home): run a copy of the
    // binary from a directory everyone can read instead of depending on where the clone is.
    let dir = std::path::PathBuf::from(format!("/tmp/fabcheck-memlock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("fabcheck");
    std::fs::copy(super::bin(), &copy).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bin = copy.display().to_string();
    let out = sh(&format!(
        "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'ulimit -l 64; {bin} pair localhost localhost --device {DEVICE} --tests write_bw --size 1048576 --iters 10 --direction both'"
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("memlock 64 KiB: exit {:?}: {err}", out.status.code());
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("RLIMIT_MEMLOCK") && err.contains("64 KiB"), "{err}");
    assert!(err.contains("memlock unlimited"), "{err}");
    let check = sh(&format!("setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'ulimit -l 64; {bin} check --json --device {DEVICE}'"));
    let doc = json(&check);
    assert!(doc["findings"].as_array().unwrap().iter().any(|f| f["id"] == "stack.memlock" && f["severity"] == "error"), "{}", doc["findings"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn wrong_device_and_port_are_exit_2() {
    let _serial = require_rxe();
    let out = fabcheck(&["pair", "localhost", "localhost", "--device", "mlx5_7", "--tests", "send_lat"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no RDMA device named 'mlx5_7'") && err.contains("what to do:"), "{err}");
    let out = fabcheck(&["pair", "localhost", "localhost", "--device", "rxe0:3", "--tests", "send_lat"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rxe0 has no port 3"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_nothing_left();
}
