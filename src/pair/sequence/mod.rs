//! One pair's test plan as a pure state machine: the [`Conversation`] `pair` runs once and
//! `mesh` runs for every pair of a round, all on one thread.
//!
//! Per test: `prepare` both sides -> `ready` (endpoints); `connect` each to the other ->
//! `connected`; `run` the passive side first, then the active one(s), each answering
//! `running`; the active sides end with `done` (or an error); the passive ones are told
//! `stop` and answer `done`; `finish` both -> `finished`. Every step has a deadline.
//!
//! Two ways to end early, kept apart because they mean different things to the operator:
//! - the test ran and the fabric failed it (a completion error, a stall): the result carries
//!   the error, the plan stops there, exit 1;
//! - the test could not run (agent lost, no answer, a bad device name, Ctrl-C): exit 2.
//!
//! A side that still owes a reply when the sequence gives up is out of step; its channel is
//! discarded, so a stale reply can never be read as the answer to a later request.

use super::plan::PlannedTest;
use crate::control::drive::{Actions, Conversation};
use crate::control::protocol::{Endpoint, Reply, Request, Role, RunResult, Target};
use crate::outcome::loss::{Loss, LossKind, Step};
use crate::outcome::TestResult;
use crate::perf::summary;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Deadlines for each step; a step that misses its deadline ends the run (exit 2).
pub mod deadline {
    use std::time::Duration;
    pub const PREPARE: Duration = Duration::from_secs(30);
    pub const CONNECT: Duration = Duration::from_secs(15);
    pub const START: Duration = Duration::from_secs(15);
    pub const STOP: Duration = Duration::from_secs(15);
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Prepare,
    Connect,
    /// Connected, waiting for the sibling rails' sequences: `pair --rails` starts every rail
    /// with one "go" ([`PairSequence::release`]).
    Held,
    /// Starting `order[k]`.
    Start(usize),
    Run,
    Stop,
    Finish,
    Done,
}

/// The reply a side owes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Owe {
    Nothing,
    Ready,
    Connected,
    Running,
    /// Its run's end: `done` or an error.
    Result,
    Finished,
}

pub struct PairSequence {
    plan: Vec<PlannedTest>,
    targets: [Target; 2],
    labels: [String; 2],
    test_timeout: Duration,
    index: usize,
    phase: Phase,
    owe: [Owe; 2],
    ready: [Option<Endpoint>; 2],
    runs: [Option<RunResult>; 2],
    /// When each side said it was running (the controller's clock): the skew between the two
    /// starts of a bidirectional test widens the window its figure is computed over.
    running_at: [Option<Instant>; 2],
    /// The current test failed on the fabric; the sides are being stopped and released.
    failure: Option<Loss>,
    deadline: Option<Instant>,
    /// Results so far, in plan order; a failed test's result is the last.
    pub results: Vec<TestResult>,
    /// Both sides' endpoints, from the first test that reached them.
    pub endpoints: Option<(Endpoint, Endpoint)>,
    /// Why the plan could not run (exit 2): typed, the words chosen where it is printed.
    pub could_not_run: Option<Loss>,
    /// Sides whose channel was discarded (lost or out of step): start them afresh.
    pub discarded: [bool; 2],
    /// Hold each test once connected until released (`pair --rails`).
    gate: bool,
    released: bool,
    /// Per result (same index), the measured window of a bandwidth test on the controller's
    /// clock: what the node aggregate of `pair --rails` is computed from.
    pub windows: Vec<Option<Window>>,
    /// Per result (same index), what each side's port carried per priority (`pair.qos`).
    pub traffic: Vec<[Option<crate::model::traffic::PrioTraffic>; 2]>,
    /// Per result (same index), each side's `--validate` check of the data it received.
    pub data: Vec<[Option<crate::model::DataCheck>; 2]>,
}

/// A bandwidth test's traffic: all its active sides' bytes and messages, and the window they
/// moved in, from the first side's start as the controller saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start: Instant,
    pub elapsed_ns: u64,
    pub bytes: u64,
    pub messages: u64,
}

