//! lat_under_load: latency while the link is full. Mirrors the measurement people make with
//! perftest by hand (it has no one tool for it): `ib_send_lat` run while `ib_write_bw` runs
//! between the same two ports, on the same traffic class.
//!
//! One latency QP (the probe: a send/receive ping-pong, as send_lat, on CQs of its own) and the
//! test's `qps` bandwidth QPs (the load: 64 KiB RDMA writes, ib_write_bw's default message) on
//! one connection's ports, traffic class and service level. The active side measures the probe
//! twice: idle first, then while the load streams. The load runs on its own thread, pinned
//! beside the probe's CPU, polling its own send CQ: the probe's loop stays send_lat's loop (busy
//! polling, pre-built WRs, a store per sample) and what it times is the fabric's queueing, not
//! the load's posting in between (interleaving both in one loop would put the time spent posting
//! bulk chains into the probe's round trips). `--events` does not apply: both loops poll.

use super::clock::LoopClock;
pub use super::latency_probe::LOAD_SIZE;
use super::latency_probe::{phases, region_half, Probe, Span};
use super::load::{self, Handshake, Moved, Shape};
use super::preempt::Gaps;
use super::session::Session;
use super::{poll_one, summary, wait_one, PerfError, Signals, StallGuard};
use crate::model::{LatencySummary, RunResult};
use fabcheck_verbs::{RemoteBuffer, SendList, SendOp, WorkCompletion, WrId};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The probe's completions: one every 16 sends, as send_lat.
const PROBE_CQ_MOD: u64 = 16;
/// Samples kept per phase in duration mode (8 MiB of u64); round trips beyond still run.
const SAMPLE_CAP: usize = 1_000_000;

/// One phase's samples, in loop-clock ticks, sized before the loop.
struct Samples {
    ticks: Vec<u64>,
    gaps: Gaps,
}

impl Samples {
    fn for_span(span: Span) -> Samples {
        let cap = match span {
            Span::Count(n) => usize::try_from(n).unwrap_or(SAMPLE_CAP).min(SAMPLE_CAP),
            Span::Time(_) => SAMPLE_CAP,
        };
        Samples { ticks: Vec::with_capacity(cap), gaps: Gaps::default() }
    }

    /// The phase's summary, one-way (half the round trip, as send_lat).
    fn summary(&self, ns_per_tick: f64, elapsed_ns: u64) -> Option<LatencySummary> {
        let ns: Vec<u64> = self.ticks.iter().map(|&t| (t as f64 * ns_per_tick).round() as u64).collect();
        summary::latency(&ns, true).map(|l| LatencySummary { preempt: self.gaps.summary(ns_per_tick, elapsed_ns), ..l })
    }
}

/// The probe's ping-pong, as [`super::latency::send_active`]'s loop, over one phase.
struct Pinger<'a> {
    probe: &'a mut Probe,
    send: SendList,
    sent: u64,
    wc: [WorkCompletion; 1],
    guard: StallGuard,
    clock: &'a LoopClock,
    signals: &'a Signals,
    live: Option<&'a super::live::Live>,
}

impl Pinger<'_> {
    /// `warmup` round trips unrecorded, then the span's; ends early when the load fails.
    fn phase(&mut self, warmup: u64, span: Span, out: &mut Samples, hand: Option<&Handshake>) -> Result<(), PerfError> {
        let start = Instant::now();
        let mut i = 0u64;
        loop {
            self.sent += 1;
            let signaled = self.sent.is_multiple_of(PROBE_CQ_MOD);
            self.send.set_signaled(0, signaled);
            let t0 = self.clock.ticks();
            self.send.post(&mut self.probe.qp, 1)?;
            wait_one(&mut self.probe.recv_cq, &mut self.wc, &mut self.guard, self.signals, "waiting for the peer's reply to the latency probe")?;
            let t1 = self.clock.ticks();
            let slot = self.wc[0].wr_id().slot as usize;
            if let Some(recv) = self.probe.recv.as_mut() {
                recv.post(&mut self.probe.qp, slot, 1)?;
            }
            if i >= warmup {
                out.gaps.start(t0);
                out.gaps.end(t1);
                if out.ticks.len() < out.ticks.capacity() {
                    out.ticks.push(t1.wrapping_sub(t0));
                }
                if let Some(live) = self.live {
                    live.sample(t1.wrapping_sub(t0));
                }
            }
            if signaled {
                wait_one(&mut self.probe.send_cq, &mut self.wc, &mut self.guard, self.signals, "waiting for a probe send completion")?;
            }
            i += 1;
            let over = match span {
                Span::Count(n) => i >= warmup.saturating_add(n),
                Span::Time(d) => i > warmup && i.is_multiple_of(64) && start.elapsed() >= d,
            };
            if over || hand.is_some_and(|h| h.state.load(Ordering::Relaxed) == load::FAILED) {
                return Ok(());
            }
            if self.signals.aborted() {
                return Err(PerfError::Aborted);
            }
        }
    }
}

