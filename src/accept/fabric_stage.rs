//! Level 2's `fabric` stage: the InfiniBand fabric discovered and judged from the controller,
//! as `fabcheck fabric` does with no flags (`fabric::discovery`, then every rule of
//! `fabric::rulebook`), when this host has an InfiniBand port and may use umad. Elsewhere
//! (RoCE, no `ib_umad`, no permission) the stage is skipped and says why: info, no failure.

use super::stage::{Aliases, StageName, StageRun};
use crate::fabric::discovery::discover::{self, Probe};
use crate::outcome::Verdict;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long discovery may take (as `fabric --deadline`'s default).
const DEADLINE: Duration = Duration::from_secs(600);

/// Why the fabric cannot be discovered from this host, if it cannot: no InfiniBand port under
/// `sys` (`/sys/class/infiniband`), or no umad device under `dev` (`/dev/infiniband`) this
/// process may open for reading and writing.
pub fn cannot_discover(sys: &Path, dev: &Path) -> Option<String> {
    let ib = std::fs::read_dir(sys.join("class/infiniband")).into_iter().flatten().flatten().any(|d| {
        std::fs::read_dir(d.path().join("ports"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|p| crate::sys::fs::read_text(&p.path().join("link_layer"), 64).is_ok_and(|t| t.trim() == "InfiniBand"))
    });
    if !ib {
        return Some("no InfiniBand port on this host (RoCE or no RDMA device): the fabric is not discovered from here".into());
    }
    let umads: Vec<std::path::PathBuf> = std::fs::read_dir(dev)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("umad")))
        .collect();
    if umads.is_empty() {
        return Some(format!("no umad device in {} (load ib_umad: `modprobe ib_umad`) to discover the fabric from", dev.display()));
    }
    if !umads.iter().any(|p| std::fs::OpenOptions::new().read(true).write(true).open(p).is_ok()) {
        return Some(format!("this process may not open {}/umad* (root, or the rdma group): the fabric is not discovered", dev.display()));
    }
    None
}

/// The stage: skipped with why, or the fabric discovered (on a worker thread, bounded) and
/// judged; its findings stay in its document unless they name a node of the fleet.
pub fn run(aliases: &Aliases, unreachable: Vec<String>) -> StageRun {
    if let Some(why) = cannot_discover(Path::new("/sys"), Path::new("/dev/infiniband")) {
        return StageRun::skipped(StageName::Fabric, why, unreachable);
    }
    let started = Instant::now();
    let probe = Probe { ca: None, port: None, timeout_ms: 500, retries: 2, reset_counters: false, tables_until: None, sample_ticks: false };
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("mad".into()).spawn(move || {
        let _ = tx.send(discover::discover_with_tables(&probe));
    });
    if let Err(e) = spawned {
        return StageRun::could_not_run(StageName::Fabric, format!("cannot start the MAD thread: {e}"), unreachable);
    }
    let (fabric, tables) = match rx.recv_timeout(DEADLINE) {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => return StageRun::could_not_run(StageName::Fabric, format!("fabric discovery: {e}"), unreachable),
        Err(_) => {
            let why = format!("the fabric did not answer within {} s", DEADLINE.as_secs());
            return StageRun::could_not_run(StageName::Fabric, why, unreachable);
        }
    };
    // Every rule `fabcheck fabric` with no flags judges by, in its order (`fabric::rulebook`).
    let expect = crate::fabric::FabricExpect::default();
    let seed = crate::fabric::routes::route::fresh_seed();
    let (judgement, _) = crate::fabric::rulebook::judge(&fabric, &tables, &crate::fabric::rulebook::Asked::nothing(&expect, seed));
    let elapsed = started.elapsed();
    let doc = crate::fabric::report::document(&fabric, &judgement, elapsed.as_millis() as u64);
    let verdict = if doc.verdict == Verdict::Pass { Verdict::Pass } else { Verdict::Fail };
    // A finding about a node of the fleet (its HCA's description starts with its host name).
    let findings = judgement
        .findings
        .iter()
        .filter(|f| f.severity != crate::outcome::Severity::Info)
        .filter_map(|f| {
            let subject = f.subject.to_string();
            let first = subject.split([' ', '/', ':']).next().unwrap_or("");
            aliases.host_of(first).map(|h| (h.to_string(), f.clone()))
        })
        .collect();
    StageRun {
        name: StageName::Fabric,
        verdict,
        document: serde_json::to_value(&doc).unwrap_or(serde_json::Value::Null),
        unreachable,
        skipped: None,
        error: None,
        seconds: elapsed.as_secs_f64(),
        findings,
        page: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_infiniband_port_or_no_umad_is_a_skip_saying_why() {
        let dir = std::env::temp_dir().join(format!("fabcheck-accept-fabric-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let port = dir.join("sys/class/infiniband/mlx5_0/ports/1");
        std::fs::create_dir_all(&port).unwrap();
        std::fs::write(port.join("link_layer"), "Ethernet\n").unwrap();
        let dev = dir.join("dev");
        std::fs::create_dir_all(&dev).unwrap();
        assert!(cannot_discover(&dir.join("sys"), &dev).unwrap().starts_with("no InfiniBand port"));
        std::fs::write(port.join("link_layer"), "InfiniBand\n").unwrap();
        assert!(cannot_discover(&dir.join("sys"), &dev).unwrap().starts_with("no umad device"));
        std::fs::write(dev.join("umad0"), "").unwrap();
        assert_eq!(cannot_discover(&dir.join("sys"), &dev), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
