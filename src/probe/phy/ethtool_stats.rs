//! The physical-layer counters of `ethtool -S IFACE`: bit errors the FEC corrected, symbol
//! errors it could not, per-lane error counts and link-down events.
//!
//! Drivers name them differently (mlx5 `rx_corrected_bits_phy`, bnxt_en `rx_corrected_bits`),
//! print them in their own order and omit what their firmware does not count: every figure is
//! `None` unless its line is there, so a driver that says nothing is "not readable", never zero.

use serde::{Deserialize, Serialize};

/// The figures `phy.ber`, `phy.fec` and `link.flap` read from `ethtool -S`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhyCounters {
    /// Bits the FEC corrected (pre-FEC errors): mlx5 `rx_corrected_bits_phy`, bnxt `rx_corrected_bits`.
    pub corrected_bits: Option<u64>,
    /// Symbol errors the FEC could not correct (post-FEC): mlx5 `rx_pcs_symbol_err_phy`,
    /// bnxt `rx_pcs_symbol_err`.
    pub symbol_errors: Option<u64>,
    /// Bits received at the PHY, where the driver counts them (bnxt `rx_bits`): the
    /// denominator of a lifetime BER.
    pub received_bits: Option<u64>,
    /// Per lane, the errors the FEC corrected on it (mlx5 `rx_err_lane_N_phy`), lane 0 first.
    pub lane_errors: Vec<u64>,
    /// mlx5 `link_down_events_phy`, bnxt `link_down_events`.
    pub link_down_events: Option<u64>,
    /// FEC codewords corrected / not correctable, where the driver prints them here
    /// (bnxt `rx_fec_corrected_blocks`, `rx_fec_uncorrectable_blocks`).
    pub fec_corrected_blocks: Option<u64>,
    pub fec_uncorrectable_blocks: Option<u64>,
}

impl PhyCounters {
    /// Whether the report held any physical-layer figure at all.
    pub fn is_empty(&self) -> bool {
        *self == PhyCounters::default()
    }
}

/// Most lanes a port has (an OSFP / QSFP-DD module carries 8).
const MAX_LANES: usize = 8;
/// Lines read at most: mlx5 prints a few thousand with many channels.
const MAX_LINES: usize = 100_000;

/// Reads the physical-layer counters out of an `ethtool -S IFACE` report.
pub fn parse_ethtool_stats(report: &str) -> PhyCounters {
    let mut out = PhyCounters::default();
    let mut lanes: [Option<u64>; MAX_LANES] = [None; MAX_LANES];
    for line in report.lines().take(MAX_LINES) {
        let Some((name, value)) = line.trim().split_once(':') else { continue };
        let Ok(value) = value.trim().parse::<u64>() else { continue };
        let slot = match name.trim() {
            "rx_corrected_bits_phy" | "rx_corrected_bits" => &mut out.corrected_bits,
            "rx_pcs_symbol_err_phy" | "rx_pcs_symbol_err" => &mut out.symbol_errors,
            "rx_bits_phy" | "rx_bits" => &mut out.received_bits,
            "link_down_events_phy" | "link_down_events" => &mut out.link_down_events,
            "rx_fec_corrected_blocks" | "rx_fec_corrected_blocks_phy" => &mut out.fec_corrected_blocks,
            "rx_fec_uncorrectable_blocks" | "rx_fec_uncorrectable_blocks_phy" => &mut out.fec_uncorrectable_blocks,
            other => {
                if let Some(lane) = lane_of(other) {
                    lanes[lane] = Some(value);
                }
                continue;
            }
        };
        // The first line wins: a later per-queue line of the same name is not the port's.
        slot.get_or_insert(value);
    }
    let present = lanes.iter().rposition(Option::is_some).map_or(0, |last| last + 1);
    out.lane_errors = lanes[..present].iter().map(|v| v.unwrap_or(0)).collect();
    out
}

/// `rx_err_lane_2_phy` → lane 2.
fn lane_of(name: &str) -> Option<usize> {
    let lane: usize = name.strip_prefix("rx_err_lane_")?.strip_suffix("_phy")?.parse().ok()?;
    (lane < MAX_LANES).then_some(lane)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of mlx5's report (ConnectX-6 Dx / ConnectX-7, MLNX_OFED and inbox drivers).
    const MLX5: &str = "NIC statistics:\n     rx_packets: 123456\n     tx_packets: 654321\n     rx_bytes_phy: 99999\n     link_down_events_phy: 1\n     rx_pcs_symbol_err_phy: 0\n     rx_corrected_bits_phy: 3512\n     rx_err_lane_0_phy: 1000\n     rx_err_lane_1_phy: 12\n     rx_err_lane_2_phy: 2400\n     rx_err_lane_3_phy: 100\n     ch0_arm: 0\n";

    #[test]
    fn mlx5_phy_counters() {
        let c = parse_ethtool_stats(MLX5);
        assert_eq!(c.corrected_bits, Some(3512));
        assert_eq!(c.symbol_errors, Some(0));
        assert_eq!(c.link_down_events, Some(1));
        assert_eq!(c.lane_errors, vec![1000, 12, 2400, 100]);
        assert_eq!(c.received_bits, None, "mlx5 does not count received bits here");
    }

    #[test]
    fn bnxt_names_and_any_order() {
        let report = "NIC statistics:\n     rx_fec_uncorrectable_blocks: 2\n     rx_bits: 1000000000000\n     link_down_events: 0\n     rx_corrected_bits: 77\n     rx_pcs_symbol_err: 5\n     rx_fec_corrected_blocks: 40\n";
        let c = parse_ethtool_stats(report);
        assert_eq!((c.corrected_bits, c.symbol_errors, c.received_bits), (Some(77), Some(5), Some(1_000_000_000_000)));
        assert_eq!((c.fec_corrected_blocks, c.fec_uncorrectable_blocks, c.link_down_events), (Some(40), Some(2), Some(0)));
        assert!(c.lane_errors.is_empty());
    }

    #[test]
    fn a_report_without_phy_counters_reads_nothing() {
        let c = parse_ethtool_stats("NIC statistics:\n     rx_packets: 1\n     garbage line\n     rx_corrected_bits_phy: not-a-number\n");
        assert!(c.is_empty(), "{c:?}");
    }
}
