//! What `accept` compares across nodes: one node's value of each drift key, read off the same
//! [`NodeRead`] its `check` judges (the agent sends them with its check answer). Pure.
//!
//! A key is its kind's name and, where it is per device or per port, the device or port
//! (`firmware mlx5_0`, `pfc mlx5_0/1`, `fw_config mlx5_0 LINK_TYPE_P1`); a value is plain text
//! as the operator reads it (`28.39.1002`, `3`, `dscp`).

use crate::outcome::action::DriftKind;
use crate::probe::node::NodeRead;
use crate::probe::qos::PortQos;
use serde::{Deserialize, Serialize};

/// One key's value on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub key: String,
    pub value: String,
}

impl Fact {
    fn new(kind: DriftKind, scope: &str, value: impl Into<String>) -> Fact {
        let key = if scope.is_empty() { kind.as_str().to_string() } else { format!("{} {scope}", kind.as_str()) };
        Fact { key, value: value.into() }
    }

    /// The key's kind (`None`: a key this build does not know, from a newer agent).
    pub fn kind(&self) -> Option<DriftKind> {
        self.key.split(' ').next().and_then(DriftKind::parse)
    }
}

/// The node's facts, keys sorted. `gpu_driver` is the NVIDIA module's version, where the node
/// (or bundle) has `module/nvidia/version`.
pub fn gather(node: &NodeRead, gpu_driver: Option<String>) -> Vec<Fact> {
    let mut facts = Vec::new();
    if let Some(kernel) = &node.stack.ofed.kernel {
        facts.push(Fact::new(DriftKind::Kernel, "", kernel.clone()));
    }
    if node.stack.looked || node.stack.ofed.installed.is_some() {
        facts.push(Fact::new(DriftKind::DriverStack, "", driver_stack(node)));
    }
    if let Some(memlock) = node.host.as_ref().and_then(|h| h.memlock_soft) {
        let value = if memlock == u64::MAX { "unlimited".to_string() } else { format!("{} KiB", memlock / 1024) };
        facts.push(Fact::new(DriftKind::Memlock, "", value));
    }
    if let Some(v) = gpu_driver {
        facts.push(Fact::new(DriftKind::GpuDriver, "", v));
    }
    for d in &node.inventory.devices {
        facts.push(Fact::new(DriftKind::Firmware, &d.name, d.fw_ver.clone()));
        for (param, value) in d.fw_config.iter().flatten() {
            if let Some(current) = &value.current {
                facts.push(Fact::new(DriftKind::FwConfig, &format!("{} {param}", d.name), current.label().to_string()));
            }
        }
        for p in &d.ports {
            let scope = format!("{}/{}", d.name, p.port);
            let netdev_mtu = p.netdev_state.as_ref().and_then(|n| n.mtu);
            let mtu = match (p.active_mtu, netdev_mtu) {
                (Some(a), Some(n)) => Some(format!("{a} (netdev {n})")),
                (Some(a), None) => Some(a.to_string()),
                (None, Some(n)) => Some(format!("netdev {n}")),
                (None, None) => None,
            };
            if let Some(mtu) = mtu {
                facts.push(Fact::new(DriftKind::Mtu, &scope, mtu));
            }
            if let Some(rate) = p.rate_gbps {
                facts.push(Fact::new(DriftKind::LinkRate, &scope, format!("{} Gb/s", crate::units::rate(rate))));
            }
            if let Some(q) = &p.qos {
                qos_facts(&scope, q, &mut facts);
            }
        }
    }
    facts.sort_by(|a, b| a.key.cmp(&b.key));
    facts.dedup_by(|a, b| a.key == b.key);
    facts
}

/// `MLNX_OFED 23.10-1.1.9` / `inbox`, with mlx5_core's loaded version where it has one.
fn driver_stack(node: &NodeRead) -> String {
    let base = node.stack.ofed.installed.as_deref().map_or_else(|| "inbox".to_string(), |v| format!("OFED {v}"));
    let core = node.stack.ofed.modules.iter().find(|m| m.name == "mlx5_core").and_then(|m| m.loaded.as_ref()).and_then(|l| l.version.as_deref());
    match core {
        Some(v) => format!("{base}, mlx5_core {v}"),
        None => base,
    }
}

fn priorities(set: &[bool; 8]) -> String {
    let on: Vec<String> = set.iter().enumerate().filter(|(_, on)| **on).map(|(p, _)| p.to_string()).collect();
    if on.is_empty() {
        "none".into()
    } else {
        on.join(",")
    }
}

fn qos_facts(scope: &str, q: &PortQos, facts: &mut Vec<Fact>) {
    if let Some(trust) = q.trust {
        facts.push(Fact::new(DriftKind::Trust, scope, trust.to_string()));
    }
    if let Some(map) = &q.dscp2prio {
        // DSCP:priority for each entry the table says, compactly (64 entries).
        let cells: Vec<String> = map.iter().map(|p| p.map_or("-".to_string(), |p| p.get().to_string())).collect();
        facts.push(Fact::new(DriftKind::Dscp2prio, scope, cells.concat()));
    }
    if let Some(pfc) = &q.pfc {
        facts.push(Fact::new(DriftKind::Pfc, scope, priorities(pfc)));
    }
    if let (Some(p2tc), Some(tcs)) = (&q.prio2tc, &q.tcs) {
        let tcs: Vec<String> = tcs
            .iter()
            .map(|t| match t {
                Some(t) => format!("{}{}", t.tsa, t.bw.map(|b| format!(":{b}")).unwrap_or_default()),
                None => "-".into(),
            })
            .collect();
        let p2tc: Vec<String> = p2tc.iter().map(u8::to_string).collect();
        facts.push(Fact::new(DriftKind::Ets, scope, format!("prio_tc {} tc {}", p2tc.join(","), tcs.join(","))));
    }
    if let (Some(np), Some(rp)) = (&q.ecn_np, &q.ecn_rp) {
        facts.push(Fact::new(DriftKind::Ecn, scope, format!("np {} rp {}", priorities(np), priorities(rp))));
    }
}
