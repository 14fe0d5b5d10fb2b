//! One run of a collective over the agents, as a `drive` conversation over every member's link
//! (pure: tested without agents). Every member is prepared (`prepare_member`: its QPs and
//! rings, answered with its end of each hop), then each is given the far end of each of its
//! hops (`connect_hops`), then all are started at once (`run`), their results gathered
//! (`member_done`) and their resources released (`finish`). The first member that errors, is
//! lost or is late ends the run, naming it; the caller then closes every session.

use crate::collective::members::RunError;
use crate::control::drive::{Actions, Conversation};
use crate::control::protocol::{self, HopPeer, Reply, Request, Target};
use crate::model::collective::{HopId, MemberPlan, MemberResult};
use crate::model::Endpoint;
use crate::outcome::loss::{Loss, LossKind, Step};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The stall limit each agent is given: no progress on a hop this long fails it, naming the
/// hop (at most a quarter of the run's deadline, so the agent's words arrive in time).
const STALL: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Prepare,
    Connect,
    Run,
    Finish,
    Done,
}

pub(super) struct RunMembers<'a> {
    plans: &'a [MemberPlan],
    labels: Vec<String>,
    targets: Vec<Target>,
    phase: Phase,
    /// Per side, whether it answered the current phase.
    answered: Vec<bool>,
    ready: Vec<Vec<HopPeer>>,
    results: Vec<Option<MemberResult>>,
    limit: Duration,
    deadline: Option<Instant>,
    /// `-D`: how long the members run before they are told to stop, and when that is (set when
    /// the run starts).
    stop_after: Option<Duration>,
    stop_at: Option<Instant>,
    outcome: Option<Result<Vec<MemberResult>, RunError>>,
    /// `--report-every`: where each member's interval figures go.
    live: Option<&'a mut crate::collective::live::Live>,
}

