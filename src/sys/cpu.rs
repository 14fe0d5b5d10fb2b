//! CPU placement of a measured loop: which CPUs are near an adapter (sysfs), which this thread
//! may use, the choice (pure), and pinning the calling thread (`sched_setaffinity` via nix).

use crate::model::Unparsed;
use crate::sys::fs::{read_text, SYSFS_CAP};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::path::Path;

/// Parses a kernel CPU list (`0-3,8-11`, `5`, `0,2,4`, empty) into ascending, distinct CPU
/// numbers. Refuses anything else (reversed ranges, stray text), so a bad sysfs file is noticed.
pub fn parse_cpulist(text: &str) -> Result<Vec<usize>, Unparsed> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("'{part}' is not a CPU or a range of CPUs"));
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi || hi - lo > 1 << 16 {
                    return Err(format!("'{part}' is not a range of CPUs").into());
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The CPU for the `slot`th loop on a host: the adapter's local CPUs this thread may use (all
/// it may use when none of them is, or when the adapter names none), the `slot`th of them,
/// wrapping. Two ends on one host get slots 0 and 1, so distinct CPUs. `None` (not pinned)
/// when that pool has fewer than [`super::cpu_plan::MIN_AUTO_POOL`] CPUs. One loop's case of the host's one
/// allocator, [`super::cpu_plan::plan`].
pub fn choose(local: &[usize], allowed: &[usize], slot: usize) -> Option<usize> {
    match super::cpu_plan::plan(&[local.to_vec()], allowed, &[], slot) {
        super::cpu_plan::CpuPlan::Pinned(cpus) => cpus.first().copied(),
        super::cpu_plan::CpuPlan::Unpinned(_) => None,
    }
}

/// The CPUs near an RDMA device, from sysfs: its PCI function's `local_cpulist`, else its NUMA
/// node's CPU list. Empty when the device has neither (Soft-RoCE has no PCI function).
pub fn device_local(sys: &Path, device: &str) -> Vec<usize> {
    let dev = sys.join("class/infiniband").join(device).join("device");
    // Bounded, regular files only (a captured or hostile tree may hold FIFOs or huge files).
    let text = |p: &Path| read_text(p, SYSFS_CAP).ok();
    let read = |p: &Path| text(p).and_then(|t| parse_cpulist(&t).ok()).unwrap_or_default();
    let local = read(&dev.join("local_cpulist"));
    if !local.is_empty() {
        return local;
    }
    match device_numa_node(sys, device) {
        Some(node) => read(&sys.join(format!("devices/system/node/node{node}/cpulist"))),
        None => Vec::new(),
    }
}

/// The NUMA node of an RDMA device's PCI function, from sysfs; None where it has none (-1: a
/// single-node machine or a virtual device; Soft-RoCE has no PCI function at all).
pub fn device_numa_node(sys: &Path, device: &str) -> Option<u32> {
    let path = sys.join("class/infiniband").join(device).join("device/numa_node");
    read_text(&path, SYSFS_CAP).ok()?.trim().parse::<i32>().ok().and_then(|n| u32::try_from(n).ok())
}

/// The CPUs the calling thread may run on (its affinity mask: taskset, cgroups, isolcpus).
pub fn allowed() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect(),
        Err(_) => Vec::new(),
    }
}

/// The calling thread's affinity, to put back later.
pub fn current() -> Option<CpuSet> {
    sched_getaffinity(Pid::from_raw(0)).ok()
}

/// Pins the calling thread (not the process: an agent's reader thread stays where it was) to
/// `cpu`. Fails when the CPU does not exist, is offline or is outside the allowed set.
pub fn pin(cpu: usize) -> Result<(), PinError> {
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|_| PinError::Beyond { cpu, count: CpuSet::count() })?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|source| PinError::Refused { cpu, source })
}

/// Why a thread could not be pinned to a CPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error("CPU {cpu} is beyond the {count} this system handles")]
    Beyond { cpu: usize, count: usize },
    #[error("cannot run on CPU {cpu}: {source}")]
    Refused { cpu: usize, source: nix::errno::Errno },
}

