//! Chunk writes for collectives (0.5): one RDMA write with immediate per chunk, from a fixed
//! slice of a local region into one slot of the peer's ring, the immediate naming the chunk.
//! Built once per hop; the hot path only sets the slot, the immediate and the id, and posts.

use super::QueuePair;
use crate::error::{from_return_code, VerbsError};
use crate::mr::{MemoryRegion, MrInner, RemoteBuffer};
use crate::wr_id::WrId;
use rdma_sys as sys;
use std::sync::Arc;

/// One hop's writer: a single pre-built `IBV_WR_RDMA_WRITE_WITH_IMM` work request.
///
/// Like [`SendList`](crate::SendList) it holds its local region alive and checked the local
/// slice once, at construction; the remote slot is checked against the ring the peer lent
/// (`slots` slots of `len` bytes), so no post can name a byte outside either.
pub struct ChunkWriter {
    wr: Box<sys::ibv_send_wr>,
    // Owned here because the WR points into it.
    sge: Box<sys::ibv_sge>,
    remote: RemoteBuffer,
    len: u32,
    slots: u32,
    _mr: Arc<MrInner>,
}

// SAFETY: the writer owns its WR and SGE; the raw pointer between them points into its own box.
unsafe impl Send for ChunkWriter {}

impl ChunkWriter {
    /// A writer of `len`-byte chunks from `local[offset..offset + len]` into a peer ring of
    /// `slots` slots at `remote`. Refused when the local slice is outside its region, `len` or
    /// `slots` is 0, or the ring the peer lent is shorter than `slots * len`.
    pub fn new(local: &MemoryRegion, offset: usize, len: u32, remote: RemoteBuffer, slots: u32) -> Result<Self, VerbsError> {
        let mr = local.inner.clone();
        if len == 0 || slots == 0 {
            return Err(VerbsError::EmptyList);
        }
        let addr = mr.checked_addr(offset, len as usize).ok_or(VerbsError::OutOfBounds { offset, len, region: mr.len() })?;
        let ring = u64::from(slots) * u64::from(len);
        if remote.len < ring {
            return Err(VerbsError::OutOfBounds { offset: 0, len: ring.min(u64::from(u32::MAX)) as u32, region: remote.len as usize });
        }
        let mut sge = Box::new(sys::ibv_sge { addr, length: len, lkey: mr.lkey() });
        // SAFETY: plain old data.
        let mut wr: Box<sys::ibv_send_wr> = Box::new(unsafe { std::mem::zeroed() });
        wr.num_sge = 1;
        wr.sg_list = &mut *sge;
        wr.next = std::ptr::null_mut();
        wr.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.wr.rdma = sys::rdma_t { remote_addr: remote.addr, rkey: remote.rkey };
        Ok(ChunkWriter { wr, sge, remote, len, slots, _mr: mr })
    }

    /// Slots in the peer's ring.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Posts one chunk into ring slot `slot % slots` with immediate `imm` (the receiver reads it
    /// back from its completion), named `id` in this side's completion; `signaled` asks for
    /// that completion. No allocation, no lock: one doorbell.
    #[inline(always)]
    pub fn post(&mut self, qp: &mut QueuePair, slot: u32, imm: u32, id: WrId, signaled: bool) -> Result<(), VerbsError> {
        let slot = slot % self.slots;
        self.wr.wr.rdma.remote_addr = self.remote.addr + u64::from(slot) * u64::from(self.len);
        self.wr.imm_data_invalidated_rkey_union.imm_data = imm.to_be();
        self.wr.wr_id = id.to_raw();
        self.wr.send_flags = if signaled { sys::ibv_send_flags::IBV_SEND_SIGNALED.0 } else { 0 };
        self.wr.sg_list = &mut *self.sge;
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: one WR, terminated (next is null), its SGE points into the registered region
        // this writer holds alive; the QP is live and taken exclusively (&mut).
        let rc = unsafe { sys::ibv_post_send(qp.qp, &mut *self.wr, &mut bad) };
        if rc != 0 {
            return Err(VerbsError::PostSend { source: from_return_code(rc) });
        }
        Ok(())
    }
}
