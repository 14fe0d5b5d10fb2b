use super::*;
use crate::model::collective::{Hop, HopId, MemberId, Step};
use std::collections::VecDeque;

/// One member whose outbound hop loops back to its own inbound hop: every chunk posted is
/// completed and arrives, in order, on the next poll (unless told otherwise).
#[derive(Default)]
struct Loopback {
    pending: VecDeque<Event>,
    posts: u64,
    reposts: Vec<(usize, u32)>,
    /// Drop every arrival (a dead sender).
    silent: bool,
    /// Swap the immediates of the 3rd and 4th chunks.
    reorder: bool,
    /// Fail the 5th write with this status.
    fail_at: Option<u32>,
}

impl Wire for Loopback {
    fn post(&mut self, hop: usize, seq: u64) -> Result<(), fabcheck_verbs::VerbsError> {
        self.posts += 1;
        if self.fail_at.is_some() && seq == 4 {
            self.pending.push_back(Event::Failed { outbound: true, hop: hop as u32, status: self.fail_at.unwrap_or(0) });
            return Ok(());
        }
        self.pending.push_back(Event::Sent { hop: hop as u32, seq: seq as u32 });
        if !self.silent {
            let imm = match (self.reorder, seq) {
                (true, 2) => 3,
                (true, 3) => 2,
                _ => seq as u32,
            };
            self.pending.push_back(Event::Arrived { hop: 0, imm });
        }
        Ok(())
    }

    fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, fabcheck_verbs::VerbsError> {
        let mut n = 0;
        while n < POLL_BATCH {
            let Some(e) = self.pending.pop_front() else { break };
            events[n] = e;
            n += 1;
        }
        Ok(n)
    }

    fn repost(&mut self, hop: usize, count: u32) -> Result<(), fabcheck_verbs::VerbsError> {
        self.reposts.push((hop, count));
        Ok(())
    }
}

/// Time moves 1 us at each read.
struct Ticks(u64);

impl Clock for Ticks {
    fn now_ns(&mut self) -> u64 {
        self.0 += 1000;
        self.0
    }
}

/// A ring of one: NCCL's dependency, each step after the first waits for the last chunk.
fn ring_of_one(steps: usize, iters: u64) -> MemberPlan {
    let hop = Hop { id: HopId(7), from: MemberId(0), to: MemberId(0) };
    let mut plan_steps = vec![Step::once(vec![], vec![0])];
    for _ in 1..steps {
        plan_steps.push(Step::once(vec![0], vec![0]));
    }
    plan_steps.push(Step::once(vec![0], vec![]));
    MemberPlan {
        member: MemberId(0),
        outbound: vec![hop],
        inbound: vec![hop],
        steps: plan_steps,
        chunk_bytes: 65536,
        iters,
        report_every_ms: None,
        paths: 1,
    }
}

#[test]
fn every_chunk_is_sent_timed_and_arrives_in_order() {
    let plan = ring_of_one(4, 30);
    assert_eq!(plan.validate(), Ok(()));
    let mut wire = Loopback::default();
    let t = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 1000).unwrap();
    assert_eq!(t.iterations, 30);
    assert_eq!(wire.posts, 120, "4 sends per iteration");
    assert_eq!(t.out[0].posted, 120);
    assert_eq!(t.out[0].completed, 120);
    assert_eq!(t.inb[0].arrived, 120);
    assert_eq!(t.out[0].hist.len(), 120, "one time per chunk");
    // Receives go back in batches, never one at a time.
    assert_eq!(wire.reposts, vec![(0, REPOST_BATCH); (120 / REPOST_BATCH) as usize]);
    let r = summarise(&plan, &t);
    assert_eq!(r.hops.len(), 1);
    assert_eq!(r.hops[0].hop, HopId(7));
    assert_eq!(r.hops[0].chunks, 120);
    assert_eq!(r.hops[0].bytes, 120 * 65536);
    let step = r.hops[0].step_us.as_ref().unwrap();
    assert!(step.min > 0.0 && step.min <= step.p50 && step.p50 <= step.max, "{step:?}");
    assert!(r.hops[0].gbps > 0.0);
    assert!(r.elapsed_ns > 0);
}

#[test]
fn a_repeated_step_is_taken_one_plus_repeat_times() {
    let mut plan = ring_of_one(2, 3);
    plan.steps[1].repeat = 4;
    assert_eq!(plan.validate(), Ok(()));
    let mut wire = Loopback::default();
    let t = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 1000).unwrap();
    assert_eq!(wire.posts, 3 * (1 + 5), "step 0 once, step 1 five times, per iteration");
    assert_eq!(t.inb[0].arrived, 18);
}

#[test]
fn a_dead_sender_is_a_stall_naming_the_hop_awaited() {
    let plan = ring_of_one(3, 5);
    let mut wire = Loopback { silent: true, ..Loopback::default() };
    let e = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 50).unwrap_err();
    assert!(matches!(e, LoopError::Stalled { waiting: Waiting::Arrival(0), waited_ms: 50 }), "{e:?}");
    assert_eq!(wire.posts, 1, "step 1 waits for step 0's chunk before it sends");
}

