//! Switch and port tables over directed-route SMPs: the LinearForwardingTable (ibroute's
//! read), the P_KeyTable, and their Set (for the simulator tier, which must break a table the
//! SM wrote; fabcheck itself never sets one). Directed routes, not LIDs: a switch whose
//! forwarding is broken is still reachable along the path discovery took. Every query is
//! bounded by the port's timeout and retry limit; the caller counts them.

use super::ffi::mad as ffi_mad;
use super::port::MadPort;
use super::{libraries, MadError};
use std::os::raw::c_void;

/// A directed route from the local port: the out port at each hop (at most 63).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DrPath(Vec<u8>);

impl DrPath {
    /// The route `hops` (as `RawNode::dr_path`); None when longer than an SMP can carry.
    pub fn new(hops: &[u8]) -> Option<DrPath> {
        (hops.len() < 64).then(|| DrPath(hops.to_vec()))
    }

    pub fn hops(&self) -> &[u8] {
        &self.0
    }

    fn portid(&self) -> ffi_mad::ib_portid_t {
        let mut portid = ffi_mad::ib_portid_t::default();
        portid.drpath.cnt = self.0.len() as i32;
        portid.drpath.p[1..=self.0.len()].copy_from_slice(&self.0);
        // Both ends of the (empty) LID-routed part are permissive: a pure directed route.
        portid.drpath.drslid = 0xffff;
        portid.drpath.drdlid = 0xffff;
        portid
    }
}

/// The SMP tables fabcheck reads, each with its attribute and how the modifier addresses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmpTable {
    /// LinearForwardingTable (0x0019): block `n` holds the out ports of LIDs 64n..64n+63.
    LinearForwarding { block: u16 },
    /// P_KeyTable (0x0016): block `n` holds P_Keys 32n..32n+31 (16 bits each). `port` is the
    /// switch port for a switch's external ports (modifier bits 16..31), 0 on a CA.
    PKey { port: u8, block: u16 },
}

const IB_ATTR_PKEY_TBL: u32 = 0x16;
const IB_ATTR_LINEARFORWTBL: u32 = 0x19;

impl SmpTable {
    fn attribute(self) -> (u32, u32, &'static str) {
        match self {
            SmpTable::LinearForwarding { block } => (IB_ATTR_LINEARFORWTBL, u32::from(block), "LinearForwardingTable query"),
            SmpTable::PKey { port, block } => (IB_ATTR_PKEY_TBL, (u32::from(port) << 16) | u32::from(block), "P_KeyTable query"),
        }
    }
}

/// PerfMgt PortExtendedSpeedsCounters (0x1F): FEC and per-lane symbol errors on FDR and up.
const IB_GSI_PORT_EXT_SPEEDS_COUNTERS: u32 = 0x1f;
const IB_PMA_CLASS_PORT_INFO: u32 = 0x01;
/// PerfMgt PortSamplesControl (0x10): mandatory for every PerfMgt agent; its Tick is the unit
/// PortXmitWait counts in.
const IB_GSI_PORT_SAMPLES_CONTROL: u32 = 0x10;

impl MadPort {
    /// One 64-byte block of `table` at the node `path` leads to.
    pub fn table_block(&self, path: &DrPath, table: SmpTable) -> Result<[u8; 64], MadError> {
        let (attr, modifier, what) = table.attribute();
        self.dr_get(path, attr, modifier, what)
    }

    /// Writes one block of `table` at the node `path` leads to, and returns what the node
    /// answered (its table after the Set). For tests that must break what an SM set up.
    pub fn set_table_block(&self, path: &DrPath, table: SmpTable, block: &[u8; 64]) -> Result<[u8; 64], MadError> {
        let (attr, modifier, what) = table.attribute();
        self.dr_set(path, attr, modifier, what, block)
    }

