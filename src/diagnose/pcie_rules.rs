//! PCIe health (issue #44): `pcie.aer`, the kernel's AER counters of every RDMA NIC, GPU and
//! bridge on their paths, with mlx5's PCIe counters named beside the NIC's; `devlink.health`,
//! the NICs' `devlink health` reporters. Pure: `probe::pci::health` reads, this judges.
//!
//! Lifetime (counters since boot): a fatal or non-fatal uncorrectable error is an error naming
//! the function, the row and the count; more than [`CORRECTABLE_LIMIT`] correctable errors a
//! warning naming the largest rows. With `--soak`: any uncorrectable error in the window, or
//! correctable errors that rose in it, is an error; lifetime totals that did not rise are said,
//! not failed. Thresholds and sources: docs/checks.md ("PCIe health").

use super::{Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::pci::health::aer::{self, AerSeverity};
use crate::probe::pci::health::devlink::{Reporter, ReporterState};
use crate::probe::pci::health::{window, DevlinkRead, FunctionHealth, FunctionWindow, PcieHealth, Rise, Role};

/// Lifetime correctable errors above which a function is a warning: a healthy link counts a
/// handful over months (link training, a hot reset); thousands are a link that replays.
pub const CORRECTABLE_LIMIT: u64 = 1000;
/// The same for mlx5's `rx_pci_signal_integrity` / `tx_pci_signal_integrity` (transitions to
/// recovery: each one a pause of the link).
pub const SIGNAL_INTEGRITY_LIMIT: u64 = 1000;
const EXPECTED: &str = "no uncorrectable errors, at most 1000 correctable";

/// A soak window: the read at its start, and how long it lasted.
pub struct PcieSoak<'a> {
    pub start: &'a PcieHealth,
    pub seconds: f64,
    /// The PCI tree (each function's trained link), to judge correctable errors as a rate.
    pub tree: Option<&'a crate::probe::pci::PciTree>,
}

/// The PCIe Base spec's bit error ratio a link must hold (every generation: 1e-12): correctable
/// errors above it in a window are an error, above a tenth of it a warning.
pub const PCIE_BER: f64 = 1e-12;

/// Bits a function's link carried in `seconds` at its trained width and speed (8b/10b below
/// 8 GT/s, 128b/130b from 8 GT/s), where the tree says them.
fn window_bits(tree: Option<&crate::probe::pci::PciTree>, bdf: &str, seconds: f64) -> Option<f64> {
    let f = tree?.function(bdf)?;
    let gts: f64 = f.link.current_speed.as_deref()?.split_whitespace().next()?.parse().ok()?;
    let width = f64::from(f.link.current_width.filter(|w| *w > 0)?);
    let encoding = if gts < 8.0 { 0.8 } else { 128.0 / 130.0 };
    Some(gts * 1e9 * width * encoding * seconds)
}

/// The PCIe health family alone, as its own report: for a tool that reads only that
/// (`examples/aer_read.rs`); a node's checklist runs it in `diagnose::node`'s list.
pub fn judge_alone(health: &PcieHealth) -> crate::outcome::Report {
    let mut sheet = Sheet::default();
    run(health, None, &mut sheet);
    sheet.finish()
}

