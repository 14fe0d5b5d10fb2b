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

use crate::probe::pci::config::PortType;
use crate::probe::pci::{Function, Nic, PciTree};
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
/// bridges; among equals, the NIC serving the fewest GPUs so far, then the lowest BDF. GPUs
/// with the nearest NICs choose first, so a GPU that has a NIC on its own switch gets it.
/// Returned in GPU BDF order.
pub fn pair(tree: &PciTree) -> Vec<Pairing> {
    let nics: Vec<(&Nic, &Function)> = tree.nics.iter().filter_map(|n| Some((n, tree.function(&n.bdf)?))).collect();
    let mut load: BTreeMap<&str, usize> = nics.iter().map(|(n, _)| (n.bdf.as_str(), 0)).collect();
    let mut pairings = Vec::new();
    let mut gpus = tree.gpus();
    gpus.sort_by_cached_key(|g| nics.iter().map(|(_, f)| path(tree, g, f)).map(|p| (p.relation, p.bridges.len())).min());
    for gpu in gpus {
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
    pairings.sort_by(|a, b| a.gpu.cmp(&b.gpu));
    pairings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::pci::config::{build, parse, Link};
    use crate::probe::pci::{ConfigRead, SysfsLink};

    fn function(bdf: &str, host_bridge: &str, chain: &[&str], numa: i32, config: ConfigRead) -> Function {
        let (vendor, class) = match bdf.chars().last() {
            Some('g') => (0x10de, 0x030200),
            _ => (0x15b3, 0x020700),
        };
        let bdf = bdf.trim_end_matches('g').to_string();
        Function {
            bdf,
            host_bridge: host_bridge.into(),
            chain: chain.iter().map(|s| s.to_string()).collect(),
            vendor: Some(vendor),
            device: None,
            class: Some(class),
            numa_node: Some(numa),
            link: SysfsLink::default(),
            config,
            config_file: String::new(),
        }
    }

    fn bridge(bdf: &str, port_type: u8) -> Function {
        let gen4 = Link { speed: 4, width: 16 };
        let space = parse(&build::config(0x1000, 0xc010, 0x060400, true, port_type, gen4, gen4, None)).unwrap();
        function(bdf, "pci0000:00", &[], 0, ConfigRead::Parsed(space))
    }

    fn tree(functions: Vec<Function>, nics: &[(&str, &str)]) -> PciTree {
        PciTree {
            functions: functions.into_iter().map(|f| (f.bdf.clone(), f)).collect(),
            nics: nics.iter().map(|(n, b)| Nic { name: n.to_string(), bdf: b.to_string() }).collect(),
            ..PciTree::default()
        }
    }

    fn relation(t: &PciTree, a: &str, b: &str) -> Relation {
        path(t, t.function(a).unwrap(), t.function(b).unwrap()).relation
    }

    /// rp -> us -> {ds0 -> gpu a, ds1 -> nic b, ds2 -> us2 -> {ds3 -> gpu c}}; a second root
    /// port of the same host bridge with nic d; another host bridge on node 0 (nic e) and on
    /// node 1 (nic f).
    fn sample(typed: bool) -> PciTree {
        let chain_a = ["00:01.0", "01:00.0", "02:00.0"];
        let chain_c = ["00:01.0", "01:00.0", "02:02.0", "03:00.0", "04:00.0"];
        let mut fs = vec![
            function("05:00.0g", "pci0000:00", &chain_a, 0, ConfigRead::Missing),
            function("06:00.0", "pci0000:00", &["00:01.0", "01:00.0", "02:01.0"], 0, ConfigRead::Missing),
            function("07:00.0g", "pci0000:00", &chain_c, 0, ConfigRead::Missing),
            function("08:00.0", "pci0000:00", &["00:02.0"], 0, ConfigRead::Missing),
            function("09:00.0", "pci0000:20", &["20:01.0"], 0, ConfigRead::Missing),
            function("0a:00.0", "pci0000:80", &["80:01.0"], 1, ConfigRead::Missing),
        ];
        if typed {
            fs.extend([
                bridge("00:01.0", 4),
                bridge("01:00.0", 5),
                bridge("02:00.0", 6),
                bridge("02:01.0", 6),
                bridge("02:02.0", 6),
                bridge("03:00.0", 5),
                bridge("04:00.0", 6),
            ]);
        }
        tree(fs, &[("b", "06:00.0"), ("d", "08:00.0"), ("e", "09:00.0"), ("f", "0a:00.0")])
    }

    #[test]
    fn relations_in_nvidia_smi_words() {
        for typed in [true, false] {
            let t = sample(typed);
            assert_eq!(relation(&t, "05:00.0", "06:00.0"), Relation::Pix, "typed {typed}");
            assert_eq!(relation(&t, "07:00.0", "06:00.0"), Relation::Pxb, "typed {typed}");
            assert_eq!(relation(&t, "05:00.0", "08:00.0"), Relation::Phb, "typed {typed}");
            assert_eq!(relation(&t, "05:00.0", "09:00.0"), Relation::Node, "typed {typed}");
            assert_eq!(relation(&t, "05:00.0", "0a:00.0"), Relation::Sys, "typed {typed}");
        }
        let t = sample(true);
        let p = path(&t, t.function("07:00.0").unwrap(), t.function("06:00.0").unwrap());
        assert_eq!(p.bridges, vec!["04:00.0", "03:00.0", "02:02.0", "01:00.0", "02:01.0"]);
    }

    #[test]
    fn unknown_numa_is_not_remote() {
        let mut t = sample(false);
        t.functions.get_mut("0a:00.0").unwrap().numa_node = Some(-1);
        assert_eq!(relation(&t, "05:00.0", "0a:00.0"), Relation::Node);
    }

    #[test]
    fn pairing_prefers_near_then_spreads_ties() {
        let t = sample(true);
        let pairs = pair(&t);
        assert_eq!(pairs.len(), 2);
        let nic = |i: usize| pairs[i].nic.as_ref().map(|n| (n.name.as_str(), n.relation)).unwrap();
        assert_eq!(nic(0), ("b", Relation::Pix));
        assert_eq!(nic(1), ("b", Relation::Pxb));
        let mut t = t;
        t.nics.retain(|n| n.name != "b" && n.name != "d" && n.name != "e");
        let pairs = pair(&t);
        assert!(pairs.iter().all(|p| p.nic.as_ref().unwrap().relation == Relation::Sys));
        t.nics.clear();
        assert!(pair(&t).iter().all(|p| p.nic.is_none()));
    }
}
