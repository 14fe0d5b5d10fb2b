//! Drift: for each key, the value most nodes have is the reference and every node that differs
//! is named with its value and the majority's (`accept.drift`). Pure.
//!
//! A key some nodes do not have at all counts `absent` on them (a node missing a port the
//! others have is a drift of that port). A tie for the most nodes (4 and 4, or two nodes that
//! differ) has no reference: the drift is listed with no majority, every node in it named, and
//! each gets a warning saying the fleet is split (never an error: which side is wrong is the
//! operator's call).

use crate::outcome::action::DriftKind;
use crate::outcome::{Finding, FindingId, Severity, Subject};
use crate::probe::facts::Fact;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a node without the key is said to have.
pub const ABSENT: &str = "absent";

/// One node's facts, by the name the report gives it.
pub struct NodeFacts<'a> {
    pub host: &'a str,
    pub facts: &'a [Fact],
}

/// One key on which nodes differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub key: String,
    /// The reference value; `None` on a tie (then `nodes` holds every node).
    pub majority: Option<String>,
    /// How many nodes have the majority value (0 on a tie).
    #[serde(skip)]
    pub agree: usize,
    /// The nodes that differ, each with its value.
    pub nodes: Vec<HostValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostValue {
    pub host: String,
    pub value: String,
}

