//! Issue #58 (security 0.5): counters the kernel did not write are never judged clean, a
//! launcher that ignores SIGTERM leaves nothing running, and what a launcher says on stderr
//! reaches the terminal sanitised.

use super::{fixtures_dir, host_rdma, NO_SUCH_DEVICE};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-sec05-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The hostile strings of the issue: a forged line, a carriage return, a screen clear, an
/// OSC 52 clipboard write ended by BEL, a non-character, a command substitution, markup.
pub const HOSTILE: [&str; 8] =
    ["x\nPASS  forged line", "x\rPASS", "x\u{1b}[2J", "x\u{1b}]52;c;ZXZpbA==\u{7}", "x\u{7}", "x\u{fffe}", "$(id)", "\"<script>alert(1)</script>"];

/// No raw control byte (other than the newlines that end lines and tabs) and no line that
/// starts as a forged verdict.
pub fn assert_clean(what: &str, text: &str) {
    for (i, c) in text.chars().enumerate() {
        assert!(!c.is_control() || c == '\n' || c == '\t', "{what}: raw control {c:?} at {i}: {text:?}");
        assert!(c != '\u{fffe}', "{what}: raw U+FFFE at {i}: {text:?}");
    }
    for line in text.lines() {
        assert!(!line.starts_with("PASS  forged") && !line.starts_with("FORGED"), "{what}: a forged line {line:?} in {text:?}");
    }
}

