//! The I/O adapter: asks the verbs crate's MAD layer for raw payloads and turns them into a
//! `Fabric`. Every query is bounded by the configured timeout and retry limit; a node that
//! does not answer becomes a `Gap`, never a hang.

use crate::fabric::discovery::budget::Budget;
use crate::fabric::discovery::model::{BudgetSpent, Fabric, Gap, LocalView, Node, Port, Tables};
use crate::mad::attributes::{Counters, Guid, NodeType, SmInfo};
use crate::mad::decode;
use crate::port::PortState;
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
    /// Read the switches' forwarding tables and the ports' P_KeyTables (`fabric.route`,
    /// `fabric.pkey`), stopping at this instant or after [`MAX_TABLE_MADS`] SMPs; None: not read.
    pub tables_until: Option<std::time::Instant>,
    /// Ask each node with a port whose PortXmitWait is not zero for its PortSamplesControl
    /// Tick, the unit PortXmitWait counts in (`fabric.congestion` at the end of a soak window).
    pub sample_ticks: bool,
}

pub fn discover(probe: &Probe) -> Result<Fabric, MadError> {
    discover_with_tables(probe).map(|(fabric, _)| fabric)
}

/// Discovery, then (when `probe.tables_until` asks and an SM is master) the tables.
pub fn discover_with_tables(probe: &Probe) -> Result<(Fabric, Tables), MadError> {
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
        return Ok((fabric, Tables::default()));
    }
    let port = MadPort::open(&local, probe.timeout_ms, probe.retries)?;
    fabric.master = port.sm_info(local.sm_lid).ok().map(|raw| decode::sm_info(local.sm_lid, &raw));
    if fabric.master.is_none() {
        return Ok((fabric, Tables::default()));
    }
    fabric.others = other_sms(&fabric, &port);
    let perf = read_counters(&mut fabric, &port, probe);
    let mut tables = match probe.tables_until {
        Some(until) => read_tables(&raw, &port, &mut Budget { mads: 0, max: MAX_TABLE_MADS, until }),
        None => Tables::default(),
    };
    tables.phy = perf.phy;
    tables.sample_ticks = perf.ticks;
    Ok((fabric, tables))
}

/// The PortCounters of every port `fabric` read them for, read again (no discovery, no
/// extended counters): a read during a soak window, for its progress line. A port that does
/// not answer keeps no counters in the copy returned.
pub fn reread_counters(fabric: &Fabric, probe: &Probe) -> Result<Fabric, MadError> {
    let local = mad::find_local_port(probe.ca.as_deref(), probe.port)?;
    let port = MadPort::open(&local, probe.timeout_ms, probe.retries)?;
    let mut now = fabric.clone();
    for p in now.nodes.iter_mut().flat_map(|n| n.ports.iter_mut()).filter(|p| p.counters.is_some() && p.lid != 0) {
        p.counters = port.port_counters(p.lid, p.number).ok().map(|pc| decode::counters(&pc, None, false));
    }
    Ok(now)
}

/// At most this many SMPs for the tables: every block of 1,000 switches' tables for 10,000
/// LIDs (157 blocks each), plus P_KeyTables, with room to spare.
pub const MAX_TABLE_MADS: u64 = 250_000;

/// P_KeyTable blocks read per port, at most (32 P_Keys each: the default partition and the
/// first partitions an SM configures sit in block 0).
const MAX_PKEY_BLOCKS: u16 = 4;