/// Judges `health` (over the soak window when there was one).
pub(super) fn run(health: &PcieHealth, soak: Option<&PcieSoak<'_>>, sheet: &mut Sheet) {
    let mut clean = [0usize; 3];
    let mut absent: Vec<&FunctionHealth> = Vec::new();
    let mut bridges_without = 0;
    for f in &health.functions {
        if !f.unreadable.is_empty() {
            let what = f.unreadable.iter().map(|(p, why)| format!("{p}: {why}")).collect::<Vec<_>>().join("; ");
            sheet.skip(FindingId::PcieAer, &f.bdf, format!("cannot read {what}"));
            continue;
        }
        if f.aer.is_empty() && f.mlx5.is_none() {
            match f.role {
                Role::Bridge { .. } => bridges_without += 1,
                _ => absent.push(f),
            }
            continue;
        }
        let start = soak.and_then(|s| s.start.functions.iter().find(|g| g.bdf == f.bdf));
        let w = start.map(|s| window(s, f));
        let bits = soak.and_then(|s| window_bits(s.tree, &f.bdf, s.seconds));
        if judge(f, w.as_ref(), (soak.map(|s| s.seconds), bits, health.uptime_s), sheet) {
            clean[match f.role {
                Role::Nic { .. } => 0,
                Role::Gpu => 1,
                Role::Bridge { .. } => 2,
            }] += 1;
        }
    }
    // No AER file anywhere: a live node's kernel keeps none (said once, for the node); a bundle
    // predates their capture and is judged as before. Some functions without them beside
    // others with them: each is said (a bridge without AER is common, and not said).
    let any = health.functions.iter().any(|f| !f.aer.is_empty() || !f.unreadable.is_empty());
    if !any && !absent.is_empty() && health.live {
        sheet.skip(
            FindingId::PcieAer,
            "node",
            format!(
                "no aer_dev_* files in sysfs for {} functions: this kernel keeps no AER counters (Linux before 4.19, AER off with \
                 pci=noaer, or the firmware owns AER and the kernel was not given it)",
                absent.len() + bridges_without
            ),
        );
    } else if any {
        for f in &absent {
            sheet.skip(
                FindingId::PcieAer,
                &f.bdf,
                format!("no aer_dev_* files for {}: it has no AER capability, or the bundle did not capture them", f.label()),
            );
        }
    }
    let total: usize = clean.iter().sum();
    if total > 0 {
        use crate::units::count;
        let mut observed = format!(
            "no AER errors on {} ({}, {}, {})",
            count(total, "function"),
            count(clean[0], "NIC"),
            count(clean[1], "GPU"),
            count(clean[2], "bridge")
        );
        if bridges_without > 0 {
            observed.push_str(&format!("; {} without AER", count(bridges_without, "bridge")));
        }
        if let Some(s) = soak {
            observed.push_str(&format!(", in {}", window_words(s.seconds)));
        }
        sheet.pass(FindingId::PcieAer, "node", observed, Some(EXPECTED.into()));
    }
    devlink_health(health, soak, sheet);
}

/// `12 correctable (BadTLP 10, RxErr 2)`: a file's count and its largest rows.
fn said(file: &aer::AerFile, severity: AerSeverity, rows: usize) -> String {
    let top: Vec<String> = file.nonzero().into_iter().take(rows).map(|(r, n)| format!("{r} {n}")).collect();
    let name = if severity == AerSeverity::NonFatal { "non-fatal" } else { severity.name() };
    if top.is_empty() {
        format!("{} {name}", file.count())
    } else {
        format!("{} {name} ({})", file.count(), top.join(", "))
    }
}

/// Where the function sits, for messages: a bridge is the other end of its NICs' links.
fn place(f: &FunctionHealth) -> String {
    match &f.role {
        Role::Bridge { link_of, .. } if !link_of.is_empty() => format!(
            "the port at the other end of {}'s link (a link's errors are counted where they are received, often at the slot's side)",
            link_of.join(", ")
        ),
        Role::Bridge { below, .. } => format!("a bridge on the path of {}", below.join(", ")),
        _ => String::new(),
    }
}

fn remedy(f: &FunctionHealth, rows: &[&str]) -> String {
    let bdf = &f.bdf;
    if rows.iter().all(|r| aer::is_link_row(r)) {
        format!(
            "a marginal PCIe link: reseat the card, try another slot or riser (and its cable or retimer), update the BIOS and the \
             card's firmware; `lspci -vvv -s {bdf}` shows CESta/UESta and LnkSta; `check --soak 10m` says whether they still rise"
        )
    } else {
        format!(
            "`dmesg | grep -i -e AER -e {bdf}` shows each error with its TLP header; update the card's firmware and the BIOS, reseat \
             it; `lspci -vvv -s {bdf}` shows UESta; if it repeats, replace the card or move it to another slot"
        )
    }
}

