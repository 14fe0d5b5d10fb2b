//! Hostile inputs and statuses that agree with findings (0.3: issues #27 items 10-13, #28 items
//! 1 and 7). Everything here runs unprivileged on the host: bundles, symlinks and FIFOs are made
//! in temporary directories. No timing asserts: a bounded wait that runs out is a hang.

use super::{fabcheck, fixtures_dir, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of fixture `name` to alter.
fn bundle(fixture: &str, tag: &str) -> PathBuf {
    let tree = scratch(tag).join("tree");
    let status = Command::new("cp").arg("-a").arg(fixtures_dir().join(fixture)).arg(&tree).status().unwrap();
    assert!(status.success());
    tree
}

// fabcheck, killed (and the test failed) if it has not ended within the limit: a hang.
use super::hardening::fabcheck_bounded as bounded;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn check_json(tree: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["check", "--json", "--sysfs-root", tree.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = bounded(&args, Duration::from_secs(60));
    (out.status.code(), json(&out))
}

fn rows<'a>(doc: &'a serde_json::Value, id: &str) -> Vec<&'a serde_json::Value> {
    doc["checks"].as_array().unwrap().iter().filter(|c| c["id"] == id).collect()
}

fn findings<'a>(doc: &'a serde_json::Value, id: &str) -> Vec<&'a serde_json::Value> {
    doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == id).collect()
}

// ------------------------------------------------------------- #28: statuses and the RoCE MTU

#[test]
fn a_4184_byte_roce_mtu_fails_expect_mtu_4096() {
    let tree = bundle("roce-healthy-cx7", "mtu4184");
    let mtu = tree.join("class/net/ens2np0/mtu");
    assert!(mtu.exists(), "fixture layout changed");
    std::fs::write(&mtu, "4184\n").unwrap();
    let (code, doc) = check_json(&tree, &["--expect", "mtu=4096"]);
    assert_eq!(code, Some(1), "{doc}");
    let row = rows(&doc, "roce.mtu");
    assert_eq!(row.len(), 1, "{row:?}");
    assert_eq!((row[0]["status"].as_str(), row[0]["observed"].as_str()), (Some("fail"), Some("2048 (netdev ens2np0 mtu 4184)")));
    let remedy = findings(&doc, "roce.mtu")[0]["remedy"].as_str().unwrap().to_string();
    assert!(remedy.contains("at least 4192"), "{remedy}");
    std::fs::write(&mtu, "4192\n").unwrap();
    let (code, doc) = check_json(&tree, &["--expect", "mtu=4096"]);
    assert_eq!(code, Some(0), "{doc}");
}

#[test]
fn warn_rows_pass_unless_warnings_fail_the_run_in_every_format() {
    let root = fixtures_dir().join("ndr-ib-pcie-gen4");
    let root = root.to_str().unwrap();
    let (_, doc) = check_json(Path::new(root), &[]);
    assert_eq!(rows(&doc, "pcie.bound").iter().map(|r| r["status"].as_str().unwrap()).collect::<Vec<_>>(), ["warn", "warn"]);
    let prom = |extra: &[&str]| {
        let mut args = vec!["check", "--sysfs-root", root, "--format", "prom"];
        args.extend_from_slice(extra);
        let out = fabcheck(&args);
        text(&out.stdout)
            .lines()
            .find(|l| l.starts_with("fabcheck_check_pass{") && l.contains("id=\"pcie.bound\"") && l.contains("subject=\"mlx5_0\""))
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
    };
    assert_eq!(prom(&[]).as_deref(), Some("1"));
    assert_eq!(prom(&["--fail-on", "warning"]).as_deref(), Some("0"));
    let junit = |extra: &[&str]| {
        let mut args = vec!["check", "--sysfs-root", root, "--format", "junit"];
        args.extend_from_slice(extra);
        text(&fabcheck(&args).stdout)
    };
    let plain = junit(&[]);
    let strict = junit(&["--fail-on", "warning"]);
    let case = |xml: &str| {
        let start = xml.find("classname=\"fabcheck.check.pcie.bound\"").expect("pcie.bound testcase");
        let end = xml[start..].find("</testcase>").map_or(xml.len(), |e| start + e);
        xml[start..end].to_string()
    };
    assert!(!case(&plain).contains("<failure"), "{plain}");
    assert!(case(&strict).contains("<failure"), "{strict}");
}

// ------------------------------------------------------------- #27 item 12: topology files

