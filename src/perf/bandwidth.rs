//! Streaming bandwidth: many WRs in flight on each QP, posted as chains, one completion per
//! `cq_mod` WRs, busy polling. Bandwidth is bytes completed over the time from the first
//! measured post to the last completion; peak is the best window of completion marks.

use super::session::Session;
use super::summary;
use super::{PerfError, Signals, StallGuard};
use crate::model::{Role, RunResult, TestKind};
use fabcheck_verbs::{RemoteBuffer, SendList, SendOp, WorkCompletion, WrId};
use std::time::{Duration, Instant};

const POLL_BATCH: usize = 16;

struct Receiver<'c> {
    expected: u64,
    received: u64,
    /// `--validate`: every message checked at its completion, before its receive is posted again.
    checker: Option<&'c mut super::pattern::Checker>,
}

/// The active side (and, for bidirectional send, the receiving too).
pub fn send(s: &mut Session, signals: &Signals) -> Result<RunResult, PerfError> {
    let spec = s.spec.clone();
    let (op, local_offset) = match spec.test {
        TestKind::WriteBw => (SendOp::Write, spec.size as usize),
        TestKind::ReadBw => (SendOp::Read, 0),
        // The old values fetched back land in the first half, as a read's data.
        TestKind::AtomicBw => (super::atomic_op(spec.atomic), 0),
        _ => (SendOp::Send, spec.size as usize),
    };
    let remote = s.remote.as_ref().map(|r| RemoteBuffer { addr: r.addr, rkey: r.rkey, len: r.len });
    let post_list = spec.post_list as usize;
    let inline = s.inline && op != SendOp::Read && !op.is_atomic();
    let mut lists: Vec<SendList> = (0..s.qps.len())
        .map(|q| {
            let mut list = SendList::new(post_list, op, &s.mr, local_offset, spec.size, remote, inline)?;
            for i in 0..post_list {
                list.set_wr_id(i, WrId::new(q as u32, i as u32));
            }
            Ok(list)
        })
        .collect::<Result<_, PerfError>>()?;
    let qps = s.qps.len() as u64;
    let mut receiver = (spec.test == TestKind::SendBw && spec.role == Role::Both).then(|| Receiver {
        expected: if spec.duration_ms.is_some() { u64::MAX } else { (spec.warmup + spec.iters) * qps },
        received: 0,
        checker: None,
    });
    // Warm-up, not counted.
    if spec.warmup > 0 {
        stream(s, &mut lists, signals, Phase { per_qp: spec.warmup, until: None }, &mut receiver, None)?;
    }
    let cap = if spec.duration_ms.is_some() { 1 << 20 } else { (spec.iters * qps / u64::from(spec.cq_mod)) as usize + 2 * qps as usize + 2 };
    let mut marks: Vec<(u64, u64)> = Vec::with_capacity(cap);
    let phase = match spec.duration_ms {
        Some(ms) => Phase { per_qp: u64::MAX, until: Some(Duration::from_millis(ms)) },
        None => Phase { per_qp: spec.iters, until: None },
    };
    let (completed, elapsed_ns, per_qp) = stream(s, &mut lists, signals, phase, &mut receiver, Some(&mut marks))?;
    // The bidirectional receive half may still be finishing.
    if let Some(rx) = receiver.as_mut() {
        drain_receives(s, rx, signals)?;
    }
    let bytes = completed * u64::from(spec.size);
    Ok(RunResult {
        iterations: completed,
        bytes,
        elapsed_ns,
        lat: None,
        peak_gbps: summary::peak_gbps(&marks, (marks.len() / 20).max(1)).or(Some(summary::gbps(bytes, elapsed_ns))),
        counter_deltas: Vec::new(),
        prio_traffic: None,
        data: None,
        paths: if spec.paths { per_qp.paths(s.qps.len(), u64::from(spec.size)) } else { Vec::new() },
        idle_lat: None,
    })
}

/// What each QP completed and when its last completion came (`--paths`): fixed arrays, written
/// in the measured loop without allocating.
struct PerQp {
    completed: [u64; crate::model::MAX_QPS as usize],
    last_ns: [u64; crate::model::MAX_QPS as usize],
}

impl PerQp {
    /// One [`crate::model::paths::PathRun`] per QP, in QP order.
    fn paths(&self, n: usize, size: u64) -> Vec<crate::model::paths::PathRun> {
        (0..n)
            .map(|q| crate::model::paths::PathRun {
                flow_label: crate::model::paths::flow_label(q as u32),
                bytes: self.completed[q] * size,
                elapsed_ns: self.last_ns[q],
            })
            .collect()
    }
}

struct Phase {
    per_qp: u64,
    until: Option<Duration>,
}

