//! Faults injected in the guest: a killed peer, a link that goes down, packet loss, Ctrl-C,
//! refused memory registration. Each ends clearly, in bounded time, with nothing left running.

use super::{fabcheck, json, require_rxe, sh, Restore, DEVICE, NETDEV};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn_pair(extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the child with a deadline; returns (exit code, seconds, stdout, stderr).
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

fn agents_running() -> Vec<String> {
    let out = sh("ps -eo pid,args | grep '[f]abcheck agent' || true");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

fn assert_nothing_left() {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !agents_running().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(agents_running().is_empty(), "agents left running: {:?}", agents_running());
    let qps = sh(&format!("rdma resource show qp link {DEVICE}/1 2>/dev/null | grep -c RC || true"));
    let count: u32 = String::from_utf8_lossy(&qps.stdout).trim().parse().unwrap_or(0);
    assert_eq!(count, 0, "RC queue pairs left on {DEVICE}");
}

fn wait_for_agents(n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while agents_running().len() < n {
        assert!(Instant::now() < deadline, "agents never started");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn peer_killed_mid_bandwidth_test() {
    let _serial = require_rxe();
    let child = spawn_pair(&["--tests", "write_bw", "--duration", "60", "--direction", "ab"]);
    wait_for_agents(2);
    std::thread::sleep(Duration::from_secs(2));
    let victim = agents_running()[1].split_whitespace().next().unwrap().to_string();
    assert!(sh(&format!("kill -9 {victim}")).status.success());
    let (code, secs, _, err) = wait(child, Duration::from_secs(30));
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
    let (code, secs, _, err) = wait(child, Duration::from_secs(30));
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
    let (code, secs, _, err) = wait(child, Duration::from_secs(30));
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
    std::thread::sleep(Duration::from_secs(2));
    assert!(sh(&format!("ip link set {NETDEV} down")).status.success());
    let (code, secs, out, err) = wait(child, Duration::from_secs(60));
    eprintln!("link down mid write_bw: exit {code:?} after {secs:.1} s\n{out}\n{err}");
    assert!(matches!(code, Some(1) | Some(2)), "{err}");
    if code == Some(1) {
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let failed = doc["results"].as_array().unwrap().iter().find(|r| r["error"].is_string()).expect("a failed result");
        let text = failed["error"].as_str().unwrap();
        assert!(text.contains("retries") || text.contains("flushed") || text.contains("no progress") || text.contains("error"), "{text}");
    } else {
        assert!(err.contains("what to do:"), "{err}");
    }
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
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{}", String::from_utf8_lossy(&out.stderr));
    let ids: Vec<&str> = doc["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    let counters_moved = doc["results"].as_array().unwrap().iter().any(|r| r["counters"].is_object());
    assert!(ids.contains(&"pair.retransmission") || ids.contains(&"pair.tail") || counters_moved, "3% loss passed silently: {ids:?}");
}

#[test]
fn memlock_too_low_is_named() {
    let _serial = require_rxe();
    // As an unprivileged user (root's CAP_IPC_LOCK ignores the limit) with 64 KiB locked memory.
    let _restore = Restore("chmod 600 /dev/infiniband/uverbs0");
    assert!(sh("chmod 666 /dev/infiniband/uverbs0").status.success());
    let bin = env!("CARGO_BIN_EXE_fabcheck");
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
}

#[test]
fn wrong_device_and_port_are_exit_2_within_seconds() {
    let _serial = require_rxe();
    let start = Instant::now();
    let out = fabcheck(&["pair", "localhost", "localhost", "--device", "mlx5_7", "--tests", "send_lat"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mlx5_7"));
    let out = fabcheck(&["pair", "localhost", "localhost", "--device", "rxe0:3", "--tests", "send_lat"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_nothing_left();
}
