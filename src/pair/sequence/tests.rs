use super::*;
use crate::control::protocol::TestKind;
use crate::model::Direction;
use crate::outcome::loss::LossKind;
use crate::pair::plan::{self, PlanInput};

/// A channel that ended without an exit status.
fn gone(agent: &str, why: &str) -> Loss {
    Loss::new(agent, LossKind::Gone { why: why.into(), tail: String::new() })
}

fn plan(tests: &[TestKind], directions: &[Direction]) -> Vec<PlannedTest> {
    plan::build(&PlanInput {
        tests: tests.to_vec(),
        size: None,
        sweep: false,
        iters: Some(100),
        duration_ms: None,
        qps: 1,
        directions: Some(directions.to_vec()),
        stall_timeout_ms: 5000,
    })
    .unwrap()
}

fn endpoint(host: &str) -> Endpoint {
    Endpoint {
        host: host.into(),
        device: "mlx5_0".into(),
        port: 1,
        lid: 0,
        gid_index: Some(3),
        gid: Some("::ffff:10.0.0.1".parse().unwrap()),
        qpns: vec![17],
        psn: 1,
        addr: 0x1000,
        rkey: 7,
        len: 65536,
        mtu: 4096,
        link_layer: crate::model::LinkLayer::Ethernet,
        rate_gbps: Some(200.0),
        ca_type: "ConnectX-7".into(),
        max_rd_atomic: 16,
        cm_addr: None,
        pcie_gbps: None,
        trained_low: None,
        conditions: Default::default(),
        gpu: None,
    }
}

fn bw_done() -> Reply {
    Reply::Done { result: RunResult { iterations: 100, bytes: 6_553_600, elapsed_ns: 300_000, ..RunResult::default() } }
}

struct Script {
    seq: PairSequence,
    now: Instant,
    act: Actions,
}

impl Script {
    fn new(plan: Vec<PlannedTest>) -> Script {
        let target = Target { device: None, port: None, gid_index: None, cm: None, conditions: Default::default(), cpu_slot: None };
        let seq = PairSequence::new(plan, [target.clone(), target], ["n1".into(), "n2".into()], Duration::from_secs(60));
        let mut s = Script { seq, now: Instant::now(), act: Actions::default() };
        s.seq.start(s.now, &mut s.act);
        s
    }

    /// The requests sent since the last call, as (side, type) pairs.
    fn sent(&mut self) -> Vec<(usize, &'static str)> {
        let out = self.act.sends.iter().map(|(side, r)| (*side, kind(r))).collect();
        self.act.sends.clear();
        out
    }

    fn reply(&mut self, side: usize, reply: Reply) {
        self.seq.on_reply(side, reply, self.now, &mut self.act);
    }
}

fn kind(r: &Request) -> &'static str {
    match r {
        Request::Hello { .. } => "hello",
        Request::Inventory => "inventory",
        Request::Rails { .. } => "rails",
        Request::Prepare { .. } => "prepare",
        Request::Connect { .. } => "connect",
        Request::Run => "run",
        Request::Stop => "stop",
        Request::Finish => "finish",
        Request::Bye => "bye",
        Request::Check => "check",
        Request::PrepareMember { .. } => "prepare_member",
        Request::ConnectHops { .. } => "connect_hops",
    }
}

/// Both sides answer `prepare` and then `connect`.
fn ready_and_connected(s: &mut Script) {
    s.reply(0, Reply::Ready { endpoint: endpoint("a") });
    s.reply(1, Reply::Ready { endpoint: endpoint("b") });
    s.reply(0, Reply::Connected);
    s.reply(1, Reply::Connected);
}

/// Drives one a->b bandwidth test to the point where both sides run.
fn up_to_running(s: &mut Script) {
    assert_eq!(s.sent(), [(0, "prepare"), (1, "prepare")]);
    s.reply(1, Reply::Ready { endpoint: endpoint("b") });
    assert_eq!(s.sent(), [], "connect waits for both endpoints");
    s.reply(0, Reply::Ready { endpoint: endpoint("a") });
    assert_eq!(s.sent(), [(0, "connect"), (1, "connect")]);
    s.reply(0, Reply::Connected);
    s.reply(1, Reply::Connected);
    assert_eq!(s.sent(), [(1, "run")], "the passive side starts first");
    s.reply(1, Reply::Running);
    assert_eq!(s.sent(), [(0, "run")]);
    s.reply(0, Reply::Running);
    assert_eq!(s.sent(), []);
}