    /// A directed-route SubnGet of `attr` with `modifier`: the 64-byte attribute.
    pub(super) fn dr_get(&self, path: &DrPath, attr: u32, modifier: u32, what: &'static str) -> Result<[u8; 64], MadError> {
        let libs = libraries()?;
        let mut buf = [0u8; 64];
        let mut portid = path.portid();
        // SAFETY: `buf` is the IB_SMP_DATA_SIZE (64) bytes the query writes; `portid` is a
        // directed route of at most 63 hops (DrPath::new), within the path's 64-byte array;
        // `self.raw` is open until Drop, with the directed-route SMI class registered.
        let rc = unsafe { libs.mad.smp_query_via(buf.as_mut_ptr() as *mut c_void, &mut portid, attr, modifier, 0, self.raw) };
        if rc.is_null() {
            return Err(MadError::NoAnswer { what, lid: 0 });
        }
        Ok(buf)
    }

    /// A directed-route SubnSet of `attr` with `modifier`: what the node answered.
    pub(super) fn dr_set(&self, path: &DrPath, attr: u32, modifier: u32, what: &'static str, block: &[u8; 64]) -> Result<[u8; 64], MadError> {
        let libs = libraries()?;
        let mut buf = *block;
        let mut portid = path.portid();
        // SAFETY: as in `dr_get`: `buf` is the 64 bytes sent and overwritten with the
        // answer, `portid` a bounded directed route, `self.raw` open until Drop.
        let rc = unsafe { libs.mad.smp_set_via(buf.as_mut_ptr() as *mut c_void, &mut portid, attr, modifier, 0, self.raw) };
        if rc.is_null() {
            return Err(MadError::NoAnswer { what, lid: 0 });
        }
        Ok(buf)
    }

    /// The PerfMgt agent's ClassPortInfo at `lid` (its CapabilityMask says which optional
    /// attributes it answers): the 192-byte data area. Ask it before an optional attribute:
    /// an agent that lacks one may pass the query on (ibsim hands it to OpenSM, which dies).
    pub fn pma_class_port_info(&self, lid: u16) -> Result<Vec<u8>, MadError> {
        self.pma(lid, 0, IB_PMA_CLASS_PORT_INFO, "PerfMgt ClassPortInfo query")
    }

    /// PortExtendedSpeedsCounters (0x1F) of `port` at `lid`: the 192-byte data area.
    pub fn port_ext_speeds_counters(&self, lid: u16, port: u8) -> Result<Vec<u8>, MadError> {
        self.pma(lid, port, IB_GSI_PORT_EXT_SPEEDS_COUNTERS, "PortExtendedSpeedsCounters query")
    }

    /// PortSamplesControl (0x10) of `port` at `lid`: the 192-byte data area. Mandatory in
    /// IBTA, so not gated on ClassPortInfo; ibsim lacks it and passes it on to whatever client
    /// sits on that port (drop it or time out there).
    pub fn port_samples_control(&self, lid: u16, port: u8) -> Result<Vec<u8>, MadError> {
        self.pma(lid, port, IB_GSI_PORT_SAMPLES_CONTROL, "PortSamplesControl query")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directed_route_fills_the_path_from_index_one() {
        let path = DrPath::new(&[1, 7, 3]).unwrap();
        let id = path.portid();
        assert_eq!((id.drpath.cnt, &id.drpath.p[..5]), (3, &[0, 1, 7, 3, 0][..]));
        assert_eq!((id.drpath.drslid, id.drpath.drdlid, id.lid), (0xffff, 0xffff, 0));
        assert!(DrPath::new(&[1; 64]).is_none(), "an SMP carries at most 63 hops");
        assert_eq!(DrPath::new(&[]).unwrap().portid().drpath.cnt, 0);
    }

    #[test]
    fn table_modifiers() {
        assert_eq!(SmpTable::LinearForwarding { block: 5 }.attribute().1, 5);
        assert_eq!(SmpTable::PKey { port: 3, block: 1 }.attribute(), (0x16, 0x0003_0001, "P_KeyTable query"));
    }
}
