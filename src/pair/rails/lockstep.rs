//! Every rail's test sequence driven at once, with one "go" per test (pure, like the sequence
//! it wraps): each rail is its own `PairSequence` (its own agents' sessions, so its own
//! context, PD, CQ and QPs, and its own deadlines); each waits connected until every rail still
//! running has reached the same point, then all are released together. A rail that ends (a
//! failed test, a lost agent) leaves the others running.

use crate::control::drive::{Actions, Conversation};
use crate::control::loss::Loss;
use crate::control::protocol::Reply;
use crate::pair::sequence::PairSequence;
use std::time::Instant;

/// The rails' sequences; side `2k + s` of the job is side `s` of rail `k`.
pub struct Lockstep {
    pub rails: Vec<PairSequence>,
    /// How many times every running rail was released together (one per test).
    pub goes: usize,
}

impl Lockstep {
    pub fn new(rails: Vec<PairSequence>) -> Lockstep {
        Lockstep { rails: rails.into_iter().map(PairSequence::gated).collect(), goes: 0 }
    }

    /// Runs `f` on rail `k` with its own actions, then maps its sides onto the job's.
    fn on(&mut self, k: usize, act: &mut Actions, f: impl FnOnce(&mut PairSequence, &mut Actions)) {
        let mut own = Actions::default();
        f(&mut self.rails[k], &mut own);
        forward(k, own, act);
    }

    /// The go: when every rail not done is held (connected for its next test), all start.
    fn release_if_ready(&mut self, now: Instant, act: &mut Actions) {
        let running: Vec<usize> = (0..self.rails.len()).filter(|&k| !self.rails[k].is_done()).collect();
        if running.is_empty() || !running.iter().all(|&k| self.rails[k].is_held()) {
            return;
        }
        self.goes += 1;
        for k in running {
            self.on(k, act, |rail, own| rail.release(now, own));
        }
    }
}

fn forward(k: usize, own: Actions, act: &mut Actions) {
    for (side, request) in own.sends {
        act.send(2 * k + side, request);
    }
    act.discard.extend(own.discard.into_iter().map(|side| 2 * k + side));
}

impl Conversation for Lockstep {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        for k in 0..self.rails.len() {
            self.on(k, act, |rail, own| rail.start(now, own));
        }
        self.release_if_ready(now, act);
    }

    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        let k = side / 2;
        if k < self.rails.len() {
            self.on(k, act, |rail, own| rail.on_reply(side % 2, reply, now, own));
        }
        self.release_if_ready(now, act);
    }

    fn on_lost(&mut self, side: usize, loss: Loss, now: Instant, act: &mut Actions) {
        let k = side / 2;
        if k < self.rails.len() {
            self.on(k, act, |rail, own| rail.on_lost(side % 2, loss, now, own));
        }
        self.release_if_ready(now, act);
    }

    fn on_deadline(&mut self, now: Instant, act: &mut Actions) {
        for k in 0..self.rails.len() {
            if !self.rails[k].is_done() && self.rails[k].deadline().is_some_and(|d| d <= now) {
                self.on(k, act, |rail, own| rail.on_deadline(now, own));
            }
        }
        self.release_if_ready(now, act);
    }

    fn deadline(&self) -> Option<Instant> {
        self.rails.iter().filter(|r| !r.is_done()).filter_map(|r| r.deadline()).min()
    }

    fn is_done(&self) -> bool {
        self.rails.iter().all(|r| r.is_done())
    }
}