/// The drifts over `nodes` (keys sorted) and each node's findings about them (by host).
pub fn judge(nodes: &[NodeFacts<'_>]) -> (Vec<Drift>, BTreeMap<String, Vec<Finding>>) {
    let mut keys: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for n in nodes {
        for f in n.facts {
            keys.entry(f.key.as_str()).or_default().insert(n.host, f.value.as_str());
        }
    }
    let mut drifts = Vec::new();
    let mut findings: BTreeMap<String, Vec<Finding>> = BTreeMap::new();
    if nodes.len() < 2 {
        return (drifts, findings);
    }
    for (key, values) in &keys {
        let value_of = |host: &str| values.get(host).copied().unwrap_or(ABSENT);
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for n in nodes {
            *counts.entry(value_of(n.host)).or_default() += 1;
        }
        if counts.len() < 2 {
            continue;
        }
        let top = counts.values().copied().max().unwrap_or(0);
        let leaders: Vec<&str> = counts.iter().filter(|(_, c)| **c == top).map(|(v, _)| *v).collect();
        let kind = key.split(' ').next().and_then(DriftKind::parse);
        let majority = (leaders.len() == 1).then(|| leaders[0]);
        let mut drift = Drift { key: (*key).to_string(), majority: majority.map(str::to_string), agree: 0, nodes: Vec::new() };
        for n in nodes {
            let value = value_of(n.host);
            if Some(value) == majority {
                drift.agree += 1;
                continue;
            }
            drift.nodes.push(HostValue { host: n.host.to_string(), value: value.to_string() });
            let finding = match majority {
                Some(m) => {
                    let severity = if kind.is_some_and(DriftKind::is_error) { Severity::Error } else { Severity::Warning };
                    let message = format!("{key}: {value} here, {m} on {top} of {} nodes (the majority)", nodes.len());
                    Finding::new(FindingId::AcceptDrift, severity, Subject::Text((*key).to_string()), message, remedy(kind, m))
                }
                None => {
                    let split: Vec<String> = counts.iter().map(|(v, c)| format!("{v} on {c}")).collect();
                    let message = format!("{key}: {value} here; no majority, the nodes are split ({})", split.join(", "));
                    let remedy = "decide which value is right and set it on every node, then run accept again";
                    Finding::new(FindingId::AcceptDrift, Severity::Warning, Subject::Text((*key).to_string()), message, remedy)
                }
            };
            findings.entry(n.host.to_string()).or_default().push(finding);
        }
        drifts.push(drift);
    }
    (drifts, findings)
}

fn remedy(kind: Option<DriftKind>, majority: &str) -> String {
    let what = match kind {
        Some(DriftKind::Firmware) => "flash the fleet's firmware (`mlxfwmanager -u` or `flint`), then cold reboot",
        Some(DriftKind::DriverStack) => "install the fleet's driver stack release (MLNX_OFED/DOCA or inbox)",
        Some(DriftKind::Kernel) => "boot the fleet's kernel",
        Some(DriftKind::FwConfig) => "set the parameter with `mlxconfig -d PCI set NAME=VALUE`, then cold reboot",
        Some(DriftKind::Mtu) => "set the fleet's MTU (netdev MTU on RoCE, the partition's on InfiniBand)",
        Some(DriftKind::LinkRate) => "find why the link trained slower: cable, optic, switch port (`mlxlink`, `ethtool`)",
        Some(DriftKind::Trust | DriftKind::Dscp2prio | DriftKind::Pfc | DriftKind::Ets | DriftKind::Ecn) => {
            "apply the fleet's QoS set-up (`mlnx_qos` or `dcb`; ECN in /sys/class/net/IF/ecn)"
        }
        Some(DriftKind::Memlock) => "set the fleet's memlock limit (limits.d, LimitMEMLOCK)",
        Some(DriftKind::GpuDriver) => "install the fleet's NVIDIA driver release",
        None => "make the node like the others",
    };
    format!("{what}: the majority has {majority}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(key: &str, value: &str) -> Fact {
        Fact { key: key.into(), value: value.into() }
    }

    fn fleet(values: &[(&str, &[Fact])]) -> (Vec<Drift>, BTreeMap<String, Vec<Finding>>) {
        let nodes: Vec<NodeFacts<'_>> = values.iter().map(|(h, f)| NodeFacts { host: h, facts: f }).collect();
        judge(&nodes)
    }

    #[test]
    fn the_majority_is_the_reference_and_each_outlier_is_named() {
        let good = [fact("firmware mlx5_0", "28.39.1002"), fact("mtu mlx5_0/1", "4096")];
        let old = [fact("firmware mlx5_0", "28.36.1010"), fact("mtu mlx5_0/1", "4096")];
        let small = [fact("firmware mlx5_0", "28.39.1002"), fact("mtu mlx5_0/1", "1024")];
        let (drifts, findings) = fleet(&[("a", &good), ("b", &good), ("c", &old), ("d", &small), ("e", &good)]);
        assert_eq!(drifts.len(), 2);
        assert_eq!(drifts[0].key, "firmware mlx5_0");
        assert_eq!(drifts[0].majority.as_deref(), Some("28.39.1002"));
        assert_eq!(drifts[0].nodes, [HostValue { host: "c".into(), value: "28.36.1010".into() }]);
        assert_eq!(drifts[1].nodes, [HostValue { host: "d".into(), value: "1024".into() }]);
        assert_eq!(findings["c"][0].severity, Severity::Error, "firmware drift is an error");
        assert_eq!(findings["d"][0].severity, Severity::Warning, "MTU drift is a warning");
        assert!(findings["c"][0].message.contains("28.36.1010 here, 28.39.1002 on 4 of 5"));
        assert_eq!(crate::outcome::action::of(&findings["c"][0]), crate::outcome::action::Action::UpdateFirmware);
        assert!(!findings.contains_key("a"));
    }

    #[test]
    fn a_missing_key_is_absent_and_a_tie_has_no_majority() {
        let two = [fact("pfc mlx5_0/1", "3"), fact("pfc mlx5_1/1", "3")];
        let one = [fact("pfc mlx5_0/1", "3")];
        let (drifts, findings) = fleet(&[("a", &two), ("b", &two), ("c", &one)]);
        assert_eq!(drifts[0].nodes, [HostValue { host: "c".into(), value: ABSENT.into() }]);
        assert_eq!(findings["c"][0].severity, Severity::Error);

        let (drifts, findings) = fleet(&[("a", &[fact("kernel", "6.8")]), ("b", &[fact("kernel", "6.5")])]);
        assert_eq!(drifts[0].majority, None);
        assert_eq!(drifts[0].nodes.len(), 2, "a tie names every node");
        assert!(findings["a"][0].message.contains("no majority") && findings["b"][0].severity == Severity::Warning);
    }

    #[test]
    fn one_node_or_agreement_is_no_drift() {
        let f = [fact("firmware mlx5_0", "1")];
        assert!(fleet(&[("a", &f)]).0.is_empty());
        assert!(fleet(&[("a", &f), ("b", &f), ("c", &f)]).0.is_empty());
    }
}