/// 40,000 cables (200 leaves of 200 hosts), each written at both ends: about 8 MB.
fn big_topology(path: &Path) {
    use std::fmt::Write;
    let mut out = String::new();
    for l in 0..200usize {
        let _ = writeln!(out, "Switch\t200 \"S-{:016x}\"\t\t# \"leaf{l}\" enhanced port 0 lid {} lmc 0", 0x10_0000 + l, l + 1);
        for h in 0..200usize {
            let _ = writeln!(out, "[{}]\t\"H-{:016x}\"[1]({:x})\t\t# \"n{l}-{h} mlx5_0\" lid 9 4xHDR", h + 1, l * 200 + h, l * 200 + h);
        }
        out.push('\n');
    }
    for l in 0..200usize {
        for h in 0..200usize {
            let _ = writeln!(out, "Ca\t1 \"H-{:016x}\"\t\t# \"n{l}-{h} mlx5_0\"", l * 200 + h);
            let _ = writeln!(out, "[1]({:x})\t\"S-{:016x}\"[{}]\t\t# lid 9 lmc 0 \"leaf{l}\" lid 1 4xHDR\n", l * 200 + h, 0x10_0000 + l, h + 1);
        }
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn a_forty_thousand_link_topology_is_bounded_by_the_deadline() {
    // 0.2 took 14 s (optimised) to parse this and `--deadline 1` did not stop it. Now parsing is
    // linear and looks at the deadline: the run ends (exit 2: this host has no fabric, or the
    // deadline passed while parsing) within a generous bound.
    let dir = scratch("topology");
    let file = dir.join("big.net");
    big_topology(&file);
    let out = bounded(&["fabric", "--topology", file.to_str().unwrap(), "--deadline", "1"], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
}

// ------------------------------------------------------------- #27 item 10: bundles stay inside

/// The `sysfs.unreadable` finding whose message names `file`.
fn unreadable<'a>(doc: &'a serde_json::Value, file: &str) -> &'a serde_json::Value {
    let all = findings(doc, "sysfs.unreadable");
    all.iter().copied().find(|f| f["message"].as_str().unwrap().contains(file)).unwrap_or_else(|| panic!("{file} not named: {all:#?}"))
}

#[test]
fn a_bundle_link_out_of_its_root_is_refused_and_named() {
    let tree = bundle("roce-healthy-cx7", "escape");
    let secret = tree.parent().unwrap().join("shadow");
    std::fs::write(&secret, "root:TOPSECRET-HASH:19000:0:99999:7:::\n").unwrap();
    let dev = tree.join("class/infiniband/mlx5_0");
    std::fs::remove_file(dev.join("board_id")).unwrap();
    std::os::unix::fs::symlink(&secret, dev.join("board_id")).unwrap();
    std::fs::remove_file(dev.join("hca_type")).unwrap();
    std::os::unix::fs::symlink("../../../../shadow", dev.join("hca_type")).unwrap();
    for command in [&["devices"][..], &["devices", "--json"], &["check"], &["check", "--json"]] {
        let mut args = command.to_vec();
        args.extend(["--sysfs-root", tree.to_str().unwrap()]);
        let out = bounded(&args, Duration::from_secs(60));
        assert!(!text(&out.stdout).contains("TOPSECRET") && !text(&out.stderr).contains("TOPSECRET"), "{args:?} printed the file");
    }
    let (code, doc) = check_json(&tree, &[]);
    assert_eq!(code, Some(1), "{doc}");
    for file in ["mlx5_0/board_id", "mlx5_0/hca_type"] {
        let f = unreadable(&doc, file);
        assert_eq!((f["severity"].as_str(), f["subject"].as_str()), (Some("error"), Some("mlx5_0")));
        assert!(f["message"].as_str().unwrap().contains("leads outside"), "{f}");
    }
}

#[test]
fn a_pci_config_link_out_of_the_bundle_is_refused_not_parsed() {
    // The GPU readiness rules read the PCI tree: a GPU's `config` that leads outside the bundle
    // is refused and named, never read (it would be parsed as that GPU's config space).
    let tree = bundle("gpu-hgx-healthy", "pci-escape");
    let gpu = tree.join("devices/pci0000:bd/0000:bd:01.0/0000:be:00.0/0000:bf:03.0/0000:c3:00.0");
    assert_eq!(std::fs::read_to_string(gpu.join("vendor")).unwrap().trim(), "0x10de", "fixture layout changed");
    let outside = tree.parent().unwrap().join("outside-config");
    std::fs::copy(gpu.join("config"), &outside).unwrap();
    std::fs::remove_file(gpu.join("config")).unwrap();
    std::os::unix::fs::symlink(&outside, gpu.join("config")).unwrap();
    let (_, doc) = check_json(&tree, &[]);
    let named = findings(&doc, "pcie.link");
    let f = named.iter().find(|f| f["subject"] == "0000:c3:00.0").unwrap_or_else(|| panic!("the GPU's config is not named: {named:#?}"));
    assert!(f["message"].as_str().unwrap().contains("leads outside the tree"), "{f}");
}

#[test]
fn a_netdev_name_that_is_a_path_is_refused() {
    let tree = bundle("roce-healthy-cx7", "ndevs");
    let ndevs = tree.join("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs");
    let entries: Vec<_> = std::fs::read_dir(&ndevs).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(!entries.is_empty(), "fixture layout changed");
    for e in &entries {
        std::fs::write(e, "../../../../../../../../../../sys/class/net/lo\n").unwrap();
    }
    let out = bounded(&["devices", "--json", "--sysfs-root", tree.to_str().unwrap()], Duration::from_secs(60));
    let doc = json(&out);
    let port = &doc["devices"][0]["ports"][0];
    // The port's netdev comes from the PCI function (device/net), never from the value.
    assert_eq!(port["netdev"], "ens2np0", "{port}");
    assert!(port["gids"].as_array().unwrap().iter().all(|g| g["netdev"].is_null()), "{port}");
    let (_, doc) = check_json(&tree, &[]);
    let f = unreadable(&doc, "gid_attrs/ndevs/");
    assert!(f["message"].as_str().unwrap().contains("not a network interface name"), "{f}");
}

// ------------------------------------------------------------- #27 item 11: unread is not judged

fn row_of<'a>(doc: &'a serde_json::Value, id: &str, subject: &str) -> &'a serde_json::Value {
    rows(doc, id).into_iter().find(|c| c["subject"] == subject).unwrap_or_else(|| panic!("no {id} row on {subject}: {}", doc["checks"]))
}

