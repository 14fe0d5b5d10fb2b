//! Ping-pong latency: send/recv, RDMA write polled on memory, and RDMA read.
//!
//! Each measured iteration is one round trip, timed from just before the post to just after
//! the answer is seen. Inside the loop a sample is two clock reads (the TSC where it ticks at
//! a constant rate, as perftest's `get_cycles`; see [`super::clock`]) and one store of their
//! difference into a buffer sized before the loop; conversion to nanoseconds and the summary
//! (HDR histogram) come after it. Send and write latency are reported one-way (half the round
//! trip), read latency as the full round trip, as perftest reports them.

use super::clock::LoopClock;
use super::preempt::Gaps;
use super::session::Session;
use super::summary;
use super::{poll_one, wait_one, PerfError, Signals, StallGuard};
use crate::model::{LatencySummary, RunResult, TestKind};
use fabcheck_verbs::{RemoteBuffer, SendList, SendOp, WorkCompletion};
use std::time::{Duration, Instant};

/// Samples kept in duration mode (16 MiB of u64); iterations beyond still run, unrecorded.
const DURATION_SAMPLE_CAP: usize = 2_000_000;

struct Plan<'l> {
    /// `--report-every`: each measured round trip also counted here, for the reporter.
    live: Option<&'l super::live::Live>,
    total: u64,
    warmup: u64,
    duration: Option<Duration>,
    samples: Vec<u64>,
    /// Gaps between iterations (preemption, see [`super::preempt`]).
    gaps: Gaps,
}

fn plan<'l>(session: &Session, signals: &'l Signals) -> Plan<'l> {
    let spec = &session.spec;
    let (total, cap) = match spec.duration_ms {
        Some(_) => (u64::MAX, DURATION_SAMPLE_CAP),
        None => (spec.warmup + spec.iters, spec.iters as usize),
    };
    Plan {
        live: signals.live.is_on().then_some(&signals.live),
        total,
        warmup: spec.warmup,
        duration: spec.duration_ms.map(Duration::from_millis),
        samples: Vec::with_capacity(cap),
        gaps: Gaps::default(),
    }
}

/// After the loop: samples from ticks to nanoseconds, then the summary.
fn finish(test: TestKind, mut plan: Plan<'_>, clock: &LoopClock) -> RunResult {
    let halve = !test.full_round_trip();
    let ns_per_tick = clock.ns_per_tick();
    if ns_per_tick != 1.0 {
        for s in &mut plan.samples {
            *s = (*s as f64 * ns_per_tick).round() as u64;
        }
    }
    let elapsed_ns = clock.started().elapsed().as_nanos() as u64;
    let lat = summary::latency(&plan.samples, halve).map(|l| LatencySummary { preempt: plan.gaps.summary(ns_per_tick, elapsed_ns), ..l });
    RunResult {
        paths: Vec::new(),
        iterations: plan.samples.len() as u64,
        bytes: 0,
        elapsed_ns,
        lat,
        peak_gbps: None,
        counter_deltas: Vec::new(),
        prio_traffic: None,
        data: None,
        idle_lat: None,
    }
}

/// Stores one round trip, in ticks (a store into the pre-sized buffer), and counts the gap
/// since the previous one's end when it is a preemption's (a compare and two adds).
#[inline(always)]
fn record(plan: &mut Plan<'_>, i: u64, t0: u64, t1: u64) {
    plan.gaps.start(t0);
    plan.gaps.end(t1);
    if i >= plan.warmup {
        if plan.samples.len() < plan.samples.capacity() {
            plan.samples.push(t1.wrapping_sub(t0));
        }
        if let Some(live) = plan.live {
            live.sample(t1.wrapping_sub(t0));
        }
    }
}

/// Duration mode: the time is up, and at least one sample past the warm-up was taken (a
/// warm-up that outlasts the duration on a starved host must not end the test with nothing).
/// The monotonic clock is read every 64 iterations only, so it stays out of the loop's cost.
#[inline(always)]
fn over(plan: &Plan<'_>, i: u64, clock: &LoopClock) -> bool {
    matches!(plan.duration, Some(d) if i > plan.warmup && i.is_multiple_of(64) && clock.started().elapsed() >= d)
}

