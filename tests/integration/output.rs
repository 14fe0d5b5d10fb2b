//! The one output path (issue 26) and the files fabcheck writes (issue 27): mesh in every
//! format, with `--output` and `--fail-on`; stdout and stderr that are full, closed or a broken
//! pipe; `--output` to a FIFO, a symlink, a long name, a 0600 file. Everything in temporary
//! directories: no device node of the host is ever a target (a FIFO stands for one).

use super::fake_cluster::{FakeCluster, Knobs};
use super::{fabcheck, fixtures_dir, json};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabcheck"));
    c.env_remove("FABCHECK_TOKEN").stdin(Stdio::null());
    c
}

fn healthy_check(extra: &[&str]) -> Vec<String> {
    let root = fixtures_dir().join("hdr-ib-healthy");
    let mut args: Vec<String> = ["check", "--sysfs-root", root.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-output-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mesh(endpoints: &[String], extra: &[&str]) -> Output {
    bin().arg("mesh").args(extra).args(endpoints).output().expect("run fabcheck mesh")
}

/// A cluster of four whose third node is slow: the mesh fails (exit 1) naming it.
fn one_slow_node() -> FakeCluster {
    let mut knobs = vec![Knobs::default(); 4];
    knobs[2].slow_node = true;
    FakeCluster::start(knobs, Duration::ZERO)
}

fn gauge(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
        .collect()
}

#[test]
fn mesh_speaks_prom_junit_and_oneline() {
    // 0.2's mesh wrote JSON whatever --format said.
    let cluster = one_slow_node();
    let eps = &cluster.endpoints;
    let out = mesh(eps, &["--format", "prom", "--tests", "write_bw,send_lat"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("valid exposition");
    let bw = gauge(&scrape, "fabcheck_bandwidth_gbps", &[("test", "write_bw"), ("direction", "a->b")]);
    assert_eq!(bw.len(), 6, "one series per pair, test and direction:\n{text}");
    let mut series: Vec<_> = scrape.samples.iter().filter(|s| s.metric == "fabcheck_bandwidth_gbps").map(|s| format!("{:?}", s.labels)).collect();
    let all = series.len();
    series.sort();
    series.dedup();
    assert_eq!(series.len(), all, "no series written twice (a retest stands for its pair)");
    // Issue #45: every artefact names an agent by the host it said in its hello, the address
    // beside it (the JSON keeps the address, with `hosts`).
    let name = |i: usize| format!("fake{i:02} ({})", eps[i]);
    let slow = &name(2);
    assert!(!gauge(&scrape, "fabcheck_bandwidth_gbps", &[("a", name(0).as_str()), ("b", slow.as_str()), ("size", "65536")]).is_empty(), "{text}");
    assert_eq!(
        gauge(&scrape, "fabcheck_latency_p50_seconds", &[("test", "send_lat")]).len(),
        6,
        "0.2: fabcheck_latency_p50_us (promtool refuses it)"
    );
    assert_eq!(gauge(&scrape, "fabcheck_mesh_suspects", &[("kind", "node")]), [1.0], "{text}");
    assert_eq!(gauge(&scrape, "fabcheck_verdict_pass", &[("command", "mesh")]), [0.0]);

    let out = mesh(eps, &["--format", "junit", "--tests", "write_bw,send_lat"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("well-formed XML");
    let cases: Vec<_> = xml.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let per_test = |class: &str| cases.iter().filter(|c| c.attribute("classname") == Some(class)).count();
    assert_eq!((per_test("fabcheck.mesh.write_bw"), per_test("fabcheck.mesh.send_lat")), (6, 6), "{text}");
    let failed = |c: &roxmltree::Node| c.children().any(|n| n.has_tag_name("failure"));
    let of_slow = |class: &str| {
        cases.iter().filter(|c| c.attribute("name").unwrap().contains(slow.as_str()) && c.attribute("classname") == Some(class)).collect::<Vec<_>>()
    };
    assert!(
        of_slow("fabcheck.mesh.write_bw").iter().all(|c| failed(c)) && of_slow("fabcheck.mesh.write_bw").len() == 3,
        "the slow node's bandwidth cases fail:\n{text}"
    );
    // 0.3 failed the healthy latency case of every slow pair too.
    assert!(
        !of_slow("fabcheck.mesh.send_lat").iter().any(|c| failed(c)) && of_slow("fabcheck.mesh.send_lat").len() == 3,
        "its latency is fine:\n{text}"
    );
    assert!(cases.iter().any(|c| c.attribute("classname") == Some("fabcheck.mesh.mesh.suspect") && failed(c)));

    let out = mesh(eps, &["--format", "oneline"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with(&format!("fabcheck mesh FAIL: {slow}: mesh.suspect: ")), "the verdict and the first error suspect: {text}");
}

#[test]
fn mesh_output_writes_the_stamped_document_atomically_and_fail_on_warning_is_honoured() {
    let cluster = FakeCluster::healthy(3);
    let dir = scratch("mesh");
    let file = dir.join("mesh.json");
    let out = mesh(&cluster.endpoints, &["--json", "--output", file.to_str().unwrap(), "--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "--output: nothing on stdout");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!((doc["schema"].as_str(), doc["verdict"].as_str()), (Some("fabcheck.mesh.v1"), Some("pass")));
    assert_eq!(doc["pairs"].as_array().map(Vec::len), Some(3));
    assert_eq!(doc["fabcheck_version"], env!("CARGO_PKG_VERSION"));
    assert!(doc["host"].as_str().is_some_and(|h| !h.is_empty()) && doc["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{doc:#}");
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["mesh.json"], "no temporary file left");
    // A failing mesh: exit 1 and verdict fail, in the file too.
    let slow = one_slow_node();
    let out = mesh(&slow.endpoints, &["--output", file.to_str().unwrap(), "--format", "json", "--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["verdict"], "fail");
    // The human view goes to --output too.
    let out = mesh(&cluster.endpoints, &["--output", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && std::fs::read_to_string(&file).unwrap().contains("PASS: 3 endpoints, 3 pairs"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs fabcheck with stdout (and stderr) set up by the caller.
fn run_with(args: &[String], stdout: Stdio, stderr: Stdio) -> Output {
    bin().args(args).stdout(stdout).stderr(stderr).output().expect("run fabcheck")
}

fn dev_full() -> Stdio {
    Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full"))
}

/// The write end of a pipe whose reader is already gone: every write is EPIPE.
fn broken_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_result_that_cannot_be_written_to_stdout_is_exit_2() {
    // 0.2: `--json > /dev/full` panicked (exit 101/134); mesh said "cannot write the result"
    // and exited 0.
    let out = run_with(&healthy_check(&["--json"]), dev_full(), Stdio::piped());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write the result to stdout") && err.contains("No space left"), "{err}");
    let cluster = FakeCluster::healthy(2);
    let mut args = vec!["mesh".to_string(), "--json".into()];
    args.extend(cluster.endpoints.iter().cloned());
    let out = run_with(&args, dev_full(), Stdio::piped());
    assert_eq!(out.status.code(), Some(2), "mesh: {}", String::from_utf8_lossy(&out.stderr));
    let out = run_with(&["completions".into(), "bash".into()], dev_full(), Stdio::piped());
    assert_eq!(out.status.code(), Some(2), "completions: {}", String::from_utf8_lossy(&out.stderr));
    // A closed stdout.
    let out = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" >&-")
        .arg(env!("CARGO_BIN_EXE_fabcheck"))
        .args(healthy_check(&["--json"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "closed stdout: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_broken_pipe_is_a_quiet_exit_2() {
    // 0.2: `fabcheck check --json | head -c 10` panicked (exit 134 in release).
    let help = vec!["--help".to_string()];
    for args in [healthy_check(&["--json"]), healthy_check(&[]), vec!["completions".into(), "bash".into()], vec!["manpage".into()], help] {
        let out = run_with(&args, broken_pipe(), Stdio::piped());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: quiet, not {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_full_stderr_is_never_a_panic() {
    // 0.2: the error line went through eprintln!, which panics when stderr is full.
    let args: Vec<String> = ["check", "--sysfs-root", "/nonexistent/fabcheck-bundle"].iter().map(|s| s.to_string()).collect();
    let out = run_with(&args, Stdio::piped(), dev_full());
    assert_eq!(out.status.code(), Some(2));
    let out = run_with(&healthy_check(&["--json"]), broken_pipe(), dev_full());
    assert_eq!(out.status.code(), Some(2));
    let out = run_with(&healthy_check(&["--json"]), Stdio::piped(), dev_full());
    assert_eq!(out.status.code(), Some(0), "a result delivered is a result, stderr or not");
    json(&out);
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

#[test]
fn output_to_a_fifo_writes_through_it_and_leaves_it_a_fifo() {
    // Stands for /dev/null, /dev/stdout and other non-regular targets: 0.2 renamed a regular
    // file over them (as root, /dev/null became a file).
    let dir = scratch("fifo");
    let fifo = dir.join("result.pipe");
    mkfifo(&fifo);
    // Opened for reading without blocking, before the run: the run's writer never waits, and a
    // run that replaces the FIFO (0.2) leaves it empty rather than the test hanging.
    let mut reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    let out = fabcheck(&healthy_check(&["--json", "--output", fifo.to_str().unwrap()]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut reader, &mut text);
    let doc: serde_json::Value = serde_json::from_str(&text).expect("the document came through the FIFO");
    assert_eq!(doc["schema"], "fabcheck.check.v1");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file beside it");
    // A link to a descriptor (here, to /dev/stdout) is written through, not replaced.
    let link = dir.join("to-stdout");
    std::os::unix::fs::symlink("/dev/stdout", &link).unwrap();
    let out = fabcheck(&healthy_check(&["--format", "oneline", "--output", link.to_str().unwrap()]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).as_ref()), (Some(0), "fabcheck check PASS\n"));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn output_refuses_a_symlink_to_a_file_and_touches_neither() {
    let dir = scratch("symlink");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let link = dir.join("fabcheck.prom");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let out = fabcheck(&healthy_check(&["--format", "prom", "--output", link.to_str().unwrap()]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link") && err.contains("fabcheck.prom"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn output_keeps_a_files_mode_and_takes_a_long_name() {
    let dir = scratch("mode");
    let kept = dir.join("private.json");
    std::fs::write(&kept, "old").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = fabcheck(&healthy_check(&["--json", "--output", kept.to_str().unwrap()]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600, "a 0600 result stays 0600");
    json(&Output { stdout: std::fs::read(&kept).unwrap(), ..out });
    // 0.2's temporary name (`.NAME.PID.tmp`) did not fit beside a 250-character name.
    let long = dir.join(format!("{}.prom", "x".repeat(245)));
    let out = fabcheck(&healthy_check(&["--format", "prom", "--output", long.to_str().unwrap()]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&long).unwrap().contains("fabcheck_verdict_pass"));
    // The manual pages go through the same writer.
    let out = fabcheck(&["manpage", "--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(dir.join("fabcheck.1").is_file());
    std::fs::remove_dir_all(&dir).ok();
}
