//! What `check` asks over MADs about this node's own InfiniBand ports: the port's PortInfo
//! (what it supports and enables, against what it trained at), the SM's SMInfo (is the SM
//! the port names a master that answers), the link partner's PortInfo one hop out, and the
//! port's FEC counters (PortExtendedSpeedsCounters, FDR and faster: its `phy`, judged by
//! `phy.fec`/`phy.ber` as a RoCE port's ethtool figures are). Live nodes only, best effort:
//! without the MAD libraries or access to /dev/infiniband/umad*, `check` judges what verbs and
//! sysfs say.

use crate::mad::attributes::ExtSpeedsCounters;
use crate::mad::decode;
use crate::port::{LinkLayer, Speed, Width};
use crate::probe::phy::fec::FecMode;
use crate::probe::phy::Phy;
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
            if let Some(phy) = fec_counters(&mad, port.lid as u16, port_num, port.speed, port.width) {
                port.phy = Some(phy);
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

/// The peer port's enabled width and speed (NodeInfo one hop out names the port the cable
/// enters, PortInfo of that port says what it enables), or why not.
fn peer(mad: &MadPort) -> crate::probe::phy::partner::LinkPartner {
    use crate::probe::phy::partner::{LinkPartner, PartnerUnknown};
    let unknown = LinkPartner::Unknown { why: PartnerUnknown::NoPeerPortInfo };
    let Ok(node) = mad.peer_node_info() else { return unknown };
    let (_, _, _, peer_port) = decode::node_info(&node);
    let Ok(raw) = mad.peer_port_info(peer_port) else { return unknown };
    partner_of(&decode::port_info(&raw, &[0u8; 64]))
}

/// The port's PortExtendedSpeedsCounters, FDR and faster, where its PerfMgt agent says it has
/// them (as `fabric` asks them), as a `phy`.
fn fec_counters(mad: &MadPort, lid: u16, port: u8, speed: Speed, width: Width) -> Option<Phy> {
    let c = crate::mad::agent::Agent::default().ext_speeds_counters(mad, lid, port, speed)?;
    Some(ib_phy(&c, speed, width))
}

/// An InfiniBand port's FEC counters as the `phy` `check` judges (pure). HDR, NDR and XDR
/// lanes are PAM4 and run RS(544,514); FDR and EDR lanes are read in the Firecode layout, whose
/// FEC mode the counters do not say (EDR may run RS-FEC: PortInfoExtended is not read). Per
/// lane: corrected symbols (RS-FEC) or corrected blocks (Firecode), on the lanes the link
/// runs. No BER: the counters count symbols and blocks, not bits.
pub fn ib_phy(c: &ExtSpeedsCounters, speed: Speed, width: Width) -> Phy {
    let lanes = width.lanes();
    let in_use = lanes.map_or(c.lane_corrected.len(), |l| (l as usize).min(c.lane_corrected.len()));
    Phy {
        fec: c.rs_fec.then_some(FecMode::Rs544),
        lane_errors: c.lane_corrected[..in_use].to_vec(),
        fec_corrected_blocks: Some(c.corrected_blocks),
        fec_uncorrectable_blocks: Some(c.uncorrectable_blocks),
        lanes,
        lane_gbps: speed.data_lane_gbps(),
        ..Phy::default()
    }
}

/// What a peer's PortInfo enables (and supports), as a link partner.
pub fn partner_of(info: &crate::mad::attributes::PortInfo) -> crate::probe::phy::partner::LinkPartner {
    use crate::probe::phy::partner::{LinkPartner, PartnerUnknown};
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

    #[test]
    fn an_hdr_ports_fec_counters_read_as_its_phy() {
        let c = ExtSpeedsCounters {
            rs_fec: true,
            lane_corrected: vec![10, 9000, 12, 11, 0, 0, 0, 0, 0, 0, 0, 0],
            corrected_blocks: 400,
            uncorrectable_blocks: 3,
            ..ExtSpeedsCounters::default()
        };
        let phy = ib_phy(&c, Speed::Hdr, Width::X4);
        assert_eq!(phy.fec, Some(FecMode::Rs544));
        assert_eq!(phy.lane_errors, [10, 9000, 12, 11], "only the four lanes the link runs");
        assert_eq!((phy.fec_corrected_blocks, phy.fec_uncorrectable_blocks), (Some(400), Some(3)));
        assert_eq!((phy.lanes, phy.lane_gbps), (Some(4), Some(50.0)));
        assert_eq!((phy.ber_raw, phy.corrected_bits, phy.module.is_none()), (None, None, true));
        // A 2X split (NDR200) counts two lanes; EDR's Firecode layout says no FEC mode.
        assert_eq!(ib_phy(&c, Speed::Ndr, Width::X2).lane_errors, [10, 9000]);
        let edr = ib_phy(&ExtSpeedsCounters { rs_fec: false, ..c }, Speed::Edr, Width::X4);
        assert_eq!((edr.fec, edr.lane_gbps), (None, Some(25.0)));
    }
    use crate::mad::attributes::{SpeedSet, WidthSet};
    use crate::port::{PhysState, PortState, Speed, Width};
    use crate::probe::phy::partner::LinkPartner;

    fn info(width_enabled: u8, width_supported: u8, speed_enabled: u32, speed_supported: u32) -> crate::mad::attributes::PortInfo {
        crate::mad::attributes::PortInfo {
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