/// One function's row; `true` when it is clean (folded into the node's row).
fn judge(
    f: &FunctionHealth,
    w: Option<&FunctionWindow>,
    (seconds, bits, uptime): (Option<f64>, Option<f64>, Option<u64>),
    sheet: &mut Sheet,
) -> bool {
    let mut problems: Vec<(Severity, String)> = Vec::new();
    let mut rows_named: Vec<String> = Vec::new();
    let mut observed: Vec<String> = Vec::new();
    for severity in AerSeverity::ALL {
        if let Some(file) = f.aer.get(&severity) {
            observed.push(said(file, severity, 2));
        }
    }
    let words = seconds.map(window_words);
    match (w, &words) {
        (Some(w), Some(words)) => window_problems(f, w, (words, bits), &mut problems, &mut rows_named, &mut observed),
        _ => lifetime_problems(f, uptime, &mut problems, &mut rows_named),
    }
    if let Some((netdev, c)) = &f.mlx5 {
        let counters: Vec<String> = c.counters().into_iter().filter(|(_, v)| *v > 0).map(|(n, v)| format!("{n} {v}")).collect();
        if !counters.is_empty() {
            observed.push(format!("{netdev}: {}", counters.join(", ")));
        }
        let si = c.rx_signal_integrity.unwrap_or(0).max(c.tx_signal_integrity.unwrap_or(0));
        if w.is_none() && si > SIGNAL_INTEGRITY_LIMIT {
            problems.push((
                Severity::Warning,
                format!(
                    "mlx5 counts {} PCIe link recoveries on framing and CRC errors (rx_pci_signal_integrity {}, tx_pci_signal_integrity {}, \
                     lifetime)",
                    si,
                    c.rx_signal_integrity.unwrap_or(0),
                    c.tx_signal_integrity.unwrap_or(0)
                ),
            ));
        }
        let stalled = c.stalled_rd_events.unwrap_or(0) + c.stalled_wr_events.unwrap_or(0);
        if stalled > 0 && w.is_none() {
            sheet.note(
                FindingId::PcieAer,
                &f.bdf,
                Severity::Info,
                format!(
                    "{}: for {stalled} seconds the NIC had PCIe reads or writes to send and no credits from the host \
                     (outbound_pci_stalled_rd_events {}, outbound_pci_stalled_wr_events {}): the host side of the link could not keep up",
                    f.label(),
                    c.stalled_rd_events.unwrap_or(0),
                    c.stalled_wr_events.unwrap_or(0)
                ),
                "check the slot's width and speed (pci.link), the CPU's PCIe/IOMMU settings and memory bandwidth; the NIC is not at fault",
            );
        }
    }
    if w.is_none() && seconds.is_none() {
        observed.push("lifetime".into());
    }
    let observed = observed.join("; ");
    let Some(worst) = problems.iter().map(|p| p.0).min() else {
        let counted = f.aer.values().any(|file| file.count() > 0) || f.mlx5.as_ref().is_some_and(|(_, c)| c.counters().iter().any(|(_, v)| *v > 0));
        if counted {
            sheet.pass(FindingId::PcieAer, &f.bdf, observed, Some(EXPECTED.into()));
            return false;
        }
        return true;
    };
    let mut message = format!("{}: {}", f.label(), problems.iter().map(|p| p.1.clone()).collect::<Vec<_>>().join("; "));
    let place = place(f);
    if !place.is_empty() {
        message.push_str(&format!("; {} is {place}", f.bdf));
    }
    if let Some(meaning) = rows_named.first().and_then(|r| aer::meaning(r)) {
        message.push_str(&format!(" ({} are {meaning})", rows_named[0]));
    }
    let rows: Vec<&str> = rows_named.iter().map(String::as_str).collect();
    sheet.fail(FindingId::PcieAer, &f.bdf, observed, Some(EXPECTED.into()), worst, message, remedy(f, &rows));
    false
}

