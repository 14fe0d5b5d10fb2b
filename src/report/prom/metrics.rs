//! The one table of fabcheck's Prometheus metric names: the exporter writes from it, and so
//! does `--format prom` of every other command (`report::formats::prom`). docs/ci.md ("Metric
//! names") shows it as a table, rendered by [`markdown`] and checked against it by a test, so the
//! page, the formats and the docs cannot drift apart.
//!
//! Names follow Prometheus's conventions so that `promtool check metrics` is clean: the prefix
//! `fabcheck_`, base units (`_bytes`, `_seconds`, `_bytes_per_second`), `_total` on counters.
//! Port series carry `device`, `port` and, when they can be filled, `netdev` and `gpu`; a label
//! that cannot be filled is left out rather than written empty.

/// The family of a figure the exporter read: the one table says its name, type and HELP. A
/// counter file's family is [`counter_metric`]'s.
pub fn of(figure: crate::outcome::Figure<'_>) -> Option<&'static Metric> {
    use crate::outcome::Figure;
    Some(match figure {
        Figure::Up => &UP,
        Figure::BuildInfo => &BUILD_INFO,
        Figure::RefreshError => &REFRESH_ERROR,
        Figure::LastRefresh => &LAST_REFRESH,
        Figure::RefreshDuration => &REFRESH_DURATION,
        Figure::Interval => &INTERVAL,
        Figure::Refreshes => &REFRESHES,
        Figure::RefreshFailures => &REFRESH_FAILURES,
        Figure::Devices => &DEVICES,
        Figure::DevicePresent => &DEVICE_PRESENT,
        Figure::DeviceInfo => &DEVICE_INFO,
        Figure::PcieUsable => &PCIE_USABLE,
        Figure::PortInfo => &PORT_INFO,
        Figure::PortState => &PORT_STATE,
        Figure::PortActive => &PORT_ACTIVE,
        Figure::PortPhysState => &PORT_PHYS_STATE,
        Figure::PortLinkUp => &PORT_LINK_UP,
        Figure::PortRate => &PORT_RATE,
        Figure::PortCapacity => &PORT_CAPACITY,
        Figure::PortSupported => &PORT_SUPPORTED,
        Figure::PortTrainedLow => &PORT_TRAINED_LOW,
        Figure::PortMtu => &PORT_MTU,
        Figure::PhyFecInfo => &PHY_FEC_INFO,
        Figure::PhyBerRaw => &PHY_BER_RAW,
        Figure::PhyBerEffective => &PHY_BER_EFFECTIVE,
        Figure::PhySymbolErrors => &PHY_SYMBOL_ERRORS,
        Figure::PhyCorrectedBits => &PHY_CORRECTED_BITS,
        Figure::PhyReceived => &PHY_RECEIVED,
        Figure::PhyFecCorrected => &PHY_FEC_CORRECTED,
        Figure::PhyFecUncorrectable => &PHY_FEC_UNCORRECTABLE,
        Figure::PhyLinkDown => &PHY_LINK_DOWN,
        Figure::PhyLaneErrors => &PHY_LANE_ERRORS,
        Figure::ModuleInfo => &MODULE_INFO,
        Figure::ModuleTemperature => &MODULE_TEMPERATURE,
        Figure::ModuleRxPower => &MODULE_RX_POWER,
        Figure::ModuleTxPower => &MODULE_TX_POWER,
        Figure::ModuleTxBias => &MODULE_TX_BIAS,
        Figure::PcieAer => &PCIE_AER,
        Figure::Verdict => &VERDICT,
        Figure::LiveBandwidth => &LIVE_BANDWIDTH,
        Figure::LiveLatencyP50 => &LIVE_LATENCY_P50,
        Figure::LiveLatencyP99 => &LIVE_LATENCY_P99,
        Figure::LiveTimestamp => &LIVE_TIMESTAMP,
        Figure::Counter { .. } => return None,
    })
}

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
// A running burn-in's last interval (`pair`/`mesh --report-every`, read from --live-dir).
const LIVE_LABELS: &str = "test,direction,size,endpoint,pid";
pub const LIVE_BANDWIDTH: Metric =
    gauge("fabcheck_live_bandwidth_bytes_per_second", LIVE_LABELS, "A running test's bandwidth over its last --report-every interval.");
pub const LIVE_LATENCY_P50: Metric =
    gauge("fabcheck_live_latency_p50_seconds", LIVE_LABELS, "A running test's p50 latency over its last --report-every interval.");
pub const LIVE_LATENCY_P99: Metric =
    gauge("fabcheck_live_latency_p99_seconds", LIVE_LABELS, "A running test's p99 latency over its last --report-every interval.");
pub const LIVE_TIMESTAMP: Metric = gauge(
    "fabcheck_live_timestamp_seconds",
    LIVE_LABELS,
    "When the running test's last interval was written (Unix time); a run that ended has no series.",
);
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
pub const PORT_TRAINED_LOW: Metric = gauge(
    "fabcheck_port_trained_below_supported",
    "",
    "1 when check's link.trained fails on the port: the link trained below what both of its ends support and enable (a port at what its partner offers is 0); no series where link.trained was not judged.",
);
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
pub const LATENCY_IDLE_P99: Metric = run_gauge(
    "fabcheck_latency_idle_p99_seconds",
    "a,b,test,direction,size",
    "lat_under_load: p99 latency of its latency QP before the load started (fabcheck_latency_p99_seconds is under load).",
);
pub const LOADED_LATENCY_RATIO: Metric = run_gauge(
    "fabcheck_loaded_latency_ratio",
    "a,b,test,direction,size",
    "lat_under_load: p99 latency under load over the idle p99 (judged at --load-threshold).",
);
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
    LIVE_BANDWIDTH,
    LIVE_LATENCY_P50,
    LIVE_LATENCY_P99,
    LIVE_TIMESTAMP,
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
    LATENCY_IDLE_P99,
    LOADED_LATENCY_RATIO,
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

/// The tables as docs/ci.md shows them (Markdown): the fixed families, the deprecated names,
/// then the counter files whose meaning is known and the families they are written as.
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
    out.push_str("\n| 0.2 name (deprecated) | use | still written |\n|---|---|---|\n");
    for d in DEPRECATED {
        let written = if d.written { "yes, beside the new name (same value in the old unit)" } else { "no: promtool refuses `_us`" };
        out.push_str(&format!("| `{}` | `{}` | {written} |\n", d.old, d.new.name));
    }
    out.push_str(
        "\nThe counter files of `ports/N/` (exporter only), named as node_exporter's infiniband collector names them \
         (`node_infiniband_X` is `fabcheck_port_X`, less a doubled `port_`):\n\n\
         | file | metric (counter) | what |\n|---|---|---|\n",
    );
    for k in KNOWN {
        out.push_str(&format!("| `{}/{}` | `{}` | {} |\n", k.dir.folder(), k.file, k.name, k.help));
    }
    out
}

