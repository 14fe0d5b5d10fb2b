//! `fabric.duplicate`: identities that should be unique and are not.
//!
//! - Two nodes with one node GUID, or two nodes' ports with one port GUID: the SM keys LIDs
//!   and routes on GUIDs, so one of the two is unreachable or both flap (a board whose GUIDs
//!   were programmed twice, a cloned VM or simulator). An error.
//! - Two NICs with one node description: hosts installed from one image before their hostname
//!   was set (rdma-ndd writes `HOST DEVICE`), or one hostname given twice. Traffic is fine, but
//!   everything that names NICs by description (`--plan`, `--rails`, `mesh --topology`)
//!   confuses them. A warning.
//! - NICs with the adapter's default description (`MT4129 ConnectX7 Mellanox Technologies`):
//!   rdma-ndd is not running there, so no tool can say which host they are in. A warning.

use crate::fabric::discovery::links::{end_name, Index};
use crate::fabric::discovery::model::Fabric;
use crate::fabric::judgement::Noted;
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::FindingId;
use crate::outcome::Severity;
use std::collections::{BTreeMap, BTreeSet};

/// Whether a NIC's description is the one the adapter's firmware starts with.
pub fn is_default_description(description: &str) -> bool {
    let d = description.trim();
    if d.is_empty() {
        return true;
    }
    let lower = d.to_ascii_lowercase();
    // "MT4129 ConnectX7 Mellanox Technologies", "MT4123 ConnectX6   Mellanox Technologies".
    let mt_model = d.strip_prefix("MT").is_some_and(|rest| rest.chars().next().is_some_and(|c| c.is_ascii_digit()));
    mt_model || lower.contains("mellanox technologies") || lower.ends_with("nvidia corporation")
}

/// Where a node is cabled, to tell two nodes of one name apart: `leaf1[3]`, or its GUID.
fn whereabouts(index: &Index, fabric: &Fabric, i: usize) -> String {
    let node = &fabric.nodes[i];
    let seats: Vec<String> =
        node.ports.iter().filter_map(|p| p.remote.and_then(|(g, rp)| index.by_guid.get(&g).map(|n| end_name(n, rp)))).take(2).collect();
    if seats.is_empty() {
        format!("{} (not cabled to a discovered node)", node.guid)
    } else {
        format!("{} on {}", node.guid, seats.join(", "))
    }
}