/// Every switch's linear forwarding table (blocks 0..=LinearFDBTop/64, as `ibroute` reads
/// them) and the P_KeyTable of every linked CA port and of the switch port it is cabled to,
/// along directed routes (no LID route needed). A silent node is skipped and said.
fn read_tables(raw: &[RawNode], port: &MadPort, budget: &mut Budget) -> Tables {
    let mut tables = Tables { read: true, ..Tables::default() };
    let by_guid: std::collections::HashMap<u64, &RawNode> = raw.iter().map(|n| (n.guid, n)).collect();
    for node in raw.iter().filter(|n| n.switch_info.is_some()) {
        if tables.cut_short.is_some() {
            tables.lft_unread.push(Guid(node.guid));
            continue;
        }
        let top = decode::linear_fdb_top(&node.switch_info.unwrap_or([0; 64]));
        match read_lft(node, top, port, budget) {
            Ok(Some(lft)) => {
                tables.lfts.insert(Guid(node.guid), lft);
            }
            Ok(None) => tables.lft_unread.push(Guid(node.guid)),
            Err(why) => {
                tables.cut_short = Some(why);
                tables.lft_unread.push(Guid(node.guid));
            }
        }
    }
    // Each CA port through its switch (switch path + switch port), so every port of a
    // multi-port HCA is read, and the switch port it is cabled to.
    'ports: for ca in raw.iter().filter(|n| n.switch_info.is_none()) {
        for p in ca.ports.iter().filter(|p| p.number != 0) {
            let Some((sw_guid, sw_port)) = p.remote else { continue };
            let Some(switch) = by_guid.get(&sw_guid).filter(|s| s.switch_info.is_some()) else { continue };
            let mut ca_path = switch.dr_path.clone();
            ca_path.push(sw_port);
            let ca_cap = decode::partition_cap(&ca.node_info);
            let sw_cap = decode::partition_enforcement_cap(&switch.switch_info.unwrap_or([0; 64]));
            for (guid, number, path, table_port, cap) in
                [(ca.guid, p.number, ca_path, 0, ca_cap), (sw_guid, sw_port, switch.dr_path.clone(), sw_port, sw_cap)]
            {
                if tables.pkeys.contains_key(&(Guid(guid), number)) {
                    continue;
                }
                match read_pkeys(&path, table_port, cap, port, budget) {
                    Ok(Some(keys)) => {
                        tables.pkeys.insert((Guid(guid), number), keys);
                    }
                    Ok(None) => tables.pkey_unread.push((Guid(guid), number)),
                    Err(why) => {
                        tables.cut_short.get_or_insert(why);
                        break 'ports;
                    }
                }
            }
        }
    }
    // The multicast and QoS tables, with what the budget leaves.
    if tables.cut_short.is_none() {
        let (mut qos, sl2vl, why) = super::qos::read(raw, port, budget);
        qos.cut_short = why;
        tables.qos = qos;
        tables.sl2vl = sl2vl;
    }
    tables.mads = budget.mads;
    tables
}

/// One switch's table; Ok(None) when the switch stopped answering, Err when the budget ran out.
fn read_lft(node: &RawNode, top: u16, port: &MadPort, budget: &mut Budget) -> Result<Option<crate::fabric::discovery::model::Lft>, BudgetSpent> {
    let Some(path) = mad::DrPath::new(&node.dr_path) else { return Ok(None) };
    let mut ports = Vec::with_capacity(usize::from(top) + 1);
    for block in 0..=top / 64 {
        budget.take()?;
        match port.table_block(&path, mad::SmpTable::LinearForwarding { block }) {
            Ok(raw) => ports.extend_from_slice(&raw),
            Err(_) => return Ok(None),
        }
    }
    ports.truncate(usize::from(top) + 1);
    Ok(Some(crate::fabric::discovery::model::Lft { ports }))
}

