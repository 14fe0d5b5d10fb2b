use super::*;
use crate::model::collective::{Hop, HopResult, MemberId, Step as PlanStep};

/// A ring of `n`: member i writes hop i to i+1 and receives hop i-1.
fn ring(n: u32) -> Vec<MemberPlan> {
    (0..n)
        .map(|me| {
            let pred = (me + n - 1) % n;
            MemberPlan {
                member: MemberId(me),
                outbound: vec![Hop { id: HopId(me), from: MemberId(me), to: MemberId((me + 1) % n) }],
                inbound: vec![Hop { id: HopId(pred), from: MemberId(pred), to: MemberId(me) }],
                steps: vec![PlanStep::once(vec![], vec![0]), PlanStep { wait: vec![0], send: vec![0], repeat: 2 }, PlanStep::once(vec![0], vec![])],
                chunk_bytes: 4096,
                iters: 2,
                report_every_ms: None,
                paths: 1,
            }
        })
        .collect()
}

fn endpoint(host: &str, qpn: u32) -> Endpoint {
    let mut e: Endpoint = serde_json::from_value(serde_json::json!({
        "host": host, "device": "rxe0", "port": 1, "lid": 0, "gid_index": 1, "gid": "::ffff:10.0.0.1", "qpns": [], "psn": 1,
        "addr": 0, "rkey": 0, "len": 0, "mtu": 1024, "link_layer": "Ethernet", "rate_gbps": null, "ca_type": "x", "max_rd_atomic": 1
    }))
    .unwrap();
    e.qpns = vec![qpn];
    e
}

/// Member i's ready: its outbound hop's QP is 100 + i, its inbound ring's rkey 200 + i.
fn ready(plan: &MemberPlan) -> Reply {
    let me = plan.member.0;
    let mut inbound = endpoint(&format!("n{me}"), 300 + me);
    inbound.rkey = 200 + me;
    Reply::MemberReady {
        hops: vec![
            HopPeer { hop: plan.outbound[0].id, endpoint: endpoint(&format!("n{me}"), 100 + me) },
            HopPeer { hop: plan.inbound[0].id, endpoint: inbound },
        ],
    }
}

fn done(plan: &MemberPlan) -> Reply {
    let hop = HopResult { hop: plan.outbound[0].id, chunks: 8, bytes: 8 * 4096, step_us: None, gbps: 1.5, paths: Vec::new() };
    Reply::MemberDone {
        result: MemberResult { member: plan.member, elapsed_ns: 1000, iterations: 2, hops: vec![hop], counter_deltas: vec![], window: None },
    }
}

fn labels(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("n{i}")).collect()
}

fn targets(n: usize) -> Vec<Target> {
    vec![Target { device: Some("rxe0".into()), port: Some(1), gid_index: None, cm: None, conditions: Default::default(), cpu_slot: None }; n]
}

#[test]
fn a_ring_is_prepared_connected_hop_by_hop_run_and_finished() {
    let plans = ring(3);
    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(60));
    let now = Instant::now();
    let mut act = Actions::default();
    r.start(now, &mut act);
    assert_eq!(act.sends.len(), 3);
    assert!(act.sends.iter().all(|(_, q)| matches!(q, Request::PrepareMember { stall_timeout_ms: 5000, .. })));
    act.sends.clear();
    for (side, plan) in plans.iter().enumerate() {
        r.on_reply(side, ready(plan), now, &mut act);
    }
    // Member 1 writes hop 1 into member 2's ring and receives hop 0 from member 0's QP.
    let (_, Request::ConnectHops { peers }) = &act.sends[1] else { panic!("{:?}", act.sends) };
    assert_eq!(peers[0].hop, HopId(1));
    assert_eq!((peers[0].endpoint.qpns[0], peers[0].endpoint.rkey), (302, 202), "the receiver's QP and ring");
    assert_eq!(peers[1].hop, HopId(0));
    assert_eq!(peers[1].endpoint.qpns[0], 100, "the sender's QP");
    act.sends.clear();
    for side in 0..3 {
        assert!(act.sends.is_empty(), "run waits for every member to connect");
        r.on_reply(side, Reply::Connected, now, &mut act);
    }
    assert!(act.sends.iter().all(|(_, q)| *q == Request::Run) && act.sends.len() == 3);
    act.sends.clear();
    for (side, plan) in plans.iter().enumerate() {
        r.on_reply(side, Reply::Running, now, &mut act);
        r.on_reply(side, done(plan), now, &mut act);
    }
    assert!(act.sends.iter().all(|(_, q)| *q == Request::Finish) && act.sends.len() == 3);
    for side in 0..3 {
        r.on_reply(side, Reply::Finished, now, &mut act);
    }
    assert!(r.is_done() && act.discard.is_empty());
    let results = r.take_outcome().unwrap();
    assert_eq!(results.iter().map(|m| m.member.0).collect::<Vec<_>>(), [0, 1, 2]);
}

