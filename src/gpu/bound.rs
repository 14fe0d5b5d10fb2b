//! What a GPU's PCIe link can carry by design, the bound `--mem cuda` bandwidth is judged
//! against on that side (the lower of it and the NIC's). Pure, over a [`PciTree`] already read.
//!
//! The rule is 0.4's PCIe-health contract (`pci.link`/`pcie.link`): a link trained below what
//! **both** of its ends can do (the function's and its upstream port's `max_link_*`) is a fault,
//! and a slot slower by design (both ends at their maximum) is a bound. So the bound is the
//! design figure, min(GPU max, port max) for width and for speed, never the trained one:
//!
//! - GPUs lower their link speed when idle (down to 2.5 GT/s; `nvidia-smi -q -d PCI` shows
//!   "Link Gen Current" below "Max"). An agent reads the tree before any traffic, so the
//!   trained speed of an idle H100 gave a bound of ~29 Gb/s: a bad result passed, and
//!   `pcie.bound` blamed the NIC's slot. The speed a GPU trains at under load is its design
//!   speed, unless that is a fault;
//! - a fault (a lane-degraded link, x8 of x16) must fail the run, not lower the bar: it is named
//!   (`fault`) beside the bound, and `fabcheck check` reports it as `pcie.link`.
//!
//! Figures come from sysfs (`max_link_speed`, `max_link_width`, `current_link_*`), else from
//! config space (Link Capabilities, Link Status). Unknown design figures give no bound: the
//! side is then judged against its NIC and link alone, never against a guess.

use crate::probe::pci::config::speed_gts;
use crate::probe::pci::{Function, PciTree};

/// A PCIe link's width (lanes) and speed (GT/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkFigures {
    pub width: Option<u32>,
    pub gts: Option<f64>,
}

impl LinkFigures {
    fn describe(self) -> String {
        format!("x{} {}", self.width.map_or("?".into(), |w| w.to_string()), self.gts.map_or("?".into(), |s| format!("{s:.1} GT/s")))
    }
}

/// A GPU's link: what it can carry by design, and why it does not now.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuLink {
    /// Usable Gb/s at the design width and speed (`probe::capacity::pcie_usable_gbps`, the
    /// GPU's Max Payload Size); `None` when a design figure is unknown.
    pub gbps: Option<f64>,
    /// min(GPU max, upstream port max).
    pub design: LinkFigures,
    /// What it trained at when read.
    pub trained: LinkFigures,
    /// A width below the design: a fault (seating, riser, cable, bifurcation).
    pub fault: Option<String>,
}

/// `f`'s maximum (`current == false`) or trained link, from sysfs, else from config space.
pub fn figures(f: &Function, current: bool) -> LinkFigures {
    let gts = |s: &Option<String>| s.as_deref().and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok()).filter(|g| *g > 0.0);
    let (width, speed) = if current { (f.link.current_width, gts(&f.link.current_speed)) } else { (f.link.max_width, gts(&f.link.max_speed)) };
    let pcie = f.config.parsed().and_then(|c| c.pcie);
    let from_config = pcie.and_then(|p| if current { p.link_status } else { p.link_cap });
    LinkFigures {
        width: width.filter(|w| *w > 0).or(from_config.map(|l| u32::from(l.width)).filter(|w| *w > 0)),
        gts: speed.or(from_config.and_then(|l| speed_gts(l.speed))),
    }
}

fn lower<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y < x { y } else { x }),
        (x, y) => x.or(y),
    }
}

/// The GPU's design link and its bound; see the module doc.
pub fn gpu_link(tree: &PciTree, gpu: &Function) -> GpuLink {
    let card = figures(gpu, false);
    // The port above the GPU: the link trains to what both ends support.
    let slot = gpu.chain.last().and_then(|b| tree.function(b)).map(|p| figures(p, false));
    let design = match slot {
        Some(s) => LinkFigures { width: lower(card.width, s.width), gts: lower(card.gts, s.gts) },
        None => card,
    };
    let trained = figures(gpu, true);
    let max_payload = gpu.config.parsed().and_then(|c| c.pcie).and_then(|p| p.max_payload);
    let gbps = match (design.width, design.gts) {
        (Some(w), Some(g)) => crate::probe::capacity::pcie_usable_gbps(&format!("{g} GT/s"), w, max_payload),
        _ => None,
    };
    let fault = match (trained.width, design.width) {
        (Some(t), Some(d)) if t < d => Some(format!(
            "GPU {}'s PCIe link trained at {}, narrower than card and slot support ({}): a seating, riser, cable or bifurcation fault",
            gpu.bdf,
            trained.describe(),
            design.describe()
        )),
        _ => None,
    };
    GpuLink { gbps, design, trained, fault }
}

