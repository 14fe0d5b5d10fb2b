//! What a port can carry, for judging a measured figure (pure): the link's data rate
//! (Ethernet: the netdev's speed), what the port supports when it says, and the PCIe link the
//! adapter sits behind.
//!
//! PCIe usable bandwidth = transfer rate x lanes x line encoding x TLP efficiency:
//! - encoding: 8b/10b up to 5 GT/s (Gen1, Gen2), 128b/130b for 8, 16 and 32 GT/s (Gen3-5);
//!   at 64 GT/s (Gen6, PAM4) the link runs in FLIT mode: of every 256-byte flit, 236 bytes
//!   carry TLPs, 6 the data-link layer (DLLPs: ACKs, flow control), 8 CRC and 6 FEC;
//! - TLP efficiency: MPS / (MPS + overhead) with the function's Max Payload Size (MPS, Device
//!   Control, from its `config` when readable; 256 B, the common setting, when not). Without
//!   FLIT mode the overhead is 24 bytes: a 4-DW header with a 64-bit address (16), framing (4)
//!   and LCRC (4), DLLPs costing a few percent more, which the verdict's 90 % allows for. In
//!   FLIT mode framing and LCRC are the flit's, so a TLP costs its 16-byte header only.
//!
//! So Gen4 x16 carries 16 x 16 x 128/130 x 256/280 = 230.5 Gb/s: an NDR (400 Gb/s) port behind
//! it cannot pass 90 % of its link rate, and is judged against the PCIe figure instead. Gen6
//! x16 at MPS 256 carries 64 x 16 x 236/256 x 256/272 = 888.5 Gb/s.

use crate::port::{Speed, Width};

/// `port_cap_flags2` bits (rdma-core `enum ibv_port_cap_flags2`, the kernel's
/// `IB_PORT_*_SUP`): what the port supports beyond the classic speeds.
pub const CAP2_WIDTH_2X: u16 = 1 << 4;
pub const CAP2_SPEED_HDR: u16 = 1 << 5;
pub const CAP2_SPEED_NDR: u16 = 1 << 10;
pub const CAP2_SPEED_XDR: u16 = 1 << 12;

/// The fastest speed `port_cap_flags2` says the port supports; `None` when it names none
/// (older adapters, or a compat query that did not fill the field).
pub fn speed_supported(flags2: u16) -> Option<Speed> {
    [(CAP2_SPEED_XDR, Speed::Xdr), (CAP2_SPEED_NDR, Speed::Ndr), (CAP2_SPEED_HDR, Speed::Hdr)]
        .into_iter()
        .find(|(bit, _)| flags2 & bit != 0)
        .map(|(_, s)| s)
}

/// An Ethernet port's data rate: its netdev's speed (Mb/s), when the driver knows it.
pub fn ethernet_gbps(speed_mbps: Option<u32>) -> Option<f64> {
    speed_mbps.filter(|&m| m > 0 && m < 10_000_000).map(|m| f64::from(m) / 1000.0)
}

/// The fastest speed in an `ethtool IFACE` report's "Supported link modes" (e.g.
/// `200000baseCR4/Full`), in Mb/s.
pub fn ethtool_max_supported_mbps(report: &str) -> Option<u32> {
    let mut in_modes = false;
    let mut best = None;
    for line in report.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Supported link modes:") {
            in_modes = true;
            best = best.max(modes_max(rest));
            continue;
        }
        if in_modes {
            // Continuation lines have no "Key:" of their own.
            if trimmed.contains(':') {
                in_modes = false;
                continue;
            }
            best = best.max(modes_max(trimmed));
        }
    }
    best
}

fn modes_max(text: &str) -> Option<u32> {
    text.split_whitespace().filter_map(|mode| mode.split("base").next()?.parse::<u32>().ok()).max()
}

/// Priorities with PFC on, from `dcb pfc show dev IF prio-pfc` (`prio-pfc 0:off 1:off 2:off
/// 3:on ...`); `None` when the report has no such line.
pub fn dcb_pfc_priorities(report: &str) -> Option<Vec<u8>> {
    let line = report.lines().find(|l| l.trim_start().starts_with("prio-pfc"))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|item| {
                let (prio, state) = item.split_once(':')?;
                (state == "on").then(|| prio.parse().ok()).flatten()
            })
            .collect(),
    )
}

