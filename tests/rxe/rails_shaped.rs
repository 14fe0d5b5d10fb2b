//! A token bucket (`tc tbf`) on one rail's link between the two guests (issues #53 and #55), run
//! in guest 1 of `--guests 2 --rails N` with the other rails tests (tests/rxe/two-hosts.sh).
//!
//! The bucket is not put on rxe's own netdev: there it panicked Debian 6.1's kernel (a packet
//! the bucket still holds points at its QP's socket, which destroying the QP frees). The rail is
//! routed instead through a namespace of its own (tests/rxe/shaped-rail.sh): the router orphans
//! every packet it forwards (ip_rcv_core), so the bucket on the rail's link inside that namespace
//! holds packets that are no longer rxe's. The rail keeps its device, address and peer; only its
//! rxe moves onto a veth into the router. Measured in this tier before these tests were written:
//! 63,000 packets dropped by such buckets across QPs made and destroyed, no panic.
//!
//! Assertions are on what the fault must change, never on wall time: the shaped rail alone named
//! by `pair` and by `collective`; a loaded p99 above the idle one behind the bucket.

use super::two_hosts::{collective_across_with, pair_across, peer, STALL_MS};
use super::{array, assert_only_rail_named, assert_rails_doc, rails, stderr, text, wait_all_active};
use crate::{fabcheck, json, num, require_rxe, sh};
use serde_json::Value;
use std::process::{Command, Output};

fn script() -> String {
    format!("{}/tests/rxe/shaped-rail.sh", env!("CARGO_MANIFEST_DIR"))
}

/// Rail `k` of this guest (guest 1) routed through namespace `shapeK` with `qdisc` on its link;
/// given back as the guest booted (rxeK on ethK again, ACTIVE) on drop.
struct ShapedRail {
    k: usize,
    rails: Vec<(String, String)>,
}

impl ShapedRail {
    fn up(rails: &[(String, String)], k: usize, qdisc: &str) -> ShapedRail {
        let guard = ShapedRail { k, rails: rails.to_vec() };
        let up = Command::new(script()).args(["1", &k.to_string(), "up"]).output().expect("run shaped-rail.sh");
        assert!(up.status.success(), "shaped-rail.sh 1 {k} up: {}", String::from_utf8_lossy(&up.stderr));
        let add = sh(&format!("ip netns exec shape{k} tc qdisc add dev eth{k} root {qdisc}"));
        assert!(add.status.success(), "{qdisc} unavailable (sch_tbf): {}", String::from_utf8_lossy(&add.stderr));
        guard
    }

    /// The bucket's packets sent (`tc -s`: "Sent N bytes M pkt (dropped D, ..."), and its text.
    fn sent_packets(&self) -> (u64, String) {
        let k = self.k;
        let out = sh(&format!("ip netns exec shape{k} tc -s qdisc show dev eth{k}"));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let packets = text.split_whitespace().skip_while(|w| *w != "bytes").nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        (packets, text)
    }
}

impl Drop for ShapedRail {
    fn drop(&mut self) {
        let _ = Command::new(script()).args(["1", &self.k.to_string(), "down"]).output();
        wait_all_active(&self.rails);
    }
}

/// A 1 Mbit/s bucket on rail 1's link (about a quarter of an emulated rail's figure when all
/// rails run at once, benches/rails.sh): `pair --rails` names rail 1 and no other.
#[test]
fn a_rate_limited_rail_is_named() {
    let _serial = require_rxe();
    let rails = rails();
    let bad = 1 % rails.len();
    let shaped = ShapedRail::up(&rails, bad, "tbf rate 1mbit burst 32kb latency 100ms");
    let (out, doc) = pair_across(&["--tests", "write_bw", "--iters", "40", "--direction", "ab"]);
    eprintln!("bucket: {}", shaped.sent_packets().1);
    assert_rails_doc(&doc, &rails);
    assert_only_rail_named(&out, &doc, &rails, bad, "a 1 Mbit/s tbf");
    assert!(shaped.sent_packets().0 > 0, "nothing crossed the bucket: {}", shaped.sent_packets().1);
}

