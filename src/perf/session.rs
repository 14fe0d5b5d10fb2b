//! One side's verbs resources for one test: opened on `prepare`, connected on `connect`,
//! released on drop (QPs first, then memory, CQs, PD, device).

use super::{gid, local_end, memory, PerfError};
use crate::model::CmRole;
use crate::model::{Conditions, Endpoint, MemChoice, Role, Target, TestKind, TestSpec};
use crate::port::{LinkLayer, Mtu};
use crate::probe;
use crate::sys::cpu;
use fabcheck_verbs::{
    Access, CmChannel, CmEvent, CmId, CompletionChannel, CompletionQueue, Context, MemoryRegion, PathSpec, ProtectionDomain, QpConfig, QpMemory,
    QueuePair, RecvList, RtsParams,
};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// Receive WRs kept posted per QP for send tests.
pub const RX_DEPTH: u32 = 512;
/// Inline data asked for latency tests (providers that cannot inline get a retry without).
pub const INLINE_WANTED: u32 = 220;

/// One side's resources for one test. Its fields are private to `perf`: nobody outside can
/// reorder, take or drop a part while a measured loop uses it (`tests/ui/session_fields.rs`,
/// run by `cargo test --test compile_fail`).
pub struct Session {
    // Every verbs object holds what it depends on (Arc), so drop order is not load-bearing;
    // QPs still go first so their flushes do not race the CQs' teardown logs.
    pub(super) qps: Vec<QueuePair>,
    pub(super) recv_lists: Vec<RecvList>,
    pub(super) mr: MemoryRegion,
    pub(super) send_cq: CompletionQueue,
    pub(super) recv_cq: CompletionQueue,
    pub(super) pd: ProtectionDomain,
    pub(super) spec: TestSpec,
    pub(super) local: Endpoint,
    pub(super) remote: Option<Endpoint>,
    /// Whether sends of `spec.size` can be inline on this QP.
    pub(super) inline: bool,
    /// Receive WRs each QP was created for (send tests keep this many posted).
    pub(super) recv_depth: u32,
    qp_config: QpConfig,
    /// rdma_cm state (its ids are also held by the QPs and the context made on them).
    cm: Option<CmState>,
    /// The thread's CPU affinity before the session pinned it, put back on drop.
    unpin: Option<nix::sched::CpuSet>,
    /// lat_under_load's latency QP, on CQs of its own (`super::loaded_latency`).
    pub(super) probe: Option<super::latency_probe::Probe>,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(set) = &self.unpin {
            cpu::restore(set);
        }
    }
}

struct CmState {
    role: CmRole,
    ip: IpAddr,
    ids: Vec<CmId>,
    channel: CmChannel,
}

/// The local ACK timeout exponent: 4.096 us * 2^14 = 67 ms per try; with [`RETRY_COUNT`]
/// tries a dead peer shows in ~0.5 s.
const ACK_TIMEOUT_EXP: u8 = 14;
/// Transport retries before a work request fails (the most IBTA allows).
const RETRY_COUNT: u8 = 7;

/// How long each rdma_cm step may take.
const CM_STEP: Duration = Duration::from_secs(10);

/// Access the local buffer needs for this test and role: no more.
pub fn buffer_access(test: TestKind, role: Role) -> Access {
    let serves = matches!(role, Role::Passive | Role::Both);
    let acts = matches!(role, Role::Active | Role::Both);
    match test {
        TestKind::SendLat | TestKind::SendBw => Access::LOCAL_WRITE,
        TestKind::WriteLat => Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        TestKind::WriteBw if serves => Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        TestKind::WriteBw => Access::NONE,
        TestKind::ReadLat | TestKind::ReadBw => {
            let mut a = Access::NONE;
            if serves {
                a = a | Access::REMOTE_READ;
            }
            if acts {
                a = a | Access::LOCAL_WRITE;
            }
            a
        }
        // The target lends its word to atomics (the verbs spec asks LOCAL_WRITE with
        // REMOTE_ATOMIC); the initiator's buffer takes the value fetched back.
        TestKind::AtomicLat | TestKind::AtomicBw if serves => Access::LOCAL_WRITE | Access::REMOTE_ATOMIC,
        TestKind::AtomicLat | TestKind::AtomicBw => Access::LOCAL_WRITE,
        // The probe receives (LOCAL_WRITE); the load's target takes its writes.
        TestKind::LatUnderLoad if serves => Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        TestKind::LatUnderLoad => Access::LOCAL_WRITE,
    }
}

