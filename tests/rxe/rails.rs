//! `pair --rails` and `mesh --rails` (issue #29) on a guest booted with
//! `soft-roce-setup.sh --vm --rails N`: rail k is rxeK on its own netdev and subnet
//! (`FABCHECK_VM_RAIL_DEVS`, `FABCHECK_VM_RAIL_NETDEVS`). Run only by `tests/rxe/run.sh --rails`
//! (plain `run.sh` skips `rails::`): `one_host` everywhere such a guest is, `two_hosts` in guest 1
//! of `--guests 2 --rails N` (guest 2 reached over ssh as `root@$FABCHECK_VM_PEER_ADDR`, set up by
//! tests/rxe/two-hosts.sh). Every test fails, rather than passes, on a guest without rails.
//!
//! The JSON is read as docs/contract.md ("Whole nodes: every rail at once") states it: `rails[]`
//! with `rail`, `a`, `b`, `results`; `aggregate[]` with `test`, `direction`, `size`, `rails`,
//! `bw_gbps`, `msg_rate_mpps`, `capacity_gbps`; the top-level `results` empty; findings
//! `pair.rail`, `pair.aggregate`, `pair.rail.unreachable` with subjects `rail K (A DEV <-> B DEV)`.

use super::{fabcheck, json, num, require_rxe, sh, text};
use serde_json::Value;
use std::process::Output;
use std::time::{Duration, Instant};

/// A token bucket on one rail's link, routed so that it cannot panic the guest (two guests).
#[path = "rails_shaped.rs"]
mod shaped;

/// The rails of this guest, in rail order: (rxe device, its netdev). Panics on a guest booted
/// without `--rails N` (N >= 2) or whose devices are not there: a rails test must not pass here.
fn rails() -> Vec<(String, String)> {
    let n: usize = std::env::var("FABCHECK_VM_RAILS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(
        n >= 2,
        "rails tier: FABCHECK_VM_RAILS is {n:?}; boot the guest with `./soft-roce-setup.sh --vm --rails 4 -- tests/rxe/run.sh --rails BIN`"
    );
    let devs: Vec<String> = std::env::var("FABCHECK_VM_RAIL_DEVS").unwrap_or_default().split_whitespace().map(String::from).collect();
    let netdevs: Vec<String> = std::env::var("FABCHECK_VM_RAIL_NETDEVS").unwrap_or_default().split_whitespace().map(String::from).collect();
    assert!(devs.len() == n && netdevs.len() == n, "rails tier: {n} rails but devices {devs:?}, netdevs {netdevs:?}");
    for (dev, netdev) in devs.iter().zip(&netdevs) {
        let under = std::fs::read_to_string(format!("/sys/class/infiniband/{dev}/ports/1/gid_attrs/ndevs/0")).unwrap_or_default();
        assert_eq!(under.trim(), netdev, "rails tier: {dev} is not on {netdev}");
    }
    devs.into_iter().zip(netdevs).collect()
}

/// `--rail-threshold` for the clean runs: concurrent rails under emulation spread far wider than
/// hardware's (benches/rails.sh, tests/vm/README.md "Rails": with 4 rails at once a rail's figure
/// fell anywhere from 0 to 4x its siblings' median, rxe's 67 ms retry timeouts and the shared
/// host CPU deciding it), so a clean run judged against its siblings at the default 50% fails by
/// chance. These runs prove the pairing, the per-rail results and the aggregate; the judging of
/// one rail against its siblings is proven by the fault tests, where the rail falls far lower.
const CLEAN_RAIL_THRESHOLD: &str = "1";

/// Runs a shell command on drop: undoes a fault on one rail's netdev (the crate's `Restore`
/// takes only a fixed command; the netdev here is the rail's).
struct Undo(String);

