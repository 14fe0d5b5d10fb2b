//! RC queue pair and its state transitions; its pre-built work-request lists are `wr.rs`'s.

use super::cm_id::CmIdInner;
use super::cq::{CompletionQueue, CqInner};
use super::error::{from_return_code, last_os_error, VerbsError};
use super::mr::Access;
use super::pd::{PdInner, ProtectionDomain};
use crate::loader as dl;
use crate::mlx5::{self, QpInitAttr};
use rdma_sys as sys;
use std::sync::Arc;
/// Chunk writes with immediate for collectives (0.5).
pub(crate) mod chunk;

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
    /// RoCE: the GRH flow label (20 bits; 0: none). RoCE v2 providers derive the UDP source
    /// port from it: Linux `rdma_get_udp_sport()` (include/rdma/ib_verbs.h) is
    /// `rdma_flow_label_to_udp_sport(fl)`, or the QPNs' `rdma_calc_flow_label()` when `fl` is 0;
    /// mlx5 (`mlx5_set_path_udp_sport`, drivers/infiniband/hw/mlx5/qp.c) and rxe
    /// (`rxe_modify_qp`, drivers/infiniband/sw/rxe/rxe_verbs.c) both call it at RTR.
    pub flow_label: u32,
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
    pub(crate) qp: *mut sys::ibv_qp,
    /// Set when librdmacm created the QP: it must also destroy it (rdma_destroy_qp), and the
    /// id must outlive it, so the QP holds the id.
    cm_id: Option<Arc<CmIdInner>>,
    pub(crate) max_inline: u32,
    /// Whether the provider may put received data in a CQE (then libmlx5 copies it with the
    /// CPU): receives into GPU memory are refused on such a QP.
    pub(crate) scatters_to_cqe: bool,
    // Kept alive while the QP exists: destroying a CQ in use fails with EBUSY.
    _send_cq: Arc<CqInner>,
    _recv_cq: Arc<CqInner>,
    pub(crate) _pd: Arc<PdInner>,
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
            attr.ah_attr.grh.flow_label = path.flow_label & 0x000f_ffff;
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