impl PairSequence {
    pub fn new(plan: Vec<PlannedTest>, targets: [Target; 2], labels: [String; 2], test_timeout: Duration) -> PairSequence {
        PairSequence {
            plan,
            targets,
            labels,
            test_timeout,
            index: 0,
            phase: Phase::Prepare,
            owe: [Owe::Nothing; 2],
            ready: [None, None],
            runs: [None, None],
            running_at: [None, None],
            failure: None,
            deadline: None,
            results: Vec::new(),
            endpoints: None,
            could_not_run: None,
            discarded: [false; 2],
            gate: false,
            released: false,
            windows: Vec::new(),
            traffic: Vec::new(),
            data: Vec::new(),
        }
    }

    /// A sequence that waits, before each test's run, for [`PairSequence::release`].
    pub fn gated(mut self) -> PairSequence {
        self.gate = true;
        self
    }

    /// Connected and waiting for the go.
    pub fn is_held(&self) -> bool {
        self.phase == Phase::Held
    }

    /// Which test of the plan it is at.
    pub fn test_index(&self) -> usize {
        self.index
    }

    /// The go: runs the held test now.
    pub fn release(&mut self, now: Instant, act: &mut Actions) {
        if self.phase == Phase::Held {
            self.released = true;
            self.phase = Phase::Connect;
            self.advance(now, act);
        }
    }

    fn test(&self) -> &PlannedTest {
        &self.plan[self.index]
    }

    /// The test running now (`--report-every` labels its figures with it).
    pub fn current(&self) -> Option<&PlannedTest> {
        self.plan.get(self.index)
    }

    /// `write_bw a->b 65536 B`, for messages.
    fn what(&self) -> String {
        let t = self.test();
        format!("{} {} {} B", t.spec.test.name(), t.direction.name(), t.spec.size)
    }

    /// What the current step is called, and its time limit.
    fn step(&self) -> (&'static str, Duration) {
        match self.phase {
            Phase::Prepare => ("preparing", deadline::PREPARE),
            Phase::Connect | Phase::Held => ("connecting", deadline::CONNECT),
            Phase::Start(_) => ("starting", deadline::START),
            Phase::Run => ("running", self.test_timeout),
            Phase::Stop => ("stopping", deadline::STOP),
            Phase::Finish | Phase::Done => ("finishing", deadline::STOP),
        }
    }

    fn roles(&self) -> [Role; 2] {
        let (a, b) = self.test().direction.roles();
        [a, b]
    }

    /// Both sides send (bidirectional): they are started together, so their windows overlap.
    fn together(&self) -> bool {
        self.roles() == [Role::Both, Role::Both]
    }

    /// Whether start step `k` is done: its side (both sides, when started together) answered.
    fn started(&self, k: usize) -> bool {
        if self.together() {
            self.owe.iter().all(|&o| o != Owe::Running)
        } else {
            self.owe[self.order()[k]] != Owe::Running
        }
    }

    /// Passive sides first, so receives are posted and loops running before the first send.
    fn order(&self) -> [usize; 2] {
        if self.roles()[1] == Role::Passive {
            [1, 0]
        } else {
            [0, 1]
        }
    }

    fn begin_test(&mut self, now: Instant, act: &mut Actions) {
        self.ready = [None, None];
        self.runs = [None, None];
        self.running_at = [None, None];
        self.failure = None;
        self.released = false;
        for side in 0..2 {
            let spec = self.test().spec_for(side == 0);
            act.send(side, Request::Prepare { target: self.targets[side].clone(), spec });
            self.owe[side] = Owe::Ready;
        }
        self.enter(Phase::Prepare, deadline::PREPARE, now);
    }

    fn enter(&mut self, phase: Phase, limit: Duration, now: Instant) {
        self.phase = phase;
        self.deadline = Some(crate::sys::time::deadline(now, limit));
    }

    fn send(&mut self, side: usize, request: Request, owe: Owe, act: &mut Actions) {
        act.send(side, request);
        self.owe[side] = owe;
    }

