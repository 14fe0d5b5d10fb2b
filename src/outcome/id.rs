//! Every check and finding id, as a type. The JSON keeps 0.3's strings (`"port.state"`):
//! they are written and read here alone, so logic matches on a variant and a typo is a
//! compile error, not a check that silently never matches.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

macro_rules! finding_ids {
    ($($variant:ident = $text:literal,)+) => {
        /// A check row's or a finding's id.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum FindingId {
            $($variant,)+
        }

        impl FindingId {
            /// Every id, in the order of the table.
            pub const ALL: &'static [FindingId] = &[$(FindingId::$variant,)+];

            /// The id as the documents, the prom labels and the human views write it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(FindingId::$variant => $text,)+
                }
            }

            /// The id a document names (`None`: no id of this build).
            pub fn parse(text: &str) -> Option<FindingId> {
                match text {
                    $($text => Some(FindingId::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

finding_ids! {
    StackDistribution = "stack.distribution",
    StackMemlock = "stack.memlock",
    StackModules = "stack.modules",
    StackOfed = "stack.ofed",
    StackRdmaCore = "stack.rdma_core",
    StackService = "stack.service",
    StackUverbs = "stack.uverbs",
    DevicesCount = "devices.count",
    DeviceFw = "device.fw",
    PciLink = "pci.link",
    PcieAcs = "pcie.acs",
    PcieBound = "pcie.bound",
    PcieLink = "pcie.link",
    FwPending = "fw.pending",
    PortLid = "port.lid",
    PortLinkLayer = "port.link_layer",
    PortMtu = "port.mtu",
    PortSm = "port.sm",
    PortState = "port.state",
    PortBond = "port.bond",
    LinkErrors = "link.errors",
    LinkFlap = "link.flap",
    LinkRetransmission = "link.retransmission",
    LinkRate = "link.rate",
    LinkSpeed = "link.speed",
    LinkTrained = "link.trained",
    LinkWidth = "link.width",
    RoceGid = "roce.gid",
    RoceLossless = "roce.lossless",
    RoceMtu = "roce.mtu",
    RoceNetdev = "roce.netdev",
    PhyBer = "phy.ber",
    PhyFec = "phy.fec",
    PhyModule = "phy.module",
    Ipoib = "ipoib",
    GpuAffinity = "gpu.affinity",
    GpuPeermem = "gpu.peermem",
    GpuIbgda = "gpu.ibgda",
    SoakCounters = "soak.counters",
    SoakWindow = "soak.window",
    SysfsUnreadable = "sysfs.unreadable",
    PairAggregate = "pair.aggregate",
    PairBw = "pair.bw",
    PairCapacity = "pair.capacity",
    PairCongestion = "pair.congestion",
    PairData = "pair.data",
    PairDuration = "pair.duration",
    PairFlowControl = "pair.flow_control",
    PairLatency = "pair.latency",
    PairMtu = "pair.mtu",
    PairPath = "pair.path",
    PairRail = "pair.rail",
    PairRailCpu = "pair.rail.cpu",
    PairRailUnreachable = "pair.rail.unreachable",
    PairRate = "pair.rate",
    PairRegression = "pair.regression",
    PairRetransmission = "pair.retransmission",
    PairTail = "pair.tail",
    // A test that could not complete is a finding named after the test (`pair.<test>`).
    PairSendLat = "pair.send_lat",
    PairWriteLat = "pair.write_lat",
    PairReadLat = "pair.read_lat",
    PairWriteBw = "pair.write_bw",
    PairReadBw = "pair.read_bw",
    PairSendBw = "pair.send_bw",
    PairAtomicLat = "pair.atomic_lat",
    PairAtomicBw = "pair.atomic_bw",
    PairLoadedLatency = "pair.loaded_latency",
    MeshSuspect = "mesh.suspect",
    MeshUnreachable = "mesh.unreachable",
    FabricCongestion = "fabric.congestion",
    FabricDesign = "fabric.design",
    FabricDuplicate = "fabric.duplicate",
    FabricErrors = "fabric.errors",
    FabricLid = "fabric.lid",
    FabricLinkDown = "fabric.link.down",
    FabricLinkSpeed = "fabric.link.speed",
    FabricLinkState = "fabric.link.state",
    FabricLinkWidth = "fabric.link.width",
    FabricPkey = "fabric.pkey",
    FabricRail = "fabric.rail",
    FabricRoute = "fabric.route",
    FabricSm = "fabric.sm",
    FabricTopologyExtra = "fabric.topology.extra",
    FabricTopologyMissing = "fabric.topology.missing",
    FabricTopologyMiswired = "fabric.topology.miswired",
    FabricUnreachable = "fabric.unreachable",
    FabricCreditloop = "fabric.creditloop",
    FabricMcast = "fabric.mcast",
    FabricVl = "fabric.vl",
    FabricAr = "fabric.ar",
    FabricSharp = "fabric.sharp",
    FabricCc = "fabric.cc",
    PcieAer = "pcie.aer",
    DevlinkHealth = "devlink.health",
    RoceQos = "roce.qos",
    RoceCongestion = "roce.congestion",
    PairQos = "pair.qos",
    AcceptDrift = "accept.drift",
    AcceptUnreachable = "accept.unreachable",
    CollectiveBusbw = "collective.busbw",
    CollectiveHop = "collective.hop",
    CollectiveSuspect = "collective.suspect",
}

impl FindingId {
    /// The finding of a test that could not complete: `pair.<test>`.
    pub fn failed_test(test: crate::model::TestKind) -> FindingId {
        use crate::model::TestKind;
        match test {
            TestKind::SendLat => FindingId::PairSendLat,
            TestKind::WriteLat => FindingId::PairWriteLat,
            TestKind::ReadLat => FindingId::PairReadLat,
            TestKind::WriteBw => FindingId::PairWriteBw,
            TestKind::ReadBw => FindingId::PairReadBw,
            TestKind::SendBw => FindingId::PairSendBw,
            TestKind::AtomicLat => FindingId::PairAtomicLat,
            TestKind::AtomicBw => FindingId::PairAtomicBw,
            // One id for the test: judged (the loaded p99 against the idle one) or failed.
            TestKind::LatUnderLoad => FindingId::PairLoadedLatency,
        }
    }

    /// The family of checks the id belongs to: the part before its first dot (`port`, `pair`).
    pub fn family(self) -> Family {
        let head = self.as_str().split('.').next().unwrap_or("");
        Family::ALL.iter().copied().find(|f| f.as_str() == head).expect("every id's first part is a family (tested)")
    }
}

/// A family of checks: the rules that share an id's first part (`stack.ofed`, `stack.service`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Stack,
    Devices,
    Device,
    Pci,
    Pcie,
    Fw,
    Port,
    Link,
    Roce,
    Phy,
    Ipoib,
    Gpu,
    Soak,
    Sysfs,
    Pair,
    Mesh,
    Fabric,
    Devlink,
    Accept,
    Collective,
}

impl Family {
    /// Every family, in the order of the id table.
    pub const ALL: &'static [Family] = &[
        Family::Stack,
        Family::Devices,
        Family::Device,
        Family::Pci,
        Family::Pcie,
        Family::Fw,
        Family::Port,
        Family::Link,
        Family::Roce,
        Family::Phy,
        Family::Ipoib,
        Family::Gpu,
        Family::Soak,
        Family::Sysfs,
        Family::Pair,
        Family::Mesh,
        Family::Fabric,
        Family::Devlink,
        Family::Accept,
        Family::Collective,
    ];

    /// The family as its ids begin (`stack`).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Stack => "stack",
            Family::Devices => "devices",
            Family::Device => "device",
            Family::Pci => "pci",
            Family::Pcie => "pcie",
            Family::Fw => "fw",
            Family::Port => "port",
            Family::Link => "link",
            Family::Roce => "roce",
            Family::Phy => "phy",
            Family::Ipoib => "ipoib",
            Family::Gpu => "gpu",
            Family::Soak => "soak",
            Family::Sysfs => "sysfs",
            Family::Pair => "pair",
            Family::Mesh => "mesh",
            Family::Fabric => "fabric",
            Family::Devlink => "devlink",
            Family::Accept => "accept",
            Family::Collective => "collective",
        }
    }
}