/// Remote access the QP grants its peer.
fn qp_access(test: TestKind, role: Role) -> Access {
    let serves = matches!(role, Role::Passive | Role::Both);
    match test {
        TestKind::WriteLat => Access::REMOTE_WRITE,
        TestKind::WriteBw | TestKind::LatUnderLoad if serves => Access::REMOTE_WRITE,
        TestKind::ReadLat | TestKind::ReadBw if serves => Access::REMOTE_READ,
        TestKind::AtomicLat | TestKind::AtomicBw if serves => Access::REMOTE_ATOMIC,
        _ => Access::NONE,
    }
}

impl Session {
    /// This side's endpoint (what the peer needs to connect).
    pub fn local(&self) -> &Endpoint {
        &self.local
    }

    /// The thread's CPU affinity before the session pinned it (lat_under_load's load thread
    /// runs beside the probe's CPU within it).
    pub(super) fn unpinned(&self) -> Option<nix::sched::CpuSet> {
        self.unpin
    }

    /// Opens the device and port, checks the port can carry traffic, and builds everything
    /// the test needs. Errors name the cause (port INIT, no routable GID, memlock...).
    pub fn open(target: &Target, spec: &TestSpec, host: &str) -> Result<Session, PerfError> {
        spec.validate()?;
        target.conditions.validate()?;
        memory::preflight(target.conditions.mem)?;
        let mut conditions = target.conditions;
        let inv = probe::test_inventory(target.device.as_deref())?;
        let (device, port) = local_end::pick_port(&inv, target)?;
        local_end::default_tclass(device, port, &mut conditions);
        // Pinned before anything is allocated, so buffers and queues land on the loop's NUMA node.
        let (pinned, unpin) = place(&device.name, &conditions, target.cpu_slot)?;
        conditions.cpu = pinned;
        local_end::must_be_active(device, port)?;
        let chosen = local_end::choose_gid(device, port, target.gid_index)?;
        // Every current provider takes messages of 1 GiB and more; the protocol caps sizes at
        // 64 MiB (TestSpec::validate), so no per-device size check is needed here.
        let size = super::latency_probe::region_half(spec);
        let subject = format!("{}/{}", device.name, port.port);
        super::latency_probe::refuse_cm(spec, target.cm.is_some())?;
        let cm = match target.cm {
            None => None,
            Some(role) => Some(cm_bind(role, port, chosen.map(|g| g.gid), &subject, spec.qps, conditions.tclass)?),
        };
        let ctx = match &cm {
            None => Context::open(&device.name)?,
            Some(state) => {
                let ctx = state.ids[0].context().ok_or_else(|| PerfError::BadPeer("rdma_cm bound to no device".into()))?;
                if ctx.name() != device.name {
                    return Err(PerfError::NoGid {
                        subject,
                        why: format!("rdma_cm maps address {} to {}, not {}", state.ip, ctx.name(), device.name),
                    });
                }
                ctx
            }
        };
        let limits = ctx.query_device()?;
        // Outstanding RDMA reads: at most 16 (perftest's figure), and never above what this
        // adapter takes as initiator or as responder (modify_qp fails with EINVAL beyond it).
        let max_rd_atomic = 16.min(limits.max_qp_rd_atom).min(limits.max_qp_init_rd_atom).max(1) as u8;
        let pd = ProtectionDomain::new(&ctx)?;
        let qps_n = spec.qps;
        let send_depth = spec.tx_depth;
        let recv_depth = match spec.test {
            TestKind::SendLat => 64,
            TestKind::WriteLat if memory::polls_completion(spec.test, conditions.mem) => 64,
            TestKind::SendBw => RX_DEPTH,
            _ => 1,
        };
        // --events: each CQ its own completion channel (a wait takes whatever its channel
        // holds), armed before any traffic.
        let (send_cq, recv_cq) = if spec.events {
            let mut send_cq = CompletionQueue::with_channel(&ctx, send_depth * qps_n + 16, &CompletionChannel::new(&ctx)?)?;
            let mut recv_cq = CompletionQueue::with_channel(&ctx, recv_depth * qps_n + 16, &CompletionChannel::new(&ctx)?)?;
            send_cq.arm()?;
            recv_cq.arm()?;
            (send_cq, recv_cq)
        } else {
            (CompletionQueue::new(&ctx, send_depth * qps_n + 16)?, CompletionQueue::new(&ctx, recv_depth * qps_n + 16)?)
        };
        // Two halves: [0, size) receives (what the peer sends or writes), [size, 2*size) sends.
        let buffer_len = (size as usize) * 2;
        let access = buffer_access(spec.test, spec.role);
        // Where the buffers come from and how they are registered: memory::register.
        let registered = memory::register(&pd, &device.name, buffer_len, access, conditions.mem, conditions.relaxed_ordering)?;
        conditions.relaxed_ordering = registered.relaxed_ordering;
        if let Some(gpu) = &registered.gpu {
            conditions.mem = MemChoice::Cuda(gpu.ordinal);
        }
        let mr = registered.region;
        // `--validate`: the pattern in what this side sends or lends, before the peer can start.
        super::validate::fill(spec, &mr);
        // Inline copies the payload with the CPU: never from GPU memory, never for what the
        // adapter writes back (reads, atomics); `--inline N` asks N bytes (0: off).
        let inline_wanted = spec.inline.unwrap_or(INLINE_WANTED);
        let moves_out = !matches!(spec.test, TestKind::ReadLat | TestKind::ReadBw) && !spec.test.is_atomic();
        let want_inline = moves_out && inline_wanted > 0 && spec.size <= inline_wanted && mr.host_visible();
        let mut qps = Vec::new();
        let mut inline = want_inline;
        // GPU memory: QPs that never scatter received data into a CQE (mlx5: libmlx5 would copy
        // it to the GPU address with the CPU; see fabcheck_verbs' mlx5.rs).
        let memory = if mr.host_visible() { QpMemory::Host } else { QpMemory::Device };
        let qp_config =
            QpConfig { max_send_wr: send_depth, max_recv_wr: recv_depth, max_inline_data: if inline { inline_wanted } else { 0 }, memory };
        // With rdma_cm the QPs are made when the connection is (Session::connect).
        for _ in 0..if cm.is_some() { 0 } else { qps_n } {
            let config =
                QpConfig { max_send_wr: send_depth, max_recv_wr: recv_depth, max_inline_data: if inline { inline_wanted } else { 0 }, memory };
            let qp = match QueuePair::new_rc(&pd, &send_cq, &recv_cq, config) {
                Ok(qp) => qp,
                Err(_) if inline => {
                    inline = false;
                    QueuePair::new_rc(&pd, &send_cq, &recv_cq, QpConfig { max_inline_data: 0, ..config })?
                }
                Err(e) => return Err(e.into()),
            };
            qps.push(qp);
        }
        inline = inline && qps.iter().all(|q| q.max_inline() >= spec.size);
        let port_num = port.port as u8;
        for qp in &mut qps {
            qp.to_init(port_num, conditions.pkey_index.unwrap_or(0), qp_access(spec.test, spec.role))?;
        }
        let probe = super::latency_probe::open_probe(&ctx, &pd, spec, qp_config, (port_num, conditions.pkey_index.unwrap_or(0)))?;
        let local = local_end::endpoint(host, device, port, chosen, conditions);
        let local = Endpoint {
            qpns: qps.iter().map(|q| q.qp_num()).chain(probe.as_ref().map(|p| p.qp_num())).collect(),
            addr: mr.addr(),
            rkey: mr.rkey(),
            len: size,
            max_rd_atomic,
            cm_addr: cm.as_ref().filter(|c| c.role == CmRole::Listen).map(|c| SocketAddr::new(c.ip, c.ids[0].port())),
            // On GPU memory the data crosses the GPU's PCIe link too: the lower of the two.
            pcie_gbps: lower(local.pcie_gbps, registered.gpu.as_ref().and_then(|g| g.pcie_gbps)),
            gpu: registered.gpu.map(Box::new),
            ..local
        };
        // The bound id stays: it anchors librdmacm's device context, which the PD lives on.
        Ok(Session {
            qps,
            recv_lists: Vec::new(),
            mr,
            send_cq,
            recv_cq,
            pd,
            spec: spec.clone(),
            local,
            remote: None,
            inline,
            recv_depth,
            qp_config,
            cm,
            unpin,
            probe,
        })
    }