/// After iteration `i` of an active loop: counts it, then says whether the loop is over
/// (duration mode, [`over`]) or ends it (a signal, or the controller's stop).
#[inline(always)]
fn next(plan: &Plan<'_>, i: &mut u64, clock: &LoopClock, signals: &Signals) -> Result<bool, PerfError> {
    *i += 1;
    if over(plan, *i, clock) {
        return Ok(true);
    }
    if signals.aborted() {
        return Err(PerfError::Aborted);
    }
    Ok(false)
}

fn remote(session: &Session) -> Result<RemoteBuffer, PerfError> {
    let r = session.remote.as_ref().ok_or_else(|| PerfError::BadPeer("not connected".into()))?;
    Ok(RemoteBuffer { addr: r.addr, rkey: r.rkey, len: r.len })
}

/// What carries a ping-pong: a send, or (write latency on GPU memory, see
/// [`super::memory::polls_completion`]) an RDMA write with immediate into the peer's buffer,
/// whose receive completion the peer waits on as it would on a send's.
fn ping_op(s: &Session) -> Result<(SendOp, Option<RemoteBuffer>), PerfError> {
    match s.spec.test {
        TestKind::WriteLat => Ok((SendOp::WriteImm, Some(remote(s)?))),
        _ => Ok((SendOp::Send, None)),
    }
}

pub fn send_active(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let size = s.spec.size;
    let cq_mod = u64::from(s.spec.cq_mod);
    let mut plan = plan(s, signals);
    let (op, to) = ping_op(s)?;
    let mut send = SendList::new(1, op, &s.mr, size as usize, size, to, s.inline)?;
    let mut wc = WorkCompletion::blank_array::<1>();
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    let (qp, recv) = (&mut s.qps[0], &mut s.recv_lists[0]);
    let clock = LoopClock::start();
    signals.live.set_clock(clock.source());
    let mut i = 0;
    while i < plan.total {
        let signaled = (i + 1) % cq_mod == 0;
        send.set_signaled(0, signaled);
        let t0 = clock.ticks();
        send.post(qp, 1)?;
        wait_one(&mut s.recv_cq, &mut wc, &mut guard, signals, "waiting for the peer's reply")?;
        let t1 = clock.ticks();
        recv.post(qp, wc[0].wr_id().slot as usize, 1)?;
        record(&mut plan, i, t0, t1);
        if signaled {
            wait_one(&mut s.send_cq, &mut wc, &mut guard, signals, "waiting for a send completion")?;
        }
        if next(&plan, &mut i, &clock, signals)? {
            break;
        }
    }
    Ok(finish(s.spec.test, plan, &clock))
}

pub fn send_passive(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let size = s.spec.size;
    let cq_mod = u64::from(s.spec.cq_mod);
    let total = if s.spec.duration_ms.is_some() { u64::MAX } else { s.spec.warmup + s.spec.iters };
    let (op, to) = ping_op(s)?;
    let mut send = SendList::new(1, op, &s.mr, size as usize, size, to, s.inline)?;
    let mut wc = WorkCompletion::blank_array::<1>();
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    let (qp, recv) = (&mut s.qps[0], &mut s.recv_lists[0]);
    let start = Instant::now();
    let mut i = 0;
    'outer: while i < total {
        while !poll_one(&mut s.recv_cq, &mut wc, &mut guard)? {
            if signals.stopped() {
                break 'outer;
            }
            super::wait_for_completion(&mut s.recv_cq, &mut guard, signals, "waiting for the peer's ping")?;
        }
        // Answer first: the re-post (64 receives are posted) stays out of the peer's round trip.
        let slot = wc[0].wr_id().slot as usize;
        let signaled = (i + 1) % cq_mod == 0;
        send.set_signaled(0, signaled);
        send.post(qp, 1)?;
        recv.post(qp, slot, 1)?;
        if signaled {
            wait_one(&mut s.send_cq, &mut wc, &mut guard, signals, "waiting for a send completion")?;
        }
        i += 1;
    }
    Ok(RunResult { iterations: i, elapsed_ns: start.elapsed().as_nanos() as u64, ..RunResult::default() })
}

