//! A node's rails: which of its ports `--rails SPEC` means, in rail order (pure). Rail k of one
//! node is paired with rail k of the other, so the order is the contract: on a GPU node the
//! k-th GPU's own NIC (GPU PCI order, what NCCL sees with `CUDA_DEVICE_ORDER=PCI_BUS_ID`), not
//! `mlx5_k` — on DGX H100 storage NICs sit between the compute NICs in `mlx5_N` order.

use super::topology::{self, Relation};
use crate::model::rails::{Rail, RailName, RailSpec};
use crate::port::{LinkLayer, PortState};
use crate::probe::pci::PciTree;
use crate::probe::tree::natural_key;
use crate::probe::Inventory;
use std::cmp::Ordering;

/// One port a rail could be: what the inventory says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub device: String,
    pub port: u32,
    pub link_layer: LinkLayer,
    pub active: bool,
    /// The device's PCI function; `None` for Soft-RoCE (no PCI device).
    pub bdf: Option<String>,
    /// An SR-IOV virtual function: no rail of its own where its physical function is a
    /// candidate (they share one link), the node's rails where it is all there is (a pod).
    pub virtual_function: bool,
}

/// Every port of an inventory as a rail candidate.
pub fn candidates(inventory: &Inventory) -> Vec<Candidate> {
    inventory
        .ports()
        .map(|(d, p)| Candidate {
            device: d.name.clone(),
            port: p.port,
            link_layer: p.link_layer,
            active: p.state == PortState::Active,
            bdf: d.pci.as_ref().and_then(|pci| pci.address.clone()),
            virtual_function: d.virtual_function,
        })
        .collect()
}

/// Why a spec names no usable list of rails on this node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RailError {
    #[error("this node has no RDMA port{}", .0.as_ref().map(|l| format!(" of link layer {l}")).unwrap_or_default())]
    NoPorts(Option<String>),
    #[error("--rails {asked}: this node has {have} rail(s)")]
    TooFew { asked: usize, have: usize },
    #[error("--rails names {0}, which this node does not have")]
    Unknown(String),
}

/// The link layer rails use when the caller does not say: the one most ACTIVE ports have
/// (the compute fabric outnumbers management ports), InfiniBand on a tie, and among ports none
/// of which is ACTIVE the most common one.
pub fn link_layer_in_use(ports: &[Candidate]) -> Option<LinkLayer> {
    let count = |l: LinkLayer, active_only: bool| ports.iter().filter(|p| p.link_layer == l && (p.active || !active_only)).count();
    let mut layers: Vec<LinkLayer> = Vec::new();
    for p in ports {
        if !layers.contains(&p.link_layer) {
            layers.push(p.link_layer);
        }
    }
    layers.sort_by_key(|&l| (std::cmp::Reverse(count(l, true)), std::cmp::Reverse(count(l, false)), l != LinkLayer::InfiniBand));
    layers.first().copied()
}

/// Orders ports of NICs by PCI address (ports without one last), then device name in
/// natural order (`rxe2` before `rxe10`), then port number.
fn by_address(a: &Candidate, b: &Candidate) -> Ordering {
    let addr = |c: &Candidate| (c.bdf.is_none(), c.bdf.clone());
    addr(a).cmp(&addr(b)).then_with(|| natural_key(&a.device).cmp(&natural_key(&b.device))).then(a.port.cmp(&b.port))
}

/// The PCI card a function belongs to (its BDF without the function number): the functions of
/// a dual-port card are one NIC.
fn card(bdf: &str) -> &str {
    bdf.rsplit_once('.').map_or(bdf, |(card, _)| card)
}

