//! What `check` asks over MADs about this node's own InfiniBand ports: the port's PortInfo
//! (what it supports and enables, against what it trained at) and the SM's SMInfo (is the SM
//! the port names a master that answers). Live nodes only, best effort: without the MAD
//! libraries or access to /dev/infiniband/umad*, `check` judges what verbs and sysfs say.

use super::decode;
use crate::probe::decode::LinkLayer;
use crate::probe::Inventory;
use fabcheck_verbs::mad::{find_local_port, MadPort};

/// Per-MAD wait and retries: a node's own port and its SM answer at once or not at all.
const TIMEOUT_MS: u32 = 200;
const RETRIES: u32 = 1;

/// Fills `width_supported`, `speed_supported` and `sm_state` of the ACTIVE InfiniBand ports of
/// `inventory` that have a LID, from their own PortInfo and their SM's SMInfo.
pub fn enrich(inventory: &mut Inventory) {
    for device in &mut inventory.devices {
        for port in &mut device.ports {
            if port.link_layer != LinkLayer::InfiniBand || port.lid == 0 || port.lid > 0xbfff {
                continue;
            }
            let Ok(port_num) = u8::try_from(port.port) else { continue };
            let Ok(local) = find_local_port(Some(&device.name), Some(port_num)) else { continue };
            let Ok(mad) = MadPort::open(&local, TIMEOUT_MS, RETRIES) else { continue };
            if let Ok(raw) = mad.port_info(port.lid as u16, port_num) {
                let info = decode::port_info(&raw, &[0u8; 64]);
                // What this end could run at: what it both supports and enables.
                port.width_supported = info.width_supported.intersect(info.width_enabled).best().or(info.width_supported.best());
                port.speed_supported = info.speed_supported.intersect(info.speed_enabled).best().or(info.speed_supported.best());
            }
            if port.sm_lid != 0 && port.sm_lid <= 0xbfff {
                port.sm_state = Some(match mad.sm_info(port.sm_lid as u16) {
                    Ok(raw) => decode::sm_info(port.sm_lid as u16, &raw).state.name(),
                    Err(_) => "NO ANSWER".into(),
                });
            }
        }
    }
}
