//! `fabric.vl`: a service level mapped (SL2VL) to a data VL that the port's VL arbitration
//! tables give no weight: traffic on that SL is never scheduled out of the port, so it stalls
//! (IBTA vol. 1 7.6.9: an arbiter serves only VLs listed with a non-zero weight in the high- or
//! low-priority table). VL 15 is the management VL and an SL mapped to it is dropped on purpose.
//! Pure: each port's SL2VL map and its VLArbitration entries in, findings out.

use crate::fabric::discovery::links::end_name;
use crate::fabric::discovery::model::{Fabric, QosKind, Tables};
use crate::mad::attributes::Guid;
use crate::outcome::{Finding, FindingId, Severity};
use std::collections::{BTreeMap, BTreeSet};

/// One output port's VL set-up: which VL each SL 0..15 goes to (one map per input port on a
/// switch, one on a CA port), and its arbitration entries (VL, weight) from the high- and
/// low-priority tables together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortVl {
    pub sl2vl: Vec<[u8; 16]>,
    pub arbitration: Vec<(u8, u8)>,
    /// PortInfo OperationalVLs as a count (0: not said). A VL at or past it is not arbitrated
    /// at all; an SL mapped there is not judged here (an SM with QoS off, OpenSM's default,
    /// routes every path on SL 0, and ibsim's default maps SL 8..14 to VL 8..14 on 8-VL ports).
    pub oper_vls: u8,
}

/// The ports to judge from the tables `discover` read: each output port with an arbitration
/// table and more than one operational data VL (with VL0 alone there is nothing to arbitrate),
/// with every SL to VL map that ends at it.
pub fn ports(tables: &Tables) -> BTreeMap<(Guid, u8), PortVl> {
    let mut out = BTreeMap::new();
    for (&(guid, port), (oper_vls, arbitration)) in &tables.qos.vl_arb {
        if *oper_vls == 1 {
            continue;
        }
        let sl2vl: Vec<[u8; 16]> =
            tables.sl2vl.range((guid, 0, 0)..=(guid, u8::MAX, u8::MAX)).filter(|((_, _, o), _)| *o == port).map(|(_, m)| *m).collect();
        if !sl2vl.is_empty() {
            out.insert((guid, port), PortVl { sl2vl, arbitration: arbitration.clone(), oper_vls: *oper_vls });
        }
    }
    out
}

/// One warning per kind of multicast or QoS table that some node did not answer: those parts
/// are not judged, and that is said rather than passed (`fabric.mcast` for the MFTs,
/// `fabric.vl` for SL2VL and VLArb).
pub fn unanswered(fabric: &Fabric, tables: &Tables) -> Vec<Finding> {
    let mut by_kind: BTreeMap<QosKind, BTreeSet<String>> = BTreeMap::new();
    for &(kind, guid, port) in &tables.qos.unanswered {
        let name = fabric.node(guid).map_or_else(
            || if port == 0 { guid.to_string() } else { format!("{guid}[{port}]") },
            |n| if port == 0 { crate::fabric::discovery::links::node_name(n) } else { end_name(n, port) },
        );
        by_kind.entry(kind).or_default().insert(name);
    }
    let mut found: Vec<Finding> = tables
        .qos
        .cut_short
        .iter()
        .map(|why| Finding {
            id: FindingId::FabricVl,
            severity: Severity::Warning,
            subject: "fabric".into(),
            message: format!(
                "the multicast and QoS tables were read only in part ({why}): the ports and switches not reached are not judged, and \
                 credit loops are looked for on VL 0 only"
            ),
            remedy: "raise --deadline (or lower --timeout-ms) so every table is read".into(),
            about: None,
        })
        .collect();
    found.extend(by_kind.into_iter().map(|(kind, names)| {
        let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
        let more = if names.len() > 5 { format!(" and {} more", names.len() - 5) } else { String::new() };
        let (id, judged) = match kind {
            QosKind::MulticastForwarding => (FindingId::FabricMcast, "multicast trees through them are not judged"),
            _ => (FindingId::FabricVl, "their SL to VL mapping and VL arbitration are not judged"),
        };
        Finding {
            id,
            severity: Severity::Warning,
            subject: shown.join(", ").into(),
            message: format!("{} not answered by {}{more}: {judged}", kind.name(), shown.join(", ")),
            remedy: format!(
                "check the node answers the attribute (`smpquery -D {} PATH`, `ibroute -M` for an MFT); a node that does not implement it \
                     cannot be judged here",
                match kind {
                    QosKind::MulticastForwarding => "switchinfo",
                    QosKind::Sl2Vl => "sl2vl",
                    QosKind::VlArbitration => "vlarb",
                }
            ),
            about: None,
        }
    }));
    found
}

/// The management VL: never in the arbitration tables.
const VL15: u8 = 15;

