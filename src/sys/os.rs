//! Process limits that decide whether memory can be registered, and termination signals.

use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// The number of the last termination signal caught (0: none).
fn last_signal() -> &'static Arc<AtomicUsize> {
    static LAST: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    LAST.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// The signals that stop a run cleanly: Ctrl-C, `kill`, and SIGHUP, which a closed login session
/// (an ssh connection that dropped, a closed terminal) sends: by default it would kill the
/// controller at once (exit 129) and lose the results of a mesh that ran for hours.
pub const TERMINATION_SIGNALS: [i32; 3] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP];

/// Makes SIGINT, SIGTERM and SIGHUP set a flag instead of killing the controller, so it can tell
/// its agents to stop, report what it has, and exit 2, leaving nothing running.
pub fn catch_termination() {
    for signal in TERMINATION_SIGNALS {
        let caught = signal_hook::flag::register_usize(signal, Arc::clone(last_signal()), signal as usize)
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(interrupted_flag())));
        if let Err(e) = caught {
            tracing::warn!(signal, error = %e, "cannot catch the signal; it will end fabcheck at once");
        }
    }
}

/// Whether SIGINT, SIGTERM or SIGHUP arrived since `catch_termination`.
pub fn interrupted() -> bool {
    interrupted_flag().load(Ordering::SeqCst)
}

/// The name of the termination signal that arrived (`SIGHUP`, `SIGINT`, `SIGTERM`), if one did.
pub fn termination_signal() -> Option<&'static str> {
    match last_signal().load(Ordering::SeqCst) as i32 {
        signal_hook::consts::SIGINT => Some("SIGINT"),
        signal_hook::consts::SIGTERM => Some("SIGTERM"),
        signal_hook::consts::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

/// This node's name (`/proc/sys/kernel/hostname`), or `localhost`.
pub fn hostname() -> String {
    super::fs::read_text(std::path::Path::new("/proc/sys/kernel/hostname"), 256).map(|s| s.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}

#[cfg(test)]
mod tests {
    /// Set in the copy of the test binary that [`sighup_is_caught_not_fatal`] starts.
    const CHILD: &str = "FABCHECK_TEST_SIGHUP_CHILD";

    #[test]
    fn sighup_is_caught_not_fatal() {
        if std::env::var_os(CHILD).is_some() {
            // The child: the flag is process-wide, so this runs in its own process.
            super::catch_termination();
            assert!(!super::interrupted());
            signal_hook::low_level::raise(signal_hook::consts::SIGHUP).unwrap();
            assert!(super::interrupted(), "SIGHUP must set the flag");
            assert_eq!(super::termination_signal(), Some("SIGHUP"));
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "sys::os::tests::sighup_is_caught_not_fatal", "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        // 0.2: the child died of the signal (no exit code), as a mesh did with exit 129.
        assert_eq!(out.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "the child ran the test");
    }
}