/// Usable PCIe bandwidth in Gb/s for a link at `speed` (as sysfs writes it: "16.0 GT/s PCIe",
/// "8 GT/s", "2.5 GT/s") and `width` lanes, with the function's Max Payload Size in bytes
/// (`None`: [`ASSUMED_MAX_PAYLOAD`]). See the module doc for the arithmetic.
pub fn pcie_usable_gbps(speed: &str, width: u32, max_payload: Option<u16>) -> Option<f64> {
    let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
    if gts.is_nan() || gts <= 0.0 || width == 0 || width > 32 {
        return None;
    }
    let flit = gts > 32.0;
    let encoding = if gts <= 5.0 {
        8.0 / 10.0
    } else if !flit {
        128.0 / 130.0
    } else {
        FLIT_TLP_BYTES / FLIT_BYTES
    };
    let payload = f64::from(max_payload.filter(|m| (128..=4096).contains(m)).unwrap_or(ASSUMED_MAX_PAYLOAD));
    let overhead = if flit { FLIT_TLP_OVERHEAD } else { TLP_OVERHEAD };
    Some(gts * f64::from(width) * encoding * payload / (payload + overhead))
}

/// The Max Payload Size assumed when the function's config space cannot be read.
pub const ASSUMED_MAX_PAYLOAD: u16 = 256;
/// Bytes a TLP adds to its payload without FLIT mode: header 16, framing 4, LCRC 4.
const TLP_OVERHEAD: f64 = 24.0;
/// Bytes a TLP adds in FLIT mode: its header (framing and CRC are the flit's).
const FLIT_TLP_OVERHEAD: f64 = 16.0;
/// A PCIe 6 flit, and the part of it that carries TLPs (the rest: DLP 6, CRC 8, FEC 6).
const FLIT_BYTES: f64 = 256.0;
const FLIT_TLP_BYTES: f64 = 236.0;

/// What a link is judged against, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// The figure a bandwidth is judged against, Gb/s.
    pub gbps: f64,
    /// True when the PCIe link, not the network link, sets it.
    pub pcie_bound: bool,
}

/// The smaller of the link's data rate and the PCIe link's usable bandwidth.
pub fn capacity(link_gbps: f64, pcie_gbps: Option<f64>) -> Capacity {
    match pcie_gbps {
        Some(p) if p < link_gbps => Capacity { gbps: p, pcie_bound: true },
        _ => Capacity { gbps: link_gbps, pcie_bound: false },
    }
}

