//! The GPU affinity table of `fabcheck devices`: every GPU, its nearest RDMA NIC and how they
//! are connected, in `nvidia-smi topo -m`'s words, with NUMA nodes and the GPU's PCIe link.

use crate::gpu::topology::Pairing;
use crate::probe::pci::PciTree;
use std::fmt::Write;

pub fn affinity_table(tree: &PciTree, pairings: &[Pairing]) -> String {
    let mut out = String::new();
    if pairings.is_empty() {
        return out;
    }
    let numa = |n: Option<i32>| n.map_or("?".to_string(), |n| n.to_string());
    let _ = writeln!(out, "GPU affinity (nearest RDMA NIC, as nvidia-smi topo -m)");
    let _ = writeln!(out, "  {:<14} {:<5} {:<24} {:<5} {:<9} link", "gpu", "numa", "nic", "numa", "relation");
    for p in pairings {
        let link = tree.function(&p.gpu).map_or(String::new(), |g| {
            format!(
                "x{} {} (max x{} {})",
                g.link.current_width.map_or("?".into(), |w| w.to_string()),
                g.link.current_speed.as_deref().unwrap_or("?"),
                g.link.max_width.map_or("?".into(), |w| w.to_string()),
                g.link.max_speed.as_deref().unwrap_or("?"),
            )
        });
        let (nic, nic_numa, relation) = match &p.nic {
            Some(n) => (crate::probe::pci::nic_label(&n.name, &n.bdf), numa(n.numa), n.relation.name()),
            None => ("none".to_string(), "-".to_string(), "-"),
        };
        let _ = writeln!(out, "  {:<14} {:<5} {:<24} {:<5} {:<9} {link}", p.gpu, numa(p.gpu_numa), nic, nic_numa, relation);
    }
    out
}
