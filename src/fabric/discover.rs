//! The I/O adapter: asks the verbs crate's MAD layer for raw payloads and turns them into a
//! `Fabric`. Every query is bounded by the configured timeout and retry limit; a node that
//! does not answer becomes a `Gap`, never a hang.

use super::decode;
use super::model::{Counters, Fabric, Gap, Guid, LocalView, Node, NodeType, Port, SmInfo};
use crate::probe::decode::PortState;
use fabcheck_verbs::mad::{self, DiscoverConfig, MadError, MadPort, RawNode};
use std::collections::HashSet;

/// What to discover and how patiently.
#[derive(Debug, Clone)]
pub struct Probe {
    pub ca: Option<String>,
    pub port: Option<u8>,
    pub timeout_ms: u32,
    pub retries: u32,
    pub reset_counters: bool,
}

pub fn discover(probe: &Probe) -> Result<Fabric, MadError> {
    mad::available()?;
    let local = mad::find_local_port(probe.ca.as_deref(), probe.port)?;
    if PortState::from_raw(local.state) == PortState::Down {
        return Err(MadError::PortDown { ca: local.ca.clone(), port: local.port, phys_state: local.phys_state });
    }
    let raw =
        mad::discover(&local, DiscoverConfig { timeout_ms: probe.timeout_ms, retries: probe.retries, max_smps: 8, mellanox_ext_port_info: true })?;
    let mut fabric = Fabric {
        local: LocalView { ca: local.ca.clone(), port: local.port, lid: local.lid, sm_lid: local.sm_lid, state: PortState::from_raw(local.state) },
        nodes: raw.iter().map(convert).collect(),
        master: None,
        others: Vec::new(),
        gaps: Vec::new(),
        counters_read: false,
    };
    fabric.gaps = unanswered(&fabric);
    if local.sm_lid == 0 || local.lid == 0 {
        // No SM has configured the local port: nothing is LID-addressable.
        return Ok(fabric);
    }
    let port = MadPort::open(&local, probe.timeout_ms, probe.retries)?;
    fabric.master = port.sm_info(local.sm_lid).ok().map(|raw| decode::sm_info(local.sm_lid, &raw));
    if fabric.master.is_none() {
        return Ok(fabric);
    }
    fabric.others = other_sms(&fabric, &port);
    read_counters(&mut fabric, &port, probe.reset_counters);
    Ok(fabric)
}

fn convert(raw: &RawNode) -> Node {
    let node_type = NodeType::from_raw(raw.node_type);
    let port0_lid = raw.ports.iter().find(|p| p.number == 0).map(|p| p.base_lid);
    let ports = raw
        .ports
        .iter()
        .map(|p| {
            let info = decode::port_info(&p.port_info, &p.ext_port_info);
            let lid = match (node_type, port0_lid) {
                (NodeType::Switch, Some(lid)) => lid,
                _ => info.lid,
            };
            Port { number: p.number, guid: Guid(p.guid), lid, info, remote: p.remote.map(|(g, n)| (Guid(g), n)), counters: None }
        })
        .collect();
    Node { guid: Guid(raw.guid), node_type, description: raw.description.clone(), num_ports: raw.num_ports, ports }
}

/// Ports that are physically up but whose far end never answered discovery.
fn unanswered(fabric: &Fabric) -> Vec<Gap> {
    fabric
        .nodes
        .iter()
        .flat_map(|n| n.ports.iter().map(move |p| (n, p)))
        .filter(|(_, p)| p.number != 0 && p.info.link_up() && p.remote.is_none())
        .map(|(n, p)| Gap::Unanswered { node: n.guid, port: p.number })
        .collect()
}

/// SMInfo of every other port that runs an SM (PortInfo CapabilityMask IsSM): standbys,
/// and any second master. Ports without an SM are not asked (they would only time out).
fn other_sms(fabric: &Fabric, port: &MadPort) -> Vec<SmInfo> {
    let master_lid = fabric.master.as_ref().map_or(0, |m| m.lid);
    let mut asked = HashSet::from([0, master_lid]);
    let mut found = Vec::new();
    for node in &fabric.nodes {
        for p in node.ports.iter().filter(|p| (node.node_type == NodeType::Switch) == (p.number == 0)) {
            if p.info.capability_mask & decode::CAP_IS_SM == 0 || !asked.insert(p.info.lid) {
                continue;
            }
            if let Ok(raw) = port.sm_info(p.info.lid) {
                found.push(decode::sm_info(p.info.lid, &raw));
            }
        }
    }
    found
}

/// PortCounters (and PortCountersExtended) of every linked port, both ends of each cable.
/// A node whose PerfMgt does not answer is skipped after its first silence; after
/// `GIVE_UP` silent nodes in a row (LID routes not set up yet, say) the rest are not asked.
fn read_counters(fabric: &mut Fabric, port: &MadPort, reset: bool) {
    const GIVE_UP: usize = 4;
    fabric.counters_read = true;
    let mut gaps = Vec::new();
    let mut silent_in_a_row = 0;
    for node in &mut fabric.nodes {
        if silent_in_a_row >= GIVE_UP {
            gaps.push(Gap::NoCounters { node: node.guid });
            continue;
        }
        let mut ext_ok = true;
        for p in node.ports.iter_mut().filter(|p| p.number != 0 && p.remote.is_some()) {
            if p.lid == 0 {
                continue;
            }
            let Ok(pc) = port.port_counters(p.lid, p.number) else {
                gaps.push(Gap::NoCounters { node: node.guid });
                silent_in_a_row += 1;
                break;
            };
            silent_in_a_row = 0;
            let ext = if ext_ok { port.port_counters_ext(p.lid, p.number).ok() } else { None };
            ext_ok = ext.is_some();
            let counters: Counters = decode::counters(&pc, ext.as_deref());
            p.counters = Some(counters);
            if reset {
                if let Err(e) = port.reset_counters(p.lid, p.number) {
                    tracing::warn!("{e}");
                }
            }
        }
    }
    fabric.gaps.extend(gaps);
}