    /// Moves every QP to RTS towards the peer and pre-posts receives where the test needs them.
    pub fn connect(&mut self, peer: &Endpoint) -> Result<(), PerfError> {
        if self.cm.is_some() {
            self.connect_cm(peer)?;
            self.remote = Some(peer.clone());
            return self.post_initial_receives();
        }
        if peer.qpns.len() != self.local.qpns.len() {
            return Err(PerfError::BadPeer(format!("peer has {} QPs, this side {}", peer.qpns.len(), self.local.qpns.len())));
        }
        if peer.link_layer != self.local.link_layer {
            return Err(PerfError::BadPeer(format!("peer link layer {} differs from this side's {}", peer.link_layer, self.local.link_layer)));
        }
        let remote_gid = match (&peer.gid, self.local.link_layer) {
            (Some(gid), LinkLayer::Ethernet) => Some(gid.octets()),
            (None, LinkLayer::Ethernet) => return Err(PerfError::BadPeer("peer sent no GID for a RoCE connection".into())),
            _ => None,
        };
        // perftest's -m caps it; the ports' active MTUs bound it (a larger one is never asked).
        let mtu = self.local.mtu.min(peer.mtu).min(self.local.conditions.mtu.unwrap_or(u32::MAX));
        let mtu_enum = Mtu::at_most(mtu).to_verbs();
        let rd_atomic = self.local.max_rd_atomic.min(peer.max_rd_atomic).max(1);
        if self.spec.paths && self.local.link_layer != LinkLayer::Ethernet {
            return Err(PerfError::BadPeer(format!(
                "--paths spreads RoCE flows by UDP source port; this is {}: run without --paths",
                self.local.link_layer
            )));
        }
        let last = self.qps.len().saturating_sub(1);
        for (i, qp) in self.qps.iter_mut().enumerate() {
            let path = PathSpec {
                port: self.local.port,
                mtu: mtu_enum,
                remote_qpn: peer.qpns[i],
                remote_psn: peer.psn,
                remote_lid: peer.lid,
                remote_gid,
                sgid_index: self.local.gid_index.unwrap_or(0),
                max_rd_atomic: rd_atomic,
                sl: self.local.conditions.sl.unwrap_or(0),
                traffic_class: self.local.conditions.tclass.unwrap_or(0),
                // --paths: QP i's own label, the same on both ends (model::paths).
                flow_label: if self.spec.paths { crate::model::paths::flow_label(i as u32) } else { 0 },
            };
            qp.to_rtr(&path)?;
            qp.to_rts(&RtsParams { psn: self.local.psn, max_rd_atomic: rd_atomic, ack_timeout_exp: ACK_TIMEOUT_EXP, retry_count: RETRY_COUNT })?;
            // lat_under_load: the probe on the same path (traffic class, SL), to the peer's probe.
            if let (Some(probe), true, Some(&qpn)) = (self.probe.as_mut(), i == last, peer.qpns.last()) {
                let rts = RtsParams { psn: self.local.psn, max_rd_atomic: rd_atomic, ack_timeout_exp: ACK_TIMEOUT_EXP, retry_count: RETRY_COUNT };
                probe.connect(PathSpec { remote_qpn: qpn, ..path }, &rts, &self.mr, self.spec.size)?;
            }
        }
        self.remote = Some(peer.clone());
        self.post_initial_receives()
    }

