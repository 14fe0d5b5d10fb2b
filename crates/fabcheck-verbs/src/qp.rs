//! RC queue pair, its state transitions, and pre-built work-request lists for the hot path.

use super::cm_id::CmIdInner;
use super::cq::{CompletionQueue, CqInner};
use super::error::{from_return_code, last_os_error, VerbsError};
use super::mr::{Access, MemoryRegion, MrInner, RemoteBuffer};
use super::pd::{PdInner, ProtectionDomain};
use super::wr_id::WrId;
use crate::loader as dl;
use crate::mlx5::{self, QpInitAttr};
use rdma_sys as sys;
use std::sync::Arc;

/// Sizes asked of a new queue pair, and where its buffers live.
#[derive(Debug, Clone, Copy)]
pub struct QpConfig {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_inline_data: u32,
    pub memory: QpMemory,
}

/// Where the buffers a QP's work requests name live: it decides how the QP is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QpMemory {
    /// Host memory: the provider's defaults (mlx5's scatter-to-CQE included, as perftest).
    #[default]
    Host,
    /// GPU memory: the CPU must never copy into it, so received data is never scattered into
    /// a completion for libmlx5 to `memcpy` (see `mlx5.rs`).
    Device,
}

/// How a QP is made, decided from its memory and whether the device is mlx5. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Creation {
    /// `ibv_create_qp`; `scatters_to_cqe`: whether the provider may put received data in a
    /// CQE. Host-memory QPs are not asked about their provider and count as may-scatter.
    Verbs { scatters_to_cqe: bool },
    /// `mlx5dv_create_qp` with these attributes (scatter-to-CQE off).
    Mlx5dv(QpInitAttr),
}

/// Device memory on mlx5: `mlx5dv_create_qp` with `MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE`.
/// Device memory elsewhere: plain verbs (only mlx5 scatters to the CQE among rdma-core's
/// providers: `MLX5_INLINE_SCATTER_*` is mlx5's alone). Host memory: plain verbs, not asked.
pub(crate) fn creation(memory: QpMemory, is_mlx5: impl FnOnce() -> Result<bool, VerbsError>) -> Result<Creation, VerbsError> {
    Ok(match memory {
        QpMemory::Host => Creation::Verbs { scatters_to_cqe: true },
        QpMemory::Device if is_mlx5()? => Creation::Mlx5dv(QpInitAttr::no_scatter_to_cqe()),
        QpMemory::Device => Creation::Verbs { scatters_to_cqe: false },
    })
}

/// Where the remote queue pair is and how to reach it (exchanged out of band).
#[derive(Debug, Clone, Copy)]
pub struct PathSpec {
    pub port: u8,
    /// `enum ibv_mtu` value (1..5), the smaller of both ends' active MTU.
    pub mtu: u32,
    pub remote_qpn: u32,
    pub remote_psn: u32,
    pub remote_lid: u16,
    /// The remote GID and our source GID index; required on RoCE, optional on IB.
    pub remote_gid: Option<[u8; 16]>,
    pub sgid_index: u8,
    pub max_rd_atomic: u8,
    /// InfiniBand service level of the path.
    pub sl: u8,
    /// RoCE: the GRH traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
}

/// What the RTR -> RTS transition sets, by name: four integers in a row were one swap from a
/// QP that retries for minutes or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtsParams {
    /// The first packet sequence number this side sends (the peer's `remote_psn`).
    pub psn: u32,
    /// RDMA reads (and atomics) this side may have in flight as initiator (at least 1).
    pub max_rd_atomic: u8,
    /// The IBTA local ACK timeout exponent: each try waits 4.096 us * 2^exp.
    pub ack_timeout_exp: u8,
    /// Transport retries after a timeout before the WR fails (at most 7).
    pub retry_count: u8,
}

