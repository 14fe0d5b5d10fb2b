//! Every rail's test sequence driven at once, with one "go" per test (pure, like the sequence
//! it wraps): each rail is its own `PairSequence` (its own agents' sessions, so its own
//! context, PD, CQ and QPs, and its own deadlines); each waits connected until every rail still
//! running has reached the same point, then all are released together. A rail that ends (a
//! failed test, a lost agent) leaves the others running.

use crate::control::drive::{Actions, Conversation};
use crate::control::protocol::Reply;
use crate::outcome::loss::Loss;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::protocol::{Endpoint, Request, RunResult, Target, TestKind};
    use crate::model::Direction;
    use crate::pair::plan::{self, PlanInput};
    use std::time::Duration;

    fn endpoint(device: &str) -> Endpoint {
        Endpoint {
            host: "n".into(),
            device: device.into(),
            port: 1,
            lid: 0,
            gid_index: Some(1),
            gid: None,
            qpns: vec![1],
            psn: 1,
            gpu: None,
            addr: 0,
            rkey: 1,
            len: 65536,
            mtu: 4096,
            link_layer: crate::model::LinkLayer::Ethernet,
            rate_gbps: None,
            ca_type: "Soft-RoCE (rxe)".into(),
            max_rd_atomic: 1,
            cm_addr: None,
            pcie_gbps: None,
            trained_low: None,
            conditions: Default::default(),
        }
    }

    fn lockstep(rails: usize) -> Lockstep {
        let plan = plan::build(&PlanInput {
            tests: vec![TestKind::WriteBw],
            size: None,
            sweep: false,
            iters: Some(10),
            duration_ms: None,
            qps: 1,
            directions: Some(vec![Direction::AtoB]),
            stall_timeout_ms: 1000,
        })
        .unwrap();
        let target = Target { device: None, port: None, gid_index: None, cm: None, conditions: Default::default(), cpu_slot: None };
        let seqs = (0..rails)
            .map(|k| PairSequence::new(plan.clone(), [target.clone(), target.clone()], [format!("a{k}"), format!("b{k}")], Duration::from_secs(60)))
            .collect();
        Lockstep::new(seqs)
    }

    fn runs(act: &mut Actions) -> Vec<usize> {
        let sides = act.sends.iter().filter(|(_, r)| matches!(r, Request::Run)).map(|(s, _)| *s).collect();
        act.sends.clear();
        sides
    }

    #[test]
    fn no_rail_starts_before_every_rail_is_connected() {
        let (mut l, now, mut act) = (lockstep(3), Instant::now(), Actions::default());
        l.start(now, &mut act);
        assert_eq!(act.sends.iter().filter(|(_, r)| matches!(r, Request::Prepare { .. })).count(), 6, "every side of every rail prepares");
        act.sends.clear();
        for side in 0..6 {
            l.on_reply(side, Reply::Ready { endpoint: endpoint(&format!("rxe{}", side / 2)) }, now, &mut act);
        }
        act.sends.clear();
        // Rails 0 and 1 connected: held, nothing runs.
        for side in 0..4 {
            l.on_reply(side, Reply::Connected, now, &mut act);
        }
        assert!(runs(&mut act).is_empty(), "held until rail 2 is connected");
        assert!(l.rails[0].is_held() && l.rails[1].is_held());
        l.on_reply(4, Reply::Connected, now, &mut act);
        assert!(runs(&mut act).is_empty());
        l.on_reply(5, Reply::Connected, now, &mut act);
        // The go: every rail's passive side (b) is started in the same step.
        assert_eq!(runs(&mut act), [1, 3, 5]);
        assert_eq!(l.goes, 1);
    }

    #[test]
    fn a_rail_that_ends_does_not_hold_the_others() {
        let (mut l, now, mut act) = (lockstep(2), Instant::now(), Actions::default());
        l.start(now, &mut act);
        for side in 0..4 {
            l.on_reply(side, Reply::Ready { endpoint: endpoint("rxe0") }, now, &mut act);
        }
        l.on_reply(0, Reply::Connected, now, &mut act);
        l.on_reply(1, Reply::Connected, now, &mut act);
        act.sends.clear();
        // Rail 1 cannot connect: it ends (could not run), rail 0 goes.
        l.on_reply(2, Reply::Error { cause: "no route".into(), remedy: "check".into() }, now, &mut act);
        assert!(l.rails[1].is_done() && l.rails[1].could_not_run.is_some());
        assert_eq!(runs(&mut act), [1]);
        // Rail 0 runs to its end; the window is kept for the aggregate.
        l.on_reply(1, Reply::Running, now, &mut act);
        l.on_reply(0, Reply::Running, now, &mut act);
        let done = RunResult { iterations: 10, bytes: 655_360, elapsed_ns: 1000, ..RunResult::default() };
        l.on_reply(0, Reply::Done { result: done }, now, &mut act);
        l.on_reply(1, Reply::Done { result: RunResult::default() }, now, &mut act);
        l.on_reply(0, Reply::Finished, now, &mut act);
        l.on_reply(1, Reply::Finished, now, &mut act);
        assert!(l.is_done());
        assert_eq!(l.rails[0].results.len(), 1);
        assert_eq!(l.rails[0].windows[0].map(|w| w.bytes), Some(655_360));
    }
}
