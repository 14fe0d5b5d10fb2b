//! One read of a node for its checklist: what `check`, the exporter and each end of a `--soak`
//! window read, written once (0.3 had two copies, and the exporter's skipped mlxlink, the
//! driver stack and the bundle's modules: Prometheus showed a broken node healthy). What the
//! read is judged by is `diagnose::node::judge`, also one function.
//!
//! The order matters where one read feeds another: the inventory first (verbs and sysfs, or the
//! bundle); a live node's own InfiniBand ports over MADs (what they support, their SM, their
//! partner, their FEC counters); mlxlink's BERs; the PCI tree and its PCIe health; the host's
//! facts (live only) and the driver stack's (the firmware configuration goes into the inventory,
//! which `port.link_layer` reads).

use super::host::{self, HostFacts};
use super::pci::health::{self, PcieHealth};
use super::pci::PciTree;
use super::stack::StackFacts;
use super::{Inventory, ProbeError, Source};
use std::path::Path;

/// What one read of a node found.
#[derive(Debug, Clone)]
pub struct NodeRead {
    pub source: Source,
    pub inventory: Inventory,
    /// The host's stack facts (modules, device files, libraries, limits): a live node only; a
    /// bundle holds none of them.
    pub host: Option<HostFacts>,
    /// The driver stack: firmware configuration, OFED, units, IPoIB (live, or the bundle's).
    pub stack: StackFacts,
    /// The PCI tree (GPU readiness, PCIe health), where the node or bundle has one.
    pub pci: Option<PciTree>,
    pub pcie: PcieHealth,
    /// A bundle's `module/` folder (captured with the PCI tree): the stack's modules it holds.
    pub bundle_modules: Option<Vec<String>>,
}

impl NodeRead {
    pub fn live(&self) -> bool {
        matches!(self.source, Source::Live)
    }
}

/// Reads the node (`only`: these devices of it; none named, all). A live node without devices,
/// or without rdma-core at all, is read as one with no devices (the checklist's
/// `devices.count` and `stack.rdma_core` say why); a device that is not there, or a bundle that
/// cannot be read, is an error (the run could not run).
pub fn read(source: &Source, only: &[&str]) -> Result<NodeRead, ProbeError> {
    let live = matches!(source, Source::Live);
    let one = match only {
        [one] => Some(*one),
        _ => None,
    };
    let mut inventory = match super::inventory(source, one) {
        Ok(inventory) => inventory,
        Err(ProbeError::NoDevices) | Err(ProbeError::NoVerbs(_)) | Err(ProbeError::NoRdmaCore { .. }) if live && only.is_empty() => {
            Inventory::default()
        }
        Err(err) => return Err(err),
    };
    // Several named: each must be there, and the rest is not read further (as one named).
    if only.len() > 1 {
        if let Some(name) = only.iter().find(|n| inventory.device(n).is_none()) {
            let present = inventory.devices.iter().map(|d| d.name.clone()).collect();
            return Err(ProbeError::NoSuchDevice { name: name.to_string(), present });
        }
        inventory.devices.retain(|d| only.contains(&d.name.as_str()));
    }
    if live {
        super::local_mads::enrich(&mut inventory);
    }
    super::port_fill::attach_mlxlink(&mut inventory, source);
    let root = match source {
        Source::Sysfs(root) => root.clone(),
        Source::Live => Path::new("/sys").to_path_buf(),
    };
    let mut pci = super::pci::read(&root);
    let pcie = health::read::read(source, &inventory, pci.as_ref());
    // The RoCE discard counters are lifetime figures too: said with the uptime they cover.
    for q in inventory.devices.iter_mut().flat_map(|d| d.ports.iter_mut()).filter_map(|p| p.qos.as_mut()) {
        q.uptime_s = pcie.uptime_s;
    }
    let host = live.then(|| host::gather(&host::live_root()));
    let stack = super::stack::gather(&mut inventory, source);
    // gpu.peermem's dma-buf path depends on the kernel (5.12+).
    if let Some(modules) = pci.as_mut().and_then(|t| t.modules.as_mut()) {
        modules.kernel = stack.ofed.kernel.clone();
    }
    let bundle_modules = match source {
        Source::Sysfs(root) => bundle_modules(root),
        Source::Live => None,
    };
    Ok(NodeRead { source: source.clone(), inventory, host, stack, pci, pcie, bundle_modules })
}

/// The stack's modules a bundle's `module/` holds, where it has that folder.
fn bundle_modules(root: &Path) -> Option<Vec<String>> {
    let tree = crate::sys::beneath::Tree::new(root.to_path_buf());
    let folder = Path::new("module");
    if !tree.is_dir(folder) {
        return None;
    }
    Some(host::MODULES.iter().filter(|m| tree.exists(&folder.join(m))).map(|m| m.to_string()).collect())
}