#[test]
fn a_check_whose_input_cannot_be_read_is_skipped_not_judged() {
    let tree = bundle("hdr-ib-healthy", "skip");
    let ib = tree.join("class/infiniband");
    // A FIFO for mlx5_0's port state, an oversized fw_ver on mlx5_1.
    let state = ib.join("mlx5_0/ports/1/state");
    std::fs::remove_file(&state).unwrap();
    nix::unistd::mkfifo(&state, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(ib.join("mlx5_1/fw_ver"), vec![b'9'; 1 << 20]).unwrap();
    let (code, doc) = check_json(&tree, &[]);
    assert_eq!(code, Some(1), "the unreadable files are errors: {doc}");
    unreadable(&doc, "mlx5_0/ports/1/state");
    unreadable(&doc, "mlx5_1/fw_ver");
    // 0.2: `port.state FAIL ... check cabling` and a firmware mismatch with a reflash remedy.
    assert_eq!(row_of(&doc, "port.state", "mlx5_0/1")["status"], "skip");
    assert!(row_of(&doc, "port.state", "mlx5_0/1")["observed"].as_str().unwrap().contains("sysfs.unreadable"));
    assert!(findings(&doc, "port.state").is_empty(), "{}", doc["findings"]);
    assert_eq!(row_of(&doc, "device.fw", "mlx5_1")["status"], "skip");
    assert!(findings(&doc, "device.fw").is_empty(), "{}", doc["findings"]);
    // The other device and port are still judged.
    assert_eq!(row_of(&doc, "port.state", "mlx5_1/1")["status"], "pass");
    assert_eq!(row_of(&doc, "device.fw", "mlx5_0")["status"], "pass");
}

#[test]
fn a_device_with_no_readable_port_fails_devices_count() {
    let tree = bundle("hdr-ib-healthy", "noports");
    let ports = tree.join("class/infiniband/mlx5_1/ports");
    std::fs::remove_dir_all(&ports).unwrap();
    nix::unistd::mkfifo(&ports, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (code, doc) = check_json(&tree, &[]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(row_of(&doc, "devices.count", "node")["status"], "fail");
    let f = findings(&doc, "devices.count");
    assert!(f.len() == 1 && f[0]["message"].as_str().unwrap().contains("mlx5_1"), "{f:?}");
    // And the prom gauge of the row follows.
    let out = fabcheck(&["check", "--sysfs-root", tree.to_str().unwrap(), "--format", "prom"]);
    let prom = text(&out.stdout);
    let line = prom.lines().find(|l| l.starts_with("fabcheck_check_pass{") && l.contains("id=\"devices.count\"")).expect("devices.count gauge");
    assert!(line.ends_with(" 0"), "{line}");
}

#[test]
fn a_newline_in_a_name_is_escaped_in_human_output() {
    let tree = bundle("hdr-ib-healthy", "newline");
    let ib = tree.join("class/infiniband");
    std::fs::rename(ib.join("mlx5_1"), ib.join("mlx5_1\nok    forged.line")).unwrap();
    std::fs::write(ib.join("mlx5_0/fw_ver"), "20.39.1002\nPASS: 99 checks, 0 errors\n").unwrap();
    for command in ["check", "devices"] {
        let out = bounded(&[command, "--sysfs-root", tree.to_str().unwrap()], Duration::from_secs(60));
        let stdout = text(&out.stdout);
        assert!(!stdout.lines().any(|line| line.starts_with("ok    forged") || line.starts_with("PASS: 99")), "{command}: a forged line:\n{stdout}");
        assert!(stdout.contains("mlx5_1\\u{a}ok    forged.line"), "{command}: the name, escaped:\n{stdout}");
    }
}

// ------------------------------------------------------------- #27 item 13: signals

#[test]
fn sighup_stops_a_mesh_like_sigterm() {
    // Agents that accept and never answer: the mesh is waiting on them when the login session
    // that started it closes (SIGHUP). 0.2 died of the signal (exit 129 from a shell).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
    let child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["mesh", &endpoint, &endpoint, "--tests", "write_bw"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The mesh catches its signals before it reaches any agent: once it has connected, SIGHUP
    // finds the handler in place.
    let (_held, _) = listener.accept().unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60), "a hang");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "killed by the signal? {:?} {err}", out.status);
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
fn a_mesh_stopped_by_sighup_reports_the_pairs_it_measured() {
    use super::fake_cluster::{host, FakeCluster, Knobs};
    // The schedule of six endpoints, from a healthy run: the last pair measured is in the last
    // round, so a hang there leaves the rounds before it measured when the signal comes.
    let healthy = FakeCluster::healthy(6);
    let out = bounded(
        &[&["mesh", "--json", "--tests", "write_bw"][..], &healthy.endpoints.iter().map(String::as_str).collect::<Vec<_>>()].concat(),
        Duration::from_secs(120),
    );
    let doc = json(&out);
    let last = doc["pairs"].as_array().unwrap().last().unwrap().clone();
    let index = |e: &serde_json::Value| healthy.endpoints.iter().position(|x| x == e.as_str().unwrap()).unwrap();
    let (a, b) = (index(&last["a"]), index(&last["b"]));
    drop(healthy);
    let mut knobs = vec![Knobs::default(); 6];
    knobs[a].hang_with = Some(host(b));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["mesh", "--json", "--tests", "write_bw", "--timeout", "300"])
        .args(&cluster.endpoints)
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ordering only: the rounds before the hung one take well under this (fake agents).
    std::thread::sleep(Duration::from_secs(5));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGHUP).unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60), "a hang");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("interrupted after") && err.contains("the report above covers those"), "{err}");
    // The document is there, with the pairs of the rounds before, and does not pass.
    let doc = json(&out);
    assert_eq!(doc["verdict"], "fail", "an interrupted mesh never passes");
    let pairs = doc["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty() && pairs.len() < 15, "{} pairs", pairs.len());
    assert!(pairs.iter().all(|p| p["verdict"] == "pass"), "{pairs:#?}");
}

