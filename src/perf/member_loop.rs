//! A collective member's step loop (0.5): for each iteration, each step of the plan waits for
//! one chunk on each of its `wait` hops, then posts one chunk on each of its `send` hops.
//!
//! The hot path, as `perf`'s other loops: every buffer, histogram and array is made before the
//! first post; the loop only posts pre-built writes, polls both CQs in batches of
//! [`POLL_BATCH`], reads the clock once per post and once per non-empty poll, records into
//! fixed-size histograms (no allocation), and reads the stop/abort flags (relaxed atomics). No
//! lock, log or format until it has ended. Every chunk is signaled: the figure reported is each
//! chunk's post-to-completion time per hop, which selective signaling would lose (a chunk is
//! large, 64 KiB and up, so one completion per chunk costs little; the writes in flight per hop
//! are bounded by the peer's ring, [`SEND_DEPTH`]).
//!
//! The transport is a [`Wire`] (verbs in [`member_wire`](super::member_wire), a fake in the tests) and
//! the time a [`Clock`], so the loop's logic (order, dependency, stall, stop) is tested in memory.

use super::member::{REPOST_BATCH, SEND_DEPTH};
use super::Signals;
use crate::model::collective::{HopResult, MemberPlan, MemberResult};
use crate::model::paths::{flow_label, PathRun};
use crate::model::LatencySummary;
use hdrhistogram::Histogram;

/// Completions taken per poll of a CQ.
pub const POLL_BATCH: usize = 16;
const DEPTH: usize = SEND_DEPTH as usize;
/// Idle polls between looks at the flags and the clock.
const IDLE_CHECK: u32 = 1024;

/// What a poll found. `lane` is a hop's path: lane `hop * paths + k` is path `k` of hop `hop`
/// (with one path, lane and hop are one number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Event {
    /// A write on outbound lane `hop` completed (its chunk `seq`, modulo 2^32).
    Sent { hop: u32, seq: u32 },
    /// A chunk arrived on inbound lane `hop`, its immediate `imm` (the hop's chunk number).
    Arrived { hop: u32, imm: u32 },
    /// A work request of a lane failed with this completion status.
    Failed { outbound: bool, hop: u32, status: u32 },
    /// Nothing (a blank slot).
    #[default]
    Blank,
}

/// The transport under the loop, by lane (outbound lanes for posts, inbound for receives).
pub trait Wire {
    /// Posts chunk `seq` of its hop on outbound lane `lane` (signaled; its immediate is `seq`
    /// mod 2^32).
    fn post(&mut self, lane: usize, seq: u64) -> Result<(), fabcheck_verbs::VerbsError>;
    /// Fills `events` from the completion queues; returns how many.
    fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, fabcheck_verbs::VerbsError>;
    /// Posts `count` more receives on inbound lane `lane`.
    fn repost(&mut self, lane: usize, count: u32) -> Result<(), fabcheck_verbs::VerbsError>;
}

/// Monotonic nanoseconds (injected: the tests drive time themselves).
pub trait Clock {
    fn now_ns(&mut self) -> u64;
}

/// The process's monotonic clock.
pub struct Monotonic(std::time::Instant);

impl Monotonic {
    pub fn start() -> Monotonic {
        Monotonic(std::time::Instant::now())
    }
}

impl Clock for Monotonic {
    #[inline(always)]
    fn now_ns(&mut self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// What the loop was waiting for when it stalled (by lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// A chunk on inbound lane `n`.
    Arrival(usize),
    /// Room to post on outbound lane `n` (its hop's writes in flight not completing).
    Room(usize),
    /// The last writes of outbound lane `n` to complete.
    Drain(usize),
}

/// Why the loop ended without a tally. `hop` is a lane (see [`Event`]).
#[derive(Debug)]
pub enum LoopError {
    Aborted,
    Completion { outbound: bool, hop: usize, status: u32 },
    Verbs { outbound: bool, hop: usize, error: fabcheck_verbs::VerbsError },
    Poll(fabcheck_verbs::VerbsError),
    Stalled { waiting: Waiting, waited_ms: u64 },
    OutOfOrder { hop: usize, expected: u32, got: u32 },
}

/// One outbound hop's running figures.
#[derive(Debug)]
pub struct OutTally {
    pub hist: Histogram<u64>,
    pub posted: u64,
    pub completed: u64,
    pub busy_ns: u64,
    busy_since: u64,
}

/// One outbound lane's (one path's) count: RC completes a QP's writes in order, so its posts'
/// times are a ring of [`SEND_DEPTH`] (a hop keeps at most that many in flight over all its
/// lanes).
#[derive(Debug)]
pub struct LaneTally {
    pub posted: u64,
    pub completed: u64,
    post_ns: [u64; DEPTH],
    pub busy_ns: u64,
    busy_since: u64,
}

/// One inbound hop's count.
#[derive(Debug, Clone, Copy, Default)]
pub struct InTally {
    pub arrived: u64,
    consumed: u64,
}

/// One inbound lane's count.
#[derive(Debug, Clone, Copy, Default)]
pub struct InLane {
    pub arrived: u64,
    unposted: u32,
}

/// What a run measured, raw.
#[derive(Debug)]
pub struct Tally {
    pub out: Vec<OutTally>,
    /// Per outbound lane (`hop * paths + k`).
    pub out_lanes: Vec<LaneTally>,
    pub inb: Vec<InTally>,
    /// Per inbound lane.
    pub in_lanes: Vec<InLane>,
    pub elapsed_ns: u64,
    pub iterations: u64,
}

/// Per-chunk times from 100 ns to 100 s, two significant digits (a fixed array of ~4 K
/// counters per hop: no allocation when recording).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(100, 100_000_000_000, 2).unwrap_or_else(|_| Histogram::new(2).unwrap_or_else(|_| unreachable!()))
}

