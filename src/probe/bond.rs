//! A RoCE port over a Linux bond: NVIDIA's RoCE LAG (mlx5 `mlx5_bond_0`), and any driver
//! whose GIDs sit on a bond master.
//!
//! What the kernel gives, and fabcheck relies on (cited where read):
//! - When both PFs of a dual-port ConnectX are enslaved to one bond (802.3ad, active-backup or
//!   balance-xor), mlx5 replaces their two RDMA devices by one, `mlx5_bond_N`, with one port
//!   (`mlx5_lag`, "Implement RoCE LAG feature"). Its GIDs are the bond's addresses: the GID
//!   table's netdev (`gid_attrs/ndevs/N`) is the bond master.
//! - Its port state is the master's (`mlx5_query_port_roce`: `netdev_master_upper_dev_get_rcu`,
//!   ACTIVE while the bond runs with carrier, that is while one leg has), and its width and
//!   speed are the first PF's own (`translate_eth_proto_oper` of that PF's PTYS): `ibv_devinfo`
//!   and `ibstat` show one leg's rate.
//! - The master's `speed` is the sum of the legs that can send (`bond_ethtool_get_link_ksettings`:
//!   `speed += slave->speed` for each `bond_slave_can_tx`), one leg's in active-backup; it has
//!   no link modes, no FEC, no module and no DCB of its own: those are each leg's.
//! - A QP sends by one leg (mlx5 gives each QP a port affinity, round robin or by hash), so one
//!   flow's ceiling is a leg's speed, not the bond's.
//!
//! The types and their parsing are pure: the sysfs reader fills them, the rules
//! (`diagnose::bond_rules`) judge them. [`masters`] lists a tree's bonds, for the readers that
//! follow an interface to the bond it is a leg of (the bundle's tools, IPoIB's addresses).

use super::netdev::NetdevState;
use super::qos::PortQos;
use crate::sys::beneath::Tree;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The bond carrying a port, and each of its legs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Bond {
    /// The bond master (`bond0`): the port's GIDs and addresses are on it.
    pub name: String,
    /// bonding's mode as `bonding/mode` names it (`802.3ad`, `active-backup`, `balance-xor`).
    pub mode: Option<String>,
    /// The legs: those of the RDMA device's own PCI function first, then the rest in
    /// `bonding/slaves`' order.
    pub legs: Vec<BondLeg>,
}

/// One leg (bonding's "slave") of a bond.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BondLeg {
    /// The leg's netdev and its link state (`/sys/class/net/LEG`).
    pub state: NetdevState,
    /// `active` or `backup` (`bonding_slave/state`), where the kernel says.
    pub role: Option<LegRole>,
    /// The fastest link mode the leg supports, Gb/s (`ethtool LEG`), where read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_gbps: Option<f64>,
    /// The leg's QoS set-up, where read (RoCE: each leg carries lossless traffic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<PortQos>,
    /// The leg's physical layer (FEC, bit errors, the module), where read; the leg that
    /// describes the port leaves it to the port's `phy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<super::phy::Phy>,
}

/// A leg's place in its bond, as bonding's `bonding_slave/state` says it
/// (`bond_slave_state_show`: `active` or `backup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LegRole {
    Active,
    Backup,
}

impl LegRole {
    /// The file's word; anything else is not a role (`None`).
    pub fn parse(text: &str) -> Option<LegRole> {
        match text.trim() {
            "active" => Some(LegRole::Active),
            "backup" => Some(LegRole::Backup),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LegRole::Active => "active",
            LegRole::Backup => "backup",
        }
    }
}

impl BondLeg {
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Whether the leg's link state was read at all (a bundle may list a leg whose
    /// `class/net` folder it does not hold): an unread leg is neither up nor down.
    pub fn read(&self) -> bool {
        self.state.operstate.is_some() || self.state.carrier.is_some()
    }

    /// Up with carrier, as `ip link` says it (operstate `up`, or `unknown` with carrier).
    pub fn up(&self) -> bool {
        let s = &self.state;
        s.carrier != Some(false) && (s.operstate.as_deref() == Some("up") || (s.operstate.as_deref() == Some("unknown") && s.carrier == Some(true)))
    }

    /// Its speed, Gb/s, when up and the driver says.
    pub fn gbps(&self) -> Option<f64> {
        if !self.up() {
            return None;
        }
        super::capacity::ethernet_gbps(self.state.speed_mbps)
    }

    /// A backup leg of an active-backup bond: up, and idle by design.
    pub fn backup(&self) -> bool {
        self.role == Some(LegRole::Backup)
    }
}

