//! RoCE's lossless set-up on Soft-RoCE (issue #42): `check` says `roce.qos` is `skip` (a veth
//! has no DCB), never `pass`; `pair.qos` says that rxe has no per-priority counters; and, across
//! two guests (`two_hosts`, run by tests/rxe/two-hosts.sh: on one host rxe loops a pair's packets
//! back inside the device, never through the netdev), `pair --tclass` puts its ToS byte on the
//! wire: the DS field of the RoCE v2 UDP/4791 packets, seen with tcpdump on the guest's link; and
//! without `--tclass`, with rdma_cm's `default_roce_tos` set to 106 for rxe0, DSCP 26 (issue #51).

use super::{fabcheck, json, require_rxe, sh, DEVICE, NETDEV};

/// This guest's RoCE netdev: `va` alone, `eth0` beside a second guest.
fn netdev() -> String {
    std::env::var("FABCHECK_VM_NETDEV").unwrap_or_else(|_| NETDEV.to_string())
}
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn roce_qos_is_skip_on_soft_roce_not_pass() {
    let _serial = require_rxe();
    // --since 1s: other tests of the tier flap va (link.flap from the kernel log).
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--since", "1s"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}", doc["findings"]);
    for id in ["roce.qos", "roce.lossless"] {
        let row = doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == id && c["subject"] == format!("{DEVICE}/1"));
        let row = row.unwrap_or_else(|| panic!("no {id} row: {}", doc["checks"]));
        assert_eq!(row["status"], "skip", "{row}");
        let observed = row["observed"].as_str().unwrap();
        eprintln!("{id}: {observed}");
        assert!(observed.contains("Soft-RoCE (rxe)") && observed.contains(&netdev()), "{row}");
    }
    // The prom format carries the row like any check's: a skipped check has no pass series (a
    // failed one is 0: tests/integration/fixtures.rs), so nothing here says roce.qos passed.
    let prom = fabcheck(&["check", "--format", "prom", "--device", DEVICE]);
    let page = String::from_utf8_lossy(&prom.stdout);
    assert!(page.contains("fabcheck_check_pass{id=\"roce.gid\""), "{page}");
    assert!(!page.lines().any(|l| l.contains("id=\"roce.qos\"") && l.ends_with(" 1")), "{page}");
}

#[test]
fn pair_qos_says_soft_roce_has_no_priority_counters() {
    let _serial = require_rxe();
    let out = fabcheck(&[
        "pair",
        "localhost",
        "localhost",
        "--device",
        DEVICE,
        "--json",
        "--tests",
        "write_bw",
        "--size",
        "65536",
        "--iters",
        "200",
        "--tclass",
        "106",
    ]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}", doc["findings"]);
    assert_eq!((doc["a"]["tclass"].as_u64(), doc["b"]["tclass"].as_u64()), (Some(106), Some(106)), "{}", doc["a"]);
    let qos: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.qos").collect();
    assert_eq!(qos.len(), 1, "one port under both agents: said once: {}", doc["findings"]);
    eprintln!("pair.qos: {}", qos[0]["message"]);
    assert_eq!(qos[0]["severity"], "info", "{}", qos[0]);
    assert!(qos[0]["message"].as_str().unwrap().contains("Soft-RoCE (rxe)"), "{}", qos[0]);
}

/// `tcpdump -i NETDEV -n -v -l -c 40 udp port 4791` while `pair B` runs with `extra`; the DS
/// fields (`tos 0x..`) of what it captured, and the pair's document.
fn capture_pair(b: &str, extra: &[&str]) -> (Vec<String>, serde_json::Value) {
    let (lines, doc) = capture_lines(b, extra);
    let tos: Vec<String> =
        lines.iter().filter_map(|l| l.split_once("(tos ").map(|(_, rest)| rest.split([',', ')']).next().unwrap_or("").to_string())).collect();
    (tos, doc)
}