pub fn write_active(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let size = s.spec.size as usize;
    let cq_mod = u64::from(s.spec.cq_mod);
    let mut plan = plan(s, signals);
    let remote = remote(s)?;
    let mut write = SendList::new(1, SendOp::Write, &s.mr, size, size as u32, Some(remote), s.inline)?;
    let mut wc = WorkCompletion::blank_array::<1>();
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    let (recv_last, send_last) = (size - 1, 2 * size - 1);
    let qp = &mut s.qps[0];
    let clock = LoopClock::start();
    signals.live.set_clock(clock.source());
    let mut i = 0;
    while i < plan.total {
        let value = (i % 255 + 1) as u8;
        let signaled = (i + 1) % cq_mod == 0;
        write.set_signaled(0, signaled);
        s.mr.write_volatile(send_last, value);
        let t0 = clock.ticks();
        write.post(qp, 1)?;
        while s.mr.read_volatile(recv_last) != value {
            guard.idle(signals, "waiting for the peer's write")?;
        }
        let t1 = clock.ticks();
        guard.progress();
        record(&mut plan, i, t0, t1);
        if signaled {
            wait_one(&mut s.send_cq, &mut wc, &mut guard, signals, "waiting for a write completion")?;
        }
        if next(&plan, &mut i, &clock, signals)? {
            break;
        }
    }
    Ok(finish(TestKind::WriteLat, plan, &clock))
}

pub fn write_passive(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let size = s.spec.size as usize;
    let cq_mod = u64::from(s.spec.cq_mod);
    let total = if s.spec.duration_ms.is_some() { u64::MAX } else { s.spec.warmup + s.spec.iters };
    let remote = remote(s)?;
    let mut write = SendList::new(1, SendOp::Write, &s.mr, size, size as u32, Some(remote), s.inline)?;
    let mut wc = WorkCompletion::blank_array::<1>();
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    let (recv_last, send_last) = (size - 1, 2 * size - 1);
    let qp = &mut s.qps[0];
    let start = Instant::now();
    let mut i = 0;
    'outer: while i < total {
        let value = (i % 255 + 1) as u8;
        while s.mr.read_volatile(recv_last) != value {
            if signals.stopped() {
                break 'outer;
            }
            guard.idle(signals, "waiting for the peer's write")?;
        }
        guard.progress();
        let signaled = (i + 1) % cq_mod == 0;
        write.set_signaled(0, signaled);
        s.mr.write_volatile(send_last, value);
        write.post(qp, 1)?;
        if signaled {
            wait_one(&mut s.send_cq, &mut wc, &mut guard, signals, "waiting for a write completion")?;
        }
        i += 1;
    }
    Ok(RunResult { iterations: i, elapsed_ns: start.elapsed().as_nanos() as u64, ..RunResult::default() })
}

pub fn read_active(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    one_sided_active(s, signals, SendOp::Read)
}

/// ib_atomic_lat: one atomic in flight, each signaled, timed as the full round trip; the
/// value fetched back lands in this side's buffer.
pub fn atomic_active(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let op = super::atomic_op(s.spec.atomic);
    one_sided_active(s, signals, op)
}

/// The requester's loop of a one-sided round trip (a read or an atomic): post one, wait for
/// its completion.
fn one_sided_active(s: &mut Session, signals: &Signals, op: SendOp) -> Result<RunResult, PerfError> {
    let size = s.spec.size;
    let mut plan = plan(s, signals);
    let remote = remote(s)?;
    let mut read = SendList::new(1, op, &s.mr, 0, size, Some(remote), false)?;
    read.set_signaled(0, true);
    let mut wc = WorkCompletion::blank_array::<1>();
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    let qp = &mut s.qps[0];
    let clock = LoopClock::start();
    signals.live.set_clock(clock.source());
    let mut i = 0;
    while i < plan.total {
        let t0 = clock.ticks();
        read.post(qp, 1)?;
        wait_one(&mut s.send_cq, &mut wc, &mut guard, signals, "waiting for a read or atomic to complete")?;
        let t1 = clock.ticks();
        record(&mut plan, i, t0, t1);
        if next(&plan, &mut i, &clock, signals)? {
            break;
        }
    }
    Ok(finish(s.spec.test, plan, &clock))
}
