//! `ethtool --show-fec IFACE` (with `-I`, its statistics): which forward error correction the
//! link runs, and, where ethtool ≥ 6.0 and the kernel give them, the codewords it corrected
//! and the ones it could not.
//!
//! ethtool prints "RS" for both Reed-Solomon codes; which one runs follows from the lane rate
//! (IEEE 802.3: RS(528,514) "KR4" on 25G NRZ lanes, RS(544,514) "KP4" on 50G and faster PAM4
//! lanes), so the mode is settled once the lane rate is known ([`FecMode::with_lane_rate`]).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The FEC a link runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FecMode {
    #[serde(rename = "off")]
    Off,
    /// Clause 74 FireCode (BASE-R), for 10G/25G NRZ lanes.
    #[serde(rename = "BaseR")]
    BaseR,
    /// Reed-Solomon, code not yet settled.
    #[serde(rename = "RS")]
    Rs,
    /// RS(528,514), "KR4": 25G NRZ lanes.
    #[serde(rename = "RS-528")]
    Rs528,
    /// RS(544,514), "KP4": PAM4 lanes of 50G and more.
    #[serde(rename = "RS-544")]
    Rs544,
    /// Low-latency RS(272,257+1) (25G/50G Ethernet Consortium; InfiniBand HDR's LL-FEC),
    /// which mlxlink names `Standard LL RS-FEC - RS(271,257)` or `(272,257+1)`.
    #[serde(rename = "LLRS")]
    Llrs,
    /// RS(546,516) with physical-layer retransmission (mlxlink `... (546,516)+PLR`: InfiniBand
    /// NDR/XDR): a KP4-strength code whose uncorrectable codewords are sent again.
    #[serde(rename = "RS-546+PLR")]
    Rs546Plr,
    /// Two RS(544,514) codewords interleaved (mlxlink `Interleaved_Standard_RS-FEC (544,514)`).
    #[serde(rename = "RS-544-interleaved")]
    Interleaved,
}

impl FecMode {
    /// RS with the code the lane rate implies (Gb/s per lane).
    pub fn with_lane_rate(self, lane_gbps: Option<f64>) -> FecMode {
        match (self, lane_gbps) {
            (FecMode::Rs, Some(lane)) if lane >= 40.0 => FecMode::Rs544,
            (FecMode::Rs, Some(lane)) if lane > 20.0 => FecMode::Rs528,
            (other, _) => other,
        }
    }
}

impl fmt::Display for FecMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FecMode::Off => "off",
            FecMode::BaseR => "BaseR",
            FecMode::Rs => "RS",
            FecMode::Rs528 => "RS-528",
            FecMode::Rs544 => "RS-544",
            FecMode::Llrs => "LLRS",
            FecMode::Rs546Plr => "RS-546+PLR",
            FecMode::Interleaved => "RS-544-interleaved",
        })
    }
}

/// What `ethtool --show-fec` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FecReport {
    /// `None` when the report has no "Active FEC encoding" line, or it says only "Auto".
    pub active: Option<FecMode>,
    pub corrected_blocks: Option<u64>,
    pub uncorrectable_blocks: Option<u64>,
    /// Per lane, corrected codewords (`Lane N:` under `corrected_blocks`), lane 0 first.
    pub lane_corrected: Vec<u64>,
}

/// Reads an `ethtool --show-fec IFACE` report (ethtool 4.x to 6.x shapes).
pub fn parse_show_fec(report: &str) -> FecReport {
    #[derive(PartialEq)]
    enum Under {
        Nothing,
        Corrected,
        Uncorrectable,
    }
    let mut out = FecReport::default();
    let mut under = Under::Nothing;
    for line in report.lines().take(1024) {
        let trimmed = line.trim();
        let Some((key, value)) = trimmed.split_once(':') else { continue };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        if key == "active fec encoding" {
            out.active = value.split_whitespace().find_map(mode_word);
        } else if key == "corrected_blocks" {
            under = Under::Corrected;
            let (total, lanes) = total_and_lanes(value);
            out.corrected_blocks = total;
            if let Some(lanes) = lanes {
                out.lane_corrected = lanes;
            }
        } else if key == "uncorrectable_blocks" {
            under = Under::Uncorrectable;
            out.uncorrectable_blocks = total_and_lanes(value).0;
        } else if let Some(lane) = key.strip_prefix("lane ").and_then(|n| n.trim().parse::<usize>().ok()) {
            if under == Under::Corrected && lane < 8 {
                if out.lane_corrected.len() <= lane {
                    out.lane_corrected.resize(lane + 1, 0);
                }
                out.lane_corrected[lane] = value.parse().unwrap_or(0);
            }
        } else {
            under = Under::Nothing;
        }
    }
    out
}