pub use crate::outcome::CounterDir;

/// The family a sysfs counter file is exported as.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterMetric {
    pub name: String,
    /// What one count is worth in the family's unit (4 for the data counters, which count
    /// 4-byte words).
    pub scale: u64,
    pub help: String,
}

/// A counter file whose meaning is known, under the name node_exporter's infiniband collector
/// gives it (`node_infiniband_port_errors_received_total` is `fabcheck_port_errors_received_total`,
/// `node_infiniband_symbol_error_total` is `fabcheck_port_symbol_error_total`): a dashboard or a
/// rule written for one reads the other with the prefix changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub dir: CounterDir,
    pub file: &'static str,
    pub name: &'static str,
    pub scale: u64,
    pub help: &'static str,
}

const fn ibta(file: &'static str, name: &'static str, help: &'static str) -> Known {
    Known { dir: CounterDir::Ibta, file, name, scale: 1, help }
}

const fn hw(file: &'static str, name: &'static str, help: &'static str) -> Known {
    Known { dir: CounterDir::Hardware, file, name, scale: 1, help }
}

/// The counter files of `counters/` (the IBTA PortCounters and PortCountersExtended the kernel
/// keeps) and of mlx5's `hw_counters/` that node_exporter's infiniband collector maps, in its
/// names. Each HELP says what is counted and which file it is read from.
pub const KNOWN: &[Known] = &[
    ibta("excessive_buffer_overrun_errors", "fabcheck_port_excessive_buffer_overrun_errors_total", "Times the port's receive buffer overran in OverrunErrors consecutive flow-control update periods (counters/excessive_buffer_overrun_errors)."),
    ibta("link_downed", "fabcheck_port_link_downed_total", "Times the link failed to recover from an error state and went down (counters/link_downed)."),
    ibta("link_error_recovery", "fabcheck_port_link_error_recovery_total", "Times the link recovered from an error state by retraining (counters/link_error_recovery)."),
    ibta("local_link_integrity_errors", "fabcheck_port_local_link_integrity_errors_total", "Times the local physical errors exceeded the LocalPhyErrors threshold (counters/local_link_integrity_errors)."),
    ibta("multicast_rcv_packets", "fabcheck_port_multicast_packets_received_total", "Multicast packets received, errors included (counters/multicast_rcv_packets)."),
    ibta("multicast_xmit_packets", "fabcheck_port_multicast_packets_transmitted_total", "Multicast packets sent, errors included (counters/multicast_xmit_packets)."),
    ibta("port_rcv_constraint_errors", "fabcheck_port_constraint_errors_received_total", "Packets received and discarded by partition-key or raw-packet enforcement (counters/port_rcv_constraint_errors)."),
    ibta("port_xmit_constraint_errors", "fabcheck_port_constraint_errors_transmitted_total", "Packets not sent because of partition-key or raw-packet enforcement (counters/port_xmit_constraint_errors)."),
    Known { scale: 4, ..ibta("port_rcv_data", "fabcheck_port_data_received_bytes_total", "Bytes received on all VLs (counters/port_rcv_data, which counts 4-byte words, times 4).") },
    Known { scale: 4, ..ibta("port_xmit_data", "fabcheck_port_data_transmitted_bytes_total", "Bytes sent on all VLs (counters/port_xmit_data, which counts 4-byte words, times 4).") },
    ibta("port_rcv_discards", "fabcheck_port_discards_received_total", "Inbound packets the port discarded because it was down or congested (counters/port_rcv_discards)."),
    ibta("port_xmit_discards", "fabcheck_port_discards_transmitted_total", "Outbound packets the port discarded because it was down or congested (counters/port_xmit_discards)."),
    ibta("port_rcv_errors", "fabcheck_port_errors_received_total", "Packets received with an error: malformed, a bad CRC, or while the link was not up (counters/port_rcv_errors)."),
    ibta("port_rcv_packets", "fabcheck_port_packets_received_total", "Packets received on all VLs, errors included (counters/port_rcv_packets)."),
    ibta("port_xmit_packets", "fabcheck_port_packets_transmitted_total", "Packets sent on all VLs, errors included (counters/port_xmit_packets)."),
    ibta("port_rcv_remote_physical_errors", "fabcheck_port_receive_remote_physical_errors_total", "Packets received that the sender marked bad with an EBP delimiter (counters/port_rcv_remote_physical_errors)."),
    ibta("port_rcv_switch_relay_errors", "fabcheck_port_receive_switch_relay_errors_total", "Packets received that a switch could not forward (counters/port_rcv_switch_relay_errors)."),
    ibta("port_xmit_wait", "fabcheck_port_transmit_wait_total", "Ticks during which the port had data to send but sent none, for want of flow-control credits (counters/port_xmit_wait)."),
    ibta("symbol_error", "fabcheck_port_symbol_error_total", "Minor link errors (symbol errors) detected on any of the port's physical lanes (counters/symbol_error)."),
    ibta("unicast_rcv_packets", "fabcheck_port_unicast_packets_received_total", "Unicast packets received, errors included (counters/unicast_rcv_packets)."),
    ibta("unicast_xmit_packets", "fabcheck_port_unicast_packets_transmitted_total", "Unicast packets sent, errors included (counters/unicast_xmit_packets)."),
    ibta("VL15_dropped", "fabcheck_port_vl15_dropped_total", "Subnet-management (VL15) packets received and dropped for lack of buffers (counters/VL15_dropped)."),
    hw("duplicate_request", "fabcheck_port_duplicate_requests_packets_total", "Requests received that had already been executed, sent again by the requester (hw_counters/duplicate_request)."),
    hw("implied_nak_seq_err", "fabcheck_port_implied_nak_seq_errors_total", "Times the requester got an ACK with a PSN beyond the one expected for an RDMA read or atomic response (hw_counters/implied_nak_seq_err)."),
    hw("local_ack_timeout_err", "fabcheck_port_local_ack_timeout_errors_total", "Times a QP's ACK timer expired at the sender, within the retry limit (hw_counters/local_ack_timeout_err)."),
    hw("np_cnp_sent", "fabcheck_port_np_cnp_packets_sent_total", "Congestion notification packets sent by the port as notification point, for ECN-marked RoCE v2 packets (hw_counters/np_cnp_sent)."),
    hw("np_ecn_marked_roce_packets", "fabcheck_port_np_ecn_marked_roce_packets_received_total", "RoCE v2 packets received with ECN congestion experienced marked (hw_counters/np_ecn_marked_roce_packets)."),
    hw("out_of_buffer", "fabcheck_port_out_of_buffer_drops_total", "Packets dropped because their QP had no receive WQE posted (hw_counters/out_of_buffer)."),
    hw("out_of_sequence", "fabcheck_port_out_of_sequence_packets_received_total", "Packets received out of sequence (hw_counters/out_of_sequence)."),
    hw("packet_seq_err", "fabcheck_port_packet_sequence_errors_total", "NAK sequence error packets received, within the QP's retry limit (hw_counters/packet_seq_err)."),
    hw("req_cqe_error", "fabcheck_port_req_cqes_errors_total", "Completions with an error at the requester (hw_counters/req_cqe_error)."),
    hw("req_cqe_flush_error", "fabcheck_port_req_cqes_flush_errors_total", "Completions flushed with an error at the requester (hw_counters/req_cqe_flush_error)."),
    hw("req_remote_access_errors", "fabcheck_port_req_remote_access_errors_total", "Remote access errors the requester got (hw_counters/req_remote_access_errors)."),
    hw("req_remote_invalid_request", "fabcheck_port_req_remote_invalid_request_errors_total", "Remote invalid request errors the requester got (hw_counters/req_remote_invalid_request)."),
    hw("resp_cqe_error", "fabcheck_port_resp_cqes_errors_total", "Completions with an error at the responder (hw_counters/resp_cqe_error)."),
    hw("resp_cqe_flush_error", "fabcheck_port_resp_cqes_flush_errors_total", "Completions flushed with an error at the responder (hw_counters/resp_cqe_flush_error)."),
    hw("resp_local_length_error", "fabcheck_port_resp_local_length_errors_total", "Local length errors at the responder: a message longer than the receive buffer (hw_counters/resp_local_length_error)."),
    hw("resp_remote_access_errors", "fabcheck_port_resp_remote_access_errors_total", "Remote access errors at the responder (hw_counters/resp_remote_access_errors)."),
    hw("rnr_nak_retry_err", "fabcheck_port_rnr_nak_retry_packets_received_total", "Receiver-not-ready NAKs received, within the QP's retry limit (hw_counters/rnr_nak_retry_err)."),
    hw("roce_adp_retrans", "fabcheck_port_roce_adp_retransmits_total", "Adaptive retransmissions of RoCE traffic (hw_counters/roce_adp_retrans)."),
    hw("roce_adp_retrans_to", "fabcheck_port_roce_adp_retransmits_timeout_total", "Times RoCE traffic timed out under adaptive retransmission (hw_counters/roce_adp_retrans_to)."),
    hw("roce_slow_restart", "fabcheck_port_roce_slow_restart_used_total", "Times RoCE slow restart was used (hw_counters/roce_slow_restart)."),
    hw("roce_slow_restart_cnps", "fabcheck_port_roce_slow_restart_cnps_total", "Congestion notification packets RoCE slow restart generated (hw_counters/roce_slow_restart_cnps)."),
    hw("roce_slow_restart_trans", "fabcheck_port_roce_slow_restart_total", "Times RoCE slow restart changed state to slow restart (hw_counters/roce_slow_restart_trans)."),
    hw("rp_cnp_handled", "fabcheck_port_rp_cnp_packets_handled_total", "Congestion notification packets the port handled as reaction point, slowing its sending (hw_counters/rp_cnp_handled)."),
    hw("rp_cnp_ignored", "fabcheck_port_rp_cnp_ignored_packets_received_total", "Congestion notification packets the port received and ignored: rising when congestion control is off on the adapter (hw_counters/rp_cnp_ignored)."),
    hw("rx_atomic_requests", "fabcheck_port_rx_atomic_requests_total", "Atomic requests received (hw_counters/rx_atomic_requests)."),
    hw("rx_dct_connect", "fabcheck_port_rx_dct_connect_requests_total", "Connection requests received for DC targets (hw_counters/rx_dct_connect)."),
    hw("rx_icrc_encapsulated", "fabcheck_port_rx_icrc_encapsulated_errors_total", "RoCE packets received with an ICRC error (hw_counters/rx_icrc_encapsulated)."),
    hw("rx_read_requests", "fabcheck_port_rx_read_requests_total", "RDMA read requests received (hw_counters/rx_read_requests)."),
    hw("rx_write_requests", "fabcheck_port_rx_write_requests_total", "RDMA write requests received (hw_counters/rx_write_requests)."),
];

