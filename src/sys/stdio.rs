//! The standard streams as the process found them. A closed stdout (`fabcheck ... >&-`) is
//! invisible to the program: Rust's runtime opens `/dev/null` (read-write) on a closed 0, 1 or 2
//! before `main`, so the result would vanish with exit 0. `main` asks once, first thing, and
//! the output path refuses to "deliver" to a stdout that was not there.
//!
//! How it is told apart: descriptor 1 is `/dev/null` opened read-write, which is what the
//! runtime does and what a shell's `> /dev/null` (write-only) does not. `<> /dev/null` on
//! stdout looks the same and is taken as closed too.

use std::os::fd::AsRawFd;
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