fn lifetime_problems(f: &FunctionHealth, uptime: Option<u64>, problems: &mut Vec<(Severity, String)>, rows_named: &mut Vec<String>) {
    // A lifetime count is history (info with the span it covers); only a rise in a `--soak`
    // window is a warning or an error (issue #51).
    let span = crate::probe::pci::health::read::uptime_words(uptime);
    for severity in [AerSeverity::Fatal, AerSeverity::NonFatal] {
        let Some(file) = f.aer.get(&severity).filter(|file| file.count() > 0) else { continue };
        let rows = file.nonzero();
        rows_named.extend(rows.iter().map(|(r, _)| r.to_string()));
        let listing = if rows.is_empty() { format!("{} {}", severity.total_row(), file.count()) } else { rows_text(&rows) };
        problems.push((
            Severity::Info,
            format!(
                "{} {} uncorrectable errors {span}: {listing} (a lifetime count: `check --soak 10m` says whether they still happen)",
                file.count(),
                uncorrectable(severity)
            ),
        ));
    }
    if let Some(file) = f.aer.get(&AerSeverity::Correctable).filter(|file| file.count() > CORRECTABLE_LIMIT) {
        let rows = file.nonzero();
        rows_named.extend(rows.iter().take(3).map(|(r, _)| r.to_string()));
        problems.push((
            Severity::Warning,
            format!(
                "{} correctable errors since boot (more than {CORRECTABLE_LIMIT}), most of them {}",
                file.count(),
                rows_text(&rows[..rows.len().min(3)])
            ),
        ));
    }
}

fn window_problems(
    f: &FunctionHealth,
    w: &FunctionWindow,
    (words, bits): (&str, Option<f64>),
    problems: &mut Vec<(Severity, String)>,
    rows_named: &mut Vec<String>,
    observed: &mut Vec<String>,
) {
    let mut risen = Vec::new();
    for severity in [AerSeverity::Fatal, AerSeverity::NonFatal, AerSeverity::Correctable] {
        let rows: Vec<(&str, u64)> = w.rows.get(&severity).map(|r| r.iter().map(|(n, c)| (n.as_str(), *c)).collect()).unwrap_or_default();
        match w.aer.get(&severity) {
            Some(Rise::Rose(n)) => {
                rows_named.extend(rows.iter().map(|(r, _)| r.to_string()));
                let kind = if severity == AerSeverity::Correctable {
                    "correctable".to_string()
                } else {
                    format!("{} uncorrectable", uncorrectable(severity))
                };
                let listing = if rows.is_empty() { String::new() } else { format!(": {}", rows_text(&rows)) };
                risen.push(format!("+{n} {}", severity.name()));
                if severity == AerSeverity::Correctable {
                    problems.push(correctable_rate(*n, bits, words, &listing));
                } else {
                    problems.push((Severity::Error, format!("{n} {kind} errors during the {words} window{listing}")));
                }
            }
            Some(Rise::Reset) => problems
                .push((Severity::Info, format!("the {} counters went down during the window (cleared by a reset): not judged", severity.name()))),
            _ => {
                if let Some(file) = f.aer.get(&severity).filter(|file| file.count() > 0 && severity != AerSeverity::Correctable) {
                    rows_named.extend(file.nonzero().iter().map(|(r, _)| r.to_string()));
                    problems.push((
                        Severity::Info,
                        format!(
                            "{} {} uncorrectable errors before the window, none during it: {}",
                            file.count(),
                            uncorrectable(severity),
                            rows_text(&file.nonzero())
                        ),
                    ));
                }
            }
        }
    }
    for (name, rise) in &w.mlx5 {
        if let Rise::Rose(n) = rise {
            if name.contains("signal_integrity") {
                risen.push(format!("{name} +{n}"));
                problems.push((Severity::Error, format!("{name} rose by {n} during the {words} window (PCIe link recoveries now)")));
            }
        }
    }
    observed.insert(0, if risen.is_empty() { format!("none rose in {words}") } else { format!("{} in {words}", risen.join(", ")) });
}

/// Correctable errors over a window, judged as a bit error ratio against the link's bits
/// (PCIe Base spec: 1e-12; about one error a second at Gen5 x16 is within it): an error above,
/// a warning above a tenth of it, an info below. Without the link's figures: a warning.
fn correctable_rate(n: u64, bits: Option<f64>, words: &str, listing: &str) -> (Severity, String) {
    let Some(bits) = bits.filter(|b| *b > 0.0) else {
        return (
            Severity::Warning,
            format!("{n} correctable errors during the {words} window{listing} (the link's rate is not known, so not judged as a BER)"),
        );
    };
    let ber = n as f64 / bits;
    let severity = if ber > PCIE_BER {
        Severity::Error
    } else if ber > PCIE_BER / 10.0 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let against = match severity {
        Severity::Error => "above the PCIe Base spec's 1e-12",
        Severity::Warning => "within the PCIe Base spec's 1e-12 but above a tenth of it",
        Severity::Info => "within the PCIe Base spec's 1e-12",
    };
    (severity, format!("{n} correctable errors during the {words} window{listing}: a bit error ratio of {ber:.1e}, {against}"))
}

