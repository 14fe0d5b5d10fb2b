//! `fabric.pkey`: a host port and the switch port it is cabled to must hold the same
//! partitions. A switch port enforcing partitions drops packets whose P_Key it lacks, and a
//! host lacking the default partition (0x7FFF limited / 0xFFFF full) cannot reach the SM or
//! its peers. Pure: the P_KeyTables read by `discover` in, findings out.
//!
//! A P_Key's low 15 bits name the partition, its top bit the membership (1 full, 0 limited).
//! A switch port with an empty table is not enforcing (the SM did not configure it): not judged.

use crate::fabric::discovery::links::end_name;
use crate::fabric::discovery::model::{Fabric, Tables};
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::FindingId;
use crate::outcome::{Finding, Severity};
use std::collections::BTreeMap;

/// The default partition's number (P_Key 0x7FFF limited, 0xFFFF full).
pub const DEFAULT_PARTITION: u16 = 0x7fff;

const FULL: u16 = 0x8000;

/// Partition -> the P_Key as the port holds it (full membership wins when both are held).
fn partitions(keys: &[u16]) -> BTreeMap<u16, u16> {
    let mut out = BTreeMap::new();
    for &key in keys {
        let entry = out.entry(key & !FULL).or_insert(key);
        *entry |= key & FULL;
    }
    out
}

fn membership(key: u16) -> &'static str {
    if key & FULL != 0 {
        "full"
    } else {
        "limited"
    }
}

fn partition_name(partition: u16) -> String {
    if partition == DEFAULT_PARTITION {
        "the default partition".into()
    } else {
        format!("partition {partition:#06x}")
    }
}

pub fn judge(fabric: &Fabric, tables: &Tables) -> Vec<Finding> {
    let mut findings = Vec::new();
    for host in fabric.nodes.iter().filter(|n| n.node_type == NodeType::Ca) {
        for port in host.ports.iter().filter(|p| p.number != 0) {
            let Some((sw_guid, sw_port)) = port.remote else { continue };
            let Some(switch) = fabric.node(sw_guid).filter(|n| n.node_type == NodeType::Switch) else { continue };
            let (Some(host_keys), Some(switch_keys)) = (tables.pkeys.get(&(host.guid, port.number)), tables.pkeys.get(&(sw_guid, sw_port))) else {
                continue;
            };
            if switch_keys.is_empty() {
                continue;
            }
            let (h, s) = (partitions(host_keys), partitions(switch_keys));
            let host_name = end_name(host, port.number);
            let switch_name = end_name(switch, sw_port);
            let subject = format!("{switch_name} <-> {host_name}");
            let severity = |partition: u16| if partition == DEFAULT_PARTITION { Severity::Error } else { Severity::Warning };
            for (&partition, &key) in &s {
                match h.get(&partition) {
                    None => findings.push(finding(
                        severity(partition),
                        &subject,
                        format!(
                            "{host_name} lacks P_Key {key:#06x} ({}, {} member) that its switch port {switch_name} holds: it cannot talk in that partition",
                            partition_name(partition),
                            membership(key)
                        ),
                    )),
                    Some(&held) if partition == DEFAULT_PARTITION && held & FULL == 0 && key & FULL != 0 => findings.push(finding(
                        Severity::Warning,
                        &subject,
                        format!(
                            "{host_name} is a limited member ({held:#06x}) of the default partition where its switch port {switch_name} is a full member ({key:#06x}): \
                             it reaches only full members"
                        ),
                    )),
                    Some(_) => {}
                }
            }
            for (&partition, &key) in h.iter().filter(|(p, _)| !s.contains_key(p)) {
                findings.push(finding(
                    severity(partition),
                    &subject,
                    format!(
                        "{host_name} holds P_Key {key:#06x} ({}) that its switch port {switch_name} lacks: the switch drops its packets in that partition",
                        partition_name(partition)
                    ),
                ));
            }
        }
    }
    findings
}

fn finding(severity: Severity, subject: &str, message: String) -> Finding {
    Finding {
        id: FindingId::FabricPkey,
        severity,
        subject: subject.into(),
        message,
        remedy: "the SM writes both tables from its partition configuration (partitions.conf): have it sweep again (`kill -HUP $(pidof opensm)`), \
                 and if it persists check the configuration and that nothing else sets P_Keys; `smpquery pkeys LID PORT` shows each table"
            .into(),
        about: None,
    }
}

