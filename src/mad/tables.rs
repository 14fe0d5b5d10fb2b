//! Decoding of the multicast and QoS tables' payloads (pure): SwitchInfo's multicast table
//! size, MulticastForwardingTable port masks, SLtoVLMappingTable, VLArbitrationTable entries,
//! and the PortInfo fields that size them. Bit offsets from rdma-core's libibmad/fields.c
//! (IB_SW_MCAST_FDB_CAP_F, IB_SW_MCAST_FDB_TOP_F, IB_PORT_VL_ARBITRATION_HIGH_CAP_F/LOW_CAP_F,
//! IB_PORT_OPER_VLS_F) and the table layouts of libibmad/dump.c (mad_dump_sltovl,
//! mad_dump_vlarbitration) and infiniband-diags/ibroute.c (the MFT walk).

use super::decode::be_bits;

/// The first multicast LID (IB_MIN_MCAST_LID).
pub const MIN_MCAST_LID: u16 = 0xc000;
/// MLIDs per MulticastForwardingTable block (IB_MLIDS_IN_BLOCK).
pub const MLIDS_IN_BLOCK: u16 = 32;
/// Ports per MulticastForwardingTable port mask (one "position").
pub const PORTS_PER_MASK: u8 = 16;

/// SwitchInfo MulticastFDBCap: how many MLIDs the switch's MFT holds.
pub fn mcast_fdb_cap(switch_info: &[u8]) -> u16 {
    be_bits(switch_info, 32, 16) as u16
}

/// SwitchInfo MulticastFDBTop: the highest MLID in use (0: the switch does not say).
pub fn mcast_fdb_top(switch_info: &[u8]) -> u16 {
    be_bits(switch_info, 144, 16) as u16
}

/// The last MLID worth reading, as ibroute.c's `dump_multicast_tables` bounds it: the
/// capacity, or MulticastFDBTop where it is set and lower (and not below the first MLID - 1,
/// which means "empty"). None: the table is empty or has no room.
pub fn last_mlid(switch_info: &[u8]) -> Option<u16> {
    let cap = mcast_fdb_cap(switch_info);
    if cap == 0 {
        return None;
    }
    let mut end = MIN_MCAST_LID.saturating_add(cap - 1);
    let top = mcast_fdb_top(switch_info);
    if top != 0 && top < end && top >= MIN_MCAST_LID - 1 {
        end = top;
    }
    (end >= MIN_MCAST_LID).then_some(end)
}

/// The 32 port masks of one MFT block at one position (big-endian 16-bit words; bit `i` is
/// port 16 * position + i).
pub fn mft_masks(block: &[u8]) -> [u16; 32] {
    let mut out = [0u16; 32];
    for (i, word) in block.chunks_exact(2).take(32).enumerate() {
        out[i] = u16::from_be_bytes([word[0], word[1]]);
    }
    out
}

/// The ports a mask at `position` lists.
pub fn mask_ports(mask: u16, position: u8) -> impl Iterator<Item = u8> {
    (0..PORTS_PER_MASK).filter(move |b| mask & (1 << b) != 0).map(move |b| position.saturating_mul(PORTS_PER_MASK).saturating_add(b))
}

/// An SLtoVLMappingTable: the VL of each SL 0..15 (SL 2i in the high nibble of byte i, as
/// ib_slvl_get_i reads it).
pub fn sl2vl(raw: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (sl, vl) in out.iter_mut().enumerate() {
        *vl = be_bits(raw, sl * 4, 4) as u8;
    }
    out
}

/// The first `count` (VL, weight) entries of a VLArbitrationTable block: two bytes each,
/// 4 reserved bits, the VL in 4 bits, the weight in 8 (ib_vl_arb_get_vl).
pub fn vlarb_entries(raw: &[u8], count: usize) -> Vec<(u8, u8)> {
    raw.chunks_exact(2).take(count.min(32)).map(|e| (e[0] & 0x0f, e[1])).collect()
}