/// A port running below what it supports: `(supported width, supported speed)` against the
/// active ones. `None` when it runs at its best, or when what it supports is unknown.
pub fn trained_low(width: Width, speed: Speed, width_supported: Option<Width>, speed_supported: Option<Speed>) -> Option<String> {
    let mut low = Vec::new();
    if let (Some(sw), Some(aw), Some(best)) = (width_supported, width.lanes(), width_supported.and_then(|w| w.lanes())) {
        if aw < best {
            low.push(format!("width {width} of {sw}"));
        }
    }
    if let Some(ss) = speed_supported {
        if speed.rank() < ss.rank() && !matches!(speed, Speed::Unknown(_)) {
            low.push(format!("speed {speed} of {ss}"));
        }
    }
    (!low.is_empty()).then(|| low.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_flags2_name_the_best_speed() {
        assert_eq!(speed_supported(0), None);
        assert_eq!(speed_supported(CAP2_SPEED_HDR | CAP2_WIDTH_2X), Some(Speed::Hdr));
        assert_eq!(speed_supported(CAP2_SPEED_HDR | CAP2_SPEED_NDR), Some(Speed::Ndr));
        assert_eq!(speed_supported(CAP2_SPEED_XDR | CAP2_SPEED_NDR | CAP2_SPEED_HDR), Some(Speed::Xdr));
    }

    #[test]
    fn ethernet_rate_is_the_netdev_speed() {
        // mlx5 reports 40GbE as 4X QDR (32 Gb/s after 8b/10b) and 10GbE as 1X QDR (8): the
        // Ethernet figure is what the link carries.
        assert_eq!(ethernet_gbps(Some(40_000)), Some(40.0));
        assert_eq!(ethernet_gbps(Some(10_000)), Some(10.0));
        assert_eq!(ethernet_gbps(Some(400_000)), Some(400.0));
        assert_eq!(ethernet_gbps(Some(0)), None);
        assert_eq!(ethernet_gbps(None), None);
    }

    #[test]
    fn ethtool_supported_modes() {
        let report = "Settings for eth2:\n\tSupported ports: [ Backplane ]\n\tSupported link modes:   1000baseKX/Full\n\t                        100000baseCR4/Full\n\t                        200000baseCR4/Full 200000baseSR4/Full\n\tSupported pause frame use: Symmetric\n\tAdvertised link modes:  400000baseCR8/Full\n\tSpeed: 100000Mb/s\n";
        assert_eq!(ethtool_max_supported_mbps(report), Some(200_000));
        assert_eq!(ethtool_max_supported_mbps("Speed: 100000Mb/s"), None);
    }

    #[test]
    fn dcb_pfc_report() {
        assert_eq!(dcb_pfc_priorities("prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"), Some(vec![3]));
        assert_eq!(
            dcb_pfc_priorities("pfc-cap 8 macsec-bypass off delay 32767\nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off"),
            Some(vec![])
        );
        assert_eq!(dcb_pfc_priorities("Error: no such device"), None);
    }

    #[test]
    fn pcie_figures() {
        let g = |s: &str, w| (pcie_usable_gbps(s, w, None).unwrap() * 10.0).round() / 10.0;
        assert_eq!(g("16.0 GT/s PCIe", 16), 230.5);
        assert_eq!(g("8.0 GT/s PCIe", 16), 115.2);
        assert_eq!(g("32.0 GT/s PCIe", 16), 460.9);
        assert_eq!(g("2.5 GT/s", 8), 14.6);
        assert_eq!(pcie_usable_gbps("Unknown", 16, None), None);
        assert_eq!(pcie_usable_gbps("16.0 GT/s", 0, None), None);
    }

    /// Gen6 runs in FLIT mode: 236 TLP bytes of each 256-byte flit, and a TLP costs only its
    /// header (the flit holds CRC and FEC). The figure was 885.0 with 242/256 and 24-byte TLP
    /// overhead, which counted the data-link bytes as payload and LCRC/framing twice.
    #[test]
    fn gen6_flit_mode() {
        let g = |mps| (pcie_usable_gbps("64.0 GT/s PCIe", 16, mps).unwrap() * 10.0).round() / 10.0;
        assert_eq!(g(None), 888.5);
        assert_eq!(g(Some(512)), 915.4);
    }

    /// The payload size the function is set to counts: at MPS 128 a Gen5 x16 link carries
    /// 424.5 Gb/s, not the 460.9 of MPS 256; out-of-range sizes fall back to 256.
    #[test]
    fn max_payload_size_counts() {
        let g = |mps| (pcie_usable_gbps("32.0 GT/s PCIe", 16, mps).unwrap() * 10.0).round() / 10.0;
        assert_eq!(g(Some(128)), 424.5);
        assert_eq!(g(Some(256)), 460.9);
        assert_eq!(g(Some(512)), 481.6);
        assert_eq!(g(Some(0)), 460.9);
        assert_eq!(g(None), 460.9);
    }

    /// A captured tree whose NIC's config space sets MPS 128 (gpu-hgx-healthy: Device Control
    /// 0) is figured at 128, not the assumed 256; a tree without config bytes keeps 256.
    #[test]
    fn the_captured_config_sets_the_payload_size() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let usable = |fixture: &str| {
            let device = super::super::sysfs::SysfsRoot::at(root.join(fixture)).device("mlx5_0");
            device.pci.and_then(|p| p.usable_gbps).map(|g| (g * 10.0).round() / 10.0)
        };
        assert_eq!(usable("gpu-hgx-healthy"), Some(424.5), "Gen5 x16 at MPS 128");
        assert_eq!(usable("ndr-ib-pcie-gen4"), Some(230.5), "Gen4 x16, no config: MPS 256");
    }

    #[test]
    fn ndr_behind_gen4_is_pcie_bound() {
        let c = capacity(400.0, pcie_usable_gbps("16.0 GT/s PCIe", 16, None));
        assert!(c.pcie_bound);
        assert!((c.gbps - 230.5).abs() < 0.1);
        assert_eq!(capacity(200.0, pcie_usable_gbps("16.0 GT/s PCIe", 16, None)), Capacity { gbps: 200.0, pcie_bound: false });
        assert_eq!(capacity(200.0, None), Capacity { gbps: 200.0, pcie_bound: false });
    }

    #[test]
    fn trained_low_names_what_is_short() {
        assert_eq!(trained_low(Width::X4, Speed::Edr, None, Some(Speed::Hdr)), Some("speed EDR of HDR".into()));
        assert_eq!(trained_low(Width::X1, Speed::Hdr, Some(Width::X4), Some(Speed::Hdr)), Some("width 1X of 4X".into()));
        assert_eq!(trained_low(Width::X4, Speed::Ndr, Some(Width::X4), Some(Speed::Ndr)), None);
        assert_eq!(trained_low(Width::X4, Speed::Hdr, None, None), None);
    }
}
