//! Pre-built work-request lists for the hot path: a list of sends (or writes, reads, atomics)
//! and a list of receives, built and checked once against their memory region, then posted
//! many times on a queue pair (`qp.rs`) with nothing built, allocated or formatted.

use super::error::{from_return_code, VerbsError};
use super::mr::{MemoryRegion, MrInner, RemoteBuffer};
use super::qp::QueuePair;
use super::wr_id::WrId;
use rdma_sys as sys;
use std::sync::Arc;

/// What a send work request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    Send,
    Write,
    Read,
    /// RDMA write with an immediate: the data goes to the remote address and the peer also
    /// gets a receive completion (write latency on GPU memory waits on it: the CPU cannot
    /// poll GPU memory).
    WriteImm,
    /// 64-bit fetch-and-add at the remote address (adds 1, as perftest's `ATOMIC_ADD_VALUE`);
    /// the value before lands in the local scatter entry.
    FetchAdd,
    /// 64-bit compare-and-swap at the remote address (swap value 0, as perftest's
    /// `ATOMIC_SWAP_VALUE`; compare 0); the value before lands in the local scatter entry.
    CmpSwap,
}

impl SendOp {
    pub fn is_atomic(self) -> bool {
        matches!(self, SendOp::FetchAdd | SendOp::CmpSwap)
    }
}

/// perftest's operands (`perftest_resources.h`): what a fetch-and-add adds and a
/// compare-and-swap writes.
const ATOMIC_ADD_VALUE: u64 = 1;
const ATOMIC_SWAP_VALUE: u64 = 0;

/// A fixed list of send work requests, built once and posted many times: the measured loop
/// only flips flags and posts, it never builds, allocates or formats.
///
/// The list holds its memory region alive, and every local address in it was checked against
/// the region's bounds, so nothing the adapter reads or writes through it can be freed memory.
pub struct SendList {
    wrs: Box<[sys::ibv_send_wr]>,
    sges: Box<[sys::ibv_sge]>,
    /// Bytes each WR moves.
    len: u32,
    mr: Arc<MrInner>,
}

// SAFETY: the list owns its arrays; the raw pointers point into them.
unsafe impl Send for SendList {}

impl SendList {
    /// `count` WRs of `len` bytes each from `local[offset..]`; `remote` is required for
    /// write and read. `inline` copies the payload into the WQE (small sends and writes).
    /// Refused when `local[offset..offset + len]` is outside the region or `count` is 0.
    pub fn new(
        count: usize,
        op: SendOp,
        local: &MemoryRegion,
        offset: usize,
        len: u32,
        remote: Option<RemoteBuffer>,
        inline: bool,
    ) -> Result<Self, VerbsError> {
        let mr = local.inner.clone();
        let addr = checked_range(&mr, count, offset, len)?;
        let sge = sys::ibv_sge { addr, length: len, lkey: mr.lkey() };
        let mut sges: Box<[sys::ibv_sge]> = vec![sge; count].into_boxed_slice();
        let opcode = match op {
            SendOp::Send => sys::ibv_wr_opcode::IBV_WR_SEND,
            SendOp::Write => sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
            SendOp::Read => sys::ibv_wr_opcode::IBV_WR_RDMA_READ,
            SendOp::WriteImm => sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE_WITH_IMM,
            SendOp::FetchAdd => sys::ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD,
            SendOp::CmpSwap => sys::ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP,
        };
        if op.is_atomic() && (len != 8 || !addr.is_multiple_of(8) || remote.is_some_and(|r| !r.addr.is_multiple_of(8))) {
            return Err(VerbsError::AtomicOperand { addr, len });
        }
        // Inline copies the payload with the CPU when posting: never from GPU memory, and
        // never for what the adapter writes back (a read's data, an atomic's old value).
        let inline = inline && mr.host_visible();
        let flags = if inline && op != SendOp::Read && !op.is_atomic() { sys::ibv_send_flags::IBV_SEND_INLINE.0 } else { 0 };
        let mut wrs: Box<[sys::ibv_send_wr]> = (0..count)
            .map(|i| {
                // SAFETY: plain old data.
                let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
                wr.wr_id = WrId::new(0, i as u32).to_raw();
                wr.num_sge = 1;
                wr.opcode = opcode;
                wr.send_flags = flags;
                match remote {
                    Some(r) if op.is_atomic() => {
                        let compare_add = if op == SendOp::FetchAdd { ATOMIC_ADD_VALUE } else { 0 };
                        wr.wr.atomic = sys::atomic_t { remote_addr: r.addr, compare_add, swap: ATOMIC_SWAP_VALUE, rkey: r.rkey };
                    }
                    Some(r) => wr.wr.rdma = sys::rdma_t { remote_addr: r.addr, rkey: r.rkey },
                    None => {}
                }
                wr
            })
            .collect();
        chain(&mut wrs, &mut sges);
        Ok(SendList { wrs, sges, len, mr })
    }