/// Whether a collective suspect is rail `k`'s: the rail itself, or a hop or member on its device.
fn of_rail(s: &Value, k: usize, dev: &str) -> bool {
    let subject = text(s, "subject");
    subject == format!("rail {k}") || subject.split(|c: char| c.is_whitespace()).any(|w| w.ends_with(&format!("/{dev}")))
}

/// allreduce over every rail across the guests with a 1 Mbit/s bucket on rail 2's link (guest
/// 1's side): the run fails and names rail 2, and no other rail, as a rail suspect (the
/// bucket's hops are 40-60x the other rails' hops, so this holds in every run); and rail 2's
/// slow hop is named as a link suspect in at least one of up to three runs.
///
/// What is not asserted, and why: which hops of the *other* rails are named. A two-member
/// ring judges each hop against its one other hop, and under emulation one guest's vCPUs are
/// often starved for a run: its hops out are then 4-6x its peer's on every rail, and fabcheck
/// says so, as a link suspect on a rail (6.8x on rail 3, 5.7x on rail 0: stop 65's rehearsal)
/// or as the node (`localhost: every hop out of it is slow (8 hops, up to 6.0x ...)`, with
/// unshaped hops of 14.3 ms out and 2.8 ms back: this stop's). Those are true readings of the
/// emulation, not of the bucket; the hop rules themselves are tested on exact figures
/// (`collective::blame`, `tests/integration/collective.rs`). A run without them ends the test
/// early.
#[test]
fn collective_rate_limited_rail_names_that_rail_alone() {
    let _serial = require_rxe();
    let rails = rails();
    let bad = 2 % rails.len();
    let dev = rails[bad].0.clone();
    let shaped = ShapedRail::up(&rails, bad, "tbf rate 1mbit burst 16kb limit 32kb");
    let mut hop_named = false;
    for attempt in 1..=3 {
        let (out, doc) = collective_across_with("allreduce", "256K", "6", "3");
        let steps: Vec<(Option<u64>, Vec<f64>)> = array(&doc, "rings")
            .iter()
            .map(|r| (r["rail"].as_u64(), array(r, "hops").iter().filter_map(|h| h["step_us"]["p50"].as_f64()).collect()))
            .collect();
        eprintln!(
            "collective, 1 Mbit/s bucket on rail {bad} (run {attempt}): exit {:?}, suspects {}, hop p50 steps us {steps:?}",
            out.status.code(),
            doc["suspects"]
        );
        eprintln!("bucket: {}", shaped.sent_packets().1);
        assert_eq!(out.status.code(), Some(1), "a 1 Mbit/s rail must fail the run: {}\n{}", doc["findings"], stderr(&out));
        assert_eq!(array(&doc, "rings").len(), rails.len(), "one ring per rail: {doc}");
        let suspects = array(&doc, "suspects");
        assert!(suspects.iter().any(|s| s["kind"] == "rail" && of_rail(s, bad, &dev)), "no rail suspect names rail {bad}: {suspects:?}");
        let other_rails: Vec<&Value> = suspects.iter().filter(|s| s["kind"] == "rail" && !of_rail(s, bad, &dev)).collect();
        assert!(other_rails.is_empty(), "another rail named for rail {bad}'s bucket: {other_rails:?}");
        hop_named |= suspects.iter().any(|s| s["kind"] == "link" && of_rail(s, bad, &dev));
        let others: Vec<&Value> = suspects.iter().filter(|s| !of_rail(s, bad, &dev)).collect();
        if hop_named && others.is_empty() {
            break;
        }
        if !others.is_empty() {
            eprintln!("emulation's hop noise beside rail {bad} (run {attempt}, see the comment): {others:?}");
        }
    }
    assert!(hop_named, "no run of three named rail {bad}'s slow hop as a link suspect");
    assert!(shaped.sent_packets().0 > 0, "nothing crossed the bucket: {}", shaped.sent_packets().1);
}