/// The active side: the probe idle, then the load started on its own thread, and once it
/// flows the probe again. `lat` is the loaded phase, `idle_lat` the idle one, `bytes` and
/// `elapsed_ns` what the load moved.
pub(super) fn active(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let spec = s.spec.clone();
    let phases = phases(&spec);
    let half = region_half(&spec) as usize;
    let remote = s
        .remote
        .as_ref()
        .map(|r| RemoteBuffer { addr: r.addr, rkey: r.rkey, len: r.len })
        .ok_or_else(|| PerfError::BadPeer("not connected".into()))?;
    let shape = Shape {
        depth: u64::from(spec.tx_depth),
        cq_mod: u64::from(spec.cq_mod),
        post_list: u64::from(spec.post_list),
        size: u64::from(LOAD_SIZE),
        stall_timeout_ms: spec.stall_timeout_ms,
    };
    let mut lists: Vec<SendList> = (0..s.qps.len())
        .map(|q| {
            let mut list = SendList::new(spec.post_list as usize, SendOp::Write, &s.mr, half, LOAD_SIZE, Some(remote), false)?;
            for i in 0..spec.post_list as usize {
                list.set_wr_id(i, WrId::new(q as u32, i as u32));
            }
            Ok(list)
        })
        .collect::<Result<_, PerfError>>()?;
    let inline = s.inline;
    let probe_cpu = s.local.conditions.cpu;
    let before = s.unpinned();
    let probe = s.probe.as_mut().ok_or_else(|| PerfError::BadPeer("lat_under_load without its latency QP".into()))?;
    let inline = inline && probe.max_inline() >= spec.size;
    let send = SendList::new(1, SendOp::Send, &s.mr, half, spec.size, None, inline)?;
    let clock = LoopClock::start();
    signals.live.set_clock(clock.source());
    let live = signals.live.is_on().then_some(&signals.live);
    let mut pinger = Pinger {
        probe,
        send,
        sent: 0,
        wc: WorkCompletion::blank_array::<1>(),
        guard: StallGuard::new(spec.stall_timeout_ms),
        clock: &clock,
        signals,
        live,
    };
    let (mut idle, mut loaded) = (Samples::for_span(phases.idle), Samples::for_span(phases.loaded));
    let idle_start = Instant::now();
    pinger.phase(phases.warmup, phases.idle, &mut idle, None)?;
    let idle_ns = idle_start.elapsed().as_nanos() as u64;
    let hand = Handshake::default();
    let (qps, cq) = (&mut s.qps, &mut s.send_cq);
    let (moved, loaded_ns, probe_result): (Result<Moved, PerfError>, u64, Result<(), PerfError>) = std::thread::scope(|scope| {
        let hand = &hand;
        let worker = scope.spawn(move || {
            if let (Some(set), Some(cpu)) = (before, probe_cpu) {
                crate::sys::cpu::pin_beside(&set, usize::from(cpu));
            }
            load::stream(qps, cq, &mut lists, shape, hand, signals)
        });
        let waited = wait_for_flow(hand, signals, spec.stall_timeout_ms);
        let loaded_start = Instant::now();
        let probed = waited.and_then(|()| pinger.phase(phases.warmup, phases.loaded, &mut loaded, Some(hand)));
        let loaded_ns = loaded_start.elapsed().as_nanos() as u64;
        hand.stop.store(true, Ordering::Relaxed);
        let moved = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (moved, loaded_ns, probed)
    });
    // The load's failure is the cause (the probe only stopped for it).
    let moved = moved?;
    probe_result?;
    let ns_per_tick = clock.ns_per_tick();
    Ok(RunResult {
        iterations: loaded.ticks.len() as u64,
        bytes: moved.bytes,
        elapsed_ns: moved.elapsed_ns,
        lat: loaded.summary(ns_per_tick, loaded_ns),
        idle_lat: idle.summary(ns_per_tick, idle_ns).map(Box::new),
        ..RunResult::default()
    })
}

/// Sleeps until the load's first completion (or its failure, an abort, the stall limit).
fn wait_for_flow(hand: &Handshake, signals: &Signals, stall_timeout_ms: u64) -> Result<(), PerfError> {
    let start = Instant::now();
    loop {
        match hand.state.load(Ordering::Relaxed) {
            load::FLOWING => return Ok(()),
            // The load's own error is returned by its thread.
            load::FAILED => return Ok(()),
            _ => {}
        }
        if signals.aborted() {
            return Err(PerfError::Aborted);
        }
        if start.elapsed() > Duration::from_millis(stall_timeout_ms) {
            return Err(PerfError::Stalled { what: "waiting for the load's first write to complete", waited_ms: stall_timeout_ms });
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// The passive side: answers the probe's pings until told to stop; the load's writes land in
/// its region with no work of its own (as ib_write_bw's server).
pub(super) fn passive(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let half = region_half(&s.spec) as usize;
    let size = s.spec.size;
    let inline = s.inline;
    let stall = s.spec.stall_timeout_ms;
    let probe = s.probe.as_mut().ok_or_else(|| PerfError::BadPeer("lat_under_load without its latency QP".into()))?;
    let inline = inline && probe.max_inline() >= size;
    let mut send = SendList::new(1, SendOp::Send, &s.mr, half, size, None, inline)?;
    let mut wc = WorkCompletion::blank_array::<1>();
    let mut guard = StallGuard::new(stall);
    let start = Instant::now();
    let mut i = 0u64;
    'outer: loop {
        while !poll_one(&mut probe.recv_cq, &mut wc, &mut guard)? {
            if signals.stopped() {
                break 'outer;
            }
            // The probe pauses while the active side starts its load: no stall then, only
            // the stop (or an abort) ends the wait. The stall limit is the active side's.
            if signals.aborted() {
                return Err(PerfError::Aborted);
            }
        }
        let slot = wc[0].wr_id().slot as usize;
        i += 1;
        let signaled = i.is_multiple_of(PROBE_CQ_MOD);
        send.set_signaled(0, signaled);
        send.post(&mut probe.qp, 1)?;
        if let Some(recv) = probe.recv.as_mut() {
            recv.post(&mut probe.qp, slot, 1)?;
        }
        if signaled {
            wait_one(&mut probe.send_cq, &mut wc, &mut guard, signals, "waiting for a probe send completion")?;
        }
    }
    Ok(RunResult { iterations: i, elapsed_ns: start.elapsed().as_nanos() as u64, ..RunResult::default() })
}