/// `-D 30`: the members run 30 s from when all are started (the clock injected), are then told
/// to stop, and each answers with what it did; the run's deadline stays the hard limit behind.
#[test]
fn with_a_duration_every_member_is_told_to_stop_when_it_is_up_and_answers() {
    let plans = ring(3);
    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(90)).stopping_after(Some(Duration::from_secs(30)));
    let t0 = Instant::now();
    let mut act = Actions::default();
    r.start(t0, &mut act);
    for (side, plan) in plans.iter().enumerate() {
        r.on_reply(side, ready(plan), t0, &mut act);
    }
    assert_eq!(r.deadline(), Some(t0 + Duration::from_secs(90)), "no stop before the members run");
    let started = t0 + Duration::from_secs(2);
    for side in 0..3 {
        r.on_reply(side, Reply::Connected, started, &mut act);
    }
    assert_eq!(r.deadline(), Some(started + Duration::from_secs(30)), "the stop is the nearer deadline once they run");
    act.sends.clear();
    r.on_deadline(started + Duration::from_secs(30), &mut act);
    assert_eq!(act.sends.len(), 3);
    assert!(act.sends.iter().all(|(_, q)| *q == Request::Stop), "{:?}", act.sends);
    assert!(!r.is_done() && act.discard.is_empty(), "stopping is not failing");
    assert_eq!(r.deadline(), Some(t0 + Duration::from_secs(90)), "after the stop only the run's deadline is left");
    act.sends.clear();
    for (side, plan) in plans.iter().enumerate() {
        r.on_reply(side, done(plan), started + Duration::from_secs(31), &mut act);
    }
    assert!(act.sends.iter().all(|(_, q)| *q == Request::Finish) && act.sends.len() == 3);
    for side in 0..3 {
        r.on_reply(side, Reply::Finished, started + Duration::from_secs(31), &mut act);
    }
    assert_eq!(r.take_outcome().unwrap().len(), 3);
}

#[test]
fn a_member_lost_mid_run_is_named_and_every_session_closed() {
    let plans = ring(3);
    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(60));
    let now = Instant::now();
    let mut act = Actions::default();
    r.start(now, &mut act);
    for (side, plan) in plans.iter().enumerate() {
        r.on_reply(side, ready(plan), now, &mut act);
    }
    for side in 0..3 {
        r.on_reply(side, Reply::Connected, now, &mut act);
    }
    r.on_reply(0, done(&plans[0]), now, &mut act);
    r.on_lost(1, Loss::new("n1", LossKind::Gone { why: "the connection closed".into(), tail: String::new() }), now, &mut act);
    assert!(r.is_done());
    assert_eq!(act.discard, [0, 1, 2], "every agent told goodbye");
    // The others' words after it change nothing: the lost member is the cause.
    r.on_reply(2, Reply::Error { cause: "hop 1 from n1: no chunk arrived".into(), remedy: String::new() }, now, &mut act);
    match r.take_outcome() {
        Err(RunError::Lost { member, loss }) => {
            assert_eq!(member, MemberId(1));
            assert_eq!(loss.agent, "n1");
            assert!(loss.during.as_deref().unwrap_or("").contains("running"), "{loss:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_late_member_is_named_at_the_deadline_and_an_agent_error_is_its_own() {
    let plans = ring(3);
    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(2));
    let now = Instant::now();
    let mut act = Actions::default();
    r.start(now, &mut act);
    assert!(r.deadline().is_some_and(|d| d <= now + Duration::from_secs(2)));
    r.on_reply(0, ready(&plans[0]), now, &mut act);
    r.on_deadline(now, &mut act);
    assert!(matches!(r.take_outcome(), Err(RunError::Lost { member: MemberId(1), loss }) if matches!(loss.kind, LossKind::Timeout { .. })));

    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(60));
    r.start(now, &mut act);
    r.on_reply(2, Reply::Error { cause: "serve refused to register 1 MiB".into(), remedy: "--max-registered".into() }, now, &mut act);
    assert!(matches!(r.take_outcome(), Err(RunError::Failed { member: MemberId(2), cause, .. }) if cause.contains("refused")));
}