impl Drop for Undo {
    fn drop(&mut self) {
        let _ = sh(&self.0);
        // Let rxe notice the netdev event before the next test.
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Waits (bounded) until every rail's port is ACTIVE again after a fault was undone.
fn wait_all_active(rails: &[(String, String)]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for (dev, _) in rails {
        let path = format!("/sys/class/infiniband/{dev}/ports/1/state");
        while !std::fs::read_to_string(&path).unwrap_or_default().contains("ACTIVE") {
            assert!(Instant::now() < deadline, "{dev} did not come back ACTIVE");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn array<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key].as_array().unwrap_or_else(|| panic!("no array '{key}' in {v}"))
}

/// The `--rails` document's shape: one entry per rail, in order, rail k's sides on device k at
/// both ends, the top-level results empty and `a`/`b` rail 0's sides.
fn assert_rails_doc(doc: &Value, rails: &[(String, String)]) {
    assert_eq!(doc["schema"], "fabcheck.pair.v1", "{doc}");
    assert!(array(doc, "results").is_empty(), "with --rails the top-level results are empty: {doc}");
    let entries = array(doc, "rails");
    assert_eq!(entries.len(), rails.len(), "one entry per rail: {doc}");
    for (k, (entry, (dev, _))) in entries.iter().zip(rails).enumerate() {
        assert_eq!(entry["rail"].as_u64(), Some(k as u64), "{entry}");
        for side in ["a", "b"] {
            assert_eq!(text(&entry[side], "device"), dev, "rail {k} {side}: {entry}");
            text(&entry[side], "host");
        }
        array(entry, "results");
    }
    assert_eq!(doc["a"], entries[0]["a"], "top-level a is rail 0's side");
    assert_eq!(doc["b"], entries[0]["b"], "top-level b is rail 0's side");
    for f in array(doc, "findings") {
        for key in ["id", "severity", "subject", "message", "remedy"] {
            text(f, key);
        }
    }
}

/// Rail `k`'s results for `tests`: every one present, a->b, without an error.
fn assert_rail_ok(doc: &Value, k: usize, tests: &[&str]) {
    let results = array(&array(doc, "rails")[k], "results");
    for t in tests {
        let r = results
            .iter()
            .find(|r| r["test"] == *t && r["direction"] == "a->b")
            .unwrap_or_else(|| panic!("rail {k} has no {t} a->b result: {results:?}"));
        assert!(r["error"].is_null(), "rail {k} {t}: {r}");
        if t.ends_with("_bw") {
            assert!(num(r, "bw_gbps") > 0.0, "rail {k} {t}: {r}");
        } else {
            assert!(num(&r["lat_us"], "p50") > 0.0, "rail {k} {t}: {r}");
        }
    }
}

/// The findings with `id`, and whether each names rail `k` (subject `rail K (A DEV <-> B DEV)`).
fn findings<'a>(doc: &'a Value, id: &str) -> Vec<&'a Value> {
    array(doc, "findings").iter().filter(|f| f["id"] == id).collect()
}

fn names_rail(f: &Value, k: usize, dev: &str) -> bool {
    let subject = text(f, "subject");
    subject.starts_with(&format!("rail {k} (")) && subject.contains(" <-> ") && subject.matches(dev).count() == 2
}

/// Rail `bad` alone is named (at least once, no other rail), with exit 1: by `pair.rail` (below
/// its siblings) or, where the fault stopped a test, by that test's error. The other rails report
/// their bandwidth without an error. Info findings (each rail's "reported, not judged") name
/// every rail and are not counted.
fn assert_only_rail_named(out: &Output, doc: &Value, rails: &[(String, String)], bad: usize, fault: &str) {
    let judged = |f: &&Value| f["severity"] == "warning" || f["severity"] == "error";
    let named: Vec<&Value> = array(doc, "findings")
        .iter()
        .filter(judged)
        .filter(|f| f["id"] == "pair.rail" || f["id"].as_str().is_some_and(|id| id.ends_with("_bw")))
        .collect();
    eprintln!("{fault} on rail {bad}: exit {:?}, findings {}", out.status.code(), doc["findings"]);
    assert_eq!(out.status.code(), Some(1), "{fault} on rail {bad} must fail the run: {}", stderr(out));
    assert!(!named.is_empty(), "{fault} on rail {bad}: no pair.rail warning and no failed test: {}", doc["findings"]);
    for f in &named {
        assert!(names_rail(f, bad, &rails[bad].0), "{fault} on rail {bad}: another rail named: {f}");
    }
    assert!(findings(doc, "pair.rail.unreachable").is_empty(), "{}", doc["findings"]);
    for k in (0..rails.len()).filter(|k| *k != bad) {
        assert_rail_ok(doc, k, &["write_bw"]);
    }
}

/// Both ends on this guest: rail k is rxeK at both ends (the loopback path of each device).
/// No qdisc fault here: rxe's loopback never passes the netdev (measured: `netem loss 10%` or a
/// 10 Mbit/s tbf on va2 left rxe2's ib_write_bw unchanged and va2's tx_packets still), so loss
/// and rate faults on one rail are tested across two guests (`two_hosts`).
pub mod one_host {
    use super::*;

