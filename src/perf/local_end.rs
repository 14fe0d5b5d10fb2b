//! One end's port and addressing, worked out the same way for a pair's session and for a
//! collective member: which port (the one named, else the first ACTIVE), that it is ACTIVE,
//! RoCE's traffic class when none is asked (this end's own DSCP), the GID (the index asked, or
//! `gid::choose`'s; RoCE needs a routable one), and the endpoint its peer is told, before its
//! QPs and memory fill in theirs.

use super::{gid, PerfError};
use crate::model::{Conditions, Endpoint, Target};
use crate::port::{LinkLayer, NodeType, PortState};
use crate::probe::{self, Device, Gid, Port};

/// The port `target` names on its device (the first ACTIVE one where it names none).
pub(super) fn pick_port<'a>(inv: &'a probe::Inventory, target: &Target) -> Result<(&'a Device, &'a Port), PerfError> {
    let candidates: Vec<(&Device, &Port)> = inv.ports().filter(|(_, p)| target.port.is_none_or(|want| p.port == u32::from(want))).collect();
    if let Some(want) = target.port {
        if candidates.is_empty() {
            let device = inv.devices.first().map(|d| d.name.clone()).unwrap_or_default();
            let present = inv.devices.first().map(|d| d.ports.iter().map(|p| p.port).collect()).unwrap_or_default();
            return Err(probe::ProbeError::NoSuchPort { device, port: u32::from(want), present }.into());
        }
    }
    candidates
        .iter()
        .find(|(_, p)| p.state == PortState::Active)
        .or(candidates.first())
        .copied()
        .ok_or(PerfError::Probe(probe::ProbeError::NoDevices))
}

/// A port that is not ACTIVE carries nothing: the error says why, as `check` would. A device
/// that is not a CA (InfiniBand or RoCE) is refused first, naming what it is: fabcheck's tests
/// are RC queue pairs connected by their QP numbers and GIDs.
pub(super) fn must_be_active(device: &Device, port: &Port) -> Result<(), PerfError> {
    if let Some((message, remedy)) = not_rc_capable(device.node_type) {
        return Err(PerfError::PortNotReady { subject: format!("{}/{}", device.name, port.port), message, remedy: remedy.into() });
    }
    if port.state == PortState::Active {
        return Ok(());
    }
    let (message, remedy) = crate::diagnose::explain_port(device, port);
    Err(PerfError::PortNotReady { subject: format!("{}/{}", device.name, port.port), message, remedy })
}

/// Why a device of this node type cannot run fabcheck's tests, and what tests it instead; `None`
/// for a CA. An iWARP RNIC (irdma in iWARP mode, cxgb4, siw) connects its QPs only through
/// rdma_cm over TCP, by IP address, with no GID to choose (its one GID is its MAC); AWS EFA
/// (node type unspecified) has no RC QPs (SRD and UD); usNIC none either.
fn not_rc_capable(node_type: NodeType) -> Option<(String, &'static str)> {
    match node_type {
        NodeType::Ca | NodeType::Unknown(_) => None,
        NodeType::Rnic => Some((
            "an iWARP adapter (node type RNIC): its queue pairs connect only through rdma_cm over TCP, which fabcheck's \
             tests do not drive yet"
                .into(),
            "test it with perftest over rdma_cm (`ib_write_bw -R -d DEV` on one node, `ib_write_bw -R -d DEV HOST` on the other); \
             `fabcheck check` judges the node",
        )),
        other => Some((
            format!(
                "node type {other}: not a channel adapter (InfiniBand, RoCE) nor an iWARP one (an AWS EFA, a usNIC, a switch), so it has \
                 no RC queue pairs, which fabcheck's tests are"
            ),
            "test it with its own tools (for EFA, libfabric's `fi_pingpong -p efa` and the EFA installer's tests); `fabcheck check` judges the node",
        )),
    }
}

