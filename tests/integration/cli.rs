//! Usage errors: a clear message on stderr and exit code 2, never a panic or a hang.

use super::{fabcheck, fixtures_dir, host_rdma, HostRdma, NO_SUCH_DEVICE};

fn assert_usage_error(args: &[&str], needle: &str) {
    let out = fabcheck(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.to_lowercase().contains(&needle.to_lowercase()), "{args:?}: stderr lacks '{needle}': {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn bad_expectations() {
    let root = fixtures_dir().join("hdr-ib-healthy");
    let root = root.to_str().unwrap();
    assert_usage_error(&["check", "--sysfs-root", root, "--expect", "rate"], "KEY=VALUE");
    assert_usage_error(&["check", "--sysfs-root", root, "--expect", "colour=red"], "unknown expectation");
    assert_usage_error(&["check", "--sysfs-root", root, "--expect", "mtu=1500"], "256 512 1024 2048 4096");
    assert_usage_error(&["check", "--sysfs-root", root, "--profile", "/nonexistent/profile"], "cannot read profile");
}

#[test]
fn bad_profile_names_the_line() {
    let dir = std::env::temp_dir().join(format!("fabcheck-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hdr.profile");
    std::fs::write(&path, "rate=200\nwidth=5X\n").unwrap();
    let root = fixtures_dir().join("hdr-ib-healthy");
    assert_usage_error(&["check", "--sysfs-root", root.to_str().unwrap(), "--profile", path.to_str().unwrap()], ":2:");
    std::fs::write(&path, "# HDR nodes\nrate = 200\nlink_layer = infiniband\nwidth = 4X\n").unwrap();
    let out = fabcheck(&["check", "--sysfs-root", root.to_str().unwrap(), "--profile", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn empty_sysfs_root_is_a_could_not_run() {
    assert_usage_error(&["devices", "--sysfs-root", "/nonexistent/tree"], "holds no class/infiniband");
}

#[test]
fn pair_rejects_bad_input_before_touching_anything() {
    assert_usage_error(&["pair", "node;reboot", "localhost"], "'node;reboot' is not a host name");
    assert_usage_error(&["pair", "localhost", "localhost", "--size", "0"], "size");
    assert_usage_error(&["pair", "localhost", "localhost", "--size", "99999999999"], "invalid value '99999999999' for '--size <BYTES>'");
    assert_usage_error(&["pair", "localhost", "localhost", "--size", "100000000"], "exceeds");
    // perftest's -a -s MAX sweeps up to MAX (0.2 refused --size with --sweep); a sweep needs 2 B.
    assert_usage_error(&["pair", "localhost", "localhost", "--size", "1", "--sweep"], "at least 2 bytes");
    assert_usage_error(&["pair", "localhost", "localhost", "-D", "soon"], "not a duration");
    assert_usage_error(
        &["pair", "localhost", "localhost", "--iters", "5", "--duration", "1"],
        "'--iters <N>' cannot be used with '--duration <SECS>'",
    );
    assert_usage_error(&["pair", "localhost", "localhost", "--tests", "warp_bw"], "unknown test");
    assert_usage_error(&["pair", "localhost", "localhost", "--qps", "0"], "qps");
    assert_usage_error(&["pair", "localhost", "localhost", "--device", "mlx5_0:x"], "port must be a number");
    assert_usage_error(&["pair", "tcp://host", "localhost"], "need a port");
    assert_usage_error(&["pair", "localhost", "localhost", "--direction", "up"], "--direction");
    assert_usage_error(&["pair", "localhost", "localhost", "--threshold", "0"], "percentage");
    assert_usage_error(&["pair", "localhost", "localhost", "--gid-index", "300"], "invalid value '300' for '--gid-index <N>'");
}

#[test]
fn an_endpoint_that_looks_like_an_ssh_option_is_refused_by_the_endpoint_validator() {
    // After `--`, clap takes these as endpoints: the endpoint validator itself must refuse them,
    // and ssh must never be started with one.
    let log = std::env::temp_dir().join(format!("fabcheck-fake-ssh-inject-{}.log", std::process::id()));
    for (args, needle) in [
        (["pair", "--", "-oProxyCommand=x", "node08"], "'-oProxyCommand=x' is not a host name"),
        (["pair", "--", "-oProxy", "node08"], "'-oProxy' is not a host name"),
        (["pair", "--", "node08", "alice@-oProxy"], "'alice@-oProxy' is not a host name"),
        (["pair", "--", "-alice@node08", "node07"], "'-alice@node08': '-alice' is not a user name"),
    ] {
        let _ = std::fs::remove_file(&log);
        let out = with_fake_ssh(&args, &log);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(&format!("fabcheck: {needle}")), "{args:?}: the endpoint validator's words, not clap's: {err}");
        assert!(!log.exists(), "{args:?}: ssh was started: {}", std::fs::read_to_string(&log).unwrap_or_default());
    }
}

#[test]
fn unreachable_agent_is_exit_2_naming_it() {
    // Nothing listens on port 1 of loopback: refused at once.
    let out = fabcheck(&["pair", "tcp://127.0.0.1:1", "localhost", "--tests", "send_lat"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach tcp://127.0.0.1:1"), "{err}");
    assert!(err.contains("fabcheck serve"), "{err}");
}

#[test]
fn mesh_that_cannot_run_is_exit_2() {
    let out = fabcheck(&["mesh", "--hostfile", "/nonexistent/hosts"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("fabcheck: cannot read hostfile: /nonexistent/hosts does not exist"));
    let out = fabcheck(&["mesh", "localhost"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("fabcheck: mesh needs at least two endpoints"));
    let out = fabcheck(&["mesh", "localhost", "node;reboot"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'node;reboot' is not a host name"));
}

#[test]
fn serve_refuses_open_listen_without_token() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("FABCHECK_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("without a token"));
}

#[test]
fn devices_on_this_host_are_listed_or_their_absence_explained() {
    // Decided by what this host has, never skipped.
    let out = fabcheck(&["devices", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    match host_rdma() {
        HostRdma::Devices(names) => {
            assert_eq!(out.status.code(), Some(0), "{err}");
            let doc = super::json(&out);
            let listed: Vec<&str> = doc["devices"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
            assert_eq!(listed, names, "devices --json vs /sys/class/infiniband");
        }
        host => {
            assert_eq!(out.status.code(), Some(2), "{host:?}: {err}");
            // The JSON error document, with the cause stderr says.
            let doc = super::json(&out);
            assert_eq!((doc["schema"].as_str(), doc["verdict"].as_str()), (Some("fabcheck.devices.v1"), Some("error")), "{doc}");
            assert!(err.contains(doc["error"]["cause"].as_str().unwrap()), "{doc}\n{err}");
            assert!(err.starts_with(&format!("fabcheck: {}", host.agent_cause(""))), "{host:?}: {err}");
            assert!(err.contains("what to do:") && err.contains("rdma_rxe"), "{err}");
        }
    }
}

/// fabcheck with `tests/<dir>` (a stand-in for ssh or srun) first on the PATH; the stand-in
/// records what it was asked to run in the file `log_var` names.
fn with_fake(dir: &str, log_var: &str, args: &[&str], log: &std::path::Path) -> std::process::Output {
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(dir);
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    std::process::Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(args).env("PATH", path).env(log_var, log).output().unwrap()
}

fn with_fake_ssh(args: &[&str], log: &std::path::Path) -> std::process::Output {
    with_fake("fake-ssh", "FAKE_SSH_LOG", args, log)
}

fn with_fake_srun(args: &[&str], log: &std::path::Path) -> std::process::Output {
    with_fake("fake-slurm", "FAKE_SRUN_LOG", args, log)
}

/// What `--remote-fabcheck` takes: letters, digits and `/._-+` (fabcheck refuses a path that
/// the remote login shell would split or expand, src/control/link.rs).
fn is_plain(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('-') && path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
}

/// This build's binary at a path `--remote-fabcheck` takes: its own, or, where the checkout's
/// path holds a space or the like (`/tmp/a b/fabcheck`), a link to it in a scratch directory of
/// its own (removed on drop).
struct RemoteBin {
    path: String,
    scratch: Option<std::path::PathBuf>,
}

impl RemoteBin {
    fn new(tag: &str) -> RemoteBin {
        let bin = env!("CARGO_BIN_EXE_fabcheck");
        if is_plain(bin) {
            return RemoteBin { path: bin.to_string(), scratch: None };
        }
        let dir = std::env::temp_dir().join(format!("fabcheck-remote-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("fabcheck");
        std::os::unix::fs::symlink(bin, &link).unwrap();
        let path = link.display().to_string();
        assert!(is_plain(&path), "neither the checkout's binary nor {path} is a path --remote-fabcheck takes (TMPDIR?)");
        RemoteBin { path, scratch: Some(dir) }
    }
}

impl Drop for RemoteBin {
    fn drop(&mut self) {
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Both agents of a pair answered hello (over the stand-in's stdio) and then failed on the
/// device no host has, with the cause this host's libibverbs gives: one of them is named.
fn assert_failed_after_hello(err: &str, hosts: [&str; 2]) {
    let cause = host_rdma().agent_cause(NO_SUCH_DEVICE);
    // The run's error is the last `fabcheck:` line (a warning may come first: where no private
    // directory can hold ssh's control sockets, logins are not shared, and stderr says so).
    let error = err.lines().rfind(|l| l.starts_with("fabcheck: ")).unwrap_or("");
    assert!(
        hosts.iter().any(|h| error.starts_with(&format!("fabcheck: {h}: {cause}"))),
        "want '<{}|{}>: {cause}' ({:?}): {err}",
        hosts[0],
        hosts[1],
        host_rdma()
    );
}

#[test]
fn ssh_transport_builds_a_safe_command_and_names_the_host() {
    let log = std::env::temp_dir().join(format!("fabcheck-fake-ssh-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let remote = RemoteBin::new("ssh");
    let bin = remote.path.as_str();
    let a = format!("alice@node07/{NO_SUCH_DEVICE}");
    let b = format!("node08/{NO_SUCH_DEVICE}");
    let out = with_fake_ssh(&["pair", &a, &b, "--remote-fabcheck", bin, "--tests", "send_lat"], &log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_failed_after_hello(&err, ["alice@node07", "node08"]);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let mut lines: Vec<&str> = calls.lines().collect();
    lines.sort();
    assert_eq!(lines, [format!("alice@node07 {bin} agent"), format!("node08 {bin} agent")], "{calls}");
    std::fs::remove_file(&log).ok();

    // A path the remote shell would split (a clone under `/tmp/a b`) is refused before ssh runs.
    let out = with_fake_ssh(&["pair", &a, &b, "--remote-fabcheck", "/tmp/a b/fabcheck", "--tests", "send_lat"], &log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--remote-fabcheck '/tmp/a b/fabcheck' is not a plain path"), "{err}");
    assert!(std::fs::read_to_string(&log).unwrap_or_default().is_empty(), "ssh ran");
    std::fs::remove_file(&log).ok();
}

#[test]
fn ssh_failure_is_exit_2_naming_the_host() {
    let log = std::env::temp_dir().join(format!("fabcheck-fake-ssh-u-{}.log", std::process::id()));
    let out = with_fake_ssh(&["pair", "unreachable-host", "localhost", "--tests", "send_lat"], &log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unreachable-host") && err.contains("ssh"), "{err}");
    assert!(err.contains("BatchMode"), "the remedy says how to check ssh: {err}");
    std::fs::remove_file(&log).ok();
}

#[test]
fn srun_launcher_starts_one_task_per_node() {
    let log = std::env::temp_dir().join(format!("fabcheck-fake-srun-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let remote = RemoteBin::new("srun");
    let bin = remote.path.as_str();
    let (a, b) = (format!("n01/{NO_SUCH_DEVICE}"), format!("n02/{NO_SUCH_DEVICE}"));
    let out = with_fake_srun(&["pair", &a, &b, "--launcher", "srun", "--remote-fabcheck", bin, "--tests", "send_lat"], &log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_failed_after_hello(&err, ["n01", "n02"]);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let mut nodes: Vec<&str> = calls.lines().filter_map(|l| l.split_whitespace().next()).collect();
    nodes.sort();
    assert_eq!(nodes, ["n01", "n02"], "{calls}");
    assert!(calls.lines().all(|l| l.ends_with(&format!("{bin} agent"))), "{calls}");
    std::fs::remove_file(&log).ok();
}

/// Issue #57: `--launcher kubectl`, tested as srun is: the stand-in `kubectl` (tests/fake-k8s)
/// checks both argument vectors (the pod lookup on the node, then `exec -i POD -- fabcheck
/// agent`) and runs the agent, which says hello over kubectl's stdio.
#[test]
fn kubectl_launcher_finds_the_daemonsets_pod_on_each_node() {
    let log = std::env::temp_dir().join(format!("fabcheck-fake-kubectl-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let remote = RemoteBin::new("kubectl");
    let bin = remote.path.as_str();
    let (a, b) = (format!("gpu-01/{NO_SUCH_DEVICE}"), format!("gpu-02/{NO_SUCH_DEVICE}"));
    let args = ["pair", &a, &b, "--launcher", "kubectl", "--k8s-selector", "app=fab", "--remote-fabcheck", bin, "--tests", "send_lat"];
    let out = with_fake("fake-k8s", "FAKE_KUBECTL_LOG", &args, &log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_failed_after_hello(&err, ["gpu-01", "gpu-02"]);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let mut lines: Vec<&str> = calls.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            format!("exec fabcheck-agent-gpu-01 {bin} agent"),
            format!("exec fabcheck-agent-gpu-02 {bin} agent"),
            "get gpu-01 app=fab".into(),
            "get gpu-02 app=fab".into()
        ],
        "{calls}"
    );
    // A node without the DaemonSet's pod, an API server that refuses, a name kubectl would
    // take for an option: exit 2 naming the node and what to do.
    for (node, said) in [
        ("empty-node", "no pod labelled app=fabcheck-agent runs on node empty-node"),
        ("api-down", "kubectl get pods failed"),
        ("Bad_Node", "is not a Kubernetes node name"),
        ("alice@gpu-01", "drop the user@"),
    ] {
        let out = with_fake("fake-k8s", "FAKE_KUBECTL_LOG", &["pair", node, "gpu-02", "--launcher", "kubectl", "--tests", "send_lat"], &log);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{node}: {err}");
        assert!(err.contains(said) && err.contains("what to do:"), "{node}: {err}");
    }
    std::fs::remove_file(&log).ok();
}

#[test]
fn srun_failure_is_exit_2_with_slurms_words() {
    let log = std::env::temp_dir().join(format!("fabcheck-fake-srun-d-{}.log", std::process::id()));
    let out = with_fake_srun(&["pair", "down-node", "n02", "--launcher", "srun", "--tests", "send_lat"], &log);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("down-node: srun or the agent exited"), "{err}");
    assert!(err.contains("not in this allocation"), "srun's own message is kept: {err}");
    let out = with_fake_srun(&["pair", "alice@n01", "n02", "--launcher", "srun"], &log);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("srun starts agents as you"));
    std::fs::remove_file(&log).ok();
}

/// Issue #45: a global flag a command ignores is refused (exit 2, on stderr, nothing on stdout),
/// not accepted silently: the commands that write no document in `--format`.
#[test]
fn global_flags_a_command_ignores_are_refused() {
    let dir = std::env::temp_dir().join(format!("fabcheck-ignored-{}", std::process::id()));
    let bundle = dir.join("b");
    let bundle = bundle.to_str().unwrap();
    let runs: [(&[&str], &str); 5] = [
        (&["serve", "--format", "json"], "serve does not take --format"),
        (&["agent", "--output", "x"], "agent does not take --output"),
        (&["bundle", bundle, "--format", "json"], "bundle does not take --format"),
        (&["completions", "bash", "--fail-on", "warning"], "completions does not take --fail-on"),
        (&["--format", "junit", "manpage"], "manpage does not take --format"),
    ];
    for (args, said) in runs {
        let out = fabcheck(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!dir.join("b").exists(), "nothing captured");
    // A command that writes a document takes them all.
    let out = fabcheck(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0));
}