pub struct QueuePair {
    qp: *mut sys::ibv_qp,
    /// Set when librdmacm created the QP: it must also destroy it (rdma_destroy_qp), and the
    /// id must outlive it, so the QP holds the id.
    cm_id: Option<Arc<CmIdInner>>,
    max_inline: u32,
    /// Whether the provider may put received data in a CQE (then libmlx5 copies it with the
    /// CPU): receives into GPU memory are refused on such a QP.
    scatters_to_cqe: bool,
    // Kept alive while the QP exists: destroying a CQ in use fails with EBUSY.
    _send_cq: Arc<CqInner>,
    _recv_cq: Arc<CqInner>,
    _pd: Arc<PdInner>,
}

// SAFETY: a QP handle may move between threads; posting is serialised by &mut where it matters.
unsafe impl Send for QueuePair {}

impl Drop for QueuePair {
    fn drop(&mut self) {
        if let Some(id) = &self.cm_id {
            let _one = id.serialise();
            // SAFETY: the QP was created on this id, which we hold alive until after this call;
            // under the id's channel lock, so no other librdmacm call on the id is under way.
            unsafe { dl::rdma_destroy_qp(id.id) };
            return;
        }
        // SAFETY: qp came from ibv_create_qp and is destroyed once.
        let rc = unsafe { dl::ibv_destroy_qp(self.qp) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_qp failed");
        }
    }
}

impl QueuePair {
    /// Creates a reliable-connected QP. Every send WR is unsignaled unless marked otherwise.
    /// For [`QpMemory::Device`] on an mlx5 adapter it is made with scatter-to-CQE off.
    pub fn new_rc(pd: &ProtectionDomain, send_cq: &CompletionQueue, recv_cq: &CompletionQueue, config: QpConfig) -> Result<Self, VerbsError> {
        let mut init = rc_init_attr(send_cq, recv_cq, config);
        let ctx = &pd.inner.ctx;
        let failed =
            |source| VerbsError::CreateQp { send_wr: config.max_send_wr, recv_wr: config.max_recv_wr, inline: config.max_inline_data, source };
        let (qp, max_inline, scatters_to_cqe) = match creation(config.memory, || mlx5::is_mlx5(ctx.ctx, &ctx.name))? {
            Creation::Verbs { scatters_to_cqe } => {
                // SAFETY: pd and CQs are live; init is fully initialised.
                let qp = unsafe { dl::ibv_create_qp(pd.inner.pd, &mut init) };
                if qp.is_null() {
                    return Err(failed(last_os_error()));
                }
                (qp, init.cap.max_inline_data, scatters_to_cqe)
            }
            Creation::Mlx5dv(mut attr) => {
                let mut ex = init_attr_ex(&init, pd);
                // SAFETY: ctx is the PD's (mlx5) context and the CQs are on it; ex is fully
                // initialised (zeroed, then the fields comp_mask names).
                let qp = unsafe { mlx5::create_qp(ctx.ctx, &mut ex, &mut attr) }.ok_or_else(|| VerbsError::ScatterToCqe {
                    device: ctx.name.clone(),
                    why: "libmlx5.so.1 has no mlx5dv_create_qp (rdma-core older than 16); update rdma-core, or run with --mem host".into(),
                })?;
                if qp.is_null() {
                    return Err(VerbsError::Mlx5CreateQp { device: ctx.name.clone(), source: last_os_error() });
                }
                (qp, ex.cap.max_inline_data, false)
            }
        };
        Ok(QueuePair {
            qp,
            cm_id: None,
            max_inline,
            scatters_to_cqe,
            _send_cq: send_cq.inner.clone(),
            _recv_cq: recv_cq.inner.clone(),
            _pd: pd.inner.clone(),
        })
    }

    /// Wraps a QP that librdmacm created on `id`.
    pub(crate) fn from_cm(
        qp: *mut sys::ibv_qp,
        id: Arc<CmIdInner>,
        max_inline: u32,
        scatters_to_cqe: bool,
        pd: &ProtectionDomain,
        send_cq: &CompletionQueue,
        recv_cq: &CompletionQueue,
    ) -> QueuePair {
        QueuePair {
            qp,
            cm_id: Some(id),
            max_inline,
            scatters_to_cqe,
            _send_cq: send_cq.inner.clone(),
            _recv_cq: recv_cq.inner.clone(),
            _pd: pd.inner.clone(),
        }
    }

