//! The metrics page as a pure function of what one read of the node found (inventory,
//! counters, the check's report) and the exporter's own figures. Written once per read by the
//! refresh thread; a scrape only copies the finished text.

use crate::outcome::{Figure, FindingId, Measure, Report, Severity, Subject, Tally, Verdict};
use crate::port::{LinkLayer, PhysState, PortState};
use crate::probe::counters::CounterDir;
use crate::probe::phy::module::{Media, Module, DARK_DBM};
use crate::probe::phy::Phy;
use crate::probe::{Device, Inventory, Port};
pub use crate::report::prom::Exposition;
use crate::report::prom::{bytes_per_second, check_series, flag, PromPrinter};
use crate::report::Sink;
use std::collections::{BTreeMap, BTreeSet};

/// The counter files of one port, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortCounters {
    pub device: String,
    pub port: u32,
    pub values: Vec<(CounterDir, String, u64)>,
}

/// What one read of the node found.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// `None` when the node could not be read at all (`error` says why).
    pub inventory: Option<Inventory>,
    pub error: Option<String>,
    pub counters: Vec<PortCounters>,
    /// The check's report, when it ran.
    pub report: Option<Report>,
    /// The GPU (PCI address) each NIC serves, from the GPU↔NIC pairing, where the node has GPUs.
    pub gpu_of: BTreeMap<String, String>,
    /// PCIe health (AER counters), when it was read.
    pub pcie: Option<crate::probe::pci::health::PcieHealth>,
    /// A running burn-in's last interval (`--live-dir`), read every second.
    pub live: Vec<super::live::LiveFigure>,
}

/// The exporter's own figures, beside the reading.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub refreshed_unix_s: f64,
    pub duration_s: f64,
    pub interval_s: f64,
    pub refreshes: u64,
    pub failures: u64,
    /// Every device seen since the exporter started: one gone now is written as absent (0).
    pub seen: BTreeSet<String>,
}

/// What the page is written through: the prom printer, fed each figure as a typed reading.
struct Page<'p> {
    sink: &'p mut dyn Sink,
}

impl Page<'_> {
    /// One figure about `subject`, with `labels` beyond the subject's.
    fn put(&mut self, subject: &Subject, labels: &[(&'static str, &str)], figure: Figure<'_>, value: f64) {
        self.sink.measure(&Measure::Reading { subject, labels, figure, value });
    }

    /// One figure of the node (or of the exporter).
    fn node(&mut self, labels: &[(&'static str, &str)], figure: Figure<'_>, value: f64) {
        self.put(&Subject::Node, labels, figure, value);
    }
}

/// A port's subject and its labels beyond `device` and `port`: `netdev`/`gpu` where known.
struct PortLabels {
    subject: Subject,
    netdev: Option<String>,
    gpu: Option<String>,
}

impl PortLabels {
    fn with<'a>(&'a self, extra: &[(&'static str, &'a str)]) -> Vec<(&'static str, &'a str)> {
        let mut labels = Vec::new();
        if let Some(n) = &self.netdev {
            labels.push(("netdev", n.as_str()));
        }
        if let Some(g) = &self.gpu {
            labels.push(("gpu", g.as_str()));
        }
        labels.extend_from_slice(extra);
        labels
    }

    fn put(&self, page: &mut Page<'_>, extra: &[(&'static str, &str)], figure: Figure<'_>, value: f64) {
        page.put(&self.subject, &self.with(extra), figure, value);
    }
}

/// A running burn-in's last interval: one series per test, direction, size and endpoint.
fn write_live(page: &mut Page<'_>, live: &[super::live::LiveFigure]) {
    for f in live {
        let (size, pid) = (f.size.map(|s| s.to_string()).unwrap_or_default(), f.pid.to_string());
        let labels = [
            ("test", f.test.as_str()),
            ("direction", f.direction.as_deref().unwrap_or("")),
            ("size", size.as_str()),
            ("endpoint", f.endpoint.as_deref().unwrap_or("")),
            ("pid", pid.as_str()),
        ];
        page.node(&labels, Figure::LiveTimestamp, f.written_unix);
        if let Some(g) = f.gbps {
            page.node(&labels, Figure::LiveBandwidth, bytes_per_second(g));
        }
        if let (Some(p50), Some(p99)) = (f.p50_us, f.p99_us) {
            page.node(&labels, Figure::LiveLatencyP50, p50 * 1e-6);
            page.node(&labels, Figure::LiveLatencyP99, p99 * 1e-6);
        }
    }
}

