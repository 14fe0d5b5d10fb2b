//! The standard streams as the process found them. A closed stdout (`fabcheck ... >&-`) is
//! invisible to the program: Rust's runtime opens `/dev/null` (read-write) on a closed 0, 1 or 2
//! before `main`, so the result would vanish with exit 0. `main` asks once, first thing, and
//! the output path refuses to "deliver" to a stdout that was not there.
//!
//! How it is told apart: descriptor 1 is `/dev/null` opened read-write, which is what the
//! runtime does and what a shell's `> /dev/null` (write-only) does not. `<> /dev/null` on
//! stdout looks the same and is taken as closed too.

use std::os::fd::{AsFd, AsRawFd};
use std::sync::OnceLock;

static STDOUT_CLOSED: OnceLock<bool> = OnceLock::new();

/// Records whether stdout was closed at start; the first call decides.
pub fn note_stdout() {
    let _ = STDOUT_CLOSED.set(closed_at_start(std::io::stdout().as_raw_fd()));
}

/// Whether stdout was closed when the process started (false when never asked).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.get().copied().unwrap_or(false)
}

/// This process's own stdout (1) or stderr (2) as a file to write to: a duplicate of the
/// descriptor, sharing its offset and flags, so `--output /dev/stdout >> log` appends after what
/// the log holds (0.3 reopened `/dev/stdout`, at offset 0, and wrote over the log's start).
pub fn own_stream(fd: u32) -> std::io::Result<std::fs::File> {
    let owned = match fd {
        1 if stdout_closed() => return Err(std::io::Error::from_raw_os_error(libc::EBADF)),
        1 => std::io::stdout().as_fd().try_clone_to_owned()?,
        2 => std::io::stderr().as_fd().try_clone_to_owned()?,
        _ => return Err(std::io::Error::other(format!("descriptor {fd} is not stdout or stderr"))),
    };
    Ok(std::fs::File::from(owned))
}

fn closed_at_start(fd: i32) -> bool {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let Ok(flags) = fcntl(fd, FcntlArg::F_GETFL) else { return true };
    let read_write = OFlag::from_bits_truncate(flags) & OFlag::O_ACCMODE == OFlag::O_RDWR;
    let is_null = match (nix::sys::stat::fstat(fd), nix::sys::stat::stat("/dev/null")) {
        (Ok(here), Ok(null)) => here.st_mode & libc::S_IFMT == libc::S_IFCHR && here.st_rdev == null.st_rdev,
        _ => false,
    };
    read_write && is_null
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn dev_null_read_write_is_a_closed_stream_and_write_only_is_not() {
        let rw = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").unwrap();
        assert!(closed_at_start(rw.as_raw_fd()));
        let wo = std::fs::OpenOptions::new().write(true).open("/dev/null").unwrap();
        assert!(!closed_at_start(wo.as_raw_fd()), "`> /dev/null` is a choice, not a loss");
        let file = std::fs::File::open("/proc/self/status").unwrap();
        assert!(!closed_at_start(file.as_raw_fd()));
    }
}