struct Loop<'a, W, C> {
    wire: &'a mut W,
    clock: &'a mut C,
    signals: &'a Signals,
    stall_ns: u64,
    stall_ms: u64,
    /// Paths per hop (lanes per hop).
    paths: u64,
    t: Tally,
    events: [Event; POLL_BATCH],
    idle: u32,
    last_progress: u64,
    /// A stop was seen while waiting: the run ends after the writes in flight complete.
    stop_seen: bool,
}

/// Runs `plan` over `wire` until its iterations are done (or a stop), then waits for every
/// write to complete. Errors name the lane and what was awaited. With `plan.paths` N, chunk
/// `c` of a hop goes on its lane `c mod N`, and a step waits for the very chunk it needs (on
/// the lane it was sent on): the paths' arrivals may interleave, the step's dependency holds.
pub fn run_steps<W: Wire, C: Clock>(wire: &mut W, clock: &mut C, plan: &MemberPlan, signals: &Signals, stall_ms: u64) -> Result<Tally, LoopError> {
    let paths = plan.paths.max(1) as usize;
    let out = (0..plan.outbound.len()).map(|_| OutTally { hist: histogram(), posted: 0, completed: 0, busy_ns: 0, busy_since: 0 }).collect();
    let out_lanes =
        (0..plan.outbound.len() * paths).map(|_| LaneTally { posted: 0, completed: 0, post_ns: [0; DEPTH], busy_ns: 0, busy_since: 0 }).collect();
    let t = Tally {
        out,
        out_lanes,
        inb: vec![InTally::default(); plan.inbound.len()],
        in_lanes: vec![InLane::default(); plan.inbound.len() * paths],
        elapsed_ns: 0,
        iterations: 0,
    };
    let start = clock.now_ns();
    let mut l = Loop {
        wire,
        clock,
        signals,
        stall_ns: stall_ms.saturating_mul(1_000_000),
        stall_ms,
        paths: paths as u64,
        t,
        events: [Event::Blank; POLL_BATCH],
        idle: 0,
        last_progress: start,
        stop_seen: false,
    };
    'iters: for iter in 0..plan.iters {
        // A step is taken `1 + repeat` times in a row (a ring's identical middle steps).
        for step in plan.steps.iter().flat_map(|s| std::iter::repeat_n(s, s.times() as usize)) {
            if l.signals.aborted() {
                return Err(LoopError::Aborted);
            }
            if l.signals.stopped() {
                break 'iters;
            }
            for &w in &step.wait {
                let w = usize::from(w);
                // The chunk this step needs, on the lane it was sent on.
                let c = l.t.inb[w].consumed;
                let lane = w * paths + (c % l.paths) as usize;
                let due = c / l.paths;
                while l.t.in_lanes[lane].arrived <= due {
                    l.progress(Waiting::Arrival(lane))?;
                    if l.stop_seen {
                        break 'iters;
                    }
                }
                l.t.inb[w].consumed += 1;
            }
            for &s in &step.send {
                let s = usize::from(s);
                while l.t.out[s].posted - l.t.out[s].completed >= DEPTH as u64 {
                    l.progress(Waiting::Room(s * paths + (l.t.out[s].completed % l.paths) as usize))?;
                    if l.stop_seen {
                        break 'iters;
                    }
                }
                l.post(s)?;
            }
        }
        l.t.iterations = iter + 1;
    }
    for lane in 0..l.t.out_lanes.len() {
        while l.t.out_lanes[lane].completed < l.t.out_lanes[lane].posted {
            l.progress(Waiting::Drain(lane))?;
        }
    }
    l.t.elapsed_ns = l.clock.now_ns().saturating_sub(start);
    Ok(l.t)
}

