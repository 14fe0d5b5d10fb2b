//! The one table of fabcheck's Prometheus metric names: the exporter writes from it, and so
//! does `--format prom` of every other command (`report::formats::prom`). docs/ci.md ("Metric
//! names") shows it as a table, rendered by [`markdown`] and checked against it by a test, so the
//! page, the formats and the docs cannot drift apart.
//!
//! Names follow Prometheus's conventions so that `promtool check metrics` is clean: the prefix
//! `fabcheck_`, base units (`_bytes`, `_seconds`, `_bytes_per_second`), `_total` on counters.
//! Port series carry `device`, `port` and, when they can be filled, `netdev` and `gpu`; a label
//! that cannot be filled is left out rather than written empty.

/// Prometheus metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// One metric family of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    /// The exporter's labels beyond the port labels (`device`, `port`, `netdev`, `gpu`) where
    /// it has them.
    pub labels: &'static str,
    pub help: &'static str,
    /// Whether the exporter's page has the family.
    pub exporter: bool,
    /// The labels `--format prom` of the commands writes it with (beyond `device`/`port` on a
    /// port's series), `None` when no command writes it.
    pub format_labels: Option<&'static str>,
}

impl Metric {
    /// The same family, written by `--format prom` too, with these labels.
    const fn also_in_formats(self, labels: &'static str) -> Metric {
        Metric { format_labels: Some(labels), ..self }
    }
}

const fn gauge(name: &'static str, labels: &'static str, help: &'static str) -> Metric {
    Metric { name, kind: Kind::Gauge, labels, help, exporter: true, format_labels: None }
}

const fn counter(name: &'static str, labels: &'static str, help: &'static str) -> Metric {
    Metric { name, kind: Kind::Counter, labels, help, exporter: true, format_labels: None }
}

/// A family only `--format prom` of the commands writes (a run's measurements).
const fn run_gauge(name: &'static str, labels: &'static str, help: &'static str) -> Metric {
    Metric { name, kind: Kind::Gauge, labels: "", help, exporter: false, format_labels: Some(labels) }
}

pub const UP: Metric = gauge(
    "fabcheck_up",
    "",
    "1 when the last read of the node (or the run) worked, 0 when it could not run (see fabcheck_exporter_refresh_error, fabcheck_run_error).",
)
.also_in_formats("command");
pub const BUILD_INFO: Metric = gauge("fabcheck_build_info", "version", "Always 1; the fabcheck version serving this page.");
pub const REFRESH_ERROR: Metric = gauge("fabcheck_exporter_refresh_error", "cause", "1 with the cause when the last read of the node failed.");
pub const LAST_REFRESH: Metric =
    gauge("fabcheck_exporter_last_refresh_timestamp_seconds", "", "When the figures on this page were read (Unix time).");
pub const REFRESH_DURATION: Metric =
    gauge("fabcheck_exporter_refresh_duration_seconds", "", "How long the last read of the node and its check took.");
pub const INTERVAL: Metric = gauge("fabcheck_exporter_interval_seconds", "", "How often the exporter re-reads the node (--interval).");
pub const REFRESHES: Metric = counter("fabcheck_exporter_refreshes_total", "", "Reads of the node since the exporter started.");
pub const REFRESH_FAILURES: Metric = counter("fabcheck_exporter_refresh_failures_total", "", "Reads of the node that could not run.");
pub const DEVICES: Metric = gauge("fabcheck_devices", "", "RDMA devices present at the last read.");
pub const DEVICE_PRESENT: Metric =
    gauge("fabcheck_device_present", "device", "1 while the device is present, 0 once a device seen since the exporter started is gone.");
pub const DEVICE_INFO: Metric = gauge("fabcheck_device_info", "device,ca_type,fw_ver,node_guid", "Always 1; what the device is.");
pub const PCIE_USABLE: Metric =
    gauge("fabcheck_device_pcie_usable_bytes_per_second", "device", "What the adapter's PCIe link carries after encoding and TLP overhead.")
        .also_in_formats("");
pub const PORT_INFO: Metric = gauge("fabcheck_port_info", "link_layer,width,speed", "Always 1; the port's link layer, active width and speed.");
pub const PORT_STATE: Metric = gauge("fabcheck_port_state", "", "Logical port state as IBTA numbers it: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE.");
pub const PORT_ACTIVE: Metric = gauge("fabcheck_port_active", "", "1 when the port is ACTIVE.").also_in_formats("");
pub const PORT_PHYS_STATE: Metric =
    gauge("fabcheck_port_physical_state", "", "Physical port state as IBTA numbers it: 2 POLLING, 3 DISABLED, 5 LINK_UP, 6 ERROR_RECOVERY.");