#[test]
fn a_plan_runs_in_protocol_order() {
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::AtoB, Direction::BtoA]));
    up_to_running(&mut s);
    s.reply(0, bw_done());
    assert_eq!(s.sent(), [(1, "stop")]);
    s.reply(1, Reply::Done { result: RunResult::default() });
    assert_eq!(s.sent(), [(0, "finish"), (1, "finish")]);
    s.reply(1, Reply::Finished);
    s.reply(0, Reply::Finished);
    // Next test (b->a): A is passive now and starts first.
    assert_eq!(s.sent(), [(0, "prepare"), (1, "prepare")]);
    ready_and_connected(&mut s);
    assert_eq!(s.sent()[2..], [(0, "run")]);
    s.reply(0, Reply::Running);
    s.reply(1, Reply::Running);
    s.reply(1, bw_done());
    s.reply(0, Reply::Done { result: RunResult::default() });
    s.reply(0, Reply::Finished);
    s.reply(1, Reply::Finished);
    assert!(s.seq.is_done());
    assert!(s.seq.could_not_run.is_none());
    assert_eq!(s.seq.results.len(), 2);
    assert!(s.seq.results.iter().all(|r| r.error.is_none() && r.bw_gbps.is_some_and(|g| g > 170.0)));
    assert_eq!(s.seq.endpoints.as_ref().map(|(a, b)| (a.host.as_str(), b.host.as_str())), Some(("a", "b")));
    assert_eq!(s.seq.discarded, [false, false]);
}

#[test]
fn bidirectional_starts_both_at_once_and_adds_them_up() {
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::Bidi]));
    s.sent();
    ready_and_connected(&mut s);
    // Both are told to run in the same step: neither waits for the other's answer.
    assert_eq!(s.sent()[2..], [(0, "run"), (1, "run")]);
    s.reply(0, Reply::Running);
    s.reply(1, Reply::Running);
    assert_eq!(s.sent(), []);
    s.reply(1, bw_done());
    assert_eq!(s.sent(), [], "still waiting for A");
    s.reply(0, bw_done());
    assert_eq!(s.sent(), [(0, "finish"), (1, "finish")], "nobody passive to stop");
    s.reply(0, Reply::Finished);
    s.reply(1, Reply::Finished);
    let bw = s.seq.results[0].bw_gbps.unwrap();
    assert!((bw - 2.0 * 6_553_600.0 * 8.0 / 300_000.0).abs() < 0.01, "{bw}");
}

#[test]
fn start_skew_does_not_inflate_bidirectional_bandwidth() {
    // Issue 13: B starts 300 us after A (a slow control channel). Each side alone ran 300 us
    // at 174.8 Gb/s; summing the two rates would claim 349.5 Gb/s although the two windows
    // overlapped only partly. Over the window that holds both, it is half that.
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::Bidi]));
    s.sent();
    ready_and_connected(&mut s);
    s.sent();
    s.reply(0, Reply::Running);
    s.now += std::time::Duration::from_micros(300);
    s.reply(1, Reply::Running);
    s.reply(0, bw_done());
    s.reply(1, bw_done());
    s.reply(0, Reply::Finished);
    s.reply(1, Reply::Finished);
    let bw = s.seq.results[0].bw_gbps.unwrap();
    let summed = 2.0 * 6_553_600.0 * 8.0 / 300_000.0;
    assert!((bw - summed / 2.0).abs() < 0.01, "{bw} Gb/s, the summed rates would be {summed}");
}

#[test]
fn a_fabric_failure_is_a_result_and_ends_the_plan() {
    let mut s = Script::new(plan(&[TestKind::WriteBw, TestKind::SendLat], &[Direction::AtoB]));
    up_to_running(&mut s);
    s.reply(0, Reply::Error { cause: "completion error: transport retry counter exceeded".into(), remedy: "check the cable".into() });
    assert_eq!(s.sent(), [(1, "stop")]);
    s.reply(1, Reply::Done { result: RunResult::default() });
    assert_eq!(s.sent(), [(0, "finish"), (1, "finish")]);
    s.reply(0, Reply::Finished);
    s.reply(1, Reply::Finished);
    assert!(s.seq.is_done());
    assert!(s.seq.could_not_run.is_none(), "ran and failed: exit 1, not 2");
    assert_eq!(s.seq.results.len(), 1, "the plan stops at the failed test");
    let r = &s.seq.results[0];
    assert_eq!(r.error.as_deref(), Some("n1: completion error: transport retry counter exceeded"));
    assert_eq!(r.remedy.as_deref(), Some("check the cable"));
    assert_eq!(s.seq.discarded, [false, false], "both sides answered: still in step");
}