impl<'a> RunMembers<'a> {
    /// Side `i` runs `plans[i]` on `targets[i]`, its agent named `labels[i]`; the whole run
    /// (prepare to finish) has `limit`.
    pub(super) fn new(plans: &'a [MemberPlan], labels: Vec<String>, targets: Vec<Target>, limit: Duration) -> RunMembers<'a> {
        let n = plans.len();
        RunMembers {
            plans,
            labels,
            targets,
            phase: Phase::Prepare,
            answered: vec![false; n],
            ready: vec![Vec::new(); n],
            results: vec![None; n],
            limit,
            deadline: None,
            stop_after: None,
            stop_at: None,
            outcome: None,
            live: None,
        }
    }

    /// Each member reports its figures every `live.every_ms` while it runs, into `live`.
    pub(super) fn reporting(mut self, live: Option<&'a mut crate::collective::live::Live>) -> RunMembers<'a> {
        self.live = live;
        self
    }

    /// `-D`: the members run for `run` (from when they are all started) and are then told to
    /// stop; each answers with what it did by then. `None`: every member runs its iterations.
    pub(super) fn stopping_after(mut self, run: Option<Duration>) -> RunMembers<'a> {
        self.stop_after = run;
        self
    }

    /// The run's answer (once done): every member's result in plan order, or the first member
    /// that could not.
    pub(super) fn take_outcome(&mut self) -> Result<Vec<MemberResult>, RunError> {
        self.outcome.take().unwrap_or_else(|| {
            let member = self.plans.first().map_or(crate::model::collective::MemberId(0), |p| p.member);
            Err(RunError::Lost { member, loss: Loss::new("", LossKind::Internal("the collective run ended without an outcome".into())) })
        })
    }

    fn fail(&mut self, error: RunError, act: &mut Actions) {
        if self.outcome.is_none() {
            self.outcome = Some(Err(error));
        }
        self.phase = Phase::Done;
        self.deadline = None;
        act.discard.extend(0..self.plans.len());
    }

    fn lost(&mut self, side: usize, kind: LossKind, act: &mut Actions) {
        let loss = Loss::new(self.labels[side].clone(), kind).during(self.during());
        self.fail(RunError::Lost { member: self.plans[side].member, loss }, act);
    }

    fn during(&self) -> String {
        let what = match self.phase {
            Phase::Prepare => "preparing",
            Phase::Connect => "connecting",
            Phase::Run => "running",
            Phase::Finish | Phase::Done => "finishing",
        };
        format!("{what} the collective's member")
    }

    /// Marks `side` as answered; when all have, moves to the next phase.
    fn answered(&mut self, side: usize, now: Instant, act: &mut Actions) {
        self.answered[side] = true;
        if !self.answered.iter().all(|&a| a) {
            return;
        }
        self.answered.iter_mut().for_each(|a| *a = false);
        match self.phase {
            Phase::Prepare => match self.connect_lists() {
                Ok(lists) => {
                    for (side, peers) in lists.into_iter().enumerate() {
                        act.send(side, Request::ConnectHops { peers });
                    }
                    self.phase = Phase::Connect;
                }
                Err((side, why)) => self.lost(side, LossKind::Protocol(why), act),
            },
            Phase::Connect => {
                for side in 0..self.plans.len() {
                    act.send(side, Request::Run);
                }
                self.phase = Phase::Run;
                self.stop_at = self.stop_after.map(|d| crate::sys::time::deadline(now, d));
            }
            Phase::Run => {
                for side in 0..self.plans.len() {
                    act.send(side, Request::Finish);
                }
                self.phase = Phase::Finish;
            }
            Phase::Finish => {
                let results = self.results.iter_mut().filter_map(Option::take).collect();
                self.outcome = Some(Ok(results));
                self.phase = Phase::Done;
                self.deadline = None;
            }
            Phase::Done => {}
        }
    }

    /// Each side's far end of each of its hops: for an outbound hop the receiver's QP and ring,
    /// for an inbound hop the sender's QP. A hop whose other end no member answered is the
    /// answering side's protocol error.
    fn connect_lists(&self) -> Result<Vec<Vec<HopPeer>>, (usize, String)> {
        let mut senders: HashMap<HopId, &Endpoint> = HashMap::new();
        let mut receivers: HashMap<HopId, &Endpoint> = HashMap::new();
        for (plan, ready) in self.plans.iter().zip(&self.ready) {
            for hop in ready {
                if plan.outbound.iter().any(|h| h.id == hop.hop) {
                    senders.insert(hop.hop, &hop.endpoint);
                } else {
                    receivers.insert(hop.hop, &hop.endpoint);
                }
            }
        }
        let mut lists = Vec::with_capacity(self.plans.len());
        for (side, plan) in self.plans.iter().enumerate() {
            let far = |hop: HopId, ends: &HashMap<HopId, &Endpoint>| {
                ends.get(&hop)
                    .map(|e| HopPeer { hop, endpoint: (*e).clone() })
                    .ok_or_else(|| (side, format!("hop {} has no member at its other end in this run", hop.0)))
            };
            let mut peers = Vec::with_capacity(plan.outbound.len() + plan.inbound.len());
            for h in &plan.outbound {
                peers.push(far(h.id, &receivers)?);
            }
            for h in &plan.inbound {
                peers.push(far(h.id, &senders)?);
            }
            lists.push(peers);
        }
        Ok(lists)
    }
}

impl Conversation for RunMembers<'_> {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        self.deadline = Some(crate::sys::time::deadline(now, self.limit));
        let stall = STALL.min(self.limit / 4).max(Duration::from_millis(500));
        let every = self.live.as_ref().map(|l| l.every_ms);
        for (side, plan) in self.plans.iter().enumerate() {
            let plan = crate::model::collective::MemberPlan { report_every_ms: every, ..plan.clone() };
            let request = Request::PrepareMember { target: self.targets[side].clone(), plan, stall_timeout_ms: stall.as_millis() as u64 };
            act.send(side, request);
        }
    }

    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        let plan = &self.plans[side];
        match (self.phase, reply) {
            (Phase::Done, _) => {}
            // Asked for (`report_every_ms`) and checked by the hub (`control::figures`).
            (Phase::Run, Reply::Progress { interval }) if self.live.is_some() => {
                if let Some(live) = self.live.as_deref_mut() {
                    live.record(&self.labels[side], plan.chunk_bytes, &interval, now);
                }
            }
            (_, Reply::Error { cause, remedy }) => self.fail(RunError::Failed { member: plan.member, cause, remedy }, act),
            (Phase::Prepare, Reply::MemberReady { hops }) if !self.answered[side] => match protocol::match_hops(plan, &hops) {
                Ok(_) => {
                    self.ready[side] = hops;
                    self.answered(side, now, act);
                }
                Err(e) => self.lost(side, LossKind::Protocol(format!("member_ready: {e}")), act),
            },
            (Phase::Connect, Reply::Connected) if !self.answered[side] => self.answered(side, now, act),
            (Phase::Run, Reply::Running) => {}
            (Phase::Run, Reply::MemberDone { result }) if !self.answered[side] => match plausible(plan, &result) {
                Ok(()) => {
                    self.results[side] = Some(result);
                    self.answered(side, now, act);
                }
                Err(why) => self.lost(side, LossKind::Protocol(why), act),
            },
            (Phase::Finish, Reply::Finished) if !self.answered[side] => self.answered(side, now, act),
            (_, other) => {
                let what = format!("unexpected reply {other:?}");
                self.lost(side, LossKind::Protocol(crate::sanitise::one_line(&what).into_owned()), act)
            }
        }
    }

    fn on_lost(&mut self, side: usize, loss: Loss, _now: Instant, act: &mut Actions) {
        if self.phase == Phase::Done {
            return;
        }
        let loss = loss.during(self.during());
        self.fail(RunError::Lost { member: self.plans[side].member, loss }, act);
    }

    fn on_deadline(&mut self, now: Instant, act: &mut Actions) {
        // `-D` is up: every member is told to stop and answers with what it did.
        if self.phase == Phase::Run && self.stop_at.is_some_and(|at| now >= at) {
            self.stop_at = None;
            for side in 0..self.plans.len() {
                act.send(side, Request::Stop);
            }
            return;
        }
        // The first member that has not answered this phase is the one late.
        let side = self.answered.iter().position(|a| !a).unwrap_or(0);
        self.lost(side, LossKind::Timeout { step: Step::Test, waited: self.limit }, act);
    }

    fn deadline(&self) -> Option<Instant> {
        match self.stop_at.filter(|_| self.phase == Phase::Run) {
            Some(stop) => Some(self.deadline.map_or(stop, |d| d.min(stop))),
            None => self.deadline,
        }
    }

    fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }
}

/// A result the controller can use: for the plan's member, one figure per outbound hop at most,
/// every figure finite and not negative, no more chunks than the plan sends on the hop.
fn plausible(plan: &MemberPlan, result: &MemberResult) -> Result<(), String> {
    protocol::check_member_result(plan, result).map_err(|e| format!("member_done: {e}"))?;
    let most = plan.iters.saturating_mul(plan.steps.iter().map(|s| s.times() * s.send.len() as u64).sum::<u64>());
    for h in &result.hops {
        if !h.gbps.is_finite() || h.gbps < 0.0 || h.chunks > most {
            return Err(format!("member_done: hop {} reports {} chunks at {} Gb/s", h.hop.0, h.chunks, h.gbps));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "run_members_tests.rs"]
mod tests;
