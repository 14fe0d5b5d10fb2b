//! What to do about a finding: the one table from [`FindingId`] to [`Action`] (contract 0.5,
//! "Fleet acceptance"), written with every finding of every command and used by `accept`'s
//! drain list. docs/checks.md ("What to do: each id's action") gives each id's action and why.
//!
//! A drift (`accept.drift`) is about one key (firmware, PFC map, MTU...): its action is the
//! action of the check that key belongs to ([`DriftKind::check`]), so a node on older firmware
//! is `update-firmware` and one with another PFC map `fix-config`, from this same table.

use super::{Finding, FindingId, Subject};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The remedy class an operator (or a scheduler's drain) acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    None,
    FixConfig,
    Reboot,
    ColdReboot,
    Reseat,
    ReplaceCable,
    ReplaceOptic,
    RmaNic,
    RmaGpu,
    ContactFabricTeam,
    UpdateFirmware,
    InstallPackage,
}

impl Action {
    pub const ALL: [Action; 12] = [
        Action::None,
        Action::FixConfig,
        Action::Reboot,
        Action::ColdReboot,
        Action::Reseat,
        Action::ReplaceCable,
        Action::ReplaceOptic,
        Action::RmaNic,
        Action::RmaGpu,
        Action::ContactFabricTeam,
        Action::UpdateFirmware,
        Action::InstallPackage,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::None => "none",
            Action::FixConfig => "fix-config",
            Action::Reboot => "reboot",
            Action::ColdReboot => "cold-reboot",
            Action::Reseat => "reseat",
            Action::ReplaceCable => "replace-cable",
            Action::ReplaceOptic => "replace-optic",
            Action::RmaNic => "rma-nic",
            Action::RmaGpu => "rma-gpu",
            Action::ContactFabricTeam => "contact-fabric-team",
            Action::UpdateFirmware => "update-firmware",
            Action::InstallPackage => "install-package",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The table: each id's action. Exhaustive on purpose: a new id does not compile until it is
/// given an action here (and a line in docs/checks.md).
pub fn action(id: FindingId) -> Action {
    use Action as A;
    use FindingId as F;
    match id {
        F::StackDistribution | F::StackOfed | F::StackRdmaCore | F::GpuPeermem => A::InstallPackage,
        F::StackMemlock | F::StackModules | F::StackService | F::StackUverbs | F::SysfsUnreadable => A::FixConfig,
        F::DevicesCount | F::PciLink | F::PcieBound | F::PcieLink | F::PcieAer => A::Reseat,
        // Bytes changed between memory and memory with no transport error: the PCIe path, the
        // adapter or host memory (the wire's ICRC would have dropped the packet).
        F::PairData => A::Reseat,
        F::DeviceFw => A::UpdateFirmware,
        F::PcieAcs | F::PortLinkLayer | F::PortMtu | F::RoceGid | F::RoceLossless | F::RoceMtu | F::RoceQos | F::Ipoib => A::FixConfig,
        F::GpuAffinity | F::PairCapacity | F::PairFlowControl | F::PairMtu | F::PairRailCpu | F::PairQos | F::FabricDuplicate => A::FixConfig,
        F::FwPending => A::ColdReboot,
        F::PortLid | F::PortSm => A::ContactFabricTeam,
        F::PortState | F::PortBond | F::RoceNetdev | F::LinkErrors | F::LinkFlap | F::LinkRate | F::LinkSpeed | F::LinkTrained | F::LinkWidth => {
            A::ReplaceCable
        }
        F::PhyBer | F::PhyFec | F::SoakCounters | F::PairRail | F::PairRailUnreachable | F::PairRate | F::PairRetransmission => A::ReplaceCable,
        F::LinkRetransmission => A::ReplaceCable,
        F::PhyModule => A::ReplaceOptic,
        F::SoakWindow | F::PairDuration => A::None,
        F::PairAggregate | F::PairBw | F::PairCongestion | F::PairLatency | F::PairRegression | F::PairTail => A::ContactFabricTeam,
        F::PairSendLat | F::PairWriteLat | F::PairReadLat | F::PairWriteBw | F::PairReadBw | F::PairSendBw => A::ContactFabricTeam,
        F::MeshSuspect => A::ContactFabricTeam,
        F::RoceCongestion => A::ContactFabricTeam,
        // `--paths`: one ECMP member (the links a UDP source port hashes to) is bad.
        F::PairPath => A::ContactFabricTeam,
        F::CollectiveBusbw | F::CollectiveHop | F::CollectiveSuspect => A::ContactFabricTeam,
        F::PairAtomicLat | F::PairAtomicBw => A::ContactFabricTeam,
        F::PairLoadedLatency => A::ContactFabricTeam,
        F::GpuIbgda => A::FixConfig,
        F::MeshUnreachable | F::DevlinkHealth | F::AcceptUnreachable => A::Reboot,
        F::FabricErrors | F::FabricLinkDown | F::FabricLinkSpeed | F::FabricLinkWidth | F::FabricRail => A::ReplaceCable,
        F::FabricTopologyMissing | F::FabricTopologyMiswired => A::ReplaceCable,
        F::FabricCongestion | F::FabricDesign | F::FabricLid | F::FabricLinkState | F::FabricPkey | F::FabricRoute | F::FabricSm => {
            A::ContactFabricTeam
        }
        F::FabricTopologyExtra | F::FabricUnreachable => A::ContactFabricTeam,
        F::FabricCreditloop | F::FabricMcast | F::FabricVl | F::FabricAr | F::FabricSharp | F::FabricCc => A::ContactFabricTeam,
        // Not used for a finding: a drift's action is its key's check's (see `of`).
        F::AcceptDrift => A::FixConfig,
    }
}

/// What a drift is about: the keys `accept` compares across nodes (contract 0.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DriftKind {
    Firmware,
    DriverStack,
    Kernel,
    FwConfig,
    Mtu,
    LinkRate,
    Trust,
    Dscp2prio,
    Pfc,
    Ets,
    Ecn,
    Memlock,
    GpuDriver,
}

impl DriftKind {
    pub const ALL: [DriftKind; 13] = [
        DriftKind::Firmware,
        DriftKind::DriverStack,
        DriftKind::Kernel,
        DriftKind::FwConfig,
        DriftKind::Mtu,
        DriftKind::LinkRate,
        DriftKind::Trust,
        DriftKind::Dscp2prio,
        DriftKind::Pfc,
        DriftKind::Ets,
        DriftKind::Ecn,
        DriftKind::Memlock,
        DriftKind::GpuDriver,
    ];