/// Pins the calling thread to `within` less `away_from` (a second busy loop beside a pinned
/// one: lat_under_load's load thread beside its probe). Best effort: nothing changes when
/// `away_from` is the only CPU of `within`; says whether it pinned.
pub fn pin_beside(within: &CpuSet, away_from: usize) -> bool {
    let mut set = *within;
    if set.unset(away_from).is_err() || !(0..CpuSet::count()).any(|c| set.is_set(c).unwrap_or(false)) {
        return false;
    }
    sched_setaffinity(Pid::from_raw(0), &set).is_ok()
}

/// Puts back an affinity saved by [`current`] (best effort).
pub fn restore(set: &CpuSet) {
    let _ = sched_setaffinity(Pid::from_raw(0), set);
}

/// A CPU list as the kernel writes one (`0-3,8`), for messages.
pub fn format_cpulist(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}-{}", cpus[i], cpus[j]) } else { cpus[i].to_string() });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8-11\n").unwrap(), vec![0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
        assert_eq!(parse_cpulist("4,0,2,2").unwrap(), vec![0, 2, 4]);
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpulist(" 0-1 , 3 ").unwrap(), vec![0, 1, 3]);
        for bad in ["3-1", "a", "0-", "1-2-3", "0-99999999"] {
            assert!(parse_cpulist(bad).is_err(), "{bad}");
        }
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpulist(&[]), "");
    }

    #[test]
    fn choice_prefers_local_and_distinct() {
        let local = [8, 9, 10, 11];
        let allowed: Vec<usize> = (0..16).collect();
        assert_eq!(choose(&local, &allowed, 0), Some(8));
        assert_eq!(choose(&local, &allowed, 1), Some(9));
        assert_eq!(choose(&local, &allowed, 4), Some(8), "wraps");
        // Only the allowed local CPUs count; none allowed: any allowed CPU.
        assert_eq!(choose(&local, &[8, 9, 10, 11, 12], 1), Some(9));
        assert_eq!(choose(&local, &[8, 9, 10, 12, 13], 1), None, "3 allowed local CPUs: too few to pin");
        assert_eq!(choose(&local, &[0, 1, 2, 3], 1), Some(1));
        // No adapter locality (Soft-RoCE): the online CPUs, distinct for two ends.
        assert_eq!(choose(&[], &[0, 1, 2, 3], 0), Some(0));
        assert_eq!(choose(&[], &[0, 1, 2, 3], 1), Some(1));
        // A small host is left to the scheduler.
        assert_eq!(choose(&[], &[0, 1], 1), None, "2 CPUs: not pinned unless asked");
        assert_eq!(choose(&[1], &[], 0), None);
    }

    #[test]
    fn device_locality_from_sysfs() {
        let dir = std::env::temp_dir().join(format!("fabcheck-cpu-{}", std::process::id()));
        let dev = dir.join("class/infiniband/mlx5_0/device");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::create_dir_all(dir.join("devices/system/node/node1")).unwrap();
        std::fs::write(dir.join("devices/system/node/node1/cpulist"), "16-31\n").unwrap();
        std::fs::write(dev.join("numa_node"), "1\n").unwrap();
        assert_eq!(device_local(&dir, "mlx5_0"), (16..32).collect::<Vec<_>>(), "NUMA node's list without local_cpulist");
        std::fs::write(dev.join("local_cpulist"), "16-19\n").unwrap();
        assert_eq!(device_local(&dir, "mlx5_0"), vec![16, 17, 18, 19]);
        assert!(device_local(&dir, "rxe0").is_empty(), "no PCI function");
        assert_eq!((device_numa_node(&dir, "mlx5_0"), device_numa_node(&dir, "rxe0")), (Some(1), None));
        std::fs::write(dev.join("numa_node"), "-1\n").unwrap();
        assert_eq!(device_numa_node(&dir, "mlx5_0"), None, "-1: no node to prefer");
        std::fs::write(dev.join("numa_node"), "1\n").unwrap();
        // Hostile trees: a FIFO is not waited on, an oversized file is not read whole; both are
        // "no locality" (the NUMA node's list is then used, as when the file is absent).
        std::fs::remove_file(dev.join("local_cpulist")).unwrap();
        nix::unistd::mkfifo(&dev.join("local_cpulist"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(device_local(&dir, "mlx5_0"), (16..32).collect::<Vec<_>>());
        std::fs::remove_file(dev.join("local_cpulist")).unwrap();
        std::fs::write(dev.join("local_cpulist"), "0,".repeat(64 << 10)).unwrap();
        assert_eq!(device_local(&dir, "mlx5_0"), (16..32).collect::<Vec<_>>());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