/// RoCE without `--tclass`: this end's own RoCE DSCP (traffic_class, rdma_cm), so the test's
/// bytes ride the class NCCL's do (contract 0.5).
pub(super) fn default_tclass(device: &Device, port: &Port, conditions: &mut Conditions) {
    if port.link_layer == LinkLayer::Ethernet && conditions.tclass.is_none() {
        let (tos, source) = crate::probe::qos::read::default_tclass_live(&device.name, port.port, port.netdev.as_deref());
        conditions.tclass = Some(tos);
        conditions.tclass_source = Some(source);
    }
}

/// The GID at `asked` (an error naming the indexes set when it is not), else `gid::choose`'s;
/// RoCE without a routable GID is an error naming the netdev to give an address.
pub(super) fn choose_gid<'a>(device: &Device, port: &'a Port, asked: Option<u8>) -> Result<Option<&'a Gid>, PerfError> {
    let subject = || format!("{}/{}", device.name, port.port);
    let chosen = match asked {
        Some(index) => Some(port.gids.iter().find(|g| g.index == u32::from(index)).ok_or_else(|| PerfError::NoGid {
            subject: subject(),
            why: format!("GID index {index} is not set (set: {})", port.gids.iter().map(|g| g.index.to_string()).collect::<Vec<_>>().join(",")),
        })?),
        None => gid::choose(&port.gids, port.link_layer),
    };
    if port.link_layer == LinkLayer::Ethernet && chosen.is_none() {
        return Err(PerfError::NoGid {
            subject: subject(),
            why: format!(
                "no routable RoCE GID (only link-local or none); assign an IP address to {}",
                port.netdev.as_deref().unwrap_or("the port's netdev")
            ),
        });
    }
    Ok(chosen)
}

/// What the peer is told of this end before its QPs and memory are known: no QPs, no region,
/// one outstanding read, no rdma_cm address, the device's PCIe figure, and a fresh PSN.
pub(super) fn endpoint(host: &str, device: &Device, port: &Port, chosen: Option<&Gid>, conditions: Conditions) -> Endpoint {
    Endpoint {
        host: host.to_string(),
        device: device.name.clone(),
        port: port.port as u8,
        lid: port.lid as u16,
        gid_index: chosen.map(|g| g.index as u8),
        gid: chosen.map(|g| g.gid),
        qpns: Vec::new(),
        psn: initial_psn(),
        addr: 0,
        rkey: 0,
        len: 0,
        mtu: port.active_mtu.unwrap_or(1024),
        link_layer: port.link_layer,
        rate_gbps: port.rate_gbps,
        ca_type: device.ca_type.clone(),
        max_rd_atomic: 1,
        cm_addr: None,
        pcie_gbps: device.pci.as_ref().and_then(|p| p.usable_gbps),
        trained_low: port.trained_low(),
        conditions,
        gpu: None,
    }
}

/// A PSN of 24 bits that differs run to run and process to process.
fn initial_psn() -> u32 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    (nanos ^ std::process::id().rotate_left(12)) & 0x00ff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a CA (and a node type this build does not know, as before node types were read)
    /// runs the tests; the others are refused naming what they are and what tests them.
    #[test]
    fn only_a_channel_adapter_runs_rc_tests() {
        assert!(not_rc_capable(NodeType::Ca).is_none());
        assert!(not_rc_capable(NodeType::Unknown(9)).is_none());
        let (message, remedy) = not_rc_capable(NodeType::Rnic).unwrap();
        assert!(message.contains("iWARP") && message.contains("rdma_cm"), "{message}");
        assert!(remedy.contains("ib_write_bw -R"), "{remedy}");
        let (message, remedy) = not_rc_capable(NodeType::Unspecified).unwrap();
        assert!(message.contains("node type unspecified") && message.contains("no RC queue pairs"), "{message}");
        assert!(remedy.contains("fi_pingpong"), "{remedy}");
    }
}
