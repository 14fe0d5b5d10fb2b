//! The I/O adapter for the multicast and QoS tables (after the forwarding and partition
//! tables, within the same SMP budget and time): every switch's MulticastForwardingTable
//! (blocks up to MulticastFDBTop, as infiniband-diags' ibroute.c reads them), the
//! SLtoVLMappingTable of every (in, out) pair of a switch's linked ports and of every linked
//! CA port, and the VLArbitrationTable of every linked output port (the blocks PortInfo's
//! VLArbHighCap/LowCap size; smpquery.c's `sl2vl` and `vlarb`). Directed routes, as for the
//! other tables. A table that does not answer is kept as unanswered, never as empty.

use super::budget::Budget;
use crate::fabric::discovery::model::{BudgetSpent, QosKind, QosTables, Sl2Vl};
use crate::mad::attributes::Guid;
use crate::mad::tables as t;
use fabcheck_verbs::mad::{DrPath, MadPort, QosTable, RawNode};
use std::collections::{BTreeSet, HashMap};

/// A cabled port whose PortInfo PortState (bits 260..263, as `decode::port_info`) is ACTIVE.
fn linked(p: &fabcheck_verbs::mad::RawPort) -> bool {
    p.number != 0 && p.remote.is_some() && crate::mad::decode::be_bits(&p.port_info, 260, 4) == 4
}

/// Reads the tables; returns them, the switches' and CA ports' SL to VL maps, and why
/// reading stopped early, if it did.
pub(super) fn read(raw: &[RawNode], port: &MadPort, budget: &mut Budget) -> (QosTables, Sl2Vl, Option<BudgetSpent>) {
    let mut qos = QosTables::default();
    let mut sl2vl = Sl2Vl::new();
    let why = read_all(raw, port, budget, &mut qos, &mut sl2vl).err();
    (qos, sl2vl, why)
}

fn read_all(raw: &[RawNode], port: &MadPort, budget: &mut Budget, qos: &mut QosTables, sl2vl: &mut Sl2Vl) -> Result<(), BudgetSpent> {
    let by_guid: HashMap<u64, &RawNode> = raw.iter().map(|n| (n.guid, n)).collect();
    for node in raw.iter().filter(|n| n.switch_info.is_some()) {
        let Some(path) = DrPath::new(&node.dr_path) else { continue };
        let guid = Guid(node.guid);
        match read_mft(node, &path, port, budget)? {
            Some(entries) => {
                qos.mft_read.insert(guid);
                qos.mfts.extend(entries.into_iter().map(|(mlid, ports)| ((guid, mlid), ports)));
            }
            None => qos.unanswered.push((QosKind::MulticastForwarding, guid, 0)),
        }
        let ports: Vec<&fabcheck_verbs::mad::RawPort> = node.ports.iter().filter(|p| linked(p)).collect();
        'pairs: for inp in &ports {
            for out in ports.iter().filter(|o| o.number != inp.number) {
                budget.take()?;
                match port.qos_block(&path, QosTable::Sl2Vl { in_port: inp.number, out_port: out.number }) {
                    Ok(block) => {
                        sl2vl.insert((guid, inp.number, out.number), t::sl2vl(&block));
                    }
                    Err(_) => {
                        qos.unanswered.push((QosKind::Sl2Vl, guid, inp.number));
                        break 'pairs;
                    }
                }
            }
        }
        for out in &ports {
            read_vlarb(&path, out.number, &out.port_info, (guid, out.number), port, budget, qos)?;
        }
    }
    // Each linked CA port through its switch (the switch's path and port).
    for ca in raw.iter().filter(|n| n.switch_info.is_none()) {
        for p in ca.ports.iter().filter(|p| linked(p)) {
            let Some((sw_guid, sw_port)) = p.remote else { continue };
            let Some(switch) = by_guid.get(&sw_guid).filter(|s| s.switch_info.is_some()) else { continue };
            let mut hops = switch.dr_path.clone();
            hops.push(sw_port);
            let Some(path) = DrPath::new(&hops) else { continue };
            let guid = Guid(ca.guid);
            budget.take()?;
            match port.qos_block(&path, QosTable::Sl2Vl { in_port: 0, out_port: 0 }) {
                Ok(block) => {
                    sl2vl.insert((guid, 0, p.number), t::sl2vl(&block));
                }
                Err(_) => qos.unanswered.push((QosKind::Sl2Vl, guid, p.number)),
            }
            read_vlarb(&path, 0, &p.port_info, (guid, p.number), port, budget, qos)?;
        }
    }
    Ok(())
}

/// A switch's MFT entries: each MLID and the ports it lists.
type MftEntries = Vec<(u16, BTreeSet<u8>)>;

/// One switch's MFT entries that list a port; Ok(None) when the switch did not answer.
fn read_mft(node: &RawNode, path: &DrPath, port: &MadPort, budget: &mut Budget) -> Result<Option<MftEntries>, BudgetSpent> {
    let Some(last) = t::last_mlid(&node.switch_info.unwrap_or([0; 64])) else { return Ok(Some(Vec::new())) };
    let positions = node.num_ports / t::PORTS_PER_MASK + 1;
    let mut entries: std::collections::BTreeMap<u16, BTreeSet<u8>> = std::collections::BTreeMap::new();
    for block in 0..=(last - t::MIN_MCAST_LID) / t::MLIDS_IN_BLOCK {
        for position in 0..positions {
            budget.take()?;
            let Ok(raw) = port.qos_block(path, QosTable::MulticastForwarding { block, position }) else { return Ok(None) };
            for (i, mask) in t::mft_masks(&raw).into_iter().enumerate().filter(|(_, m)| *m != 0) {
                let mlid = t::MIN_MCAST_LID + block * t::MLIDS_IN_BLOCK + i as u16;
                if mlid <= last {
                    entries.entry(mlid).or_default().extend(t::mask_ports(mask, position));
                }
            }
        }
    }
    Ok(Some(entries.into_iter().collect()))
}

/// One output port's VL arbitration (the blocks its caps size) and operational VLs.
fn read_vlarb(
    path: &DrPath,
    table_port: u8,
    port_info: &[u8; 64],
    key: (Guid, u8),
    port: &MadPort,
    budget: &mut Budget,
    qos: &mut QosTables,
) -> Result<(), BudgetSpent> {
    let (high, low) = t::vl_arb_caps(port_info);
    let mut entries = Vec::new();
    // Blocks 1, 2: low-priority entries 0..31, 32..63; 3, 4: high-priority.
    for (block, cap) in [(1u8, low), (2, low.saturating_sub(32)), (3, high), (4, high.saturating_sub(32))] {
        if cap == 0 {
            continue;
        }
        budget.take()?;
        match port.qos_block(path, QosTable::VlArbitration { block, port: table_port }) {
            Ok(raw) => entries.extend(t::vlarb_entries(&raw, usize::from(cap))),
            Err(_) => {
                qos.unanswered.push((QosKind::VlArbitration, key.0, key.1));
                return Ok(());
            }
        }
    }
    if high > 0 || low > 0 {
        qos.vl_arb.insert(key, (t::operational_vls(port_info), entries));
    }
    Ok(())
}