    /// Connects every QP through librdmacm: the connector resolves the listener's address and
    /// route and connects; the listener accepts each request. librdmacm drives the QP states.
    fn connect_cm(&mut self, peer: &Endpoint) -> Result<(), PerfError> {
        let rd_atomic = self.local.max_rd_atomic.min(peer.max_rd_atomic).max(1);
        let Some(state) = self.cm.as_mut() else { return Ok(()) };
        let n = self.spec.qps as usize;
        match state.role {
            CmRole::Connect => {
                let dst = peer.cm_addr.ok_or_else(|| PerfError::BadPeer("the listener sent no rdma_cm address".into()))?;
                for _ in 0..n {
                    let mut id = CmId::new(&state.channel)?;
                    if let Some(tos) = self.local.conditions.tclass {
                        id.set_tos(tos)?;
                    }
                    id.bind(SocketAddr::new(state.ip, 0))?;
                    id.resolve(dst, CM_STEP)?;
                    let qp = id.create_qp(&self.pd, &self.send_cq, &self.recv_cq, self.qp_config)?;
                    id.connect(rd_atomic, CM_STEP)?;
                    self.qps.push(qp);
                    state.ids.push(id);
                }
            }
            CmRole::Listen => {
                for _ in 0..n {
                    let mut id = state
                        .channel
                        .expect(CmEvent::ConnectRequest, CM_STEP)?
                        .ok_or_else(|| PerfError::BadPeer("connect request without an id".into()))?;
                    let qp = id.create_qp(&self.pd, &self.send_cq, &self.recv_cq, self.qp_config)?;
                    id.accept(rd_atomic, CM_STEP)?;
                    self.qps.push(qp);
                    state.ids.push(id);
                }
            }
        }
        self.inline = self.inline && self.qps.iter().all(|q| q.max_inline() >= self.spec.size);
        Ok(())
    }