/// The whole page: the prom printer ([`PromPrinter::exporter`]) fed what the reading found.
pub fn render(reading: &Reading, stats: &Stats, format: Exposition) -> String {
    let mut printer = PromPrinter::exporter();
    let mut page = Page { sink: &mut printer };
    page.node(&[], Figure::Up, flag(reading.inventory.is_some()));
    page.node(&[("version", env!("CARGO_PKG_VERSION"))], Figure::BuildInfo, 1.0);
    if let Some(error) = &reading.error {
        page.node(&[("cause", error)], Figure::RefreshError, 1.0);
    }
    page.node(&[], Figure::LastRefresh, stats.refreshed_unix_s);
    page.node(&[], Figure::RefreshDuration, stats.duration_s);
    page.node(&[], Figure::Interval, stats.interval_s);
    page.node(&[], Figure::Refreshes, stats.refreshes as f64);
    page.node(&[], Figure::RefreshFailures, stats.failures as f64);
    if let Some(inventory) = &reading.inventory {
        write_devices(&mut page, reading, inventory, stats);
    }
    write_live(&mut page, &reading.live);
    if let Some(report) = &reading.report {
        write_report(&mut page, report);
    }
    // AER: each file's TOTAL_ERR_* row always, the other rows where they counted something.
    for func in reading.pcie.iter().flat_map(|p| &p.functions) {
        let subject = Subject::Function(func.bdf.clone());
        for (severity, file) in &func.aer {
            for (row, n) in std::iter::once((severity.total_row(), file.count())).chain(file.nonzero()) {
                page.put(&subject, &[("severity", severity.name()), ("row", row)], Figure::PcieAer, n as f64);
            }
        }
    }
    printer.finish_page(format)
}

fn write_devices(page: &mut Page<'_>, reading: &Reading, inventory: &Inventory, stats: &Stats) {
    page.node(&[], Figure::Devices, inventory.devices.len() as f64);
    for name in &stats.seen {
        page.put(&Subject::device(name), &[], Figure::DevicePresent, flag(inventory.device(name).is_some()));
    }
    for d in &inventory.devices {
        if !stats.seen.contains(&d.name) {
            page.put(&Subject::device(&d.name), &[], Figure::DevicePresent, 1.0);
        }
    }
    for d in &inventory.devices {
        let device = Subject::device(&d.name);
        page.put(&device, &[("ca_type", &d.ca_type), ("fw_ver", &d.fw_ver), ("node_guid", &d.node_guid)], Figure::DeviceInfo, 1.0);
        if let Some(usable) = d.pci.as_ref().and_then(|p| p.usable_gbps) {
            page.put(&device, &[], Figure::PcieUsable, bytes_per_second(usable));
        }
    }
    let trained = trained_low(reading.report.as_ref());
    for (d, p) in inventory.ports() {
        let labels = PortLabels { subject: Subject::port(&d.name, p.port), netdev: p.netdev.clone(), gpu: reading.gpu_of.get(&d.name).cloned() };
        write_port(page, d, p, &labels, trained.get(&labels.subject).copied());
        if let Some(phy) = &p.phy {
            write_phy(page, phy, &labels);
        }
        if let Some(counters) = reading.counters.iter().find(|c| c.device == d.name && c.port == p.port) {
            // Two files may come to one name (`a-b` and `a.b` are both `a_b`, `x` and
            // `x_total` both `x_total`): the first is written (the page keeps a series' first
            // reading), never a second series of the same name and labels, which would make
            // the page fail to parse (issue #58).
            for (dir, file, value) in &counters.values {
                labels.put(page, &[], Figure::Counter { dir: *dir, file, count: *value }, 0.0);
            }
        }
    }
}

fn write_port(page: &mut Page<'_>, d: &Device, p: &Port, labels: &PortLabels, trained_low: Option<bool>) {
    let (width, speed) = (p.width.name(), p.speed.name());
    labels.put(page, &[("link_layer", &p.link_layer.name()), ("width", &width), ("speed", &speed)], Figure::PortInfo, 1.0);
    labels.put(page, &[], Figure::PortState, f64::from(p.state.raw()));
    labels.put(page, &[], Figure::PortActive, flag(p.state == PortState::Active));
    labels.put(page, &[], Figure::PortPhysState, f64::from(p.phys_state.raw()));
    labels.put(page, &[], Figure::PortLinkUp, flag(p.phys_state == PhysState::LinkUp));
    if let Some(rate) = p.rate_gbps {
        labels.put(page, &[], Figure::PortRate, bytes_per_second(rate));
        let pcie = d.pci.as_ref().and_then(|x| x.usable_gbps);
        labels.put(page, &[], Figure::PortCapacity, bytes_per_second(crate::probe::capacity::capacity(rate, pcie).gbps));
    }
    if let Some(best) = supported_gbps(p) {
        labels.put(page, &[], Figure::PortSupported, bytes_per_second(best));
    }
    if let Some(low) = trained_low {
        labels.put(page, &[], Figure::PortTrainedLow, flag(low));
    }
    if let Some(mtu) = p.active_mtu {
        labels.put(page, &[], Figure::PortMtu, f64::from(mtu));
    }
}

