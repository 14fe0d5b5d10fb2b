//! The background read: every `--interval` the node is read (inventory, counters, the check)
//! on this thread and the finished pages put on the shelf, so a scrape never waits on sysfs.
//! A live read opens verbs contexts only while it reads (the inventory drops them before it
//! returns): between reads the exporter holds no RDMA resource, and `rdma link delete` or a
//! driver restart is never blocked by it.

use super::http::Pages;
use super::page::{self, Exposition, PortCounters, Reading, Stats};
use super::serve::Shelf;
use crate::diagnose::{self, Expectations, Input, Scope};
use crate::outcome::FindingId;
use crate::outcome::{Finding, Severity, Verdict};
use crate::probe::{self, host, Inventory, ProbeError, Source};
use crate::report::prom::metrics::CounterDir;
use crate::sys::fs::{list_dir, read_text, SYSFS_CAP};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Counter files read per folder at most (mlx5 has about 60 in `hw_counters/`).
const MAX_COUNTER_FILES: usize = 512;

/// What the refresh thread is given.
#[derive(Debug, Clone)]
pub struct Refresh {
    pub source: Source,
    pub interval: Duration,
}

/// The first page, served until the first read is done.
pub fn starting_pages(interval: Duration) -> Pages {
    let reading = Reading { error: Some("the first read of the node has not finished".into()), ..Reading::default() };
    let stats = Stats { interval_s: interval.as_secs_f64(), ..Stats::default() };
    pages_of(&reading, &stats)
}

fn pages_of(reading: &Reading, stats: &Stats) -> Pages {
    Pages {
        text: Arc::from(page::render(reading, stats, Exposition::Text)),
        openmetrics: Arc::from(page::render(reading, stats, Exposition::OpenMetrics)),
    }
}

/// Reads the node every interval until `stop()`; each finished page replaces the last.
pub fn run(refresh: &Refresh, shelf: &Shelf, stop: &dyn Fn() -> bool) {
    let mut stats = Stats { interval_s: refresh.interval.as_secs_f64(), ..Stats::default() };
    while !stop() {
        let started = Instant::now();
        let reading = read_node(&refresh.source);
        stats.refreshes += 1;
        if reading.inventory.is_none() {
            stats.failures += 1;
        }
        stats.duration_s = started.elapsed().as_secs_f64();
        stats.refreshed_unix_s = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let pages = pages_of(&reading, &stats);
        if let Some(inv) = &reading.inventory {
            stats.seen.extend(inv.devices.iter().map(|d| d.name.clone()));
        }
        match shelf.write() {
            Ok(mut p) => *p = pages,
            Err(poisoned) => *poisoned.into_inner() = pages,
        }
        // Sleep in short steps so that a stop is seen soon.
        let next = started + refresh.interval;
        while !stop() && Instant::now() < next {
            std::thread::sleep(next.saturating_duration_since(Instant::now()).min(Duration::from_millis(200)));
        }
    }
}

/// One read of the node: what `check` reads and judges, and every port's counters.
pub fn read_node(source: &Source) -> Reading {
    let live = matches!(source, Source::Live);
    let root: PathBuf = match source {
        Source::Sysfs(root) => root.clone(),
        Source::Live => PathBuf::from("/sys"),
    };
    let mut inventory = match probe::inventory(source, None) {
        Ok(inv) => inv,
        // Live, "no devices" (all of them unplugged, the driver unloaded) is the check's
        // finding, not a failure to read: the page says the devices are gone.
        Err(ProbeError::NoDevices) | Err(ProbeError::NoVerbs(_)) | Err(ProbeError::NoRdmaCore { .. }) if live => Inventory::default(),
        Err(err) => {
            let failure = crate::error::Failure::from(err);
            return Reading { error: Some(format!("{}; {}", failure.cause, failure.remedy)), ..Reading::default() };
        }
    };
    if live {
        crate::probe::local_mads::enrich(&mut inventory);
    }
    let host_facts = live.then(|| host::gather(&host::live_root()));
    let expect = Expectations::default();
    let mut report = diagnose::run(&Input { inventory: &inventory, host: host_facts.as_ref(), expect: &expect, scope: &Scope::default() });
    let mut gpu_of = std::collections::BTreeMap::new();
    let tree = crate::probe::pci::read(&root);
    if let Some(tree) = &tree {
        for pairing in diagnose::gpu_rules::apply(&mut report, tree) {
            if let Some(nic) = pairing.nic {
                gpu_of.insert(nic.name, pairing.gpu);
            }
        }
    }
    let pcie = crate::probe::pci::health::read::read(source, &inventory, tree.as_ref());
    diagnose::pcie_rules::apply(&mut report, &pcie, None);
    if live && inventory.devices.is_empty() {
        report.findings.insert(
            0,
            Finding {
                id: FindingId::DevicesCount,
                severity: Severity::Error,
                subject: "node".into(),
                message: "no RDMA devices found".into(),
                remedy: ProbeError::NoDevices.remedy(),
                about: None,
            },
        );
        report.verdict = Verdict::Fail;
    }
    let counters = inventory.ports().map(|(d, p)| read_counters(&root, &d.name, p.port)).collect();
    Reading { inventory: Some(inventory), error: None, counters, report: Some(report), gpu_of, pcie: Some(pcie) }
}

/// The counter files of one port (`counters/` and `hw_counters/`), each read bounded; a file
/// that is not a number (or not readable) is left out.
pub fn read_counters(root: &Path, device: &str, port: u32) -> PortCounters {
    let port_dir = root.join("class/infiniband").join(device).join("ports").join(port.to_string());
    let mut values = Vec::new();
    for dir in [CounterDir::Ibta, CounterDir::Hardware] {
        let folder = port_dir.join(dir.folder());
        let mut names: Vec<String> = list_dir(&folder).unwrap_or_default().into_iter().filter_map(|n| n.into_string().ok()).collect();
        names.sort();
        names.truncate(MAX_COUNTER_FILES);
        for name in names {
            if let Some(value) = read_text(&folder.join(&name), SYSFS_CAP).ok().and_then(|t| t.trim().parse::<u64>().ok()) {
                values.push((dir, name, value));
            }
        }
    }
    PortCounters { device: device.to_string(), port, values }
}
