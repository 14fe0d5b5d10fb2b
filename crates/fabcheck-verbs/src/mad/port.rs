//! The local umad port: which CA and port to send from, and LID-routed SMP and PerfMgt
//! queries with the port's timeout and retry limit.

use super::ffi::mad as ffi_mad;
use super::ffi::umad as ffi_umad;
use super::{c_chars, libraries, MadError};
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};

/// The port MADs leave from, as libibumad reports it (host byte order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPort {
    pub ca: String,
    pub port: u8,
    /// IBTA node type of the CA (1 CA, 2 switch, 3 router).
    pub node_type: u32,
    pub lid: u16,
    pub sm_lid: u16,
    /// IBTA PortState (1 DOWN .. 4 ACTIVE).
    pub state: u32,
    /// IBTA PortPhysicalState (2 POLLING .. 5 LINK_UP).
    pub phys_state: u32,
    pub port_guid: u64,
}

/// IBTA PortState ACTIVE (PortInfo:PortState; umad_port_t.state): the port carries traffic.
/// The verbs crate keeps the number it needs by name; fabcheck's `PortState` decodes them all.
const PORT_STATE_ACTIVE: u32 = 4;

const MAX_CAS: usize = 32;
const UMAD_CA_MAX_PORTS: usize = 10;

/// Finds the CA and port to use: the named ones, or the first CA with an ACTIVE port (port 0
/// on a switch, else its first ACTIVE port, else its first port).
pub fn find_local_port(ca: Option<&str>, port: Option<u8>) -> Result<LocalPort, MadError> {
    let libs = libraries()?;
    let mut names = [[0 as c_char; 20]; MAX_CAS];
    // SAFETY: `names` holds MAX_CAS arrays of UMAD_CA_NAME_LEN (20) chars, as the call requires.
    let n = unsafe { libs.umad.umad_get_cas_names(names.as_mut_ptr(), MAX_CAS as c_int) };
    if n <= 0 {
        return Err(MadError::NoUmadDevice);
    }
    let listed: Vec<String> = names[..(n as usize).min(MAX_CAS)].iter().map(|raw| c_chars(raw)).collect();
    // With no devices at all, libibumad still lists a default name ("mthca0") that then
    // cannot be opened: only names whose CA can be read count.
    let mut cas: Vec<(String, Vec<LocalPort>)> = listed.iter().filter_map(|name| Some((name.clone(), ca_ports(libs, name).ok()?))).collect();
    if cas.is_empty() {
        return Err(MadError::NoUmadDevice);
    }
    let names: Vec<String> = cas.iter().map(|(n, _)| n.clone()).collect();
    match ca {
        Some(name) if names.iter().any(|n| n == name) => cas.retain(|(n, _)| n == name),
        Some(name) => return Err(MadError::NoSuchCa { name: name.to_string(), present: names.join(", ") }),
        None => {}
    }
    let mut first = None;
    for (name, ports) in cas {
        if let Some(wanted) = port {
            return ports.iter().find(|p| p.port == wanted).cloned().ok_or_else(|| MadError::NoSuchPort {
                ca: name.clone(),
                port: wanted,
                present: ports.iter().map(|p| p.port.to_string()).collect::<Vec<_>>().join(", "),
            });
        }
        if let Some(active) = ports.iter().find(|p| p.state == PORT_STATE_ACTIVE) {
            return Ok(active.clone());
        }
        if first.is_none() {
            first = ports.into_iter().next();
        }
    }
    first.ok_or(MadError::NoUmadDevice)
}

fn ca_ports(libs: &super::Libraries, name: &str) -> Result<Vec<LocalPort>, MadError> {
    let cname = CString::new(name).map_err(|_| MadError::NoSuchCa { name: name.into(), present: String::new() })?;
    let mut ca = ffi_umad::umad_ca_t::default();
    // SAFETY: `cname` is NUL-terminated and outlives the call; `ca` is a zeroed umad_ca_t the
    // library fills (allocating its ports), released below with umad_release_ca.
    let rc = unsafe { libs.umad.umad_get_ca(cname.as_ptr(), &mut ca) };
    if rc < 0 {
        return Err(MadError::NoSuchCa { name: name.into(), present: String::new() });
    }
    let mut ports = Vec::new();
    for &p in ca.ports.iter().take(UMAD_CA_MAX_PORTS) {
        if p.is_null() {
            continue;
        }
        // SAFETY: a non-null entry of `ca.ports` points to a umad_port_t owned by `ca`, valid
        // until umad_release_ca; it is only read here.
        let p = unsafe { &*p };
        ports.push(LocalPort {
            ca: name.to_string(),
            port: u8::try_from(p.portnum).unwrap_or(u8::MAX),
            node_type: ca.node_type,
            lid: p.base_lid as u16,
            sm_lid: p.sm_lid as u16,
            state: p.state,
            phys_state: p.phys_state,
            port_guid: u64::from_be(p.port_guid),
        });
    }
    // SAFETY: `ca` was filled by umad_get_ca above and is released exactly once.
    unsafe { libs.umad.umad_release_ca(&mut ca) };
    Ok(ports)
}