    /// Moves on while the current step is complete.
    fn advance(&mut self, now: Instant, act: &mut Actions) {
        loop {
            let idle = |s: usize| self.owe[s] == Owe::Nothing;
            match self.phase {
                Phase::Prepare if idle(0) && idle(1) => {
                    let (Some(a), Some(b)) = (self.ready[0].clone(), self.ready[1].clone()) else { return };
                    self.send(0, Request::Connect { peer: b }, Owe::Connected, act);
                    self.send(1, Request::Connect { peer: a }, Owe::Connected, act);
                    self.enter(Phase::Connect, deadline::CONNECT, now);
                }
                Phase::Connect if idle(0) && idle(1) && self.gate && !self.released => {
                    // No deadline while held: the sibling rails' own deadlines bound the wait.
                    self.phase = Phase::Held;
                    self.deadline = None;
                    return;
                }
                Phase::Connect if idle(0) && idle(1) && self.together() => {
                    // Receives were posted while connecting: both may start at once.
                    self.send(0, Request::Run, Owe::Running, act);
                    self.send(1, Request::Run, Owe::Running, act);
                    self.enter(Phase::Start(1), deadline::START, now);
                }
                Phase::Connect if idle(0) && idle(1) => {
                    let first = self.order()[0];
                    self.send(first, Request::Run, Owe::Running, act);
                    self.enter(Phase::Start(0), deadline::START, now);
                }
                Phase::Start(k) if self.started(k) => {
                    if k == 0 {
                        let second = self.order()[1];
                        self.send(second, Request::Run, Owe::Running, act);
                        self.enter(Phase::Start(1), deadline::START, now);
                    } else {
                        let limit = self.test_timeout;
                        self.enter(Phase::Run, limit, now);
                    }
                }
                Phase::Run => {
                    let roles = self.roles();
                    if (0..2).any(|s| roles[s] != Role::Passive && self.owe[s] == Owe::Result) {
                        return;
                    }
                    self.stop_running(now, act);
                }
                Phase::Stop if self.owe.iter().all(|&o| o != Owe::Result && o != Owe::Running) => {
                    for side in 0..2 {
                        self.send(side, Request::Finish, Owe::Finished, act);
                    }
                    self.enter(Phase::Finish, deadline::STOP, now);
                }
                Phase::Finish if idle(0) && idle(1) => return self.end_test(now, act),
                _ => return,
            }
        }
    }

    /// Tells every side still running to stop.
    fn stop_running(&mut self, now: Instant, act: &mut Actions) {
        for side in 0..2 {
            if self.owe[side] == Owe::Result {
                act.send(side, Request::Stop);
            }
        }
        self.enter(Phase::Stop, deadline::STOP, now);
    }

    fn end_test(&mut self, now: Instant, act: &mut Actions) {
        // A failed test ends the plan.
        if self.record_result() {
            return self.finish();
        }
        self.index += 1;
        if self.index < self.plan.len() {
            self.begin_test(now, act);
        } else {
            self.finish();
        }
    }

    /// Keeps the current test's result (with its failure, if any) and both endpoints; says
    /// whether it failed.
    fn record_result(&mut self) -> bool {
        let mut result = self.summarise();
        self.windows.push(self.window());
        self.traffic.push([0, 1].map(|side| self.runs[side].as_ref().and_then(|r| r.prio_traffic.clone())));
        self.data.push([0, 1].map(|side| self.runs[side].as_ref().and_then(|r| r.data)));
        if let (Some(a), Some(b)) = (&self.ready[0], &self.ready[1]) {
            self.endpoints.get_or_insert_with(|| (a.clone(), b.clone()));
        }
        let failed = self.failure.is_some();
        if let Some(loss) = self.failure.take() {
            // The document's result says why in words.
            let (cause, remedy) = crate::report::loss::words(&loss);
            result.error = Some(cause);
            result.remedy = Some(remedy);
        }
        self.results.push(result);
        failed
    }

    fn finish(&mut self) {
        self.phase = Phase::Done;
        self.deadline = None;
    }

    /// The plan cannot go on: both channels are discarded (either side may be mid-step).
    fn cannot_run(&mut self, loss: Loss, act: &mut Actions) {
        self.could_not_run = Some(loss);
        for side in 0..2 {
            self.discard(side, act);
        }
        self.finish();
    }

    fn discard(&mut self, side: usize, act: &mut Actions) {
        if !self.discarded[side] {
            self.discarded[side] = true;
            act.discard.push(side);
        }
        self.owe[side] = Owe::Nothing;
    }

