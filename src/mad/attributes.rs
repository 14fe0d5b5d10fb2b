//! The attributes InfiniBand management datagrams carry, as typed values: GUIDs, node types,
//! PortInfo, SMInfo, the PerfMgt counters. What `decode` makes of raw payloads, what `fabric`'s
//! model of a subnet and `check`'s reads of its own ports hold.

use crate::port::{link_rate, PhysState, PortState, Speed, Width};
use serde::{Serialize, Serializer};
use std::fmt;

/// A node or port GUID, printed as `ibnetdiscover` prints it: `0x0002c90300a1b2c3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid(pub u64);

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

impl Serialize for Guid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Whether a NodeDescription is a SHARP Aggregation Node's: the CA inside every Quantum (HDR)
/// and later switch, cabled to one of its ports, that reduces data for SHARP collectives
/// ("Mellanox Technologies Aggregation Node" as ibnetdiscover and ibdiagnet print it: NVIDIA
/// Selene's fabrics, tests/fixtures/wild-fabrics; the ibdiagnet manual's "NVIDIA SHARP
/// Support"). It is no host: it makes no switch a leaf and counts in no leaf's host links.
pub fn is_aggregation_node(description: &str) -> bool {
    description.trim_end().ends_with("Aggregation Node")
}

/// IBTA NodeInfo:NodeType.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeType {
    Switch,
    Ca,
    Router,
    Unknown(u8),
}

impl NodeType {
    pub fn from_raw(raw: u8) -> Self {
        match raw {
            1 => NodeType::Ca,
            2 => NodeType::Switch,
            3 => NodeType::Router,
            other => NodeType::Unknown(other),
        }
    }

    pub fn name(self) -> String {
        match self {
            NodeType::Switch => "switch".into(),
            NodeType::Ca => "ca".into(),
            NodeType::Router => "router".into(),
            NodeType::Unknown(n) => format!("unknown({n})"),
        }
    }
}

impl Serialize for NodeType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// A set of link widths (PortInfo LinkWidthSupported/Enabled bits: 1 1X, 2 4X, 4 8X, 8 12X, 16 2X).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WidthSet(pub u8);

impl WidthSet {
    const ALL: [Width; 5] = [Width::X1, Width::X2, Width::X4, Width::X8, Width::X12];

    pub fn intersect(self, other: WidthSet) -> WidthSet {
        WidthSet(self.0 & other.0)
    }

    /// The widest member (by lane count).
    pub fn best(self) -> Option<Width> {
        Self::ALL.iter().rev().copied().find(|w| self.0 as u32 & w.raw() != 0)
    }
}

/// A set of lane speeds, as bits of [`Speed::raw`] (SDR 1 ... FDR10 8, FDR 16 ... XDR 256).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpeedSet(pub u32);

impl SpeedSet {
    pub fn intersect(self, other: SpeedSet) -> SpeedSet {
        SpeedSet(self.0 & other.0)
    }

    /// The fastest member.
    pub fn best(self) -> Option<Speed> {
        (0..9).rev().map(|bit| 1u32 << bit).find(|b| self.0 & b != 0).map(Speed::from_raw)
    }

    pub fn contains(self, speed: Speed) -> bool {
        self.0 & speed.raw() != 0
    }
}

/// The PortInfo fields fabcheck judges, decoded (see `decode::port_info`).
#[derive(Debug, Clone, PartialEq)]
pub struct PortInfo {
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub capability_mask: u32,
    pub state: PortState,
    pub phys_state: PhysState,
    pub width_active: Width,
    pub width_enabled: WidthSet,
    pub width_supported: WidthSet,
    pub speed_active: Speed,
    pub speed_enabled: SpeedSet,
    pub speed_supported: SpeedSet,
}

impl PortInfo {
    /// Whether the physical link is up (it has trained to a width and speed).
    pub fn link_up(&self) -> bool {
        self.phys_state == PhysState::LinkUp
    }

    /// Data rate of the trained link, Gb/s (4X HDR: 200).
    pub fn rate_gbps(&self) -> Option<f64> {
        link_rate(self.width_active, self.speed_active).map(|r| r.data_gbps)
    }
}

/// PerfMgt PortCounters (and 64-bit data counters from PortCountersExtended when answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counters {
    pub symbol_error: u64,
    pub link_error_recovery: u64,
    pub link_downed: u64,
    pub rcv_errors: u64,
    pub rcv_remote_physical_errors: u64,
    pub rcv_switch_relay_errors: u64,
    pub xmit_discards: u64,
    pub xmit_constraint_errors: u64,
    pub rcv_constraint_errors: u64,
    pub local_link_integrity_errors: u64,
    pub excessive_buffer_overrun_errors: u64,
    pub vl15_dropped: u64,
    pub xmit_data: u64,
    pub rcv_data: u64,
    pub xmit_pkts: u64,
    pub rcv_pkts: u64,
    /// Added: PortXmitWait, ticks the port had data to send and no credits (64-bit from
    /// PortCountersExtended where the port has it; `fabric.congestion` over a soak window).
    pub xmit_wait: u64,
}

/// The PerfMgt error counters fabcheck judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCounter {
    SymbolError,
    LinkErrorRecovery,
    LinkDowned,
    RcvErrors,
    RcvRemotePhysicalErrors,
    XmitDiscards,
    LocalLinkIntegrityErrors,
    ExcessiveBufferOverrunErrors,
    Vl15Dropped,
}