    fn post_initial_receives(&mut self) -> Result<(), PerfError> {
        let needs_recv = match self.spec.test {
            TestKind::SendLat => true,
            TestKind::WriteLat => memory::polls_completion(self.spec.test, self.local.conditions.mem),
            TestKind::SendBw => matches!(self.spec.role, Role::Passive | Role::Both),
            _ => false,
        };
        if needs_recv {
            let depth = self.recv_depth;
            for (q, qp) in self.qps.iter_mut().enumerate() {
                let mut list = RecvList::new(depth as usize, &self.mr, 0, self.spec.size, q as u32)?;
                list.post(qp, 0, depth as usize)?;
                self.recv_lists.push(list);
            }
        }
        Ok(())
    }
}

/// Binds an rdma_cm id to the port's address (see [`gid::cm_address`]), so that librdmacm
/// opens the same device; a listener starts listening.
fn cm_bind(
    role: CmRole,
    port: &probe::Port,
    chosen_gid: Option<std::net::Ipv6Addr>,
    subject: &str,
    backlog: u32,
    tos: Option<u8>,
) -> Result<CmState, PerfError> {
    let addrs = port.netdev.as_deref().map(|n| (n, crate::sys::io::interface_addresses(n)));
    let ipoib = addrs.as_ref().map(|(n, a)| (*n, a.as_slice()));
    let ip = gid::cm_address(port.link_layer, chosen_gid, ipoib)
        .map_err(|why| PerfError::NoCmAddress { subject: subject.into(), why: why.to_string() })?;
    let channel = CmChannel::new()?;
    let mut id = CmId::new(&channel)?;
    if let Some(tos) = tos {
        // Ids a listener accepts take its type of service.
        id.set_tos(tos)?;
    }
    id.bind(SocketAddr::new(ip, 0))?;
    if role == CmRole::Listen {
        id.listen(backlog.max(1) as i32)?;
    }
    Ok(CmState { role, ip, ids: vec![id], channel })
}

/// Pins the calling thread (the one that will run the measured loop) as the conditions ask: a
/// named CPU must be usable (else the test fails, naming the CPUs there are); an automatic
/// choice is best effort. Returns the CPU pinned to and the affinity to restore.
fn place(device: &str, conditions: &Conditions, slot: Option<u8>) -> Result<(Option<u16>, Option<nix::sched::CpuSet>), PerfError> {
    let want = match (conditions.cpu, slot) {
        (Some(n), _) => Some(n as usize),
        (None, Some(slot)) => cpu::choose(&cpu::device_local(Path::new("/sys"), device), &cpu::allowed(), usize::from(slot)),
        (None, None) => None,
    };
    let Some(want) = want else { return Ok((None, None)) };
    let before = cpu::current();
    match cpu::pin(want) {
        Ok(()) => Ok((u16::try_from(want).ok(), before)),
        Err(why) if conditions.cpu.is_some() => Err(PerfError::Cpu { why: why.to_string(), allowed: cpu::format_cpulist(&cpu::allowed()) }),
        Err(why) => {
            tracing::debug!(%why, "not pinned");
            Ok((None, None))
        }
    }
}

/// The lower of two known figures, or the one known.
fn lower(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