    /// The key's name, the first word of a drift's key (`firmware mlx5_0`).
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::Firmware => "firmware",
            DriftKind::DriverStack => "driver_stack",
            DriftKind::Kernel => "kernel",
            DriftKind::FwConfig => "fw_config",
            DriftKind::Mtu => "mtu",
            DriftKind::LinkRate => "link_rate",
            DriftKind::Trust => "trust",
            DriftKind::Dscp2prio => "dscp2prio",
            DriftKind::Pfc => "pfc",
            DriftKind::Ets => "ets",
            DriftKind::Ecn => "ecn",
            DriftKind::Memlock => "memlock",
            DriftKind::GpuDriver => "gpu_driver",
        }
    }

    pub fn parse(text: &str) -> Option<DriftKind> {
        DriftKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// The check this key belongs to: its action is the drift's.
    pub fn check(self) -> FindingId {
        match self {
            DriftKind::Firmware => FindingId::DeviceFw,
            DriftKind::DriverStack => FindingId::StackOfed,
            DriftKind::Kernel => FindingId::StackDistribution,
            DriftKind::FwConfig => FindingId::FwPending,
            DriftKind::Mtu => FindingId::RoceMtu,
            DriftKind::LinkRate => FindingId::LinkRate,
            DriftKind::Trust | DriftKind::Dscp2prio | DriftKind::Pfc | DriftKind::Ets | DriftKind::Ecn => FindingId::RoceQos,
            DriftKind::Memlock => FindingId::StackMemlock,
            DriftKind::GpuDriver => FindingId::GpuPeermem,
        }
    }

    /// Contract: error for link rate, the PFC/trust/DSCP maps and firmware; warning otherwise.
    pub fn is_error(self) -> bool {
        matches!(self, DriftKind::Firmware | DriftKind::LinkRate | DriftKind::Trust | DriftKind::Dscp2prio | DriftKind::Pfc)
    }

    /// A drift's action: its key's check's.
    pub fn action(self) -> Action {
        match self {
            // fw_config's check is `fw.pending` (a cold reboot applies a pending change); a
            // parameter that differs across nodes is set with mlxconfig first.
            DriftKind::FwConfig => Action::FixConfig,
            DriftKind::Kernel => Action::InstallPackage,
            other => action(other.check()),
        }
    }
}

