//! A RoCE port's QoS set-up, typed: how the port classifies what it receives (trust state and
//! the DSCP to priority table), which priorities PFC holds lossless, how transmission shares
//! the wire (priority to traffic class, ETS shares or strict priority per class), which
//! receive buffer each priority fills, ECN/DCQCN per priority and where CNPs go, rdma_cm's
//! default ToS, and the per-priority counters of `ethtool -S`.
//!
//! Every figure is an `Option`: `None` is "not read", never a default. The parsers (one source
//! per file: `mlnx_qos`, `dcb_json`, `rdma_cm`, `ecn`, `counters`) are pure; `read` gathers them,
//! live (bounded children, bounded sysfs/configfs reads) or from a bundle (through the bundle
//! reader, `sys::beneath`); `priority` works out the priority RoCE rides (pure). Judged in
//! `diagnose::qos_rules`; shown per port as `qos` in `devices --json`.

pub mod counters;
pub mod dcb_json;
pub mod ecn;
pub mod mlnx_qos;
pub mod pause;
pub mod priority;
pub mod rdma_cm;
pub mod read;
pub mod traffic;
pub mod traffic_class;

pub use counters::PrioCounters;

use serde::{Deserialize, Serialize};

/// An IEEE 802.1p priority, 0..=7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Priority(u8);

impl Priority {
    pub fn new(value: u8) -> Option<Priority> {
        (value < 8).then_some(Priority(value))
    }

    pub fn get(self) -> u8 {
        self.0
    }

    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// All eight, 0 first.
    pub fn all() -> impl Iterator<Item = Priority> {
        (0..8).map(Priority)
    }
}

/// A number outside the range a priority or a DSCP has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value} is not 0..{max}")]
pub struct OutOfRange {
    pub what: &'static str,
    pub value: u8,
    pub max: u8,
}

impl TryFrom<u8> for Priority {
    type Error = OutOfRange;
    fn try_from(value: u8) -> Result<Self, OutOfRange> {
        Priority::new(value).ok_or(OutOfRange { what: "priority", value, max: 7 })
    }
}

impl From<Priority> for u8 {
    fn from(p: Priority) -> u8 {
        p.0
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A DiffServ code point, 0..=63: the upper six bits of the IP ToS / traffic class byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Dscp(u8);

impl Dscp {
    pub fn new(value: u8) -> Option<Dscp> {
        (value < 64).then_some(Dscp(value))
    }

    /// The DSCP of a ToS byte (RoCE's GRH traffic class, rdma_cm's ToS, `NCCL_IB_TC`): the
    /// two low bits are ECN.
    pub fn of_tos(tos: u8) -> Dscp {
        Dscp(tos >> 2)
    }

    pub fn get(self) -> u8 {
        self.0
    }

    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The priority a port that never had its table changed maps this DSCP to: the class
    /// selector, DSCP >> 3 (mlx5's firmware default, and `mlnx_qos`'s `setDefaultAppEntry`).
    pub fn default_priority(self) -> Priority {
        Priority(self.0 >> 3)
    }
}

impl TryFrom<u8> for Dscp {
    type Error = OutOfRange;
    fn try_from(value: u8) -> Result<Self, OutOfRange> {
        Dscp::new(value).ok_or(OutOfRange { what: "DSCP", value, max: 63 })
    }
}

impl From<Dscp> for u8 {
    fn from(d: Dscp) -> u8 {
        d.0
    }
}

impl std::fmt::Display for Dscp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a port trusts to classify received (and, on mlx5, RoCE-sent) packets into priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The VLAN tag's PCP: untagged frames ride the default priority (0).
    Pcp,
    /// The IP header's DSCP, through the DSCP to priority table.
    Dscp,
}

impl std::fmt::Display for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Trust::Pcp => "pcp",
            Trust::Dscp => "dscp",
        })
    }
}