/// A statistic's value: `256`, or with ethtool's one-line lanes (netlink/fec.c
/// `fec_show_stats` since the 6.18 histogram patch, "align format of blocks per-lane
/// statistics to histogram per-lane"): `256 [ per_lane: 5, 240, 11 ]`. Lanes past the eighth
/// and a list with an entry that is not a count are not read.
fn total_and_lanes(value: &str) -> (Option<u64>, Option<Vec<u64>>) {
    let (total, rest) = value.split_once('[').map_or((value, None), |(t, r)| (t, Some(r)));
    let lanes = rest
        .and_then(|r| r.trim().strip_prefix("per_lane:"))
        .and_then(|r| r.trim().strip_suffix(']'))
        .and_then(|r| r.split(',').map(|n| n.trim().parse::<u64>().ok()).collect::<Option<Vec<u64>>>())
        .filter(|l| l.len() <= 8);
    (total.trim().parse().ok(), lanes)
}

fn mode_word(word: &str) -> Option<FecMode> {
    match word.to_ascii_lowercase().as_str() {
        "off" | "none" => Some(FecMode::Off),
        "baser" | "base-r" | "fc" => Some(FecMode::BaseR),
        "rs" => Some(FecMode::Rs),
        "llrs" => Some(FecMode::Llrs),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethtool_5_without_statistics() {
        let r = parse_show_fec("FEC parameters for eth2:\nSupported/Configured FEC encodings: Auto RS BaseR\nActive FEC encoding: RS\n");
        assert_eq!(r.active, Some(FecMode::Rs));
        assert_eq!((r.corrected_blocks, r.uncorrectable_blocks), (None, None));
        assert_eq!(r.active.unwrap().with_lane_rate(Some(100.0)), FecMode::Rs544);
        assert_eq!(r.active.unwrap().with_lane_rate(Some(25.0)), FecMode::Rs528);
        assert_eq!(r.active.unwrap().with_lane_rate(None), FecMode::Rs);
    }

    #[test]
    fn ethtool_4_configured_line_and_off() {
        let r = parse_show_fec("FEC parameters for ens1f0:\nConfigured FEC encodings: Auto\nActive FEC encoding: None\n");
        assert_eq!(r.active, Some(FecMode::Off));
        let r = parse_show_fec("FEC parameters for ens1f0:\nConfigured FEC encodings: Off\nActive FEC encoding: Off\n");
        assert_eq!(r.active, Some(FecMode::Off));
    }

    #[test]
    fn ethtool_6_statistics_with_lanes() {
        let report = "FEC parameters for eth2:\nSupported/Configured FEC encodings: Auto RS\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 256\n    Lane 0: 5\n    Lane 1: 240\n    lane 2: 11\n  uncorrectable_blocks: 3\n    Lane 0: 3\n";
        let r = parse_show_fec(report);
        assert_eq!((r.corrected_blocks, r.uncorrectable_blocks), (Some(256), Some(3)));
        assert_eq!(r.lane_corrected, vec![5, 240, 11]);
    }

    #[test]
    fn ethtool_lanes_on_one_line() {
        // The shape ethtool's histogram patch prints for per-lane blocks (its `fec_show_stats`:
        // `"  %s: %" PRIu64`, then `" [ per_lane:"`, `"%s %" PRIu64` per lane, `" ]\n"`).
        let report = "FEC parameters for eth2:\nSupported/Configured FEC encodings: Auto BaseR\nActive FEC encoding: BaseR\nStatistics:\n  corrected_blocks: 256 [ per_lane: 5, 240, 11, 0 ]\n  uncorrectable_blocks: 3 [ per_lane: 3, 0, 0, 0 ]\n  fec_symbol_err_0: 445 [ per_lane:  125, 120, 100, 100 ]\n";
        let r = parse_show_fec(report);
        assert_eq!((r.corrected_blocks, r.uncorrectable_blocks), (Some(256), Some(3)));
        assert_eq!(r.lane_corrected, vec![5, 240, 11, 0]);
        let odd = parse_show_fec("  corrected_blocks: 7 [ per_lane: 1, x ]\n");
        assert_eq!((odd.corrected_blocks, odd.lane_corrected), (Some(7), vec![]), "a bad list is no lanes, the total stays");
    }

    #[test]
    fn garbage_reads_nothing() {
        assert_eq!(parse_show_fec("Cannot get FEC settings: Operation not supported\n"), FecReport::default());
    }
}