/// An open libibmad port: SMP (LID-routed) and PerfMgt agents on one CA port.
pub struct MadPort {
    pub(super) raw: *mut ffi_mad::ibmad_port,
    local: LocalPort,
}

const IB_SMI_CLASS: c_int = 0x01;
const IB_SMI_DIRECT_CLASS: c_int = 0x81;
const IB_PERFORMANCE_CLASS: c_int = 0x04;
const IB_ATTR_SMINFO: u32 = 0x20;
const IB_ATTR_NODE_INFO: u32 = 0x11;
const IB_ATTR_PORT_INFO: u32 = 0x15;
const IB_GSI_PORT_COUNTERS: u32 = 0x12;
const IB_GSI_PORT_COUNTERS_EXT: u32 = 0x1d;
/// PerfMgt data area: bytes 64..256 of the MAD; libibmad copies it into a buffer this large.
const PMA_BUF: usize = 1024;

impl MadPort {
    /// Opens the agents on `local`, every query bounded by `timeout_ms` per try and `retries`.
    pub fn open(local: &LocalPort, timeout_ms: u32, retries: u32) -> Result<MadPort, MadError> {
        let libs = libraries()?;
        let cname = CString::new(local.ca.as_str()).map_err(|_| MadError::NoSuchCa { name: local.ca.clone(), present: String::new() })?;
        let mut classes = [IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_PERFORMANCE_CLASS];
        // SAFETY: `cname` and `classes` outlive the call, which only reads them; the library
        // copies what it keeps. A null return means failure with errno set.
        let raw = unsafe {
            libs.mad.mad_rpc_open_port(cname.as_ptr() as *mut c_char, c_int::from(local.port), classes.as_mut_ptr(), classes.len() as c_int)
        };
        if raw.is_null() {
            return Err(MadError::OpenPort { ca: local.ca.clone(), port: local.port, source: std::io::Error::last_os_error().into() });
        }
        // SAFETY: `raw` is the live port just opened; these only store the numbers in it.
        unsafe {
            libs.mad.mad_rpc_set_timeout(raw, timeout_ms.min(i32::MAX as u32) as c_int);
            libs.mad.mad_rpc_set_retries(raw, retries.min(i32::MAX as u32) as c_int);
        }
        Ok(MadPort { raw, local: local.clone() })
    }

    pub fn local(&self) -> &LocalPort {
        &self.local
    }

    /// PortInfo of `port` of the node at `lid`: the raw 64-byte attribute.
    pub fn port_info(&self, lid: u16, port: u8) -> Result<[u8; 64], MadError> {
        self.smp(lid, IB_ATTR_PORT_INFO, u32::from(port), "PortInfo query")
    }

    /// SMInfo of the SM (or SMA) at `lid`: the raw 64-byte attribute.
    pub fn sm_info(&self, lid: u16) -> Result<[u8; 64], MadError> {
        self.smp(lid, IB_ATTR_SMINFO, 0, "SMInfo query")
    }

    /// NodeInfo of the node one hop out of this port (directed route `0,PORT`): the peer of
    /// the cable, whatever its LID (it need not have one: an SM may not have swept yet).
    pub fn peer_node_info(&self) -> Result<[u8; 64], MadError> {
        self.smp_one_hop(IB_ATTR_NODE_INFO, 0, "NodeInfo query one hop out")
    }

    /// PortInfo of port `peer_port` of the node one hop out (directed route `0,PORT`).
    pub fn peer_port_info(&self, peer_port: u8) -> Result<[u8; 64], MadError> {
        self.smp_one_hop(IB_ATTR_PORT_INFO, u32::from(peer_port), "PortInfo query one hop out")
    }