/// Whether a GPU's link set the capacity a pair was judged against (`capacity_gbps` equal to a
/// side's GPU bound: the capacity is the minimum of the figures, so it is one of them exactly).
pub fn sets_capacity(capacity_gbps: f64, gpu_gbps: [Option<f64>; 2]) -> bool {
    gpu_gbps.iter().flatten().any(|g| *g == capacity_gbps)
}

/// `pcie.bound`'s remedy when a GPU's link, not the NIC's slot, bounds the pair.
pub const GPU_BOUND_REMEDY: &str = "the GPU's PCIe link (card and slot maximum) carries less than the port: nothing to reseat; \
     judge GPU-memory bandwidth against it, or pair the NIC with a GPU on a faster link (`nvidia-smi -q -d PCI`, Link Gen/Width Max)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::pci::{ConfigRead, SysfsLink};

    fn function(bdf: &str, chain: &[&str], cur: (u32, &str), max: (u32, &str)) -> Function {
        Function {
            bdf: bdf.into(),
            host_bridge: "pci0000:15".into(),
            chain: chain.iter().map(|s| s.to_string()).collect(),
            vendor: Some(0x10de),
            device: Some(0x2330),
            class: Some(0x030200),
            numa_node: Some(0),
            link: SysfsLink { current_width: Some(cur.0), current_speed: Some(cur.1.into()), max_width: Some(max.0), max_speed: Some(max.1.into()) },
            config: ConfigRead::NotRead,
            config_file: format!("devices/{bdf}/config"),
        }
    }

    fn tree(functions: Vec<Function>) -> PciTree {
        PciTree { functions: functions.into_iter().map(|f| (f.bdf.clone(), f)).collect(), ..PciTree::default() }
    }

    const GEN5: &str = "32.0 GT/s PCIe";

    /// Issue #43: an idle H100 on a Gen5 x16 switch port had trained down to 2.5 GT/s; its bound
    /// was read from that (~29 Gb/s), so a bad result passed.
    #[test]
    fn an_idle_downshift_is_not_the_bound() {
        let port = function("0000:17:01.0", &["0000:15:01.0", "0000:16:00.0"], (16, GEN5), (16, GEN5));
        let gpu = function("0000:1b:00.0", &["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"], (16, "2.5 GT/s PCIe"), (16, GEN5));
        let t = tree(vec![port, gpu.clone()]);
        let link = gpu_link(&t, &gpu);
        assert_eq!(link.design, LinkFigures { width: Some(16), gts: Some(32.0) });
        assert_eq!(link.trained.gts, Some(2.5));
        let g = link.gbps.unwrap();
        assert!((g - 460.9).abs() < 0.1, "Gen5 x16 at MPS 256: {g}");
        assert_eq!(link.fault, None, "a downshifted speed is no fault");
    }

    #[test]
    fn the_slower_end_sets_the_design_and_a_narrow_link_is_a_fault_not_a_lower_bar() {
        // A Gen5 x16 GPU in a Gen4 slot: Gen4 x16 by design, a bound.
        let port = function("0000:17:01.0", &[], (16, "16.0 GT/s PCIe"), (16, "16.0 GT/s PCIe"));
        let gpu = function("0000:1b:00.0", &["0000:17:01.0"], (8, "16.0 GT/s PCIe"), (16, GEN5));
        let link = gpu_link(&tree(vec![port, gpu.clone()]), &gpu);
        assert_eq!(link.design, LinkFigures { width: Some(16), gts: Some(16.0) });
        assert!((link.gbps.unwrap() - 230.5).abs() < 0.1, "judged at x16, not the x8 it trained at: {:?}", link.gbps);
        let fault = link.fault.expect("x8 of x16 is a fault");
        assert!(fault.contains("x8 16.0 GT/s") && fault.contains("x16 16.0 GT/s") && fault.contains("0000:1b:00.0"), "{fault}");
    }

    #[test]
    fn an_unknown_design_gives_no_bound_rather_than_a_guess() {
        let mut gpu = function("0000:1b:00.0", &[], (16, "2.5 GT/s PCIe"), (16, GEN5));
        gpu.link.max_speed = None;
        let link = gpu_link(&tree(vec![gpu.clone()]), &gpu);
        assert_eq!(link.gbps, None, "not the trained 2.5 GT/s");
        // No port above it in the tree: the card's own maximum.
        let gpu = function("0000:1b:00.0", &["0000:00:01.0"], (16, GEN5), (16, GEN5));
        assert!(gpu_link(&tree(vec![gpu.clone()]), &gpu).gbps.is_some());
    }

    #[test]
    fn a_gpu_bound_is_told_apart_from_the_nics() {
        assert!(sets_capacity(230.5, [None, Some(230.5)]));
        assert!(!sets_capacity(230.5, [Some(460.9), None]), "the NIC's slot set it");
        assert!(!sets_capacity(230.5, [None, None]));
    }
}
