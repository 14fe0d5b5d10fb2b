//! The checklist of one node read (`probe::node::read`): every rule, in the one order `check`,
//! the exporter and a `--soak` window's end all judge by. Pure: the read and the expectations
//! in, the report (settled) and the GPU pairings out.

use super::{driver_rules, gpu_rules, ibgda_rules, pci_path_rules, pcie_rules, run, Expectations, Input, Scope};
use crate::gpu::topology::Pairing;
use crate::outcome::{Finding, FindingId, Report, Severity};
use crate::probe::node::NodeRead;
use crate::probe::pci::health::PcieHealth;
use std::time::Duration;

/// A `--soak` window: how long it was asked to be and was, whether it was cut short, and the
/// PCIe health read at its start (the read judged is the one at its end).
pub struct Window<'a> {
    pub asked: Duration,
    pub seconds: f64,
    pub interrupted: bool,
    pub pcie_start: &'a PcieHealth,
}

/// What the checklist says of a node.
#[derive(Debug, Clone)]
pub struct Judged {
    pub report: Report,
    /// Each GPU and its nearest RDMA NIC, where the node has NVIDIA GPUs.
    pub gpus: Vec<Pairing>,
}

/// Judges `node` against `expect`, within `scope`, over `window` when there was one.
pub fn judge(node: &NodeRead, expect: &Expectations, scope: &Scope, window: Option<&Window<'_>>) -> Judged {
    let inventory = &node.inventory;
    let mut report = run(&Input { inventory, host: node.host.as_ref(), expect, scope });
    if let Some(w) = window {
        report.findings.push(window_finding(w));
    }
    // A bundle's module/ (captured with the PCI tree) gets the stack's module checks.
    if let Some(modules) = &node.bundle_modules {
        gpu_rules::apply_bundle_modules(&mut report, inventory, modules);
    }
    // GPU node readiness, from the PCI tree: the bundle's, or the live /sys.
    let gpus = node.pci.as_ref().map(|tree| gpu_rules::apply(&mut report, tree)).unwrap_or_default();
    // GPU-initiated RDMA's driver settings (info unless --expect ibgda=on).
    ibgda_rules::apply(&mut report, node.pci.as_ref(), expect.ibgda == Some(true));
    // Every link above each NIC and GPU (switch uplinks included).
    if let Some(tree) = &node.pci {
        pci_path_rules::apply(&mut report, tree);
    }
    // PCIe health: AER, mlx5's PCIe counters, devlink health; over the window when soaked.
    let pcie_window = window.map(|w| pcie_rules::PcieSoak { start: w.pcie_start, seconds: w.seconds, tree: node.pci.as_ref() });
    pcie_rules::apply(&mut report, &node.pcie, pcie_window.as_ref());
    // Last: it also says where a pending firmware change explains the findings above.
    driver_rules::apply(&mut report, inventory, &node.stack, expect, scope);
    report.settle();
    Judged { report, gpus }
}

/// `check`'s last step, after [`judge`]: `link.flap` from the kernel log over `window` (the
/// exporter and a soak's counters do not read the log). `log`: the log, or why it was not read.
pub fn judge_kernel_log(
    judged: &mut Judged,
    inventory: &crate::probe::Inventory,
    log: Result<&crate::probe::kernel_log::KernelLog, &str>,
    window: super::flap_rules::LogWindow,
    expect: &Expectations,
) {
    super::flap_rules::apply(&mut judged.report, inventory, log, window, expect.flaps.unwrap_or(0));
}

/// The window in the output: an info finding on the node.
fn window_finding(w: &Window<'_>) -> Finding {
    let message = if w.interrupted {
        format!(
            "soak window interrupted after {:.0} s of {} s: counters read at its start and when it ended, rates judged over what was seen",
            w.seconds,
            w.asked.as_secs()
        )
    } else {
        format!("counters read {:.0} s apart (soak window): rates over the window are judged, not lifetime totals", w.seconds)
    };
    Finding::new(FindingId::SoakWindow, Severity::Info, "node", message, "a longer window (--soak 1h) catches rarer errors and flaps")
}
