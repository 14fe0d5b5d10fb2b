//! The metrics page as a pure function of what one read of the node found (inventory,
//! counters, the check's report) and the exporter's own figures. Written once per read by the
//! refresh thread; a scrape only copies the finished text.

use crate::outcome::{FindingId, Report, Severity, Subject, Verdict};
use crate::port::{LinkLayer, PhysState, PortState};
use crate::probe::phy::module::{Media, Module, DARK_DBM};
use crate::probe::phy::Phy;
use crate::probe::{Device, Inventory, Port};
use crate::report::prom::metrics::{self, CounterDir, Kind};
pub use crate::report::prom::Exposition;
use crate::report::prom::{bytes_per_second, check_series, flag, severity_name, Families, Order, Repeat};
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

/// The port labels: `device`, `port`, and `netdev`/`gpu` where they are known.
struct PortLabels {
    device: String,
    port: String,
    netdev: Option<String>,
    gpu: Option<String>,
}

impl PortLabels {
    fn with<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut labels = vec![("device", self.device.as_str()), ("port", self.port.as_str())];
        if let Some(n) = &self.netdev {
            labels.push(("netdev", n));
        }
        if let Some(g) = &self.gpu {
            labels.push(("gpu", g));
        }
        labels.extend_from_slice(extra);
        labels
    }
}

/// The whole page.
pub fn render(reading: &Reading, stats: &Stats, format: Exposition) -> String {
    let mut f = Families::new(Order::AsAdded, Repeat::KeepFirst);
    f.set(&metrics::UP, &[], flag(reading.inventory.is_some()));
    f.set(&metrics::BUILD_INFO, &[("version", env!("CARGO_PKG_VERSION"))], 1.0);
    if let Some(error) = &reading.error {
        f.set(&metrics::REFRESH_ERROR, &[("cause", error)], 1.0);
    }
    f.set(&metrics::LAST_REFRESH, &[], stats.refreshed_unix_s);
    f.set(&metrics::REFRESH_DURATION, &[], stats.duration_s);
    f.set(&metrics::INTERVAL, &[], stats.interval_s);
    f.set(&metrics::REFRESHES, &[], stats.refreshes as f64);
    f.set(&metrics::REFRESH_FAILURES, &[], stats.failures as f64);
    if let Some(inventory) = &reading.inventory {
        write_devices(&mut f, reading, inventory, stats);
    }
    if let Some(report) = &reading.report {
        write_report(&mut f, report);
    }
    // AER: each file's TOTAL_ERR_* row always, the other rows where they counted something.
    for func in reading.pcie.iter().flat_map(|p| &p.functions) {
        for (severity, file) in &func.aer {
            for (row, n) in std::iter::once((severity.total_row(), file.count())).chain(file.nonzero()) {
                f.set(&metrics::PCIE_AER, &[("function", func.bdf.as_str()), ("severity", severity.name()), ("row", row)], n as f64);
            }
        }
    }
    f.render(format)
}

fn write_devices(f: &mut Families, reading: &Reading, inventory: &Inventory, stats: &Stats) {
    f.set(&metrics::DEVICES, &[], inventory.devices.len() as f64);
    for name in &stats.seen {
        f.set(&metrics::DEVICE_PRESENT, &[("device", name)], flag(inventory.device(name).is_some()));
    }
    for d in &inventory.devices {
        if !stats.seen.contains(&d.name) {
            f.set(&metrics::DEVICE_PRESENT, &[("device", &d.name)], 1.0);
        }
    }
    for d in &inventory.devices {
        f.set(&metrics::DEVICE_INFO, &[("device", &d.name), ("ca_type", &d.ca_type), ("fw_ver", &d.fw_ver), ("node_guid", &d.node_guid)], 1.0);
        if let Some(usable) = d.pci.as_ref().and_then(|p| p.usable_gbps) {
            f.set(&metrics::PCIE_USABLE, &[("device", &d.name)], bytes_per_second(usable));
        }
    }
    let trained = trained_low(reading.report.as_ref());
    for (d, p) in inventory.ports() {
        let labels =
            PortLabels { device: d.name.clone(), port: p.port.to_string(), netdev: p.netdev.clone(), gpu: reading.gpu_of.get(&d.name).cloned() };
        write_port(f, d, p, &labels, trained.get(&Subject::port(&d.name, p.port)).copied());
        if let Some(phy) = &p.phy {
            write_phy(f, phy, &labels);
        }
        if let Some(counters) = reading.counters.iter().find(|c| c.device == d.name && c.port == p.port) {
            // Two files may come to one name (`a-b` and `a.b` are both `a_b`, `x` and
            // `x_total` both `x_total`): the first is written, never a second series of the
            // same name and labels, which would make the page fail to parse (issue #58).
            let mut written = std::collections::HashSet::new();
            for (dir, file, value) in &counters.values {
                if let Some(m) = metrics::counter_metric(*dir, file).filter(|m| written.insert(m.name.clone())) {
                    f.set_named(&m.name, Kind::Counter, &m.help, &labels.with(&[]), value.saturating_mul(m.scale) as f64);
                }
            }
        }
    }
}

