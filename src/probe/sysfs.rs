//! Reads the inventory from a sysfs tree ([`SysfsRoot`]: the live `/sys`, or a captured copy
//! laid out as `ROOT/class/infiniband/...` and `ROOT/class/net/...`; links may be plain
//! folders), through the tree's bounded readers.
//!
//! Sysfs lacks a few things verbs has (the active MTU of an InfiniBand port, the maximum MTU,
//! the LMC on some kernels): those stay `None`. For RoCE the active MTU is derived from the
//! netdev MTU the same way the kernel derives it.

use super::bond::{self, Bond, BondLeg, LegRole};
use super::catype;
use super::model::{Counter, Device, Gid, Inventory, NetdevState, PciLink, Port, UpstreamPort};
use super::tree::valid_netdev_name;
pub use super::tree::SysfsRoot;
use crate::port::{self, GidType, LinkLayer, PhysState, PortState, RoceHeaders, Speed, Width};
use std::path::Path;

/// Error counters copied into the inventory when present.
const COUNTERS: [&str; 7] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
];

impl SysfsRoot {
    /// The whole inventory from this tree.
    pub fn inventory(&self) -> Inventory {
        let devices = self.device_names().iter().map(|name| self.device(name)).collect();
        Inventory { devices, source: format!("sysfs:{}", self.root.display()), unreadable: self.take_unreadable() }
    }

    fn read_counters(&self, dir: &Path) -> Vec<Counter> {
        let mut counters: Vec<Counter> = COUNTERS
            .iter()
            .filter_map(|name| {
                let value = self.read_trim(&dir.join(name))?.parse().ok()?;
                Some(Counter { name: name.to_string(), value })
            })
            .collect();
        // rxe has no PMA (no counters/) but counts its link going down in hw_counters/: what
        // a soak window's link.flap reads.
        if !counters.iter().any(|c| c.name == "link_downed") {
            if let Some(value) = dir.parent().and_then(|port| self.read_trim(&port.join("hw_counters/link_downed"))).and_then(|v| v.parse().ok()) {
                counters.push(Counter { name: "link_downed".into(), value });
            }
        }
        // The transport's sequence-error and CNP counters (`hw_counters/`, mlx5 and rxe): what a
        // soak window's link.retransmission and roce.congestion read.
        if let Some(hw) = dir.parent().map(|port| port.join("hw_counters")) {
            for name in super::window::OUT_OF_SEQUENCE.iter().chain(super::window::CNP.iter()) {
                if let Some(value) = self.read_trim(&hw.join(name)).and_then(|v| v.parse().ok()) {
                    counters.push(Counter { name: name.to_string(), value });
                }
            }
        }
        counters
    }

    /// One device, entirely from sysfs.
    pub fn device(&self, name: &str) -> Device {
        self.device_read(name, true)
    }

    /// What sysfs adds to verbs on a live node (counters, board, driver, PCI): not the GID
    /// tables (verbs reads them in one call; sysfs has a file per slot, 1024 a port on
    /// Soft-RoCE, three reads each) nor the QoS set-up (`live` reads it when asked).
    pub fn device_beside_verbs(&self, name: &str) -> Device {
        self.device_read(name, false)
    }

    /// Whether the device's RDMA driver puts RoCE on the DCB APP table's RoCE entry
    /// ([`catype::roce_on_app_entry`]): from its PCI vendor and driver alone, not a whole read.
    pub fn roce_on_app_entry(&self, name: &str) -> bool {
        let vendor = self.read_hex(&self.ib_class().join(name).join("device/vendor"));
        catype::roce_on_app_entry(name, vendor, self.driver(name).as_deref())
    }

    fn device_read(&self, name: &str, full: bool) -> Device {
        let dir = self.ib_class().join(name);
        let pci_dir = dir.join("device");
        let pci_vendor = self.read_hex(&pci_dir.join("vendor"));
        let part = self.read_hex(&pci_dir.join("device"));
        let vendor_id = match pci_vendor {
            Some(catype::MELLANOX_PCI_VENDOR) => Some(catype::MELLANOX_OUI),
            Some(other) => Some(other),
            None if name.starts_with("rxe") => Some(catype::RXE_VENDOR),
            None => None,
        };
        let vendor_part_id = part.or(if name.starts_with("rxe") { Some(0) } else { None });
        let mut ports: Vec<Port> = self.list_numbered(&dir.join("ports")).into_iter().map(|n| self.port_read(name, n, full)).collect();
        ports.sort_by_key(|p| p.port);
        Device {
            name: name.to_string(),
            node_type: self.read_numbered(&dir.join("node_type")).map_or(crate::port::NodeType::Ca, crate::port::NodeType::from_raw),
            // `physfn` is a link to the PF (read without following it: a bundle keeps the link,
            // not always the PF's folder).
            virtual_function: self.tree.link_name(self.inside(&pci_dir.join("physfn"))).is_some()
                || catype::is_virtual_function(vendor_id, vendor_part_id),
            ca_type: catype::ca_type(vendor_id, vendor_part_id, name),
            fw_ver: self.read_trim(&dir.join("fw_ver")).unwrap_or_default(),
            node_guid: self.read_trim(&dir.join("node_guid")).unwrap_or_default(),
            sys_image_guid: self.read_trim(&dir.join("sys_image_guid")).unwrap_or_default(),
            vendor_id,
            vendor_part_id,
            hca_type: self.read_trim(&dir.join("hca_type")).filter(|s| !s.is_empty()),
            board_id: self.read_trim(&dir.join("board_id")).filter(|s| !s.is_empty()),
            driver: self.driver(name),
            pci: self.pci(name),
            ports,
            fw_config: None,
        }
    }

