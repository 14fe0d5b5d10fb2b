//! How a path fabcheck was asked to write is written: replaced through a temporary file, opened
//! and written in place, or this process's own stdout or stderr (docs/reliability.md, "Files
//! fabcheck writes"). Issue #46 item 4 found four ways 0.3's judgement could be turned against
//! a root run, each answered here:
//! - a file another user planted kept its mode when root replaced it (0666, even 6777): the
//!   result now gets the replaced file's mode only when that file was the caller's own (less
//!   any set-id bit), else 0644;
//! - any path starting `/dev/fd/` was written through as a descriptor, so `/dev/fd/../..` walked
//!   out of the symlink rule: only `/dev/fd/N`, `/proc/self/fd/N` (and this process's
//!   `/proc/PID/fd/N`, `/proc/thread-self/fd/N`) name descriptors now, and anything else is
//!   judged like any path;
//! - `/proc/self/fd/N` of a regular file was reopened at offset 0 without truncation (a stale
//!   tail): the descriptor's file is now resolved to its path and judged like any path;
//! - `/dev/stdout` (and descriptor 1) opened for append was reopened at offset 0: it is now
//!   written through this process's own stdout, at its own offset.

use super::write_error::WriteError;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How a path is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    /// A temporary file beside `path`, renamed over it; the mode the result gets.
    Replace { path: PathBuf, mode: u32 },
    /// Opened and written in place: a character device or a FIFO (non-blocking, with deadlines).
    Direct(PathBuf),
    /// This process's own stdout (1) or stderr (2), at its own offset.
    Own(u32),
}

/// The mode a replaced file's result gets: the old file's (less any set-id or sticky bit) when
/// it was the caller's own, else 0644 (a file someone else planted chooses nothing).
pub(super) fn replacement_mode(owner: u32, mode: u32, euid: u32) -> u32 {
    if owner == euid {
        mode & 0o777
    } else {
        0o644
    }
}

/// The descriptor a path names, when it names one of this process's: `/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N`, `/proc/PID/fd/N`
/// with this PID; nothing after N. Anything else, `/dev/fd/../..` included, is a path.
pub(super) fn own_descriptor(path: &Path, pid: u32) -> Option<u32> {
    let text = path.to_str()?;
    match text {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let pid = pid.to_string();
    let number = ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))
        .or_else(|| text.strip_prefix("/proc/")?.strip_prefix(pid.as_str())?.strip_prefix("/fd/"))?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) || (number.len() > 1 && number.starts_with('0')) {
        return None;
    }
    number.parse().ok()
}

/// How `path` is to be written, from what is there now.
pub(super) fn judge(path: &Path) -> Result<Kind, WriteError> {
    match own_descriptor(path, std::process::id()) {
        Some(fd @ (1 | 2)) => Ok(Kind::Own(fd)),
        Some(fd) => descriptor(path, fd),
        None => {
            refuse_planted(path)?;
            judge_path(path)
        }
    }
}

/// Whether a directory's mode lets others put names in it: world-writable, or sticky (a shared
/// directory such as `/tmp`, whose names anyone may have made).
fn shared(mode: u32) -> bool {
    mode & 0o002 != 0 || mode & 0o1000 != 0
}

/// Refuses `path` when it, or a directory or link on the way to it, sits in a sticky or
/// world-writable directory and belongs to another user (neither this user nor root): a FIFO,
/// a link to a device or a link to a directory that `nobody` planted in `/tmp` chooses nothing
/// of what a root run writes (issue #58). Looked at as the path is named (links not followed),
/// then along its parent's real path. `bundle DIR` is judged the same (`sys::new_dir`).
pub fn refuse_planted(path: &Path) -> Result<(), WriteError> {
    let euid = nix::unistd::geteuid().as_raw();
    let absolute =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().map_err(|e| WriteError::new(path, "inspect", e))?.join(path) };
    planted_on(&absolute, euid)?;
    if let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) {
        if let Ok(real) = std::fs::canonicalize(parent) {
            planted_on(&real.join(name), euid)?;
        }
    }
    Ok(())
}

/// Each prefix of `path`, in turn: in a shared directory, it must be this user's or root's.
fn planted_on(path: &Path, euid: u32) -> Result<(), WriteError> {
    let mut prefix = PathBuf::new();
    for component in path.components() {
        let parent = prefix.clone();
        prefix.push(component);
        if parent.as_os_str().is_empty() {
            continue;
        }
        let Ok(dir) = std::fs::metadata(&parent) else { return Ok(()) };
        let here = match std::fs::symlink_metadata(&prefix) {
            Ok(m) => m,
            // Nothing there (yet): nothing planted on the way.
            Err(_) => return Ok(()),
        };
        if shared(dir.mode()) && here.uid() != euid && here.uid() != 0 {
            let what = what(&here);
            return Err(WriteError::new(
                path,
                "write",
                io::Error::other(format!(
                    "{} is {what} that belongs to user {}, in {}, which others may write (mode {:o}); fabcheck writes nothing \
                     another user placed in a shared directory: give a path in a directory of your own",
                    prefix.display(),
                    here.uid(),
                    parent.display(),
                    dir.mode() & 0o7777
                )),
            ));
        }
    }
    Ok(())
}