    /// Gives up on a failed test's cleanup: sides that still owe a reply are out of step.
    fn abandon_failed_test(&mut self, act: &mut Actions) {
        for side in 0..2 {
            if self.owe[side] != Owe::Nothing {
                self.discard(side, act);
            }
        }
        self.record_result();
        self.finish();
    }

    /// An agent reported an error for side `side`'s outstanding request.
    fn on_error(&mut self, owed: Owe, failure: Loss, now: Instant, act: &mut Actions) {
        let ran = owed == Owe::Result;
        match self.phase {
            // The run had begun on that side: the fabric failed the test.
            Phase::Start(_) | Phase::Run if ran => {
                self.failure = Some(failure);
                self.stop_running(now, act);
            }
            Phase::Stop => {
                self.failure.get_or_insert(failure);
            }
            Phase::Finish if self.failure.is_some() => {}
            _ => self.cannot_run(failure, act),
        }
    }

    /// The current bandwidth test's window (`None` for latency tests and runs without data).
    fn window(&self) -> Option<Window> {
        let t = self.test();
        if t.spec.test.is_latency() {
            return None;
        }
        let (ra, rb) = t.direction.roles();
        let active: Vec<(usize, &RunResult)> = [(0, ra), (1, rb)]
            .into_iter()
            .filter(|(_, role)| *role != Role::Passive)
            .filter_map(|(s, _)| Some((s, self.runs[s].as_ref()?)))
            .collect();
        let starts: Vec<Instant> = active.iter().filter_map(|(s, _)| self.running_at[*s]).collect();
        let start = starts.iter().min().copied()?;
        // Each side's window from its own start: the last to end closes the test's.
        let end = active.iter().filter_map(|(s, r)| Some(self.running_at[*s]? + Duration::from_nanos(r.elapsed_ns))).max()?;
        let elapsed_ns = u64::try_from((end - start).as_nanos()).unwrap_or(u64::MAX);
        Some(Window { start, elapsed_ns, bytes: active.iter().map(|(_, r)| r.bytes).sum(), messages: active.iter().map(|(_, r)| r.iterations).sum() })
    }

    fn summarise(&self) -> TestResult {
        let t = self.test();
        let ea = self.ready[0].as_ref();
        let eb = self.ready[1].as_ref();
        // One port under both agents (a loopback run): its counters are one set, not two.
        let same_port = matches!((ea, eb), (Some(a), Some(b)) if a.host == b.host && a.device == b.device && a.port == b.port);
        let skew = match self.running_at {
            [Some(a), Some(b)] => a.max(b) - a.min(b),
            _ => Duration::ZERO,
        };
        summarise(t, &self.runs, same_port, skew)
    }
}

impl Conversation for PairSequence {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        if self.plan.is_empty() {
            return self.finish();
        }
        self.begin_test(now, act);
    }

    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        if self.phase == Phase::Done {
            return;
        }
        let owed = self.owe[side];
        match (owed, reply) {
            // `--report-every`'s figures, read by whoever drives the sequence: no step.
            (Owe::Result, Reply::Progress { .. }) => {}
            (Owe::Ready, Reply::Ready { endpoint }) => {
                self.ready[side] = Some(endpoint);
                self.owe[side] = Owe::Nothing;
            }
            (Owe::Connected, Reply::Connected) | (Owe::Finished, Reply::Finished) => self.owe[side] = Owe::Nothing,
            (Owe::Running, Reply::Running) => {
                self.owe[side] = Owe::Result;
                self.running_at[side] = Some(now);
                // Started while the others are being stopped: stop it too.
                if self.phase == Phase::Stop {
                    act.send(side, Request::Stop);
                }
            }
            (Owe::Result, Reply::Done { result }) => {
                self.runs[side] = Some(result);
                self.owe[side] = Owe::Nothing;
            }
            (owed, Reply::Error { cause, remedy }) if owed != Owe::Nothing => {
                self.owe[side] = Owe::Nothing;
                let refused = Loss::new(&self.labels[side], LossKind::Refused { step: Step::Test, cause, remedy });
                self.on_error(owed, refused, now, act);
            }
            (_, other) => {
                let odd = Loss::new(&self.labels[side], LossKind::Protocol(format!("unexpected reply {other:?} while {}", self.what())));
                return self.cannot_run(odd, act);
            }
        }
        self.advance(now, act);
    }

    fn on_lost(&mut self, side: usize, loss: Loss, _now: Instant, act: &mut Actions) {
        if self.phase == Phase::Done {
            return;
        }
        let what = format!("{} {}", self.step().0, self.what());
        self.discard(side, act);
        if self.failure.is_some() {
            // Already failed on the fabric; the loss only ends the cleanup.
            return self.abandon_failed_test(act);
        }
        self.cannot_run(loss.during(what), act);
    }

    fn on_deadline(&mut self, _now: Instant, act: &mut Actions) {
        if self.phase == Phase::Done {
            return;
        }
        if self.failure.is_some() {
            return self.abandon_failed_test(act);
        }
        let (verb, limit) = self.step();
        let late = (0..2).find(|&s| self.owe[s] != Owe::Nothing).unwrap_or(0);
        let silent = Loss::new(&self.labels[late], LossKind::Timeout { step: Step::Test, waited: limit }).during(format!("{verb} {}", self.what()));
        self.cannot_run(silent, act);
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }
}