impl<W: Wire, C: Clock> Loop<'_, W, C> {
    #[inline(always)]
    fn post(&mut self, s: usize) -> Result<(), LoopError> {
        let now = self.clock.now_ns();
        let o = &mut self.t.out[s];
        let seq = o.posted;
        let lane = s * self.paths as usize + (seq % self.paths) as usize;
        self.wire.post(lane, seq).map_err(|error| LoopError::Verbs { outbound: true, hop: lane, error })?;
        if o.posted == o.completed {
            o.busy_since = now;
        }
        o.posted += 1;
        let p = &mut self.t.out_lanes[lane];
        if p.posted == p.completed {
            p.busy_since = now;
        }
        p.post_ns[(p.posted % DEPTH as u64) as usize] = now;
        p.posted += 1;
        Ok(())
    }

    /// Polls once; takes what came, or counts an idle poll (and every [`IDLE_CHECK`] looks at
    /// the flags and the clock).
    #[inline(always)]
    fn progress(&mut self, waiting: Waiting) -> Result<(), LoopError> {
        let got = self.wire.poll(&mut self.events).map_err(LoopError::Poll)?;
        if got == 0 {
            self.idle = self.idle.wrapping_add(1);
            if !self.idle.is_multiple_of(IDLE_CHECK) {
                return Ok(());
            }
            if self.signals.aborted() {
                return Err(LoopError::Aborted);
            }
            self.stop_seen |= self.signals.stopped();
            let now = self.clock.now_ns();
            if now.saturating_sub(self.last_progress) > self.stall_ns {
                return Err(LoopError::Stalled { waiting, waited_ms: self.stall_ms });
            }
            return Ok(());
        }
        self.idle = 0;
        let now = self.clock.now_ns();
        self.last_progress = now;
        for i in 0..got {
            match self.events[i] {
                Event::Sent { hop: lane, .. } => {
                    let lane = lane as usize;
                    let p = &mut self.t.out_lanes[lane];
                    // RC completes a QP's writes in order: this is the lane's chunk `completed`.
                    let posted_at = p.post_ns[(p.completed % DEPTH as u64) as usize];
                    p.completed += 1;
                    if p.completed == p.posted {
                        p.busy_ns += now.saturating_sub(p.busy_since);
                    }
                    let o = &mut self.t.out[lane / self.paths as usize];
                    o.hist.saturating_record(now.saturating_sub(posted_at).max(1));
                    o.completed += 1;
                    if o.completed == o.posted {
                        o.busy_ns += now.saturating_sub(o.busy_since);
                    }
                }
                Event::Arrived { hop: lane, imm } => {
                    let h = lane as usize;
                    let k = (h as u64) % self.paths;
                    let t = &mut self.t.in_lanes[h];
                    // Lane k carries its hop's chunks k, k + N, k + 2N, ... in order.
                    let expected = t.arrived.wrapping_mul(self.paths).wrapping_add(k) as u32;
                    if imm != expected {
                        return Err(LoopError::OutOfOrder { hop: h, expected, got: imm });
                    }
                    t.arrived += 1;
                    t.unposted += 1;
                    if t.unposted >= REPOST_BATCH {
                        t.unposted -= REPOST_BATCH;
                        self.wire.repost(h, REPOST_BATCH).map_err(|error| LoopError::Verbs { outbound: false, hop: h, error })?;
                    }
                    self.t.inb[h / self.paths as usize].arrived += 1;
                }
                Event::Failed { outbound, hop, status } => return Err(LoopError::Completion { outbound, hop: hop as usize, status }),
                Event::Blank => {}
            }
        }
        Ok(())
    }
}

/// The member's answer from a tally (after the loop: here allocation and arithmetic are free).
/// With several paths, each hop's figure carries what each of its paths moved.
pub fn summarise(plan: &MemberPlan, t: &Tally) -> MemberResult {
    let paths = plan.paths.max(1) as usize;
    let chunk = u64::from(plan.chunk_bytes);
    let hops = plan
        .outbound
        .iter()
        .zip(&t.out)
        .enumerate()
        .map(|(i, (hop, o))| {
            let bytes = o.completed * chunk;
            let runs = if paths > 1 {
                t.out_lanes[i * paths..(i + 1) * paths]
                    .iter()
                    .enumerate()
                    .map(|(k, p)| PathRun { flow_label: flow_label(k as u32), bytes: p.completed * chunk, elapsed_ns: p.busy_ns })
                    .collect()
            } else {
                Vec::new()
            };
            HopResult {
                hop: hop.id,
                chunks: o.completed,
                bytes,
                step_us: summary(&o.hist),
                gbps: super::summary::gbps(bytes, o.busy_ns),
                paths: runs,
            }
        })
        .collect();
    MemberResult { member: plan.member, elapsed_ns: t.elapsed_ns, iterations: t.iterations, hops, counter_deltas: Vec::new(), window: None }
}

/// Percentiles of a hop's per-chunk times, microseconds; `None` when it sent nothing.
fn summary(h: &Histogram<u64>) -> Option<LatencySummary> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Some(LatencySummary {
        min: us(h.min()),
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
        mean: h.mean() / 1000.0,
        stdev: h.stdev() / 1000.0,
        preempt: None,
    })
}

#[cfg(test)]
#[path = "member_loop_tests.rs"]
mod tests;