/// `lat_under_load` across the guests on rail 2 with a 20 Mbit/s bucket of 50 ms on its link
/// (guest 1's egress): the load's writes fill the bucket and the probe's pings wait behind them,
/// so the loaded p99 is above the idle one. Measured in this tier (200 pings): 0.7, 1.27, 1.31,
/// 1.48, 1.58, 1.9, 2.1 and 2.5x. The idle round trip across the emulated link is already about
/// 22 ms and its tail moves with the host's load (the 0.7: an idle p99 of 61 ms while other
/// builds ran), and the bucket drops what it cannot hold, so the load pauses for rxe's 67 ms
/// retry timeouts and the bucket drains meanwhile. So: 300 pings, and a run whose loaded p99 is
/// not above its idle one is run once more; twice is a defect. The verdict is not asserted:
/// whether the ratio crosses `--load-threshold` (4x) is the emulation's business.
#[test]
fn lat_under_load_behind_a_token_bucket_is_above_idle() {
    let _serial = require_rxe();
    let rails = rails();
    let bad = 2 % rails.len();
    let dev = rails[bad].0.clone();
    let shaped = ShapedRail::up(&rails, bad, "tbf rate 20mbit burst 16kb latency 50ms");
    for attempt in 1..=2 {
        let (loaded, idle, load_gbps) = loaded_and_idle_p99(&dev);
        eprintln!("bucket: {}", shaped.sent_packets().1);
        eprintln!(
            "lat_under_load behind a 20 Mbit/s bucket on rail {bad} (run {attempt}): p99 {loaded} us loaded vs {idle} us idle, the load {load_gbps} Gb/s"
        );
        // A load that moved nothing while the probe ran (its thread starved on the guest's CPUs)
        // leaves idle figures in the loaded phase: that run says nothing either way.
        if loaded > idle && load_gbps > 0.0 {
            break;
        }
        assert!(attempt < 2, "twice, the loaded p99 ({loaded} us) is not above the idle one ({idle} us) behind the bucket, or the load moved nothing ({load_gbps} Gb/s)");
    }
    assert!(shaped.sent_packets().0 > 0, "nothing crossed the bucket: {}", shaped.sent_packets().1);
}

/// One `pair localhost/DEV PEER/DEV --tests lat_under_load` across the guests: its loaded and
/// idle p99, microseconds, and what the load moved, after checking the result is whole.
fn loaded_and_idle_p99(dev: &str) -> (f64, f64, f64) {
    let bin = crate::remote_bin();
    let a = format!("localhost/{dev}");
    let b = format!("{}/{dev}", peer());
    let args = [
        "pair",
        &a,
        &b,
        "--remote-fabcheck",
        &bin,
        "--tests",
        "lat_under_load",
        "--iters",
        "300",
        "--direction",
        "ab",
        "--stall-timeout-ms",
        STALL_MS,
        "--json",
    ];
    let out: Output = fabcheck(&args);
    let doc = json(&out);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{}", stderr(&out));
    let result = array(&doc, "results").iter().find(|r| r["test"] == "lat_under_load").unwrap_or_else(|| panic!("no lat_under_load result: {doc}"));
    assert!(result["error"].is_null(), "{result}");
    let under = &result["under_load"];
    let load_gbps = num(under, "load_gbps");
    let (loaded, idle) = (num(&result["lat_us"], "p99"), num(&under["idle_lat_us"], "p99"));
    let ratio = num(under, "p99_ratio");
    assert!((ratio - loaded / idle).abs() < 0.01, "p99_ratio {ratio} is not {loaded} / {idle}: {under}");
    (loaded, idle, load_gbps)
}
