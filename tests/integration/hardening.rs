//! Hostile input, reproduced (issue 14): each ends in a clear exit 2 (or a refusal on the wire)
//! with bounded memory, never a hang, a panic or a misdiagnosis. No timing asserts: a bounded
//! wait that runs out is a hang, and fails the test as one.

use super::{fabcheck, fixtures_dir, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-hardening-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

/// Runs fabcheck, killing it (and failing) if it has not ended within `limit`: a hang.
pub(super) fn fabcheck_bounded(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fabcheck");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("fabcheck {args:?} hung: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_exit2(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "stderr lacks '{needle}': {err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_fifo_profile_or_hostfile_is_refused_not_waited_on() {
    let dir = scratch("fifo");
    let fifo = dir.join("profile");
    mkfifo(&fifo);
    let root = fixtures_dir().join("hdr-ib-healthy");
    let out = fabcheck_bounded(&["check", "--sysfs-root", root.to_str().unwrap(), "--profile", fifo.to_str().unwrap()], Duration::from_secs(30));
    assert_exit2(&out, "is a FIFO, not a regular file");
    let out = fabcheck_bounded(&["mesh", "--hostfile", fifo.to_str().unwrap()], Duration::from_secs(30));
    assert_exit2(&out, "is a FIFO, not a regular file");
}

#[test]
fn a_hostfile_that_is_not_a_host_list_is_never_quoted() {
    // Regression (issue #46 item 6): `mesh --hostfile /etc/shadow` quoted the file's first line
    // in its error, which under sudo shows root's password hash to whoever ran it.
    let dir = scratch("shadow");
    let shadow = dir.join("shadow");
    std::fs::write(&shadow, "root:$6$S3cr3tSalt$0nlyR00tMayKn0wThisHash:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n").unwrap();
    let out = fabcheck_bounded(&["mesh", "--hostfile", shadow.to_str().unwrap()], Duration::from_secs(30));
    let err = stderr(&out);
    assert_exit2(&out, &format!("--hostfile {}: line 1 is not an endpoint", shadow.display()));
    for secret in ["S3cr3tSalt", "0nlyR00tMayKn0wThisHash", "root:", "19700"] {
        assert!(!err.contains(secret), "the error quotes the file ({secret}): {err}");
    }
}

#[test]
fn an_endless_profile_is_refused_without_reading_it_all() {
    let root = fixtures_dir().join("hdr-ib-healthy");
    let out = fabcheck_bounded(&["check", "--sysfs-root", root.to_str().unwrap(), "--profile", "/dev/zero"], Duration::from_secs(30));
    assert_exit2(&out, "/dev/zero is a character device, not a regular file");
    let dir = scratch("big-profile");
    let big = dir.join("big.profile");
    std::fs::write(&big, vec![b'#'; 200 << 10]).unwrap();
    let out = fabcheck_bounded(&["check", "--sysfs-root", root.to_str().unwrap(), "--profile", big.to_str().unwrap()], Duration::from_secs(30));
    assert_exit2(&out, "is larger than");
}

#[test]
fn unreadable_sysfs_files_are_named_not_misread() {
    // A FIFO for the firmware version, a symlink loop for a port's state, a huge attribute:
    // each is named as unreadable, and nothing hangs.
    let dir = scratch("sysfs");
    let tree = dir.join("tree");
    copy_tree(&fixtures_dir().join("hdr-ib-healthy"), &tree);
    let dev = tree.join("class/infiniband/mlx5_0");
    assert!(dev.join("fw_ver").exists(), "fixture layout changed");
    std::fs::remove_file(dev.join("fw_ver")).unwrap();
    mkfifo(&dev.join("fw_ver"));
    let state = dev.join("ports/1/state");
    std::fs::remove_file(&state).unwrap();
    std::os::unix::fs::symlink(dev.join("ports/1/state2"), &state).unwrap();
    std::os::unix::fs::symlink(&state, dev.join("ports/1/state2")).unwrap();
    std::fs::write(dev.join("board_id"), vec![b'x'; 1 << 20]).unwrap();
    let out = fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.to_str().unwrap()], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    let unreadable: Vec<(String, String, String)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "sysfs.unreadable")
        .map(|f| (f["severity"].as_str().unwrap().into(), f["subject"].as_str().unwrap().into(), f["message"].as_str().unwrap().into()))
        .collect();
    let find = |file: &str| unreadable.iter().find(|(_, _, m)| m.contains(file)).unwrap_or_else(|| panic!("{file} not named: {unreadable:#?}"));
    let (sev, subject, message) = find("mlx5_0/fw_ver");
    assert_eq!((sev.as_str(), subject.as_str()), ("error", "mlx5_0"));
    assert!(message.contains("is a FIFO"), "{message}");
    let (_, subject, message) = find("ports/1/state");
    assert_eq!(subject, "mlx5_0/1");
    assert!(message.contains("symlink loop"), "{message}");
    let (_, _, message) = find("board_id");
    assert!(message.contains("larger than"), "{message}");
    // The human form names them too.
    let out = fabcheck_bounded(&["check", "--sysfs-root", tree.to_str().unwrap()], Duration::from_secs(30));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sysfs.unreadable"));
}

