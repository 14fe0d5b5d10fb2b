//! `link.flap` from the kernel log (`check --since DURATION`, default 24 h): every link down
//! and up, mlx5 health event and PCIe AER line of this node's RDMA ports in the window, each
//! with its time; more link downs on one port than `--expect flaps=N` (default 0) is an error
//! (azurehpc-health-checks' `check_ib_link_flapping` reads the same log). Pure: the log read
//! (`probe::kernel_log`) and the window in, checks and findings out.

use super::{Scope, Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::kernel_log::{Event, EventKind, KernelLog};
use crate::probe::Inventory;
use std::collections::BTreeMap;

/// The window judged: `[end - seconds, end]`, Unix seconds.
#[derive(Debug, Clone, Copy)]
pub struct LogWindow {
    pub end: i64,
    pub seconds: u64,
}

/// `check --since`'s default window (24 h), which the exporter judges over too.
pub const DEFAULT_WINDOW_S: u64 = 24 * 3600;

/// Most events listed in one finding (the count says the rest).
const LISTED: usize = 20;

fn span(seconds: u64) -> String {
    match seconds {
        s if s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s % 3600 == 0 => format!("{} h", s / 3600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// The port subject (`mlx5_0/1`, as the port checks name it) of an event: the port whose
/// netdev the line names, the device's only port for a device-wide line (`infiniband rxe0: set
/// down`), the device of a PCI function for health and AER lines. `None`: not this node's RDMA.
fn subject_of(e: &Event, inventory: &Inventory) -> Option<String> {
    for d in &inventory.devices {
        match e.kind {
            EventKind::LinkDown | EventKind::LinkUp => {
                if let Some(p) = d.ports.iter().find(|p| p.carried_by(&e.subject)) {
                    return Some(format!("{}/{}", d.name, p.port));
                }
                if d.name == e.subject {
                    return Some(match d.ports.as_slice() {
                        [only] => format!("{}/{}", d.name, only.port),
                        _ => d.name.clone(),
                    });
                }
            }
            EventKind::Health | EventKind::Aer => {
                if d.pci.as_ref().and_then(|p| p.address.as_deref()).is_some_and(|bdf| e.text.contains(bdf)) {
                    return Some(d.name.clone());
                }
            }
        }
    }
    None
}

/// `link.flap` rows for the window: per port (netdev or device) with events, or one pass for
/// the node; `log`: the log, or why it could not be read.
pub(super) fn judge(inventory: &Inventory, scope: &Scope, log: Result<&KernelLog, &str>, window: LogWindow, allowed: u32, sheet: &mut Sheet) {
    let id = FindingId::LinkFlap;
    let over = span(window.seconds);
    let log = match log {
        Ok(log) => log,
        Err(why) => {
            sheet.skip(id, "node", format!("the kernel log could not be read: {why}"));
            return;
        }
    };
    let start = window.end.saturating_sub(window.seconds as i64);
    let mut by_subject: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    for e in log.events.iter().filter(|e| e.at >= start && e.at <= window.end) {
        let Some(subject) = subject_of(e, inventory) else { continue };
        // A port left out of `check --device` (an uncabled second port) is not judged here either.
        let in_scope = match subject.split_once('/') {
            Some((device, port)) => port.parse().is_ok_and(|port| scope.port(device, port)),
            None => scope.device(&subject),
        };
        if !in_scope {
            continue;
        }
        let list = by_subject.entry(subject).or_default();
        // One up said twice in the same second (rxe's "set active" and addrconf's "link
        // becomes ready") is one event.
        if !list.last().is_some_and(|last| last.kind == e.kind && last.at == e.at) {
            list.push(e);
        }
    }
    // Ups alone are every boot's: only downs, health events and AER lines are said.
    by_subject.retain(|_, events| events.iter().any(|e| e.kind != EventKind::LinkUp));
    if by_subject.is_empty() {
        sheet.pass(
            id,
            "node",
            format!("no link down, mlx5 health event or AER line in the kernel log's last {over}"),
            Some(format!("at most {allowed} link downs")),
        );
        return;
    }
    for (subject, events) in by_subject {
        let downs = events.iter().filter(|e| e.kind == EventKind::LinkDown).count();
        let health = events.iter().any(|e| e.kind == EventKind::Health);
        let mut listed: Vec<String> =
            events.iter().take(LISTED).map(|e| format!("{} {}", crate::sys::time::rfc3339(e.at.max(0) as u64), e.kind.word())).collect();
        if events.len() > LISTED {
            listed.push(format!("and {} more", events.len() - LISTED));
        }
        let severity = if downs > allowed as usize {
            Severity::Error
        } else if health {
            Severity::Warning
        } else {
            Severity::Info
        };
        let message = format!(
            "{downs} link down{} in the kernel log's last {over} ({} event{} in all): {}",
            if downs == 1 { "" } else { "s" },
            events.len(),
            if events.len() == 1 { "" } else { "s" },
            listed.join(", ")
        );
        let remedy = if downs > 0 {
            "a port that went down and came back: reseat or replace the cable or transceiver, read the switch port's \
             counters and log (`mlxlink -d DEV -c`, `ethtool -S`), and `journalctl -k` around the times listed; \
             `--expect flaps=N` allows planned maintenance"
        } else if health {
            "the adapter's firmware reported a health event: `devlink health show`, `mlxfwreset`/firmware update, open a support case with the syndrome"
        } else {
            "PCIe errors on the adapter's function: see `pcie.aer`, and the times listed"
        };
        sheet.fail(
            id,
            subject,
            format!("{downs} link downs, {} events", events.len()),
            Some(format!("at most {allowed} link downs")),
            severity,
            message,
            remedy,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::kernel_log;

    /// A ConnectX-7 RoCE port on ens2np0 (tests/fixtures/roce-healthy-cx7).
    fn inventory() -> Inventory {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roce-healthy-cx7");
        crate::probe::inventory(&crate::probe::Source::Sysfs(root), None).expect("the fixture reads")
    }

    const LOG: &str = "\
2026-12-04T09:00:00,000000+00:00 mlx5_core 0000:18:00.0 ens2np0: Link down
2026-12-04T10:00:00,000000+00:00 mlx5_core 0000:18:00.0 ens2np0: Link down
2026-12-04T10:00:04,000000+00:00 mlx5_core 0000:18:00.0 ens2np0: Link up
2026-12-04T10:30:00,000000+00:00 e1000e 0000:00:1f.6 eno1: NIC Link is Down
";

    type Rows = (Vec<(String, crate::outcome::Status)>, Vec<(String, Severity, String)>);

    fn judged(allowed: u32, window_s: u64) -> Rows {
        let log = kernel_log::parse(LOG);
        let end = kernel_log::iso_seconds("2026-12-04T11:00:00+00:00").unwrap();
        let mut sheet = Sheet::default();
        judge(&inventory(), &Scope::default(), Ok(&log), LogWindow { end, seconds: window_s }, allowed, &mut sheet);
        (
            sheet.checks.iter().map(|c| (c.subject.to_string(), c.status)).collect(),
            sheet.findings.iter().map(|f| (f.subject.to_string(), f.severity, f.message.clone())).collect(),
        )
    }

    /// The window's downs of the RDMA port only (eno1 is not one), each with its time.
    #[test]
    fn downs_in_the_window_fail_with_their_times() {
        let (_, findings) = judged(0, 90 * 60);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let (subject, severity, message) = &findings[0];
        assert_eq!((subject.as_str(), *severity), ("mlx5_0/1", Severity::Error));
        assert!(
            message.starts_with(
                "1 link down in the kernel log's last 90 min (2 events in all): 2026-12-04T10:00:00Z link down, 2026-12-04T10:00:04Z link up"
            ),
            "{message}"
        );
        let (_, findings) = judged(0, 86_400);
        assert!(findings[0].2.starts_with("2 link downs"), "{findings:?}");
    }

    #[test]
    fn allowed_flaps_are_info_and_a_quiet_window_passes() {
        let (_, findings) = judged(2, 86_400);
        assert_eq!(findings[0].1, Severity::Info);
        let (checks, findings) = judged(0, 600);
        assert!(findings.is_empty());
        assert_eq!(checks, [("node".to_string(), crate::outcome::Status::Pass)]);
    }

    /// RoCE LAG: the kernel logs a leg's link changes under the leg's name (not the bond's, nor
    /// the RDMA device's); they are the bond port's (tests/fixtures/roce-cx7-lag-bond).
    #[test]
    fn a_legs_link_downs_are_its_bond_ports() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roce-cx7-lag-bond");
        let inventory = crate::probe::inventory(&crate::probe::Source::Sysfs(root), None).expect("the fixture reads");
        let log = kernel_log::parse(
            "2026-12-04T10:00:00,000000+00:00 mlx5_core 0000:3b:00.1 ens1f1np1: Link down\n\
             2026-12-04T10:00:03,000000+00:00 mlx5_core 0000:3b:00.1 ens1f1np1: Link up\n",
        );
        let end = kernel_log::iso_seconds("2026-12-04T11:00:00+00:00").unwrap();
        let mut sheet = Sheet::default();
        judge(&inventory, &Scope::default(), Ok(&log), LogWindow { end, seconds: 7200 }, 0, &mut sheet);
        let subjects: Vec<String> = sheet.findings.iter().map(|f| f.subject.to_string()).collect();
        assert_eq!(subjects, ["mlx5_bond_0/1"], "{:?}", sheet.findings);
    }

    #[test]
    fn an_unreadable_log_is_a_skip() {
        let mut sheet = Sheet::default();
        judge(
            &inventory(),
            &Scope::default(),
            Err("dmesg: read kernel buffer failed: Operation not permitted"),
            LogWindow { end: 0, seconds: 60 },
            0,
            &mut sheet,
        );
        assert_eq!(sheet.checks[0].status, crate::outcome::Status::Skip);
        assert!(sheet.findings.is_empty());
    }
}