    /// One port, entirely from sysfs.
    pub fn port(&self, device: &str, port: u32) -> Port {
        self.port_read(device, port, true)
    }

    /// One port; without `full`, no GID table and no QoS set-up (see
    /// `device_beside_verbs`).
    fn port_read(&self, device: &str, port: u32, full: bool) -> Port {
        let dir = self.ib_class().join(device).join("ports").join(port.to_string());
        let link_layer = match self.read_trim(&dir.join("link_layer")).as_deref() {
            Some("Ethernet") => LinkLayer::Ethernet,
            Some("InfiniBand") | None => LinkLayer::InfiniBand,
            // ib_core's `link_layer_show` prints "Unknown" for IB_LINK_LAYER_UNSPECIFIED, its
            // one other value (AWS EFA).
            Some(_) => LinkLayer::Unspecified,
        };
        let state = self.read_numbered(&dir.join("state")).map_or(PortState::Unknown(0), PortState::from_raw);
        let phys_state = self.read_numbered(&dir.join("phys_state")).map_or(PhysState::Unknown(0), PhysState::from_raw);
        let (width, speed, nominal) = match self.read_trim(&dir.join("rate")).as_deref().and_then(port::parse_sysfs_rate) {
            // Kernels print "(1X)" without a name for SDR.
            Some((nominal, width, speed)) => (width, speed.unwrap_or(Speed::Sdr), Some(nominal)),
            None => (Width::Unknown(0), Speed::Unknown(0), None),
        };
        let rate = port::link_rate(width, speed);
        let gids = if full { self.gids(&dir, link_layer) } else { Vec::new() };
        let netdev = self.port_netdev(device, port, &gids);
        let netdev_state = netdev.as_deref().and_then(|n| self.netdev_state(n));
        let active_mtu = match (link_layer, &netdev_state) {
            (LinkLayer::Ethernet, Some(NetdevState { mtu: Some(mtu), .. })) => RoceHeaders::for_driver(self.driver(device).as_deref()).roce_mtu(*mtu),
            _ => None,
        };
        let mut port = Port {
            port,
            state,
            phys_state,
            link_layer,
            lid: self.read_hex(&dir.join("lid")).unwrap_or(0),
            sm_lid: self.read_hex(&dir.join("sm_lid")).unwrap_or(0),
            lmc: self.read_trim(&dir.join("lid_mask_count")).and_then(|s| s.parse().ok()).unwrap_or(0),
            active_mtu,
            max_mtu: None,
            width,
            speed,
            rate_gbps: rate.map(|r| r.data_gbps),
            nominal_gbps: rate.map(|r| r.nominal_gbps).or(nominal),
            netdev,
            gids,
            netdev_state,
            counters: self.read_counters(&dir.join("counters")),
            speed_supported: None,
            width_supported: None,
            supported_gbps: None,
            rate_source: None,
            query_port: None,
            sm_state: None,
            partner: None,
            phy: None,
            soak: None,
            qos: None,
            bond: None,
        };
        port.bond = port.netdev.as_deref().and_then(|n| self.bond(device, n));
        let ethtool = port.tool_netdev().and_then(|n| self.ethtool_supported_mbps(n));
        port.settle_rate(ethtool);
        // Live, `probe::live` reads the physical layer and the QoS set-up once (and only for
        // `check`/`devices`).
        if !self.is_live() {
            let stats = super::port_fill::complete(self, &mut port);
            if full {
                super::port_fill::attach_qos(self, device, &mut port, stats.as_deref());
            }
            if link_layer == LinkLayer::InfiniBand {
                port.partner = self.peer_portinfo(device, port.port);
            }
        }
        port
    }