#[test]
fn control_bytes_from_sysfs_do_not_reach_the_terminal() {
    let dir = scratch("escape");
    let tree = dir.join("tree");
    copy_tree(&fixtures_dir().join("hdr-ib-healthy"), &tree);
    std::fs::write(tree.join("class/infiniband/mlx5_0/fw_ver"), "20.1\x1b[2J\x07\n").unwrap();
    let out = fabcheck(&["devices", "--sysfs-root", tree.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07), "raw control bytes printed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("20.1\\u{1b}[2J\\u{7}"));
}

#[test]
fn durations_and_counts_from_flags_are_bounded() {
    // Regression: `--timeout 18446744073709551615 --duration 1` aborted with "overflow when
    // adding durations".
    let out = fabcheck(&["pair", "localhost", "localhost", "--timeout", "18446744073709551615", "--duration", "1"]);
    assert_exit2(&out, "--timeout");
    let out = fabcheck(&["pair", "localhost", "localhost", "--duration", "0"]);
    assert_exit2(&out, "give more than 0 and at most 604800 seconds (7 days)");
    let out = fabcheck(&["mesh", "a", "b", "--fanout", "0"]);
    assert_exit2(&out, "--fanout");
    let out = fabcheck(&["serve", "--max-sessions", "0"]);
    assert_exit2(&out, "--max-sessions");
    let out = fabcheck(&["check", "--device", "mlx5_0:99999999999"]);
    assert_exit2(&out, "out of range (1..255)");
}

#[test]
fn srun_refuses_user_at_before_starting_anything() {
    let dir = scratch("srun");
    let log = dir.join("srun.log");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-slurm");
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["mesh", "--launcher", "srun", "n1/mlx5_0", "bob@n2/mlx5_0", "n3/mlx5_0"])
        .env("PATH", path)
        .env("FAKE_SRUN_LOG", &log)
        .output()
        .unwrap();
    assert_exit2(&out, "srun starts agents as you");
    assert!(!log.exists() || std::fs::read_to_string(&log).unwrap().is_empty(), "an agent was started before the refusal");
}

#[test]
fn a_token_file_readable_by_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("token");
    let file = dir.join("token");
    std::fs::write(&file, "s3cret-hardening-token\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = fabcheck(&["serve", "--listen", "127.0.0.1:1", "--token-file", file.to_str().unwrap()]);
    assert_exit2(&out, "readable by others (mode 644)");
}

#[test]
fn an_agent_given_a_truncated_message_says_why() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(br#"{"v":1,"type":"hel"#).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_exit2(&out, "truncated input");
}

/// A `fabcheck serve` on a free loopback port, killed on drop.
struct Serve {
    child: Child,
    port: u16,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let listen = format!("127.0.0.1:{port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .args(["serve", "--listen", &listen])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It says when it listens.
        let mut line = String::new();
        BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert!(line.contains("listening"), "{line}");
        Serve { child, port }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s
    }

    fn rss_kib(&self) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_reply(s: &TcpStream) -> serde_json::Value {
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).expect("a reply, not a hang");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a reply ({e}): {line:?}"))
}

fn hello(s: &mut TcpStream) -> serde_json::Value {
    s.write_all(b"{\"v\":1,\"type\":\"hello\",\"token\":null}\n").unwrap();
    read_reply(s)
}

#[test]
fn silent_connections_cannot_hold_serve() {
    // Regression: 16 connections that say nothing held every slot forever, and every real
    // controller was refused with a misleading "agent died" (0.2); in 0.3 they held the 16
    // places until their hello deadline, and ones that reconnected held them for good (issue
    // #46 item 2). Now they have places of their own, which make room for a new connection.
    let serve = Serve::start(&[]);
    let silent: Vec<TcpStream> = (0..16).map(|_| serve.connect()).collect();
    // A real controller is served at once, while they are open.
    let mut ok = serve.connect();
    let reply = hello(&mut ok);
    assert_eq!(reply["type"], "hello", "{reply}");
    // The silent ones were closed to make room, or are told why at their hello deadline.
    for s in &silent {
        let mut said = Vec::new();
        let _ = (&*s).read_to_end(&mut said);
        let said = String::from_utf8_lossy(&said);
        assert!(said.is_empty() || said.contains("no hello within"), "{said}");
    }
    // Beyond 16 controllers that said hello, serve is busy: a reply that says so, at once.
    let held: Vec<TcpStream> = (0..15)
        .map(|_| {
            let mut s = serve.connect();
            assert_eq!(hello(&mut s)["type"], "hello");
            s
        })
        .collect();
    let mut extra = serve.connect();
    let busy = read_reply(&extra);
    assert_eq!(busy["type"], "error", "{busy}");
    assert!(busy["cause"].as_str().unwrap().starts_with("serve is busy: it serves at most 16"), "{busy}");
    let _ = extra.write_all(b"x");
    drop(held);
}

#[test]
fn serve_says_nothing_about_itself_before_a_valid_hello() {
    let serve = Serve::start(&[]);
    let mut s = serve.connect();
    s.write_all(b"{\"v\":1,\"type\":\"inventory\"}\n").unwrap();
    let reply = read_reply(&s);
    assert_eq!(reply["type"], "error", "{reply}");
    assert_eq!(reply["cause"], "say hello with the shared token first");
    let mut rest = String::new();
    let _ = s.read_to_string(&mut rest);
    assert!(rest.is_empty(), "nothing more before hello: {rest}");
}

#[test]
fn a_flooding_controller_does_not_grow_serve_without_bound() {
    // Regression: a peer that floods requests and reads no replies grew serve's memory about
    // 8x the bytes sent. Now the agent reads a bounded number of requests ahead and TCP pushes
    // back: the writes stop being accepted long before memory grows.
    let serve = Serve::start(&[]);
    let mut s = serve.connect();
    assert_eq!(hello(&mut s)["type"], "hello");
    let before = serve.rss_kib();
    s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    let line = b"{\"v\":1,\"type\":\"finish\"}\n".repeat(4096);
    let mut sent = 0usize;
    while sent < (64 << 20) {
        match s.write(&line) {
            Ok(n) => sent += n,
            Err(_) => break, // pushed back: serve stopped reading
        }
    }
    let after = serve.rss_kib();
    assert!(sent < (64 << 20), "serve read all {sent} bytes without pushing back");
    assert!(after < before + 64 * 1024, "serve grew from {before} KiB to {after} KiB on {sent} bytes");
}
