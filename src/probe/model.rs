//! The inventory: plain data, filled from verbs or from a sysfs tree, read by every command.
//!
//! Field names and meanings follow the `fabcheck.devices.v1` contract; fields beyond the
//! contract are additions (never renames), and `None` means "the source does not say".

pub use super::netdev::NetdevState;
use crate::port::{GidType, LinkLayer, PhysState, PortState, Speed, Width};
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

/// A file of the inventory's source that could not be read (the tree's word for it).
pub use super::tree::Unreadable;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Device {
    pub name: String,
    /// CA (InfiniBand, RoCE), RNIC (iWARP) or another kind (sysfs `node_type`): which rules
    /// apply and whether `pair` can test it. Not in the documents, whose fields are fixed.
    #[serde(skip)]
    pub node_type: crate::port::NodeType,
    /// An SR-IOV virtual function (sysfs `device/physfn`, or an NVIDIA VF part id where a bundle
    /// holds no link): its address, MTU and QoS are its user's (a pod, a VM), its PCIe link and
    /// PHY its physical function's. Not in the documents.
    #[serde(skip)]
    pub virtual_function: bool,
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
    /// NVIDIA/Mellanox adapters: the firmware configuration parameters that matter for RDMA/GPU
    /// nodes, and any whose change waits for the next cold boot (`mlxconfig -e query`); `null`
    /// when not read (no tool, not root, not captured, another vendor).
    #[serde(default)]
    pub fw_config: Option<super::firmware::FwConfig>,
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
    /// What the link carries after encoding and TLP overhead, Gb/s (`probe::capacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_gbps: Option<f64>,
    /// The port at the other end of the link (the function's parent bridge in the PCI tree):
    /// what it can do bounds what the link can train at. `None` where the tree does not say (a
    /// bundle that copied `device` as a plain folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamPort>,
}

/// The upstream port of a PCIe link, as sysfs gives it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UpstreamPort {
    pub address: String,
    pub max_speed: Option<String>,
    pub max_width: Option<u32>,
    /// Its Link Control 2 Target Link Speed, GT/s, where its `config` was readable: a slot
    /// capped below both ends' maximum on purpose (`pcie.bound` info, not a fault).
    #[serde(skip)]
    pub target_gts: Option<f64>,
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
    /// Data rate after line encoding, Gb/s. On Ethernet: the netdev's speed when known (a
    /// RoCE driver's IB-style width and speed are a naming convention, not the line rate).
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
    /// The fastest speed the port supports (InfiniBand: `port_cap_flags2`, HDR and later),
    /// when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_supported: Option<Speed>,
    /// The widest width the port supports, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_supported: Option<Width>,
    /// Ethernet: the fastest link mode the netdev supports, Gb/s (`ethtool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_gbps: Option<f64>,
    /// Where `rate_gbps` comes from: `link` (width x speed) or `netdev` (Ethernet speed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_source: Option<RateSource>,
    /// Live only: which `query_port` answered, `extended` (fills `active_speed_ex`, which XDR
    /// needs) or `compat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_port: Option<String>,
    /// InfiniBand, live `check` only: the state the SM at `sm_lid` gives in SMInfo (`MASTER`,
    /// `STANDBY`...), or `NO ANSWER`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_state: Option<String>,
    /// What the other end of the link enables (RoCE: ethtool's link partner modes;
    /// InfiniBand: the peer's PortInfo), or why that is not known; `None` where not looked at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner: Option<super::phy::partner::LinkPartner>,
    /// The physical layer (FEC, bit errors, the module): `null` where nothing was readable.
    #[serde(default)]
    pub phy: Option<super::phy::Phy>,
    /// `check --soak`: what the counters did over the window (live only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<super::window::PortWindow>,
    /// RoCE: the QoS set-up (trust, DSCP table, PFC, ETS, buffers, ECN, CNPs, rdma_cm's
    /// default ToS, per-priority counters), each part `null` where not read; absent where not
    /// looked at (InfiniBand, a test's preparation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<super::qos::PortQos>,
    /// RoCE over a bond (mlx5 RoCE LAG): the bond `netdev` is, and each leg's state, link
    /// modes and QoS set-up; absent where the netdev is no bond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bond: Option<super::bond::Bond>,
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
pub struct Counter {
    pub name: String,
    pub value: u64,
}

