//! A port's physical layer: FEC, bit and symbol errors, the module in the cage, and the link
//! partner, gathered from `ethtool` (live, through a bounded child, once per port per run) or
//! from a bundle's saved reports (`ethtool/IFACE.stats.txt`, `.fec.txt`, `.module.txt`,
//! `.module.hex.txt`, read through the sysfs tree's bounded reader). Judged in
//! `diagnose::phy_rules`; shown per port as `phy` in `devices --json`.

pub mod ethtool_stats;
pub mod fec;
pub mod mlxlink;
pub mod module;
pub mod module_hex;
pub mod partner;
pub mod peer_portinfo;

use crate::port::LinkLayer;
use ethtool_stats::PhyCounters;
use fec::FecMode;
use module::Module;
use serde::{Deserialize, Serialize};

/// The physical-layer figures of a port; `null` where not readable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phy {
    /// The FEC the link runs (`RS-544`, `RS-528`, `BaseR`, `off`), from `ethtool --show-fec`.
    pub fec: Option<FecMode>,
    /// Pre-FEC bit error rate: corrected bits over bits received, where both are known.
    pub ber_raw: Option<f64>,
    /// Post-FEC: symbol errors the FEC could not correct, over bits received.
    pub ber_effective: Option<f64>,
    /// Symbol errors the FEC could not correct.
    pub symbol_errors: Option<u64>,
    pub module: Option<Module>,
    /// Bits the FEC corrected.
    pub corrected_bits: Option<u64>,
    /// Bits received, where the driver counts them (the BER's denominator).
    pub received_bits: Option<u64>,
    /// Per lane (lane 0 first), the errors the FEC corrected there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_errors: Vec<u64>,
    pub fec_corrected_blocks: Option<u64>,
    pub fec_uncorrectable_blocks: Option<u64>,
    pub link_down_events: Option<u64>,
    /// Lanes the link runs on, and each lane's data rate, Gb/s.
    pub lanes: Option<u32>,
    pub lane_gbps: Option<f64>,
    /// Why the module could not be read (not root, no module), when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_unreadable: Option<String>,
    /// Which of mlxlink's post-FEC figures `ber_effective` and `symbol_errors` hold: `symbol`
    /// (`Symbol BER`, what applications see on InfiniBand HDR and faster, after FEC and
    /// retransmission) or `effective` (`Effective Physical BER`, EDR and slower, and Ethernet);
    /// absent when they come from ethtool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ber_effective_figure: Option<BerFigure>,
}

/// mlxlink's two post-FEC figures (see [`Phy::ber_effective_figure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BerFigure {
    Symbol,
    Effective,
}

impl BerFigure {
    /// The figure that applies to a port: NVIDIA's ibdiagnet documentation ("Bit Error Rate
    /// (BER)"): "For NDR/HDR/EDR links, symbol errors (NDR/HDR) or effective errors (EDR) are
    /// the actual errors seen by the application level after error correction". mlxlink prints
    /// the symbol figures on InfiniBand only (mstflint `mlxlink_commander.cpp`, `prepareBerInfo`).
    pub fn for_port(link_layer: LinkLayer, speed: crate::port::Speed) -> BerFigure {
        match (link_layer, speed.data_lane_gbps()) {
            (LinkLayer::InfiniBand, Some(lane)) if lane >= 50.0 => BerFigure::Symbol,
            _ => BerFigure::Effective,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BerFigure::Symbol => "symbol BER",
            BerFigure::Effective => "effective BER",
        }
    }
}

/// The figures from the parsed reports (pure).
pub fn assemble(
    stats: PhyCounters,
    fec: Option<fec::FecReport>,
    module: Option<Module>,
    lanes: Option<u32>,
    lane_gbps: Option<f64>,
    module_unreadable: Option<String>,
) -> Phy {
    let fec_mode = fec.as_ref().and_then(|f| f.active).map(|m| m.with_lane_rate(lane_gbps));
    let lane_errors = if stats.lane_errors.iter().any(|&v| v > 0) {
        stats.lane_errors.clone()
    } else {
        fec.as_ref().map(|f| f.lane_corrected.clone()).filter(|l| l.iter().any(|&v| v > 0)).unwrap_or(stats.lane_errors.clone())
    };
    let ratio = |errors: Option<u64>| match (errors, stats.received_bits) {
        (Some(e), Some(bits)) if bits > 0 => Some(e as f64 / bits as f64),
        _ => None,
    };
    Phy {
        fec: fec_mode,
        ber_raw: ratio(stats.corrected_bits),
        ber_effective: ratio(stats.symbol_errors),
        symbol_errors: stats.symbol_errors,
        module,
        corrected_bits: stats.corrected_bits,
        received_bits: stats.received_bits,
        lane_errors,
        fec_corrected_blocks: fec.as_ref().and_then(|f| f.corrected_blocks).or(stats.fec_corrected_blocks),
        fec_uncorrectable_blocks: fec.as_ref().and_then(|f| f.uncorrectable_blocks).or(stats.fec_uncorrectable_blocks),
        link_down_events: stats.link_down_events,
        lanes,
        lane_gbps,
        module_unreadable,
        ber_effective_figure: None,
    }
}