/// The IP header lines (`IP (tos 0x6a, ..., length 1072)`) tcpdump printed while `pair B` ran.
fn capture_lines(b: &str, extra: &[&str]) -> (Vec<String>, serde_json::Value) {
    let link = netdev();
    assert!(sh("command -v tcpdump").status.success(), "tcpdump is not installed (tests/deps.sh installs it on the host the guest runs from)");
    let mut dump = Command::new("tcpdump")
        .args(["-i", &link, "-n", "-v", "-l", "-c", "40", "udp port 4791"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tcpdump");
    // tcpdump says "listening on va" on stderr once its filter is in place.
    std::thread::sleep(Duration::from_millis(1500));
    let mut args = vec!["pair", "localhost", b, "--device", DEVICE, "--json", "--tests", "write_bw", "--size", "4096", "--iters", "2000"];
    args.extend_from_slice(extra);
    let out = fabcheck(&args);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}: {}", doc["findings"], String::from_utf8_lossy(&out.stderr));
    let start = Instant::now();
    while dump.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = dump.kill();
    let _ = dump.wait();
    let mut text = String::new();
    dump.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    let mut err = String::new();
    dump.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let lines: Vec<String> = text.lines().filter(|l| l.contains("(tos ")).map(str::to_string).collect();
    for line in lines.iter().take(3) {
        eprintln!("tcpdump {extra:?}: {line}");
    }
    assert!(!lines.is_empty(), "tcpdump saw no RoCE v2 packet on {link}: stdout {text} stderr {err}");
    (lines, doc)
}

/// Across the two guests (guest 1, `--guests 2`; guest 2 runs `fabcheck serve` on 18515 with the
/// shared token, as tests/rxe/two-hosts.sh has it). Not in the plain tier (run.sh skips it).
pub mod two_hosts {
    use super::*;

    fn peer() -> String {
        let addr = std::env::var("FABCHECK_VM_PEER_ADDR")
            .unwrap_or_else(|_| panic!("qos two-host test: no FABCHECK_VM_PEER_ADDR; run in guest 1 of `--guests 2` (tests/rxe/two-hosts.sh)"));
        format!("tcp://{addr}:18515")
    }

    #[test]
    fn tclass_106_puts_dscp_26_on_the_wire() {
        let _serial = require_rxe();
        let peer = peer();
        let (tos, doc) = capture_pair(&peer, &["--tclass", "106"]);
        // 0x6a: DSCP 26 (AF31) with ECT(0), the byte NCCL_IB_TC=106 sets.
        assert!(tos.iter().all(|t| t == "0x6a"), "every RoCE packet in ToS 106: {tos:?}");
        assert_eq!(doc["a"]["tclass"], 106, "{}", doc["a"]);
        assert_ne!(doc["a"]["host"], doc["b"]["host"], "across the guests: {} {}", doc["a"], doc["b"]);
        // Without --tclass the same test leaves with ToS 0 (rdma_cm's default_roce_tos is 0 here).
        let (plain, _) = capture_pair(&peer, &[]);
        assert!(plain.iter().all(|t| t == "0x0"), "{plain:?}");
    }

    /// rdma_cm's default ToS of rxe0 port 1, set as NVIDIA's guide and `cma_roce_tos` do
    /// (`mkdir` the configfs group, write the ToS), and put back to 0 when dropped.
    struct DefaultRoceTos(std::path::PathBuf);

    impl DefaultRoceTos {
        fn set(tos: u8) -> DefaultRoceTos {
            let base = std::path::Path::new("/sys/kernel/config");
            if !base.join("rdma_cm").is_dir() {
                let _ = sh("modprobe rdma_cm; mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config");
            }
            assert!(base.join("rdma_cm").is_dir(), "no /sys/kernel/config/rdma_cm in this guest (configfs and rdma_cm are needed)");
            let group = base.join("rdma_cm").join(DEVICE);
            let _ = std::fs::create_dir(&group);
            let file = group.join("ports/1/default_roce_tos");
            std::fs::write(&file, format!("{tos}\n")).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
            DefaultRoceTos(group)
        }
    }

    impl Drop for DefaultRoceTos {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0.join("ports/1/default_roce_tos"), "0\n");
            let _ = std::fs::remove_dir(&self.0);
        }
    }

    #[test]
    fn default_roce_tos_106_puts_dscp_26_on_the_wire_without_tclass() {
        let _serial = require_rxe();
        let peer = peer();
        // Set on this guest only: A's own RoCE DSCP is rdma_cm's (the peer keeps its own, 0).
        let _tos = DefaultRoceTos::set(106);
        let (tos, doc) = capture_pair_sized(&peer, &[]);
        assert_eq!((doc["a"]["tclass"].as_u64(), doc["a"]["tclass_source"].as_str()), (Some(106), Some("rdma_cm")), "{}", doc["a"]);
        // A's write_bw data packets (A -> B, the large ones) carry ToS 0x6a: DSCP 26 with ECT(0).
        let data: Vec<&String> = tos.iter().filter(|(_, len)| *len > 500).map(|(t, _)| t).collect();
        assert!(!data.is_empty(), "no data packet captured: {tos:?}");
        assert!(data.iter().all(|t| *t == "0x6a"), "every data packet in ToS 106 from rdma_cm's default: {tos:?}");
        // And the human report says where it came from.
        let human = fabcheck(&["pair", "localhost", &peer, "--device", DEVICE, "--tests", "write_bw", "--size", "4096", "--iters", "200"]);
        let text = String::from_utf8_lossy(&human.stdout);
        assert!(text.contains("tclass 106 (DSCP 26) from rdma_cm's default_roce_tos"), "{text}");
    }

    /// As [`capture_pair`], each packet's DS field with its IP length.
    fn capture_pair_sized(b: &str, extra: &[&str]) -> (Vec<(String, u32)>, serde_json::Value) {
        let (lines, doc) = capture_lines(b, extra);
        let sized = lines
            .iter()
            .filter_map(|l| {
                let (_, rest) = l.split_once("(tos ")?;
                let tos = rest.split([',', ')']).next()?.to_string();
                let len = l.rsplit_once("length ")?.1.split([')', ',', ' ']).next()?.parse().ok()?;
                Some((tos, len))
            })
            .collect();
        (sized, doc)
    }
}