/// Files in `hw_counters/` that are settings, not counters.
const NOT_COUNTERS: [&str; 1] = ["lifespan"];

/// The family for counter file `file` of `dir`: the known ones ([`KNOWN`]) under node_exporter's
/// names, any other as `fabcheck_port_FILE_total` (`counters/`) or `fabcheck_port_hw_FILE_total`
/// (`hw_counters/`) with a HELP naming the file. `None` for a file that is not a counter, or
/// whose name cannot be made a metric name, or would be another family's.
pub fn counter_metric(dir: CounterDir, file: &str) -> Option<CounterMetric> {
    if let Some(k) = KNOWN.iter().find(|k| k.dir == dir && k.file == file) {
        return Some(CounterMetric { name: k.name.to_string(), scale: k.scale, help: k.help.to_string() });
    }
    if dir == CounterDir::Hardware && NOT_COUNTERS.contains(&file) {
        return None;
    }
    let stem = sanitize(file)?;
    let stem = stem.strip_suffix("_total").unwrap_or(&stem).to_string();
    // A name ending as OpenMetrics' own sample suffixes do (`x_created` beside `x`'s family) is
    // not a name a driver gives a counter: left out rather than a clash (issue #58).
    if ["_created", "_bucket", "_count", "_sum", "_info", "_gcount", "_gsum"].iter().any(|s| stem.ends_with(s)) {
        return None;
    }
    let prefix = match dir {
        CounterDir::Ibta => "fabcheck_port_",
        CounterDir::Hardware => "fabcheck_port_hw_",
    };
    let family = format!("{prefix}{stem}");
    // OpenMetrics names a counter family without `_total`: a file called `state` would be a
    // second `fabcheck_port_state` family beside the gauge, and the page would not parse.
    // Nor may it be one of the table's counter families (`phy_symbol_errors` in a hostile tree),
    // or a known file's (a file `errors_received` would merge into port_rcv_errors' family).
    let taken = |name: &str| name == family || name.strip_suffix("_total") == Some(family.as_str());
    if TABLE.iter().any(|m| taken(m.name)) || KNOWN.iter().any(|k| taken(k.name)) {
        return None;
    }
    let help = format!(
        "The port's counter file {}/{}, as the driver counts it (fabcheck knows no more of its meaning).",
        dir.folder(),
        crate::sanitise::one_line(file)
    );
    Some(CounterMetric { name: format!("{family}_total"), scale: 1, help })
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
        let known = KNOWN.iter().map(|k| (k.name, Kind::Counter, k.help));
        for (name, kind, help) in TABLE.iter().map(|m| (m.name, m.kind, m.help)).chain(known) {
            assert!(name.starts_with("fabcheck_"), "{name}");
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{name}");
            assert_eq!(kind == Kind::Counter, name.ends_with("_total"), "{name}");
            assert!(!help.is_empty() && !help.contains('\n'));
            assert!(seen.insert(name), "{name} twice");
        }
    }

    /// docs/ci.md's tables are [`markdown`]'s, byte for byte. `FABCHECK_BLESS_DOCS=1 cargo test
    /// --lib report::prom::metrics` writes them there after a change to the table.
    #[test]
    fn docs_ci_md_shows_exactly_this_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let (begin, end) = ("<!-- metric table: src/report/prom/metrics.rs, markdown() -->\n", "<!-- end of the metric table -->");
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
    fn counters_take_node_exporters_names_and_the_data_counters_are_bytes() {
        let data = counter_metric(CounterDir::Ibta, "port_xmit_data").unwrap();
        assert_eq!((data.name.as_str(), data.scale), ("fabcheck_port_data_transmitted_bytes_total", 4));
        let rcv = counter_metric(CounterDir::Ibta, "port_rcv_data").unwrap();
        assert_eq!((rcv.name.as_str(), rcv.scale), ("fabcheck_port_data_received_bytes_total", 4));
        let named = |dir, file| counter_metric(dir, file).unwrap().name;
        assert_eq!(named(CounterDir::Ibta, "port_rcv_errors"), "fabcheck_port_errors_received_total");
        assert_eq!(named(CounterDir::Ibta, "port_xmit_discards"), "fabcheck_port_discards_transmitted_total");
        assert_eq!(named(CounterDir::Ibta, "port_xmit_wait"), "fabcheck_port_transmit_wait_total");
        assert_eq!(named(CounterDir::Ibta, "symbol_error"), "fabcheck_port_symbol_error_total");
        assert_eq!(named(CounterDir::Ibta, "VL15_dropped"), "fabcheck_port_vl15_dropped_total");
        assert_eq!(named(CounterDir::Hardware, "out_of_sequence"), "fabcheck_port_out_of_sequence_packets_received_total");
        // Unknown files keep 0.3's names, with a HELP that names the file.
        let other = counter_metric(CounterDir::Hardware, "link_downed").unwrap();
        assert_eq!(other.name, "fabcheck_port_hw_link_downed_total");
        assert!(other.help.contains("hw_counters/link_downed"), "{}", other.help);
        // In hw_counters the data counters are the driver's own, not 4-byte words.
        assert_eq!(counter_metric(CounterDir::Hardware, "port_xmit_data").unwrap().scale, 1);
        for k in KNOWN {
            assert!(k.help.ends_with(&format!("({}/{}).", k.dir.folder(), k.file)) || k.scale == 4, "{} names its file", k.name);
            assert!(k.help.contains(&format!("{}/{}", k.dir.folder(), k.file)), "{} names its file", k.name);
        }
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
        assert_eq!(counter_metric(CounterDir::Ibta, "errors_received"), None, "would merge into port_rcv_errors' family");
        assert_eq!(counter_metric(CounterDir::Hardware, "VL15_dropped").unwrap().name, "fabcheck_port_hw_vl15_dropped_total");
    }
}
