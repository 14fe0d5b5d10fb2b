//! A bounded child for the physical-layer reports (`ethtool -S`, `-m`, `--show-fec`) and
//! mlxlink: `sys::child`'s time limit, output cap and drained pipes, with why a report is
//! missing told apart (not installed, timed out, refused, failed).
//!
//! Draining matters: mlx5's `ethtool -S` on a port with many channels prints more than a pipe
//! holds (64 KiB), and a child blocked on a full pipe never exits; waiting for it first would
//! turn every such report into a timeout. stderr is kept (4 KiB) because it says why a read was
//! refused (`ethtool -m` needs CAP_NET_ADMIN: "Operation not permitted").

use std::time::Duration;

/// Why a tool gave no report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The program is not installed (not on PATH).
    NotInstalled,
    /// It ran past its time limit and was killed.
    TimedOut,
    /// It was refused for lack of privilege (EPERM / EACCES): `ethtool -m` as a non-root user.
    NotPermitted,
    /// It ran and failed; its first line of stderr.
    Failed(String),
}

impl ToolError {
    pub fn words(&self, program: &str) -> String {
        match self {
            ToolError::NotInstalled => format!("{program} is not installed"),
            ToolError::TimedOut => format!("{program} did not answer in time"),
            ToolError::NotPermitted => format!("{program} was refused: it needs root (CAP_NET_ADMIN)"),
            ToolError::Failed(why) => format!("{program} failed: {why}"),
        }
    }
}

/// Runs a fixed program (no shell) through [`crate::sys::child::run_bounded`] and returns at
/// most `cap` bytes of its stdout, or why not.
pub fn run(program: &str, args: &[&str], limit: Duration, cap: u64) -> Result<String, ToolError> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let finished = crate::sys::child::run_bounded(program, args, limit, cap).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ToolError::NotInstalled
        } else {
            ToolError::Failed(e.to_string())
        }
    })?;
    let Some(status) = finished.status else { return Err(ToolError::TimedOut) };
    let err_text = String::from_utf8_lossy(&finished.stderr);
    if !status.success() {
        let lower = err_text.to_ascii_lowercase();
        if lower.contains("operation not permitted") || lower.contains("permission denied") {
            return Err(ToolError::NotPermitted);
        }
        let first = err_text.lines().next().unwrap_or("").trim();
        return Err(ToolError::Failed(if first.is_empty() { format!("exit status {status}") } else { first.chars().take(200).collect() }));
    }
    let mut kept = finished.stdout;
    // A cut in the middle of a UTF-8 sequence would make the whole report unreadable.
    while !kept.is_empty() && std::str::from_utf8(&kept).is_err() {
        kept.pop();
    }
    String::from_utf8(kept).map_err(|_| ToolError::Failed("output is not text".into()))
}

/// A PCI address as sysfs writes it (`0000:17:00.0`, lowercase hex: the kernel's
/// `%04x:%02x:%02x.%d`): the only text that reaches a tool's command line or a file name.
pub fn valid_bdf(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 12
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b':',
            10 => *c == b'.',
            11 => (b'0'..=b'7').contains(c),
            _ => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
        })
}

/// Where `program` is: an executable file in a directory of `PATH`, or in the sbin folders
/// MFT and mstflint install into, which a user's PATH may lack.
pub fn find_program(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/usr/local/bin", "/sbin"].map(Into::into))
        .map(|dir: std::path::PathBuf| dir.join(program))
        .find(|file| file.is_absolute() && std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn output_larger_than_a_pipe_is_capped_not_a_timeout() {
        // 1 MiB of output through a 64 KiB pipe: a wait-then-read child would hang here.
        let out = run("sh", &["-c", "head -c 1048576 /dev/zero | tr '\\0' a"], Duration::from_secs(20), 100_000).unwrap();
        assert_eq!(out.len(), 100_000);
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_stretch_the_limit() {
        // The tool exits at once; the helper it left behind would hold stdout for 30 s.
        let started = Instant::now();
        let out = run("sh", &["-c", "sleep 30 & echo done"], Duration::from_secs(10), 100).unwrap();
        assert_eq!(out, "done\n");
        assert!(started.elapsed() < Duration::from_secs(9), "a generous bound: {:?}", started.elapsed());
    }

    #[test]
    fn missing_program_slow_program_and_refusal_are_told_apart() {
        assert_eq!(run("fabcheck-no-such-tool", &[], Duration::from_secs(5), 10), Err(ToolError::NotInstalled));
        assert_eq!(run("sleep", &["30"], Duration::from_millis(100), 10), Err(ToolError::TimedOut));
        let refused = run("sh", &["-c", "echo 'netlink error: Operation not permitted' >&2; exit 1"], Duration::from_secs(5), 10);
        assert_eq!(refused, Err(ToolError::NotPermitted));
        let failed = run("sh", &["-c", "echo 'Cannot get module EEPROM information: No such device' >&2; exit 75"], Duration::from_secs(5), 10);
        assert!(matches!(failed, Err(ToolError::Failed(ref why)) if why.contains("No such device")), "{failed:?}");
    }
}