    const TESTS: &str = "send_lat,write_bw,read_bw";

    fn pair_rails(extra: &[&str]) -> (Output, Value) {
        let mut args = vec!["pair", "localhost", "localhost", "--rails", "auto", "--json"];
        args.extend_from_slice(extra);
        let out = fabcheck(&args);
        let doc = json(&out);
        (out, doc)
    }

    #[test]
    fn every_rail_paired_k_to_k_with_an_aggregate() {
        let _serial = require_rxe();
        let rails = rails();
        let (out, doc) = pair_rails(&["--tests", TESTS, "--iters", "300", "--direction", "ab", "--rail-threshold", CLEAN_RAIL_THRESHOLD]);
        eprintln!(
            "--rails auto on {} rails: exit {:?}, aggregate {}, findings {}",
            rails.len(),
            out.status.code(),
            doc["aggregate"],
            doc["findings"]
        );
        assert_rails_doc(&doc, &rails);
        for k in 0..rails.len() {
            assert_rail_ok(&doc, k, &["send_lat", "write_bw", "read_bw"]);
        }
        // The node's total per bandwidth test, over every rail; none for latency.
        let aggregate = array(&doc, "aggregate");
        for t in ["write_bw", "read_bw"] {
            let a = aggregate
                .iter()
                .find(|a| a["test"] == t && a["direction"] == "a->b")
                .unwrap_or_else(|| panic!("no {t} a->b aggregate: {aggregate:?}"));
            assert_eq!(a["rails"].as_u64(), Some(rails.len() as u64), "{a}");
            assert!(a["size"].as_u64().is_some(), "{a}");
            assert!(num(a, "bw_gbps") > 0.0 && num(a, "msg_rate_mpps") > 0.0, "{a}");
            assert!(a.get("capacity_gbps").is_some(), "capacity_gbps key (null on rxe): {a}");
        }
        assert!(aggregate.iter().all(|a| a["test"] != "send_lat"), "latency has no aggregate: {aggregate:?}");
        assert_eq!(out.status.code(), Some(0), "clean rails must pass: {}\n{}", doc["findings"], stderr(&out));
        assert_eq!(doc["verdict"], "pass");
    }

