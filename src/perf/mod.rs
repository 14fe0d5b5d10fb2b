//! Latency and bandwidth engines: the measured loops and what they need.
//!
//! Inside a measured loop: no allocation (sample and mark buffers are sized before), no
//! locks (flags are relaxed atomics), no logging or formatting, busy polling, pre-built
//! work requests, selective signaling, post lists; the latency loops read the TSC where its
//! rate is constant (`clock`), the bandwidth loops the monotonic clock once per batch.

pub mod bandwidth;
pub mod clock;
pub mod counters;
pub mod gid;
pub mod latency;
pub mod latency_probe;
pub mod live;
pub mod load;
pub mod loaded_latency;
mod local_end;
pub mod member;
pub mod member_counters;
pub mod member_loop;
pub mod member_report;
pub mod member_wire;
pub mod memory;
pub mod pattern;
pub mod preempt;
pub mod report_every;
pub mod session;
pub mod summary;
pub mod validate;

use crate::model::{Role, RunResult, TestKind};
use crate::probe::ProbeError;
use fabcheck_verbs::{self as verbs, VerbsError};
use session::Session;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Flags the control channel sets while a loop runs, and a bell for a side that has nothing to
/// poll (the passive end of a one-sided test) to sleep on until one of them is set.
#[derive(Debug, Default)]
pub struct Signals {
    /// Finish gracefully (the passive side of a test, or the end of a duration).
    stop: AtomicBool,
    /// Give up now (controller gone, Ctrl-C).
    abort: AtomicBool,
    bell: (Mutex<()>, Condvar),
    /// The running test's figures as they stand (`--report-every`), for the agent's reporter.
    pub live: live::Live,
}

