//! The inventory: plain data, filled from verbs or from a sysfs tree, read by every command.
//!
//! Field names and meanings follow the `fabcheck.devices.v1` contract; fields beyond the
//! contract are additions (never renames), and `None` means "the source does not say".

use super::decode::{GidType, LinkLayer, PhysState, PortState, Speed, Width};
use serde::{Deserialize, Serialize};
use std::net::Ipv6Addr;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Inventory {
    pub devices: Vec<Device>,
    /// Where the data came from: `verbs` (live) or `sysfs:<root>`.
    #[serde(default)]
    pub source: String,
    /// Files that exist but could not be read (permissions, a symlink loop, a FIFO, too large):
    /// what they hold is unknown, which `check` says rather than misreading it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

/// A file of the inventory's source that could not be read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Unreadable {
    pub path: String,
    pub error: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Device {
    pub name: String,
    /// Product family decoded from the vendor part id ("ConnectX-6", "Soft-RoCE (rxe)").
    pub ca_type: String,
    pub fw_ver: String,
    pub node_guid: String,
    pub sys_image_guid: String,
    pub vendor_id: Option<u32>,
    pub vendor_part_id: Option<u32>,
    /// `hca_type` as sysfs and `ibstat` show it ("MT4123").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hca_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board_id: Option<String>,
    /// Kernel driver behind the device ("mlx5_ib", "rdma_rxe"), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<PciLink>,
    pub ports: Vec<Port>,
}

/// The PCIe link the adapter sits on: a card in a x8 slot cannot feed a 200G port.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PciLink {
    pub address: Option<String>,
    pub numa_node: Option<i32>,
    pub current_speed: Option<String>,
    pub current_width: Option<u32>,
    pub max_speed: Option<String>,
    pub max_width: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Port {
    pub port: u32,
    pub state: PortState,
    pub phys_state: PhysState,
    pub link_layer: LinkLayer,
    pub lid: u32,
    pub sm_lid: u32,
    pub lmc: u32,
    /// Bytes. `None` from sysfs on InfiniBand (sysfs does not hold it).
    pub active_mtu: Option<u32>,
    pub max_mtu: Option<u32>,
    pub width: Width,
    pub speed: Speed,
    /// Data rate after line encoding, Gb/s.
    pub rate_gbps: Option<f64>,
    /// The figure `ibstat` prints, Gb/s.
    pub nominal_gbps: Option<f64>,
    /// The netdev carrying this port (RoCE) or its IPoIB interface.
    pub netdev: Option<String>,
    pub gids: Vec<Gid>,
    /// Link state of `netdev` as `ip link` / `ethtool` show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev_state: Option<NetdevState>,
    /// Error counters worth a look (`symbol_error`, `link_downed`, ...), when readable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<Counter>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Gid {
    pub index: u32,
    /// Written as `inet_ntop(AF_INET6)` writes it (RFC 5952), as `ibv_devinfo` and `rdma` do.
    pub gid: Ipv6Addr,
    #[serde(rename = "type")]
    pub gid_type: GidType,
    pub netdev: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetdevState {
    pub name: String,
    /// `up`, `down`, `unknown`, ... as `/sys/class/net/X/operstate` says.
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    pub mtu: Option<u32>,
    /// Mb/s; `None` when the link is down or the driver does not say.
    pub speed_mbps: Option<u32>,
    pub duplex: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Counter {
    pub name: String,
    pub value: u64,
}

impl Inventory {
    /// Finds a device by name.
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// All (device, port) pairs, in order.
    pub fn ports(&self) -> impl Iterator<Item = (&Device, &Port)> {
        self.devices.iter().flat_map(|d| d.ports.iter().map(move |p| (d, p)))
    }
}

impl Port {
    pub fn gids_of_type(&self, gid_type: GidType) -> impl Iterator<Item = &Gid> {
        self.gids.iter().filter(move |g| g.gid_type == gid_type)
    }
}