#[test]
fn chunks_out_of_order_are_an_error() {
    let plan = ring_of_one(6, 2);
    let mut wire = Loopback { reorder: true, ..Loopback::default() };
    let e = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 1000).unwrap_err();
    assert!(matches!(e, LoopError::OutOfOrder { hop: 0, expected: 2, got: 3 }), "{e:?}");
}

#[test]
fn a_failed_write_names_its_hop() {
    let plan = ring_of_one(6, 2);
    let mut wire = Loopback { fail_at: Some(12), ..Loopback::default() };
    let e = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 1000).unwrap_err();
    assert!(matches!(e, LoopError::Completion { outbound: true, hop: 0, status: 12 }), "{e:?}");
}

#[test]
fn stop_ends_the_run_early_and_abort_fails_it() {
    let plan = ring_of_one(4, 1000);
    let signals = Signals::new();
    signals.request_stop();
    let t = run_steps(&mut Loopback::default(), &mut Ticks(0), &plan, &signals, 1000).unwrap();
    assert_eq!(t.iterations, 0);
    assert_eq!(t.out[0].completed, t.out[0].posted);
    let signals = Signals::new();
    signals.request_abort();
    assert!(matches!(run_steps(&mut Loopback::default(), &mut Ticks(0), &plan, &signals, 1000), Err(LoopError::Aborted)));
}

#[test]
fn a_stop_ends_a_wait_that_would_never_end() {
    // The sender is gone (no arrival ever) and the controller says stop: the loop ends without
    // waiting out the stall limit, with what it sent.
    let plan = ring_of_one(3, 5);
    let signals = Signals::new();
    struct StopSoon<'a> {
        inner: Loopback,
        signals: &'a Signals,
        polls: u32,
    }
    impl Wire for StopSoon<'_> {
        fn post(&mut self, hop: usize, seq: u64) -> Result<(), fabcheck_verbs::VerbsError> {
            self.inner.post(hop, seq)
        }
        fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, fabcheck_verbs::VerbsError> {
            self.polls += 1;
            if self.polls == 10 {
                self.signals.request_stop();
            }
            self.inner.poll(events)
        }
        fn repost(&mut self, hop: usize, count: u32) -> Result<(), fabcheck_verbs::VerbsError> {
            self.inner.repost(hop, count)
        }
    }
    let mut wire = StopSoon { inner: Loopback { silent: true, ..Loopback::default() }, signals: &signals, polls: 0 };
    let t = run_steps(&mut wire, &mut Ticks(0), &plan, &signals, 600_000).unwrap();
    assert_eq!((t.iterations, t.out[0].posted, t.out[0].completed), (0, 1, 1));
    assert!(wire.polls < 10 + 2 * IDLE_CHECK, "{} polls", wire.polls);
}

#[test]
fn writes_in_flight_per_hop_are_bounded_by_the_ring() {
    // Sends only, no waits: the loop must wait for room after SEND_DEPTH writes in flight.
    struct Slow {
        inner: Loopback,
        max_in_flight: u64,
        in_flight: u64,
    }
    impl Wire for Slow {
        fn post(&mut self, hop: usize, seq: u64) -> Result<(), fabcheck_verbs::VerbsError> {
            self.in_flight += 1;
            self.max_in_flight = self.max_in_flight.max(self.in_flight);
            self.inner.post(hop, seq)
        }
        fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, fabcheck_verbs::VerbsError> {
            // One completion per poll: the sender runs ahead as far as it may.
            let Some(e) = self.inner.pending.pop_front() else { return Ok(0) };
            if matches!(e, Event::Sent { .. }) {
                self.in_flight -= 1;
            }
            events[0] = e;
            Ok(1)
        }
        fn repost(&mut self, hop: usize, count: u32) -> Result<(), fabcheck_verbs::VerbsError> {
            self.inner.repost(hop, count)
        }
    }
    let hop = Hop { id: HopId(1), from: MemberId(0), to: MemberId(1) };
    let plan = MemberPlan {
        member: MemberId(0),
        outbound: vec![hop],
        inbound: vec![],
        steps: vec![Step::once(vec![], vec![0])],
        chunk_bytes: 4096,
        iters: 100,
        report_every_ms: None,
        paths: 1,
    };
    let mut wire = Slow { inner: Loopback { silent: true, ..Loopback::default() }, max_in_flight: 0, in_flight: 0 };
    let t = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 1000).unwrap();
    assert_eq!(t.out[0].completed, 100);
    assert_eq!(wire.max_in_flight, u64::from(SEND_DEPTH));
}

/// `--paths N` in memory: a member whose outbound hop's lanes loop back to its inbound hop's
/// (lane k to lane k), lane `slow` delivering `delay` polls late (its chunks arrive after the
/// other lanes' later ones: the arrivals interleave across paths).
struct Lanes {
    pending: VecDeque<(u64, Event)>,
    polls: u64,
    paths: usize,
    slow: usize,
    delay: u64,
    posted_on: Vec<u64>,
    /// Time, ns: each poll takes 1 us (read by [`Shared`]).
    time: std::rc::Rc<std::cell::Cell<u64>>,
}