impl ErrorCounter {
    pub const ALL: [ErrorCounter; 9] = [
        ErrorCounter::SymbolError,
        ErrorCounter::LinkErrorRecovery,
        ErrorCounter::LinkDowned,
        ErrorCounter::RcvErrors,
        ErrorCounter::RcvRemotePhysicalErrors,
        ErrorCounter::XmitDiscards,
        ErrorCounter::LocalLinkIntegrityErrors,
        ErrorCounter::ExcessiveBufferOverrunErrors,
        ErrorCounter::Vl15Dropped,
    ];

    /// The name in JSON and in `--expect` thresholds.
    pub fn key(self) -> &'static str {
        match self {
            ErrorCounter::SymbolError => "symbol_error",
            ErrorCounter::LinkErrorRecovery => "link_error_recovery",
            ErrorCounter::LinkDowned => "link_downed",
            ErrorCounter::RcvErrors => "rcv_errors",
            ErrorCounter::RcvRemotePhysicalErrors => "rcv_remote_physical_errors",
            ErrorCounter::XmitDiscards => "xmit_discards",
            ErrorCounter::LocalLinkIntegrityErrors => "local_link_integrity_errors",
            ErrorCounter::ExcessiveBufferOverrunErrors => "excessive_buffer_overrun_errors",
            ErrorCounter::Vl15Dropped => "vl15_dropped",
        }
    }

    /// The IBTA name, as `perfquery` prints it.
    pub fn ibta(self) -> &'static str {
        match self {
            ErrorCounter::SymbolError => "SymbolErrorCounter",
            ErrorCounter::LinkErrorRecovery => "LinkErrorRecoveryCounter",
            ErrorCounter::LinkDowned => "LinkDownedCounter",
            ErrorCounter::RcvErrors => "PortRcvErrors",
            ErrorCounter::RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors",
            ErrorCounter::XmitDiscards => "PortXmitDiscards",
            ErrorCounter::LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors",
            ErrorCounter::ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors",
            ErrorCounter::Vl15Dropped => "VL15Dropped",
        }
    }

    pub fn from_key(key: &str) -> Option<ErrorCounter> {
        ErrorCounter::ALL.into_iter().find(|c| c.key() == key)
    }

    /// Counted where this link's own signal arrives: a fault of this cable or its connectors
    /// (the rest are congestion, or damage upstream).
    pub fn physical(self) -> bool {
        !matches!(self, ErrorCounter::XmitDiscards | ErrorCounter::Vl15Dropped | ErrorCounter::RcvRemotePhysicalErrors)
    }

    /// ibqueryerrors' classic thresholds: physical-layer counters 10, the rest 100.
    pub fn default_threshold(self) -> u64 {
        if self.physical() {
            10
        } else {
            100
        }
    }
}

impl Counters {
    pub fn error(&self, counter: ErrorCounter) -> u64 {
        match counter {
            ErrorCounter::SymbolError => self.symbol_error,
            ErrorCounter::LinkErrorRecovery => self.link_error_recovery,
            ErrorCounter::LinkDowned => self.link_downed,
            ErrorCounter::RcvErrors => self.rcv_errors,
            ErrorCounter::RcvRemotePhysicalErrors => self.rcv_remote_physical_errors,
            ErrorCounter::XmitDiscards => self.xmit_discards,
            ErrorCounter::LocalLinkIntegrityErrors => self.local_link_integrity_errors,
            ErrorCounter::ExcessiveBufferOverrunErrors => self.excessive_buffer_overrun_errors,
            ErrorCounter::Vl15Dropped => self.vl15_dropped,
        }
    }
}

/// SMInfo:SMState.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmState {
    NotActive,
    Discovering,
    Standby,
    Master,
    Unknown(u8),
}

impl SmState {
    pub fn from_raw(raw: u8) -> Self {
        match raw {
            0 => SmState::NotActive,
            1 => SmState::Discovering,
            2 => SmState::Standby,
            3 => SmState::Master,
            other => SmState::Unknown(other),
        }
    }

    pub fn name(self) -> String {
        match self {
            SmState::NotActive => "NOT_ACTIVE".into(),
            SmState::Discovering => "DISCOVERING".into(),
            SmState::Standby => "STANDBY".into(),
            SmState::Master => "MASTER".into(),
            SmState::Unknown(n) => format!("UNKNOWN({n})"),
        }
    }
}

impl Serialize for SmState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// One subnet manager that answered SMInfo.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SmInfo {
    pub lid: u16,
    pub guid: Guid,
    pub priority: u8,
    pub state: SmState,
    pub activity: u32,
}

/// PortExtendedSpeedsCounters (PerfMgt 0x1F), FDR and faster: FEC and per-lane figures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExtSpeedsCounters {
    /// The RS-FEC layout (HDR and up: per-lane corrected symbols, port-wide blocks), else the
    /// FDR/EDR Firecode one (per-lane corrected and uncorrectable blocks).
    pub rs_fec: bool,
    pub sync_header_errors: u64,
    pub unknown_blocks: u64,
    /// Per lane (12): corrected symbols (RS-FEC) or corrected blocks (Firecode).
    pub lane_corrected: Vec<u64>,
    /// Per lane (12, Firecode layout only; zeros with RS-FEC): ErrorDetectionCounterLaneN.
    pub lane_errors_detected: Vec<u64>,
    pub corrected_blocks: u64,
    pub uncorrectable_blocks: u64,
    /// PortFECCorrectedSymbolCtr (RS-FEC layout only).
    pub corrected_symbols: Option<u64>,
}
