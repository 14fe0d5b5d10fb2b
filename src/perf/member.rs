//! A collective member's verbs resources (0.5, `fabcheck collective`): one RC QP per hop of its
//! [`MemberPlan`] (with `--paths N`, N per hop, each its own flow label: a lane per path), a
//! registered ring per inbound hop (its lanes share it) with receives pre-posted on each lane,
//! one chunk to send from. Opened on `prepare_member`, connected hop by hop on `connect_hops`, run by
//! [`member_loop`](super::member_loop), released on drop.
//!
//! Registration asks the least access each buffer needs: an inbound ring is written by its peer
//! (`LOCAL_WRITE | REMOTE_WRITE`, rkey lent to that hop's sender only); the send chunk is only
//! read by the adapter (no access flag, no rkey lent). An outbound QP grants no remote access,
//! an inbound QP remote write only.

use super::{local_end, memory, PerfError};
use crate::model::collective::{HopId, MemberPlan};
use crate::model::member_wire::{HopPeer, RING_SLOTS};
use crate::model::{Conditions, Endpoint, Target};
use crate::port::{LinkLayer, Mtu};
use crate::probe;
use fabcheck_verbs::{
    Access, ChunkWriter, CompletionQueue, Context, MemoryRegion, PathSpec, ProtectionDomain, QpConfig, QpMemory, QueuePair, RecvList, RemoteBuffer,
    RtsParams,
};

/// Receive WRs kept posted per inbound hop; replenished [`REPOST_BATCH`] at a time.
pub const RECV_DEPTH: u32 = 64;
/// Receives re-posted at once (one doorbell per batch).
pub const REPOST_BATCH: u32 = 16;
/// Writes in flight per outbound hop: one per slot of the peer's ring.
pub const SEND_DEPTH: u32 = RING_SLOTS;
/// The stall limit when the controller names none.
pub const DEFAULT_STALL_MS: u64 = 5_000;
/// As `perf::session`: 67 ms per try, 7 tries, so a dead peer fails a write in about 0.5 s.
const ACK_TIMEOUT_EXP: u8 = 14;
const RETRY_COUNT: u8 = 7;

/// One outbound lane (one path of a hop): its QP and, once connected, its writer into the
/// peer's ring.
pub(super) struct OutHop {
    pub(super) hop: HopId,
    /// The path (0-based) of its hop this lane is.
    pub(super) path: u32,
    pub(super) qp: QueuePair,
    pub(super) writer: Option<ChunkWriter>,
    /// The receiving member's host, for errors.
    pub(super) peer: String,
}

/// One inbound lane (one path of a hop): its QP and the receives posted on it (into its hop's
/// ring).
pub(super) struct InHop {
    pub(super) hop: HopId,
    pub(super) path: u32,
    pub(super) qp: QueuePair,
    pub(super) recvs: RecvList,
    pub(super) peer: String,
}

/// A member's resources. Fields are private to `perf`: the loop owns them while it runs.
pub struct MemberSession {
    // QPs first (in the hop vectors), then memory, CQs, PD (each also held by what uses it).
    /// Per lane: lane `hop * paths + k` is path `k` of outbound hop `hop`.
    pub(super) out: Vec<OutHop>,
    /// Per lane, as `out`, of the inbound hops.
    pub(super) inb: Vec<InHop>,
    // Each inbound hop's ring, after the QPs the peers write through (dropped after them).
    _rings: Vec<MemoryRegion>,
    pub(super) send_mr: MemoryRegion,
    pub(super) send_cq: CompletionQueue,
    pub(super) recv_cq: CompletionQueue,
    _pd: ProtectionDomain,
    pub(super) plan: MemberPlan,
    pub(super) stall_ms: u64,
    pub(super) device: String,
    pub(super) port: u8,
    local: Vec<HopPeer>,
    template: Endpoint,
    connected: bool,
}

