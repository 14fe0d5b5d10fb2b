//! Where GPUs sit relative to RDMA NICs, in `nvidia-smi topo -m`'s words. Pure: works on a
//! [`PciTree`] already read.
//!
//! The relations, nearest first (as `nvidia-smi topo -m` and NCCL's `PATH_*` define them):
//! PIX: the path crosses at most one PCIe switch; PXB: several switches, but not the host
//! bridge; PHB: through one host bridge (the CPU's root complex); NODE: between host bridges
//! of one NUMA node; SYS: across the inter-socket link (UPI, xGMI).
//!
//! A physical switch appears in sysfs as an upstream port with a downstream port per slot, so
//! a downstream port is counted with the upstream port above it: GPU and NIC under two slots
//! of one switch are PIX, as NVIDIA's tools report HGX boards.

use super::config::PortType;
use super::pci::{Function, Nic, PciTree};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Relation {
    #[serde(rename = "PIX")]
    Pix,
    #[serde(rename = "PXB")]
    Pxb,
    #[serde(rename = "PHB")]
    Phb,
    #[serde(rename = "NODE")]
    Node,
    #[serde(rename = "SYS")]
    Sys,
}

impl Relation {
    pub fn name(self) -> &'static str {
        match self {
            Relation::Pix => "PIX",
            Relation::Pxb => "PXB",
            Relation::Phb => "PHB",
            Relation::Node => "NODE",
            Relation::Sys => "SYS",
        }
    }

    /// What it means, for messages.
    pub fn meaning(self) -> &'static str {
        match self {
            Relation::Pix => "through at most one PCIe switch",
            Relation::Pxb => "through several PCIe switches, not the CPU",
            Relation::Phb => "through the CPU's PCIe host bridge",
            Relation::Node => "between PCIe host bridges of one NUMA node",
            Relation::Sys => "across the inter-socket link (other NUMA node)",
        }
    }
}

/// The way from one function to another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    pub relation: Relation,
    /// Every bridge crossed, from `a` up and down to `b`.
    pub bridges: Vec<String>,
}

/// The kind of port a bridge is: from its config space when read, else from its depth under
/// the root port (root port, then upstream and downstream ports alternating, as switches nest).
pub fn port_type(tree: &PciTree, bdf: &str, depth: usize) -> PortType {
    if let Some(t) = tree.function(bdf).and_then(|f| f.config.parsed()).and_then(|c| c.pcie).map(|p| p.port_type) {
        return t;
    }
    match depth {
        0 => PortType::RootPort,
        d if d % 2 == 1 => PortType::SwitchUpstream,
        _ => PortType::SwitchDownstream,
    }
}

fn same_numa(a: &Function, b: &Function) -> bool {
    // -1 or absent: the kernel knows no NUMA layout (one node), so nothing is remote.
    match (a.numa_node.filter(|n| *n >= 0), b.numa_node.filter(|n| *n >= 0)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// The path between two functions of the tree.
pub fn path(tree: &PciTree, a: &Function, b: &Function) -> Path {
    if a.host_bridge != b.host_bridge {
        let bridges = a.chain.iter().rev().chain(b.chain.iter()).cloned().collect();
        let relation = if same_numa(a, b) { Relation::Node } else { Relation::Sys };
        return Path { relation, bridges };
    }
    let common = a.chain.iter().zip(&b.chain).take_while(|(x, y)| x == y).count();
    if common == 0 {
        let bridges = a.chain.iter().rev().chain(b.chain.iter()).cloned().collect();
        return Path { relation: Relation::Phb, bridges };
    }
    let meet = &a.chain[common - 1];
    let mut bridges: Vec<String> = a.chain[common..].iter().rev().cloned().collect();
    bridges.push(meet.clone());
    bridges.extend(b.chain[common..].iter().cloned());

    // Count switches: a downstream port belongs to the upstream port above it.
    let mut switches: Vec<&str> = Vec::new();
    for chain in [&a.chain, &b.chain] {
        for depth in (common - 1)..chain.len() {
            let bdf = chain[depth].as_str();
            let unit = match port_type(tree, bdf, depth) {
                PortType::SwitchDownstream if depth > 0 => chain[depth - 1].as_str(),
                _ => bdf,
            };
            if !switches.contains(&unit) {
                switches.push(unit);
            }
        }
    }
    let relation = if switches.len() <= 1 { Relation::Pix } else { Relation::Pxb };
    Path { relation, bridges }
}

/// A GPU and the NIC it would use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pairing {
    pub gpu: String,
    pub gpu_numa: Option<i32>,
    /// `None` when the node has no RDMA NIC on PCI.
    pub nic: Option<NicChoice>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NicChoice {
    pub name: String,
    pub bdf: String,
    pub numa: Option<i32>,
    pub relation: Relation,
    pub bridges: Vec<String>,
}

/// Pairs every GPU with its nearest NIC, as NCCL does: the closest relation, then the fewest
/// bridges; among equals, the NIC serving the fewest GPUs so far, then the lowest BDF.
pub fn pair(tree: &PciTree) -> Vec<Pairing> {
    let nics: Vec<(&Nic, &Function)> = tree.nics.iter().filter_map(|n| Some((n, tree.function(&n.bdf)?))).collect();
    let mut load: BTreeMap<&str, usize> = nics.iter().map(|(n, _)| (n.bdf.as_str(), 0)).collect();
    let mut pairings = Vec::new();
    for gpu in tree.gpus() {
        let best = nics
            .iter()
            .map(|(nic, f)| (nic, f, path(tree, gpu, f)))
            .min_by_key(|(nic, _, p)| (p.relation, p.bridges.len(), load[nic.bdf.as_str()], nic.bdf.clone()));
        let nic = best.map(|(nic, f, p)| {
            *load.entry(nic.bdf.as_str()).or_default() += 1;
            NicChoice { name: nic.name.clone(), bdf: nic.bdf.clone(), numa: f.numa_node, relation: p.relation, bridges: p.bridges }
        });
        pairings.push(Pairing { gpu: gpu.bdf.clone(), gpu_numa: gpu.numa_node, nic });
    }
    pairings
}