impl Inventory {
    /// Whether a physical function is here (not only SR-IOV virtual functions, as inside a pod
    /// or a VM that was given VFs): then the VFs are their users', the node's set-up is the PFs'.
    pub fn has_physical_function(&self) -> bool {
        self.devices.iter().any(|d| !d.virtual_function)
    }

    /// Finds a device by name.
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// All (device, port) pairs, in order.
    pub fn ports(&self) -> impl Iterator<Item = (&Device, &Port)> {
        self.devices.iter().flat_map(|d| d.ports.iter().map(move |p| (d, p)))
    }

    /// `DEV:PORT` of another port of the same adapter card that is ACTIVE: another port of the
    /// device (mlx4), or the port of another PCI function of the card (mlx5 gives each port its
    /// own function, `0000:3b:00.0` and `.1`, and device). `None` on a single-port card.
    pub fn card_sibling_up(&self, device: &Device, port: u32) -> Option<String> {
        let card = |d: &Device| d.pci.as_ref()?.address.as_deref()?.rsplit_once('.').map(|(card, _)| card.to_string());
        let here = card(device);
        self.ports()
            .filter(|(d, p)| if d.name == device.name { p.port != port } else { here.is_some() && card(d) == here })
            .find(|(_, p)| p.state == crate::port::PortState::Active)
            .map(|(d, p)| format!("{}:{}", d.name, p.port))
    }
}

/// Where a port's data rate was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateSource {
    /// Active width times active speed, after line encoding.
    Link,
    /// The Ethernet netdev's speed.
    Netdev,
    /// Ethernet with no known netdev speed: the nominal rate of the reported width and speed.
    Nominal,
}

impl Port {
    /// Sets the data rate and what the port supports from what was read: on Ethernet the
    /// netdev's speed is the rate, and `ethtool_supported_mbps` what it could run at.
    pub fn settle_rate(&mut self, ethtool_supported_mbps: Option<u32>) {
        if self.link_layer != LinkLayer::Ethernet {
            self.rate_source = self.rate_gbps.map(|_| RateSource::Link);
            return;
        }
        // Over a bond, a flow's rate is one leg's (the bond's own speed sums the legs).
        let speed = match &self.bond {
            Some(bond) => bond.flow_leg().and_then(|l| l.state.speed_mbps),
            None => self.netdev_state.as_ref().and_then(|n| n.speed_mbps),
        };
        match super::capacity::ethernet_gbps(speed) {
            Some(g) => {
                self.rate_gbps = Some(g);
                self.rate_source = Some(RateSource::Netdev);
            }
            None => {
                self.rate_gbps = self.nominal_gbps;
                self.rate_source = self.rate_gbps.map(|_| RateSource::Nominal);
            }
        }
        self.supported_gbps = super::capacity::ethernet_gbps(ethtool_supported_mbps);
    }

    /// The netdev whose tools (`ethtool`, `dcb`, `mlnx_qos`) describe the link: a bond's leg
    /// (the bond master has no link modes, FEC, module or DCB of its own), else `netdev`.
    pub fn tool_netdev(&self) -> Option<&str> {
        match &self.bond {
            Some(bond) => bond.leg_for_tools().map(|l| l.name()),
            None => self.netdev.as_deref(),
        }
    }

    /// Whether netdev `name` carries this port: its netdev, or a leg of its bond (the kernel
    /// logs a bond's link changes under the leg's name).
    pub fn carried_by(&self, name: &str) -> bool {
        self.netdev.as_deref() == Some(name) || self.bond.as_ref().is_some_and(|b| b.legs.iter().any(|l| l.name() == name))
    }

    /// Below what it supports, in words (`speed EDR of HDR`, `200 of 400 Gb/s`), if it is.
    pub fn trained_low(&self) -> Option<String> {
        if self.link_layer == LinkLayer::Ethernet {
            let (Some(rate), Some(best)) = (self.rate_gbps, self.supported_gbps) else { return None };
            return (rate + 0.5 < best).then(|| format!("{} of {} Gb/s", crate::units::rate(rate), crate::units::rate(best)));
        }
        super::capacity::trained_low(self.width, self.speed, self.width_supported, self.speed_supported)
    }

    pub fn gids_of_type(&self, gid_type: GidType) -> impl Iterator<Item = &Gid> {
        self.gids.iter().filter(move |g| g.gid_type == gid_type)
    }
}