    #[test]
    fn a_rail_whose_port_is_down_is_unreachable_while_the_others_report() {
        let _serial = require_rxe();
        let rails = rails();
        let down = 2 % rails.len();
        let (dev, netdev) = rails[down].clone();
        let _restore = Undo(format!("ip link set {netdev} up"));
        assert!(sh(&format!("ip link set {netdev} down")).status.success());
        let (out, doc) =
            pair_rails(&["--tests", "send_lat,write_bw", "--iters", "200", "--direction", "ab", "--rail-threshold", CLEAN_RAIL_THRESHOLD]);
        eprintln!("{netdev} down: exit {:?}, findings {}", out.status.code(), doc["findings"]);
        // The rail stays in the list (numbering never shifts), named unreachable; the run ran.
        assert_rails_doc(&doc, &rails);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let unreachable = findings(&doc, "pair.rail.unreachable");
        assert!(unreachable.iter().any(|f| names_rail(f, down, &dev) && f["severity"] == "error"), "{}", doc["findings"]);
        assert!(unreachable.iter().all(|f| names_rail(f, down, &dev)), "another rail named unreachable: {}", doc["findings"]);
        for k in (0..rails.len()).filter(|k| *k != down) {
            assert_rail_ok(&doc, k, &["send_lat", "write_bw"]);
        }
        drop(_restore);
        wait_all_active(&rails);
    }
}

/// Exit 2, naming both rail counts and what to do.
fn assert_mismatch(out: &Output, a: usize, b: usize) {
    let err = stderr(out);
    eprintln!("{a} rails against {b}: exit {:?}: {err}", out.status.code());
    assert_eq!(out.status.code(), Some(2), "{err}");
    let (n, m) = (a.to_string(), b.to_string());
    assert!(err.contains(&n) && err.contains(&m), "the error names both counts ({n}, {m}): {err}");
    assert!(err.contains("what to do:"), "{err}");
}

/// Guest 1 to guest 2 over the N links of `--guests 2 --rails N`, over ssh (two-hosts.sh puts
/// the client and its key on PATH, and the binary at one plain path on both guests in
/// `FABCHECK_REMOTE_BIN`; guest 2 runs sshd).
pub mod two_hosts {
    use super::*;

    /// `--stall-timeout-ms` across the guests: four rails at once share two emulated CPUs and
    /// four socket links of a few Mbit/s each, where one signalled batch of 64 KiB writes can take
    /// longer than the default 5 s to complete (measured: every rail's write_bw "no progress for
    /// 5000 ms" on a clean run). A stall is still an error, only later.
    pub(super) const STALL_MS: &str = "30000";

    pub(super) fn peer() -> String {
        let addr = std::env::var("FABCHECK_VM_PEER_ADDR").unwrap_or_else(|_| {
            panic!("rails two-host tier: no FABCHECK_VM_PEER_ADDR; run in guest 1 of `--guests 2 --rails 4` (tests/rxe/two-hosts.sh)")
        });
        format!("root@{addr}")
    }

    /// `pair localhost root@PEER --rails auto --json EXTRA`: its output, unread.
    fn pair_across_raw(extra: &[&str]) -> Output {
        let peer = peer();
        let bin = super::super::remote_bin();
        let mut args = vec!["pair", "localhost", &peer, "--rails", "auto", "--remote-fabcheck", &bin, "--json", "--stall-timeout-ms", STALL_MS];
        args.extend_from_slice(extra);
        fabcheck(&args)
    }

    pub(super) fn pair_across(extra: &[&str]) -> (Output, Value) {
        let out = pair_across_raw(extra);
        let doc = json(&out);
        (out, doc)
    }

    #[test]
    fn pair_across_guests_rail_by_rail() {
        let _serial = require_rxe();
        let rails = rails();
        let (out, doc) =
            pair_across(&["--tests", "send_lat,write_bw", "--iters", "100", "--direction", "ab", "--rail-threshold", CLEAN_RAIL_THRESHOLD]);
        eprintln!("two guests, {} rails: exit {:?}, aggregate {}, findings {}", rails.len(), out.status.code(), doc["aggregate"], doc["findings"]);
        assert_rails_doc(&doc, &rails);
        let entries = array(&doc, "rails");
        for (k, entry) in entries.iter().enumerate() {
            assert_ne!(text(&entry["a"], "host"), text(&entry["b"], "host"), "rail {k} on one host: {entry}");
            assert_rail_ok(&doc, k, &["send_lat", "write_bw"]);
        }
        let aggregate = array(&doc, "aggregate");
        assert!(aggregate.iter().any(|a| a["test"] == "write_bw" && a["rails"].as_u64() == Some(rails.len() as u64)), "{aggregate:?}");
        assert_eq!(out.status.code(), Some(0), "{}\n{}", doc["findings"], stderr(&out));
        assert_eq!(doc["verdict"], "pass");
    }

