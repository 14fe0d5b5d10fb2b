//! Decoding of raw MAD attribute payloads (big-endian, bit offsets as in the IBTA spec and
//! libibmad's field table `fields.c`). Pure functions over byte slices, tested on captured
//! and constructed payloads, including the speeds the simulator cannot produce (FDR..XDR).

use super::attributes::{Counters, ExtSpeedsCounters, PortInfo, SmInfo, SmState, SpeedSet, WidthSet};
use crate::port::{PhysState, PortState, Speed, Width};

/// Reads `width` bits starting `offset` bits from the start of `buf`, most significant bit
/// first: libibmad's `BITSOFFS(offset, width)` fields. Bits past the end read as zero.
pub fn be_bits(buf: &[u8], offset: usize, width: usize) -> u64 {
    (offset..offset + width).fold(0u64, |acc, bit| {
        let byte = buf.get(bit / 8).copied().unwrap_or(0);
        (acc << 1) | u64::from((byte >> (7 - bit % 8)) & 1)
    })
}

fn be_u64(buf: &[u8], byte: usize) -> u64 {
    be_bits(buf, byte * 8, 64)
}

/// PortInfo CapabilityMask bit IsSM: an SM runs behind this port.
pub const CAP_IS_SM: u32 = 1 << 1;

/// PortInfo CapabilityMask bit IsExtendedSpeedsSupported.
pub const CAP_EXTENDED_SPEEDS: u32 = 1 << 14;

/// Decodes a 64-byte PortInfo; `mlnx_ext` is the Mellanox ExtendedPortInfo (FDR10), zeros
/// when the node was not asked.
pub fn port_info(pi: &[u8], mlnx_ext: &[u8]) -> PortInfo {
    let f = |offset, width| be_bits(pi, offset, width) as u32;
    let capability_mask = f(160, 32);
    // Legacy speeds (SDR 1, DDR 2, QDR 4) are already Speed::raw bits.
    let mut supported = f(256, 4);
    // LinkSpeedEnabled 15 is "set to LinkSpeedSupported" (some firmware echoes what was Set),
    // not a bit set: as bits it would claim FDR10 (bit 3 in Speed::raw). As 0xff widths are.
    let mut enabled = match f(284, 4) {
        15 => supported,
        bits => bits,
    };
    let legacy_active = f(280, 4);
    // Extended speeds (FDR 1, EDR 2, HDR 4, NDR 8) sit four bits up in Speed::raw.
    let ext_supported = f(500, 4);
    let ext_valid = capability_mask & CAP_EXTENDED_SPEEDS != 0 || ext_supported != 0;
    // LinkSpeedExtEnabled 30 means "extended speeds disabled", 31 "all supported" (some
    // firmware echoes what was Set); otherwise it is a bit set like the others.
    let ext_enabled_raw = if ext_valid { f(507, 5) } else { 0 };
    let ext_enabled = match ext_enabled_raw {
        30 => 0,
        31 => ext_supported,
        bits => bits & 0xf,
    };
    let ext_active = if ext_valid { f(496, 4) } else { 0 };
    supported |= ext_supported << 4;
    enabled |= ext_enabled << 4;
    // XDR (LinkSpeedExtActive2/Supported2/Enabled2, IBTA 1.7): bit 0 of each.
    let (ext2_active, ext2_supported, ext2_enabled) = (f(449, 2), f(451, 2), f(453, 3));
    supported |= (ext2_supported & 1) << 8;
    enabled |= (ext2_enabled & 1) << 8;
    // FDR10 lives in Mellanox's ExtendedPortInfo (bit 0 of LinkSpeedSupported/Enabled/Active).
    let mlnx = |offset| be_bits(mlnx_ext, offset, 8) as u32;
    supported |= (mlnx(56) & 1) << 3;
    enabled |= (mlnx(88) & 1) << 3;
    let speed_active = if ext2_active & 1 != 0 {
        Speed::Xdr
    } else if ext_active != 0 {
        match ext_active {
            1 => Speed::Fdr,
            2 => Speed::Edr,
            4 => Speed::Hdr,
            8 => Speed::Ndr,
            other => Speed::Unknown(other << 4),
        }
    } else if mlnx(120) & 1 != 0 {
        Speed::Fdr10
    } else {
        Speed::from_raw(legacy_active)
    };
    let width_supported = WidthSet(f(240, 8) as u8);
    let mut width_enabled = WidthSet(f(232, 8) as u8);
    if width_enabled.0 == 0 || width_enabled.0 == 0xff {
        // 0 is "no change" and 255 "set to supported": either way, what the port supports.
        width_enabled = width_supported;
    }
    PortInfo {
        lid: f(128, 16) as u16,
        sm_lid: f(144, 16) as u16,
        lmc: f(277, 3) as u8,
        capability_mask,
        state: PortState::from_raw(f(260, 4)),
        phys_state: PhysState::from_raw(f(264, 4)),
        width_active: Width::from_raw(f(248, 8)),
        width_enabled,
        width_supported,
        speed_active,
        speed_enabled: SpeedSet(if enabled == 0 { supported } else { enabled }),
        speed_supported: SpeedSet(supported),
    }
}