/// Posts `per_qp` WRs on every QP (or until the duration passes) and waits for them all.
/// Returns WRs completed, the elapsed nanoseconds, and each QP's share.
fn stream(
    s: &mut Session,
    lists: &mut [SendList],
    signals: &Signals,
    phase: Phase,
    receiver: &mut Option<Receiver<'_>>,
    mut marks: Option<&mut Vec<(u64, u64)>>,
) -> Result<(u64, u64, PerQp), PerfError> {
    const MAX_QPS: usize = crate::model::MAX_QPS as usize;
    let n = s.qps.len();
    let depth = u64::from(s.spec.tx_depth);
    let cq_mod = u64::from(s.spec.cq_mod);
    let post_list = u64::from(s.spec.post_list);
    let size = u64::from(s.spec.size);
    let mut target = [phase.per_qp; MAX_QPS];
    let mut posted = [0u64; MAX_QPS];
    let mut completed = [0u64; MAX_QPS];
    let mut last_ns = [0u64; MAX_QPS];
    let mut total_completed = 0u64;
    let mut wcs = WorkCompletion::blank_array::<POLL_BATCH>();
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    let mut stopping = phase.until.is_none();
    let start = Instant::now();
    loop {
        // Post as long as each QP has room.
        for q in 0..n {
            while posted[q] < target[q] && posted[q] - completed[q] + post_list <= depth {
                let batch = post_list.min(target[q] - posted[q]);
                let end = posted[q] + batch;
                let signaled = end % cq_mod == 0 || end == target[q];
                let last = (batch - 1) as usize;
                lists[q].set_signaled(last, signaled);
                lists[q].post(&mut s.qps[q], batch as usize)?;
                if signaled {
                    lists[q].set_signaled(last, false);
                }
                posted[q] = end;
            }
        }
        // Reap send completions.
        let got = s.send_cq.poll(&mut wcs)?;
        // Which QPs completed something in this batch (MAX_QPS is 64: one bit each).
        let mut touched = 0u64;
        for wc in &wcs[..got] {
            if !wc.is_success() {
                return Err(PerfError::Verbs(wc.to_error()));
            }
            let q = wc.wr_id().qp as usize;
            // Completions arrive in order per QP and each signaled WR closes at most cq_mod WRs.
            let credit = cq_mod.min(posted[q] - completed[q]);
            completed[q] += credit;
            total_completed += credit;
            touched |= 1 << q;
        }
        let mut progressed = got > 0;
        // The clock is read only when something completed: an idle pass changes nothing but
        // time, and the duration is judged on the same reading as the peak marks.
        let mut duration_over = false;
        if got > 0 {
            let now = start.elapsed();
            let now_ns = now.as_nanos() as u64;
            while touched != 0 {
                let q = touched.trailing_zeros() as usize;
                last_ns[q] = now_ns;
                touched &= touched - 1;
            }
            if let Some(m) = marks.as_deref_mut() {
                if m.len() < m.capacity() {
                    m.push((now_ns, total_completed * size));
                }
                // The measured phase: the figure `--report-every` reads (one relaxed store).
                signals.live.set_bytes(total_completed * size);
            }
            duration_over = phase.until.is_some_and(|limit| now >= limit);
        }
        if let Some(rx) = receiver.as_mut() {
            progressed |= reap_receives(s, rx)?;
        }
        // A relaxed load per pass: a dead controller stops a stream that is still flowing.
        if signals.aborted() {
            return Err(PerfError::Aborted);
        }
        if !stopping && phase.until.is_some() && (duration_over || signals.stopped()) {
            // End each QP's stream on a signaled WR so every completion is accounted for.
            for q in 0..n {
                target[q] = posted[q].div_ceil(cq_mod).max(1) * cq_mod;
                target[q] = target[q].max(posted[q]);
            }
            stopping = true;
        }
        if stopping && (0..n).all(|q| completed[q] == target[q]) {
            break;
        }
        if progressed {
            guard.progress();
        } else if receiver.is_none() {
            // Nothing completed: sleep on the send CQ's channel with --events (a bidirectional
            // send_bw also reaps receives, so it keeps polling both).
            super::wait_for_completion(&mut s.send_cq, &mut guard, signals, "waiting for send completions")?;
        } else {
            guard.idle(signals, "waiting for send completions")?;
        }
    }
    Ok((total_completed, start.elapsed().as_nanos() as u64, PerQp { completed, last_ns }))
}

fn reap_receives(s: &mut Session, rx: &mut Receiver<'_>) -> Result<bool, PerfError> {
    let mut wcs = WorkCompletion::blank_array::<POLL_BATCH>();
    let got = s.recv_cq.poll(&mut wcs)?;
    for wc in &wcs[..got] {
        if !wc.is_success() {
            return Err(PerfError::Verbs(wc.to_error()));
        }
        let WrId { qp, slot } = wc.wr_id();
        let q = qp as usize;
        if let Some(c) = rx.checker.as_deref_mut() {
            c.check_region(&s.mr, 0, Some(rx.received));
        }
        s.recv_lists[q].post(&mut s.qps[q], slot as usize, 1)?;
        rx.received += 1;
    }
    Ok(got > 0)
}

fn drain_receives(s: &mut Session, rx: &mut Receiver<'_>, signals: &Signals) -> Result<(), PerfError> {
    let mut guard = StallGuard::new(s.spec.stall_timeout_ms);
    while rx.received < rx.expected && !signals.stopped() {
        if reap_receives(s, rx)? {
            guard.progress();
        } else {
            super::wait_for_completion(&mut s.recv_cq, &mut guard, signals, "waiting for the peer's sends")?;
        }
    }
    Ok(())
}

/// The passive side of send bandwidth: keep receives posted, count messages (and with
/// `--validate` check each one).
pub fn receive(s: &mut Session, signals: &Signals, checker: Option<&mut super::pattern::Checker>) -> Result<RunResult, PerfError> {
    let qps = s.qps.len() as u64;
    let expected = if s.spec.duration_ms.is_some() { u64::MAX } else { (s.spec.warmup + s.spec.iters) * qps };
    let mut rx = Receiver { expected, received: 0, checker };
    let start = Instant::now();
    drain_receives(s, &mut rx, signals)?;
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    Ok(RunResult { iterations: rx.received, bytes: rx.received * u64::from(s.spec.size), elapsed_ns, ..RunResult::default() })
}