impl Signals {
    pub fn new() -> Arc<Signals> {
        Arc::new(Signals::default())
    }

    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Asks the running loop to finish gracefully.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.ring();
    }

    /// Asks the running loop to give up now.
    pub fn request_abort(&self) {
        self.abort.store(true, Ordering::Relaxed);
        self.ring();
    }

    pub fn reset(&self) {
        self.stop.store(false, Ordering::Relaxed);
        self.abort.store(false, Ordering::Relaxed);
    }

    /// Sleeps until a stop or an abort is requested, or `timeout` passes. No lost wake-up: the
    /// flags are looked at under the bell's lock, and a request takes that lock after setting
    /// its flag.
    pub fn wait(&self, timeout: Duration) {
        let guard = self.bell.0.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopped() || self.aborted() {
            return;
        }
        drop(self.bell.1.wait_timeout(guard, timeout));
    }

    fn ring(&self) {
        let _guard = self.bell.0.lock().unwrap_or_else(|e| e.into_inner());
        self.bell.1.notify_all();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    #[error("{0}")]
    Verbs(#[from] VerbsError),
    #[error("{0}")]
    Probe(#[from] ProbeError),
    #[error("invalid test: {0}")]
    BadSpec(#[from] crate::model::SpecError),
    #[error("invalid peer endpoint: {0}")]
    BadPeer(String),
    #[error("{subject}: {message}")]
    PortNotReady { subject: String, message: String, remedy: String },
    #[error("{subject}: {why}")]
    NoGid { subject: String, why: String },
    #[error("{subject}: {why}")]
    NoCmAddress { subject: String, why: String },
    #[error("memory registration refused: {source}")]
    Memlock { source: VerbsError, limit: Option<u64> },
    #[error("no progress for {waited_ms} ms while {what}")]
    Stalled { what: &'static str, waited_ms: u64 },
    #[error("cannot pin the test to a CPU: {why}")]
    Cpu { why: String, allowed: String },
    #[error("aborted")]
    Aborted,
    /// `--mem cuda`: the CUDA driver cannot be loaded or used.
    #[error("--mem cuda: {0}")]
    NoCuda(VerbsError),
    #[error("--mem cuda: {0}")]
    GpuChoice(crate::gpu::choice::ChoiceError),
    /// Registering GPU memory failed; `causes` are the node's GPU findings that explain it.
    #[error("registering GPU memory of {gpu} failed: {source}")]
    GpuRegistration { source: VerbsError, gpu: String, causes: Vec<crate::gpu::choice::Cause> },
}

impl PerfError {
    fn from_reg(err: VerbsError) -> PerfError {
        match err.errno() {
            Some(libc::ENOMEM) | Some(libc::EPERM) | Some(libc::EAGAIN) => PerfError::Memlock { source: err, limit: crate::sys::os::memlock().0 },
            _ => PerfError::Verbs(err),
        }
    }

    /// The operator's next step.
    pub fn remedy(&self) -> String {
        match self {
            PerfError::Verbs(VerbsError::Completion { status, .. }) => completion_remedy(*status).1.into(),
            PerfError::Verbs(VerbsError::Library { .. }) => fabcheck_verbs::INSTALL_HINT.into(),
            PerfError::Verbs(_) => "run `fabcheck check` on this node".into(),
            PerfError::Probe(p) => p.remedy(),
            PerfError::BadSpec(_) | PerfError::BadPeer(_) => "check the flags; both nodes must run the same fabcheck version".into(),
            PerfError::PortNotReady { remedy, .. } => remedy.clone(),
            PerfError::NoGid { .. } => "assign an IPv4 address to the RoCE netdev, or pass --gid-index".into(),
            PerfError::NoCmAddress { .. } => {
                "give the port's netdev (RoCE) or IPoIB interface (InfiniBand) an IP address, e.g. `ip addr add 10.12.0.7/16 dev ib0`, or drop --cm to connect out of band".into()
            }
            PerfError::Memlock { .. } => crate::diagnose::memlock_remedy(),
            PerfError::Stalled { .. } => {
                "the peer stopped answering: check that its agent is alive, the link is up, and the GIDs route to each other".into()
            }
            PerfError::Cpu { allowed, .. } => format!("name CPUs this node lets fabcheck use ({allowed}) in --cpu A,B, or give --cpu none"),
            PerfError::Aborted => "the run was interrupted".into(),
            PerfError::NoCuda(VerbsError::CudaLibrary { .. }) => fabcheck_verbs::CUDA_INSTALL_HINT.into(),
            PerfError::NoCuda(_) => "check the GPU with `nvidia-smi` (driver loaded, GPU visible to this user, CUDA_VISIBLE_DEVICES), or run with --mem host".into(),
            PerfError::GpuChoice(_) => "name the GPU by its PCI address, --mem cuda:BUSID (`nvidia-smi --query-gpu=index,pci.bus_id --format=csv`), \
                 or by one of the CUDA ordinals listed (CUDA numbers GPUs fastest first and only those CUDA_VISIBLE_DEVICES leaves; \
                 nvidia-smi's index is PCI order), or use --mem cuda:auto"
                .into(),
            PerfError::GpuRegistration { causes, .. } => match causes.first() {
                Some(c) => c.remedy.into(),
                None => "run `fabcheck check` on this node for the GPU findings (gpu.peermem, pcie.acs, gpu.affinity); compare with --mem host".into(),
            },
        }
    }

    /// A cause a person can act on, beyond the verb and errno.
    pub fn cause(&self) -> String {
        match self {
            PerfError::Verbs(VerbsError::Completion { status, status_text, .. }) => {
                format!("{} ({status_text})", completion_remedy(*status).0)
            }
            PerfError::Memlock { source, limit } => format!(
                "{source}: RLIMIT_MEMLOCK is {}",
                limit.map_or("unlimited (so the adapter or kernel refused)".to_string(), |l| format!("{} KiB", l >> 10))
            ),
            PerfError::GpuRegistration { causes, .. } if !causes.is_empty() => {
                let found: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.id, c.text)).collect();
                format!("{self}; {}", found.join("; "))
            }
            other => other.to_string(),
        }
    }
}

/// Cause and remedy for a failed work completion.
pub fn completion_remedy(status: u32) -> (&'static str, &'static str) {
    use verbs::status as s;
    match status {
        s::RETRY_EXCEEDED => (
            "the peer stopped acknowledging: transport retries exhausted",
            "the link went down, the peer is gone, or packets do not route between the GIDs (wrong GID, VLAN, MTU): \
             check `fabcheck check` on both nodes",
        ),
        s::RNR_RETRY_EXCEEDED => ("the receiver had no receive buffer posted (RNR retries exhausted)", "the peer is overloaded or stopped; rerun"),
        s::FLUSHED => (
            "work was flushed: the queue pair entered the error state",
            "an earlier error or a link drop broke the connection; check the link and rerun",
        ),
        s::REMOTE_ACCESS => ("the peer refused the remote access (rkey or address)", "both nodes must run the same fabcheck version"),
        s::LOCAL_PROTECTION | s::LOCAL_QP_OPERATION => {
            ("a local queue or protection error", "on Soft-RoCE this often means the route to the peer broke; check the netdev and rerun")
        }
        _ => ("a work request failed", "run `fabcheck check` on both nodes"),
    }
}

/// Runs this side's part of the prepared test.
pub fn run(session: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let counters_before = counters::snapshot(std::path::Path::new("/sys"), &session.local.device, session.local.port);
    // RoCE: the bytes per priority around the test (`pair.qos`), outside the measured loop.
    let roce = session.local.link_layer == crate::model::LinkLayer::Ethernet;
    let traffic_before = roce.then(|| crate::probe::qos::traffic::snapshot(&session.local.device, session.local.port));
    // `--validate`: the receiving side's check (a one-sided test's after its run, below).
    let mut checker = validate::checker(&session.spec, &session.mr);
    let mut result = match (session.spec.test, session.spec.role) {
        (TestKind::SendLat, Role::Active) => latency::send_active(session, signals),
        (TestKind::SendLat, _) => latency::send_passive(session, signals),
        // GPU memory: the ping-pong of send latency, carried by RDMA writes with immediate.
        (TestKind::WriteLat, Role::Active) if memory::polls_completion(TestKind::WriteLat, session.local.conditions.mem) => {
            latency::send_active(session, signals)
        }
        (TestKind::WriteLat, _) if memory::polls_completion(TestKind::WriteLat, session.local.conditions.mem) => {
            latency::send_passive(session, signals)
        }
        (TestKind::WriteLat, Role::Active) => latency::write_active(session, signals),
        (TestKind::WriteLat, _) => latency::write_passive(session, signals),
        (TestKind::ReadLat, Role::Active) => latency::read_active(session, signals),
        (TestKind::AtomicLat, Role::Active) => latency::atomic_active(session, signals),
        (TestKind::LatUnderLoad, Role::Active) => loaded_latency::active(session, signals),
        (TestKind::LatUnderLoad, _) => loaded_latency::passive(session, signals),
        (TestKind::WriteBw | TestKind::ReadBw | TestKind::AtomicBw, Role::Passive) | (TestKind::ReadLat | TestKind::AtomicLat, _) => {
            idle_until_stop(signals)
        }
        (TestKind::SendBw, Role::Passive) => bandwidth::receive(session, signals, checker.as_mut()),
        (TestKind::WriteBw | TestKind::ReadBw | TestKind::SendBw | TestKind::AtomicBw, _) => bandwidth::send(session, signals),
    }?;
    // A one-sided test's receiver checks what the last message left, outside the timed loop.
    if let Some(c) = checker.as_mut().filter(|_| session.spec.test != TestKind::SendBw) {
        c.check_region(&session.mr, 0, None);
    }
    result.data = checker.map(|c| c.result());
    let counters_after = counters::snapshot(std::path::Path::new("/sys"), &session.local.device, session.local.port);
    result.counter_deltas = counters::deltas(&counters_before, &counters_after);
    result.prio_traffic = traffic_before.map(|before| {
        let after = crate::probe::qos::traffic::snapshot(&session.local.device, session.local.port);
        crate::probe::qos::traffic::window(&before, &after)
    });
    Ok(result)
}

/// The work request an atomic test posts.
fn atomic_op(op: crate::model::AtomicOp) -> verbs::SendOp {
    match op {
        crate::model::AtomicOp::FetchAdd => verbs::SendOp::FetchAdd,
        crate::model::AtomicOp::CmpSwap => verbs::SendOp::CmpSwap,
    }
}

/// The passive side of a one-sided test: the adapter does the work, we wait to be told. Sleeps
/// on the signals' bell, so it takes no CPU and no wake-ups while the test runs (perftest's
/// server blocks on its socket the same way); on Soft-RoCE the responder's work runs in softirq
/// on the CPUs this process would otherwise take. The 1 s timeout is only a safety net.
fn idle_until_stop(signals: &Signals) -> Result<RunResult, PerfError> {
    while !signals.stopped() {
        if signals.aborted() {
            return Err(PerfError::Aborted);
        }
        signals.wait(Duration::from_secs(1));
    }
    Ok(RunResult::default())
}

/// How long one sleep on a completion channel lasts at most (`--events`): a stop or an abort
/// is seen within it, and the stall limit is judged after each.
pub(crate) const EVENT_SLICE: Duration = Duration::from_millis(100);

/// `--events`: sleeps on `cq`'s channel until a completion is announced or a slice passes;
/// the stall limit and an abort are judged after a slice with none. Busy polling otherwise.
#[inline(always)]
pub(crate) fn wait_for_completion(
    cq: &mut verbs::CompletionQueue,
    guard: &mut StallGuard,
    signals: &Signals,
    what: &'static str,
) -> Result<(), PerfError> {
    if !cq.has_channel() {
        return guard.idle(signals, what);
    }
    if cq.wait_event(EVENT_SLICE)? {
        return Ok(());
    }
    guard.slept(signals, what)
}

/// Waits for one completion on `cq` into `wc` (busy polling, or on `--events`' channel where the
/// CQ has one): a failed completion is its verbs error; a stall or an abort is the guard's.
/// The latency loops' one wait (inlined: it is their hot path).
#[inline(always)]
pub(crate) fn wait_one(
    cq: &mut verbs::CompletionQueue,
    wc: &mut [verbs::WorkCompletion; 1],
    guard: &mut StallGuard,
    signals: &Signals,
    what: &'static str,
) -> Result<(), PerfError> {
    while !poll_one(cq, wc, guard)? {
        wait_for_completion(cq, guard, signals, what)?;
    }
    Ok(())
}

/// One poll of `cq` for one completion into `wc`: `true` when one came (the guard told of the
/// progress), `false` when none; a failed completion is its verbs error. The one place the
/// latency loops read a completion (inlined: it is their hot path).
#[inline(always)]
pub(crate) fn poll_one(cq: &mut verbs::CompletionQueue, wc: &mut [verbs::WorkCompletion; 1], guard: &mut StallGuard) -> Result<bool, PerfError> {
    if cq.poll(&mut wc[..])? != 1 {
        return Ok(false);
    }
    if !wc[0].is_success() {
        return Err(PerfError::Verbs(wc[0].to_error()));
    }
    guard.progress();
    Ok(true)
}

/// Tracks "no progress for too long" cheaply inside busy loops. An abort is checked every 1024
/// idle spins; the monotonic clock only after about 2^24 TSC ticks of idleness (5-20 ms at any
/// usual TSC rate; every 16384 spins where the loops do not use the TSC). Measured on Soft-RoCE
/// under qemu TCG, where `clock_gettime` is a 2.2 us system call: reading it every 1024 spins
/// cost 6 (send_lat) to 12 (write_lat) system calls per round trip on each side, each one a
/// window in which the answer waits unseen.
pub(crate) struct StallGuard {
    limit: Duration,
    idle_spins: u32,
    idle_since: Option<Instant>,
    tsc: bool,
    /// TSC at the first check of this idle stretch.
    tsc_mark: Option<u64>,
}

impl StallGuard {
    pub(crate) fn new(limit_ms: u64) -> Self {
        let tsc = clock::source() == clock::Source::Tsc;
        StallGuard { limit: Duration::from_millis(limit_ms), idle_spins: 0, idle_since: None, tsc, tsc_mark: None }
    }

    #[inline(always)]
    pub(crate) fn progress(&mut self) {
        self.idle_spins = 0;
        self.idle_since = None;
        self.tsc_mark = None;
    }

    /// After a sleep on a completion channel that saw nothing: errors once the limit passes or
    /// an abort arrives.
    pub(crate) fn slept(&mut self, signals: &Signals, what: &'static str) -> Result<(), PerfError> {
        if signals.aborted() {
            return Err(PerfError::Aborted);
        }
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() > self.limit {
            return Err(PerfError::Stalled { what, waited_ms: self.limit.as_millis() as u64 });
        }
        Ok(())
    }

    /// Call on an idle spin; errors once the limit passes or an abort arrives.
    #[inline(always)]
    pub(crate) fn idle(&mut self, signals: &Signals, what: &'static str) -> Result<(), PerfError> {
        self.idle_spins = self.idle_spins.wrapping_add(1);
        if self.idle_spins & 0x3ff != 0 {
            return Ok(());
        }
        if signals.aborted() {
            return Err(PerfError::Aborted);
        }
        if self.tsc {
            let now = verbs::tsc::cycles();
            match self.tsc_mark {
                None => {
                    self.tsc_mark = Some(now);
                    return Ok(());
                }
                Some(mark) if now.wrapping_sub(mark) < 1 << 24 => return Ok(()),
                Some(_) => {}
            }
        } else if self.idle_spins & 0x3fff != 0 {
            return Ok(());
        }
        // No sched_yield here: measured on Soft-RoCE, a yielding poller waits out a whole
        // scheduler slice (~3 ms) behind its busy-polling peer on a shared CPU.
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() > self.limit {
            return Err(PerfError::Stalled { what, waited_ms: self.limit.as_millis() as u64 });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_requested_before_the_wait_ends_it_at_once() {
        let signals = Signals::new();
        signals.request_stop();
        signals.wait(Duration::from_secs(600));
        assert!(signals.stopped() && !signals.aborted());
    }

    #[test]
    fn a_stop_from_another_thread_wakes_the_waiting_side() {
        let signals = Signals::new();
        let other = Arc::clone(&signals);
        let waiter = std::thread::spawn(move || {
            while !other.stopped() {
                other.wait(Duration::from_secs(600));
            }
        });
        signals.request_stop();
        waiter.join().unwrap();
    }

    #[test]
    fn an_abort_ends_the_passive_side_with_an_error() {
        let signals = Signals::new();
        let other = Arc::clone(&signals);
        let waiter = std::thread::spawn(move || idle_until_stop(&other));
        signals.request_abort();
        assert!(matches!(waiter.join().unwrap(), Err(PerfError::Aborted)));
        signals.reset();
        assert!(!signals.stopped() && !signals.aborted());
    }
}