/// NodeInfo fields fabcheck uses: (node type, number of ports, node GUID, local port number).
pub fn node_info(ni: &[u8]) -> (u8, u8, u64, u8) {
    (be_bits(ni, 16, 8) as u8, be_bits(ni, 24, 8) as u8, be_u64(ni, 12), be_bits(ni, 288, 8) as u8)
}

/// SMInfo at `lid`.
pub fn sm_info(lid: u16, raw: &[u8]) -> SmInfo {
    SmInfo {
        lid,
        guid: crate::mad::attributes::Guid(be_u64(raw, 0)),
        activity: be_bits(raw, 128, 32) as u32,
        priority: be_bits(raw, 160, 4) as u8,
        state: SmState::from_raw(be_bits(raw, 164, 4) as u8),
    }
}

/// PortCounters data area (the 192 bytes after the MAD header), plus PortCountersExtended's
/// when answered (its 64-bit data and packet counters replace the 32-bit ones). `additional`:
/// the agent's ClassPortInfo sets IsAdditionalPortCountersExtendedSupported, so the extended
/// area also holds the 64-bit PortXmitWait; without it those bytes mean nothing (ibsim leaves
/// them as junk).
pub fn counters(pc: &[u8], ext: Option<&[u8]>, additional: bool) -> Counters {
    let f = |offset, width| be_bits(pc, offset, width);
    let mut c = Counters {
        symbol_error: f(32, 16),
        link_error_recovery: f(48, 8),
        link_downed: f(56, 8),
        rcv_errors: f(64, 16),
        rcv_remote_physical_errors: f(80, 16),
        rcv_switch_relay_errors: f(96, 16),
        xmit_discards: f(112, 16),
        xmit_constraint_errors: f(128, 8),
        rcv_constraint_errors: f(136, 8),
        local_link_integrity_errors: f(152, 4),
        excessive_buffer_overrun_errors: f(156, 4),
        vl15_dropped: f(176, 16),
        // PortXmitData/RcvData count 32-bit words.
        xmit_data: f(192, 32) * 4,
        rcv_data: f(224, 32) * 4,
        xmit_pkts: f(256, 32),
        rcv_pkts: f(288, 32),
        xmit_wait: f(320, 32),
    };
    if let Some(ext) = ext {
        c.xmit_data = be_u64(ext, 8).saturating_mul(4);
        c.rcv_data = be_u64(ext, 16).saturating_mul(4);
        c.xmit_pkts = be_u64(ext, 24);
        c.rcv_pkts = be_u64(ext, 32);
        // The 64-bit PortXmitWait (libibmad's "More PortCountersExtended fields", byte 168)
        // is there only where the agent implements the additional extended counters.
        if additional {
            c.xmit_wait = be_u64(ext, 168);
        }
    }
    c
}

// --- The physical layer of InfiniBand ports (phy.fec, phy.ber) ---

/// PerfMgt ClassPortInfo CapabilityMask bit IsRSFECCountersSupported (IS_PM_RSFEC_COUNTERS_SUP):
/// the agent answers PortExtendedSpeedsCounters with RS-FEC counters.
pub const PMA_CAP_RSFEC_COUNTERS: u16 = 1 << 14;

/// PerfMgt ClassPortInfo CapabilityMask (ibsim's agent says 0x1200: extended width, PortXmitWait).
pub fn pma_capability_mask(class_port_info: &[u8]) -> u16 {
    be_bits(class_port_info, 16, 16) as u16
}