impl Bond {
    /// The leg one flow rides at best: the fastest leg that is up (the active one of an
    /// active-backup bond). Its speed is a QP's ceiling.
    pub fn flow_leg(&self) -> Option<&BondLeg> {
        // The first of equals: the device's own leg (mlx5's PF0) comes first.
        let carrying = self.legs.iter().filter(|l| l.up() && !l.backup());
        carrying.reduce(|best, l| if l.gbps().unwrap_or(0.0) > best.gbps().unwrap_or(0.0) { l } else { best })
    }

    /// The leg whose tools describe the port: the flow leg, else the first leg.
    pub fn leg_for_tools(&self) -> Option<&BondLeg> {
        self.flow_leg().or(self.legs.first())
    }

    /// Whether only one leg carries traffic by design.
    pub fn active_backup(&self) -> bool {
        self.mode.as_deref() == Some("active-backup")
    }
}

/// bonding's `mode` file: "802.3ad 4", "active-backup 1": the name, its first word.
pub fn mode_name(text: &str) -> Option<String> {
    text.split_whitespace().next().filter(|w| w.len() <= 32 && w.bytes().all(|b| b.is_ascii_graphic())).map(str::to_string)
}

/// bonding's `slaves` file: the legs' names, space-separated; names that are no netdev's are
/// left out, and a repeated name is read once.
pub fn leg_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for word in text.split_whitespace().take(16) {
        if super::tree::valid_netdev_name(word) && !names.iter().any(|n| n == word) {
            names.push(word.to_string());
        }
    }
    names
}

/// Every bond master of a sysfs tree (`class/net/*/bonding/slaves`) with its legs, read inside
/// the tree, each file bounded; at most 4096 interfaces are looked at.
pub fn masters(tree: &Tree) -> Vec<(String, Vec<String>)> {
    let net = Path::new("class/net");
    let names = tree.list_dir(net).unwrap_or_default().into_iter().take(4096).filter_map(|n| n.into_string().ok());
    names
        .filter(|n| super::tree::valid_netdev_name(n))
        .filter_map(|bond| {
            let text = tree.read_text(&net.join(&bond).join("bonding/slaves"), 4096).ok()?;
            Some((bond, leg_names(&text)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leg(name: &str, operstate: &str, carrier: bool, mbps: Option<u32>, role: Option<LegRole>) -> BondLeg {
        BondLeg {
            state: NetdevState {
                name: name.into(),
                operstate: Some(operstate.into()),
                carrier: Some(carrier),
                mtu: Some(9000),
                speed_mbps: mbps,
                duplex: Some("full".into()),
                pfc_priorities: None,
                ecn_priorities: None,
            },
            role,
            supported_gbps: None,
            qos: None,
            phy: None,
        }
    }

    #[test]
    fn the_files_bonding_writes() {
        assert_eq!(mode_name("802.3ad 4\n").as_deref(), Some("802.3ad"));
        assert_eq!(mode_name("active-backup 1").as_deref(), Some("active-backup"));
        assert_eq!(mode_name("   "), None);
        assert_eq!(leg_names("ens1f0np0 ens1f1np1\n"), ["ens1f0np0", "ens1f1np1"]);
        assert_eq!(leg_names("a a ../x b/c -s"), ["a", "-s"], "a name with '/' or '..' is none; '-s' is a name (never put on a command line)");
        assert_eq!(LegRole::parse("backup\n"), Some(LegRole::Backup));
        assert_eq!(LegRole::parse("\u{1b}[2J"), None, "not a role: never printed");
    }

    /// One flow rides the fastest leg that carries: not a backup, not a leg without carrier.
    #[test]
    fn a_flow_rides_one_leg() {
        let lacp = Bond {
            name: "bond0".into(),
            mode: Some("802.3ad".into()),
            legs: vec![leg("p0", "up", true, Some(200_000), Some(LegRole::Active)), leg("p1", "up", true, Some(200_000), Some(LegRole::Active))],
        };
        assert_eq!(lacp.flow_leg().map(BondLeg::name), Some("p0"), "the first of equals");
        let one_down = Bond { legs: vec![leg("p0", "down", false, None, None), leg("p1", "up", true, Some(100_000), None)], ..lacp.clone() };
        assert_eq!(one_down.flow_leg().map(BondLeg::name), Some("p1"));
        let ab = Bond {
            name: "bond0".into(),
            mode: Some("active-backup".into()),
            legs: vec![leg("p0", "up", true, Some(400_000), Some(LegRole::Backup)), leg("p1", "up", true, Some(200_000), Some(LegRole::Active))],
        };
        assert_eq!(ab.flow_leg().map(BondLeg::name), Some("p1"), "the backup leg carries nothing");
        assert!(ab.active_backup());
        let none = Bond { legs: vec![leg("p0", "down", false, None, None)], ..lacp };
        assert!(none.flow_leg().is_none());
        assert_eq!(none.leg_for_tools().map(BondLeg::name), Some("p0"));
    }
}