pub fn rules(fabric: &Fabric) -> Vec<Noted> {
    let index = Index::new(fabric);
    let mut out = Vec::new();
    let kind = |i: usize| fabric.nodes[i].node_type.name();
    // Node GUIDs.
    let mut by_node: BTreeMap<Guid, Vec<usize>> = BTreeMap::new();
    for (i, n) in fabric.nodes.iter().enumerate() {
        by_node.entry(n.guid).or_default().push(i);
    }
    for (guid, nodes) in by_node.iter().filter(|(_, v)| v.len() > 1) {
        let who: Vec<String> = nodes.iter().map(|&i| format!("\"{}\" ({})", fabric.nodes[i].description, kind(i))).collect();
        out.push(Noted::new(
            FindingId::FabricDuplicate,
            Severity::Error,
            guid.to_string(),
            format!(
                "node GUID {guid} is used by {} nodes: {}; the SM and every tool that keys on GUIDs see only one of them",
                nodes.len(),
                who.join(", ")
            ),
            "find the device with the copied GUIDs (a replaced board programmed with another's GUIDs, a cloned VM or simulator) and give it its \
             own (the vendor's GUID tools, `flint -d DEV sg` on ConnectX), then let the SM sweep again",
            &[],
        ));
    }
    // Port GUIDs, across distinct nodes (a switch's ports all carry its port 0 GUID).
    let mut by_port: BTreeMap<Guid, BTreeSet<usize>> = BTreeMap::new();
    for (i, n) in fabric.nodes.iter().enumerate() {
        for p in n.ports.iter().filter(|p| n.node_type != NodeType::Switch || p.number == 0) {
            if p.guid != Guid(0) {
                by_port.entry(p.guid).or_default().insert(i);
            }
        }
    }
    for (guid, nodes) in by_port.iter().filter(|(_, v)| v.len() > 1) {
        let node_guids: BTreeSet<Guid> = nodes.iter().map(|&i| fabric.nodes[i].guid).collect();
        if node_guids.len() == 1 {
            continue; // the same node GUID twice: said above
        }
        let who: Vec<String> = nodes.iter().map(|&i| format!("\"{}\" (node {})", fabric.nodes[i].description, fabric.nodes[i].guid)).collect();
        out.push(Noted::new(
            FindingId::FabricDuplicate,
            Severity::Error,
            guid.to_string(),
            format!(
                "port GUID {guid} is used by ports of {} nodes: {}; the SM gives one of them no LID or the wrong routes",
                nodes.len(),
                who.join(", ")
            ),
            "give the device with the copied port GUID its own (the vendor's GUID tools, `flint -d DEV sg` on ConnectX), then let the SM sweep again",
            &[],
        ));
    }
    // Descriptions of NICs.
    let mut defaults: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut by_desc: BTreeMap<&str, BTreeSet<Guid>> = BTreeMap::new();
    // A SHARP Aggregation Node is no NIC: every Quantum switch holds one, all of one description.
    let nics =
        fabric.nodes.iter().enumerate().filter(|(_, n)| n.node_type == NodeType::Ca && !crate::mad::attributes::is_aggregation_node(&n.description));
    for (i, n) in nics {
        if is_default_description(&n.description) {
            defaults.entry(n.description.trim().to_string()).or_default().push(i);
        } else {
            by_desc.entry(n.description.as_str()).or_default().insert(n.guid);
        }
    }
    for (desc, guids) in by_desc.iter().filter(|(_, g)| g.len() > 1) {
        let who: Vec<String> =
            guids.iter().filter_map(|g| fabric.nodes.iter().position(|n| n.guid == *g)).map(|i| whereabouts(&index, fabric, i)).collect();
        out.push(Noted::new(
            FindingId::FabricDuplicate,
            Severity::Warning,
            desc.to_string(),
            format!(
                "{} NICs have the node description \"{desc}\" ({}): hosts cloned from one image (or one hostname given twice); \
                 --plan, --rails and mesh --topology cannot tell them apart",
                guids.len(),
                who.join("; ")
            ),
            "give each host its own hostname and restart rdma-ndd there (`systemctl restart rdma-ndd`), or write the description to \
             /sys/class/infiniband/DEV/node_desc",
            &[],
        ));
    }
    for (desc, nodes) in &defaults {
        let who: Vec<String> = nodes.iter().take(5).map(|&i| whereabouts(&index, fabric, i)).collect();
        let shown =
            if desc.is_empty() { "an empty node description".to_string() } else { format!("the adapter's default node description \"{desc}\"") };
        out.push(Noted::new(
            FindingId::FabricDuplicate,
            Severity::Warning,
            if desc.is_empty() { "(empty description)".into() } else { desc.clone() },
            format!(
                "{} NIC(s) have {shown} ({}{}): rdma-ndd is not running on their hosts, so no tool can say which host they are in",
                nodes.len(),
                who.join("; "),
                if nodes.len() > who.len() { "; ..." } else { "" }
            ),
            "run rdma-ndd on those hosts (`systemctl enable --now rdma-ndd`, rdma-core): it sets the description to HOST DEVICE",
            &[],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fabric::discovery::fixture::Build;

    fn found(noted: &[Noted]) -> Vec<(String, Severity, String)> {
        noted.iter().map(|n| (n.finding.id.to_string(), n.finding.severity, n.finding.subject.to_string())).collect()
    }

    fn base() -> Build {
        let mut b = Build::new();
        b.switch("leaf1");
        b.switch("leaf2");
        for name in ["gpu1 mlx5_0", "gpu2 mlx5_0"] {
            b.ca(name);
            b.cable("leaf1", name);
        }
        b.cable("leaf1", "leaf2");
        b
    }

    #[test]
    fn unique_identities_pass() {
        assert!(rules(&base().fabric).is_empty());
    }

    #[test]
    fn one_node_guid_twice() {
        // Discovery data as a clone would give it (OpenSM itself may not survive this).
        let mut b = base();
        let g = b.guid("gpu1 mlx5_0");
        b.fabric.nodes.iter_mut().find(|n| n.description == "gpu2 mlx5_0").unwrap().guid = g;
        let got = rules(&b.fabric);
        assert_eq!(found(&got), vec![("fabric.duplicate".into(), Severity::Error, g.to_string())], "{got:#?}");
        assert!(got[0].finding.message.contains("is used by 2 nodes: \"gpu1 mlx5_0\" (ca), \"gpu2 mlx5_0\" (ca)"), "{}", got[0].finding.message);
    }

    #[test]
    fn one_port_guid_on_two_nodes() {
        let mut b = base();
        let shared = b.fabric.nodes.iter().find(|n| n.description == "gpu1 mlx5_0").unwrap().ports[0].guid;
        b.fabric.nodes.iter_mut().find(|n| n.description == "gpu2 mlx5_0").unwrap().ports[0].guid = shared;
        let got = rules(&b.fabric);
        assert_eq!(found(&got), vec![("fabric.duplicate".into(), Severity::Error, shared.to_string())], "{got:#?}");
        assert!(got[0].finding.message.starts_with(&format!("port GUID {shared} is used by ports of 2 nodes")));
        // A switch's ports share its GUID: not a duplicate. A switch GUID reused by a CA port is.
        let mut b = base();
        let sw = b.guid("leaf2");
        b.fabric.nodes.iter_mut().find(|n| n.description == "gpu2 mlx5_0").unwrap().ports[0].guid = sw;
        assert_eq!(found(&rules(&b.fabric)), vec![("fabric.duplicate".into(), Severity::Error, sw.to_string())]);
    }

    #[test]
    fn cloned_and_default_descriptions() {
        let mut b = base();
        let leaf2 = b.guid("leaf2");
        for name in ["gpu1 mlx5_0", "MT4129 ConnectX7 Mellanox Technologies", "MT4129 ConnectX7 Mellanox Technologies"] {
            let nic = b.ca(name);
            b.link(leaf2, nic);
        }
        b.switch("leaf1"); // switches may share descriptions
        let got = rules(&b.fabric);
        assert_eq!(
            found(&got),
            vec![
                ("fabric.duplicate".into(), Severity::Warning, "gpu1 mlx5_0".into()),
                ("fabric.duplicate".into(), Severity::Warning, "MT4129 ConnectX7 Mellanox Technologies".into()),
            ],
            "{got:#?}"
        );
        assert!(got[0].finding.message.contains("on leaf1[1]") && got[0].finding.message.contains("on leaf2[2]"), "{}", got[0].finding.message);
        assert!(got[1].finding.message.starts_with("2 NIC(s) have the adapter's default node description"), "{}", got[1].finding.message);
    }

    /// Every Quantum switch holds a SHARP Aggregation Node, all described "Mellanox
    /// Technologies Aggregation Node" (NVIDIA Selene's fabrics, tests/fixtures/wild-fabrics):
    /// neither a cloned nor a default NIC description.
    #[test]
    fn aggregation_nodes_are_no_nics() {
        let mut b = base();
        for sw in ["leaf1", "leaf2"] {
            let (sw, an) = (b.guid(sw), b.ca("Mellanox Technologies Aggregation Node"));
            b.link(sw, an);
        }
        assert!(rules(&b.fabric).is_empty(), "{:#?}", rules(&b.fabric));
    }

    #[test]
    fn default_descriptions() {
        for d in ["MT4129 ConnectX7 Mellanox Technologies", "MT4123 ConnectX6   Mellanox Technologies", "", "  ", "Mellanox Technologies"] {
            assert!(is_default_description(d), "{d:?}");
        }
        for d in ["gpu01 mlx5_0", "hostA", "MTX host"] {
            assert!(!is_default_description(d), "{d:?}");
        }
    }
}
