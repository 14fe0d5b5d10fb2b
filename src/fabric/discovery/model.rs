//! The subnet as plain typed data: nodes, ports with their decoded PortInfo, the SM.
//! Filled by `discover` (live MADs) or by tests; judged by `judge`; printed by `report`.

use crate::mad::attributes::{Counters, Guid, NodeType, PortInfo, SmInfo};
use crate::port::PortState;
use serde::Serialize;

/// One port whose PortInfo was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    pub number: u8,
    pub guid: Guid,
    /// The LID to address this port's node with (switch: port 0's LID).
    pub lid: u16,
    pub info: PortInfo,
    /// The node and port at the other end of the cable.
    pub remote: Option<(Guid, u8)>,
    pub counters: Option<Counters>,
}

/// One discovered node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub guid: Guid,
    pub node_type: NodeType,
    pub description: String,
    pub num_ports: u8,
    pub ports: Vec<Port>,
}

impl Node {
    pub fn port(&self, number: u8) -> Option<&Port> {
        self.ports.iter().find(|p| p.number == number)
    }

    /// The LID of the node's management port (switch port 0, or the lowest CA port's).
    pub fn lid(&self) -> u16 {
        self.ports.iter().find(|p| p.number == 0).or_else(|| self.ports.first()).map_or(0, |p| p.lid)
    }
}

/// The port fabcheck ran from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocalView {
    pub ca: String,
    pub port: u8,
    pub lid: u16,
    pub sm_lid: u16,
    pub state: PortState,
}

/// Something a query could not learn, kept so the judge can report it.
#[derive(Debug, Clone, PartialEq)]
pub enum Gap {
    /// A port is physically up but the node behind it never answered discovery.
    Unanswered { node: Guid, port: u8 },
    /// PerfMgt at this node did not answer.
    NoCounters { node: Guid },
}

/// Everything discovered, ready to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Fabric {
    pub local: LocalView,
    pub nodes: Vec<Node>,
    /// The SM the local port points at (None: no SM LID, or it did not answer).
    pub master: Option<SmInfo>,
    /// Every other SM that answered SMInfo (standby, or a second master).
    pub others: Vec<SmInfo>,
    pub gaps: Vec<Gap>,
    /// Whether counters were read (they need LIDs, so an SM).
    pub counters_read: bool,
}

impl Fabric {
    pub fn node(&self, guid: Guid) -> Option<&Node> {
        self.nodes.iter().find(|n| n.guid == guid)
    }
}

// --- Tables read after discovery: forwarding (fabric.route) and partitions (fabric.pkey) ---

/// Why the tables were read only in part: the SMPs or the time `--deadline` left ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BudgetSpent {
    #[error("the budget of {0} SMPs for the switch and port tables was spent")]
    Smps(u64),
    #[error("the time left by --deadline for the switch and port tables ran out")]
    Deadline,
}

/// One switch's linear forwarding table: the out port for each destination LID (the index);
/// [`Lft::NONE`] where the SM set no route. LIDs past the table's end have none either.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lft {
    pub ports: Vec<u8>,
}

impl Lft {
    /// The entry of a LID the switch has no route for.
    pub const NONE: u8 = 0xff;

    pub fn port_for(&self, lid: u16) -> u8 {
        self.ports.get(usize::from(lid)).copied().unwrap_or(Lft::NONE)
    }
}

/// Each switch's SL to VL maps: `(switch, in port, out port)` -> VL of each SL 0..15 (what
/// `fabric.creditloop` follows a hop's VL by).
pub type Sl2Vl = std::collections::BTreeMap<(Guid, u8, u8), [u8; 16]>;