    /// A bundle's `tools/peer_portinfo/DEV-PORT.txt` (`smpquery -D portinfo 0,PORT`), decoded.
    pub fn peer_portinfo(&self, device: &str, port: u32) -> Option<super::phy::partner::LinkPartner> {
        if !crate::model::valid_device_name(device) {
            return None;
        }
        let text = self.read_trim(&self.root.join("tools/peer_portinfo").join(format!("{device}-{port}.txt")))?;
        Some(super::phy::peer_portinfo::parse_smpquery_portinfo(&text))
    }

    fn gids(&self, port_dir: &Path, link_layer: LinkLayer) -> Vec<Gid> {
        let mut gids = Vec::new();
        for index in self.list_numbered(&port_dir.join("gids")) {
            let Some(raw) = self.read_trim(&port_dir.join("gids").join(index.to_string())).and_then(|t| port::parse_gid(&t)) else {
                continue;
            };
            if port::gid_is_zero(&raw) {
                continue;
            }
            let attrs = port_dir.join("gid_attrs");
            let gid_type = match self.read_trim(&attrs.join("types").join(index.to_string())) {
                Some(text) => GidType::from_sysfs(&text, link_layer),
                None if link_layer == LinkLayer::InfiniBand => GidType::Ib,
                None => GidType::Unreported,
            };
            let netdev = self.read_netdev_name(&attrs.join("ndevs").join(index.to_string()));
            gids.push(Gid { index, gid: raw.into(), gid_type, netdev });
        }
        gids.sort_by_key(|g| g.index);
        gids
    }

    /// The netdev of a port: the RoCE GID table's netdev, else the PCI function's netdev whose
    /// `dev_port` matches (IPoIB, or RoCE with no GIDs yet), else rxe's `parent`.
    pub fn port_netdev(&self, device: &str, port: u32, gids: &[Gid]) -> Option<String> {
        if let Some(name) = gids.iter().find_map(|g| g.netdev.clone()) {
            return Some(name);
        }
        let dev_dir = self.ib_class().join(device);
        let net_dir = dev_dir.join("device/net");
        if let Ok(entries) = self.tree.list_dir(self.inside(&net_dir)) {
            let mut names: Vec<String> = entries.into_iter().filter_map(|e| e.into_string().ok()).filter(|n| valid_netdev_name(n)).collect();
            names.sort();
            let matching = names.iter().find(|n| {
                let dev_port = self
                    .read_trim(&net_dir.join(n).join("dev_port"))
                    .or_else(|| self.read_trim(&self.net_class().join(n).join("dev_port")))
                    .and_then(|s| s.parse::<u32>().ok());
                dev_port == Some(port.saturating_sub(1))
            });
            if let Some(name) = matching.or(if names.len() == 1 { names.first() } else { None }) {
                return Some(name.clone());
            }
        }
        self.read_netdev_name(&dev_dir.join("parent"))
    }

    /// The bond `netdev` is, with each leg's state and fastest link mode (`class/net/N/bonding/`
    /// and each leg's `bonding_slave/state`); `None` where it is no bond master. The legs of
    /// `device`'s own PCI function (`device/net`: mlx5 RoCE LAG's first PF) come first, then
    /// the rest in `bonding/slaves`' order.
    pub fn bond(&self, device: &str, netdev: &str) -> Option<Bond> {
        if !valid_netdev_name(netdev) {
            return None;
        }
        let dir = self.net_class().join(netdev).join("bonding");
        let mut names = bond::leg_names(&self.read_trim(&dir.join("slaves"))?);
        // Absent for a software device (rxe over a bond): not a file that could not be read.
        let own_dir = self.ib_class().join(device).join("device/net");
        let own: Vec<String> =
            self.tree.list_dir(self.inside(&own_dir)).unwrap_or_default().into_iter().filter_map(|n| n.into_string().ok()).collect();
        names.sort_by_key(|n| !own.contains(n));
        let legs = names
            .iter()
            .map(|name| {
                // A leg the tree does not hold is kept, unread (its state all `None`): the rules
                // say so rather than judge the bond on the legs they see.
                let state = self.netdev_state(name).unwrap_or_else(|| NetdevState {
                    name: name.clone(),
                    operstate: None,
                    carrier: None,
                    mtu: None,
                    speed_mbps: None,
                    duplex: None,
                    pfc_priorities: None,
                    ecn_priorities: None,
                });
                let role = self.read_trim(&self.net_class().join(name).join("bonding_slave/state")).as_deref().and_then(LegRole::parse);
                let supported_gbps = super::capacity::ethernet_gbps(self.ethtool_supported_mbps(name));
                BondLeg { state, role, supported_gbps, qos: None, phy: None }
            })
            .collect();
        let mode = self.read_trim(&dir.join("mode")).as_deref().and_then(bond::mode_name);
        Some(Bond { name: netdev.to_string(), mode, legs })
    }

