//! `fabric --soak DURATION`: the PerfMgt counters of every port read at both ends of a window;
//! the second read's counters are replaced by what rose during the window, so the counter rules
//! judge the window, not lifetime totals. A counter that went down (cleared, by an SM's
//! PerfMgr for instance) or sits at its maximum (PortCounters saturate: 16, 8 or 4 bits) is
//! said and left out (0), not judged. Pure: both reads come in.

use crate::fabric::discovery::model::Fabric;

use crate::mad::attributes::Counters;

/// What the window was, and what could not be judged in it.
#[derive(Debug, Clone, PartialEq)]
pub struct FabricWindow {
    pub seconds: f64,
    pub interrupted: bool,
    /// `node description port N: counter ...` for each counter said, not judged.
    pub not_judged: Vec<String>,
    /// PortSamplesControl Tick of the nodes that waited, read at the window's end.
    pub sample_ticks: std::collections::BTreeMap<crate::mad::attributes::Guid, crate::fabric::discovery::model::TickRead>,
}

type Field = (&'static str, u64, fn(&mut Counters) -> &mut u64);

/// The error counters and their maxima (IBTA vol. 1 16.1.3.5 PortCounters widths).
const FIELDS: [Field; 13] = [
    ("SymbolErrorCounter", 0xffff, |c| &mut c.symbol_error),
    ("LinkErrorRecoveryCounter", 0xff, |c| &mut c.link_error_recovery),
    ("LinkDownedCounter", 0xff, |c| &mut c.link_downed),
    ("PortRcvErrors", 0xffff, |c| &mut c.rcv_errors),
    ("PortRcvRemotePhysicalErrors", 0xffff, |c| &mut c.rcv_remote_physical_errors),
    ("PortRcvSwitchRelayErrors", 0xffff, |c| &mut c.rcv_switch_relay_errors),
    ("PortXmitDiscards", 0xffff, |c| &mut c.xmit_discards),
    ("PortXmitConstraintErrors", 0xff, |c| &mut c.xmit_constraint_errors),
    ("PortRcvConstraintErrors", 0xff, |c| &mut c.rcv_constraint_errors),
    ("LocalLinkIntegrityErrors", 0xf, |c| &mut c.local_link_integrity_errors),
    ("ExcessiveBufferOverrunErrors", 0xf, |c| &mut c.excessive_buffer_overrun_errors),
    ("VL15Dropped", 0xffff, |c| &mut c.vl15_dropped),
    // 32 bits in PortCounters (64 in PortCountersExtended, which is taken when answered).
    ("PortXmitWait", 0xffff_ffff, |c| &mut c.xmit_wait),
];

/// Leaves in `end` the counters' rise over the window.
pub fn window(start: &Fabric, end: &mut Fabric, seconds: f64, interrupted: bool) -> FabricWindow {
    let mut not_judged = Vec::new();
    for node in &mut end.nodes {
        let before_node = start.node(node.guid);
        for port in &mut node.ports {
            let Some(after) = port.counters.as_mut() else { continue };
            let before = before_node.and_then(|n| n.port(port.number)).and_then(|p| p.counters);
            let Some(mut before) = before else {
                // Not read at the start: nothing is known of the window.
                port.counters = None;
                continue;
            };
            for (name, max, field) in FIELDS {
                let (b, a) = (*field(&mut before), *field(after));
                // A fixed-width counter at its all-ones value has saturated (a 64-bit
                // PortXmitWait from PortCountersExtended passes 32 bits and is not).
                let said = if a == max {
                    Some(format!("{name} sits at its maximum ({a})"))
                } else if a < b {
                    Some(format!("{name} went down ({b} to {a}: cleared)"))
                } else {
                    None
                };
                *field(after) = if said.is_some() { 0 } else { a - b };
                if let Some(said) = said {
                    not_judged.push(format!("{} port {}: {said}", node.description, port.number));
                }
            }
        }
    }
    FabricWindow { seconds, interrupted, not_judged, sample_ticks: std::collections::BTreeMap::new() }
}

/// The error counters that rose from `start` to `now` (a read during the window, for its
/// progress line), as `leaf1 port 7 SymbolErrorCounter +12`; PortXmitWait, which rises with
/// any congestion, is not said, nor a counter that went down or saturated.
pub fn risen(start: &Fabric, now: &Fabric) -> Vec<String> {
    let mut now = now.clone();
    window(start, &mut now, 0.0, false);
    let mut out = Vec::new();
    for node in &now.nodes {
        for port in &node.ports {
            let Some(mut c) = port.counters else { continue };
            for (name, _, field) in FIELDS.iter().filter(|(name, _, _)| *name != "PortXmitWait") {
                let n = *field(&mut c);
                if n > 0 {
                    out.push(format!("{} port {} {name} +{n}", crate::sanitise::printable(&node.description), port.number));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::discovery::model::{LocalView, Node, Port};
    use crate::mad::attributes::{Guid, NodeType};

    fn fabric(symbol: u64, downed: u64) -> Fabric {
        let info = crate::mad::decode::port_info(&[0u8; 64], &[0u8; 64]);
        let counters = Counters { symbol_error: symbol, link_downed: downed, ..Counters::default() };
        let port = Port { number: 1, guid: Guid(2), lid: 1, info, remote: None, counters: Some(counters) };
        let node = Node { guid: Guid(1), node_type: NodeType::Ca, description: "n01 mlx5_0".into(), num_ports: 1, ports: vec![port] };
        Fabric {
            local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 1, sm_lid: 1, state: crate::port::PortState::Active },
            nodes: vec![node],
            master: None,
            others: vec![],
            gaps: vec![],
            counters_read: true,
        }
    }

    #[test]
    fn the_window_keeps_what_rose_and_says_what_was_cleared_or_saturated() {
        let mut end = fabric(110, 3);
        let w = window(&fabric(100, 3), &mut end, 10.0, false);
        let c = end.nodes[0].ports[0].counters.unwrap();
        assert_eq!((c.symbol_error, c.link_downed), (10, 0), "a lifetime total of 100 is not the window's");
        assert!(w.not_judged.is_empty());
        let mut end = fabric(5, 255);
        let w = window(&fabric(100, 3), &mut end, 10.0, false);
        let c = end.nodes[0].ports[0].counters.unwrap();
        assert_eq!((c.symbol_error, c.link_downed), (0, 0));
        assert_eq!(
            w.not_judged,
            vec![
                "n01 mlx5_0 port 1: SymbolErrorCounter went down (100 to 5: cleared)",
                "n01 mlx5_0 port 1: LinkDownedCounter sits at its maximum (255)"
            ]
        );
    }

    #[test]
    fn what_has_risen_so_far_names_the_port_and_counter() {
        assert_eq!(risen(&fabric(100, 3), &fabric(112, 3)), vec!["n01 mlx5_0 port 1 SymbolErrorCounter +12"]);
        assert!(risen(&fabric(100, 3), &fabric(100, 3)).is_empty());
        assert!(risen(&fabric(100, 3), &fabric(5, 3)).is_empty(), "cleared: not a rise");
    }
}