    /// Whether the provider may scatter received data into this QP's CQEs (then receives into
    /// GPU memory are refused).
    pub fn scatters_to_cqe(&self) -> bool {
        self.scatters_to_cqe
    }

    pub fn qp_num(&self) -> u32 {
        // SAFETY: qp is live.
        unsafe { (*self.qp).qp_num }
    }

    /// Inline data the QP actually accepts (the provider may grant less, or more, than asked).
    pub fn max_inline(&self) -> u32 {
        self.max_inline
    }

    /// RESET -> INIT on P_Key index `pkey_index`, granting the remote access the test needs
    /// and nothing more.
    pub fn to_init(&mut self, port: u8, pkey_index: u16, access: Access) -> Result<(), VerbsError> {
        let mut attr = zeroed_attr();
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
        attr.pkey_index = pkey_index;
        attr.port_num = port;
        attr.qp_access_flags = access.bits();
        use sys::ibv_qp_attr_mask as m;
        let mask = m::IBV_QP_STATE.0 | m::IBV_QP_PKEY_INDEX.0 | m::IBV_QP_PORT.0 | m::IBV_QP_ACCESS_FLAGS.0;
        self.modify(&mut attr, mask, "INIT")
    }

    /// INIT -> RTR towards the remote QP.
    pub fn to_rtr(&mut self, path: &PathSpec) -> Result<(), VerbsError> {
        let mut attr = zeroed_attr();
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_RTR;
        attr.path_mtu = path.mtu;
        attr.dest_qp_num = path.remote_qpn;
        attr.rq_psn = path.remote_psn;
        attr.max_dest_rd_atomic = path.max_rd_atomic.max(1);
        attr.min_rnr_timer = 12;
        attr.ah_attr.dlid = path.remote_lid;
        attr.ah_attr.sl = path.sl;
        attr.ah_attr.src_path_bits = 0;
        attr.ah_attr.port_num = path.port;
        if let Some(gid) = path.remote_gid {
            attr.ah_attr.is_global = 1;
            attr.ah_attr.grh.dgid.raw = gid;
            attr.ah_attr.grh.sgid_index = path.sgid_index;
            // As perftest: routed RoCE may cross many hops.
            attr.ah_attr.grh.hop_limit = 255;
            attr.ah_attr.grh.traffic_class = path.traffic_class;
            attr.ah_attr.grh.flow_label = 0;
        }
        use sys::ibv_qp_attr_mask as m;
        let mask = m::IBV_QP_STATE.0
            | m::IBV_QP_AV.0
            | m::IBV_QP_PATH_MTU.0
            | m::IBV_QP_DEST_QPN.0
            | m::IBV_QP_RQ_PSN.0
            | m::IBV_QP_MAX_DEST_RD_ATOMIC.0
            | m::IBV_QP_MIN_RNR_TIMER.0;
        self.modify(&mut attr, mask, "RTR")
    }

    /// RTR -> RTS with the send PSN, reads in flight and retry policy of `params`.
    pub fn to_rts(&mut self, params: &RtsParams) -> Result<(), VerbsError> {
        let mut attr = zeroed_attr();
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_RTS;
        attr.sq_psn = params.psn;
        attr.timeout = params.ack_timeout_exp;
        attr.retry_cnt = params.retry_count.min(7);
        attr.rnr_retry = 7;
        attr.max_rd_atomic = params.max_rd_atomic.max(1);
        use sys::ibv_qp_attr_mask as m;
        let mask = m::IBV_QP_STATE.0
            | m::IBV_QP_TIMEOUT.0
            | m::IBV_QP_RETRY_CNT.0
            | m::IBV_QP_RNR_RETRY.0
            | m::IBV_QP_SQ_PSN.0
            | m::IBV_QP_MAX_QP_RD_ATOMIC.0;
        self.modify(&mut attr, mask, "RTS")
    }

    /// Moves to ERROR so outstanding work is flushed before teardown.
    pub fn to_error(&mut self) -> Result<(), VerbsError> {
        let mut attr = zeroed_attr();
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_ERR;
        self.modify(&mut attr, sys::ibv_qp_attr_mask::IBV_QP_STATE.0, "ERROR")
    }

