//! Subnet discovery through libibnetdisc (what `ibnetdiscover` does): direct-routed SMPs
//! for NodeInfo, NodeDescription, SwitchInfo and every port's PortInfo. The fabric the
//! library builds is copied out into plain data and freed before returning.

use super::ffi::netdisc as ffi;
use super::port::LocalPort;
use super::{c_chars, libraries, MadError};
use std::ffi::CString;
use std::os::raw::{c_char, c_int};

/// Bounds on discovery: every SMP times out and is retried at most this often.
#[derive(Debug, Clone, Copy)]
pub struct DiscoverConfig {
    pub timeout_ms: u32,
    pub retries: u32,
    /// SMPs in flight at once (libibnetdisc's default is 2).
    pub max_smps: u32,
    /// Ask Mellanox nodes for ExtendedPortInfo (FDR10).
    pub mellanox_ext_port_info: bool,
}

/// One node as discovered: raw attribute payloads, host-order numbers.
#[derive(Debug, Clone)]
pub struct RawNode {
    pub guid: u64,
    /// IBTA node type (1 CA, 2 switch, 3 router).
    pub node_type: u8,
    pub num_ports: u8,
    pub description: String,
    pub node_info: [u8; 64],
    /// SwitchInfo, for switches.
    pub switch_info: Option<[u8; 64]>,
    pub ports: Vec<RawPort>,
    /// The directed route discovery reached the node by: the out port at each hop, from the
    /// local port (empty: the local node). SMPs along it need no LID routes, so a switch whose
    /// forwarding tables are broken can still be asked for them.
    pub dr_path: Vec<u8>,
}

/// One port whose PortInfo was read.
#[derive(Debug, Clone)]
pub struct RawPort {
    pub number: u8,
    pub guid: u64,
    pub base_lid: u16,
    pub port_info: [u8; 64],
    /// Mellanox ExtendedPortInfo (zeros when not queried).
    pub ext_port_info: [u8; 64],
    /// The node GUID and port number at the other end of the cable.
    pub remote: Option<(u64, u8)>,
}

const IBND_CONFIG_MLX_EPI: u32 = 1;
const IB_NODE_SWITCH: c_int = 2;

/// Discovers the subnet reachable from `local`.
pub fn discover(local: &LocalPort, config: DiscoverConfig) -> Result<Vec<RawNode>, MadError> {
    let libs = libraries()?;
    let ca = CString::new(local.ca.as_str()).map_err(|_| MadError::NoSuchCa { name: local.ca.clone(), present: String::new() })?;
    let mut cfg = ffi::ibnd_config_t {
        max_smps: config.max_smps.max(1),
        timeout_ms: config.timeout_ms,
        retries: config.retries,
        flags: if config.mellanox_ext_port_info { IBND_CONFIG_MLX_EPI } else { 0 },
        ..Default::default()
    };
    // SAFETY: `ca` and `cfg` outlive the call, which reads them; a null `from` means "this
    // port". The returned fabric is owned by us and freed below with ibnd_destroy_fabric.
    let fabric = unsafe { libs.netdisc.ibnd_discover_fabric(ca.as_ptr() as *mut c_char, c_int::from(local.port), std::ptr::null_mut(), &mut cfg) };
    if fabric.is_null() {
        return Err(MadError::Discover { ca: local.ca.clone(), port: local.port, source: std::io::Error::last_os_error().into() });
    }
    let mut nodes = Vec::new();
    // SAFETY: `fabric` is non-null and live until destroyed below.
    let mut node = unsafe { (*fabric).nodes };
    while !node.is_null() {
        // SAFETY: `node` is a member of the fabric's NULL-terminated node list, live until
        // the fabric is destroyed; it is only read.
        let n = unsafe { &*node };
        nodes.push(copy_node(n));
        node = n.next;
    }
    // SAFETY: `fabric` came from ibnd_discover_fabric, is destroyed once, and nothing
    // borrowed from it outlives this point (everything was copied).
    unsafe { libs.netdisc.ibnd_destroy_fabric(fabric) };
    Ok(nodes)
}

fn copy_node(n: &ffi::ibnd_node_t) -> RawNode {
    let mut ports = Vec::new();
    let count = usize::try_from(n.numports).unwrap_or(0);
    if !n.ports.is_null() {
        for i in 0..=count {
            // SAFETY: libibnetdisc allocates `ports` with numports + 1 entries (index 0 is
            // switch port 0, null on CAs); any entry may be null.
            let p = unsafe { *n.ports.add(i) };
            if p.is_null() {
                continue;
            }
            // SAFETY: a non-null entry points to a port owned by the live fabric.
            let p = unsafe { &*p };
            let remote = if p.remoteport.is_null() {
                None
            } else {
                // SAFETY: `remoteport` points to another port of the same fabric, whose
                // `node` is that port's (non-null) owner.
                let (rp, rnode) = unsafe {
                    let rp = &*p.remoteport;
                    (rp, rp.node.as_ref())
                };
                rnode.map(|rn| (rn.guid, u8::try_from(rp.portnum).unwrap_or(0)))
            };
            ports.push(RawPort {
                number: u8::try_from(p.portnum).unwrap_or(0),
                guid: p.guid,
                base_lid: p.base_lid,
                port_info: p.info,
                ext_port_info: p.ext_info,
                remote,
            });
        }
    }
    RawNode {
        guid: n.guid,
        node_type: u8::try_from(n.type_).unwrap_or(0),
        num_ports: u8::try_from(n.numports).unwrap_or(0),
        description: c_chars(&n.nodedesc),
        node_info: n.info,
        switch_info: (n.type_ == IB_NODE_SWITCH).then_some(n.switchinfo),
        ports,
        dr_path: dr_hops(n.path_portid.drpath.cnt, &n.path_portid.drpath.p),
    }
}

/// The out ports of a directed route (`p[1..=cnt]`; `p[0]` is unused), bounded by the path's
/// 64-byte array whatever `cnt` claims.
fn dr_hops(cnt: c_int, p: &[u8; 64]) -> Vec<u8> {
    let cnt = usize::try_from(cnt).unwrap_or(0).min(p.len() - 1);
    p[1..=cnt].to_vec()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_directed_route_is_bounded_by_its_array() {
        let mut p = [0u8; 64];
        p[1] = 3;
        p[2] = 7;
        assert_eq!(super::dr_hops(2, &p), vec![3, 7]);
        assert_eq!(super::dr_hops(0, &p), Vec::<u8>::new());
        assert_eq!(super::dr_hops(-1, &p), Vec::<u8>::new());
        assert_eq!(super::dr_hops(1000, &p).len(), 63);
    }
}
