//! `pci.link` on every link of the path from the root port down to each RDMA NIC and GPU
//! (issue #51): a PCIe switch's uplink (root port to switch upstream port) and any deeper
//! switch-to-switch link, each judged as the NIC's own link is (`pci_link_rules`): trained
//! below what both of its ends can do is an error naming the link by both ends' PCI addresses,
//! unless the upper end's Link Control 2 Target Link Speed caps it there on purpose (then
//! `pcie.bound` info naming the cap). The link from a switch's upstream port to its downstream
//! ports is the switch's inside, not a wire, and is not judged; the last link (the NIC's or
//! GPU's own) is `pci.link`'s or `pcie.link`'s already. Only what is wrong is written (a healthy
//! path adds no rows). Pure: the PCI tree in, rows and findings out.

use super::{Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::pci::config::{speed_gts, PortType};
use crate::probe::pci::{nic_label, Function, PciTree};
use std::collections::BTreeSet;

/// Judges the links above every NIC and GPU of `tree`.
pub(super) fn run(tree: &PciTree, sheet: &mut Sheet) {
    let mut targets: Vec<(String, &Function)> =
        tree.nics.iter().filter_map(|n| tree.function(&n.bdf).map(|f| (nic_label(&n.name, &n.bdf), f))).collect();
    targets.extend(tree.gpus().into_iter().map(|g| (format!("GPU {}", g.bdf), g)));
    let mut judged = BTreeSet::new();
    for (label, target) in targets {
        for pair in target.chain.windows(2) {
            let (Some(up), Some(down)) = (tree.function(&pair[0]), tree.function(&pair[1])) else { continue };
            if port_type(up) == Some(PortType::SwitchUpstream) || !judged.insert(down.bdf.clone()) {
                continue;
            }
            judge(up, down, &label, sheet);
        }
    }
}

fn port_type(f: &Function) -> Option<PortType> {
    f.config.parsed().and_then(|c| c.pcie).map(|p| p.port_type)
}

/// (width, GT/s) of a function's link: sysfs, else config space.
fn figures(f: &Function, current: bool) -> (Option<u32>, Option<f64>) {
    let gts = |s: &Option<String>| s.as_deref().and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok()).filter(|v| *v > 0.0);
    let (width, speed) = if current { (f.link.current_width, gts(&f.link.current_speed)) } else { (f.link.max_width, gts(&f.link.max_speed)) };
    let config = f.config.parsed().and_then(|c| c.pcie).and_then(|p| if current { p.link_status } else { p.link_cap });
    (width.or(config.map(|l| u32::from(l.width))).filter(|w| *w > 0), speed.or(config.and_then(|l| speed_gts(l.speed))))
}

fn judge(up: &Function, down: &Function, label: &str, sheet: &mut Sheet) {
    let ((cur_w, cur_s), (dmax_w, dmax_s), (umax_w, umax_s)) = (figures(down, true), figures(down, false), figures(up, false));
    let (Some(cur_w), Some(cur_s), Some(dmax_w), Some(dmax_s), Some(umax_w), Some(umax_s)) = (cur_w, cur_s, dmax_w, dmax_s, umax_w, umax_s) else {
        return;
    };
    let (want_w, want_s) = (dmax_w.min(umax_w), dmax_s.min(umax_s));
    let subject = format!("{} <-> {}", up.bdf, down.bdf);
    let observed = format!("x{cur_w} {cur_s:.1} GT/s");
    let want = format!("x{want_w} {want_s:.1} GT/s");
    let target = up.config.parsed().and_then(|c| c.pcie).and_then(|p| p.target_speed).and_then(speed_gts);
    let slow = cur_s + 0.01 < want_s;
    if cur_w >= want_w && slow {
        if let Some(t) = target.filter(|t| *t <= cur_s + 0.01) {
            sheet.note(
                FindingId::PcieBound,
                subject.as_str(),
                Severity::Info,
                format!(
                    "the PCIe link {} <-> {} (on the path to {label}) runs at {observed}, below the {want} both ends can do, because {}'s \
                     Link Control 2 Target Link Speed is {t:.1} GT/s: capped on purpose by the firmware or BIOS, not a fault",
                    up.bdf, down.bdf, up.bdf
                ),
                format!("if the cap is not wanted, raise the port's link speed in the BIOS/firmware setup; `lspci -vv -s {}` shows LnkCtl2", up.bdf),
            );
            return;
        }
    }
    if cur_w < want_w || slow {
        sheet.fail(
            FindingId::PciLink,
            subject.as_str(),
            observed.clone(),
            Some(want.clone()),
            Severity::Error,
            format!(
                "the PCIe link {} <-> {} on the path to {label} trained at {observed}, below the {want} both of its ends can do: every \
                 transfer to {label} crosses it, so it caps the device whatever its own link says (a switch uplink or riser cable \
                 fault, or a lane lost in training)",
                up.bdf, down.bdf
            ),
            format!(
                "reseat the switch board or riser and its cables between {} and {}, check the BIOS bifurcation and speed settings \
                 for that port; `lspci -vv -s {}` shows LnkSta against LnkCap; retrain with `setpci -s {} CAP_EXP+0x10.w=0x20:0x20`",
                up.bdf, down.bdf, down.bdf, up.bdf
            ),
        );
    }
}