pub const PORT_LINK_UP: Metric = gauge("fabcheck_port_link_up", "", "1 when the physical link is up (LINK_UP).").also_in_formats("");
pub const PORT_RATE: Metric =
    gauge("fabcheck_port_rate_bytes_per_second", "", "Data rate of the port's link after line encoding (a 200 Gb/s link is 25e9).")
        .also_in_formats("");
pub const PORT_SUPPORTED: Metric =
    gauge("fabcheck_port_supported_rate_bytes_per_second", "", "Data rate of the fastest link the port supports, when it says.").also_in_formats("");
pub const PORT_CAPACITY: Metric =
    gauge("fabcheck_port_capacity_bytes_per_second", "", "What traffic through the port can reach: the smaller of the link rate and the PCIe link.");
pub const PORT_TRAINED_LOW: Metric =
    gauge("fabcheck_port_trained_below_supported", "", "1 when the link trained below the width or speed the port supports.");
pub const PORT_MTU: Metric = gauge("fabcheck_port_mtu_bytes", "", "Active MTU of the port, when the source says.");
// The physical layer (`Port.phy`, Ethernet ports with ethtool reports), each written only where
// the figure was read. Data counts are bytes, optical power watts, bias amperes.
pub const PHY_FEC_INFO: Metric = gauge("fabcheck_port_phy_fec_info", "mode", "Always 1; the FEC the link runs (RS-544, RS-528, BaseR, LLRS, off).");
pub const PHY_BER_RAW: Metric =
    gauge("fabcheck_port_phy_ber_raw_ratio", "", "Pre-FEC bit error ratio: bits the FEC corrected over bits received, since the counters began.");
pub const PHY_BER_EFFECTIVE: Metric =
    gauge("fabcheck_port_phy_ber_effective_ratio", "", "Post-FEC bit error ratio: symbol errors the FEC could not correct over bits received.");
pub const PHY_SYMBOL_ERRORS: Metric = counter("fabcheck_port_phy_symbol_errors_total", "", "Symbol errors the FEC could not correct (ethtool -S).");
pub const PHY_CORRECTED_BITS: Metric =
    counter("fabcheck_port_phy_corrected_bit_errors_total", "", "Bit errors the FEC corrected (ethtool -S rx_corrected_bits_phy).");
pub const PHY_RECEIVED: Metric =
    counter("fabcheck_port_phy_received_bytes_total", "", "Bytes received at the physical layer (the BER's denominator, in bits, divided by 8).");
pub const PHY_LANE_ERRORS: Metric =
    counter("fabcheck_port_phy_lane_corrected_errors_total", "lane", "Errors the FEC corrected on the lane (lanes numbered from 1).");
pub const PHY_FEC_CORRECTED: Metric = counter("fabcheck_port_phy_fec_corrected_blocks_total", "", "FEC codewords (blocks) corrected.");
pub const PHY_FEC_UNCORRECTABLE: Metric =
    counter("fabcheck_port_phy_fec_uncorrectable_blocks_total", "", "FEC codewords (blocks) the FEC could not correct.");
pub const PHY_LINK_DOWN: Metric =
    counter("fabcheck_port_phy_link_down_events_total", "", "Times the physical link went down (ethtool -S link_down_events_phy).");
pub const MODULE_INFO: Metric = gauge(
    "fabcheck_port_module_info",
    "type,vendor,part,serial,media",
    "Always 1; the transceiver or cable in the port (labels it does not say are left out).",
);
pub const MODULE_TEMPERATURE: Metric = gauge("fabcheck_port_module_temperature_celsius", "", "Temperature the module reports.");
pub const MODULE_RX_POWER: Metric = gauge(
    "fabcheck_port_module_rx_power_watts",
    "lane",
    "Optical power the module receives on the lane, in watts (1 mW is 0 dBm; a dark lane is 0).",
);
pub const MODULE_TX_POWER: Metric =
    gauge("fabcheck_port_module_tx_power_watts", "lane", "Optical power the module sends on the lane, in watts (1 mW is 0 dBm; a dark lane is 0).");
pub const MODULE_TX_BIAS: Metric = gauge("fabcheck_port_module_tx_bias_amperes", "lane", "Laser bias current of the lane, in amperes.");
pub const PCIE_AER: Metric = counter(
    "fabcheck_pcie_aer_errors_total",
    "function,severity,row",
    "AER errors the kernel counted on a PCI function (NIC, GPU, bridge between them) since boot: row TOTAL_ERR_* is its ERR_* messages, other rows (named as the kernel names them) only where non-zero.",
);
pub const VERDICT: Metric =
    gauge("fabcheck_verdict_pass", "", "1 when the last check (or the run) passed, 0 when it failed.").also_in_formats("command");
