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
            // What the other end enables: its PortInfo one directed-route hop out.
            port.partner = Some(peer(&mad));
            if port.sm_lid != 0 && port.sm_lid <= 0xbfff {
                port.sm_state = Some(match mad.sm_info(port.sm_lid as u16) {
                    Ok(raw) => decode::sm_info(port.sm_lid as u16, &raw).state.name(),
                    Err(_) => "NO ANSWER".into(),
                });
            }
        }
    }
}

/// The peer port's enabled width and speed (NodeInfo one hop out names the port the cable
/// enters, PortInfo of that port says what it enables), or why not.
fn peer(mad: &MadPort) -> crate::probe::partner::LinkPartner {
    use crate::probe::partner::{LinkPartner, PartnerUnknown};
    let unknown = LinkPartner::Unknown { why: PartnerUnknown::NoPeerPortInfo };
    let Ok(node) = mad.peer_node_info() else { return unknown };
    let (_, _, _, peer_port) = decode::node_info(&node);
    let Ok(raw) = mad.peer_port_info(peer_port) else { return unknown };
    partner_of(&decode::port_info(&raw, &[0u8; 64]))
}

/// What a peer's PortInfo enables (and supports), as a link partner.
pub fn partner_of(info: &super::model::PortInfo) -> crate::probe::partner::LinkPartner {
    use crate::probe::partner::{LinkPartner, PartnerUnknown};
    let width = info.width_supported.intersect(info.width_enabled).best().or(info.width_enabled.best());
    let speed = info.speed_supported.intersect(info.speed_enabled).best().or(info.speed_enabled.best());
    match (width, speed) {
        (Some(width), Some(speed)) => LinkPartner::Enabled { width, speed },
        _ => LinkPartner::Unknown { why: PartnerUnknown::NoPeerPortInfo },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::model::{SpeedSet, WidthSet};
    use crate::probe::decode::{PhysState, PortState, Speed, Width};
    use crate::probe::partner::LinkPartner;

    fn info(width_enabled: u8, width_supported: u8, speed_enabled: u32, speed_supported: u32) -> crate::fabric::model::PortInfo {
        crate::fabric::model::PortInfo {
            lid: 0,
            sm_lid: 0,
            lmc: 0,
            capability_mask: 0,
            state: PortState::Active,
            phys_state: PhysState::LinkUp,
            width_active: Width::X2,
            width_enabled: WidthSet(width_enabled),
            width_supported: WidthSet(width_supported),
            speed_active: Speed::Ndr,
            speed_enabled: SpeedSet(speed_enabled),
            speed_supported: SpeedSet(speed_supported),
        }
    }

    #[test]
    fn the_peer_enables_what_it_both_enables_and_supports() {
        let (x1, x4, x2) = (Width::X1.raw() as u8, Width::X4.raw() as u8, Width::X2.raw() as u8);
        let (hdr, ndr) = (Speed::Hdr.raw(), Speed::Ndr.raw());
        // A switch port split 2X: supports 1X/2X/4X, enables 1X/2X; NDR.
        assert_eq!(partner_of(&info(x1 | x2, x1 | x2 | x4, hdr | ndr, hdr | ndr)), LinkPartner::Enabled { width: Width::X2, speed: Speed::Ndr });
        // An HDR switch: enables NDR nowhere.
        assert_eq!(partner_of(&info(x1 | x4, x1 | x4, hdr | ndr, hdr)), LinkPartner::Enabled { width: Width::X4, speed: Speed::Hdr });
    }
}
