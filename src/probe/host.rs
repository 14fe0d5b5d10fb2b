//! Facts about this node's RDMA stack that are not in the inventory: kernel modules, device
//! files, the installed stack, services, and the memlock limit. Gathered here, judged in
//! `diagnose` (pure); the filesystem root is injectable so tests can fake a node.

use crate::sys::fs::{read_text, TEXT_FILE_CAP};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostFacts {
    /// Modules present (loaded or built in), of those fabcheck cares about.
    pub modules: Vec<String>,
    /// `/dev/infiniband/uverbsN` files, and whether this user can open them.
    pub uverbs: Vec<UverbsFile>,
    /// Whether `/dev/infiniband/rdma_cm` exists (needed for --cm).
    pub rdma_cm: bool,
    /// rdma-core version from the installed libibverbs ("44.0"), if found.
    pub rdma_core_version: Option<String>,
    /// MLNX_OFED / DOCA-OFED version string, if installed.
    pub ofed_version: Option<String>,
    /// RLIMIT_MEMLOCK soft limit in bytes; `None` = unlimited.
    pub memlock_soft: Option<u64>,
    pub is_root: bool,
    /// Whether this process could load libibverbs and librdmacm (live only: a bundle says nothing).
    #[serde(default)]
    pub libibverbs: LibraryState,
    #[serde(default)]
    pub librdmacm: LibraryState,
}

/// Whether a library of rdma-core loads in this process.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum LibraryState {
    /// Not looked at (a support bundle, or a test's fake node).
    #[default]
    NotChecked,
    Loaded,
    /// It could not be loaded; the loader's words.
    Missing(String),
}

impl LibraryState {
    fn of(result: Result<(), fabcheck_verbs::VerbsError>) -> Self {
        match result {
            Ok(()) => LibraryState::Loaded,
            Err(fabcheck_verbs::VerbsError::Library { soname, detail }) => LibraryState::Missing(format!("{soname} cannot be loaded ({detail})")),
            Err(other) => LibraryState::Missing(other.to_string()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UverbsFile {
    pub path: String,
    pub accessible: bool,
}

/// Modules whose presence is reported.
pub const MODULES: [&str; 10] = ["ib_core", "ib_uverbs", "rdma_ucm", "rdma_cm", "mlx5_core", "mlx5_ib", "mlx4_ib", "rdma_rxe", "siw", "irdma"];

const LIB_DIRS: [&str; 4] = ["usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib"];

/// Gathers the facts from the node rooted at `root` ("/" live).
pub fn gather(root: &Path) -> HostFacts {
    let modules = MODULES.iter().filter(|m| root.join("sys/module").join(m).exists()).map(|m| m.to_string()).collect();
    let mut uverbs: Vec<UverbsFile> = std::fs::read_dir(root.join("dev/infiniband"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("uverbs"))
                .map(|e| UverbsFile {
                    path: e.path().display().to_string(),
                    accessible: std::fs::OpenOptions::new().read(true).write(true).open(e.path()).is_ok(),
                })
                .collect()
        })
        .unwrap_or_default();
    uverbs.sort_by(|a, b| a.path.cmp(&b.path));
    let (memlock_soft, _) = crate::sys::os::memlock();
    let live = root == Path::new("/");
    HostFacts {
        modules,
        uverbs,
        rdma_cm: root.join("dev/infiniband/rdma_cm").exists(),
        rdma_core_version: rdma_core_version(root),
        ofed_version: ofed_version(root),
        memlock_soft,
        is_root: crate::sys::os::is_root(),
        libibverbs: if live { LibraryState::of(fabcheck_verbs::libibverbs_available()) } else { LibraryState::NotChecked },
        librdmacm: if live { LibraryState::of(fabcheck_verbs::librdmacm_available()) } else { LibraryState::NotChecked },
    }
}

/// The installed stack as one line: rdma-core's version, and MLNX_OFED/DOCA's when present.
pub fn gather_versions(root: &Path) -> Option<String> {
    match (rdma_core_version(root), ofed_version(root)) {
        (Some(r), Some(o)) => Some(format!("{r} ({o})")),
        (Some(r), None) => Some(r),
        (None, Some(o)) => Some(o),
        (None, None) => None,
    }
}

/// From the versioned file name of libibverbs: `libibverbs.so.1.14.44.0` -> "44.0".
fn rdma_core_version(root: &Path) -> Option<String> {
    for dir in LIB_DIRS {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(version) = parse_libibverbs_version(&name) {
                return Some(version);
            }
        }
    }
    None
}

pub fn parse_libibverbs_version(file_name: &str) -> Option<String> {
    let rest = file_name.strip_prefix("libibverbs.so.1.")?;
    let parts: Vec<&str> = rest.split('.').collect();
    // libibverbs.so.1.<abi>.<rdma-core major>.<minor>
    if parts.len() >= 3 && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())) {
        Some(format!("{}.{}", parts[1], parts[2]))
    } else {
        None
    }
}