impl MemberSession {
    /// Opens `target`'s port and builds every hop of `plan` (checked again here: the agent takes
    /// no plan on trust). Errors name the cause as a pair test's do.
    pub fn open(target: &Target, plan: &MemberPlan, stall_timeout_ms: u64, host: &str) -> Result<MemberSession, PerfError> {
        crate::model::member_wire::check_member_plan(plan, stall_timeout_ms).map_err(|e| PerfError::BadPeer(e.to_string()))?;
        target.conditions.validate()?;
        memory::preflight(target.conditions.mem)?;
        if target.cm.is_some() {
            return Err(PerfError::BadPeer("a collective member connects out of band; rdma_cm (--cm) is not supported for it".into()));
        }
        let mut conditions = target.conditions;
        let inv = probe::test_inventory(target.device.as_deref())?;
        let (device, port) = local_end::pick_port(&inv, target)?;
        let subject = format!("{}/{}", device.name, port.port);
        local_end::must_be_active(device, port)?;
        local_end::default_tclass(device, port, &mut conditions);
        let chosen = local_end::choose_gid(device, port, target.gid_index)?;
        let ctx = Context::open(&device.name)?;
        let limits = ctx.query_device()?;
        let pd = ProtectionDomain::new(&ctx)?;
        let paths = plan.paths.max(1);
        if paths > 1 && port.link_layer != LinkLayer::Ethernet {
            return Err(PerfError::BadPeer(format!(
                "--paths spreads RoCE flows by UDP source port; {subject} is {}: run without --paths",
                port.link_layer
            )));
        }
        let (n_out, n_in) = (plan.outbound.len() as u32 * paths, plan.inbound.len() as u32 * paths);
        let send_cqe = (SEND_DEPTH * n_out + 16).min(limits.max_cqe.max(64));
        let recv_cqe = (RECV_DEPTH * n_in + 16).min(limits.max_cqe.max(64));
        let send_cq = CompletionQueue::new(&ctx, send_cqe)?;
        let recv_cq = CompletionQueue::new(&ctx, recv_cqe)?;
        let chunk = plan.chunk_bytes as usize;
        let send = memory::register(&pd, &device.name, chunk, Access::NONE, conditions.mem, conditions.relaxed_ordering)?;
        conditions.relaxed_ordering = send.relaxed_ordering;
        let memory_kind = if send.region.host_visible() { QpMemory::Host } else { QpMemory::Device };
        let port_num = port.port as u8;
        let pkey = conditions.pkey_index.unwrap_or(0);
        let mut out = Vec::with_capacity(n_out as usize);
        for (hop, path) in plan.outbound.iter().flat_map(|h| (0..paths).map(move |k| (h, k))) {
            let config = QpConfig { max_send_wr: SEND_DEPTH, max_recv_wr: 1, max_inline_data: 0, memory: memory_kind };
            let mut qp = QueuePair::new_rc(&pd, &send_cq, &recv_cq, config)?;
            qp.to_init(port_num, pkey, Access::NONE)?;
            out.push(OutHop { hop: hop.id, path, qp, writer: None, peer: String::new() });
        }
        let mut inb = Vec::with_capacity(n_in as usize);
        let mut rings = Vec::with_capacity(plan.inbound.len());
        for hop in &plan.inbound {
            let ring = memory::register(
                &pd,
                &device.name,
                chunk * RING_SLOTS as usize,
                Access::LOCAL_WRITE | Access::REMOTE_WRITE,
                conditions.mem,
                conditions.relaxed_ordering,
            )?;
            for path in 0..paths {
                let config = QpConfig { max_send_wr: 1, max_recv_wr: RECV_DEPTH, max_inline_data: 0, memory: memory_kind };
                let mut qp = QueuePair::new_rc(&pd, &send_cq, &recv_cq, config)?;
                qp.to_init(port_num, pkey, Access::REMOTE_WRITE)?;
                // Tagged with its lane: the loop knows the lane of each arrival.
                let recvs = RecvList::new(RECV_DEPTH as usize, &ring.region, 0, plan.chunk_bytes, inb.len() as u32)?;
                inb.push(InHop { hop: hop.id, path, qp, recvs, peer: String::new() });
            }
            rings.push(ring.region);
        }
        let template = Endpoint { gpu: send.gpu.map(Box::new), ..local_end::endpoint(host, device, port, chosen, conditions) };
        // One endpoint per hop, naming its lanes' QPs in path order.
        let mut local = Vec::with_capacity(plan.outbound.len() + plan.inbound.len());
        for lanes in out.chunks(paths as usize) {
            let qpns = lanes.iter().map(|h| h.qp.qp_num()).collect();
            local.push(HopPeer { hop: lanes[0].hop, endpoint: Endpoint { qpns, ..template.clone() } });
        }
        for (lanes, ring) in inb.chunks(paths as usize).zip(&rings) {
            let qpns = lanes.iter().map(|h| h.qp.qp_num()).collect();
            let endpoint = Endpoint { qpns, addr: ring.addr(), rkey: ring.rkey(), len: ring.len() as u64, ..template.clone() };
            local.push(HopPeer { hop: lanes[0].hop, endpoint });
        }
        Ok(MemberSession {
            out,
            inb,
            _rings: rings,
            send_mr: send.region,
            send_cq,
            recv_cq,
            _pd: pd,
            plan: plan.clone(),
            stall_ms: if stall_timeout_ms == 0 { DEFAULT_STALL_MS } else { stall_timeout_ms },
            device: device.name.clone(),
            port: port_num,
            local,
            template,
            connected: false,
        })
    }

