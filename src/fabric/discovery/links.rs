//! Links (cables) derived from the discovered ports: each once, switch end first, named
//! by node description and port as `leaf1[7] <-> spine1[1]`.

use crate::fabric::discovery::model::{Fabric, Node, Port};

use crate::mad::attributes::{Guid, NodeType};
use std::collections::{HashMap, HashSet};

/// One end of a link.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    pub node: &'a Node,
    pub port: &'a Port,
}

impl End<'_> {
    pub fn key(&self) -> (Guid, u8) {
        (self.node.guid, self.port.number)
    }

    pub fn name(&self) -> String {
        end_name(self.node, self.port.number)
    }
}

/// `leaf1[7]`; a node without a description is named by its GUID.
pub fn end_name(node: &Node, port: u8) -> String {
    format!("{}[{port}]", node_name(node))
}

pub fn node_name(node: &Node) -> String {
    if node.description.trim().is_empty() {
        node.guid.to_string()
    } else {
        node.description.clone()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Link<'a> {
    pub a: End<'a>,
    pub b: End<'a>,
}

impl Link<'_> {
    pub fn name(&self) -> String {
        format!("{} <-> {}", self.a.name(), self.b.name())
    }

    /// The unordered pair of ends, for set membership.
    pub fn key(&self) -> LinkKey {
        LinkKey::new(self.a.key(), self.b.key())
    }
}

/// An unordered pair of (node GUID, port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkKey((Guid, u8), (Guid, u8));

impl LinkKey {
    pub fn new(x: (Guid, u8), y: (Guid, u8)) -> Self {
        if x <= y {
            LinkKey(x, y)
        } else {
            LinkKey(y, x)
        }
    }
}

/// An index over the fabric: nodes by GUID, and every link once.
pub struct Index<'a> {
    pub by_guid: HashMap<Guid, &'a Node>,
    pub links: Vec<Link<'a>>,
}

impl<'a> Index<'a> {
    pub fn new(fabric: &'a Fabric) -> Self {
        let by_guid: HashMap<Guid, &Node> = fabric.nodes.iter().map(|n| (n.guid, n)).collect();
        let mut seen = HashSet::new();
        let mut links = Vec::new();
        for node in &fabric.nodes {
            for port in &node.ports {
                let Some((rguid, rport)) = port.remote else { continue };
                let Some(rnode) = by_guid.get(&rguid) else { continue };
                let Some(rp) = rnode.port(rport) else { continue };
                let (x, y) = (End { node, port }, End { node: rnode, port: rp });
                if !seen.insert(LinkKey::new(x.key(), y.key())) {
                    continue;
                }
                // Switch end first (as iblinkinfo lists them), then by GUID and port.
                let rank = |e: &End| (e.node.node_type != NodeType::Switch, e.node.guid, e.port.number);
                let (a, b) = if rank(&x) <= rank(&y) { (x, y) } else { (y, x) };
                links.push(Link { a, b });
            }
        }
        links.sort_by_key(|l| (l.a.node.node_type != NodeType::Switch, node_name(l.a.node), l.a.port.number));
        Index { by_guid, links }
    }

    /// The link at a node's port, if that port is cabled to a discovered node.
    pub fn peer_of(&self, node: Guid, port: u8) -> Option<End<'a>> {
        let n = self.by_guid.get(&node)?;
        let p = n.port(port)?;
        let (rguid, rport) = p.remote?;
        let rn = self.by_guid.get(&rguid)?;
        Some(End { node: rn, port: rn.port(rport)? })
    }
}
