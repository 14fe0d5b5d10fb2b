//! `fabric.vl`: a service level mapped (SL2VL) to a data VL that the port's VL arbitration
//! tables give no weight: traffic on that SL is never scheduled out of the port, so it stalls
//! (IBTA vol. 1 7.6.9: an arbiter serves only VLs listed with a non-zero weight in the high- or
//! low-priority table). VL 15 is the management VL and an SL mapped to it is dropped on purpose.
//! Pure: each port's SL2VL map and its VLArbitration entries in, findings out.

use crate::fabric::discovery::links::end_name;
use crate::fabric::discovery::model::Fabric;
use crate::mad::attributes::Guid;
use crate::outcome::{Finding, FindingId, Severity};
use std::collections::BTreeMap;

/// One output port's VL set-up: which VL each SL 0..15 goes to, and its arbitration entries
/// (VL, weight) from the high- and low-priority tables together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortVl {
    pub sl2vl: [u8; 16],
    pub arbitration: Vec<(u8, u8)>,
}

/// The management VL: never in the arbitration tables.
const VL15: u8 = 15;

/// One error per port with SLs on unweighted VLs.
pub fn judge(fabric: &Fabric, ports: &BTreeMap<(Guid, u8), PortVl>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (&(guid, port), vl) in ports {
        let weighted = |v: u8| vl.arbitration.iter().any(|&(entry, weight)| entry == v && weight > 0);
        let starved: Vec<(usize, u8)> = vl.sl2vl.iter().copied().enumerate().filter(|&(_, v)| v != VL15 && !weighted(v)).collect();
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
        PortVl { sl2vl, arbitration: (0..8).map(|v| (v, 64)).collect() }
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
        port.sl2vl[15] = VL15;
        let found = judge(&empty(), &BTreeMap::from([((Guid(0x10), 3), port)]));
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].id, found[0].severity), (FindingId::FabricVl, Severity::Error));
        assert_eq!(
            found[0].message,
            "0x0000000000000010[3] maps SL 3 -> VL 3, SL 5 -> VL 5, SL 11 -> VL 3, SL 13 -> VL 5 to VLs its VL arbitration gives no weight: \
             packets on those SLs are never sent from this port"
        );
    }
}
