//! Reads the PCIe health of a node (issue #44) into `probe::pcie`'s plain data: the AER
//! counters (`aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal`) of every RDMA NIC's
//! function, every GPU and every bridge on their paths up to the root complex (the PCI tree,
//! `probe::pci`; without one, each NIC's own `class/infiniband/DEV/device` folder), mlx5's PCIe
//! counters from the `ethtool -S` of each NIC's Ethernet netdev, and `devlink -j health show`.
//!
//! Every file is read through the tree's bounded reader (`sys::beneath`, 4 KiB each); live, the
//! tools are bounded children (`probe::tool`: 3 s for ethtool, 5 s for devlink, 1 MiB each);
//! in a bundle their outputs are `ethtool/IF.stats.txt` and `tools/devlink-health.json`
//! (`fabcheck bundle DIR`). Nothing here is required: what cannot be read is said.

use crate::probe::pci::health::aer::{self, AerSeverity};
use crate::probe::pci::health::{devlink, mlx5, DevlinkRead, FunctionHealth, PcieHealth, Role};
use crate::probe::pci::PciTree;
use crate::probe::{Inventory, Source};
use crate::sys::beneath::Tree;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An `aer_dev_*` file is a few hundred bytes.
const AER_CAP: u64 = 4096;
const ETHTOOL_LIMIT: Duration = Duration::from_secs(3);
const DEVLINK_LIMIT: Duration = Duration::from_secs(5);
const REPORT_CAP: u64 = 1 << 20;
/// Where a bundle keeps `devlink -j health show`.
pub const DEVLINK_FILE: &str = "tools/devlink-health.json";

/// Reads the node's PCIe health; `tree` is the PCI tree of the same source, when it has one.
pub fn read(source: &Source, inventory: &Inventory, tree: Option<&PciTree>) -> PcieHealth {
    let root: PathBuf = match source {
        Source::Live => PathBuf::from("/sys"),
        Source::Sysfs(root) => root.clone(),
    };
    let files = Tree::new(root.clone());
    let nics: Vec<(String, String)> = inventory
        .devices
        .iter()
        .filter_map(|d| Some((d.name.clone(), d.pci.as_ref()?.address.clone()?)))
        .filter(|(_, bdf)| crate::probe::tool::valid_bdf(bdf))
        .collect();
    let mut functions = match tree {
        Some(tree) => from_tree(tree, &files),
        None => from_devices(inventory, &files),
    };
    for f in &mut functions {
        let Role::Nic { name } = &f.role else { continue };
        let device = inventory.device(name).or_else(|| nics.iter().find(|(_, b)| *b == f.bdf).and_then(|(n, _)| inventory.device(n)));
        let netdev = device.and_then(|d| {
            d.ports
                .iter()
                .filter(|p| p.link_layer == crate::port::LinkLayer::Ethernet)
                .find_map(|p| p.netdev.clone().filter(|n| crate::probe::tree::valid_netdev_name(n)))
        });
        if let Some(netdev) = netdev {
            let counters = ethtool_stats(source, &files, &netdev).map(|r| mlx5::parse_ethtool(&r)).filter(|c| !c.is_empty());
            f.mlx5 = counters.map(|c| (netdev, c));
        }
    }
    let live = matches!(source, Source::Live);
    let uptime_s = if live { uptime_s() } else { None };
    PcieHealth { functions, nics, devlink: devlink_health(source, &root, &files), tree: tree.is_some(), live, uptime_s }
}

/// Seconds since boot (`/proc/uptime`'s first figure): what a lifetime counter covers.
pub fn uptime_s() -> Option<u64> {
    let text = crate::sys::fs::read_text(std::path::Path::new("/proc/uptime"), 128).ok()?;
    text.split_whitespace().next()?.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(|s| s as u64)
}

/// A lifetime's span in words: `over 3 d 4 h of uptime`, or `since boot` where it is not known.
pub fn uptime_words(uptime_s: Option<u64>) -> String {
    match uptime_s {
        Some(s) if s >= 86_400 => format!("over {} d {} h of uptime", s / 86_400, s % 86_400 / 3600),
        Some(s) if s >= 3600 => format!("over {} h {} min of uptime", s / 3600, s % 3600 / 60),
        Some(s) => format!("over {} min of uptime", s / 60),
        None => "since boot (uptime not known)".into(),
    }
}

/// NICs, GPUs and the bridges above them, from the PCI tree.
fn from_tree(tree: &PciTree, files: &Tree) -> Vec<FunctionHealth> {
    let mut out = Vec::new();
    let label = |bdf: &str| match tree.nics.iter().find(|n| n.bdf == bdf) {
        Some(n) => crate::probe::pci::nic_label(&n.name, &n.bdf),
        None => format!("GPU {bdf}"),
    };
    let mut below: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
    let endpoints: Vec<(&crate::probe::pci::Function, Role)> = tree
        .nics
        .iter()
        .filter_map(|n| Some((tree.function(&n.bdf)?, Role::Nic { name: n.name.clone() })))
        .chain(tree.gpus().into_iter().map(|g| (g, Role::Gpu)))
        .collect();
    let mut seen = BTreeSet::new();
    for (f, role) in endpoints {
        if !seen.insert(f.bdf.clone()) {
            continue;
        }
        for (i, bridge) in f.chain.iter().enumerate() {
            let entry = below.entry(bridge.as_str()).or_default();
            entry.0.push(label(&f.bdf));
            if i + 1 == f.chain.len() {
                entry.1.push(label(&f.bdf));
            }
        }
        out.push(function(f.bdf.clone(), role, f.dir(), files));
    }
    for (bdf, (under, link_of)) in below {
        let Some(f) = tree.function(bdf) else { continue };
        out.push(function(bdf.to_string(), Role::Bridge { below: under, link_of }, f.dir(), files));
    }
    out
}

