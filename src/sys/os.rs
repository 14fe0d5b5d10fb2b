//! Process limits that decide whether memory can be registered, and termination signals.

use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// RLIMIT_MEMLOCK (soft, hard) in bytes; `None` means unlimited (or unknown).
pub fn memlock() -> (Option<u64>, Option<u64>) {
    match getrlimit(Resource::RLIMIT_MEMLOCK) {
        Ok((soft, hard)) => {
            let conv = |v: u64| if v == RLIM_INFINITY { None } else { Some(v) };
            (conv(soft), conv(hard))
        }
        Err(_) => (None, None),
    }
}

/// Whether the effective user is root (root may register past RLIMIT_MEMLOCK via CAP_IPC_LOCK).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn interrupted_flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Makes SIGINT and SIGTERM set a flag instead of killing the controller, so it can tell its
/// agents to stop and leave nothing running.
pub fn catch_termination() {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(interrupted_flag())) {
            tracing::warn!(signal, error = %e, "cannot catch the signal; it will end fabcheck at once");
        }
    }
}

/// Whether SIGINT or SIGTERM arrived since `catch_termination`.
pub fn interrupted() -> bool {
    interrupted_flag().load(Ordering::SeqCst)
}

/// This node's name (`/proc/sys/kernel/hostname`), or `localhost`.
pub fn hostname() -> String {
    super::fs::read_text(std::path::Path::new("/proc/sys/kernel/hostname"), 256).map(|s| s.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}