    pub fn len(&self) -> usize {
        self.wrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wrs.is_empty()
    }

    #[inline(always)]
    pub fn set_signaled(&mut self, index: usize, signaled: bool) {
        let flag = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        let wr = &mut self.wrs[index];
        wr.send_flags = if signaled { wr.send_flags | flag } else { wr.send_flags & !flag };
    }

    /// Names WR `index` in its completion (a new list's WRs are QP 0, slot = index).
    #[inline(always)]
    pub fn set_wr_id(&mut self, index: usize, wr_id: WrId) {
        self.wrs[index].wr_id = wr_id.to_raw();
    }

    /// Sets the remote address of one WR (bandwidth tests walk the peer's buffer).
    #[inline(always)]
    pub fn set_remote_addr(&mut self, index: usize, addr: u64) {
        // Writing a union field is safe; the rdma and atomic arms both begin with remote_addr.
        self.wrs[index].wr.rdma.remote_addr = addr;
    }

    /// Points one WR's scatter entry at `offset` in the list's region; refused (and nothing
    /// changed) when the WR's bytes would not fit there.
    #[inline(always)]
    pub fn set_local_offset(&mut self, index: usize, offset: usize) -> Result<(), VerbsError> {
        let addr = checked_range(&self.mr, 1, offset, self.len)?;
        self.sges[index].addr = addr;
        Ok(())
    }

    /// Posts the first `count` WRs as one chain (a post list); one doorbell.
    #[inline(always)]
    pub fn post(&mut self, qp: &mut QueuePair, count: usize) -> Result<(), VerbsError> {
        assert!(count >= 1 && count <= self.wrs.len(), "post of {count} WRs from a list of {}", self.wrs.len());
        let last = count - 1;
        let saved = self.wrs[last].next;
        self.wrs[last].next = std::ptr::null_mut();
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: the chain is valid (terminated at `last`), its SGEs point into registered memory.
        let rc = unsafe { sys::ibv_post_send(qp.qp, self.wrs.as_mut_ptr(), &mut bad) };
        self.wrs[last].next = saved;
        if rc != 0 {
            return Err(VerbsError::PostSend { source: from_return_code(rc) });
        }
        Ok(())
    }
}

/// A fixed list of receive work requests, re-posted one at a time or in batches.
///
/// Like [`SendList`], it holds its region alive and checked every address at construction.
pub struct RecvList {
    wrs: Box<[sys::ibv_recv_wr]>,
    // Owned here because the WRs point into it.
    _sges: Box<[sys::ibv_sge]>,
    _mr: Arc<MrInner>,
}

// SAFETY: the list owns its arrays; the raw pointers point into them.
unsafe impl Send for RecvList {}

