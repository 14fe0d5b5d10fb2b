//! What a receive completion of an RDMA write with immediate carries (0.5, collectives).

use super::WorkCompletion;
use rdma_sys as sys;

impl WorkCompletion {
    /// The immediate of a completed write-with-immediate or send-with-immediate, in host byte
    /// order; `None` when the completion carries none (`IBV_WC_WITH_IMM` unset).
    #[inline(always)]
    pub fn imm_data(&self) -> Option<u32> {
        if self.0.wc_flags & sys::ibv_wc_flags::IBV_WC_WITH_IMM.0 == 0 {
            return None;
        }
        // SAFETY: the union's `imm_data` arm is the one the provider wrote when IBV_WC_WITH_IMM
        // is set; both arms are plain u32s, so any bits are a valid value.
        Some(u32::from_be(unsafe { self.0.imm_data_invalidated_rkey_union.imm_data }))
    }

    /// Whether this completion is the receive side of an RDMA write with immediate.
    #[inline(always)]
    pub fn is_write_imm_arrival(&self) -> bool {
        self.0.opcode == sys::ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM
    }
}