/// One test's result from the sides' raw runs.
fn summarise(t: &PlannedTest, runs: &[Option<RunResult>; 2], same_port: bool, skew: Duration) -> TestResult {
    let spec = &t.spec;
    let (ra, rb) = t.direction.roles();
    let active: Vec<&RunResult> =
        [(ra, &runs[0]), (rb, &runs[1])].into_iter().filter(|(role, _)| *role != Role::Passive).filter_map(|(_, r)| r.as_ref()).collect();
    let mut counters = BTreeMap::new();
    let sides: &[(&str, &Option<RunResult>)] = if same_port { &[("a", &runs[0])] } else { &[("a", &runs[0]), ("b", &runs[1])] };
    for &(name, run) in sides {
        if let Some(r) = run {
            for (counter, delta) in &r.counter_deltas {
                counters.insert(format!("{name}:{counter}"), *delta);
            }
        }
    }
    let iterations = active.iter().map(|r| r.iterations).sum();
    let mut result = TestResult {
        paths: Vec::new(),
        test: spec.test,
        direction: t.direction,
        size: spec.size,
        iterations,
        qps: spec.qps,
        lat_us: None,
        bw_gbps: None,
        peak_gbps: None,
        msg_rate_mpps: None,
        counters,
        error: None,
        remedy: None,
        under_load: None,
    };
    if spec.test.is_latency() {
        result.lat_us = active.first().and_then(|r| r.lat);
        // lat_under_load: the idle phase beside the loaded one, and what the load moved.
        if let (Some(run), Some(loaded)) = (active.first(), result.lat_us) {
            let load_gbps = summary::gbps(run.bytes, run.elapsed_ns);
            result.under_load = run.idle_lat.as_deref().and_then(|idle| crate::outcome::UnderLoad::of(*idle, &loaded, load_gbps, spec.qps));
        }
    } else if !active.is_empty() {
        // One direction: its own window. Both (bidi): everything both sides moved, over a
        // window that holds both of theirs: the longer one, widened by how far apart they
        // started as the controller saw it. Each side's own rate summed would count a side
        // that started late as if it had overlapped the whole time.
        let bytes: u64 = active.iter().map(|r| r.bytes).sum();
        let messages: u64 = active.iter().map(|r| r.iterations).sum();
        let longest = active.iter().map(|r| r.elapsed_ns).max().unwrap_or(0);
        let window = if active.len() > 1 { longest.saturating_add(u64::try_from(skew.as_nanos()).unwrap_or(u64::MAX)) } else { longest };
        let bw = summary::gbps(bytes, window);
        let peak = active.iter().filter_map(|r| r.peak_gbps).fold(0.0, f64::max);
        result.bw_gbps = Some(bw);
        result.msg_rate_mpps = Some(summary::mpps(messages, window));
        result.peak_gbps = Some(peak.max(bw));
        // `--paths`: each QP's own rate (empty without).
        result.paths = crate::pair::paths::figures(&active);
    }
    result
}

#[cfg(test)]
mod tests;