pub const CHECK: Metric = gauge(
    "fabcheck_check_pass",
    "id,subject",
    "1 when a check row of the last check passed (or was skipped), 0 when it failed or an error finding has its id and subject.",
)
.also_in_formats("id,subject");
pub const FINDING: Metric =
    gauge("fabcheck_finding", "id,severity,subject", "A finding of the last check (1 per finding).").also_in_formats("command,id,severity,subject");
pub const FINDINGS: Metric = gauge("fabcheck_findings", "severity", "How many findings of each severity the last check made.");
// A run's own figures, written by `--format prom` of pair, mesh, fabric (the exporter measures
// nothing). Rates in bytes per second and latencies in seconds: promtool's lint refuses `_bits`
// ("use base unit bytes") and abbreviated units (`_us`).
pub const RUN_ERROR: Metric =
    run_gauge("fabcheck_run_error", "command,cause", "1 with the cause when the run could not run (exit 2); fabcheck_up is then 0.");
pub const LAST_RUN: Metric = run_gauge("fabcheck_last_run_timestamp_seconds", "command", "When this run ended (Unix time).");
pub const BANDWIDTH: Metric = run_gauge(
    "fabcheck_bandwidth_bytes_per_second",
    "a,b,test,direction,size",
    "Measured bandwidth of a test (a 200 Gb/s link is 25e9; a and b on mesh's series only).",
);
pub const LATENCY_P50: Metric =
    run_gauge("fabcheck_latency_p50_seconds", "a,b,test,direction,size", "Typical (p50) latency of a test (a and b on mesh's series only).");
pub const LATENCY_P99: Metric =
    run_gauge("fabcheck_latency_p99_seconds", "a,b,test,direction,size", "p99 latency of a test (a and b on mesh's series only).");
pub const MESH_PAIR_PASS: Metric = run_gauge("fabcheck_mesh_pair_pass", "a,b", "1 when the mesh pair passed, 0 when it failed.");
pub const MESH_SUSPECTS: Metric = run_gauge("fabcheck_mesh_suspects", "kind", "Suspects the mesh named, by kind (every kind, 0 when none).");
pub const MESH_UNREACHABLE: Metric = run_gauge("fabcheck_mesh_unreachable", "", "Endpoints whose agent could not be reached.");
pub const MESH_ENDPOINTS: Metric = run_gauge("fabcheck_mesh_endpoints", "", "Endpoints of the mesh.");
pub const FABRIC_LINKS: Metric = run_gauge("fabcheck_fabric_links", "", "Links the fabric discovery found.");

/// Every fixed family, in the order the page writes them (the counter families,
/// [`counter_metric`], follow them), then those only the commands' `--format prom` writes.
pub const TABLE: &[Metric] = &[
    UP,
    BUILD_INFO,
    REFRESH_ERROR,
    LAST_REFRESH,
    REFRESH_DURATION,
    INTERVAL,
    REFRESHES,
    REFRESH_FAILURES,
    DEVICES,
    DEVICE_PRESENT,
    DEVICE_INFO,
    PCIE_USABLE,
    PORT_INFO,
    PORT_STATE,
    PORT_ACTIVE,
    PORT_PHYS_STATE,
    PORT_LINK_UP,
    PORT_RATE,
    PORT_SUPPORTED,
    PORT_CAPACITY,
    PORT_TRAINED_LOW,
    PORT_MTU,
    PHY_FEC_INFO,
    PHY_BER_RAW,
    PHY_BER_EFFECTIVE,
    PHY_SYMBOL_ERRORS,
    PHY_CORRECTED_BITS,
    PHY_RECEIVED,
    PHY_LANE_ERRORS,
    PHY_FEC_CORRECTED,
    PHY_FEC_UNCORRECTABLE,
    PHY_LINK_DOWN,
    MODULE_INFO,
    MODULE_TEMPERATURE,
    MODULE_RX_POWER,
    MODULE_TX_POWER,
    MODULE_TX_BIAS,
    PCIE_AER,
    VERDICT,
    CHECK,
    FINDING,
    FINDINGS,
    RUN_ERROR,
    LAST_RUN,
    BANDWIDTH,
    LATENCY_P50,
    LATENCY_P99,
    MESH_PAIR_PASS,
    MESH_SUSPECTS,
    MESH_UNREACHABLE,
    MESH_ENDPOINTS,
    FABRIC_LINKS,
];

