//! Process limits that decide whether memory can be registered.

/// RLIMIT_MEMLOCK (soft, hard) in bytes; `None` means unlimited.
pub fn memlock() -> (Option<u64>, Option<u64>) {
    // SAFETY: plain old data out-parameter.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: valid resource id and out-pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
    if rc != 0 {
        return (None, None);
    }
    let conv = |v: libc::rlim_t| if v == libc::RLIM_INFINITY { None } else { Some(v) };
    (conv(lim.rlim_cur), conv(lim.rlim_max))
}

/// Whether the effective user is root (root may register past RLIMIT_MEMLOCK via CAP_IPC_LOCK).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of killing the controller, so it can tell its
/// agents to stop and leave nothing running.
pub fn catch_termination() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler that only stores to an atomic is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether SIGINT or SIGTERM arrived since `catch_termination`.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