/// A window in words, as the port rules say theirs: `10 s`, `5 min`, `1 h`.
fn window_words(seconds: f64) -> String {
    if seconds >= 3600.0 && (seconds % 3600.0).abs() < 1.0 {
        format!("{:.0} h", seconds / 3600.0)
    } else if seconds >= 60.0 && (seconds % 60.0).abs() < 1.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{seconds:.0} s")
    }
}

fn uncorrectable(severity: AerSeverity) -> &'static str {
    if severity == AerSeverity::Fatal {
        "fatal"
    } else {
        "non-fatal"
    }
}

fn rows_text(rows: &[(&str, u64)]) -> String {
    rows.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", ")
}

/// `devlink.health`: a NIC reporter in `error`, or with errors counted, is a warning naming it.
fn devlink_health(health: &PcieHealth, soak: Option<&PcieSoak<'_>>, sheet: &mut Sheet) {
    let reporters = match &health.devlink {
        DevlinkRead::NotLooked => return,
        DevlinkRead::Unread(why) => {
            if !health.nics.is_empty() {
                sheet.skip(FindingId::DevlinkHealth, "node", why.clone());
            }
            return;
        }
        DevlinkRead::Read(reporters) => reporters,
    };
    let before = |r: &Reporter| match soak.map(|s| &s.start.devlink) {
        Some(DevlinkRead::Read(list)) => list.iter().find(|b| b.handle == r.handle && b.name == r.name).and_then(|b| b.errors),
        _ => None,
    };
    for (name, bdf) in &health.nics {
        let own: Vec<&Reporter> = reporters.iter().filter(|r| r.bdf.as_deref() == Some(bdf.as_str())).collect();
        if own.is_empty() {
            continue;
        }
        let names = own.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", ");
        let bad: Vec<String> = own.iter().filter(|r| r.unhealthy()).map(|r| reporter_words(r, before(r))).collect();
        if bad.is_empty() {
            sheet.pass(FindingId::DevlinkHealth, name, format!("{names}: healthy, no errors"), Some("healthy, no errors".into()));
            continue;
        }
        let first = own.iter().find(|r| r.unhealthy()).map_or("fw", |r| r.name.as_str());
        sheet.fail(
            FindingId::DevlinkHealth,
            name,
            bad.join("; "),
            Some("healthy, no errors".into()),
            Severity::Warning,
            format!("{name} ({bdf}): devlink health reporters say something went wrong: {}", bad.join("; ")),
            format!(
                "`devlink health diagnose pci/{bdf} reporter {first}` and `devlink health dump show pci/{bdf} reporter {first}` say what; \
                 fw/fw_fatal: a firmware error (the syndrome is in `dmesg | grep mlx5`): update the firmware (mlxfwmanager) and send \
                 the dump to support; tx/rx: queue timeouts or completion errors: look at pcie.aer and the host's load; a reporter \
                 left in error: `devlink health recover pci/{bdf} reporter NAME`"
            ),
        );
    }
}

fn reporter_words(r: &Reporter, before: Option<u64>) -> String {
    let state = match &r.state {
        ReporterState::Healthy => "healthy now".to_string(),
        ReporterState::Error => "in error".to_string(),
        ReporterState::Other(s) => format!("state {s}"),
    };
    let mut words = format!("{} {state}", r.name);
    if let Some(e) = r.errors {
        words.push_str(&format!(", {e} errors"));
        if let Some(b) = before.filter(|b| e > *b) {
            words.push_str(&format!(" ({} during the window)", e - b));
        }
    }
    if let Some(n) = r.recoveries {
        words.push_str(&format!(", {n} recovered"));
    }
    if let Some(d) = &r.last_dump {
        words.push_str(&format!(", last dump {d}"));
    }
    words
}

#[cfg(test)]
#[path = "pcie_rule_tests.rs"]
mod tests;