#[test]
fn implausible_results_and_foreign_hops_are_protocol_errors() {
    let plans = ring(3);
    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(60));
    let now = Instant::now();
    let mut act = Actions::default();
    r.start(now, &mut act);
    // Member 0 answers with member 1's hops.
    r.on_reply(0, ready(&plans[1]), now, &mut act);
    assert!(matches!(r.take_outcome(), Err(RunError::Lost { member: MemberId(0), loss }) if matches!(loss.kind, LossKind::Protocol(_))));

    let plan = &plans[0];
    let Reply::MemberDone { mut result } = done(plan) else { unreachable!() };
    assert_eq!(plausible(plan, &result), Ok(()));
    result.hops[0].gbps = f64::NAN;
    assert!(plausible(plan, &result).is_err());
    result.hops[0].gbps = 1.0;
    result.hops[0].chunks = 1_000;
    assert!(plausible(plan, &result).unwrap_err().contains("1000 chunks"));
}

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `--report-every`: every member is asked to report (its plan's `report_every_ms`), and each
/// interval it sends while it runs is one `fabcheck.progress.v1` record naming it: 3 members
/// reporting 5 intervals each are 15 records, 5 per member, in time order.
#[test]
fn report_every_asks_every_member_and_each_interval_is_one_record() {
    use crate::model::Interval;
    let plans = ring(3);
    let json = Shared::default();
    let start = Instant::now();
    let recorder = crate::progress_record::Recorder::to(None, Some(Box::new(json.clone())));
    let mut live = crate::collective::live::Live::new(recorder, start, 1000, "allreduce");
    {
        let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(60)).reporting(Some(&mut live));
        let mut act = Actions::default();
        r.start(start, &mut act);
        assert!(act.sends.iter().all(|(_, q)| matches!(q, Request::PrepareMember { plan, .. } if plan.report_every_ms == Some(1000))));
        for (side, plan) in plans.iter().enumerate() {
            r.on_reply(side, ready(plan), start, &mut act);
        }
        for side in 0..3 {
            r.on_reply(side, Reply::Connected, start, &mut act);
        }
        for i in 1..=5u64 {
            for side in 0..3 {
                let interval = Interval { t_ms: i * 1000, gbps: Some(10.0 * side as f64 + i as f64), lat_us: None };
                r.on_reply(side, Reply::Progress { interval }, start + Duration::from_secs(i), &mut act);
            }
        }
        for (side, plan) in plans.iter().enumerate() {
            r.on_reply(side, done(plan), start, &mut act);
        }
        for side in 0..3 {
            r.on_reply(side, Reply::Finished, start, &mut act);
        }
        assert_eq!(r.take_outcome().unwrap().len(), 3);
    }
    assert_eq!(live.written(), 15);
    let text = String::from_utf8(json.0.lock().unwrap().clone()).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 15);
    for side in 0..3 {
        let mine: Vec<&serde_json::Value> = records.iter().filter(|r| r["endpoint"] == format!("n{side}")).collect();
        assert_eq!(mine.len(), 5, "{text}");
        assert!(mine.iter().all(|r| r["schema"] == "fabcheck.progress.v1" && r["test"] == "allreduce" && r["size"] == 4096), "{text}");
        let t: Vec<f64> = mine.iter().map(|r| r["t"].as_f64().unwrap()).collect();
        assert_eq!(t, [1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    // Without --report-every a progress reply is not asked for: a protocol error naming it.
    let mut r = RunMembers::new(&plans, labels(3), targets(3), Duration::from_secs(60));
    let mut act = Actions::default();
    r.start(start, &mut act);
    assert!(act.sends.iter().all(|(_, q)| matches!(q, Request::PrepareMember { plan, .. } if plan.report_every_ms.is_none())));
    for (side, plan) in plans.iter().enumerate() {
        r.on_reply(side, ready(plan), start, &mut act);
    }
    for side in 0..3 {
        r.on_reply(side, Reply::Connected, start, &mut act);
    }
    r.on_reply(1, Reply::Progress { interval: Interval { t_ms: 1, gbps: Some(1.0), lat_us: None } }, start, &mut act);
    assert!(matches!(r.take_outcome(), Err(RunError::Lost { member: MemberId(1), .. })));
}