/// PerfMgt ClassPortInfo CapabilityMask2 (27 bits from bit 32, as perfquery reads it).
pub fn pma_capability_mask2(class_port_info: &[u8]) -> u32 {
    be_bits(class_port_info, 32, 27) as u32
}

/// CapabilityMask2 bit IsAdditionalPortCountersExtendedSupported: PortCountersExtended also
/// carries the 64-bit error counters and PortXmitWait.
pub const PMA_CAP2_ADDITIONAL_EXT_COUNTERS: u32 = 1 << 1;

/// Decodes the 192-byte PerfMgt data area of PortExtendedSpeedsCounters in the layout the
/// port's FEC uses (libibmad's IB_PESC_* and IB_PESC_RSFEC_* fields).
pub fn ext_speeds_counters(raw: &[u8], rs_fec: bool) -> ExtSpeedsCounters {
    let f = |offset, width| be_bits(raw, offset, width);
    let lane_corrected: Vec<u64> = (0..12).map(|i| f(352 + 32 * i, 32)).collect();
    if rs_fec {
        return ExtSpeedsCounters {
            rs_fec,
            sync_header_errors: f(128, 16),
            unknown_blocks: f(144, 16),
            lane_corrected,
            lane_errors_detected: vec![0; 12],
            corrected_blocks: f(1120, 32),
            uncorrectable_blocks: f(1152, 32),
            corrected_symbols: Some(f(1184, 32)),
        };
    }
    ExtSpeedsCounters {
        rs_fec,
        sync_header_errors: f(128, 16),
        unknown_blocks: f(144, 16),
        corrected_blocks: lane_corrected.iter().sum(),
        lane_corrected,
        lane_errors_detected: (0..12).map(|i| f(160 + 16 * i, 16)).collect(),
        uncorrectable_blocks: (0..12).map(|i| f(736 + 32 * i, 32)).sum(),
        corrected_symbols: None,
    }
}

// --- The unit of PortXmitWait (fabric.congestion) ---

/// PortSamplesControl Tick (bits 16..23 of the data area); None for a short answer.
pub fn samples_tick(port_samples_control: &[u8]) -> Option<u8> {
    port_samples_control.get(2).copied()
}

/// One PortXmitWait tick in nanoseconds at `speed`: (Tick + 1) symbol times, a symbol time
/// being what one lane takes to carry one byte (4 ns at SDR, whatever the width). Sources:
/// IBTA vol. 1 16.1.3.2 (PortSamplesControl:Tick), and NVIDIA's ibdiagnet manual, "Congestion
/// Assessment on InfiniBand Links". None at an unknown speed.
pub fn xmit_wait_tick_ns(tick: u8, speed: Speed) -> Option<f64> {
    speed.data_lane_gbps().map(|gbps| (f64::from(tick) + 1.0) * 8.0 / gbps)
}

// --- Switch and port tables (fabric.route, fabric.pkey) ---

/// SwitchInfo LinearFDBTop: the highest LID the linear forwarding table holds.
pub fn linear_fdb_top(switch_info: &[u8]) -> u16 {
    be_bits(switch_info, 48, 16) as u16
}

/// SwitchInfo PartitionEnforcementCap: P_Keys a switch's external port holds.
pub fn partition_enforcement_cap(switch_info: &[u8]) -> u16 {
    be_bits(switch_info, 112, 16) as u16
}

/// NodeInfo PartitionCap: P_Keys a CA port holds.
pub fn partition_cap(node_info: &[u8]) -> u16 {
    be_bits(node_info, 224, 16) as u16
}