/// One port's P_Keys (non-zero entries of the first blocks); Ok(None) when it did not answer.
fn read_pkeys(path: &[u8], table_port: u8, cap: u16, port: &MadPort, budget: &mut Budget) -> Result<Option<Vec<u16>>, BudgetSpent> {
    let Some(path) = mad::DrPath::new(path) else { return Ok(None) };
    let blocks = cap.div_ceil(32).clamp(1, MAX_PKEY_BLOCKS);
    let mut keys = Vec::new();
    for block in 0..blocks {
        budget.take()?;
        match port.table_block(&path, mad::SmpTable::PKey { port: table_port, block }) {
            Ok(raw) => {
                let found = decode::pkey_block(&raw);
                let full = found.len() == 32;
                keys.extend(found);
                // SMs fill the table from index 0: a block with a free slot is the last in use.
                if !full {
                    break;
                }
            }
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(keys))
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

/// What the PerfMgt agents said beyond each port's PortCounters.
struct Perf {
    /// PortExtendedSpeedsCounters of the FDR-and-faster ports that answered.
    phy: std::collections::BTreeMap<(Guid, u8), crate::mad::attributes::ExtSpeedsCounters>,
    /// PortSamplesControl Tick of the nodes with a waiting port (`probe.sample_ticks`).
    ticks: std::collections::BTreeMap<Guid, crate::fabric::discovery::model::TickRead>,
}

/// PortCounters (and PortCountersExtended) of every linked port, both ends of each cable.
/// A node whose PerfMgt does not answer is skipped after its first silence; after
/// `GIVE_UP` silent nodes in a row (LID routes not set up yet, say) the rest are not asked.
/// Also the PortExtendedSpeedsCounters of FDR-and-faster ports (a node that does not answer
/// them, as the simulator does not, is not asked again), and with `probe.sample_ticks` the
/// Tick of each node with a port that waited (asked once per node; after `GIVE_UP` nodes in a
/// row without an answer, no more are asked).
fn read_counters(fabric: &mut Fabric, port: &MadPort, probe: &Probe) -> Perf {
    const GIVE_UP: usize = 4;
    fabric.counters_read = true;
    let mut gaps = Vec::new();
    let mut perf = Perf { phy: std::collections::BTreeMap::new(), ticks: std::collections::BTreeMap::new() };
    let mut silent_in_a_row = 0;
    let mut tickless_in_a_row = 0;
    for node in &mut fabric.nodes {
        if silent_in_a_row >= GIVE_UP {
            gaps.push(Gap::NoCounters { node: node.guid });
            continue;
        }
        let mut ext_ok = true;
        let mut agent = crate::mad::agent::Agent::default();
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
            let additional = ext.is_some() && agent.additional_ext_counters(port, p.lid);
            let counters: Counters = decode::counters(&pc, ext.as_deref(), additional);
            p.counters = Some(counters);
            if let Some(c) = agent.ext_speeds_counters(port, p.lid, p.number, p.info.speed_active) {
                perf.phy.insert((node.guid, p.number), c);
            }
            if probe.reset_counters {
                if let Err(e) = port.reset_counters(p.lid, p.number) {
                    tracing::warn!("{e}");
                }
            }
        }
        if !probe.sample_ticks || tickless_in_a_row >= GIVE_UP {
            continue;
        }
        // One waiting port asks for the node: its PerfMgt agent's Tick is the node's. Not a
        // port whose LID an SM answers behind (see `TickRead::SmBehind`).
        use crate::fabric::discovery::model::TickRead;
        let sm_behind = |lid: u16| node.ports.iter().any(|q| q.lid == lid && q.info.capability_mask & decode::CAP_IS_SM != 0);
        let mut waiting = node.ports.iter().filter(|p| p.lid != 0 && p.counters.is_some_and(|c| c.xmit_wait > 0)).peekable();
        if waiting.peek().is_none() {
            continue;
        }
        let read = match waiting.find(|p| !sm_behind(p.lid)) {
            None => TickRead::SmBehind,
            Some(p) => match port.port_samples_control(p.lid, p.number).ok().as_deref().and_then(decode::samples_tick) {
                Some(tick) => {
                    tickless_in_a_row = 0;
                    TickRead::Tick(tick)
                }
                None => {
                    tickless_in_a_row += 1;
                    TickRead::NoAnswer
                }
            },
        };
        perf.ticks.insert(node.guid, read);
    }
    fabric.gaps.extend(gaps);
    perf
}