    #[test]
    fn loss_on_one_rail_names_that_rail() {
        let _serial = require_rxe();
        let rails = rails();
        let bad = 2 % rails.len();
        let netdev = rails[bad].1.clone();
        let _restore = Undo(format!("tc qdisc del dev {netdev} root 2>/dev/null; true"));
        assert!(sh(&format!("tc qdisc add dev {netdev} root netem loss 2%")).status.success(), "netem unavailable");
        let (out, doc) = pair_across(&["--tests", "write_bw", "--iters", "100", "--direction", "ab"]);
        assert_rails_doc(&doc, &rails);
        assert_only_rail_named(&out, &doc, &rails, bad, "2% loss across guests");
    }

    /// `collective localhost root@PEER --rails auto --op OP`: one ring of two members per rail,
    /// every rail at once (issue #53). Small chunks and few iterations: the emulated rails carry a
    /// few Mbit/s each.
    fn collective_across(op: &str) -> (Output, Value) {
        collective_across_with(op, "256K", "10", CLEAN_HOP_THRESHOLD)
    }

    /// `collective localhost root@PEER --rails auto --op OP --size SIZE --iters N
    /// --hop-threshold X --json`: its output and document.
    pub(super) fn collective_across_with(op: &str, size: &str, iters: &str, hop_threshold: &str) -> (Output, Value) {
        let peer = peer();
        let bin = super::super::remote_bin();
        let args = [
            "collective",
            "localhost",
            &peer,
            "--rails",
            "auto",
            "--op",
            op,
            "--size",
            size,
            "--iters",
            iters,
            "--hop-threshold",
            hop_threshold,
            "--remote-fabcheck",
            &bin,
            "--json",
        ];
        let out = fabcheck(&args);
        let doc = json(&out);
        (out, doc)
    }

    /// The rings of a collective document: one per rail, each with its two hops and a figure.
    fn assert_rings(doc: &Value, rails: &[(String, String)], op: &str) {
        assert_eq!(doc["schema"], "fabcheck.collective.v1", "{doc}");
        assert_eq!(array(doc, "members").len(), 2 * rails.len(), "{op}: two hosts, one member per rail each: {doc}");
        let rings = array(doc, "rings");
        assert_eq!(rings.len(), rails.len(), "{op}: one ring per rail: {doc}");
        for ring in rings {
            assert!(!array(ring, "hops").is_empty(), "{op}: a ring without hops: {ring}");
            assert!(ring["busbw_gbps"].as_f64().is_some_and(|b| b > 0.0), "{op}: no busbw: {ring}");
        }
        assert!(doc["total"]["busbw_gbps"].as_f64().is_some_and(|b| b > 0.0), "{op}: no total busbw: {doc}");
    }

    /// `--hop-threshold` for the clean collectives across the guests. Without KVM a clean hop's
    /// median step can be several times its ring's median hop (measured in this tier, default
    /// threshold 2x: 3 of 6 clean runs of 20 or 40 iterations named a hop, at 2.2-4.2x), where
    /// hardware's hops are within a few percent. The faults it must still catch are far above it:
    /// a 1 Mbit/s rail's hops are 40-60x the other rails' (`rails::shaped`).
    const CLEAN_HOP_THRESHOLD: &str = "6";

