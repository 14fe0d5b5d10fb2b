//! The checklist of one node read (`probe::node::read`): every rule, in the one order `check`,
//! the exporter and a `--soak` window's end all judge by. Pure: the read and the expectations
//! in, the report (settled) and the GPU pairings out.

use super::facts::Facts;
use super::flap_rules::LogWindow;
use super::{driver_rules, flap_rules, gpu_rules, ibgda_rules, inventory_rules, pci_path_rules, pcie_rules, stack_rules};
use super::{Expectations, Input, Scope, Sheet};
use crate::gpu::topology::{self, Pairing};
use crate::outcome::{Finding, FindingId, Report, Severity};
use crate::probe::kernel_log::KernelLog;
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

/// The kernel log over a window (`check --since`), or why it was not read.
pub struct Log<'a> {
    pub log: Result<&'a KernelLog, &'a str>,
    pub window: LogWindow,
}

/// What the checklist says of a node.
#[derive(Debug, Clone)]
pub struct Judged {
    pub report: Report,
    /// Each GPU and its nearest RDMA NIC, where the node has NVIDIA GPUs.
    pub gpus: Vec<Pairing>,
}

/// Everything the families read: the node, what is expected of it, and what it was read over.
struct Node<'a> {
    read: &'a NodeRead,
    expect: &'a Expectations,
    scope: &'a Scope,
    window: Option<&'a Window<'a>>,
    log: Option<&'a Log<'a>>,
    pairings: &'a [Pairing],
}

/// A rule family: what it judges of the node, written on the sheet.
type Family = fn(&Node<'_>, &mut Sheet);

/// Every rule family, in the one order `check`, the exporter and a `--soak` window's end judge
/// by (the order of the rows and of the findings within a severity).
const FAMILIES: &[(&str, Family)] = &[
    // The stack (live), the node, each port and its PHY.
    ("inventory", |n, sheet| {
        inventory_rules(&Input { inventory: &n.read.inventory, host: n.read.host.as_ref(), expect: n.expect, scope: n.scope }, sheet)
    }),
    ("soak window", |n, sheet| {
        if let Some(w) = n.window {
            sheet.findings.push(window_finding(w));
        }
    }),
    // A bundle's module/ (captured with the PCI tree) gets the stack's module checks.
    ("bundle modules", |n, sheet| {
        if let Some(modules) = &n.read.bundle_modules {
            stack_rules::modules(&n.read.inventory, modules, sheet);
        }
    }),
    // GPU node readiness, from the PCI tree: the bundle's, or the live /sys.
    ("gpu", |n, sheet| {
        if let Some(tree) = &n.read.pci {
            gpu_rules::run(tree, n.pairings, sheet);
        }
    }),
    // GPU-initiated RDMA's driver settings (info unless --expect ibgda=on).
    ("gpu.ibgda", |n, sheet| ibgda_rules::run(n.read.pci.as_ref(), n.expect.ibgda == Some(true), sheet)),
    // Every link above each NIC and GPU (switch uplinks included).
    ("pci path", |n, sheet| {
        if let Some(tree) = &n.read.pci {
            pci_path_rules::run(tree, sheet);
        }
    }),
    // PCIe health: AER, mlx5's PCIe counters, devlink health; over the window when soaked.
    ("pcie health", |n, sheet| {
        let soak = n.window.map(|w| pcie_rules::PcieSoak { start: w.pcie_start, seconds: w.seconds, tree: n.read.pci.as_ref() });
        pcie_rules::run(&n.read.pcie, soak.as_ref(), sheet);
    }),
    // Pending firmware, OFED's modules, the stack's units, IPoIB.
    ("driver stack", |n, sheet| driver_rules::run(&n.read.inventory, &n.read.stack, n.expect, n.scope, sheet)),
    // link.flap from the kernel log (`check` reads it; a soak's counters do not).
    ("kernel log", |n, sheet| {
        if let Some(log) = n.log {
            flap_rules::judge(&n.read.inventory, n.scope, log.log, log.window, n.expect.flaps.unwrap_or(0), sheet);
        }
    }),
];

/// Judges `node` against `expect`, within `scope`, over `window` when there was one.
pub fn judge(node: &NodeRead, expect: &Expectations, scope: &Scope, window: Option<&Window<'_>>) -> Judged {
    judge_with_log(node, expect, scope, window, None)
}

/// [`judge`], with the kernel log over its window (`link.flap`) when it was read.
pub fn judge_with_log(node: &NodeRead, expect: &Expectations, scope: &Scope, window: Option<&Window<'_>>, log: Option<&Log<'_>>) -> Judged {
    let pairings = node.pci.as_ref().map(topology::pair).unwrap_or_default();
    let facts = Facts::of(&node.inventory, &node.stack.ofed);
    let mut sheet = Sheet::over(facts);
    let n = Node { read: node, expect, scope, window, log, pairings: &pairings };
    for (_, family) in FAMILIES {
        family(&n, &mut sheet);
    }
    Judged { report: sheet.finish(), gpus: pairings }
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