/// A traffic class's transmission selection algorithm (IEEE 802.1Qaz).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tsa {
    Strict,
    /// A weighted share (`bw` percent of what strict classes leave).
    Ets,
    /// The driver's own (mlx5: the firmware default round robin, before ETS is configured).
    Vendor,
    /// Credit-based shaper.
    Cbs,
}

impl Tsa {
    pub fn parse(text: &str) -> Option<Tsa> {
        match text.trim().to_ascii_lowercase().as_str() {
            "strict" => Some(Tsa::Strict),
            "ets" => Some(Tsa::Ets),
            "vendor" => Some(Tsa::Vendor),
            "cbs" => Some(Tsa::Cbs),
            _ => None,
        }
    }
}

impl std::fmt::Display for Tsa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tsa::Strict => "strict",
            Tsa::Ets => "ets",
            Tsa::Vendor => "vendor",
            Tsa::Cbs => "cbs",
        })
    }
}

/// How one traffic class is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcSched {
    pub tsa: Tsa,
    /// The ETS share, percent; `None` where the source does not print it (mlnx_qos prints it
    /// for ETS classes only).
    pub bw: Option<u8>,
}

/// Which tool (or saved file) a part of the set-up came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// NVIDIA's `mlnx_qos -i IF` (mlnx-tools), or a bundle's `tools/mlnx_qos/IF.txt`.
    MlnxQos,
    /// iproute2's `dcb -j ...`, or a bundle's `dcb/IF.json`.
    Dcb,
    /// A 0.3 bundle's `dcb/IF.pfc.txt` (`dcb pfc show dev IF prio-pfc`): PFC only.
    DcbPfcText,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::MlnxQos => "mlnx_qos",
            Tool::Dcb => "dcb",
            Tool::DcbPfcText => "dcb pfc (text)",
        }
    }
}

/// Why a source gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why", content = "detail")]
pub enum Unread {
    NotInstalled,
    /// The netdev has no DCB (`Operation not supported`: a veth, a bridge, Soft-RoCE's netdev).
    NotSupported,
    NotPermitted,
    TimedOut,
    /// Not saved in the bundle.
    NotInBundle,
    /// It answered, but with nothing this parser knows (its first words).
    Unparsed(String),
    Failed(String),
}

/// One source asked, and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    pub tool: Tool,
    /// `None`: it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<Unread>,
}

/// A port's QoS set-up as read; every field `None` where no source said.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortQos {
    /// Each source asked, in order, and whether it answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    pub trust: Option<Trust>,
    /// DSCP 0..63 to priority; an entry is `None` where the table does not say.
    pub dscp2prio: Option<Vec<Option<Priority>>>,
    /// Priority 0..7 to whether PFC is on.
    pub pfc: Option<[bool; 8]>,
    /// Priority 0..7 to its traffic class.
    pub prio2tc: Option<[u8; 8]>,
    /// Traffic class 0..7 to its scheduling; `None` for a class the source did not print.
    pub tcs: Option<[Option<TcSched>; 8]>,
    /// Priority 0..7 to the receive buffer it fills.
    pub prio2buffer: Option<[u8; 8]>,
    /// Receive buffer 0..7 to its size, bytes.
    pub buffer_size: Option<[u32; 8]>,
    /// dcb's `default-prio`: the priority of frames no rule classifies (IEEE 802.1Qaz
    /// ethertype-0 APP entry), where the driver keeps one.
    pub default_prio: Option<Priority>,
    /// mlx5 `ecn/roce_np/enable/P` (notification point: CNPs sent for marked packets).
    pub ecn_np: Option<[bool; 8]>,
    /// mlx5 `ecn/roce_rp/enable/P` (reaction point: the rate cut on CNPs received).
    pub ecn_rp: Option<[bool; 8]>,
    /// mlx5 `ecn/roce_np/cnp_802p_prio` and `cnp_dscp`: how CNPs are marked.
    pub cnp_802p_prio: Option<Priority>,
    pub cnp_dscp: Option<Dscp>,
    /// rdma_cm's `default_roce_tos` of this port (configfs), where it is set.
    pub default_roce_tos: Option<u8>,
    /// The priority the DCB APP table gives RoCE itself: RoCE v2's UDP port 4791
    /// (`dcb app add dev IF dgram-port-prio 4791:P`) or RoCE v1's ethertype 0x8915. Broadcom's
    /// bnxt_re puts RoCE on it (`bnxt_re_get_priority_mask`, which Broadcom's bnxt_setupcc.sh
    /// sets up); mlx5 and irdma do not read it. Left out of the inventory's JSON when there is
    /// none (the documents of nodes without one read as before).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub roce_app: Option<Priority>,
    /// MLNX_OFED's per-port ToS override (`tc/PORT/traffic_class`, `Global tclass=N`), where
    /// one is set: it wins over every QP's own ToS, rdma_cm's included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_class: Option<u8>,
    /// IEEE 802.3x global pause (`ethtool -a IF`), where it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_pause: Option<pause::GlobalPause>,
    /// The per-priority and pause counters of `ethtool -S`.
    pub counters: Option<PrioCounters>,
    /// Seconds since boot when the node was read (`/proc/uptime`, live only; the PCIe health
    /// read's figure): the most the lifetime counters above can cover. Not in the document.
    #[serde(skip)]
    pub uptime_s: Option<u64>,
}