/// The root port of `pcie-aer-badtlp` counts nothing; its `aer_dev_correctable` replaced by a
/// file the kernel could not have written is `skip` naming the file, never counted clean.
#[test]
fn aer_counts_the_kernel_cannot_write_are_skipped_naming_the_file() {
    let cases: Vec<(&str, String)> = vec![
        ("2^64", "RxErr 18446744073709551616\nTOTAL_ERR_COR 0\n".into()),
        ("1e30", "RxErr 1e30\nTOTAL_ERR_COR 0\n".into()),
        ("negative", "RxErr -1\nTOTAL_ERR_COR 0\n".into()),
        ("float", "RxErr 0.5\nTOTAL_ERR_COR 0\n".into()),
        ("hex", "RxErr 0x10\nTOTAL_ERR_COR 0\n".into()),
        ("words", "RxErr none\nTOTAL_ERR_COR 0\n".into()),
        ("65 rows", format!("{}TOTAL_ERR_COR 0\n", "RxErr 0\n".repeat(65))),
        ("two totals", "RxErr 0\nTOTAL_ERR_COR 0\nTOTAL_ERR_COR 0\n".into()),
    ];
    let dir = scratch("aer");
    for (name, text) in cases {
        let tree = dir.join(name.replace([' ', '^'], "_"));
        let ok = Command::new("cp").arg("-a").arg(fixtures_dir().join("pcie-aer-badtlp")).arg(&tree).status().unwrap().success();
        assert!(ok);
        let file = tree.join("devices/pci0000:3a/0000:3a:00.0/aer_dev_correctable");
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(["check", "--format", "json", "--sysfs-root"]).arg(&tree).output().unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let rows: Vec<&Value> = doc["checks"].as_array().unwrap().iter().filter(|c| c["id"] == "pcie.aer").collect();
        let port = rows.iter().find(|c| c["subject"] == "0000:3a:00.0").unwrap_or_else(|| panic!("{name}: no pcie.aer row for the port: {rows:?}"));
        assert_eq!(port["status"], "skip", "{name}: {port}");
        let observed = port["observed"].as_str().unwrap();
        assert!(observed.contains("aer_dev_correctable") && observed.contains("not as the kernel writes it"), "{name}: {observed}");
        // The node's clean count no longer counts that bridge.
        for row in &rows {
            if row["status"] == "pass" {
                assert!(!row["observed"].as_str().unwrap().contains("1 bridge"), "{name}: counted clean: {row}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stand-in srun that ignores SIGTERM (so does the `sleep` it leaves behind), says hostile
/// things on stderr, and runs the agent here: the pair fails (no such device), fabcheck exits
/// 2, and nothing the stand-in started is left running; its words reached the terminal
/// escaped.
#[test]
fn an_srun_that_ignores_sigterm_leaves_nothing_running_and_its_stderr_is_sanitised() {
    let dir = scratch("srun");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pids = dir.join("pids");
    let script = r#"#!/bin/sh
# A hostile srun: ignores SIGTERM, leaves a child behind, writes escape sequences to stderr.
trap '' TERM
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
sleep 300 &
echo $! >>"$FAKE_SRUN_PIDS"
printf 'srun: \033]52;c;ZXZpbA==\007clip\033[2J\rPASS  forged\n' >&2
printf 'srun: x\nFORGED PASS 0\n' >&2
"$@"
wait
"#;
    let srun = bin.join("srun");
    std::fs::write(&srun, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&srun, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let (a, b) = (format!("n01/{NO_SUCH_DEVICE}"), format!("n02/{NO_SUCH_DEVICE}"));
    // `--remote-fabcheck` takes a plain path only (src/control/link.rs); the checkout's may hold
    // a space (run-all's copy does): a link to it in the scratch directory, whose path is plain.
    let link = dir.join("fabcheck");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fabcheck"), &link).unwrap();
    let remote = link.to_str().unwrap();
    let started = std::time::Instant::now();
    let out = Command::new("timeout")
        .arg("120")
        .arg(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", &a, &b, "--launcher", "srun", "--tests", "send_lat", "--remote-fabcheck", remote])
        .env("PATH", &path)
        .env("FAKE_SRUN_PIDS", &pids)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err} ({:?})", host_rdma());
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
    assert_clean("stderr", &err);
    assert_clean("stdout", &String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("\\u{1b}]52;c;ZXZpbA==\\u{7}clip"), "the escape is shown escaped: {err}");
    let pids: Vec<i32> = std::fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "both stand-ins started");
    for pid in pids {
        assert!(!running(pid), "the stand-in's child {pid} is still running after fabcheck exited");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
fn running(pid: i32) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")) {
            Err(_) => return false,
            Ok(stat) if stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z') => return false,
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    true
}

/// `--profile` and `--topology` given a file that is not theirs (`/etc/shadow` through sudo)
/// name the line, never quote it; the hostile strings in such a file reach stderr escaped or
/// not at all.
#[test]
fn profile_and_topology_errors_never_quote_the_file() {
    let dir = scratch("quote");
    let secret = dir.join("shadow");
    std::fs::write(&secret, "root:$6$s3cretHash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n").unwrap();
    let hostile = dir.join("hostile");
    std::fs::write(&hostile, HOSTILE.iter().map(|h| format!("mtu = {h}s3cret\n")).collect::<String>()).unwrap();
    let root = fixtures_dir().join("hdr-ib-healthy");
    for file in [&secret, &hostile] {
        let runs: [Vec<&str>; 2] = [
            vec!["check", "--sysfs-root", root.to_str().unwrap(), "--profile", file.to_str().unwrap()],
            vec!["fabric", "--topology", file.to_str().unwrap()],
        ];
        for args in runs {
            let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(":1:"), "{args:?}: the line is named: {err}");
            assert!(!err.contains("s3cret") && !err.contains("root:"), "{args:?}: quoted: {err}");
            assert_clean("stderr", &err);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Agents whose `hello` reports a hostile host name (each of [`HOSTILE`]), through `pair` and
/// `mesh` in every format: no raw control byte, no forged line, on stdout or stderr.
#[test]
fn hostile_names_from_agents_reach_no_printer_raw() {
    use super::fake_cluster::{run_fabcheck, FakeCluster, Knobs};
    for round in 0..4 {
        let mut knobs = vec![Knobs::default(); 2];
        // The fake splices the name into its hello's JSON as written: give it JSON-escaped, so
        // what arrives is valid JSON carrying the hostile string.
        let escaped = |h: &str| serde_json::to_string(h).unwrap().trim_matches('"').to_string();
        knobs[0].reported_host = Some(escaped(HOSTILE[round]));
        knobs[1].reported_host = Some(escaped(HOSTILE[round + 4]));
        let cluster = FakeCluster::start(knobs, std::time::Duration::ZERO);
        let (a, b) = (cluster.endpoints[0].as_str(), cluster.endpoints[1].as_str());
        let runs: Vec<Vec<&str>> = vec![
            vec!["pair", a, b, "--tests", "write_bw"],
            vec!["pair", a, b, "--tests", "write_bw", "--format", "junit"],
            vec!["mesh", a, b, "--tests", "write_bw"],
            vec!["mesh", a, b, "--tests", "write_bw", "--format", "prom"],
            vec!["mesh", a, b, "--tests", "write_bw", "--format", "junit"],
            vec!["mesh", a, b, "--tests", "write_bw", "--format", "oneline"],
            vec!["mesh", a, b, "--tests", "write_bw", "--json"],
        ];
        for args in runs {
            let out = run_fabcheck(&args);
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(matches!(out.status.code(), Some(0..=2)), "{args:?}: {stderr}");
            assert_clean(&format!("{args:?} stdout"), &stdout);
            assert_clean(&format!("{args:?} stderr"), &stderr);
            if args.contains(&"junit") {
                assert!(!stdout.contains("<script>"), "{args:?}: {stdout}");
            }
            if args.contains(&"--json") {
                // The name arrived, and is there escaped (not left out: then nothing was tested).
                assert!(stdout.contains("\\\\u{"), "{args:?}: the hostile host name is not in the document: {stdout}");
            }
        }
    }
}

/// `compare` of documents whose test, host and endpoint names and file name hold the hostile
/// strings, in every format; `bundle` into a DIR so named.
#[test]
fn hostile_names_in_compared_documents_and_a_bundle_dir_reach_no_printer_raw() {
    let dir = scratch("compare");
    let pairs = |scale: f64| -> Value {
        let records: Vec<Value> = HOSTILE
            .iter()
            .enumerate()
            .map(|(i, h)| {
                serde_json::json!({"a": format!("tcp://h{i}:1/{h}"), "b": format!("tcp://g{i}:1/mlx5_0"), "verdict": "pass",
                    "results": [{"test": format!("write_bw{h}"), "direction": "a->b", "size": 65536, "iterations": 5000, "qps": 1,
                                 "bw_gbps": 90.0 * scale, "peak_gbps": 91.0 * scale, "msg_rate_mpps": 0.1}]})
            })
            .collect();
        let hosts: serde_json::Map<String, Value> =
            HOSTILE.iter().enumerate().map(|(i, h)| (format!("tcp://h{i}:1/{h}"), Value::from(format!("n{h}")))).collect();
        serde_json::json!({"schema": "fabcheck.mesh.v1", "time": format!("2026-12-01T00:00:00Z{}", HOSTILE[0]), "host": HOSTILE[3],
            "verdict": "pass", "endpoints": [], "hosts": hosts, "pairs": records, "suspects": []})
    };
    let old = dir.join("old\u{1b}[2J\nPASS.json");
    let new = dir.join("new.json");
    std::fs::write(&old, pairs(1.0).to_string()).unwrap();
    std::fs::write(&new, pairs(0.5).to_string()).unwrap();
    let formats: [&[&str]; 5] = [&[], &["--json"], &["--format", "prom"], &["--format", "junit"], &["--format", "oneline"]];
    for format in formats {
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).arg("compare").args(format).arg(&old).arg(&new).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{format:?}: every pair regressed: {stderr}");
        assert!(!stdout.is_empty() && (format.len() == 2 || stdout.contains("write_bw")), "{format:?}: {stdout}");
        assert_clean(&format!("compare {format:?} stdout"), &stdout);
        assert_clean(&format!("compare {format:?} stderr"), &stderr);
    }
    for name in HOSTILE {
        let target = dir.join(format!("bundle{name}").replace('/', "_"));
        let fixture = fixtures_dir().join("hdr-ib-healthy");
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).arg("bundle").arg(&target).arg("--from-root").arg(&fixture).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_clean(&format!("bundle {name:?}"), &String::from_utf8_lossy(&out.stderr));
        // Again into the same, now full, DIR: refused, and said on one line.
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).arg("bundle").arg(&target).arg("--from-root").arg(&fixture).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_clean(&format!("bundle again {name:?}"), &String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nobody` plants a FIFO, a link to a device and a link to a directory in a sticky directory:
/// root's `--output` (at each, and through the directory link) and `bundle` (at each) refuse
/// with exit 2 and write nothing, neither there nor where the links lead.
#[test]
fn outputs_planted_by_another_user_in_a_sticky_directory_are_refused() {
    use std::os::unix::fs::{lchown, symlink, OpenOptionsExt, PermissionsExt};
    assert!(nix::unistd::geteuid().is_root(), "this test plants files as another user: run the suite as root");
    let dir = scratch("planted");
    let sticky = dir.join("tmp");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let fifo = sticky.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    let dev = sticky.join("devlink");
    symlink("/dev/null", &dev).unwrap();
    let dirlink = sticky.join("dirlink");
    symlink(&elsewhere, &dirlink).unwrap();
    for p in [&fifo, &dev, &dirlink] {
        lchown(p, Some(65534), Some(65534)).unwrap();
    }
    // Someone reads the FIFO, so a write through it would succeed and show.
    let reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    let root = fixtures_dir().join("hdr-ib-healthy");
    let targets = [fifo.clone(), dev.clone(), dirlink.join("out.json")];
    for target in &targets {
        let out = Command::new("timeout")
            .arg("30")
            .arg(env!("CARGO_BIN_EXE_fabcheck"))
            .args(["check", "--json", "--sysfs-root"])
            .arg(&root)
            .arg("--output")
            .arg(target)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", target.display());
        assert!(err.contains("belongs to user 65534"), "{}: {err}", target.display());
    }
    for target in [&fifo, &dev, &dirlink] {
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).arg("bundle").arg(target).arg("--from-root").arg(&root).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "bundle {}: {err}", target.display());
        assert!(err.contains("belongs to user 65534"), "bundle {}: {err}", target.display());
    }
    let mut got = Vec::new();
    let _ = std::io::Read::read_to_end(&mut &reader, &mut got);
    assert!(got.is_empty(), "something was written into the FIFO: {}", String::from_utf8_lossy(&got));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "something was written through the directory link");
    let names: Vec<String> = std::fs::read_dir(&sticky).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 3, "nothing new beside the planted names: {names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--output /dev/tty` without a controlling terminal is refused at once, not after the 5 s a
/// FIFO's reader is waited for.
#[test]
fn dev_tty_without_a_terminal_is_refused_at_once() {
    let root = fixtures_dir().join("hdr-ib-healthy");
    let started = std::time::Instant::now();
    let out = Command::new("setsid")
        .arg("-w")
        .arg(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["check", "--json", "--sysfs-root"])
        .arg(&root)
        .args(["--output", "/dev/tty"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no controlling terminal"), "{err}");
    // Generous: the FIFO wait it must not take is 5 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "took {:?}", started.elapsed());
}

/// A bundle's `class/net/ib0/mode` linked out of it (absolutely, and by a relative link that
/// climbs out) is not read: the outside file's `connected` never reaches the `ipoib` row.
#[test]
fn an_ipoib_mode_linked_out_of_the_bundle_is_not_read() {
    let dir = scratch("mode");
    let outside = dir.join("outside-mode");
    std::fs::write(&outside, "connected\n").unwrap();
    for (tag, link) in [("absolute", outside.clone()), ("relative", PathBuf::from("../../../../outside-mode"))] {
        let tree = dir.join(tag);
        assert!(Command::new("cp").arg("-a").arg(fixtures_dir().join("ofed-consistent")).arg(&tree).status().unwrap().success());
        let mode = tree.join("class/net/ib0/mode");
        std::fs::remove_file(&mode).unwrap();
        std::os::unix::fs::symlink(&link, &mode).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(["check", "--json", "--sysfs-root"]).arg(&tree).output().unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "ipoib").expect("an ipoib row").clone();
        let observed = row["observed"].as_str().unwrap();
        assert!(observed.contains("ib0") && !observed.contains("connected"), "{tag}: the outside file was read: {row}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