/// One error per port with SLs on unweighted VLs.
pub fn judge(fabric: &Fabric, ports: &BTreeMap<(Guid, u8), PortVl>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (&(guid, port), vl) in ports {
        let weighted = |v: u8| vl.arbitration.iter().any(|&(entry, weight)| entry == v && weight > 0);
        let starved: BTreeSet<(usize, u8)> = vl
            .sl2vl
            .iter()
            .flat_map(|m| m.iter().copied().enumerate())
            .filter(|&(_, v)| v != VL15 && (vl.oper_vls == 0 || v < vl.oper_vls) && !weighted(v))
            .collect();
        if starved.is_empty() {
            continue;
        }
        let name = fabric.node(guid).map_or_else(|| format!("{guid}[{port}]"), |n| end_name(n, port));
        let said: Vec<String> = starved.iter().map(|(sl, v)| format!("SL {sl} -> VL {v}")).collect();
        findings.push(Finding {
            id: FindingId::FabricVl,
            severity: Severity::Error,
            subject: name.clone().into(),
            message: format!(
                "{name} maps {} to VLs its VL arbitration gives no weight: packets on those SLs are never sent from this port",
                said.join(", ")
            ),
            remedy: "give every data VL in use a weight in the SM's VL arbitration (OpenSM `qos_vlarb_high`/`qos_vlarb_low`, or the QoS \
                     policy file), or map the SL to a weighted VL (`qos_sl2vl`); then resweep"
                .into(),
            about: None,
        });
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::discovery::model::LocalView;
    use crate::port::PortState;

    fn empty() -> Fabric {
        Fabric {
            local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 10, sm_lid: 1, state: PortState::Active },
            nodes: vec![],
            master: None,
            others: vec![],
            gaps: vec![],
            counters_read: true,
        }
    }

    /// OpenSM's default: SL i -> VL i % 8 on an 8-VL port, every data VL weighted 64 in the
    /// low-priority table.
    fn default_port() -> PortVl {
        let mut sl2vl = [0u8; 16];
        for (sl, vl) in sl2vl.iter_mut().enumerate() {
            *vl = (sl % 8) as u8;
        }
        PortVl { sl2vl: vec![sl2vl], arbitration: (0..8).map(|v| (v, 64)).collect(), oper_vls: 0 }
    }

    #[test]
    fn every_used_vl_weighted_passes() {
        let ports = BTreeMap::from([((Guid(0x10), 3), default_port())]);
        assert!(judge(&empty(), &ports).is_empty());
    }

    #[test]
    fn an_sl_on_a_vl_without_weight_is_an_error() {
        let mut port = default_port();
        // VL 3 listed with weight 0 (a disabled entry), VL 5 not listed at all.
        port.arbitration.retain(|&(v, _)| v != 5);
        port.arbitration.iter_mut().filter(|e| e.0 == 3).for_each(|e| e.1 = 0);
        // SL 15 to VL 15 is a deliberate drop, not a finding.
        port.sl2vl[0][15] = VL15;
        // A second input port's map, the same: each SL said once.
        port.sl2vl.push(port.sl2vl[0]);
        let found = judge(&empty(), &BTreeMap::from([((Guid(0x10), 3), port)]));
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].id, found[0].severity), (FindingId::FabricVl, Severity::Error));
        assert_eq!(
            found[0].message,
            "0x0000000000000010[3] maps SL 3 -> VL 3, SL 5 -> VL 5, SL 11 -> VL 3, SL 13 -> VL 5 to VLs its VL arbitration gives no weight: \
             packets on those SLs are never sent from this port"
        );
    }

    #[test]
    fn ports_from_the_tables_and_what_did_not_answer() {
        let mut t = Tables { read: true, ..Tables::default() };
        let map: [u8; 16] = std::array::from_fn(|sl| (sl % 8) as u8);
        for inp in [1, 2] {
            t.sl2vl.insert((Guid(0x10), inp, 3), map);
        }
        t.sl2vl.insert((Guid(0x10), 1, 2), map);
        t.qos.vl_arb.insert((Guid(0x10), 3), (8, (1..8).map(|v| (v, 4)).collect()));
        // One operational VL: nothing to arbitrate, not judged.
        t.qos.vl_arb.insert((Guid(0x10), 2), (1, vec![]));
        let p = ports(&t);
        assert_eq!(p.len(), 1);
        assert_eq!(p[&(Guid(0x10), 3)].sl2vl.len(), 2, "the maps of both input ports that end at port 3");
        let found = judge(&empty(), &p);
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("maps SL 0 -> VL 0, SL 8 -> VL 0 to VLs"), "{}", found[0].message);
        // ibsim's default on an 8-VL port: SL 8..14 on VL 8..14, past the operational VLs.
        let ibsim: [u8; 16] = std::array::from_fn(|sl| if sl == 15 { 7 } else { sl as u8 });
        let arbitration = (0..8).map(|v| (v, 4)).collect();
        let p = BTreeMap::from([((Guid(0x10), 3), PortVl { sl2vl: vec![ibsim], arbitration, oper_vls: 8 })]);
        assert!(judge(&empty(), &p).is_empty(), "VLs 8..14 are not operational there: not judged");
        t.qos.unanswered =
            vec![(QosKind::VlArbitration, Guid(0x20), 1), (QosKind::Sl2Vl, Guid(0x20), 1), (QosKind::MulticastForwarding, Guid(0x30), 0)];
        let said = unanswered(&empty(), &t);
        let ids: Vec<(FindingId, Severity)> = said.iter().map(|f| (f.id, f.severity)).collect();
        assert_eq!(
            ids,
            vec![(FindingId::FabricMcast, Severity::Warning), (FindingId::FabricVl, Severity::Warning), (FindingId::FabricVl, Severity::Warning)]
        );
        assert_eq!(
            said[1].message,
            "SLtoVLMappingTable not answered by 0x0000000000000020[1]: their SL to VL mapping and VL arbitration are not judged"
        );
    }
}
