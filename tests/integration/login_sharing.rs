//! The ssh login shared by a host's sessions (`control::ssh_share`) against another user of the
//! controller's node (issue #46 item 1): the folder of its control socket must be one that user
//! cannot swap. fabcheck runs as root here; the attacker is `nobody` (`setpriv`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn scratch(name: &str, mode: u32) -> PathBuf {
    // Short: 0.3 shared no login when the socket path came to more than 90 bytes.
    let dir = std::env::temp_dir().join(format!("fcl{}{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
    dir
}

/// A stand-in for ssh that lets the attacker move first: as `nobody` it renames the control
/// socket's folder away and makes its own in its place (what winning the race did in 0.3),
/// then records who owns the folder ssh would now use, and fails as ssh does.
fn attacking_ssh(dir: &Path, log: &Path) {
    let script = dir.join("ssh");
    let text = format!(
        r#"#!/bin/sh
for arg in "$@"; do
	case $arg in
	ControlPath=*/%C)
		folder=${{arg#ControlPath=}}
		folder=${{folder%/%C}}
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'mv "$1" "$1.taken" && mkdir -m 777 "$1"' sh "$folder" 2>/dev/null && echo "swapped $folder" >>'{log}'
		echo "folder $folder $(stat -c '%u %a %F' "$folder")" >>'{log}'
		;;
	esac
done
echo 'ssh: connect to host: Connection refused' >&2
exit 255
"#,
        log = log.display()
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn another_user_cannot_swap_the_control_socket_folder() {
    // Regression (issue #46 item 1): with TMPDIR world-writable and not sticky, `nobody` won
    // the race for the folder 20 times of 20, and root's sessions used a master socket it
    // controlled. Now the folder is made under XDG_RUNTIME_DIR (or ~/.ssh), never TMPDIR.
    let shared = scratch("tmp", 0o777);
    let runtime = scratch("run", 0o700);
    let bin = scratch("bin", 0o755);
    let log = bin.join("ssh.log");
    attacking_ssh(&bin, &log);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", "alice@n1", "n2", "--tests", "send_lat"])
        .env("PATH", &path)
        .env("TMPDIR", &shared)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let calls = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("ssh was not started with a control socket ({e}): {err}"));
    assert!(!calls.contains("swapped"), "the other user replaced the folder:\n{calls}");
    let folders: Vec<&str> = calls.lines().filter_map(|l| l.strip_prefix("folder ")).collect();
    assert!(!folders.is_empty(), "{calls}");
    for line in folders {
        let (folder, owner) = line.split_once(' ').unwrap();
        assert!(!Path::new(folder).starts_with(&shared), "the folder is in the shared TMPDIR: {folder}");
        assert!(Path::new(folder).starts_with(std::fs::canonicalize(&runtime).unwrap()), "{folder}");
        assert_eq!(owner, "0 700 directory", "{folder}");
    }
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0, "nothing of the run's is left in TMPDIR");
    for dir in [&shared, &runtime, &bin] {
        std::fs::remove_dir_all(dir).ok();
    }
}