// ------------------------------------------------------------- 0.5: SR-IOV virtual functions

/// The VF of fixture `roce-sriov-idle-vf` seen from inside the pod it was given to (its PF
/// gone from view, as with the RDMA subsystem in exclusive mode): there it is the node's NIC,
/// judged in full, so its missing address fails `roce.gid` (beside its PF it is a skip row).
#[test]
fn a_virtual_function_alone_is_judged_as_the_node_s_port() {
    let tree = bundle("roce-sriov-idle-vf", "vf-alone");
    std::fs::remove_dir_all(tree.join("class/infiniband/mlx5_0")).unwrap();
    std::fs::remove_dir_all(tree.join("class/net/ens2np0")).unwrap();
    let (code, doc) = check_json(&tree, &[]);
    assert_eq!(code, Some(1), "{}", doc["findings"]);
    let gid = rows(&doc, "roce.gid");
    assert_eq!((gid.len(), gid[0]["subject"].as_str(), gid[0]["status"].as_str()), (1, Some("mlx5_2/1"), Some("fail")), "{gid:?}");
    assert!(rows(&doc, "port.state").iter().all(|r| r["status"] == "pass"), "{:?}", rows(&doc, "port.state"));
    // Its PCIe link is its PF's, judged on the host that holds the PF, not "here".
    let pci = rows(&doc, "pci.link");
    assert!(pci.iter().any(|r| r["status"] == "skip" && r["observed"].as_str().is_some_and(|m| m.contains("on the host that holds it"))), "{pci:?}");
    let (code, doc) = check_json(&bundle("roce-sriov-idle-vf", "vf-beside-pf"), &[]);
    assert_eq!(code, Some(0), "{}", doc["findings"]);
    let vf = rows(&doc, "port.state").into_iter().find(|r| r["subject"] == "mlx5_2/1").unwrap();
    assert_eq!(vf["status"], "skip");
}
