//! contrib/nhc/fabcheck.nhc under the real LBNL NHC 1.4.3 (vendored in tests/nhc/, with its
//! license), its Slurm helper marking the node offline through a fake `scontrol` that records
//! each argument (issue #28 item 10): a pass drains nothing, a failure drains with fabcheck's
//! line, a reason holding an apostrophe, quotes, `$`, backticks or backslashes drains whole and
//! runs nothing (NHC `eval`s it), a run that cannot run drains with its cause, and the snippet
//! finds a binary installed in /usr/local/bin although NHC's PATH lacks it.

use super::fixtures_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch NHC installation: `conf/nhc.conf` with one line, `conf/scripts/` with NHC's own
/// common.nhc and fabcheck's snippet, and copies of NHC's helpers and of the fake Slurm tools.
/// NHC runs those by unquoted variables (`eval $OFFLINE_NODE ...`, `exec $SLURM_SCONTROL ...`),
/// as it may where they are installed (/usr/libexec/nhc): from the checkout, whose path may hold
/// a space (`/tmp/a b/fabcheck`), it would split them.
struct Nhc {
    dir: PathBuf,
}

impl Nhc {
    fn new(tag: &str, conf_line: &str) -> Nhc {
        let dir = std::env::temp_dir().join(format!("fabcheck-nhc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("conf/scripts")).unwrap();
        std::fs::copy(repo().join("tests/nhc/scripts/common.nhc"), dir.join("conf/scripts/common.nhc")).unwrap();
        std::fs::copy(repo().join("contrib/nhc/fabcheck.nhc"), dir.join("conf/scripts/fabcheck.nhc")).unwrap();
        std::fs::write(dir.join("conf/nhc.conf"), format!("* || {conf_line}\n")).unwrap();
        for sub in ["helpers", "fake"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
            for entry in std::fs::read_dir(repo().join("tests/nhc").join(sub)).unwrap() {
                let entry = entry.unwrap();
                // std::fs::copy keeps the mode: they stay executable.
                std::fs::copy(entry.path(), dir.join(sub).join(entry.file_name())).unwrap();
            }
        }
        let nhc = Nhc { dir };
        assert!(
            !nhc.dir.display().to_string().contains(char::is_whitespace),
            "NHC cannot run from {} (its helpers are run by unquoted variables): set TMPDIR to a path without spaces",
            nhc.dir.display()
        );
        nhc
    }

    /// NHC's command line and environment (the fake Slurm tools by their NHC variables).
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("FAKE_SCONTROL_LOG", self.dir.join("scontrol.log"))
            .env("SLURM_SCONTROL", self.dir.join("fake/scontrol"))
            .env("SLURM_SINFO", self.dir.join("fake/sinfo"))
            .env_remove("FABCHECK")
            .env_remove("FABCHECK_TOKEN");
        c
    }

    fn args(&self) -> Vec<String> {
        let conf = self.dir.join("conf");
        vec![
            repo().join("tests/nhc/nhc").display().to_string(),
            "-D".into(),
            conf.display().to_string(),
            "-c".into(),
            conf.join("nhc.conf").display().to_string(),
            "-l".into(),
            "-".into(),
            "-t".into(),
            "120".into(),
            "NHC_RM=slurm".into(),
            // NHC `eval`s each VAR=VALUE argument.
            format!("HELPERDIR={}", quoted(&self.dir.join("helpers").display().to_string())),
        ]
    }

    /// Runs NHC with `FABCHECK` naming the binary.
    fn run(&self, fabcheck: &Path) -> Output {
        self.command("bash").args(self.args()).env("FABCHECK", fabcheck).output().expect("run the vendored nhc")
    }

    /// The `scontrol` calls NHC made, each as its argument vector.
    fn scontrol_calls(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.dir.join("scontrol.log")).unwrap_or_default();
        log.split("\n\n").filter(|c| !c.trim().is_empty()).map(|c| c.lines().map(str::to_string).collect()).collect()
    }

    /// The one drain NHC asked for: its `Reason=` without NHC's `NHC: ` leader.
    fn drained_with(&self, out: &Output) -> String {
        let calls = self.scontrol_calls();
        assert_eq!(calls.len(), 1, "one scontrol call expected: {calls:?}\n{}", said(out));
        let call = &calls[0];
        assert_eq!(call[..2], ["update", "State=DRAIN"], "{call:?}");
        assert!(call[2].starts_with("NodeName="), "{call:?}");
        let reason = call.iter().find_map(|a| a.strip_prefix("Reason=")).unwrap_or_else(|| panic!("no Reason: {call:?}"));
        reason.strip_prefix("NHC: ").unwrap_or_else(|| panic!("NHC's leader missing: {reason}")).to_string()
    }
}