    /// This member's end of each hop (what `member_ready` carries).
    pub fn local(&self) -> &[HopPeer] {
        &self.local
    }

    /// Moves every hop's QP to RTS towards its peer, builds each outbound hop's writer into the
    /// peer's ring and pre-posts every inbound hop's receives.
    pub fn connect(&mut self, peers: &[HopPeer]) -> Result<(), PerfError> {
        let matched = crate::model::member_wire::match_hops(&self.plan, peers).map_err(|e| PerfError::BadPeer(e.to_string()))?;
        let (to_out, to_in) = matched.split_at(self.plan.outbound.len());
        let paths = self.plan.paths.max(1) as usize;
        // Lane i is path i mod N of hop i / N.
        for (i, h) in self.out.iter_mut().enumerate() {
            let peer = to_out[i / paths];
            let path = path_to(&self.template, peer, h.path, paths > 1)?;
            rts(&mut h.qp, &path, self.template.psn)?;
            let remote = RemoteBuffer { addr: peer.addr, rkey: peer.rkey, len: peer.len };
            h.writer =
                Some(ChunkWriter::new(&self.send_mr, 0, self.plan.chunk_bytes, remote, RING_SLOTS).map_err(|e| {
                    PerfError::BadPeer(format!("hop {} to {}: the ring lent does not fit {RING_SLOTS} chunks: {e}", h.hop.0, peer.host))
                })?);
            h.peer = peer.host.clone();
        }
        for (i, h) in self.inb.iter_mut().enumerate() {
            let peer = to_in[i / paths];
            let path = path_to(&self.template, peer, h.path, paths > 1)?;
            rts(&mut h.qp, &path, self.template.psn)?;
            h.recvs.post(&mut h.qp, 0, RECV_DEPTH as usize)?;
            h.peer = peer.host.clone();
        }
        self.connected = true;
        Ok(())
    }

    pub(super) fn is_connected(&self) -> bool {
        self.connected
    }

    /// The conditions this member applied.
    pub fn conditions(&self) -> &Conditions {
        &self.template.conditions
    }
}

/// The path from `local` to `peer`'s QP of path `k`: the smaller MTU, that QP and the PSN, its
/// LID or GID; with `labelled` (`--paths`), path `k`'s flow label (both ends set the same one:
/// the data and its ACKs leave with one UDP source port, `model::paths`).
fn path_to(local: &Endpoint, peer: &Endpoint, k: u32, labelled: bool) -> Result<PathSpec, PerfError> {
    if peer.link_layer != local.link_layer {
        return Err(PerfError::BadPeer(format!("{}'s link layer {} differs from this side's {}", peer.host, peer.link_layer, local.link_layer)));
    }
    let remote_gid = match (&peer.gid, local.link_layer) {
        (Some(gid), LinkLayer::Ethernet) => Some(gid.octets()),
        (None, LinkLayer::Ethernet) => return Err(PerfError::BadPeer(format!("{} sent no GID for a RoCE hop", peer.host))),
        _ => None,
    };
    let mtu = local.mtu.min(peer.mtu).min(local.conditions.mtu.unwrap_or(u32::MAX));
    Ok(PathSpec {
        port: local.port,
        mtu: Mtu::at_most(mtu).to_verbs(),
        remote_qpn: peer.qpns.get(k as usize).copied().unwrap_or(0),
        remote_psn: peer.psn,
        remote_lid: peer.lid,
        remote_gid,
        sgid_index: local.gid_index.unwrap_or(0),
        max_rd_atomic: 1,
        sl: local.conditions.sl.unwrap_or(0),
        traffic_class: local.conditions.tclass.unwrap_or(0),
        flow_label: if labelled { crate::model::paths::flow_label(k) } else { 0 },
    })
}

fn rts(qp: &mut QueuePair, path: &PathSpec, psn: u32) -> Result<(), PerfError> {
    qp.to_rtr(path)?;
    qp.to_rts(&RtsParams { psn, max_rd_atomic: 1, ack_timeout_exp: ACK_TIMEOUT_EXP, retry_count: RETRY_COUNT })?;
    Ok(())
}