/// A 0.2 `--format prom` name and the table's family that replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deprecated {
    pub old: &'static str,
    pub new: Metric,
    /// Still written beside the new one (0.3 only). The `_us` latencies are not: promtool's
    /// lint refuses them, and a clean `promtool check metrics` is the contract's promise.
    pub written: bool,
}

/// 0.2's names, kept one release where promtool accepts them (docs/ci.md marks them deprecated).
pub const DEPRECATED: &[Deprecated] = &[
    Deprecated { old: "fabcheck_port_rate_gbps", new: PORT_RATE, written: true },
    Deprecated { old: "fabcheck_port_supported_gbps", new: PORT_SUPPORTED, written: true },
    Deprecated { old: "fabcheck_pcie_usable_gbps", new: PCIE_USABLE, written: true },
    Deprecated { old: "fabcheck_bandwidth_gbps", new: BANDWIDTH, written: true },
    Deprecated { old: "fabcheck_latency_p50_us", new: LATENCY_P50, written: false },
    Deprecated { old: "fabcheck_latency_p99_us", new: LATENCY_P99, written: false },
];

/// The table as docs/ci.md shows it (Markdown), and the deprecated names after it.
pub fn markdown() -> String {
    let cell = |labels: &str| labels.split(',').filter(|l| !l.is_empty()).map(|l| format!("`{}`", l.trim())).collect::<Vec<_>>().join(", ");
    let mut out = String::from(
        "| metric | type | exporter labels (beyond the port's) | `--format prom` labels (beyond the port's) | what |\n|---|---|---|---|---|\n",
    );
    for m in TABLE {
        let exporter = if m.exporter { cell(m.labels) } else { "—".to_string() };
        let format = m.format_labels.map_or("—".to_string(), cell);
        out.push_str(&format!("| `{}` | {} | {exporter} | {format} | {} |\n", m.name, m.kind.name(), m.help));
    }
    out.push_str("\n| 0.2 name (deprecated, removed in 0.4) | use | still written in 0.3 |\n|---|---|---|\n");
    for d in DEPRECATED {
        let written = if d.written { "yes, beside the new name (same value in the old unit)" } else { "no: promtool refuses `_us`" };
        out.push_str(&format!("| `{}` | `{}` | {written} |\n", d.old, d.new.name));
    }
    out
}

pub use crate::probe::counters::CounterDir;

/// The family a sysfs counter file is exported as.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterMetric {
    pub name: String,
    /// What one count is worth in the family's unit (4 for the data counters, which count
    /// 4-byte words).
    pub scale: u64,
    pub help: String,
}

/// The data counters: they count 4-byte words (IBTA PortXmitData/PortRcvData), exported in bytes.
const WORD_COUNTERS: [(&str, &str, &str); 2] = [
    ("port_xmit_data", "fabcheck_port_xmit_data_bytes_total", "Bytes sent through the port (counters/port_xmit_data x 4)."),
    ("port_rcv_data", "fabcheck_port_rcv_data_bytes_total", "Bytes received through the port (counters/port_rcv_data x 4)."),
];

/// Files in `hw_counters/` that are settings, not counters.
const NOT_COUNTERS: [&str; 1] = ["lifespan"];

/// The family for counter file `file` of `dir`: one family per counter, `_total`, in bytes
/// for the data counters. `None` for a file that is not a counter, or whose name cannot be
/// made a metric name.
pub fn counter_metric(dir: CounterDir, file: &str) -> Option<CounterMetric> {
    if dir == CounterDir::Ibta {
        if let Some((_, name, help)) = WORD_COUNTERS.iter().find(|(f, _, _)| *f == file) {
            return Some(CounterMetric { name: name.to_string(), scale: 4, help: help.to_string() });
        }
    }
    if dir == CounterDir::Hardware && NOT_COUNTERS.contains(&file) {
        return None;
    }
    let stem = sanitize(file)?;
    let stem = stem.strip_suffix("_total").unwrap_or(&stem).to_string();
    let prefix = match dir {
        CounterDir::Ibta => "fabcheck_port_",
        CounterDir::Hardware => "fabcheck_port_hw_",
    };
    let family = format!("{prefix}{stem}");
    // OpenMetrics names a counter family without `_total`: a file called `state` would be a
    // second `fabcheck_port_state` family beside the gauge, and the page would not parse.
    // Nor may it be one of the table's counter families (`phy_symbol_errors` in a hostile tree).
    if TABLE.iter().any(|m| m.name == family || m.name.strip_suffix("_total") == Some(family.as_str())) {
        return None;
    }
    Some(CounterMetric { name: format!("{family}_total"), scale: 1, help: format!("The port's {}/{file} counter.", dir.folder()) })
}