/// The P_Keys of one 64-byte P_KeyTable block (32 big-endian entries; 0 is an empty slot).
pub fn pkey_block(block: &[u8]) -> Vec<u16> {
    block.chunks_exact(2).map(|b| u16::from_be_bytes([b[0], b[1]])).filter(|&k| k & 0x7fff != 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_and_node_info_table_sizes() {
        let mut si = [0u8; 64];
        si[0..2].copy_from_slice(&49152u16.to_be_bytes()); // LinearFDBCap
        si[6..8].copy_from_slice(&300u16.to_be_bytes()); // LinearFDBTop
        si[14..16].copy_from_slice(&32u16.to_be_bytes()); // PartitionEnforcementCap
        assert_eq!((linear_fdb_top(&si), partition_enforcement_cap(&si)), (300, 32));
        let mut ni = [0u8; 64];
        ni[28..30].copy_from_slice(&128u16.to_be_bytes());
        assert_eq!(partition_cap(&ni), 128);
    }

    #[test]
    fn port_samples_control_tick_and_its_length() {
        // OpCode 0xff, PortSelect 5, Tick 0x07 (as perfquery -c prints a ConnectX answer).
        let mut psc = vec![0u8; 192];
        psc[..3].copy_from_slice(&[0xff, 5, 0x07]);
        assert_eq!(samples_tick(&psc), Some(7));
        assert_eq!(samples_tick(&psc[..2]), None);
        assert_eq!(xmit_wait_tick_ns(0, Speed::Sdr), Some(4.0));
        assert_eq!(xmit_wait_tick_ns(0, Speed::Qdr), Some(1.0));
        assert_eq!(xmit_wait_tick_ns(7, Speed::Hdr), Some(1.28));
        assert_eq!(xmit_wait_tick_ns(255, Speed::Ndr), Some(20.48));
        assert_eq!(xmit_wait_tick_ns(0, Speed::Unknown(9)), None);
    }

    #[test]
    fn pma_capability_mask_as_ibsim_answers_it() {
        let mut cpi = [0u8; 192];
        cpi[2..4].copy_from_slice(&0x1200u16.to_be_bytes());
        assert_eq!(pma_capability_mask(&cpi), 0x1200);
        assert_eq!(pma_capability_mask(&cpi) & PMA_CAP_RSFEC_COUNTERS, 0, "ibsim is not asked PortExtendedSpeedsCounters");
    }

    #[test]
    fn port_xmit_wait_from_either_counter_set() {
        let mut pc = [0u8; 192];
        pc[40..44].copy_from_slice(&7000u32.to_be_bytes());
        assert_eq!(counters(&pc, None, false).xmit_wait, 7000);
        let mut ext = [0u8; 192];
        ext[168] = 0x25; // what ibsim leaves there: junk, its agent has no additional counters
        assert_eq!(counters(&pc, Some(&ext), false).xmit_wait, 7000, "no additional extended counters: the 32-bit one stands");
        ext[168..176].copy_from_slice(&(1u64 << 33).to_be_bytes());
        assert_eq!(counters(&pc, Some(&ext), true).xmit_wait, 1 << 33);
        // A CapabilityMask2 with bit 1 among others, and ibsim's (none).
        let mut cpi = [0u8; 192];
        cpi[4..8].copy_from_slice(&((0x62u32) << 5).to_be_bytes());
        assert_eq!(pma_capability_mask2(&cpi), 0x62);
        assert_ne!(pma_capability_mask2(&cpi) & PMA_CAP2_ADDITIONAL_EXT_COUNTERS, 0);
        assert_eq!(pma_capability_mask2(&[0u8; 192]) & PMA_CAP2_ADDITIONAL_EXT_COUNTERS, 0);
    }

    /// Constructed as a ConnectX-6 HDR port answers (RS-FEC layout), and an FDR one (Firecode).
    #[test]
    fn ext_speeds_counters_in_both_layouts() {
        let mut raw = [0u8; 192];
        raw[16..18].copy_from_slice(&3u16.to_be_bytes()); // SyncHeaderErrorCounter
        raw[18..20].copy_from_slice(&4u16.to_be_bytes()); // UnknownBlockCounter
        raw[20..22].copy_from_slice(&9u16.to_be_bytes()); // ErrorDetectionCounterLane0 (Firecode)
        for lane in 0..4 {
            let at = 44 + 4 * lane;
            raw[at..at + 4].copy_from_slice(&(100 * (lane as u32 + 1)).to_be_bytes());
        }
        raw[140..144].copy_from_slice(&555u32.to_be_bytes()); // PortFECCorrectableBlockCtr
        raw[144..148].copy_from_slice(&2u32.to_be_bytes()); // PortFECUncorrectableBlockCtr
        raw[148..152].copy_from_slice(&1234u32.to_be_bytes()); // PortFECCorrectedSymbolCtr
        let rs = ext_speeds_counters(&raw, true);
        assert_eq!((rs.sync_header_errors, rs.unknown_blocks), (3, 4));
        assert_eq!(&rs.lane_corrected[..5], &[100, 200, 300, 400, 0]);
        assert_eq!((rs.corrected_blocks, rs.uncorrectable_blocks, rs.corrected_symbols), (555, 2, Some(1234)));
        let mut fc = raw;
        fc[92..96].copy_from_slice(&5u32.to_be_bytes()); // FECUncorrectableBlockCtrLane0
        fc[96..100].copy_from_slice(&6u32.to_be_bytes()); // Lane1
        let fc = ext_speeds_counters(&fc, false);
        assert_eq!((fc.corrected_blocks, fc.uncorrectable_blocks, fc.corrected_symbols), (1000, 11, None));
        assert_eq!(fc.lane_errors_detected[0], 9);
        assert_eq!(ext_speeds_counters(&[], true).lane_corrected, vec![0; 12], "a short answer reads as zeros");
    }

    #[test]
    fn pkey_blocks_keep_the_set_entries() {
        let mut block = [0u8; 64];
        block[0..2].copy_from_slice(&0xffffu16.to_be_bytes());
        block[4..6].copy_from_slice(&0x8001u16.to_be_bytes());
        block[6..8].copy_from_slice(&0x8000u16.to_be_bytes()); // full bit only: an empty slot
        assert_eq!(pkey_block(&block), vec![0xffff, 0x8001]);
    }

    /// Writes `value` into `width` bits at `offset` (MSB first), as a switch's SMA would.
    fn put(buf: &mut [u8], offset: usize, width: usize, value: u64) {
        for i in 0..width {
            let bit = offset + i;
            let v = (value >> (width - 1 - i)) & 1;
            buf[bit / 8] = (buf[bit / 8] & !(1 << (7 - bit % 8))) | ((v as u8) << (7 - bit % 8));
        }
    }

    /// PortInfo of an ibsim switch port (captured with `smpquery -D portinfo`): LID 3,
    /// SM LID 1, 4X SDR active, 1X/4X/8X/12X/2X supported, 4X enabled, SDR/DDR/QDR
    /// supported, SDR enabled, ACTIVE / LinkUp.
    fn ibsim_port() -> [u8; 64] {
        let mut pi = [0u8; 64];
        pi[16..18].copy_from_slice(&3u16.to_be_bytes());
        pi[18..20].copy_from_slice(&1u16.to_be_bytes());
        pi[29] = 0x02; // LinkWidthEnabled 4X
        pi[30] = 0x1f; // LinkWidthSupported 1X 4X 8X 12X 2X
        pi[31] = 0x02; // LinkWidthActive 4X
        pi[32] = 0x74; // LinkSpeedSupported SDR|DDR|QDR, PortState ACTIVE
        pi[33] = 0x52; // PortPhysicalState LinkUp, LinkDownDefault Polling
        pi[35] = 0x11; // LinkSpeedActive SDR, LinkSpeedEnabled SDR
        pi
    }

    #[test]
    fn bits_read_msb_first() {
        let buf = [0b1010_0000, 0xff];
        assert_eq!(be_bits(&buf, 0, 1), 1);
        assert_eq!(be_bits(&buf, 0, 4), 0b1010);
        assert_eq!(be_bits(&buf, 4, 8), 0x0f);
        assert_eq!(be_bits(&buf, 12, 8), 0xf0, "past the end reads zero");
    }

    #[test]
    fn simulator_port_decodes() {
        let pi = port_info(&ibsim_port(), &[0; 64]);
        assert_eq!(pi.lid, 3);
        assert_eq!(pi.sm_lid, 1);
        assert_eq!(pi.state, PortState::Active);
        assert_eq!(pi.phys_state, PhysState::LinkUp);
        assert_eq!(pi.width_active, Width::X4);
        assert_eq!(pi.width_supported.best(), Some(Width::X12));
        assert_eq!(pi.width_enabled.best(), Some(Width::X4));
        assert_eq!(pi.speed_active, Speed::Sdr);
        assert_eq!(pi.speed_supported.best(), Some(Speed::Qdr));
        assert_eq!(pi.speed_enabled.best(), Some(Speed::Sdr));
        assert_eq!(pi.rate_gbps(), Some(8.0));
    }

    /// A 4X EDR port as ConnectX-4 reports it: ext speeds valid (CapMask bit 14), EDR active.
    #[test]
    fn edr_from_extended_fields() {
        let mut pi = ibsim_port();
        put(&mut pi, 160, 32, u64::from(CAP_EXTENDED_SPEEDS));
        pi[35] = 0x47; // legacy active QDR, enabled SDR|DDR|QDR
        put(&mut pi, 496, 4, 2); // LinkSpeedExtActive EDR
        put(&mut pi, 500, 4, 3); // Supported FDR|EDR
        put(&mut pi, 507, 5, 3); // Enabled FDR|EDR
        let d = port_info(&pi, &[0; 64]);
        assert_eq!(d.speed_active, Speed::Edr);
        assert_eq!(d.speed_supported.best(), Some(Speed::Edr));
        assert!(d.speed_supported.contains(Speed::Fdr) && d.speed_supported.contains(Speed::Qdr));
        assert_eq!(d.rate_gbps(), Some(100.0));
    }

    #[test]
    fn hdr100_is_2x_hdr_and_ndr200_is_2x_ndr() {
        let mut pi = ibsim_port();
        put(&mut pi, 160, 32, u64::from(CAP_EXTENDED_SPEEDS));
        pi[31] = 0x10; // 2X
        put(&mut pi, 496, 4, 4); // HDR
        put(&mut pi, 500, 4, 0xf);
        put(&mut pi, 507, 5, 0xf);
        let hdr100 = port_info(&pi, &[0; 64]);
        assert_eq!((hdr100.width_active, hdr100.speed_active, hdr100.rate_gbps()), (Width::X2, Speed::Hdr, Some(100.0)));
        put(&mut pi, 496, 4, 8); // NDR
        let ndr200 = port_info(&pi, &[0; 64]);
        assert_eq!((ndr200.width_active, ndr200.speed_active, ndr200.rate_gbps()), (Width::X2, Speed::Ndr, Some(200.0)));
        assert_eq!(ndr200.speed_supported.best(), Some(Speed::Ndr));
    }

    #[test]
    fn fdr_and_fdr10() {
        let mut pi = ibsim_port();
        put(&mut pi, 160, 32, u64::from(CAP_EXTENDED_SPEEDS));
        put(&mut pi, 496, 4, 1);
        put(&mut pi, 500, 4, 1);
        put(&mut pi, 507, 5, 1);
        let fdr = port_info(&pi, &[0; 64]);
        assert_eq!((fdr.speed_active, fdr.rate_gbps()), (Speed::Fdr, Some(54.5)));
        // FDR10: no extended speed active, Mellanox ExtendedPortInfo says FDR10.
        let mut pi = ibsim_port();
        let mut mepi = [0u8; 64];
        mepi[7] = 1;
        mepi[11] = 1;
        mepi[15] = 1;
        let fdr10 = port_info(&pi, &mepi);
        assert_eq!((fdr10.speed_active, fdr10.rate_gbps()), (Speed::Fdr10, Some(40.0)));
        assert_eq!(fdr10.speed_supported.best(), Some(Speed::Fdr10));
        pi[35] = 0x44;
        assert_eq!(port_info(&pi, &[0; 64]).speed_active, Speed::Qdr);
    }

    #[test]
    fn xdr_from_ext2_fields() {
        let mut pi = ibsim_port();
        put(&mut pi, 160, 32, u64::from(CAP_EXTENDED_SPEEDS));
        put(&mut pi, 500, 4, 0xf);
        put(&mut pi, 507, 5, 0xf);
        put(&mut pi, 449, 2, 1); // LinkSpeedExtActive2 XDR
        put(&mut pi, 451, 2, 1);
        put(&mut pi, 453, 3, 1);
        let xdr = port_info(&pi, &[0; 64]);
        assert_eq!((xdr.speed_active, xdr.rate_gbps()), (Speed::Xdr, Some(800.0)));
        assert_eq!(xdr.speed_supported.best(), Some(Speed::Xdr));
        // Trained at NDR on an XDR-capable port: the best both support is XDR.
        put(&mut pi, 449, 2, 0);
        put(&mut pi, 496, 4, 8);
        let ndr = port_info(&pi, &[0; 64]);
        assert_eq!(ndr.speed_active, Speed::Ndr);
        assert_eq!(ndr.speed_enabled.best(), Some(Speed::Xdr));
    }

    #[test]
    fn ext_enabled_special_values() {
        let mut pi = ibsim_port();
        put(&mut pi, 160, 32, u64::from(CAP_EXTENDED_SPEEDS));
        pi[35] = 0x47;
        put(&mut pi, 500, 4, 0b0111); // FDR EDR HDR supported
        put(&mut pi, 507, 5, 30); // extended speeds disabled
        let d = port_info(&pi, &[0; 64]);
        assert_eq!((d.speed_active, d.speed_enabled.best(), d.speed_supported.best()), (Speed::Qdr, Some(Speed::Qdr), Some(Speed::Hdr)));
        put(&mut pi, 507, 5, 31); // all supported
        assert_eq!(port_info(&pi, &[0; 64]).speed_enabled.best(), Some(Speed::Hdr));
    }

    /// LinkSpeedEnabled 15 means "what is supported", as width 0xff does; read as bits it
    /// claimed FDR10 on a QDR port.
    #[test]
    fn legacy_speed_enabled_15_is_the_supported_set() {
        let mut pi = ibsim_port();
        put(&mut pi, 256, 4, 0b0111); // SDR DDR QDR supported
        put(&mut pi, 284, 4, 15); // set to supported
        let d = port_info(&pi, &[0; 64]);
        assert!(!d.speed_enabled.contains(Speed::Fdr10), "{:?}", d.speed_enabled);
        assert_eq!(d.speed_enabled, d.speed_supported);
        assert_eq!(d.speed_enabled.best(), Some(Speed::Qdr));
    }

    #[test]
    fn ext_fields_ignored_without_capability() {
        let mut pi = ibsim_port();
        put(&mut pi, 496, 4, 4); // garbage in a field the port does not claim
        assert_eq!(port_info(&pi, &[0; 64]).speed_active, Speed::Sdr);
    }

    #[test]
    fn down_port_and_unknown_values() {
        let mut pi = [0u8; 64];
        pi[32] = 0x71; // supported SDR..QDR, DOWN
        pi[33] = 0x22; // Polling
        let d = port_info(&pi, &[0; 64]);
        assert_eq!((d.state, d.phys_state), (PortState::Down, PhysState::Polling));
        assert!(!d.link_up());
        assert_eq!(d.width_active, Width::Unknown(0));
        assert_eq!(d.rate_gbps(), None);
    }

    #[test]
    fn node_and_sm_info() {
        let mut ni = [0u8; 64];
        ni[2] = 2;
        ni[3] = 36;
        ni[12..20].copy_from_slice(&0x0002_c903_00a1_b2c3u64.to_be_bytes());
        ni[36] = 7;
        assert_eq!(node_info(&ni), (2, 36, 0x0002_c903_00a1_b2c3, 7));
        let mut sm = [0u8; 64];
        sm[0..8].copy_from_slice(&0x20_0000u64.to_be_bytes());
        sm[16..20].copy_from_slice(&116u32.to_be_bytes());
        sm[20] = 0xe3; // priority 14, MASTER
        let s = sm_info(1, &sm);
        assert_eq!((s.guid.0, s.priority, s.state, s.activity), (0x20_0000, 14, SmState::Master, 116));
        assert_eq!(s.guid.to_string(), "0x0000000000200000");
    }

    #[test]
    fn port_counters_layout() {
        let mut pc = [0u8; 192];
        pc[4..6].copy_from_slice(&900u16.to_be_bytes());
        pc[6] = 3;
        pc[7] = 2;
        pc[8..10].copy_from_slice(&11u16.to_be_bytes());
        pc[10..12].copy_from_slice(&12u16.to_be_bytes());
        pc[14..16].copy_from_slice(&14u16.to_be_bytes());
        pc[19] = 0x56;
        pc[22..24].copy_from_slice(&7u16.to_be_bytes());
        pc[24..28].copy_from_slice(&378u32.to_be_bytes());
        let c = counters(&pc, None, false);
        assert_eq!(
            (c.symbol_error, c.link_error_recovery, c.link_downed, c.rcv_errors, c.rcv_remote_physical_errors, c.xmit_discards),
            (900, 3, 2, 11, 12, 14)
        );
        assert_eq!((c.local_link_integrity_errors, c.excessive_buffer_overrun_errors, c.vl15_dropped), (5, 6, 7));
        assert_eq!(c.xmit_data, 1512);
        let mut ext = [0u8; 192];
        ext[8..16].copy_from_slice(&(1u64 << 40).to_be_bytes());
        assert_eq!(counters(&pc, Some(&ext), false).xmit_data, 1u64 << 42);
    }
}