impl PortQos {
    /// Fills what `self` left unread from `other` (field by field: the first source to say
    /// wins), and keeps both sources' records.
    pub fn merge(mut self, other: PortQos) -> PortQos {
        self.asked.extend(other.asked);
        self.trust = self.trust.or(other.trust);
        self.dscp2prio = self.dscp2prio.or(other.dscp2prio);
        self.pfc = self.pfc.or(other.pfc);
        self.prio2tc = self.prio2tc.or(other.prio2tc);
        self.tcs = self.tcs.or(other.tcs);
        self.prio2buffer = self.prio2buffer.or(other.prio2buffer);
        self.buffer_size = self.buffer_size.or(other.buffer_size);
        self.default_prio = self.default_prio.or(other.default_prio);
        self.ecn_np = self.ecn_np.or(other.ecn_np);
        self.ecn_rp = self.ecn_rp.or(other.ecn_rp);
        self.cnp_802p_prio = self.cnp_802p_prio.or(other.cnp_802p_prio);
        self.cnp_dscp = self.cnp_dscp.or(other.cnp_dscp);
        self.default_roce_tos = self.default_roce_tos.or(other.default_roce_tos);
        self.roce_app = self.roce_app.or(other.roce_app);
        self.traffic_class = self.traffic_class.or(other.traffic_class);
        self.global_pause = self.global_pause.or(other.global_pause);
        self.counters = self.counters.or(other.counters);
        self
    }

    /// Whether PFC is on for `p`, if known.
    pub fn pfc_on(&self, p: Priority) -> Option<bool> {
        self.pfc.map(|pfc| pfc[p.index()])
    }

    /// The priorities PFC is on, if known.
    pub fn pfc_priorities(&self) -> Option<Vec<Priority>> {
        self.pfc.map(|pfc| Priority::all().filter(|p| pfc[p.index()]).collect())
    }

    /// Priorities where ECN is on at both ends of DCQCN (notification and reaction point).
    pub fn ecn_priorities(&self) -> Option<Vec<Priority>> {
        match (self.ecn_np, self.ecn_rp) {
            (Some(np), Some(rp)) => Some(Priority::all().filter(|p| np[p.index()] && rp[p.index()]).collect()),
            _ => None,
        }
    }

    /// The priority the table maps `dscp` to, if it says.
    pub fn dscp_priority(&self, dscp: Dscp) -> Option<Priority> {
        self.dscp2prio.as_ref().and_then(|t| t.get(dscp.index()).copied().flatten())
    }

    /// The traffic class of `p` and how it is scheduled, as far as known.
    pub fn class_of(&self, p: Priority) -> Option<(u8, Option<TcSched>)> {
        let tc = self.prio2tc?[p.index()];
        Some((tc, self.tcs.and_then(|t| t.get(usize::from(tc)).copied().flatten())))
    }