    /// allreduce, alltoall and incast over every rail across the guests pass, with the rings,
    /// their hops and busbw per rail and in total. A clean run that fails is run once more and
    /// must pass then: a guest's vCPU descheduled mid-run can hold one hop past any threshold
    /// (see CLEAN_HOP_THRESHOLD), and twice in a row for the same op is a defect.
    #[test]
    fn collective_over_every_rail_across_guests() {
        let _serial = require_rxe();
        let rails = rails();
        for op in ["allreduce", "alltoall", "incast:1"] {
            let (mut out, mut doc) = collective_across(op);
            for attempt in 1..=2 {
                eprintln!(
                    "collective {op} over {} rails (run {attempt}): exit {:?}, total {}, suspects {}",
                    rails.len(),
                    out.status.code(),
                    doc["total"],
                    doc["suspects"]
                );
                assert!(matches!(out.status.code(), Some(0) | Some(1)), "{op}: {}", stderr(&out));
                assert_rings(&doc, &rails, op);
                if out.status.code() == Some(0) || attempt == 2 {
                    break;
                }
                (out, doc) = collective_across(op);
            }
            assert_eq!(out.status.code(), Some(0), "{op}: a clean run failed twice: {}\n{}", doc["findings"], stderr(&out));
            assert_eq!(doc["verdict"], "pass", "{op}: {doc}");
        }
    }