/// The rails of `spec` on this node, in rail order. `tree` is the node's PCI tree (`None`
/// without one: no GPU pairing); `layer` the link layer to use (`None`: [`link_layer_in_use`]).
pub fn resolve(spec: &RailSpec, ports: &[Candidate], tree: Option<&PciTree>, layer: Option<LinkLayer>) -> Result<Vec<Rail>, RailError> {
    let Some(layer) = layer.or_else(|| link_layer_in_use(ports)) else {
        return Err(RailError::NoPorts(None));
    };
    // A node with physical functions has its rails there: its VFs share their links (named in a
    // list, a VF is still taken). A pod that was given only VFs has those.
    let physical = ports.iter().any(|p| p.link_layer == layer && !p.virtual_function);
    let of_layer: Vec<&Candidate> = ports.iter().filter(|p| p.link_layer == layer && !(physical && p.virtual_function)).collect();
    if of_layer.is_empty() && !matches!(spec, RailSpec::List(_)) {
        return Err(RailError::NoPorts(Some(layer.name().into_owned())));
    }
    let numbered = |chosen: Vec<(&Candidate, Option<String>)>| -> Vec<Rail> {
        chosen
            .into_iter()
            .enumerate()
            .map(|(rail, (c, gpu))| Rail { rail, device: c.device.clone(), port: c.port, active: c.active, bdf: c.bdf.clone(), gpu })
            .collect()
    };
    match spec {
        RailSpec::All => {
            let mut all = of_layer;
            all.sort_by(|a, b| by_address(a, b));
            Ok(numbered(all.into_iter().map(|c| (c, None)).collect()))
        }
        RailSpec::Auto => Ok(numbered(auto(&of_layer, tree))),
        RailSpec::Count(n) => {
            let mut rails = auto(&of_layer, tree);
            let n = usize::from(*n);
            if rails.len() < n {
                return Err(RailError::TooFew { asked: n, have: rails.len() });
            }
            rails.truncate(n);
            Ok(numbered(rails))
        }
        RailSpec::List(names) => {
            let mut chosen = Vec::new();
            for RailName { device, port } in names {
                let found = match port {
                    Some(p) => ports.iter().find(|c| &c.device == device && c.port == *p),
                    // A device named without a port: its first port of the layer in use, else its first.
                    None => ports.iter().filter(|c| &c.device == device).min_by_key(|c| (c.link_layer != layer, c.port)),
                };
                let label = port.map_or(device.clone(), |p| format!("{device}:{p}"));
                chosen.push((found.ok_or(RailError::Unknown(label))?, None));
            }
            Ok(numbered(chosen))
        }
    }
}

/// `auto`: on a GPU node, each GPU's own NIC (nearest at PIX/PXB; a NIC serves one GPU; of a
/// dual-port card its first port of the layer), in GPU PCI order; a node where no GPU has such
/// a NIC is ordered as one without GPUs: every port by PCI address, then name.
fn auto<'a>(ports: &[&'a Candidate], tree: Option<&PciTree>) -> Vec<(&'a Candidate, Option<String>)> {
    let mut sorted: Vec<&Candidate> = ports.to_vec();
    sorted.sort_by(|a, b| by_address(a, b));
    let mut chosen: Vec<(&Candidate, Option<String>)> = Vec::new();
    let mut cards: Vec<String> = Vec::new();
    if let Some(tree) = tree {
        // `pair` returns the pairings in GPU BDF order.
        for pairing in topology::pair(tree) {
            let Some(nic) = pairing.nic else { continue };
            if !matches!(nic.relation, Relation::Pix | Relation::Pxb) || cards.iter().any(|c| c == card(&nic.bdf)) {
                continue;
            }
            // The pairing names the device as class/infiniband does; a bundle that copied the
            // device folders names it by BDF: match either, and any function of the card.
            let port = sorted.iter().find(|c| c.device == nic.name || c.bdf.as_deref().is_some_and(|b| card(b) == card(&nic.bdf)));
            if let Some(port) = port {
                cards.push(card(&nic.bdf).to_string());
                chosen.push((port, Some(pairing.gpu.clone())));
            }
        }
    }
    if chosen.is_empty() {
        chosen = sorted.into_iter().map(|c| (c, None)).collect();
    }
    chosen
}

/// Rails whose NICs sit behind one PCIe switch, and what that switch's uplink (its upstream
/// port's link to the CPU) carries: all of them together cannot move more.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SharedUplink {
    /// The switch's upstream port.
    pub uplink: String,
    pub rails: Vec<usize>,
    pub gbps: f64,
}

/// The uplinks several of `rails` share (a switch above two or more of their NICs), from the
/// PCI tree `check` reads. On HGX each switch holds one NIC (and a GPU): none.
pub fn shared_uplinks(tree: &PciTree, rails: &[Rail]) -> Vec<SharedUplink> {
    let mut groups: Vec<SharedUplink> = Vec::new();
    for rail in rails {
        let Some(function) = rail.bdf.as_deref().and_then(|b| tree.function(b)) else { continue };
        // The outermost switch: the first upstream port below the root port.
        let Some((depth, uplink)) = function
            .chain
            .iter()
            .enumerate()
            .find(|(depth, bdf)| *depth > 0 && topology::port_type(tree, bdf, *depth) == crate::probe::pci::config::PortType::SwitchUpstream)
        else {
            continue;
        };
        debug_assert!(depth > 0);
        let Some(port) = tree.function(uplink) else { continue };
        let (Some(speed), Some(width)) = (port.link.current_speed.as_deref(), port.link.current_width) else { continue };
        let Some(gbps) = crate::probe::capacity::pcie_usable_gbps(speed, width, None) else { continue };
        match groups.iter_mut().find(|g| &g.uplink == uplink) {
            Some(g) => g.rails.push(rail.rail),
            None => groups.push(SharedUplink { uplink: uplink.clone(), rails: vec![rail.rail], gbps }),
        }
    }
    groups.retain(|g| g.rails.len() > 1);
    groups
}

#[cfg(test)]
#[path = "rails_tests.rs"]
mod tests;