/// A file name as a metric-name part: lower case, anything but `[a-z0-9_]` made `_`; `None`
/// when nothing usable is left or it is absurdly long (a hostile tree).
fn sanitize(file: &str) -> Option<String> {
    if file.is_empty() || file.len() > 128 {
        return None;
    }
    let out: String = file.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    out.chars().any(|c| c.is_ascii_alphanumeric()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions() {
        let mut seen = std::collections::BTreeSet::new();
        for m in TABLE {
            assert!(m.name.starts_with("fabcheck_"), "{}", m.name);
            assert!(m.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{}", m.name);
            assert_eq!(m.kind == Kind::Counter, m.name.ends_with("_total"), "{}", m.name);
            assert!(!m.help.is_empty() && !m.help.contains('\n'));
            assert!(seen.insert(m.name), "{} twice", m.name);
        }
    }

    /// docs/ci.md's table is [`markdown`]'s, byte for byte. `FABCHECK_BLESS_DOCS=1 cargo test
    /// --lib exporter::metrics` writes it there after a change to the table.
    #[test]
    fn docs_ci_md_shows_exactly_this_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let (begin, end) = ("<!-- metric table: src/exporter/metrics.rs, markdown() -->\n", "<!-- end of the metric table -->");
        let start = doc.find(begin).expect("docs/ci.md marks the metric table") + begin.len();
        let len = doc[start..].find(end).expect("docs/ci.md marks the table's end");
        if std::env::var_os("FABCHECK_BLESS_DOCS").is_some() {
            std::fs::write(&path, format!("{}{}{}", &doc[..start], markdown(), &doc[start + len..])).unwrap();
            return;
        }
        assert_eq!(&doc[start..start + len], markdown(), "docs/ci.md's metric table differs from metrics::TABLE (FABCHECK_BLESS_DOCS=1 rewrites it)");
    }

    #[test]
    fn deprecated_names_are_kept_where_promtool_takes_them() {
        for d in DEPRECATED {
            assert!(TABLE.contains(&d.new) && d.new.format_labels.is_some(), "{} replaces {}", d.new.name, d.old);
            assert_eq!(d.written, !d.old.ends_with("_us"), "{}", d.old);
        }
    }

    #[test]
    fn data_counters_are_bytes_and_others_keep_their_name() {
        let data = counter_metric(CounterDir::Ibta, "port_xmit_data").unwrap();
        assert_eq!((data.name.as_str(), data.scale), ("fabcheck_port_xmit_data_bytes_total", 4));
        let rcv = counter_metric(CounterDir::Ibta, "port_rcv_data").unwrap();
        assert_eq!((rcv.name.as_str(), rcv.scale), ("fabcheck_port_rcv_data_bytes_total", 4));
        assert_eq!(counter_metric(CounterDir::Ibta, "symbol_error").unwrap().name, "fabcheck_port_symbol_error_total");
        assert_eq!(counter_metric(CounterDir::Hardware, "link_downed").unwrap().name, "fabcheck_port_hw_link_downed_total");
        // In hw_counters the data counters are the driver's own, not 4-byte words.
        assert_eq!(counter_metric(CounterDir::Hardware, "port_xmit_data").unwrap().scale, 1);
    }

    #[test]
    fn odd_file_names_are_made_safe_or_refused() {
        assert_eq!(counter_metric(CounterDir::Hardware, "rx-Bytes.x").unwrap().name, "fabcheck_port_hw_rx_bytes_x_total");
        assert_eq!(counter_metric(CounterDir::Hardware, "np_cnp_total").unwrap().name, "fabcheck_port_hw_np_cnp_total");
        assert_eq!(counter_metric(CounterDir::Hardware, "lifespan"), None);
        assert_eq!(counter_metric(CounterDir::Ibta, "---"), None);
        assert_eq!(counter_metric(CounterDir::Ibta, &"a".repeat(200)), None);
        assert_eq!(counter_metric(CounterDir::Ibta, "state"), None, "would clash with fabcheck_port_state in OpenMetrics");
        assert_eq!(counter_metric(CounterDir::Ibta, "Active"), None);
        assert_eq!(counter_metric(CounterDir::Ibta, "phy_symbol_errors"), None, "would merge into the phy family");
        assert_eq!(counter_metric(CounterDir::Ibta, "phy_fec_info"), None, "would clash with the info gauge in OpenMetrics");
    }
}
