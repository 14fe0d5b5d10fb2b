//! Constructed fabrics for the design rules' tests: nodes by name, cables between them, every
//! trained link 4X HDR (200 Gb/s) unless said otherwise.

use crate::fabric::discovery::model::{Fabric, LocalView, Node, Port};

use crate::mad::attributes::{Guid, NodeType, PortInfo, SmInfo, SmState, SpeedSet, WidthSet};
use crate::port::{PhysState, PortState, Speed, Width};

pub fn hdr() -> PortInfo {
    PortInfo {
        lid: 0,
        sm_lid: 1,
        lmc: 0,
        capability_mask: 0,
        state: PortState::Active,
        phys_state: PhysState::LinkUp,
        width_active: Width::X4,
        width_enabled: WidthSet(2),
        width_supported: WidthSet(2),
        speed_active: Speed::Hdr,
        speed_enabled: SpeedSet(0b0111_0111),
        speed_supported: SpeedSet(0b0111_0111),
    }
}

/// A fabric under construction; GUIDs are handed out in order (switches 0x1000.., CAs 0x10_0000..).
pub struct Build {
    pub fabric: Fabric,
    next: u64,
}

impl Default for Build {
    fn default() -> Self {
        Build::new()
    }
}

impl Build {
    pub fn new() -> Build {
        Build {
            fabric: Fabric {
                local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 1, sm_lid: 1, state: PortState::Active },
                nodes: Vec::new(),
                master: Some(SmInfo { lid: 1, guid: Guid(1), priority: 0, state: SmState::Master, activity: 1 }),
                others: Vec::new(),
                gaps: Vec::new(),
                counters_read: false,
            },
            next: 0x1000,
        }
    }

    fn node(&mut self, name: &str, node_type: NodeType, ports: u8) -> Guid {
        self.next += 0x10;
        let guid = Guid(self.next);
        let lid = self.fabric.nodes.len() as u16 + 1;
        let first = if node_type == NodeType::Switch { 0 } else { 1 };
        let port_list = (first..=ports)
            .map(|n| Port {
                number: n,
                guid: if node_type == NodeType::Switch { guid } else { Guid(guid.0 + n as u64) },
                lid,
                info: PortInfo { lid, state: PortState::Down, phys_state: PhysState::Polling, ..hdr() },
                remote: None,
                counters: None,
            })
            .collect();
        self.fabric.nodes.push(Node { guid, node_type, description: name.into(), num_ports: ports, ports: port_list });
        guid
    }

    pub fn switch(&mut self, name: &str) -> Guid {
        self.node(name, NodeType::Switch, 40)
    }

    pub fn ca(&mut self, name: &str) -> Guid {
        self.node(name, NodeType::Ca, 2)
    }

    /// The first name's node.
    pub fn guid(&self, name: &str) -> Guid {
        self.fabric.nodes.iter().find(|n| n.description == name).unwrap_or_else(|| panic!("no node {name}")).guid
    }

    /// Cables the nodes with GUIDs `a` and `b` at their first free ports (above 0).
    pub fn link(&mut self, a: Guid, b: Guid) -> (u8, u8) {
        let free = |f: &Fabric, g: Guid, skip: Option<u8>| {
            let n = f.nodes.iter().find(|n| n.guid == g).unwrap();
            n.ports.iter().find(|p| p.number > 0 && p.remote.is_none() && Some(p.number) != skip).unwrap().number
        };
        let pa = free(&self.fabric, a, None);
        let pb = free(&self.fabric, b, if a == b { Some(pa) } else { None });
        self.join((a, pa), (b, pb));
        (pa, pb)
    }

    /// Cables port `a.1` of node `a.0` to port `b.1` of node `b.0`, trained 4X HDR.
    fn join(&mut self, a: (Guid, u8), b: (Guid, u8)) {
        for ((x, px), (y, py)) in [(a, b), (b, a)] {
            let node = self.fabric.nodes.iter_mut().find(|n| n.guid == x).unwrap();
            let port = node.ports.iter_mut().find(|p| p.number == px).unwrap();
            port.info = PortInfo { lid: port.info.lid, ..hdr() };
            port.remote = Some((y, py));
        }
    }

    /// Cables two nodes named `a` and `b` (the first of each name).
    pub fn cable(&mut self, a: &str, b: &str) -> (u8, u8) {
        let (a, b) = (self.guid(a), self.guid(b));
        self.link(a, b)
    }
}

/// A two-tier fat tree: `spines` spines, `leaves` leaves each cabled `per` times to every
/// spine, `hosts` CAs per leaf named `n{leaf}-{host}`.
pub fn fat_tree(spines: usize, leaves: usize, per: usize, hosts: usize) -> Build {
    let mut b = Build::new();
    for s in 0..spines {
        b.switch(&format!("spine{s}"));
    }
    for l in 0..leaves {
        b.switch(&format!("leaf{l}"));
        for h in 0..hosts {
            let name = format!("n{l}-{h}");
            b.ca(&name);
            b.cable(&format!("leaf{l}"), &name);
        }
        for s in 0..spines {
            for _ in 0..per {
                b.cable(&format!("leaf{l}"), &format!("spine{s}"));
            }
        }
    }
    b
}

/// The fabric an ibnetdiscover file describes, every cable up at 4X HDR (as discovery finds a
/// healthy fabric): the design rules over real fabrics' cabling (tests/fixtures/wild-fabrics).
pub fn from_topology(t: &crate::fabric::design::topology::Topology) -> Build {
    let mut b = Build::new();
    let mut ids = std::collections::HashMap::new();
    for (id, n) in &t.nodes {
        let kind = if n.is_switch { NodeType::Switch } else { NodeType::Ca };
        ids.insert(id.as_str(), b.node(&n.key.description, kind, n.ports.max(1)));
    }
    for l in &t.links {
        b.join((ids[l.a.0.as_str()], l.a.1), (ids[l.b.0.as_str()], l.b.1));
    }
    b
}
