//! `--output` paths that 0.3 got wrong for a root run (issue #46 item 4): a FIFO nobody reads,
//! a file another user planted in a sticky directory, `/dev/fd/..` walking out of the
//! descriptor rule, `/proc/self/fd/N` on a longer file, `/dev/stdout` opened for append.
//! Everything in temporary directories; the attacker's file is `nobody`'s (fabcheck is root).

use super::fixtures_dir;
use super::hardening::fabcheck_bounded;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-outpath-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn check_to(output: &str) -> Vec<String> {
    let root = fixtures_dir().join("hdr-ib-healthy");
    ["check", "--sysfs-root", root.to_str().unwrap(), "--json", "--output", output].iter().map(|s| s.to_string()).collect()
}

fn run_check_to(output: &str) -> std::process::Output {
    let args = check_to(output);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fabcheck_bounded(&args, Duration::from_secs(60))
}

fn is_check_document(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v["schema"] == "fabcheck.check.v1")
}

#[test]
fn a_fifo_nobody_reads_is_refused_not_waited_on_forever() {
    // Regression (issue #46 item 4): the open of a FIFO with no reader blocked for ever.
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let out = run_check_to(fifo.to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no process has it open for reading"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_file_planted_by_another_user_is_replaced_by_roots_own_0644() {
    // Regression (issue #46 item 4): `nobody` planted the target in a sticky directory with mode
    // 6777; root's run replaced it and the result kept 6777 (setuid, world-writable). Since 0.5
    // (issue #58) a file another user owns in a sticky directory is refused outright; in a
    // directory of root's own it gives way to root's 0644.
    let dir = scratch("planted");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let target = dir.join("result.json");
    std::fs::write(&target, b"theirs\n").unwrap();
    std::os::unix::fs::chown(&target, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o6777)).unwrap();
    let out = run_check_to(target.to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("belongs to user 65534") && err.contains("which others may write"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"theirs\n", "untouched");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run_check_to(target.to_str().unwrap());
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let meta = std::fs::symlink_metadata(&target).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (0, 0o644), "the result is root's, 0644");
    assert!(is_check_document(&std::fs::read(&target).unwrap()));
    // The caller's own file keeps its mode (less any set-id bits).
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o4640)).unwrap();
    run_check_to(target.to_str().unwrap());
    assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o640);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dev_fd_dot_dot_is_judged_like_any_path() {
    // Regression (issue #46 item 4): any path starting `/dev/fd/` was written through as a
    // descriptor, so `/dev/fd/../root/DIR/link` followed a symlink to a file and wrote into it.
    let dir = scratch("fd-dotdot");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious\n").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let sneaky = format!("/dev/fd/../root{}", link.display());
    let out = run_check_to(&sneaky);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn proc_self_fd_of_a_longer_file_leaves_no_stale_tail() {
    // Regression (issue #46 item 4): `/proc/self/fd/3` was reopened at offset 0 without
    // truncating, so a longer file kept the end of its old content after the document.
    let dir = scratch("proc-fd");
    let file = dir.join("out.json");
    std::fs::write(&file, "stale ".repeat(20_000)).unwrap();
    let mut args = vec!["-c".to_string(), "exec 3<>\"$1\"; shift; exec \"$@\"".into(), "sh".into(), file.display().to_string()];
    args.push(env!("CARGO_BIN_EXE_fabcheck").into());
    args.extend(check_to("/proc/self/fd/3"));
    let out = Command::new("sh").args(&args).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&file).unwrap();
    assert!(
        is_check_document(&bytes),
        "not just the document ({} bytes): ...{}",
        bytes.len(),
        String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(80)..])
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dev_stdout_opened_for_append_is_appended_to() {
    // Regression (issue #46 item 4): `--output /dev/stdout >> log` reopened the log at offset 0
    // and wrote over its beginning.
    let dir = scratch("append");
    let log = dir.join("run.log");
    let earlier = "an earlier line of the log\n".repeat(200);
    std::fs::write(&log, &earlier).unwrap();
    let mut args = vec!["-c".to_string(), "log=$1; shift; exec \"$@\" >>\"$log\"".into(), "sh".into(), log.display().to_string()];
    args.push(env!("CARGO_BIN_EXE_fabcheck").into());
    args.extend(check_to("/dev/stdout"));
    let out = Command::new("sh").args(&args).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with(&earlier), "the log's beginning was written over");
    assert!(is_check_document(&text.as_bytes()[earlier.len()..]), "the document follows: {}", &text[earlier.len()..]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_character_device_is_still_written_through() {
    let out = run_check_to("/dev/null");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(Path::new("/dev/null").metadata().unwrap().file_type().is_char_device(), "/dev/null is left a device");
}