impl RecvList {
    /// `count` receives into `local[offset..offset+len]`; each WR's id is
    /// `WrId { qp: tag, slot: index }` so completions on a shared CQ name their QP.
    /// Refused when `local[offset..offset + len]` is outside the region or `count` is 0.
    pub fn new(count: usize, local: &MemoryRegion, offset: usize, len: u32, tag: u32) -> Result<Self, VerbsError> {
        let mr = local.inner.clone();
        let addr = checked_range(&mr, count, offset, len)?;
        let sge = sys::ibv_sge { addr, length: len, lkey: mr.lkey() };
        let mut sges: Box<[sys::ibv_sge]> = vec![sge; count].into_boxed_slice();
        let mut wrs: Box<[sys::ibv_recv_wr]> = (0..count)
            .map(|i| {
                // SAFETY: plain old data.
                let mut wr: sys::ibv_recv_wr = unsafe { std::mem::zeroed() };
                wr.wr_id = WrId::new(tag, i as u32).to_raw();
                wr.num_sge = 1;
                wr
            })
            .collect();
        chain(&mut wrs, &mut sges);
        Ok(RecvList { wrs, _sges: sges, _mr: mr })
    }

    pub fn len(&self) -> usize {
        self.wrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wrs.is_empty()
    }

    /// Posts `count` receives starting at WR `first` (wrapping is the caller's job). Refused
    /// for GPU memory on a QP whose provider may scatter received data into the CQE (libmlx5
    /// would `memcpy` it to the GPU address).
    #[inline(always)]
    pub fn post(&mut self, qp: &mut QueuePair, first: usize, count: usize) -> Result<(), VerbsError> {
        if qp.scatters_to_cqe && !self._mr.host_visible() {
            return Err(VerbsError::ScatterToCqe {
                device: qp._pd.ctx.name.clone(),
                why: "receives into GPU memory on a queue pair made for host memory (QpMemory::Host)".into(),
            });
        }
        assert!(
            count >= 1 && first < self.wrs.len() && count <= self.wrs.len() - first,
            "post of {count} receives from {first} of {}",
            self.wrs.len()
        );
        let last = first + count - 1;
        let saved = self.wrs[last].next;
        self.wrs[last].next = std::ptr::null_mut();
        let mut bad: *mut sys::ibv_recv_wr = std::ptr::null_mut();
        // SAFETY: chain from `first` to `last` is valid and terminated; SGEs are registered memory.
        let rc = unsafe { sys::ibv_post_recv(qp.qp, self.wrs.as_mut_ptr().add(first), &mut bad) };
        self.wrs[last].next = saved;
        if rc != 0 {
            return Err(VerbsError::PostRecv { source: from_return_code(rc) });
        }
        Ok(())
    }
}

/// A work request that points at one scatter entry and at the next request of its list.
trait Linked: Sized {
    fn link(&mut self, sge: *mut sys::ibv_sge, next: *mut Self);
}

impl Linked for sys::ibv_send_wr {
    fn link(&mut self, sge: *mut sys::ibv_sge, next: *mut Self) {
        self.sg_list = sge;
        self.next = next;
    }
}

impl Linked for sys::ibv_recv_wr {
    fn link(&mut self, sge: *mut sys::ibv_sge, next: *mut Self) {
        self.sg_list = sge;
        self.next = next;
    }
}

/// Points WR `i` at SGE `i` and at WR `i + 1` (the last at nothing). The boxed slices are never
/// reallocated afterwards, so the pointers stay valid as long as the list owns both.
fn chain<W: Linked>(wrs: &mut [W], sges: &mut [sys::ibv_sge]) {
    assert_eq!(wrs.len(), sges.len());
    let count = wrs.len();
    let sge_base = sges.as_mut_ptr();
    let wr_base = wrs.as_mut_ptr();
    for i in 0..count {
        // SAFETY: i < count: inside both slices.
        let (sge, wr) = unsafe { (sge_base.add(i), &mut *wr_base.add(i)) };
        // SAFETY: i + 1 < count, inside the same slice.
        let next = if i + 1 < count { unsafe { wr_base.add(i + 1) } } else { std::ptr::null_mut() };
        wr.link(sge, next);
    }
}

/// The address of `mr[offset..offset + len]`, or why it does not fit; `count` WRs must be > 0.
fn checked_range(mr: &MrInner, count: usize, offset: usize, len: u32) -> Result<u64, VerbsError> {
    if count == 0 {
        return Err(VerbsError::EmptyList);
    }
    mr.checked_addr(offset, len as usize).ok_or(VerbsError::OutOfBounds { offset, len, region: mr.len() })
}
