//! `fabcheck accept` over a fleet of agents serving bundles (`serve --sysfs-root`, loopback tcp
//! with a token): eight nodes made from the real-shaped fixture roce-qos-healthy-cx7 (mlnx_qos,
//! dcb and sysfs as the tools print them: see tests/fixtures/README.md), one on older firmware,
//! one with PFC on another priority, one at netdev MTU 1500, one whose agent is not there.
//! Level 1 names exactly those four with their values and actions, the others pass, and the
//! drain list holds exactly the failed ones; the report validates (JSON Schema, junit-10.xsd),
//! `--drain` runs a stand-in scontrol (tests/fake-slurm/scontrol) once per failed node.

use super::fixtures_dir;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "accept-test-token-0123456789";
/// Generous bound on anything waited for (never a timing assert).
const GUARD: Duration = Duration::from_secs(120);

pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&src, &dst);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} has no '{from}'", path.display());
    std::fs::write(path, text.replace(from, to)).unwrap();
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Agents serving bundles, stopped when dropped.
struct Fleet {
    dir: PathBuf,
    serves: Vec<Child>,
    endpoints: Vec<String>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in &mut self.serves {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// node01..node07 served from bundles (node03 firmware 28.36.1010, node05 PFC on 4, node06
/// netdev MTU 1500), and an eighth endpoint where nothing listens.
fn fleet() -> Fleet {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("fabcheck-accept-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fixture = fixtures_dir().join("roce-qos-healthy-cx7");
    let mut fleet = Fleet { dir: dir.clone(), serves: Vec::new(), endpoints: Vec::new() };
    for i in 1..=7 {
        let node = dir.join(format!("node0{i}"));
        copy_dir(&fixture, &node);
        std::fs::remove_file(node.join("case.json")).unwrap();
    }
    for f in ["class/infiniband/mlx5_0/fw_ver", "ibv_devinfo.txt", "ibstat.txt"] {
        edit(&dir.join("node03").join(f), "28.39.1002", "28.36.1010");
    }
    edit(&dir.join("node05/tools/mlnx_qos/ens2np0.txt"), "enabled     0   0   0   1   0", "enabled     0   0   0   0   1");
    edit(&dir.join("node05/dcb/ens2np0.json"), "\"prio_pfc\":[false,false,false,true,false", "\"prio_pfc\":[false,false,false,false,true");
    std::fs::write(dir.join("node06/class/net/ens2np0/mtu"), "1500\n").unwrap();
    for i in 1..=7 {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--sysfs-root"])
            .arg(dir.join(format!("node0{i}")))
            .env("FABCHECK_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fabcheck serve");
        fleet.serves.push(child);
        fleet.endpoints.push(format!("tcp://127.0.0.1:{port}"));
    }
    fleet.endpoints.push(format!("tcp://127.0.0.1:{}", free_port()));
    for e in &fleet.endpoints[..7] {
        let addr = e.trim_start_matches("tcp://");
        let start = Instant::now();
        while TcpStream::connect(addr).is_err() {
            assert!(start.elapsed() < GUARD, "serve at {addr} never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    fleet
}

fn accept(fleet: &Fleet, extra: &[&str], env: &[(&str, &str)]) -> Output {
    super::output_within(
        Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .arg("accept")
            .args(&fleet.endpoints)
            .args(extra)
            .env("FABCHECK_TOKEN", TOKEN)
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_JOBID")
            .envs(env.iter().copied()),
        GUARD,
        "fabcheck accept",
    )
}

#[test]
fn level_1_names_the_drifted_and_unreachable_nodes_and_drains_exactly_the_failed() {
    let fleet = fleet();
    let unreachable = fleet.endpoints[7].clone();
    let json_path = fleet.dir.join("accept.json");
    let html = fleet.dir.join("accept.html");
    let out = accept(&fleet, &["--json", "--output", json_path.to_str().unwrap(), "--html", html.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(doc["schema"], "fabcheck.accept.v1");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["level"], 1);

    // Every node is there, named by its bundle (the directory's name) or, unreached, its endpoint.
    let verdicts: Vec<(String, String)> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["host"].as_str().unwrap().to_string(), n["verdict"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(String, String)> = [
        ("node01", "pass"),
        ("node02", "pass"),
        ("node03", "fail"),
        ("node04", "pass"),
        ("node05", "fail"),
        ("node06", "pass"),
        ("node07", "pass"),
        (unreachable.as_str(), "unreachable"),
    ]
    .iter()
    .map(|(h, v)| (h.to_string(), v.to_string()))
    .collect();
    assert_eq!(verdicts, want);

    // The drift: exactly three keys, each naming its one outlier with both values.
    let drift: Vec<(String, String, String, String)> = doc["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["nodes"].as_array().unwrap().len(), 1, "{d}");
            let n = &d["nodes"][0];
            let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
            (s(&d["key"]), s(&d["majority"]), s(&n["host"]), s(&n["value"]))
        })
        .collect();
    let want = [
        ("firmware mlx5_0", "28.39.1002", "node03", "28.36.1010"),
        ("mtu mlx5_0/1", "4096 (netdev 9000)", "node06", "1024 (netdev 1500)"),
        ("pfc mlx5_0/1", "3", "node05", "4"),
    ];
    assert_eq!(drift, want.map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string())));

    // Each drift finding with its severity (firmware and PFC errors, MTU a warning) and action.
    let finding = |host: &str, key: &str| -> serde_json::Value {
        let node = doc["nodes"].as_array().unwrap().iter().find(|n| n["host"] == host).unwrap();
        node["findings"].as_array().unwrap().iter().find(|f| f["id"] == "accept.drift" && f["subject"] == key).cloned().unwrap()
    };
    let fw = finding("node03", "firmware mlx5_0");
    assert_eq!((fw["severity"].as_str(), fw["action"].as_str()), (Some("error"), Some("update-firmware")));
    let pfc = finding("node05", "pfc mlx5_0/1");
    assert_eq!((pfc["severity"].as_str(), pfc["action"].as_str()), (Some("error"), Some("fix-config")));
    let mtu = finding("node06", "mtu mlx5_0/1");
    assert_eq!((mtu["severity"].as_str(), mtu["action"].as_str()), (Some("warning"), Some("fix-config")));
    assert!(mtu["message"].as_str().unwrap().contains("1024 (netdev 1500) here, 4096 (netdev 9000) on 6 of 7 nodes"), "{mtu}");

    // The drain list: exactly the failed nodes, each with its action.
    let drain: Vec<(String, String)> = doc["drain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["host"].as_str().unwrap().to_string(), d["action"].as_str().unwrap().to_string()))
        .collect();
    let want = [("node03", "update-firmware"), ("node05", "fix-config"), (unreachable.as_str(), "reboot")];
    assert_eq!(drain, want.map(|(h, a)| (h.to_string(), a.to_string())));
    let stages: Vec<(&str, &str)> =
        doc["stages"].as_array().unwrap().iter().map(|s| (s["name"].as_str().unwrap(), s["verdict"].as_str().unwrap())).collect();
    assert_eq!(stages, [("check", "fail"), ("drift", "fail")]);

    // The HTML page: one page with the node table and the drift.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<table id=\"nodes\">") && page.contains("<table id=\"drift\">"));
    assert_eq!(page.matches("<tr class=\"pass\"><td>node0").count(), 5, "{page}");

    // --format oneline: one drain line per failed node, nothing else.
    let out = accept(&fleet, &["--format", "oneline"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("node03 update-firmware: accept.drift firmware mlx5_0: "), "{text}");
    assert!(lines[1].starts_with("node05 fix-config: roce.qos mlx5_0/1: "), "{text}");
    assert!(lines[2].starts_with(&format!("{unreachable} reboot: accept.unreachable node: ")), "{text}");

    // --fail-on warning: the MTU node fails too, and is drained.
    let out = accept(&fleet, &["--format", "oneline", "--fail-on", "warning"], &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with("node06 fix-config: accept.drift mtu mlx5_0/1: ")), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");

    // JUnit: a suite per stage, valid against junit-10.xsd.
    let xml = fleet.dir.join("accept.xml");
    let out = accept(&fleet, &["--format", "junit", "--output", xml.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(junit.contains("name=\"fabcheck accept check\"") && junit.contains("name=\"fabcheck accept drift\""), "{junit}");
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/junit-10.xsd");
    let lint = Command::new("xmllint").args(["--noout", "--schema"]).arg(&xsd).arg(&xml).output().expect("xmllint (tests/deps.sh: libxml2-utils)");
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stderr));

    // The JSON Schema.
    let validate = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/validate.py");
    let valid = Command::new("/usr/bin/python3").arg(&validate).arg(&json_path).output().unwrap();
    assert!(valid.status.success(), "{}{}", String::from_utf8_lossy(&valid.stdout), String::from_utf8_lossy(&valid.stderr));
}

#[test]
fn drain_runs_scontrol_per_failed_node_inside_slurm_and_nothing_outside() {
    let fleet = fleet();
    // Outside an allocation: exit 2 before any node is asked.
    let out = accept(&fleet, &["--drain"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one (no SLURM_JOB_ID): nothing was drained"));

    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-slurm");
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let log = fleet.dir.join("scontrol.log");
    let env = [("PATH", path.as_str()), ("SLURM_JOB_ID", "42"), ("FAKE_SCONTROL_LOG", log.to_str().unwrap())];
    let out = accept(&fleet, &["--drain", "--format", "oneline"], &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The unreachable endpoint (tcp://127.0.0.1:PORT) is no Slurm node name: said, and exit 2.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("drained node03: update-firmware") && stderr.contains("drained node05: fix-config"), "{stderr}");
    assert!(stderr.contains("is no Slurm node name"), "{stderr}");
    let calls: Vec<Vec<String>> = std::fs::read_to_string(&log)
        .unwrap()
        .split("\n\n")
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.lines().map(str::to_string).collect())
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0][..3], ["update", "nodename=node03", "state=drain"]);
    assert!(calls[0][3].starts_with("reason=fabcheck accept: update-firmware accept.drift firmware mlx5_0: "), "{calls:?}");
    assert_eq!(calls[1][1], "nodename=node05");
}

#[test]
fn a_bundle_agent_refuses_verbs_tests_and_a_level_3_nobody_answers_is_exit_2() {
    let fleet = fleet();
    let out = super::fake_cluster::run_fabcheck(&["accept", "tcp://127.0.0.1:1", "--level", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no node answered check"), "{}", String::from_utf8_lossy(&out.stderr));
    let mut pair = Command::new(env!("CARGO_BIN_EXE_fabcheck"));
    pair.args(["pair", &fleet.endpoints[0], &fleet.endpoints[1], "--tests", "write_bw"]).env("FABCHECK_TOKEN", TOKEN);
    let out = pair.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("serves a bundle"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_agent_that_cannot_answer_check_is_named_with_its_version_never_dropped() {
    // The fake agents speak the protocol but answer `check` with an error, as an agent older
    // than 0.5 refuses a request it cannot read.
    let cluster = super::fake_cluster::FakeCluster::healthy(2);
    let mut args = vec!["accept", "--json"];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let out = super::fake_cluster::run_fabcheck(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "nobody answered: {stderr}");
    assert!(stderr.contains("no node answered check"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for n in nodes {
        assert_eq!(n["verdict"], "unreachable", "{n}");
        let message = n["findings"][0]["message"].as_str().unwrap();
        assert!(message.contains("(fabcheck fake) did not answer check"), "{message}");
        assert!(n["findings"][0]["remedy"].as_str().unwrap().contains("fabcheck 0.5 or later"), "{n}");
    }
}