fn write_port(f: &mut Families, d: &Device, p: &Port, labels: &PortLabels, trained_low: Option<bool>) {
    let (width, speed) = (p.width.name(), p.speed.name());
    f.set(&metrics::PORT_INFO, &labels.with(&[("link_layer", &p.link_layer.name()), ("width", &width), ("speed", &speed)]), 1.0);
    f.set(&metrics::PORT_STATE, &labels.with(&[]), f64::from(p.state.raw()));
    f.set(&metrics::PORT_ACTIVE, &labels.with(&[]), flag(p.state == PortState::Active));
    f.set(&metrics::PORT_PHYS_STATE, &labels.with(&[]), f64::from(p.phys_state.raw()));
    f.set(&metrics::PORT_LINK_UP, &labels.with(&[]), flag(p.phys_state == PhysState::LinkUp));
    if let Some(rate) = p.rate_gbps {
        f.set(&metrics::PORT_RATE, &labels.with(&[]), bytes_per_second(rate));
        let pcie = d.pci.as_ref().and_then(|x| x.usable_gbps);
        f.set(&metrics::PORT_CAPACITY, &labels.with(&[]), bytes_per_second(crate::probe::capacity::capacity(rate, pcie).gbps));
    }
    if let Some(best) = supported_gbps(p) {
        f.set(&metrics::PORT_SUPPORTED, &labels.with(&[]), bytes_per_second(best));
    }
    if let Some(low) = trained_low {
        f.set(&metrics::PORT_TRAINED_LOW, &labels.with(&[]), flag(low));
    }
    if let Some(mtu) = p.active_mtu {
        f.set(&metrics::PORT_MTU, &labels.with(&[]), f64::from(mtu));
    }
}

/// The physical layer's figures as the inventory read them (the refresh thread ran ethtool or
/// read the bundle's reports; a scrape never does). A figure not read has no series.
fn write_phy(f: &mut Families, phy: &Phy, labels: &PortLabels) {
    if let Some(mode) = phy.fec {
        f.set(&metrics::PHY_FEC_INFO, &labels.with(&[("mode", &mode.to_string())]), 1.0);
    }
    let gauges = [(&metrics::PHY_BER_RAW, phy.ber_raw), (&metrics::PHY_BER_EFFECTIVE, phy.ber_effective)];
    for (metric, value) in gauges {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            f.set(metric, &labels.with(&[]), v);
        }
    }
    let counts = [
        (&metrics::PHY_SYMBOL_ERRORS, phy.symbol_errors.map(|n| n as f64)),
        (&metrics::PHY_CORRECTED_BITS, phy.corrected_bits.map(|n| n as f64)),
        (&metrics::PHY_RECEIVED, phy.received_bits.map(|n| n as f64 / 8.0)),
        (&metrics::PHY_FEC_CORRECTED, phy.fec_corrected_blocks.map(|n| n as f64)),
        (&metrics::PHY_FEC_UNCORRECTABLE, phy.fec_uncorrectable_blocks.map(|n| n as f64)),
        (&metrics::PHY_LINK_DOWN, phy.link_down_events.map(|n| n as f64)),
    ];
    for (metric, value) in counts {
        if let Some(v) = value {
            f.set(metric, &labels.with(&[]), v);
        }
    }
    for (i, errors) in phy.lane_errors.iter().enumerate() {
        let lane = (i + 1).to_string();
        f.set(&metrics::PHY_LANE_ERRORS, &labels.with(&[("lane", &lane)]), *errors as f64);
    }
    if let Some(m) = &phy.module {
        write_module(f, m, labels);
    }
}

fn write_module(f: &mut Families, m: &Module, labels: &PortLabels) {
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
    let identity: Vec<(&str, &str)> = identity.into_iter().filter_map(|(k, v)| Some((k, v.filter(|v| !v.is_empty())?))).collect();
    f.set(&metrics::MODULE_INFO, &labels.with(&identity), 1.0);
    if let Some(t) = m.temperature_c.filter(|t| t.is_finite()) {
        f.set(&metrics::MODULE_TEMPERATURE, &labels.with(&[]), t);
    }
    let lanes = [
        (&metrics::MODULE_RX_POWER, m.rx_power_dbm.as_deref(), dbm_to_watts as fn(f64) -> f64),
        (&metrics::MODULE_TX_POWER, m.tx_power_dbm.as_deref(), dbm_to_watts),
        (&metrics::MODULE_TX_BIAS, m.tx_bias_ma.as_deref(), |ma| ma / 1000.0),
    ];
    for (metric, values, convert) in lanes {
        for (i, value) in values.unwrap_or_default().iter().enumerate() {
            // A lane the module does not report has no series.
            if let Some(v) = value.filter(|v| v.is_finite()) {
                let lane = (i + 1).to_string();
                f.set(metric, &labels.with(&[("lane", &lane)]), convert(v));
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

fn write_report(f: &mut Families, report: &Report) {
    f.set(&metrics::VERDICT, &[], flag(report.verdict == Verdict::Pass));
    // The same series as `check --format prom` (a skipped row has none), from the same function.
    for (id, subject, pass) in check_series(&report.checks, false) {
        f.set(&metrics::CHECK, &[("id", id.as_str()), ("subject", &subject.to_string())], flag(pass));
    }
    for finding in &report.findings {
        let severity = severity_name(finding.severity);
        f.set(&metrics::FINDING, &[("id", finding.id.as_str()), ("severity", severity), ("subject", &finding.subject.to_string())], 1.0);
    }
    for severity in [Severity::Error, Severity::Warning, Severity::Info] {
        let count = report.findings.iter().filter(|x| x.severity == severity).count();
        f.set(&metrics::FINDINGS, &[("severity", severity_name(severity))], count as f64);
    }
}

#[cfg(test)]
#[path = "page_tests.rs"]
mod tests;