    fn smp_one_hop(&self, attr: u32, modifier: u32, what: &'static str) -> Result<[u8; 64], MadError> {
        let libs = libraries()?;
        let mut buf = [0u8; 64];
        // A directed route: LID 0, path [0, out port] (libibmad's "0,PORT"), both ends of the
        // path's LID-routed part permissive.
        let mut portid = ffi_mad::ib_portid_t::default();
        portid.drpath.cnt = 1;
        portid.drpath.p[1] = self.local.port;
        portid.drpath.drslid = 0xffff;
        portid.drpath.drdlid = 0xffff;
        // SAFETY: `buf` is the IB_SMP_DATA_SIZE (64) bytes the query writes; `portid` is a
        // valid one-hop directed route (cnt 1, p[1] the out port, within the 64-byte path);
        // `self.raw` is open until Drop, with the directed-route SMI class registered.
        let rc = unsafe { libs.mad.smp_query_via(buf.as_mut_ptr() as *mut c_void, &mut portid, attr, modifier, 0, self.raw) };
        if rc.is_null() {
            return Err(MadError::NoAnswer { what, lid: 0 });
        }
        Ok(buf)
    }

    fn smp(&self, lid: u16, attr: u32, modifier: u32, what: &'static str) -> Result<[u8; 64], MadError> {
        let libs = libraries()?;
        let mut buf = [0u8; 64];
        let mut portid = ffi_mad::ib_portid_t { lid: c_int::from(lid), ..Default::default() };
        // SAFETY: `buf` is the IB_SMP_DATA_SIZE (64) bytes the query writes; `portid` is a valid
        // LID-routed destination; `self.raw` is open until Drop. Timeout 0 = the port's default.
        let rc = unsafe { libs.mad.smp_query_via(buf.as_mut_ptr() as *mut c_void, &mut portid, attr, modifier, 0, self.raw) };
        if rc.is_null() {
            return Err(MadError::NoAnswer { what, lid });
        }
        Ok(buf)
    }

    pub(super) fn pma(&self, lid: u16, port: u8, attr: u32, what: &'static str) -> Result<Vec<u8>, MadError> {
        let libs = libraries()?;
        let mut buf = vec![0u8; PMA_BUF];
        let mut portid = ffi_mad::ib_portid_t { lid: c_int::from(lid), ..Default::default() };
        // SAFETY: `buf` has the 1024 bytes libibmad's PerfMgt helpers may write (they copy the
        // 192-byte data area); `portid` is a LID-routed destination the call completes (QP1,
        // QKey); `self.raw` is open until Drop.
        let rc = unsafe { libs.mad.pma_query_via(buf.as_mut_ptr() as *mut c_void, &mut portid, c_int::from(port), 0, attr, self.raw) };
        if rc.is_null() {
            return Err(MadError::NoAnswer { what, lid });
        }
        buf.truncate(192);
        Ok(buf)
    }

    /// PortCounters (PerfMgt attribute 0x12) of `port` at `lid`: the 192-byte data area.
    pub fn port_counters(&self, lid: u16, port: u8) -> Result<Vec<u8>, MadError> {
        self.pma(lid, port, IB_GSI_PORT_COUNTERS, "PortCounters query")
    }

    /// PortCountersExtended (0x1D) of `port` at `lid`: the 192-byte data area.
    pub fn port_counters_ext(&self, lid: u16, port: u8) -> Result<Vec<u8>, MadError> {
        self.pma(lid, port, IB_GSI_PORT_COUNTERS_EXT, "PortCountersExtended query")
    }

    /// Clears every PortCounters counter of `port` at `lid` (only when the user asks).
    pub fn reset_counters(&self, lid: u16, port: u8) -> Result<(), MadError> {
        let libs = libraries()?;
        let mut buf = vec![0u8; PMA_BUF];
        let mut portid = ffi_mad::ib_portid_t { lid: c_int::from(lid), ..Default::default() };
        // SAFETY: as in `pma`; mask 0xffff selects every PortCounters counter.
        let rc = unsafe {
            libs.mad.performance_reset_via(buf.as_mut_ptr() as *mut c_void, &mut portid, c_int::from(port), 0xffff, 0, IB_GSI_PORT_COUNTERS, self.raw)
        };
        if rc.is_null() {
            return Err(MadError::NoAnswer { what: "PortCounters reset", lid });
        }
        Ok(())
    }
}

impl Drop for MadPort {
    fn drop(&mut self) {
        if let Ok(libs) = libraries() {
            // SAFETY: `self.raw` was opened by mad_rpc_open_port and is closed exactly once.
            unsafe { libs.mad.mad_rpc_close_port(self.raw) };
        }
    }
}
