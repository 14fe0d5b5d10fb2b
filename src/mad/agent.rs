//! A node's PerfMgt agent, asked through a `MadPort`: its ClassPortInfo once, and the optional
//! counters only where it says it has them.

use super::attributes::ExtSpeedsCounters;
use super::decode;
use fabcheck_verbs::mad::MadPort;

/// What a node's PerfMgt agent answers, from its ClassPortInfo: asked once, when first
/// needed, since an agent lacking an optional attribute may pass the query on (ibsim hands it
/// to OpenSM, which dies) or fill it with junk.
#[derive(Default)]
pub struct Agent {
    /// CapabilityMask and CapabilityMask2; None inside: the agent did not answer.
    caps: Option<Option<(u16, u32)>>,
    /// The agent said it has PortExtendedSpeedsCounters and then did not answer them.
    speeds_failed: bool,
}

impl Agent {
    fn caps(&mut self, port: &MadPort, lid: u16) -> Option<(u16, u32)> {
        *self.caps.get_or_insert_with(|| {
            port.pma_class_port_info(lid).ok().map(|cpi| (decode::pma_capability_mask(&cpi), decode::pma_capability_mask2(&cpi)))
        })
    }

    /// Whether PortCountersExtended carries the additional 64-bit counters (PortXmitWait).
    pub fn additional_ext_counters(&mut self, port: &MadPort, lid: u16) -> bool {
        self.caps(port, lid).is_some_and(|(_, mask2)| mask2 & decode::PMA_CAP2_ADDITIONAL_EXT_COUNTERS != 0)
    }

    /// The PortExtendedSpeedsCounters of an FDR-or-faster port, in the layout its speed
    /// uses, where the agent says it has them.
    pub fn ext_speeds_counters(&mut self, port: &MadPort, lid: u16, number: u8, speed: crate::port::Speed) -> Option<ExtSpeedsCounters> {
        use crate::port::Speed;
        let rs_fec = matches!(speed, Speed::Hdr | Speed::Ndr | Speed::Xdr);
        if self.speeds_failed || (!rs_fec && !matches!(speed, Speed::Fdr | Speed::Edr)) {
            return None;
        }
        let (mask, _) = self.caps(port, lid)?;
        if mask & decode::PMA_CAP_RSFEC_COUNTERS == 0 {
            return None;
        }
        match port.port_ext_speeds_counters(lid, number) {
            Ok(raw) => Some(decode::ext_speeds_counters(&raw, rs_fec)),
            Err(_) => {
                self.speeds_failed = true;
                None
            }
        }
    }
}