/// Without a PCI tree: each NIC's own function folder (`class/infiniband/DEV/device`, a
/// captured folder or the live link).
fn from_devices(inventory: &Inventory, files: &Tree) -> Vec<FunctionHealth> {
    inventory
        .devices
        .iter()
        .filter_map(|d| {
            let pci = d.pci.as_ref()?;
            let bdf = pci.address.clone().unwrap_or_else(|| d.name.clone());
            let dir = Path::new("class/infiniband").join(&d.name).join("device");
            Some(function(bdf, Role::Nic { name: d.name.clone() }, &dir, files))
        })
        .collect()
}

/// One function of the tree at `root`, read as `role` would be (tests/vm/aer.sh reads an
/// emulated device this way: qemu has no RDMA NIC to place on its root port).
pub fn read_function(root: &Path, tree: &PciTree, bdf: &str, role: Role) -> Option<FunctionHealth> {
    let f = tree.function(bdf)?;
    Some(function(bdf.to_string(), role, f.dir(), &Tree::new(root.to_path_buf())))
}

fn function(bdf: String, role: Role, dir: &Path, files: &Tree) -> FunctionHealth {
    let mut health = FunctionHealth { bdf, role, aer: BTreeMap::new(), unreadable: Vec::new(), mlx5: None };
    for severity in AerSeverity::ALL {
        let rel = dir.join(severity.file());
        match files.read_text(&rel, AER_CAP) {
            // A file the kernel did not write is not counts: `pcie.aer` skips the function,
            // naming the file and why, never judges it clean (issue #58).
            Ok(text) => match aer::fault(severity, &text) {
                None => {
                    health.aer.insert(severity, aer::parse(&text));
                }
                Some(why) => health.unreadable.push((rel.display().to_string(), format!("not as the kernel writes it: {why}"))),
            },
            Err(e) if e.is_not_found() => {}
            Err(e) => health.unreadable.push((rel.display().to_string(), e.reason())),
        }
    }
    health
}

/// `ethtool -S NETDEV`: run live, else the bundle's `ethtool/NETDEV.stats.txt`.
fn ethtool_stats(source: &Source, files: &Tree, netdev: &str) -> Option<String> {
    match source {
        Source::Live if crate::probe::tree::valid_tool_netdev(netdev) => {
            crate::probe::tool::run("ethtool", &["-S", netdev], ETHTOOL_LIMIT, REPORT_CAP).ok()
        }
        Source::Live => None,
        Source::Sysfs(_) => files.read_text(&Path::new("ethtool").join(format!("{netdev}.stats.txt")), REPORT_CAP).ok(),
    }
}

fn devlink_health(source: &Source, root: &Path, files: &Tree) -> DevlinkRead {
    let text = match source {
        Source::Live => match crate::probe::tool::run("devlink", &["-j", "health", "show"], DEVLINK_LIMIT, REPORT_CAP) {
            Ok(text) => text,
            Err(crate::probe::tool::ToolError::NotInstalled) => return DevlinkRead::Unread("devlink (iproute2) is not installed".into()),
            Err(e) => return DevlinkRead::Unread(e.words("devlink -j health show")),
        },
        Source::Sysfs(_) => {
            if !root.join("tools").is_dir() {
                return DevlinkRead::NotLooked;
            }
            match files.read_text(Path::new(DEVLINK_FILE), REPORT_CAP) {
                Ok(text) => text,
                // Captured before 0.4 (or where devlink was not installed): judged without it.
                Err(e) if e.is_not_found() => return DevlinkRead::NotLooked,
                Err(e) => return DevlinkRead::Unread(format!("{DEVLINK_FILE}: {}", e.reason())),
            }
        }
    };
    match devlink::parse_health(&text) {
        Ok(reporters) => DevlinkRead::Read(reporters),
        Err(why) => DevlinkRead::Unread(format!("`devlink -j health show` output: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hgx_tree_reads_every_function_on_the_paths() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu-hgx-healthy");
        let source = Source::Sysfs(root.clone());
        let inventory = crate::probe::inventory(&source, None).unwrap();
        let tree = crate::probe::pci::read(&root).unwrap();
        let health = read(&source, &inventory, Some(&tree));
        let count = |want: fn(&Role) -> bool| health.functions.iter().filter(|f| want(&f.role)).count();
        assert_eq!(count(|r| matches!(r, Role::Nic { .. })), 8);
        assert_eq!(count(|r| matches!(r, Role::Gpu)), 8);
        // Per switch: its root port, upstream port and the two used slots.
        assert_eq!(count(|r| matches!(r, Role::Bridge { .. })), 32);
        // The synthesized trees hold no aer_dev_* files: nothing read, nothing unreadable.
        assert!(health.functions.iter().all(|f| f.aer.is_empty() && f.unreadable.is_empty()));
        let slot = health.functions.iter().find(|f| f.bdf == "0000:17:03.0").unwrap();
        assert!(matches!(&slot.role, Role::Bridge { link_of, .. } if link_of.len() == 1), "{:?}", slot.role);
        assert!(health.tree);
        assert_eq!(health.devlink, DevlinkRead::NotLooked, "no tools/ in the bundle");
        assert!(!health.live);
    }
}