/// The physical layer's figures as the inventory read them (the refresh thread ran ethtool or
/// read the bundle's reports; a scrape never does). A figure not read has no series.
fn write_phy(page: &mut Page<'_>, phy: &Phy, labels: &PortLabels) {
    if let Some(mode) = phy.fec {
        labels.put(page, &[("mode", &mode.to_string())], Figure::PhyFecInfo, 1.0);
    }
    let gauges = [(Figure::PhyBerRaw, phy.ber_raw), (Figure::PhyBerEffective, phy.ber_effective)];
    for (figure, value) in gauges {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            labels.put(page, &[], figure, v);
        }
    }
    let counts = [
        (Figure::PhySymbolErrors, phy.symbol_errors.map(|n| n as f64)),
        (Figure::PhyCorrectedBits, phy.corrected_bits.map(|n| n as f64)),
        (Figure::PhyReceived, phy.received_bits.map(|n| n as f64 / 8.0)),
        (Figure::PhyFecCorrected, phy.fec_corrected_blocks.map(|n| n as f64)),
        (Figure::PhyFecUncorrectable, phy.fec_uncorrectable_blocks.map(|n| n as f64)),
        (Figure::PhyLinkDown, phy.link_down_events.map(|n| n as f64)),
    ];
    for (figure, value) in counts {
        if let Some(v) = value {
            labels.put(page, &[], figure, v);
        }
    }
    for (i, errors) in phy.lane_errors.iter().enumerate() {
        let lane = (i + 1).to_string();
        labels.put(page, &[("lane", &lane)], Figure::PhyLaneErrors, *errors as f64);
    }
    if let Some(m) = &phy.module {
        write_module(page, m, labels);
    }
}

fn write_module(page: &mut Page<'_>, m: &Module, labels: &PortLabels) {
    let media = m.media.map(|x| match x {
        Media::Copper => "copper",
        Media::Optical => "optical",
    });
    let identity = [
        ("type", m.kind.as_deref()),
        ("vendor", m.vendor.as_deref()),
        ("part", m.part.as_deref()),
        ("serial", m.serial.as_deref()),
        ("media", media),
    ];
    let identity: Vec<(&'static str, &str)> = identity.into_iter().filter_map(|(k, v)| Some((k, v.filter(|v| !v.is_empty())?))).collect();
    labels.put(page, &identity, Figure::ModuleInfo, 1.0);
    if let Some(t) = m.temperature_c.filter(|t| t.is_finite()) {
        labels.put(page, &[], Figure::ModuleTemperature, t);
    }
    let lanes = [
        (Figure::ModuleRxPower, m.rx_power_dbm.as_deref(), dbm_to_watts as fn(f64) -> f64),
        (Figure::ModuleTxPower, m.tx_power_dbm.as_deref(), dbm_to_watts),
        (Figure::ModuleTxBias, m.tx_bias_ma.as_deref(), |ma| ma / 1000.0),
    ];
    for (figure, values, convert) in lanes {
        for (i, value) in values.unwrap_or_default().iter().enumerate() {
            // A lane the module does not report has no series.
            if let Some(v) = value.filter(|v| v.is_finite()) {
                let lane = (i + 1).to_string();
                labels.put(page, &[("lane", &lane)], figure, convert(v));
            }
        }
    }
}

/// dBm as watts, Prometheus's base unit (0 dBm is 1 mW); a dark lane ([`DARK_DBM`], which
/// stands for no light at all) is 0 W.
fn dbm_to_watts(dbm: f64) -> f64 {
    if dbm <= DARK_DBM {
        0.0
    } else {
        10f64.powf(dbm / 10.0) / 1000.0
    }
}

/// check's `link.trained` per port: `true` where it failed (trained below what both ends
/// support and enable), `false` where it passed, a warning included (a port at what its partner
/// offers, or whose partner could not be read). A port whose row was skipped, or that has none,
/// is not in it: unknown is not "not low". The same rows as `fabcheck_check_pass`
/// ([`check_series`]), so the two cannot disagree.
fn trained_low(report: Option<&Report>) -> BTreeMap<Subject, bool> {
    let rows = report.map(|r| check_series(&r.checks, false)).unwrap_or_default();
    rows.into_iter().filter(|(id, _, _)| *id == FindingId::LinkTrained).map(|(_, subject, pass)| (subject, !pass)).collect()
}

/// The fastest link the port supports, Gb/s: Ethernet from ethtool, InfiniBand from its
/// supported width and speed.
fn supported_gbps(p: &Port) -> Option<f64> {
    if p.link_layer == LinkLayer::Ethernet {
        return p.supported_gbps;
    }
    let lanes = p.width_supported?.lanes()?;
    Some(f64::from(lanes) * p.speed_supported?.data_lane_gbps()?)
}

/// The check's verdict, its checklist (the same series as `check --format prom`: a skipped row
/// has none), each finding once, and how many of each severity.
fn write_report(page: &mut Page<'_>, report: &Report) {
    page.node(&[], Figure::Verdict, flag(report.verdict == Verdict::Pass));
    report.checks.iter().for_each(|c| page.sink.check(c));
    report.findings.iter().for_each(|f| page.sink.finding(f));
    for severity in [Severity::Error, Severity::Warning, Severity::Info] {
        let count = report.findings.iter().filter(|x| x.severity == severity).count();
        page.sink.tally(&Tally::Findings { severity, count });
    }
}

#[cfg(test)]
#[path = "page_tests.rs"]
mod tests;