/// Ports whose table did not answer, said once (a port not read is not judged).
pub fn unread(fabric: &Fabric, tables: &Tables) -> Option<Finding> {
    let names: Vec<String> =
        tables.pkey_unread.iter().map(|(g, p): &(Guid, u8)| fabric.node(*g).map_or_else(|| format!("{g}[{p}]"), |n| end_name(n, *p))).collect();
    let first = names.first()?;
    Some(Finding {
        id: FindingId::FabricPkey,
        severity: Severity::Info,
        subject: first.clone().into(),
        message: format!(
            "{} port(s) did not answer P_KeyTable SMPs and were not judged: {}",
            names.len(),
            names.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        ),
        remedy: "rerun with a longer --timeout-ms; check that the nodes answer SMPs (`smpquery -D pkeys PATH`)".into(),
        about: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::discovery::model::{LocalView, Node, Port};
    use crate::port::PortState;

    fn fabric() -> Fabric {
        let info = crate::mad::decode::port_info(&[0u8; 64], &[0u8; 64]);
        let port = |number, remote| Port { number, guid: Guid(number.into()), lid: 1, info: info.clone(), remote: Some(remote), counters: None };
        let leaf =
            Node { guid: Guid(0x10), node_type: NodeType::Switch, description: "leaf1".into(), num_ports: 8, ports: vec![port(3, (Guid(0x100), 1))] };
        let host =
            Node { guid: Guid(0x100), node_type: NodeType::Ca, description: "hostA".into(), num_ports: 1, ports: vec![port(1, (Guid(0x10), 3))] };
        Fabric {
            local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 1, sm_lid: 1, state: PortState::Active },
            nodes: vec![leaf, host],
            master: None,
            others: vec![],
            gaps: vec![],
            counters_read: true,
        }
    }

    fn tables(host: &[u16], switch: &[u16]) -> Tables {
        let mut t = Tables { read: true, ..Tables::default() };
        t.pkeys.insert((Guid(0x100), 1), host.to_vec());
        t.pkeys.insert((Guid(0x10), 3), switch.to_vec());
        t
    }

    fn seen(host: &[u16], switch: &[u16]) -> Vec<(Severity, String, String)> {
        judge(&fabric(), &tables(host, switch)).into_iter().map(|f| (f.severity, f.subject.to_string(), f.message)).collect()
    }

    #[test]
    fn matching_tables_and_unenforced_switch_ports_pass() {
        assert!(seen(&[0xffff], &[0xffff]).is_empty());
        assert!(seen(&[0xffff, 0x8001], &[0x8001, 0xffff]).is_empty(), "order does not matter");
        assert!(seen(&[0xffff, 0x8001], &[]).is_empty(), "an empty switch table is not enforcing");
        assert!(seen(&[0x7fff], &[0x7fff]).is_empty());
    }

    #[test]
    fn a_host_lacking_the_default_partition_is_an_error() {
        let f = seen(&[0x8001], &[0xffff, 0x8001]);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].0, f[0].1.as_str()), (Severity::Error, "leaf1[3] <-> hostA[1]"));
        assert_eq!(
            f[0].2,
            "hostA[1] lacks P_Key 0xffff (the default partition, full member) that its switch port leaf1[3] holds: it cannot talk in that partition"
        );
    }

    #[test]
    fn the_other_way_round_and_other_partitions() {
        let f = seen(&[0xffff, 0x8002], &[0xffff]);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].0, Severity::Warning, "a partition other than the default may be deliberate");
        assert!(f[0].2.contains("holds P_Key 0x8002 (partition 0x0002) that its switch port leaf1[3] lacks"), "{}", f[0].2);
        let f = seen(&[0xffff], &[0x7fff]);
        assert!(f.is_empty(), "a limited switch port next to a full host: the host still reaches everyone: {f:#?}");
        let f = seen(&[0x7fff], &[0xffff]);
        assert_eq!(f.iter().map(|f| f.0).collect::<Vec<_>>(), vec![Severity::Warning], "{f:#?}");
        assert!(f[0].2.contains("limited member (0x7fff) of the default partition"), "{}", f[0].2);
    }

    #[test]
    fn unread_ports_are_said_once() {
        let mut t = tables(&[0xffff], &[0xffff]);
        assert!(unread(&fabric(), &t).is_none());
        t.pkey_unread.push((Guid(0x100), 1));
        let f = unread(&fabric(), &t).unwrap();
        assert_eq!((f.severity, f.subject.to_string().as_str()), (Severity::Info, "hostA[1]"));
    }
}