impl Drop for Nhc {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn said(out: &Output) -> String {
    format!("exit {:?}\n{}{}", out.status.code(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn fabcheck_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fabcheck"))
}

fn tree(name: &str) -> String {
    fixtures_dir().join(name).display().to_string()
}

/// A path as one word of an `nhc.conf` line, which NHC evaluates as shell: the checkout may lie
/// under a directory whose name has a space.
fn quoted(path: &str) -> String {
    super::sh_quote(path)
}

/// The drain reason the contrib scripts make of a oneline `fabcheck check FAIL: SUBJECT: ID: MESSAGE`:
/// `fabcheck: SUBJECT ID: MESSAGE`, the subject first (issue #57); any other line as it is.
pub(crate) fn drain_reason(line: &str) -> String {
    let line = line.trim_end();
    match line.strip_prefix("fabcheck check FAIL: ").and_then(|rest| rest.split_once(": ")) {
        Some((subject, rest)) if rest.contains(": ") => format!("fabcheck: {subject} {rest}"),
        _ => line.to_string(),
    }
}

fn oneline(tree: &str) -> String {
    let out = super::fabcheck(&["check", "--sysfs-root", tree, "--format", "oneline"]);
    String::from_utf8(out.stdout).unwrap().trim_end().to_string()
}

#[test]
fn a_healthy_node_is_left_alone_and_a_failing_one_drained_with_fabchecks_line() {
    let nhc = Nhc::new("pass", &format!("check_fabcheck --sysfs-root {}", quoted(&tree("hdr-ib-healthy"))));
    let out = nhc.run(&fabcheck_bin());
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(nhc.scontrol_calls().is_empty(), "a healthy node was drained: {:?}", nhc.scontrol_calls());

    for fixture in ["ib-init-no-sm", "ofed-inbox-loaded"] {
        let failing = tree(fixture);
        let nhc = Nhc::new(fixture, &format!("check_fabcheck --sysfs-root {}", quoted(&failing)));
        let out = nhc.run(&fabcheck_bin());
        assert_eq!(out.status.code(), Some(1), "{fixture}: {}", said(&out));
        assert_eq!(nhc.drained_with(&out), drain_reason(&oneline(&failing)), "{fixture}: the drain reason is fabcheck's line, subject first");
    }
    // ofed-inbox-loaded's first error says "the kernel's inbox mlx5_core": 0.2's apostrophe
    // was a syntax error in NHC's eval, and the node was never drained; 0.4 wrote `kernel_s`,
    // 0.5 leaves the possessive out (issue #57).
    assert!(oneline(&tree("ofed-inbox-loaded")).contains("the kernel inbox"));
}

#[test]
fn a_reason_with_quotes_dollars_and_backticks_drains_whole_and_runs_nothing() {
    let dir = std::env::temp_dir().join(format!("fabcheck-nhc-stub-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pwned = dir.join("pwned");
    // A fabcheck that does not replace anything (an older build, a wrapper): the snippet must.
    let stub = dir.join("fabcheck");
    let line = format!(
        "fabcheck check FAIL: 0000:02:00.0: gpu.pcie: GPU 0000:02:00.0's link \"x\" $(touch {p}) `touch {p}` \\ ${{HOME}} end",
        p = pwned.display()
    );
    std::fs::write(&stub, format!("#!/bin/bash\ncat <<'LINE'\n{line}\nLINE\nexit 1\n")).unwrap();
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let nhc = Nhc::new("hostile", "check_fabcheck");
    let out = nhc.run(&stub);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let reason = nhc.drained_with(&out);
    let want: String = drain_reason(&line).chars().map(|c| if "'\"`$\\".contains(c) { '_' } else { c }).collect();
    assert_eq!(reason, want, "the reason arrives whole, its shell characters replaced");
    assert!(!pwned.exists(), "NHC's eval ran a command from the reason");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_cannot_run_drains_with_its_cause_from_stdout() {
    let empty = std::env::temp_dir().join(format!("fabcheck-nhc-empty-tree-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let nhc = Nhc::new("exit2", &format!("check_fabcheck --sysfs-root {}", quoted(&empty.display().to_string())));
    let out = nhc.run(&fabcheck_bin());
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let reason = nhc.drained_with(&out);
    assert!(reason.starts_with("fabcheck check could not run (exit 2): sysfs tree "), "{reason}");
    assert!(reason.contains("holds no class/infiniband devices"), "{reason}");
    let _ = std::fs::remove_dir_all(&empty);
}

/// NHC's PATH is /sbin:/usr/sbin:/bin:/usr/bin; the tarball installs /usr/local/bin/fabcheck.
/// In a private mount namespace (`unshare`), a directory holding only fabcheck is mounted over
/// /usr/local/bin, so the host's own is never touched.
#[test]
fn the_snippet_finds_fabcheck_in_usr_local_bin_under_nhcs_path() {
    let bin = std::env::temp_dir().join(format!("fabcheck-nhc-local-bin-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&bin);
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(fabcheck_bin(), bin.join("fabcheck")).unwrap();
    assert!(
        !Path::new("/usr/bin/fabcheck").exists() && !Path::new("/bin/fabcheck").exists(),
        "fabcheck is installed on NHC's PATH here: the test cannot tell"
    );
    for (fixture, want_exit) in [("hdr-ib-healthy", 0), ("ib-init-no-sm", 1)] {
        let nhc = Nhc::new(&format!("local-{fixture}"), &format!("check_fabcheck --sysfs-root {}", quoted(&tree(fixture))));
        // Root maps to itself; elsewhere a user namespace gives the mount.
        let script = format!("mount --bind {} /usr/local/bin && exec bash \"$@\"", quoted(&bin.display().to_string()));
        let out = nhc
            .command("unshare")
            .args(["--map-root-user", "--mount", "--propagation", "private", "sh", "-c", &script, "sh"])
            .args(nhc.args())
            .output()
            .expect("run unshare");
        let text = said(&out);
        assert!(
            !text.contains("unshare: ") && !text.contains("mount: "),
            "this host cannot make a private mount namespace (unshare -rm), which the test needs:\n{text}"
        );
        assert_eq!(out.status.code(), Some(want_exit), "{fixture}: {text}");
        if want_exit == 0 {
            assert!(nhc.scontrol_calls().is_empty(), "{text}");
        } else {
            assert_eq!(nhc.drained_with(&out), drain_reason(&oneline(&tree(fixture))), "found /usr/local/bin/fabcheck and ran it");
        }
    }
    let _ = std::fs::remove_dir_all(&bin);
}
