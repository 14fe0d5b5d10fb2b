//! The background read: every `--interval` the node is read (inventory, counters, the check)
//! on this thread and the finished pages put on the shelf, so a scrape never waits on sysfs.
//! A live read opens verbs contexts only while it reads (the inventory drops them before it
//! returns): between reads the exporter holds no RDMA resource, and `rdma link delete` or a
//! driver restart is never blocked by it.

use super::http::Pages;
use super::page::{self, Exposition, PortCounters, Reading, Stats};
use super::serve::Shelf;
use crate::diagnose::{node, Expectations, Scope};
use crate::probe::tree::SysfsRoot;
use crate::probe::{self, Source};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// What the refresh thread is given.
#[derive(Debug, Clone)]
pub struct Refresh {
    pub source: Source,
    pub interval: Duration,
    /// What the checklist is judged against (`--expect`, `--profile`), as `check`'s is.
    pub expect: Expectations,
    /// Which devices and ports are read and judged (`--device`), as `check`'s.
    pub scope: Scope,
    /// `--live-dir`: where running burn-ins keep their last interval (looked at every second).
    pub live_dir: Option<std::path::PathBuf>,
}

/// How often the live figures are looked at between reads of the node.
const LIVE_EVERY: Duration = Duration::from_secs(1);

fn now_unix() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn put(shelf: &Shelf, pages: Pages) {
    match shelf.write() {
        Ok(mut p) => *p = pages,
        Err(poisoned) => *poisoned.into_inner() = pages,
    }
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
        let mut reading = read_node(&refresh.source, &refresh.expect, &refresh.scope);
        if let Some(dir) = &refresh.live_dir {
            reading.live = super::live::read(dir, now_unix());
        }
        stats.refreshes += 1;
        if reading.inventory.is_none() {
            stats.failures += 1;
        }
        stats.duration_s = started.elapsed().as_secs_f64();
        stats.refreshed_unix_s = now_unix();
        let pages = pages_of(&reading, &stats);
        if let Some(inv) = &reading.inventory {
            stats.seen.extend(inv.devices.iter().map(|d| d.name.clone()));
        }
        put(shelf, pages);
        // Sleep in short steps so that a stop is seen soon; the live figures are looked at
        // every second and the page written again from the same read when they changed.
        let next = started + refresh.interval;
        let mut live_at = Instant::now();
        while !stop() && Instant::now() < next {
            std::thread::sleep(next.saturating_duration_since(Instant::now()).min(Duration::from_millis(200)));
            if let Some(dir) = refresh.live_dir.as_deref().filter(|_| live_at.elapsed() >= LIVE_EVERY) {
                live_at = Instant::now();
                let live = super::live::read(dir, now_unix());
                if live != reading.live {
                    reading.live = live;
                    put(shelf, pages_of(&reading, &stats));
                }
            }
        }
    }
}

/// One read of the node: what `check` reads and judges (the one node read, the one checklist),
/// and every port's counters; `scope`: only the named devices and ports, as `check --device`.
pub fn read_node(source: &Source, expect: &Expectations, scope: &Scope) -> Reading {
    let read = match probe::node::read(source, &scope.devices()) {
        Ok(read) => read,
        Err(err) => {
            let failure = crate::error::Failure::from(err);
            return Reading { error: Some(format!("{}; {}", failure.cause, failure.remedy)), ..Reading::default() };
        }
    };
    // link.flap from the kernel log over check's default window (24 h), judged with the node
    // as `check` judges it.
    let log = if read.inventory.devices.is_empty() { None } else { probe::kernel_log::read(source) };
    let window = |end| crate::diagnose::flap_rules::LogWindow { end, seconds: crate::diagnose::flap_rules::DEFAULT_WINDOW_S };
    let log = log.as_ref().map(|(log, end)| node::Log { log: log.as_ref().map_err(String::as_str), window: window(*end) });
    let judged = node::judge_with_log(&read, expect, scope, None, log.as_ref());
    let gpu_of = judged.gpus.iter().filter_map(|p| p.nic.as_ref().map(|nic| (nic.name.clone(), p.gpu.clone()))).collect();
    let tree = match source {
        Source::Sysfs(root) => SysfsRoot::at(root),
        Source::Live => SysfsRoot::live(),
    };
    let counters = read
        .inventory
        .ports()
        .map(|(d, p)| PortCounters { device: d.name.clone(), port: p.port, values: probe::counters::read(&tree, &d.name, p.port) })
        .collect();
    Reading { error: None, counters, report: Some(judged.report), gpu_of, pcie: Some(read.pcie), inventory: Some(read.inventory), live: Vec::new() }
}