impl fmt::Display for FindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, not `write_str`: the human tables align ids in columns (`{:<20}`).
        f.pad(self.as_str())
    }
}

impl Serialize for FindingId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FindingId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FindingId, D::Error> {
        let text = String::deserialize(d)?;
        FindingId::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown check id '{text}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::{Family, FindingId};

    #[test]
    fn every_id_reads_back_as_itself_and_is_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for id in FindingId::ALL {
            assert_eq!(FindingId::parse(id.as_str()), Some(*id));
            assert!(seen.insert(id.as_str()), "{id} twice");
            let json = serde_json::to_string(id).unwrap();
            assert_eq!(serde_json::from_str::<FindingId>(&json).unwrap(), *id);
            assert!(id.as_str() == id.family().as_str() || id.as_str().starts_with(&format!("{}.", id.family().as_str())), "{id}");
        }
        assert!(serde_json::from_str::<FindingId>("\"port.stat\"").is_err(), "a typo is an error, not a new id");
        assert_eq!(format!("{:<12}|", FindingId::PortState), "port.state  |");
        assert_eq!((FindingId::StackOfed.family(), FindingId::Ipoib.family()), (Family::Stack, Family::Ipoib));
        for test in crate::model::TestKind::ALL {
            assert_eq!(FindingId::failed_test(test).as_str(), format!("pair.{}", test.name()));
        }
    }
}