    /// Link state of a netdev, as `ip link` and `ethtool` show it.
    pub fn netdev_state(&self, name: &str) -> Option<NetdevState> {
        if !valid_netdev_name(name) {
            return None;
        }
        let dir = self.net_class().join(name);
        if !self.exists(&dir) {
            return None;
        }
        Some(NetdevState {
            name: name.to_string(),
            operstate: self.read_trim(&dir.join("operstate")),
            carrier: self.read_trim(&dir.join("carrier")).map(|s| s == "1"),
            mtu: self.read_trim(&dir.join("mtu")).and_then(|s| s.parse().ok()),
            // "-1" (or an unreadable file, EINVAL) when the link is down.
            speed_mbps: self.read_trim(&dir.join("speed")).and_then(|s| s.parse::<i64>().ok()).and_then(|v| u32::try_from(v).ok()),
            duplex: self.read_trim(&dir.join("duplex")),
            pfc_priorities: None,
            ecn_priorities: None,
        })
    }

    fn driver(&self, device: &str) -> Option<String> {
        let dir = self.ib_class().join(device);
        if let Some(target) = self.tree.link_name(self.inside(&dir.join("device/driver"))) {
            return target.to_str().map(|s| match s {
                "mlx5_core" => "mlx5_ib".to_string(),
                "mlx4_core" => "mlx4_ib".to_string(),
                other => other.to_string(),
            });
        }
        if device.starts_with("rxe") || self.exists(&dir.join("parent")) {
            return Some("rdma_rxe".into());
        }
        let prefix: String = device.chars().take_while(|c| c.is_ascii_alphanumeric() && !c.is_ascii_digit()).collect();
        match prefix.as_str() {
            "mlx" => Some(format!("{}_ib", device.split('_').next().unwrap_or("mlx5"))),
            _ => None,
        }
    }

    fn pci(&self, device: &str) -> Option<PciLink> {
        let dir = self.ib_class().join(device).join("device");
        if !self.exists(&dir.join("vendor")) {
            return None;
        }
        let real = self.tree.resolve(self.inside(&dir)).ok();
        // A bundle's `device` may be a plain folder (no link to follow): then the kernel's
        // `uevent` names the function (`PCI_SLOT_NAME=%s`, drivers/pci/pci-driver.c pci_uevent).
        let address = real
            .as_ref()
            .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .filter(|a| a.contains(':'))
            .or_else(|| self.read_trim(&dir.join("uevent")).as_deref().and_then(slot_name));
        // The folder above the function's, when it is a PCI function too: the link's other end.
        let upstream = real.as_ref().and_then(|p| p.parent()).filter(|_| address.is_some()).and_then(|parent| {
            let name = parent.file_name()?.to_str()?;
            crate::probe::tool::valid_bdf(name).then(|| UpstreamPort {
                address: name.to_string(),
                max_speed: self.read_trim(&self.root.join(parent).join("max_link_speed")),
                max_width: self.read_trim(&self.root.join(parent).join("max_link_width")).and_then(|s| s.parse().ok()),
                target_gts: crate::sys::fs::read_prefix(&self.root.join(parent).join("config"), 256)
                    .ok()
                    .flatten()
                    .and_then(|b| crate::probe::pci::config::target_speed(&b)),
            })
        });
        let current_speed = self.read_trim(&dir.join("current_link_speed"));
        let current_width: Option<u32> = self.read_trim(&dir.join("current_link_width")).and_then(|s| s.parse().ok());
        let usable_gbps = match (&current_speed, current_width) {
            // The function's Max Payload Size, when its config bytes are readable (root; 256 B else).
            (Some(s), Some(w)) => super::capacity::pcie_usable_gbps(
                s,
                w,
                crate::sys::fs::read_prefix(&dir.join("config"), 256).ok().flatten().and_then(|b| crate::probe::pci::config::max_payload(&b)),
            ),
            _ => None,
        };
        Some(PciLink {
            upstream,
            usable_gbps,
            address,
            numa_node: self.read_trim(&dir.join("numa_node")).and_then(|s| s.parse().ok()),
            current_speed,
            current_width,
            max_speed: self.read_trim(&dir.join("max_link_speed")),
            max_width: self.read_trim(&dir.join("max_link_width")).and_then(|s| s.parse().ok()),
        })
    }
}

/// `PCI_SLOT_NAME` of a PCI function's `uevent` (`0000:17:00.0`), where it is a valid address.
fn slot_name(uevent: &str) -> Option<String> {
    uevent
        .lines()
        .take(64)
        .find_map(|l| l.trim().strip_prefix("PCI_SLOT_NAME="))
        .map(str::trim)
        .filter(|a| crate::probe::tool::valid_bdf(a))
        .map(str::to_string)
}