    /// Loss on one rail's link, both ways (netem `loss 65%` on the rail's netdev of both guests:
    /// every hop of that rail's ring loses its data and its ACKs). 5% loss on one guest showed
    /// only some of the time: with chunks of many packets rxe repairs a loss within one round
    /// trip (a NAK and a resend), which the chunk's own time on the emulated link hides. Here a
    /// chunk is one packet (`--size 2K`: 1 KiB a step), so every loss is repaired only by the
    /// requester's ACK timeout (67 ms), a try succeeds 12% of the time and the median chunk
    /// waits out four timeouts: that ring's steps several times the other rings' (10-50 ms a
    /// step in guests run without KVM). Measured in the two-guest tier (ratio of the lossy
    /// ring's faster hop to the rings' median): loss on one guest only slows one hop, and a
    /// ring's time is its faster hop's (75% left it within the bar once; at 90% a chunk waited
    /// past the members' 5 s stall limit once); both ways, 40% gave 2.3x, 55% 3.0x-5x and 60%
    /// 3.0x-13x. rxe takes a retry count of 7 as no limit, so no QP fails, and at 67 ms a try
    /// the stall limit is 75 tries in a row (below 1e-4 a chunk). Loss holds no packet (a delay
    /// or a token bucket on egress holds packets that point at their QP's socket, which a QP
    /// destroyed meanwhile frees: see tests/rxe/shaped-rail.sh, which routes the rail to put a
    /// bucket on it safely, `rails::shaped`).
    ///
    /// Asserted: the run fails, that rail's ring is the slowest (by its faster hop's median step:
    /// busbw is rounded to 0.001 Gb/s, below which emulated 2 KiB rings fall), and a `rail`
    /// suspect names it. Not asserted: that nothing else is named. Without KVM a clean ring's
    /// hops differ by up to 5x in one run (a guest's vCPU descheduled), so a `link` suspect or
    /// another rail's ring above the threshold (3x) shows beside it in about one run of three;
    /// they are printed. Blame's precision is the host tier's (`tests/integration/collective.rs`:
    /// `one_nics_egress_limited_names_its_rail_and_its_hop_only`).
    #[test]
    fn collective_loss_on_one_rail_names_that_rail() {
        let _serial = require_rxe();
        let rails = rails();
        let bad = 2 % rails.len();
        let (_, netdev) = rails[bad].clone();
        // Each guest's address on this rail pinned in the other's neighbour table before the
        // loss: a QP's path is resolved when it is connected, and 65% loss both ways starves ARP
        // (ibv_modify_qp to RTR timed out). Guest 2's netdev of the rail is the one holding its
        // address on the rail's subnet (198.18.K.2).
        let peer = peer();
        let (my_ip, peer_ip) = (format!("198.18.{bad}.1"), format!("198.18.{bad}.2"));
        let remote = |cmd: &str| format!("ssh -T -o BatchMode=yes {peer} 'PATH=/usr/sbin:/sbin:/usr/bin:/bin {cmd}'");
        let find = remote(&format!("ip -o -4 addr show | grep -F \" {peer_ip}/\" | cut -d\" \" -f2"));
        let found = sh(&find);
        let peer_netdev = String::from_utf8_lossy(&found.stdout).trim().to_string();
        assert!(
            !peer_netdev.is_empty() && !peer_netdev.contains(char::is_whitespace),
            "guest 2 has no netdev with {peer_ip}: {:?} {}",
            peer_netdev,
            String::from_utf8_lossy(&found.stderr)
        );
        let pin = sh(&format!(
            "set -e; peer_mac=$({}); my_mac=$(cat /sys/class/net/{netdev}/address); \
             ip neigh replace {peer_ip} lladdr \"$peer_mac\" dev {netdev} nud permanent; {}",
            remote(&format!("cat /sys/class/net/{peer_netdev}/address")),
            remote(&format!("ip neigh replace {my_ip} lladdr $my_mac dev {peer_netdev} nud permanent")).replace("$my_mac", "'\"$my_mac\"'"),
        ));
        assert!(pin.status.success(), "cannot pin the neighbours on {netdev}: {}", String::from_utf8_lossy(&pin.stderr));
        let _restore = Undo(format!(
            "tc qdisc del dev {netdev} root 2>/dev/null; ip neigh del {peer_ip} dev {netdev} 2>/dev/null; {} 2>/dev/null; true",
            remote(&format!("ip neigh del {my_ip} dev {peer_netdev}"))
        ));
        let _restore_peer = Undo(format!("{} 2>/dev/null; true", remote(&format!("tc qdisc del dev {peer_netdev} root"))));
        let add = sh(&format!(
            "set -e; tc qdisc add dev {netdev} root netem loss 65%; {}",
            remote(&format!("tc qdisc add dev {peer_netdev} root netem loss 65%"))
        ));
        assert!(add.status.success(), "netem unavailable: {}", String::from_utf8_lossy(&add.stderr));
        let started = Instant::now();
        let (out, doc) = collective_across_with("allreduce", "2K", "8", "3");
        eprintln!(
            "collective allreduce, 65% loss both ways on rail {bad}: exit {:?} in {:.1} s, suspects {}",
            out.status.code(),
            started.elapsed().as_secs_f64(),
            doc["suspects"]
        );
        let median_steps: Vec<(Option<u64>, Vec<f64>)> = array(&doc, "rings")
            .iter()
            .map(|r| (r["rail"].as_u64(), array(r, "hops").iter().filter_map(|h| h["step_us"]["p50"].as_f64()).collect()))
            .collect();
        eprintln!("each ring's hops' p50 step, us: {median_steps:?}");
        assert_eq!(out.status.code(), Some(1), "65% loss both ways on rail {bad} must fail the run: {}\n{}", doc["findings"], stderr(&out));
        assert_eq!(array(&doc, "members").len(), 2 * rails.len(), "{doc}");
        let rings = array(&doc, "rings");
        assert_eq!(rings.len(), rails.len(), "one ring per rail: {doc}");
        // Each ring's faster hop's median step, microseconds (what the judge compares).
        let step = |ring: &Value| -> f64 {
            let mut p50: Vec<f64> = array(ring, "hops").iter().filter_map(|h| h["step_us"]["p50"].as_f64()).collect();
            p50.sort_by(f64::total_cmp);
            p50.first().copied().unwrap_or(0.0)
        };
        let slowest = rings.iter().max_by(|x, y| step(x).total_cmp(&step(y))).unwrap();
        let steps: Vec<f64> = rings.iter().map(step).collect();
        assert_eq!(slowest["rail"].as_u64(), Some(bad as u64), "the lossy rail's ring is the slowest: steps {steps:?}");
        // The members of the bad rail, as the documents name them (HOST/DEV).
        let bad_members: Vec<String> = array(&doc, "members")
            .iter()
            .filter(|m| m["rail"].as_u64() == Some(bad as u64))
            .map(|m| format!("{}/{}", text(m, "host"), text(m, "device")))
            .collect();
        let rail_word = format!("rail {bad}");
        let suspects = array(&doc, "suspects");
        let of_bad = |s: &Value| {
            let subject = text(s, "subject");
            subject == rail_word || bad_members.iter().any(|m| m == subject)
        };
        assert!(suspects.iter().any(|s| s["kind"] == "rail" && of_bad(s)), "no rail suspect names rail {bad} ({bad_members:?}): {}", doc["suspects"]);
        let others: Vec<&Value> = suspects.iter().filter(|s| !(s["kind"] == "rail" && of_bad(s))).collect();
        if !others.is_empty() {
            eprintln!("beside rail {bad} (emulation noise, not asserted): {others:?}");
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the run took {:?}", started.elapsed());
    }

    /// Guest 1 with one rail fewer (its last rxe deleted for the test, then made again).
    #[test]
    fn a_rail_count_mismatch_across_guests_is_exit_2() {
        let _serial = require_rxe();
        let rails = rails();
        let (dev, netdev) = rails.last().unwrap().clone();
        let undo = Undo(format!("rdma link add {dev} type rxe netdev {netdev}"));
        let del = sh(&format!("rdma link delete {dev}"));
        assert!(del.status.success(), "rdma link delete {dev}: {}", String::from_utf8_lossy(&del.stderr));
        let out = pair_across_raw(&["--tests", "send_lat", "--iters", "50"]);
        drop(undo);
        wait_all_active(&rails);
        assert_mismatch(&out, rails.len() - 1, rails.len());
    }

    #[test]
    fn mesh_across_guests_rail_by_rail() {
        let _serial = require_rxe();
        let rails = rails();
        let peer = peer();
        let bin = super::super::remote_bin();
        let out = fabcheck(&[
            "mesh",
            "--rails",
            "auto",
            "localhost",
            &peer,
            "--remote-fabcheck",
            &bin,
            "--tests",
            "write_bw",
            "--iters",
            "100",
            "--json",
            "--stall-timeout-ms",
            STALL_MS,
        ]);
        let doc = json(&out);
        eprintln!("mesh --rails auto across guests: exit {:?}, suspects {}", out.status.code(), doc["suspects"]);
        assert_eq!(doc["schema"], "fabcheck.mesh.v1");
        // `unreachable` is left out of the document when empty (as since 0.2).
        assert!(doc["unreachable"].as_array().is_none_or(Vec::is_empty), "{}", doc["unreachable"]);
        // One host pair: every rail of it measured once in the first pass, each record its rail's.
        let first: Vec<&Value> = array(&doc, "pairs").iter().filter(|p| p["retest"].is_null() && p["zoom"].is_null()).collect();
        let mut seen: Vec<u64> = first.iter().map(|p| p["rail"].as_u64().unwrap_or_else(|| panic!("a pair record without rail: {p}"))).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..rails.len() as u64).collect::<Vec<_>>(), "{}", doc["pairs"]);
        for p in &first {
            assert!(p["error"].is_null(), "{p}");
            let ok: Vec<&Value> = array(p, "results").iter().filter(|r| r["test"] == "write_bw" && r["error"].is_null()).collect();
            assert_eq!(ok.len(), 1, "{p}");
        }
        // Rails at once on emulated links spread widely (see CLEAN_RAIL_THRESHOLD): as in
        // mesh_patterns, the verdict is not asserted; the records, the rails and the kinds are.
        assert!(matches!(out.status.code(), Some(0) | Some(1)), "{}", stderr(&out));
        for s in array(&doc, "suspects") {
            assert!(["rail", "node", "link", "config"].contains(&text(s, "kind")), "{s}");
        }
    }
}