    fn modify(&mut self, attr: &mut sys::ibv_qp_attr, mask: u32, state: &'static str) -> Result<(), VerbsError> {
        // SAFETY: qp is live; attr is initialised for every field the mask names.
        let rc = unsafe { dl::ibv_modify_qp(self.qp, attr, mask as i32) };
        if rc != 0 {
            return Err(VerbsError::ModifyQp { state, source: from_return_code(rc) });
        }
        Ok(())
    }
}

/// Creation attributes of an RC QP with one SGE per WR and unsignaled sends by default.
pub(crate) fn rc_init_attr(send_cq: &CompletionQueue, recv_cq: &CompletionQueue, config: QpConfig) -> sys::ibv_qp_init_attr {
    // SAFETY: plain old data.
    let mut init: sys::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
    init.send_cq = send_cq.inner.cq;
    init.recv_cq = recv_cq.inner.cq;
    init.qp_type = sys::ibv_qp_type::IBV_QPT_RC;
    init.sq_sig_all = 0;
    init.cap.max_send_wr = config.max_send_wr;
    init.cap.max_recv_wr = config.max_recv_wr;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = config.max_inline_data;
    init
}

/// `init` as the extended attributes `mlx5dv_create_qp` takes: the same fields, the PD named
/// by `comp_mask` (`IBV_QP_INIT_ATTR_PD`, which every verbs_create_qp_ex path requires).
fn init_attr_ex(init: &sys::ibv_qp_init_attr, pd: &ProtectionDomain) -> sys::ibv_qp_init_attr_ex {
    // SAFETY: plain old data.
    let mut ex: sys::ibv_qp_init_attr_ex = unsafe { std::mem::zeroed() };
    ex.qp_context = init.qp_context;
    ex.send_cq = init.send_cq;
    ex.recv_cq = init.recv_cq;
    ex.srq = init.srq;
    ex.cap = init.cap;
    ex.qp_type = init.qp_type;
    ex.sq_sig_all = init.sq_sig_all;
    ex.comp_mask = sys::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0;
    ex.pd = pd.inner.pd;
    ex
}

fn zeroed_attr() -> sys::ibv_qp_attr {
    // SAFETY: plain old data.
    unsafe { std::mem::zeroed() }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx5::{CREATE_DISABLE_SCATTER_TO_CQE, MASK_QP_CREATE_FLAGS};

    /// Issue #43: a 2-byte SEND into GPU memory on mlx5 arrived inside the CQE and libmlx5
    /// copied it to the GPU address with the CPU. The creation path for device memory on mlx5
    /// must ask mlx5dv_create_qp for scatter-to-CQE off.
    #[test]
    fn device_memory_on_mlx5_is_created_with_scatter_to_cqe_off() {
        let Creation::Mlx5dv(attr) = creation(QpMemory::Device, || Ok(true)).unwrap() else {
            panic!("device memory on mlx5 must go through mlx5dv_create_qp")
        };
        assert_ne!(attr.comp_mask & MASK_QP_CREATE_FLAGS, 0, "create_flags is named valid");
        assert_ne!(attr.create_flags & CREATE_DISABLE_SCATTER_TO_CQE, 0, "MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE");
    }

    #[test]
    fn elsewhere_plain_verbs_and_only_host_qps_count_as_may_scatter() {
        assert_eq!(creation(QpMemory::Device, || Ok(false)).unwrap(), Creation::Verbs { scatters_to_cqe: false }, "rxe, bnxt_re...");
        let asked = std::cell::Cell::new(false);
        let host = creation(QpMemory::Host, || {
            asked.set(true);
            Ok(true)
        });
        assert_eq!(host.unwrap(), Creation::Verbs { scatters_to_cqe: true }, "host memory keeps the provider's default");
        assert!(!asked.get(), "host-memory QPs never load libmlx5");
        let err = VerbsError::ScatterToCqe { device: "mlx5_0".into(), why: "old".into() };
        assert!(creation(QpMemory::Device, || Err(err)).is_err(), "an mlx5 that cannot be told apart is an error, not a guess");
    }
}
