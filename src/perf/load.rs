//! lat_under_load's load: the bandwidth QPs writing 64 KiB messages to the peer, on their own
//! thread and their own send CQ, until the latency probe is done. The loop is
//! [`super::bandwidth`]'s shape (chains of pre-built WRs, one completion per `cq_mod`, busy
//! polling, nothing allocated); it counts bytes only, and says when it is flowing so the probe's
//! loaded phase starts under a full link.

use super::{PerfError, Signals, StallGuard};
use fabcheck_verbs::{CompletionQueue, QueuePair, SendList, WorkCompletion};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

/// The load's state as the probe sees it (one relaxed load per probe iteration): 0 while it
/// starts, then flowing or failed.
pub(super) const FLOWING: u8 = 1;
pub(super) const FAILED: u8 = 2;

/// What passes between the probe and the load thread: the probe's stop, the load's state.
#[derive(Debug, Default)]
pub(super) struct Handshake {
    pub(super) stop: AtomicBool,
    pub(super) state: AtomicU8,
}

/// The queue's shape: WRs in flight per QP, a completion every `cq_mod`, chains of `post_list`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) depth: u64,
    pub(super) cq_mod: u64,
    pub(super) post_list: u64,
    pub(super) size: u64,
    pub(super) stall_timeout_ms: u64,
}

/// What the load moved: bytes completed from its first completion to its last, and that window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Moved {
    pub(super) bytes: u64,
    pub(super) elapsed_ns: u64,
}

/// Streams on every QP of `qps` until `hand.stop`; then ends each QP's stream on a signaled WR
/// and waits for every completion. An error (a failed completion, a stall, an abort) is said in
/// `hand.state` at once, so the probe stops too.
pub(super) fn stream(
    qps: &mut [QueuePair],
    cq: &mut CompletionQueue,
    lists: &mut [SendList],
    shape: Shape,
    hand: &Handshake,
    signals: &Signals,
) -> Result<Moved, PerfError> {
    let result = run(qps, cq, lists, shape, hand, signals);
    if result.is_err() {
        hand.state.store(FAILED, Ordering::Relaxed);
    }
    result
}

fn run(
    qps: &mut [QueuePair],
    cq: &mut CompletionQueue,
    lists: &mut [SendList],
    shape: Shape,
    hand: &Handshake,
    signals: &Signals,
) -> Result<Moved, PerfError> {
    const MAX_QPS: usize = crate::model::MAX_QPS as usize;
    let n = qps.len().min(MAX_QPS);
    let mut posted = [0u64; MAX_QPS];
    let mut completed = [0u64; MAX_QPS];
    let mut total = 0u64;
    let mut wcs = WorkCompletion::blank_array::<16>();
    let mut guard = StallGuard::new(shape.stall_timeout_ms);
    let mut first: Option<(Instant, u64)> = None;
    let mut last = Instant::now();
    let mut stopping = false;
    loop {
        if !stopping && hand.stop.load(Ordering::Relaxed) {
            stopping = true;
        }
        for q in 0..n {
            // Stopping: only what ends the stream on a signaled WR (every `cq_mod`th is).
            while posted[q] - completed[q] + shape.post_list <= shape.depth && (!stopping || !posted[q].is_multiple_of(shape.cq_mod)) {
                let end = posted[q] + shape.post_list;
                let last_wr = (shape.post_list - 1) as usize;
                let signaled = end.is_multiple_of(shape.cq_mod);
                lists[q].set_signaled(last_wr, signaled);
                lists[q].post(&mut qps[q], shape.post_list as usize)?;
                if signaled {
                    lists[q].set_signaled(last_wr, false);
                }
                posted[q] = end;
            }
        }
        let got = cq.poll(&mut wcs)?;
        for wc in &wcs[..got] {
            if !wc.is_success() {
                return Err(PerfError::Verbs(wc.to_error()));
            }
            let q = (wc.wr_id().qp as usize).min(n - 1);
            let credit = shape.cq_mod.min(posted[q] - completed[q]);
            completed[q] += credit;
            total += credit;
        }
        if got > 0 {
            guard.progress();
            last = Instant::now();
            if first.is_none() {
                first = Some((last, total));
                hand.state.store(FLOWING, Ordering::Relaxed);
            }
        } else {
            guard.idle(signals, "waiting for the load's write completions")?;
        }
        if signals.aborted() {
            return Err(PerfError::Aborted);
        }
        if stopping && (0..n).all(|q| completed[q] == posted[q]) {
            break;
        }
    }
    Ok(match first {
        Some((at, before)) => Moved { bytes: (total - before) * shape.size, elapsed_ns: last.duration_since(at).as_nanos() as u64 },
        None => Moved::default(),
    })
}
