//! The switch and port tables of multicast and quality of service, over directed-route SMPs:
//! the MulticastForwardingTable (`ibroute -M`'s read), SLtoVLMappingTable and
//! VLArbitrationTable (`smpquery sl2vl` / `smpquery vlarb`). Attribute ids and modifiers as
//! rdma-core's infiniband-diags/ibroute.c and smpquery.c send them, and as ibsim's
//! ibsim/sim_mad.c (do_multicastforwtbl, do_sl2vl, do_vlarb) answers them. Raw 64-byte
//! payloads; decoding is the main crate's (`mad::tables`).

use super::tables::DrPath;
use super::{MadError, MadPort};

/// The multicast and QoS tables fabcheck reads, each with how its modifier addresses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosTable {
    /// MulticastForwardingTable (0x001B): block `block` holds the 32 MLIDs from
    /// 0xC000 + 32 * block, one 16-bit port mask each, for the 16 ports from 16 * position
    /// (modifier: position in bits 28..31, block in bits 0..8).
    MulticastForwarding { block: u16, position: u8 },
    /// SLtoVLMappingTable (0x0017): on a switch, the map of packets entering `in_port` and
    /// leaving `out_port` (modifier bits 8..15 and 0..7); on a CA port, both 0.
    Sl2Vl { in_port: u8, out_port: u8 },
    /// VLArbitrationTable (0x0018): `block` 1 and 2 are the low-priority table's entries 0..31
    /// and 32..63, 3 and 4 the high-priority table's (modifier bits 16..31); `port` the switch
    /// output port (bits 0..15), 0 on a CA.
    VlArbitration { block: u8, port: u8 },
}

const IB_ATTR_SLVL_TABLE: u32 = 0x17;
const IB_ATTR_VL_ARBITRATION: u32 = 0x18;
const IB_ATTR_MULTICASTFORWTBL: u32 = 0x1b;

impl QosTable {
    fn attribute(self) -> (u32, u32, &'static str) {
        match self {
            QosTable::MulticastForwarding { block, position } => {
                (IB_ATTR_MULTICASTFORWTBL, (u32::from(position & 0xf) << 28) | u32::from(block & 0x1ff), "MulticastForwardingTable query")
            }
            QosTable::Sl2Vl { in_port, out_port } => {
                (IB_ATTR_SLVL_TABLE, (u32::from(in_port) << 8) | u32::from(out_port), "SLtoVLMappingTable query")
            }
            QosTable::VlArbitration { block, port } => {
                (IB_ATTR_VL_ARBITRATION, (u32::from(block) << 16) | u32::from(port), "VLArbitrationTable query")
            }
        }
    }
}

impl MadPort {
    /// One 64-byte block of `table` at the node `path` leads to.
    pub fn qos_block(&self, path: &DrPath, table: QosTable) -> Result<[u8; 64], MadError> {
        let (attr, modifier, what) = table.attribute();
        self.dr_get(path, attr, modifier, what)
    }

    /// Writes one block of `table` (for the simulator tier, which must break what an SM set;
    /// fabcheck itself never sets one) and returns what the node answered.
    pub fn set_qos_block(&self, path: &DrPath, table: QosTable, block: &[u8; 64]) -> Result<[u8; 64], MadError> {
        let (attr, modifier, what) = table.attribute();
        self.dr_set(path, attr, modifier, what, block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As ibroute.c builds them (`mod = block | (chunk << 28)`), and smpquery.c's
    /// `sl2vl_dump` (`in << 8 | out`) and `vlarb_dump` (`block << 16 | port`).
    #[test]
    fn modifiers() {
        assert_eq!(QosTable::MulticastForwarding { block: 3, position: 1 }.attribute().1, 0x1000_0003);
        assert_eq!(QosTable::MulticastForwarding { block: 0, position: 0 }.attribute().0, 0x1b);
        assert_eq!(QosTable::Sl2Vl { in_port: 7, out_port: 2 }.attribute(), (0x17, 0x0702, "SLtoVLMappingTable query"));
        assert_eq!(QosTable::VlArbitration { block: 3, port: 5 }.attribute(), (0x18, 0x0003_0005, "VLArbitrationTable query"));
    }
}