    /// Whether `p`'s receive buffer can hold traffic losslessly: it has room (a size above 0)
    /// and a priority with PFC fills it (mlx5 makes a buffer lossless exactly when a PFC
    /// priority maps to it: `update_buffer_lossy` in en/port_buffer.c). `None` where the
    /// buffers or PFC are not known.
    pub fn buffer_lossless(&self, p: Priority) -> Option<bool> {
        let (map, sizes, pfc) = (self.prio2buffer?, self.buffer_size?, self.pfc?);
        let buffer = map[p.index()];
        let size = *sizes.get(usize::from(buffer))?;
        let pfc_fills = Priority::all().any(|q| map[q.index()] == buffer && pfc[q.index()]);
        // With no PFC at all, global pause makes the port's buffer lossless (port_buffer.c).
        let paused = !pfc.contains(&true) && self.global_pause.is_some_and(|g| g.on());
        Some(size > 0 && (pfc_fills || paused))
    }

    /// The receive buffer `p` fills and its size, if known.
    pub fn buffer_of(&self, p: Priority) -> Option<(u8, Option<u32>)> {
        let buffer = self.prio2buffer?[p.index()];
        Some((buffer, self.buffer_size.and_then(|s| s.get(usize::from(buffer)).copied())))
    }

    /// Whether any source gave the DCB part (PFC, ETS, trust, buffers).
    pub fn dcb_read(&self) -> bool {
        self.pfc.is_some() || self.trust.is_some() || self.prio2tc.is_some() || self.prio2buffer.is_some()
    }
}

/// A comma- or space-separated list of priorities, `none` when empty.
pub fn list(priorities: &[Priority]) -> String {
    if priorities.is_empty() {
        "none".into()
    } else {
        priorities.iter().map(Priority::to_string).collect::<Vec<_>>().join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_ranges() {
        assert_eq!(Priority::new(7).map(Priority::get), Some(7));
        assert_eq!(Priority::new(8), None);
        assert_eq!(Dscp::new(64), None);
        assert_eq!(Dscp::of_tos(106), Dscp(26), "NCCL's NCCL_IB_TC=106 is DSCP 26 with ECT(0)");
        assert_eq!(Dscp::of_tos(106).default_priority(), Priority(3));
        assert!(serde_json::from_str::<Priority>("9").is_err());
        assert_eq!(serde_json::to_string(&Priority(3)).unwrap(), "3");
    }

    #[test]
    fn merge_keeps_the_first_source_and_fills_the_rest() {
        let a = PortQos { trust: Some(Trust::Dscp), pfc: Some([false, false, false, true, false, false, false, false]), ..PortQos::default() };
        let b = PortQos { trust: Some(Trust::Pcp), prio2tc: Some([1, 0, 2, 3, 4, 5, 6, 7]), ..PortQos::default() };
        let m = a.merge(b);
        assert_eq!(m.trust, Some(Trust::Dscp));
        assert_eq!(m.prio2tc.map(|t| t[0]), Some(1));
        assert_eq!(m.pfc_priorities(), Some(vec![Priority(3)]));
    }

    #[test]
    fn a_buffer_is_lossless_when_a_pfc_priority_fills_it_and_it_has_room() {
        let mut q = PortQos {
            pfc: Some([false, false, false, true, false, false, false, false]),
            prio2buffer: Some([0, 0, 0, 1, 0, 0, 0, 0]),
            buffer_size: Some([130_944, 130_944, 0, 0, 0, 0, 0, 0]),
            ..PortQos::default()
        };
        assert_eq!(q.buffer_lossless(Priority(3)), Some(true));
        assert_eq!(q.buffer_lossless(Priority(0)), Some(false));
        q.buffer_size = Some([130_944, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(q.buffer_lossless(Priority(3)), Some(false), "no room");
        q.buffer_size = None;
        assert_eq!(q.buffer_lossless(Priority(3)), None);
    }
}