/// Descriptor `fd` (not stdout or stderr): a device or FIFO is written through it; a regular
/// file is resolved to its path and that path judged.
fn descriptor(path: &Path, fd: u32) -> Result<Kind, WriteError> {
    let open = std::fs::metadata(path).map_err(|e| WriteError::new(path, "inspect", e))?;
    let ft = open.file_type();
    if ft.is_char_device() || ft.is_fifo() {
        return Ok(Kind::Direct(path.to_path_buf()));
    }
    if !ft.is_file() {
        return Err(WriteError::new(path, "write", io::Error::other(format!("descriptor {fd} is {}", what(&open)))));
    }
    let gone = |to: &Path| {
        WriteError::new(
            path,
            "write",
            io::Error::other(format!("descriptor {fd} is an open file whose path ({}) no longer names it; give the file's own path", to.display())),
        )
    };
    let to = std::fs::read_link(path).map_err(|e| WriteError::new(path, "resolve", e))?;
    let there = std::fs::symlink_metadata(&to).map_err(|_| gone(&to))?;
    if !to.is_absolute() || !there.file_type().is_file() || (there.dev(), there.ino()) != (open.dev(), open.ino()) {
        return Err(gone(&to));
    }
    judge_path(&to)
}

/// A path that names no descriptor: its kind from what is there (not following a final
/// symlink, then following it to say what it points at).
fn judge_path(path: &Path) -> Result<Kind, WriteError> {
    let here = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Kind::Replace { path: path.to_path_buf(), mode: 0o666 & !umask() }),
        Err(e) => return Err(WriteError::new(path, "inspect", e)),
    };
    let ft = here.file_type();
    if ft.is_file() {
        let mode = replacement_mode(here.uid(), here.permissions().mode(), nix::unistd::geteuid().as_raw());
        return Ok(Kind::Replace { path: path.to_path_buf(), mode });
    }
    if ft.is_char_device() || ft.is_fifo() {
        return Ok(Kind::Direct(path.to_path_buf()));
    }
    if ft.is_symlink() {
        // A link to a device or a FIFO is written through, as `>` would; to anything else it is
        // refused (see the module's doc of `atomic`).
        let pointed = std::fs::metadata(path).ok().map(|m| m.file_type());
        if pointed.is_some_and(|t| t.is_char_device() || t.is_fifo()) {
            return Ok(Kind::Direct(path.to_path_buf()));
        }
        let to = std::fs::read_link(path).map(|p| p.display().to_string()).unwrap_or_else(|_| "?".into());
        return Err(WriteError::new(
            path,
            "replace",
            io::Error::other(format!("it is a symbolic link (to {to}); give the file's own path, fabcheck does not write through links")),
        ));
    }
    Err(WriteError::new(path, "write", io::Error::other(format!("it is {}", what(&here)))))
}

fn what(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "a directory"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_file() {
        "a file"
    } else {
        "not a regular file"
    }
}

/// The process's umask (from /proc/self/status; 022 where that is not readable), for the mode a
/// new file gets. Read, not set: setting it to read it would race with other threads.
pub(super) fn umask() -> u32 {
    crate::sys::fs::read_text(Path::new("/proc/self/status"), crate::sys::fs::SYSFS_CAP)
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Umask:").and_then(|v| u32::from_str_radix(v.trim(), 8).ok())))
        .unwrap_or(0o022)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabcheck-target-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn only_exact_descriptor_paths_name_descriptors() {
        let p = |s: &str| own_descriptor(Path::new(s), 4242);
        assert_eq!(p("/dev/stdout"), Some(1));
        assert_eq!(p("/dev/stderr"), Some(2));
        assert_eq!(p("/dev/fd/7"), Some(7));
        assert_eq!(p("/proc/self/fd/12"), Some(12));
        assert_eq!(p("/proc/thread-self/fd/3"), Some(3));
        assert_eq!(p("/proc/4242/fd/3"), Some(3));
        // Issue #46 item 4: anything else is a path, judged as one.
        for path in [
            "/dev/fd/../..",
            "/dev/fd/../root/etc/passwd",
            "/dev/fd/3/",
            "/dev/fd/3/x",
            "/dev/fd/",
            "/dev/fd/+3",
            "/dev/fd/03",
            "/proc/1/fd/3",
            "/proc/self/fd/../cwd/x",
        ] {
            assert_eq!(p(path), None, "{path}");
        }
    }

    #[test]
    fn a_planted_files_mode_is_never_kept() {
        // Issue #46 item 4: root replacing nobody's 6777 file kept 6777.
        assert_eq!(replacement_mode(65534, 0o106777, 0), 0o644);
        assert_eq!(replacement_mode(0, 0o100600, 0), 0o600, "the caller's own file keeps its mode");
        assert_eq!(replacement_mode(0, 0o104755, 0), 0o755, "less its set-id bits");
        assert_eq!(replacement_mode(1000, 0o100640, 1000), 0o640);
    }

    #[test]
    fn a_descriptor_of_a_regular_file_is_resolved_to_its_path() {
        let dir = scratch("fd");
        let file = dir.join("out.json");
        std::fs::write(&file, "old").unwrap();
        let open = std::fs::OpenOptions::new().read(true).write(true).open(&file).unwrap();
        let via = PathBuf::from(format!("/proc/self/fd/{}", open.as_raw_fd()));
        match judge(&via).unwrap() {
            Kind::Replace { path, .. } => assert_eq!(path, std::fs::canonicalize(&file).unwrap()),
            other => panic!("{other:?}"),
        }
        // Its path gone: refused, naming the descriptor.
        std::fs::remove_file(&file).unwrap();
        let err = judge(&via).unwrap_err().to_string();
        assert!(err.contains(&format!("descriptor {} is an open file whose path", open.as_raw_fd())), "{err}");
        assert!(matches!(judge(Path::new("/dev/stdout")).unwrap(), Kind::Own(1)));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn dot_dot_after_dev_fd_is_judged_like_any_path() {
        let dir = scratch("dotdot");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("link")).unwrap();
        let sneaky = PathBuf::from(format!("/dev/fd/../root{}", dir.join("link").display()));
        let err = judge(&sneaky).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