/// PortInfo VLArbitrationHighCap and VLArbitrationLowCap: entries of each table.
pub fn vl_arb_caps(port_info: &[u8]) -> (u8, u8) {
    (be_bits(port_info, 312, 8) as u8, be_bits(port_info, 320, 8) as u8)
}

/// PortInfo OperationalVLs as a count of data VLs (1: VL0 only, 2: VL0-1, 3: VL0-3, 4:
/// VL0-7, 5: VL0-14); 0 where the field is 0 or out of range.
pub fn operational_vls(port_info: &[u8]) -> u8 {
    match be_bits(port_info, 344, 4) {
        1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        5 => 15,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multicast_table_bounds_as_ibroute_reads_them() {
        let mut si = [0u8; 64];
        si[4..6].copy_from_slice(&1024u16.to_be_bytes()); // MulticastFDBCap
        assert_eq!(mcast_fdb_cap(&si), 1024);
        assert_eq!(last_mlid(&si), Some(0xc3ff), "no top: the whole capacity");
        si[18..20].copy_from_slice(&0xc001u16.to_be_bytes()); // MulticastFDBTop
        assert_eq!((mcast_fdb_top(&si), last_mlid(&si)), (0xc001, Some(0xc001)));
        si[18..20].copy_from_slice(&0xbfffu16.to_be_bytes());
        assert_eq!(last_mlid(&si), None, "top 0xBFFF: nothing in use");
        si[18..20].copy_from_slice(&0x0010u16.to_be_bytes());
        assert_eq!(last_mlid(&si), Some(0xc3ff), "an illegal top is ignored, as ibroute warns and reads on");
        assert_eq!(last_mlid(&[0u8; 64]), None);
    }

    #[test]
    fn mft_masks_name_ports_by_position() {
        let mut block = [0u8; 64];
        block[0..2].copy_from_slice(&0b1000_0110u16.to_be_bytes()); // MLID +0: ports 1, 2, 7
        block[62..64].copy_from_slice(&0x8000u16.to_be_bytes()); // MLID +31: port 15
        let masks = mft_masks(&block);
        assert_eq!(mask_ports(masks[0], 0).collect::<Vec<_>>(), vec![1, 2, 7]);
        assert_eq!(mask_ports(masks[31], 0).collect::<Vec<_>>(), vec![15]);
        assert_eq!(mask_ports(masks[0], 2).collect::<Vec<_>>(), vec![33, 34, 39]);
        assert_eq!(masks[5], 0);
    }

    /// ibsim's default (sim_net.c `default_sl2vl`, OpenSM's default too): SL i to VL i, SL 15
    /// to VL 7.
    #[test]
    fn sl2vl_nibbles() {
        let raw = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];
        let map = sl2vl(&raw);
        assert_eq!(&map[..15], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
        assert_eq!(map[15], 7);
    }

    /// ibsim's default low-priority table (sim_net.c `default_vlarb_low`): VL0 weight 0, VL1..14
    /// weight 4; the reserved bits are ignored.
    #[test]
    fn vlarb_entries_and_caps() {
        let mut raw = [0u8; 64];
        for vl in 0..15u8 {
            raw[2 * usize::from(vl)] = 0xf0 | vl;
            raw[2 * usize::from(vl) + 1] = if vl == 0 { 0 } else { 4 };
        }
        let e = vlarb_entries(&raw, 15);
        assert_eq!((e.len(), e[0], e[1], e[14]), (15, (0, 0), (1, 4), (14, 4)));
        assert_eq!(vlarb_entries(&raw, 99).len(), 32);
        let mut pi = [0u8; 64];
        pi[39] = 8; // VLArbHighCap
        pi[40] = 16; // VLArbLowCap
        pi[43] = 0x40; // OperVLs 4: VL0-7
        assert_eq!((vl_arb_caps(&pi), operational_vls(&pi)), ((8, 16), 8));
        assert_eq!(operational_vls(&[0u8; 64]), 0);
    }
}