/// The clock the [`Lanes`] wire moves.
struct Shared(std::rc::Rc<std::cell::Cell<u64>>);

impl Clock for Shared {
    fn now_ns(&mut self) -> u64 {
        self.0.get()
    }
}

impl Wire for Lanes {
    fn post(&mut self, lane: usize, seq: u64) -> Result<(), fabcheck_verbs::VerbsError> {
        assert_eq!(lane, (seq % self.paths as u64) as usize, "chunk {seq} round-robin over the paths");
        self.posted_on[lane] += 1;
        let at = self.polls + if lane == self.slow { self.delay } else { 1 };
        self.pending.push_back((at, Event::Sent { hop: lane as u32, seq: seq as u32 }));
        self.pending.push_back((at, Event::Arrived { hop: lane as u32, imm: seq as u32 }));
        Ok(())
    }

    fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, fabcheck_verbs::VerbsError> {
        self.polls += 1;
        self.time.set(self.time.get() + 1000);
        let mut n = 0;
        let mut i = 0;
        while i < self.pending.len() && n < POLL_BATCH {
            if self.pending[i].0 <= self.polls {
                events[n] = self.pending.remove(i).map_or(Event::Blank, |(_, e)| e);
                n += 1;
            } else {
                i += 1;
            }
        }
        Ok(n)
    }

    fn repost(&mut self, lane: usize, _count: u32) -> Result<(), fabcheck_verbs::VerbsError> {
        assert!(lane < self.paths);
        Ok(())
    }
}

#[test]
fn eight_paths_spread_a_hops_chunks_round_robin_and_a_late_path_shows_in_its_own_figure() {
    let mut plan = ring_of_one(6, 40);
    plan.paths = 8;
    let time = std::rc::Rc::new(std::cell::Cell::new(0));
    let mut wire = Lanes { pending: VecDeque::new(), polls: 0, paths: 8, slow: 5, delay: 40, posted_on: vec![0; 8], time: time.clone() };
    let t = run_steps(&mut wire, &mut Shared(time), &plan, &Signals::new(), 1000).unwrap();
    assert_eq!(t.iterations, 40);
    let chunks = t.out[0].completed;
    assert_eq!(chunks, 6 * 40, "every step but the last of each iteration sends one chunk");
    assert!(wire.posted_on.iter().all(|&n| n == chunks / 8), "{:?}", wire.posted_on);
    let result = summarise(&plan, &t);
    let runs = &result.hops[0].paths;
    assert_eq!(runs.len(), 8);
    assert_eq!(runs.iter().map(|r| r.bytes).sum::<u64>(), result.hops[0].bytes);
    let labels: Vec<u32> = runs.iter().map(|r| r.flow_label).collect();
    assert_eq!(labels, (0..8).map(crate::model::paths::flow_label).collect::<Vec<_>>());
    // Lane 5's rate is below half every other lane's (the controller's rule then names it).
    let rates: Vec<f64> = runs.iter().map(|r| crate::perf::summary::gbps(r.bytes, r.elapsed_ns)).collect();
    let slow: Vec<usize> = (0..8).filter(|&k| rates.iter().enumerate().all(|(j, &g)| j == k || rates[k] < 0.5 * g)).collect();
    assert_eq!(slow, vec![5], "{rates:?}");
    // One path: the figure is as before, no per-path runs.
    let mut one = ring_of_one(6, 4);
    one.paths = 1;
    let t = run_steps(&mut Loopback::default(), &mut Ticks(0), &one, &Signals::new(), 1000).unwrap();
    assert!(summarise(&one, &t).hops[0].paths.is_empty());
}

#[test]
fn a_chunk_out_of_order_on_its_own_path_is_still_refused() {
    // Lane 1 of two carries chunks 1, 3, 5...: a 3 where 1 is due is out of order.
    struct Swapped(Lanes);
    impl Wire for Swapped {
        fn post(&mut self, lane: usize, seq: u64) -> Result<(), fabcheck_verbs::VerbsError> {
            let at = self.0.polls + 1;
            let imm = if seq == 1 { 3 } else { seq as u32 };
            self.0.pending.push_back((at, Event::Sent { hop: lane as u32, seq: seq as u32 }));
            self.0.pending.push_back((at, Event::Arrived { hop: lane as u32, imm }));
            Ok(())
        }
        fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, fabcheck_verbs::VerbsError> {
            self.0.poll(events)
        }
        fn repost(&mut self, lane: usize, count: u32) -> Result<(), fabcheck_verbs::VerbsError> {
            self.0.repost(lane, count)
        }
    }
    let mut plan = ring_of_one(6, 2);
    plan.paths = 2;
    let mut wire =
        Swapped(Lanes { pending: VecDeque::new(), polls: 0, paths: 2, slow: 9, delay: 0, posted_on: vec![0; 2], time: Default::default() });
    let e = run_steps(&mut wire, &mut Ticks(0), &plan, &Signals::new(), 1000).unwrap_err();
    assert!(matches!(e, LoopError::OutOfOrder { hop: 1, expected: 1, got: 3 }), "{e:?}");
}
