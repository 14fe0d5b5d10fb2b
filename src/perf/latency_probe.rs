//! lat_under_load's latency QP (the probe, `loaded_latency`): its queues, opened beside the
//! session's bandwidth QPs, and how the session sizes its region and refuses what the test
//! cannot do. Here, not in `loaded_latency`, so that `session` (which opens it) and the loop
//! (which drives it) both import it and not each other.

use super::PerfError;
use crate::model::{TestKind, TestSpec};
use fabcheck_verbs::{Access, CompletionQueue, Context, MemoryRegion, PathSpec, ProtectionDomain, QpConfig, QueuePair, RecvList, RtsParams};
use std::time::Duration;

/// The load's message: ib_write_bw's default size.
pub const LOAD_SIZE: u32 = 65536;
/// The probe's send queue (a completion every 16 sends, as send_lat) and its receives.
const PROBE_DEPTH: u32 = 64;
const PROBE_RECV: u32 = 64;
/// The idle phase of a timed run: a quarter of the duration, at most this (a 7-day burn-in
/// measures its idle latency for 30 s, not 42 hours).
const IDLE_MAX: Duration = Duration::from_secs(30);

/// The latency QP and its own completion queues.
pub struct Probe {
    pub(super) qp: QueuePair,
    pub(super) send_cq: CompletionQueue,
    pub(super) recv_cq: CompletionQueue,
    pub(super) recv: Option<RecvList>,
}

/// How long a phase lasts: round trips, or time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Count(u64),
    Time(Duration),
}

/// The probe's two phases, each after `warmup` unrecorded round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phases {
    pub warmup: u64,
    pub idle: Span,
    pub loaded: Span,
}

/// The phases of a spec: by count, `iters` each; timed, the idle phase a quarter of the
/// duration (at most 30 s) and the loaded phase the rest.
pub fn phases(spec: &TestSpec) -> Phases {
    match spec.duration_ms {
        None => Phases { warmup: spec.warmup, idle: Span::Count(spec.iters), loaded: Span::Count(spec.iters) },
        Some(ms) => {
            let total = Duration::from_millis(ms);
            let idle = (total / 4).min(IDLE_MAX);
            Phases { warmup: spec.warmup, idle: Span::Time(idle), loaded: Span::Time(total - idle) }
        }
    }
}

/// Bytes of each half of the test's region: lat_under_load's load writes 64 KiB messages
/// whatever size the probe pings with.
pub fn region_half(spec: &TestSpec) -> u64 {
    match spec.test {
        TestKind::LatUnderLoad => u64::from(spec.size.max(LOAD_SIZE)),
        _ => u64::from(spec.size),
    }
}

/// lat_under_load connects its two kinds of QP out of band: not through rdma_cm.
pub(super) fn refuse_cm(spec: &TestSpec, cm: bool) -> Result<(), PerfError> {
    match spec.test == TestKind::LatUnderLoad && cm {
        true => Err(PerfError::BadPeer("lat_under_load connects its two kinds of QP out of band: run it without --cm".into())),
        false => Ok(()),
    }
}

/// lat_under_load's probe, made beside the session's (load) QPs on CQs of its own and moved to
/// INIT on `port` and P_Key index (its QP number is the endpoint's last); `None` for every
/// other test.
pub(super) fn open_probe(
    ctx: &Context,
    pd: &ProtectionDomain,
    spec: &TestSpec,
    config: QpConfig,
    (port, pkey_index): (u8, u16),
) -> Result<Option<Probe>, PerfError> {
    if spec.test != TestKind::LatUnderLoad {
        return Ok(None);
    }
    let send_cq = CompletionQueue::new(ctx, PROBE_DEPTH + 16)?;
    let recv_cq = CompletionQueue::new(ctx, PROBE_RECV + 16)?;
    let config = QpConfig { max_send_wr: PROBE_DEPTH, max_recv_wr: PROBE_RECV, ..config };
    let qp = match QueuePair::new_rc(pd, &send_cq, &recv_cq, config) {
        Ok(qp) => qp,
        // As the session's QPs: a provider that cannot inline this much gets a QP without.
        Err(_) if config.max_inline_data > 0 => QueuePair::new_rc(pd, &send_cq, &recv_cq, QpConfig { max_inline_data: 0, ..config })?,
        Err(e) => return Err(e.into()),
    };
    let mut probe = Probe { qp, send_cq, recv_cq, recv: None };
    probe.qp.to_init(port, pkey_index, Access::NONE)?;
    Ok(Some(probe))
}

impl Probe {
    pub(super) fn qp_num(&self) -> u32 {
        self.qp.qp_num()
    }

    pub(super) fn max_inline(&self) -> u32 {
        self.qp.max_inline()
    }

    /// To RTS on the load's path (same port, GIDs, traffic class and SL), towards the peer's
    /// probe; then its receives are posted into the region's first `size` bytes.
    pub(super) fn connect(&mut self, path: PathSpec, rts: &RtsParams, mr: &MemoryRegion, size: u32) -> Result<(), PerfError> {
        self.qp.to_rtr(&path)?;
        self.qp.to_rts(rts)?;
        let mut list = RecvList::new(PROBE_RECV as usize, mr, 0, size, 0)?;
        list.post(&mut self.qp, 0, PROBE_RECV as usize)?;
        self.recv = Some(list);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AtomicOp, Role};

    fn spec(duration_ms: Option<u64>) -> TestSpec {
        TestSpec {
            test: TestKind::LatUnderLoad,
            paths: false,
            role: Role::Active,
            size: 2,
            iters: 1000,
            warmup: 100,
            duration_ms,
            qps: 2,
            tx_depth: 128,
            cq_mod: 64,
            post_list: 16,
            stall_timeout_ms: 5000,
            atomic: AtomicOp::FetchAdd,
            inline: None,
            events: false,
            report_every_ms: None,
            validate_seed: None,
        }
    }

    #[test]
    fn by_count_both_phases_take_the_iterations() {
        let p = phases(&spec(None));
        assert_eq!(p, Phases { warmup: 100, idle: Span::Count(1000), loaded: Span::Count(1000) });
    }

    /// Timed: a quarter idle, at most 30 s; the rest under load, so the two add up to -D.
    #[test]
    fn timed_phases_add_up_to_the_duration() {
        for (ms, idle) in [(10_000, 2_500), (1, 0), (3_600_000, 30_000), (7 * 24 * 3_600_000, 30_000)] {
            let p = phases(&spec(Some(ms)));
            let (Span::Time(i), Span::Time(l)) = (p.idle, p.loaded) else { panic!("{p:?}") };
            assert_eq!((i.as_millis() as u64, (i + l).as_millis() as u64), (idle, ms), "-D {ms} ms");
        }
    }

    #[test]
    fn the_region_holds_the_load_s_messages() {
        assert_eq!(region_half(&spec(None)), u64::from(LOAD_SIZE));
        let big = TestSpec { size: 1 << 20, ..spec(None) };
        assert_eq!(region_half(&big), 1 << 20);
        let other = TestSpec { test: TestKind::SendLat, qps: 1, ..spec(None) };
        assert_eq!(region_half(&other), 2);
        assert!(spec(None).validate().is_ok(), "lat_under_load's qps are its load's");
    }
}