/// MLNX_OFED writes its version into `ofed_info`; DOCA-OFED installs the same script.
fn ofed_version(root: &Path) -> Option<String> {
    for path in ["usr/bin/ofed_info", "usr/local/bin/ofed_info"] {
        let Ok(text) = read_text(&root.join(path), TEXT_FILE_CAP) else { continue };
        if let Some(v) = parse_ofed_info(&text) {
            return Some(v);
        }
    }
    None
}

pub fn parse_ofed_info(script: &str) -> Option<String> {
    for marker in ["MLNX_OFED_LINUX-", "OFED-internal-", "DOCA"] {
        if let Some(pos) = script.find(marker) {
            let tail = &script[pos..];
            let end = tail.find(|c: char| c == ':' || c == '"' || c == '\'' || c.is_whitespace()).unwrap_or(tail.len());
            let found = tail[..end].trim_end_matches(':');
            if found.len() > marker.len() {
                return Some(found.to_string());
            }
        }
    }
    None
}

/// Runs a fixed local command (no shell) and returns its standard output (at most 64 KiB),
/// or `None` if it cannot run or misses the deadline (it is then killed). The deadline covers
/// reading the output too (`sys::child`): a grandchild holding stdout does not stretch it.
pub(crate) fn command_output(program: &str, args: &[&str], deadline: Duration) -> Option<String> {
    command_output_capped(program, args, deadline, 64 << 10)
}

/// [`command_output`] keeping at most `cap` bytes. The output is read while the command runs
/// (what is past `cap` is drained and dropped, `sys::child`), so a command that prints more than
/// a pipe holds (`mlxconfig -e query` on a large card) still finishes instead of blocking.
pub(crate) fn command_output_capped(program: &str, args: &[&str], deadline: Duration, cap: usize) -> Option<String> {
    let finished = crate::sys::child::run_bounded(program, args, deadline, cap).ok()?;
    // The tool must have exited by the deadline; what it printed before a stray kept the pipe
    // open is its output.
    finished.status?;
    String::from_utf8(finished.stdout).ok()
}

/// The live root.
pub fn live_root() -> PathBuf {
    PathBuf::from("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_runs_its_tools_within_their_limit() {
        // How `ethtool` and `dcb` are run for the inventory (sys::child underneath): 0.2
        // returned after 30 s here, with a 2 s limit.
        let started = std::time::Instant::now();
        let out = command_output("sh", &["-c", "sleep 30 & echo 100000baseCR4/Full"], Duration::from_secs(2));
        assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
        assert_eq!(out.as_deref(), Some("100000baseCR4/Full\n"));
        assert_eq!(command_output("sh", &["-c", "exec sleep 30"], Duration::from_millis(200)), None);
    }

    #[test]
    fn libibverbs_versions() {
        assert_eq!(parse_libibverbs_version("libibverbs.so.1.14.44.0"), Some("44.0".into()));
        assert_eq!(parse_libibverbs_version("libibverbs.so.1.14.2307.0"), Some("2307.0".into()));
        assert_eq!(parse_libibverbs_version("libibverbs.so.1"), None);
        assert_eq!(parse_libibverbs_version("libmlx5.so.1.24.44.0"), None);
    }

    #[test]
    fn command_output_past_a_pipe_and_the_cap() {
        // 200 KiB through a 64 KiB pipe: read while it runs, cut at the cap, not blocked.
        let out = command_output_capped("sh", &["-c", "head -c 204800 /dev/zero | tr '\\0' x"], Duration::from_secs(30), 100 << 10).unwrap();
        assert_eq!(out.len(), 100 << 10);
        assert_eq!(command_output("sh", &["-c", "echo hi"], Duration::from_secs(30)).as_deref(), Some("hi\n"));
        assert_eq!(command_output("/nonexistent/fabcheck-tool", &[], Duration::from_secs(1)), None);
    }

    #[test]
    fn ofed_info_versions() {
        let script = "#!/bin/bash\nif [ \"X$1\" == \"X-s\" ]; then echo MLNX_OFED_LINUX-23.10-1.1.9.0:; exit; fi\n";
        assert_eq!(parse_ofed_info(script), Some("MLNX_OFED_LINUX-23.10-1.1.9.0".into()));
        assert_eq!(parse_ofed_info("nothing here"), None);
    }
}
