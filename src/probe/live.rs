//! The live inventory: verbs for what the adapter says, sysfs for what only the kernel knows
//! (netdev link state, PCIe link, board id, driver).

use super::model::{Device, Gid, Inventory, Port};
use super::sysfs::SysfsRoot;
use super::{capacity, catype, ProbeError};
use crate::port::{self, GidType, LinkLayer, PhysState, PortState, Speed, Width};
use fabcheck_verbs::{self as verbs, Context};

/// Builds the inventory of every device (or just `only`) through libibverbs. `lossless`: also
/// read each RoCE netdev's physical layer and QoS set-up (`ethtool`, `dcb` runs per netdev;
/// `check` wants them, a test's preparation does not).
pub fn inventory(only: Option<&str>, lossless: bool) -> Result<Inventory, ProbeError> {
    let names = verbs::device_names().map_err(ProbeError::from_device_list)?;
    if names.is_empty() {
        return Err(ProbeError::NoDevices);
    }
    let selected: Vec<&String> = match only {
        Some(name) => {
            let found: Vec<&String> = names.iter().filter(|n| n.as_str() == name).collect();
            if found.is_empty() {
                return Err(ProbeError::NoSuchDevice { name: name.to_string(), present: names.clone() });
            }
            found
        }
        None => names.iter().collect(),
    };
    let sysfs = SysfsRoot::live();
    let mut devices = Vec::new();
    for name in selected {
        devices.push(device(name, &sysfs, lossless)?);
    }
    Ok(Inventory { devices, source: "verbs".into(), unreadable: sysfs.take_unreadable() })
}

fn device(name: &str, sysfs: &SysfsRoot, lossless: bool) -> Result<Device, ProbeError> {
    let ctx = Context::open(name)?;
    let attrs = ctx.query_device()?;
    let from_sysfs = sysfs.device_beside_verbs(name);
    let mut ports = Vec::new();
    for port_num in 1..=attrs.phys_port_cnt {
        let pa = ctx.query_port(port_num)?;
        let link_layer = LinkLayer::from_verbs(u32::from(pa.link_layer), from_sysfs.node_type);
        let gid_entries = ctx.gid_table(port_num, pa.gid_tbl_len)?;
        let gids: Vec<Gid> = gid_entries
            .iter()
            .map(|e| Gid {
                index: e.index,
                gid: e.gid.into(),
                gid_type: match e.gid_type {
                    Some(raw) => GidType::from_raw(raw),
                    None if link_layer == LinkLayer::InfiniBand => GidType::Ib,
                    None => GidType::Unreported,
                },
                netdev: e.netdev.clone(),
            })
            .collect();
        let width = Width::from_raw(u32::from(pa.active_width));
        let speed = Speed::from_verbs(u32::from(pa.active_speed), pa.active_speed_ex);
        let rate = port::link_rate(width, speed);
        let sysfs_port = from_sysfs.ports.iter().find(|p| p.port == u32::from(port_num));
        let netdev = gids.iter().find_map(|g| g.netdev.clone()).or_else(|| sysfs.port_netdev(name, u32::from(port_num), &[]));
        let netdev_state = netdev.as_deref().and_then(|n| sysfs.netdev_state(n));
        let mut port = Port {
            port: u32::from(port_num),
            state: PortState::from_raw(pa.state),
            phys_state: PhysState::from_raw(u32::from(pa.phys_state)),
            link_layer,
            lid: u32::from(pa.lid),
            sm_lid: u32::from(pa.sm_lid),
            lmc: u32::from(pa.lmc),
            active_mtu: port::mtu_bytes(pa.active_mtu),
            max_mtu: port::mtu_bytes(pa.max_mtu),
            width,
            speed,
            rate_gbps: rate.map(|r| r.data_gbps),
            nominal_gbps: rate.map(|r| r.nominal_gbps),
            netdev,
            gids,
            netdev_state,
            counters: sysfs_port.map(|p| p.counters.clone()).unwrap_or_default(),
            speed_supported: capacity::speed_supported(pa.port_cap_flags2),
            width_supported: None,
            supported_gbps: None,
            rate_source: None,
            query_port: Some(if pa.extended_query { "extended" } else { "compat" }.into()),
            sm_state: None,
            partner: None,
            phy: None,
            soak: None,
            qos: None,
            bond: None,
        };
        port.bond = port.netdev.as_deref().and_then(|n| sysfs.bond(name, n));
        let ethtool = port.tool_netdev().and_then(|n| sysfs.ethtool_supported_mbps(n));
        port.settle_rate(ethtool);
        if lossless {
            let stats = super::port_fill::complete(sysfs, &mut port);
            super::port_fill::attach_qos(sysfs, name, &mut port, stats.as_deref());
        }
        ports.push(port);
    }
    Ok(Device {
        name: name.to_string(),
        node_type: from_sysfs.node_type,
        virtual_function: from_sysfs.virtual_function,
        ca_type: catype::ca_type(Some(attrs.vendor_id), Some(attrs.vendor_part_id), name),
        fw_ver: attrs.fw_ver.clone(),
        node_guid: port::format_guid(attrs.node_guid),
        sys_image_guid: port::format_guid(attrs.sys_image_guid),
        vendor_id: Some(attrs.vendor_id),
        vendor_part_id: Some(attrs.vendor_part_id),
        hca_type: from_sysfs.hca_type,
        board_id: from_sysfs.board_id,
        driver: from_sysfs.driver,
        pci: from_sysfs.pci,
        ports,
        fw_config: None,
    })
}