#[test]
fn a_silent_side_after_a_failure_is_discarded_not_waited_for() {
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::AtoB]));
    up_to_running(&mut s);
    s.reply(1, Reply::Error { cause: "receive completion error".into(), remedy: "r".into() });
    assert_eq!(s.sent(), [(0, "stop")], "the active side is stopped too");
    let late = s.seq.deadline().unwrap();
    assert!(late <= s.now + deadline::STOP);
    s.seq.on_deadline(late, &mut s.act);
    assert!(s.seq.is_done());
    assert_eq!(s.act.discard, [0], "A never answered stop: out of step");
    assert!(s.seq.results[0].error.as_deref().unwrap().starts_with("n2: receive completion error"));
    assert!(s.seq.could_not_run.is_none());
}

#[test]
fn a_lost_agent_means_the_test_could_not_run() {
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::AtoB]));
    up_to_running(&mut s);
    s.seq.on_lost(1, gone("n2", "the agent exited (signal: 9)"), s.now, &mut s.act);
    assert!(s.seq.is_done());
    let f = crate::report::loss::words(s.seq.could_not_run.as_ref().unwrap());
    assert_eq!(f.0, "n2: the agent exited (signal: 9) (agent lost while running write_bw a->b 65536 B)");
    let mut discarded = s.act.discard.clone();
    discarded.sort();
    assert_eq!(discarded, [0, 1], "the survivor is told to stop too");
    assert_eq!(s.seq.discarded, [true, true]);
}

#[test]
fn silence_bad_devices_and_strange_replies_could_not_run() {
    let mut s = Script::new(plan(&[TestKind::SendLat], &[Direction::AtoB]));
    s.sent();
    s.reply(0, Reply::Ready { endpoint: endpoint("a") });
    let limit = s.seq.deadline().unwrap();
    s.seq.on_deadline(limit, &mut s.act);
    let f = crate::report::loss::words(s.seq.could_not_run.as_ref().unwrap());
    assert_eq!(f.0, "n2: no answer within 30 s while preparing send_lat a->b 2 B");

    let mut s = Script::new(plan(&[TestKind::SendLat], &[Direction::AtoB]));
    s.reply(1, Reply::Error { cause: "no device 'mlx5_9'".into(), remedy: "see `fabcheck devices`".into() });
    assert_eq!(crate::report::loss::words(s.seq.could_not_run.as_ref().unwrap()).0, "n2: no device 'mlx5_9'");
    assert!(s.seq.results.is_empty());

    let mut s = Script::new(plan(&[TestKind::SendLat], &[Direction::AtoB]));
    s.reply(0, Reply::Finished);
    assert!(crate::report::loss::words(s.seq.could_not_run.as_ref().unwrap()).0.contains("unexpected reply"));
    assert_eq!(s.seq.discarded, [true, true]);
}

#[test]
fn a_run_that_never_ends_times_out_at_the_test_timeout() {
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::AtoB]));
    up_to_running(&mut s);
    assert_eq!(s.seq.deadline(), Some(s.now + Duration::from_secs(60)));
    s.seq.on_deadline(s.now + Duration::from_secs(60), &mut s.act);
    assert_eq!(crate::report::loss::words(s.seq.could_not_run.as_ref().unwrap()).0, "n1: no answer within 60 s while running write_bw a->b 65536 B");
}

#[test]
fn replies_after_the_end_are_ignored() {
    let mut s = Script::new(plan(&[TestKind::WriteBw], &[Direction::AtoB]));
    s.seq.on_lost(0, gone("n1", "gone"), s.now, &mut s.act);
    s.act.sends.clear();
    s.reply(1, Reply::Ready { endpoint: endpoint("b") });
    assert!(s.act.sends.is_empty() && s.seq.is_done());
}
