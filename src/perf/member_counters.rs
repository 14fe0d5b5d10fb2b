//! A collective member's port counters over its run (0.5): read before the first post and
//! after the last completion, outside the step loop, through the probe's bounded readers (the
//! port's `counters/` and `hw_counters/` files, `ethtool -S` of its netdev as a bounded child),
//! sent with `member_done` for the controller to judge as `check --soak` judges a window
//! (`diagnose::window_findings`). The RoCE priority is worked out once, before the run, as
//! `check` works it out from the port's set-up (`probe::qos::priority::derive`).

use crate::model::collective::{CounterWindow, MAX_WINDOW_COUNTERS};
use crate::probe::tool::{self, ToolError};
use crate::probe::tree::SysfsRoot;
use std::time::{Duration, Instant};

const ETHTOOL_LIMIT: Duration = Duration::from_secs(3);

/// The first read: when, the counters, and what the second read needs.
pub struct Start {
    at: Instant,
    netdev: Option<String>,
    roce_priority: Option<u8>,
    readings: Vec<(String, u64)>,
    prio_unread: Option<String>,
}

/// Reads the port's counters, and (RoCE) its netdev and RoCE priority.
pub fn start(device: &str, port: u8) -> Start {
    let sysfs = SysfsRoot::live();
    let netdev = sysfs.port_netdev(device, u32::from(port), &[]).filter(|n| crate::probe::tree::valid_tool_netdev(n));
    let (readings, stats, prio_unread) = read(device, port, netdev.as_deref());
    let roce_priority = netdev.as_deref().and_then(|n| {
        let qos = crate::probe::qos::read::port(&sysfs, device, u32::from(port), n, stats.as_deref());
        // Tagging is not looked at here: under trust pcp the priority is then not known (not judged).
        let tagging = crate::probe::qos::priority::Tagging::Unknown;
        crate::probe::qos::priority::derive(&qos, None, &tagging, sysfs.roce_on_app_entry(device)).ok().map(|d| d.priority.get())
    });
    Start { at: Instant::now(), netdev, roce_priority, readings, prio_unread }
}

/// Reads them again and pairs each counter read at both ends.
pub fn finish(device: &str, port: u8, start: Start) -> CounterWindow {
    let (end, _, unread_now) = read(device, port, start.netdev.as_deref());
    let mut counters: Vec<(String, u64, u64)> = start
        .readings
        .into_iter()
        .filter_map(|(name, first)| {
            let last = end.iter().find(|(n, _)| *n == name)?.1;
            Some((name, first, last))
        })
        .collect();
    counters.truncate(MAX_WINDOW_COUNTERS);
    CounterWindow {
        seconds: start.at.elapsed().as_secs_f64(),
        netdev: start.netdev,
        roce_priority: start.roce_priority,
        prio_unread: start.prio_unread.or(unread_now),
        counters,
    }
}

/// The port's error counters, and (with a netdev) `ethtool -S`'s per-priority ones: the
/// readings, the report, and why the per-priority counters were not read.
fn read(device: &str, port: u8, netdev: Option<&str>) -> (Vec<(String, u64)>, Option<String>, Option<String>) {
    let mut readings: Vec<(String, u64)> =
        super::counters::snapshot(std::path::Path::new("/sys"), device, port).values().map(|(n, v)| (n.to_string(), v)).collect();
    let Some(netdev) = netdev else { return (readings, None, None) };
    let (stats, unread) = match tool::run("ethtool", &["-S", netdev], ETHTOOL_LIMIT, crate::probe::tree::REPORT_CAP) {
        Ok(report) => (Some(report), None),
        Err(ToolError::NotInstalled) => (None, Some("ethtool is not installed".to_string())),
        Err(e) => (None, Some(format!("`ethtool -S {netdev}` failed ({e:?})"))),
    };
    let prio = stats.as_deref().and_then(crate::probe::qos::counters::parse);
    let unread = unread.or_else(|| prio.is_none().then(|| format!("`ethtool -S {netdev}` prints no per-priority counters")));
    if let Some(c) = prio {
        readings.extend(c.readings());
    }
    (readings, stats, unread)
}