/// The tables read after discovery, with what reading them cost. Empty when not read (no
/// master SM: nothing is routed yet).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tables {
    /// Whether the tables were asked for at all.
    pub read: bool,
    pub lfts: std::collections::BTreeMap<Guid, Lft>,
    /// Switches whose forwarding table could not be read whole (no answer, MAD budget or time
    /// spent): routes through them are not walked, and that is said.
    pub lft_unread: Vec<Guid>,
    /// Each port's P_KeyTable (non-zero entries, in table order): CA ports and switch ports.
    pub pkeys: std::collections::BTreeMap<(Guid, u8), Vec<u16>>,
    /// Ports whose P_KeyTable did not answer.
    pub pkey_unread: Vec<(Guid, u8)>,
    /// Switches' SL to VL maps per (switch, in port, out port), where read: `fabric.creditloop`
    /// puts each hop on the VL they give (SL 0 to VL 0 where not read).
    pub sl2vl: Sl2Vl,
    /// The multicast and QoS tables (`fabric.mcast`, `fabric.vl`, `fabric.creditloop` per VL).
    pub qos: QosTables,
    /// SMPs sent for these tables.
    pub mads: u64,
    /// Why reading stopped before the end (the MAD budget or the time left), if it did.
    pub cut_short: Option<BudgetSpent>,
    /// PortExtendedSpeedsCounters of the FDR-and-faster ports that answered (lifetime
    /// figures, from the first read of a run): `phy.fec`, `phy.ber`.
    pub phy: std::collections::BTreeMap<(Guid, u8), crate::mad::attributes::ExtSpeedsCounters>,
    /// PortSamplesControl Tick of the nodes with a port that waited (read at the end of a soak
    /// window): PortXmitWait counts (Tick + 1) symbol times (`fabric.congestion`).
    pub sample_ticks: std::collections::BTreeMap<Guid, TickRead>,
}

/// The multicast forwarding tables, each port's VL arbitration, and what did not answer. A
/// CA port's SL to VL map sits in [`Tables::sl2vl`] under `(CA, 0, port)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QosTables {
    /// (switch, MLID) -> the ports its MFT entry copies the group's packets to.
    pub mfts: std::collections::BTreeMap<(Guid, u16), std::collections::BTreeSet<u8>>,
    /// Switches whose MFT was read whole.
    pub mft_read: std::collections::BTreeSet<Guid>,
    /// Each output port's arbitration: its operational data VLs (0: not said) and its
    /// (VL, weight) entries, high- and low-priority tables together.
    pub vl_arb: std::collections::BTreeMap<(Guid, u8), PortArbitration>,
    /// Tables asked for and not answered, by kind, with the node (and port; 0 for a switch's
    /// MFT).
    pub unanswered: Vec<(QosKind, Guid, u8)>,
    /// Why reading them stopped before the end (the SMP budget or the time), if it did: what
    /// was read is then a part, and `fabric.creditloop` keeps to VL 0.
    pub cut_short: Option<BudgetSpent>,
}

/// One output port's operational data VLs (0: not said) and its VLArbitration (VL, weight)
/// entries, high- and low-priority tables together.
pub type PortArbitration = (u8, Vec<(u8, u8)>);

/// The three tables of [`QosTables`], for saying which did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum QosKind {
    MulticastForwarding,
    Sl2Vl,
    VlArbitration,
}

impl QosKind {
    /// The IBTA attribute's name, as `smpquery`/`ibroute` users know it.
    pub fn name(self) -> &'static str {
        match self {
            QosKind::MulticastForwarding => "MulticastForwardingTable",
            QosKind::Sl2Vl => "SLtoVLMappingTable",
            QosKind::VlArbitration => "VLArbitrationTable",
        }
    }
}

/// A node's PortSamplesControl Tick, as `fabric` read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickRead {
    Tick(u8),
    /// Asked, and not answered (ibsim does not implement the attribute).
    NoAnswer,
    /// Not asked: an SM runs behind the node's PerfMgt address (PortInfo IsSM). A simulated
    /// fabric (ibsim) hands an attribute it lacks to the client on that port, the SM, which
    /// dies of it; a real agent answers, but the share is not worth an SM.
    SmBehind,
}