/// A finding's action: the table's, or for a drift its key's (the key's kind is the first word
/// of the drift's subject). An `info` finding asks for nothing: `none` (the table's action is
/// for the id's warnings and errors).
pub fn of(finding: &Finding) -> Action {
    if finding.severity == super::Severity::Info {
        return Action::None;
    }
    match (finding.id, &finding.subject) {
        (FindingId::AcceptDrift, Subject::Text(key)) => {
            key.split(' ').next().and_then(DriftKind::parse).map_or(action(FindingId::AcceptDrift), DriftKind::action)
        }
        (id, _) => action(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Severity;

    #[test]
    fn every_action_is_written_as_the_contract_lists_it() {
        let written: Vec<String> = Action::ALL.iter().map(|a| serde_json::to_value(a).unwrap().as_str().unwrap().to_string()).collect();
        let contract = "none fix-config reboot cold-reboot reseat replace-cable replace-optic rma-nic rma-gpu contact-fabric-team update-firmware install-package";
        assert_eq!(written.join(" "), contract);
        for a in Action::ALL {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
    }

    #[test]
    fn a_drift_takes_its_keys_action() {
        let drift = |key: &str| Finding::new(FindingId::AcceptDrift, Severity::Error, Subject::Text(key.into()), "m", "r");
        assert_eq!(of(&drift("firmware mlx5_0")), Action::UpdateFirmware);
        assert_eq!(of(&drift("pfc mlx5_0/1")), Action::FixConfig);
        assert_eq!(of(&drift("link_rate mlx5_0/1")), Action::ReplaceCable);
        assert_eq!(of(&drift("kernel")), Action::InstallPackage);
        assert_eq!(of(&drift("no-such-key")), Action::FixConfig);
        assert_eq!(of(&Finding::new(FindingId::PhyModule, Severity::Error, Subject::Node, "m", "r")), Action::ReplaceOptic);
        assert_eq!(of(&Finding::new(FindingId::FwPending, Severity::Info, Subject::Node, "not read", "r")), Action::None);
        for k in DriftKind::ALL {
            assert_eq!(DriftKind::parse(k.as_str()), Some(k));
        }
    }

    #[test]
    fn docs_checks_gives_every_id_the_tables_action() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/checks.md")).unwrap();
        let section = text.split("## What to do: each id's action").nth(1).expect("docs/checks.md has the actions section");
        let mut said = std::collections::BTreeMap::new();
        for row in section.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            for id in cells[1].split('`').filter(|t| !t.trim().is_empty()) {
                said.insert(FindingId::parse(id).unwrap_or_else(|| panic!("docs/checks.md names {id}, no id of this build")), cells[2].to_string());
            }
        }
        for &id in FindingId::ALL {
            let doc = said.get(&id).unwrap_or_else(|| panic!("docs/checks.md gives {id} no action"));
            if id != FindingId::AcceptDrift {
                assert_eq!(doc, action(id).as_str(), "{id}");
            }
        }
    }
}
