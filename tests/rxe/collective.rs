//! Collective members over rxe0 in one guest (0.5, issue #53): agents as `fabcheck serve`
//! sessions on 127.0.0.1, reached and run through `collective::agents` (the library the
//! command runs), every hop a real RC QP on rxe0 in loopback. Plans from `collective::plan`.

use super::{bin, require_rxe, DEVICE};
use fabcheck::collective::agents::{self, AgentMembers, ReachOptions};
use fabcheck::collective::plan::{plan, Ring};
use fabcheck::collective::{Member, Members, RunError};
use fabcheck::control::link::{LaunchOptions, Launcher};
use fabcheck::model::collective::MemberId;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "collective-rxe-serve-token";

/// A `fabcheck serve` on 127.0.0.1:`port`, leaving after `sessions` controllers.
struct Serve(Child);

impl Serve {
    fn start(port: u16, sessions: u32) -> Serve {
        let child = Command::new(bin())
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--token", TOKEN, "--max-sessions", &sessions.to_string()])
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start fabcheck serve");
        // Under emulation a debug build takes a while to listen: wait for it (bounded).
        let until = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(200));
        }
        Serve(child)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ports(n: usize) -> Vec<u16> {
    let base = 19000 + (std::process::id() % 500) as u16 * 2;
    (0..n as u16).map(|k| base + k).collect()
}

fn reach(ports: &[u16]) -> (Vec<Member>, AgentMembers) {
    let endpoints: Vec<_> = ports.iter().map(|p| fabcheck::control::endpoint::parse(&format!("tcp://127.0.0.1:{p}/{DEVICE}")).unwrap()).collect();
    let launch = LaunchOptions {
        remote_fabcheck: "fabcheck".into(),
        token: Some(TOKEN.into()),
        connect_timeout: Duration::from_secs(20),
        launcher: Launcher::Ssh,
        k8s_selector: "app=fabcheck-agent".into(),
    };
    let options = ReachOptions { launch, token: Some(TOKEN.into()), mem: Default::default(), connect_timeout: Duration::from_secs(20) };
    match agents::reach(&endpoints, None, &options) {
        Ok(reached) => reached,
        Err(e) => panic!("reach: {e:?}"),
    }
}

/// Three `fabcheck serve` agents on this guest, each for `sessions` sessions: their ports, the
/// running agents (stopped on drop) and their endpoints on DEVICE as `collective` takes them.
fn serve_three(sessions: u32) -> (Vec<u16>, Vec<Serve>, Vec<String>) {
    let ports = ports(3);
    let serves = ports.iter().map(|&p| Serve::start(p, sessions)).collect();
    let endpoints = ports.iter().map(|p| format!("tcp://127.0.0.1:{p}/{DEVICE}")).collect();
    (ports, serves, endpoints)
}

fn ring(n: u32) -> Vec<Ring> {
    vec![Ring { rail: None, order: (0..n).map(MemberId).collect() }]
}

#[test]
fn a_ring_of_three_and_an_alltoall_run_over_rc_hop_by_hop() {
    let _serial = require_rxe();
    let ports = ports(3);
    let _serves: Vec<Serve> = ports.iter().map(|&p| Serve::start(p, 1)).collect();
    let (members, mut agents) = reach(&ports);
    assert_eq!(members.len(), 3);
    assert!(members.iter().all(|m| m.device == DEVICE && m.port == 1), "{members:?}");
    // 3 members, 48 KiB each: chunks of 16 KiB, 4 steps of data per iteration.
    let planned = plan(fabcheck::collective::op::Op::AllReduce, ring(3), 3 * 16384, 10).unwrap();
    let results = agents.run(&planned.plans, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(results.len(), 3);
    let mut rates = Vec::new();
    for (r, p) in results.iter().zip(&planned.plans) {
        assert_eq!(r.member, p.member);
        assert_eq!(r.iterations, 10);
        let sends: u64 = p.steps.iter().map(|s| s.times() * s.send.len() as u64).sum();
        assert_eq!(r.hops.len(), 1, "one hop out of each ring member");
        let hop = &r.hops[0];
        assert_eq!(hop.chunks, 10 * sends, "every chunk sent and acknowledged, in order (the engine checks each immediate)");
        let step = hop.step_us.as_ref().expect("per-chunk times");
        assert!(step.min > 0.0 && step.p50 <= step.max, "{step:?}");
        assert!(hop.gbps > 0.0);
        rates.push(hop.gbps);
        eprintln!(
            "allreduce member {} hop {}: {} chunks, p50 {:.1} us, p99 {:.1} us, {:.3} Gb/s",
            r.member.0, hop.hop.0, hop.chunks, step.p50, step.p99, hop.gbps
        );
    }
    // Three hops over one rxe0: alike within a factor (emulation is noisy; no absolute).
    let (lo, hi) = rates.iter().fold((f64::MAX, 0f64), |(lo, hi), &g| (lo.min(g), hi.max(g)));
    assert!(hi / lo < 10.0, "hop rates {rates:?}");
    // The same sessions run the next plan: every member two hops out and two in.
    let planned = plan(fabcheck::collective::op::Op::AllToAll, ring(3), 3 * 8192, 5).unwrap();
    let results = agents.run(&planned.plans, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(results.len(), 3);
    for r in &results {
        assert_eq!(r.hops.len(), 2, "{r:?}");
        assert!(r.hops.iter().all(|h| h.chunks > 0 && h.step_us.is_some()), "{r:?}");
    }
    // Incast (two senders to one receiver, each the receiver in turn) and a pipelined
    // broadcast: every plan the planner makes runs on the one engine.
    for op in [fabcheck::collective::op::Op::Incast(2), fabcheck::collective::op::Op::Bcast] {
        let planned = plan(op, ring(3), 3 * 8192, 3).unwrap();
        let results = agents.run(&planned.plans, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{op:?}: {e:?}"));
        assert_eq!(results.len(), 3);
        let chunks: u64 = results.iter().flat_map(|r| &r.hops).map(|h| h.chunks).sum();
        assert!(chunks > 0, "{op:?}: {results:?}");
        eprintln!("{op:?}: {chunks} chunks over {} hops", results.iter().map(|r| r.hops.len()).sum::<usize>());
    }
}

#[test]
fn a_member_killed_mid_run_is_named_within_the_deadline_and_the_others_are_released() {
    let _serial = require_rxe();
    let ports = ports(3);
    let mut serves: Vec<Option<Serve>> = ports.iter().map(|&p| Some(Serve::start(p, 2))).collect();
    let (_, mut agents) = reach(&ports);
    // Long enough to be killed in the middle.
    let planned = plan(fabcheck::collective::op::Op::AllReduce, ring(3), 3 * 16384, 1_000_000).unwrap();
    let victim = std::thread::spawn({
        let mut serve = serves[1].take().unwrap();
        move || {
            std::thread::sleep(Duration::from_secs(4));
            // The count below must see QPs when there are: 3 members, one QP per hop each way.
            let running = rc_qps();
            let _ = serve.0.kill();
            let _ = serve.0.wait();
            running
        }
    });
    let deadline = Duration::from_secs(60);
    let started = Instant::now();
    let outcome = agents.run(&planned.plans, deadline);
    let took = started.elapsed();
    let running = victim.join().unwrap();
    assert_eq!(running, 6, "RC QPs on rxe0 while the ring ran");
    match outcome {
        Err(RunError::Lost { member, loss }) => {
            assert_eq!(member, MemberId(1), "{loss:?}");
            assert!(loss.agent.contains(&ports[1].to_string()), "{loss:?}");
        }
        other => panic!("expected member 1 lost, got {other:?}"),
    }
    assert!(took < deadline, "took {took:?}");
    eprintln!("member 1 killed after 4 s: the run ended after {took:?}");
    drop(agents);
    // Nothing left running: no RC QP on rxe0 once the sessions are gone (the hub has waited
    // for its agents; serve's sessions end on the goodbye).
    let until = Instant::now() + Duration::from_secs(20);
    while rc_qps() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(rc_qps(), 0, "{}", String::from_utf8_lossy(&super::sh("rdma resource show qp").stdout));
    for (k, serve) in serves.iter_mut().enumerate() {
        if let Some(serve) = serve {
            assert!(matches!(serve.0.try_wait(), Ok(None)), "the serve of member {k} did not outlive the run: {:?}", serve.0.try_wait());
        }
    }
    // The survivors' serves run the next collective.
    let (_, mut again) = reach(&[ports[0], ports[2]]);
    let planned = plan(fabcheck::collective::op::Op::AllReduce, ring(2), 2 * 16384, 5).unwrap();
    let results = again.run(&planned.plans, Duration::from_secs(60)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(results.len(), 2);
}

/// RC QPs on rxe0 now (`rdma resource show qp`, iproute2): every process's.
fn rc_qps() -> usize {
    let out = super::sh("rdma resource show qp link rxe0/1");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("type RC")).count()
}

/// `fabcheck collective` itself over three serve agents: an allreduce ring passes with busbw,
/// then a run whose member 1 is killed is exit 2 within `--timeout`, naming that member.
#[test]
fn the_command_runs_a_ring_and_a_killed_member_is_exit_2_naming_it() {
    let _serial = require_rxe();
    let ports = ports(3);
    let mut serves: Vec<Option<Serve>> = ports.iter().map(|&p| Some(Serve::start(p, 2))).collect();
    let endpoints: Vec<String> = ports.iter().map(|p| format!("tcp://127.0.0.1:{p}/{DEVICE}")).collect();
    let mut args: Vec<&str> = vec!["collective"];
    args.extend(endpoints.iter().map(String::as_str));
    args.extend(["--op", "allreduce", "--size", "48K", "--token", TOKEN]);
    let mut first = args.clone();
    first.extend(["--iters", "10", "--json"]);
    let out = super::fabcheck(&first);
    assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    assert_eq!(super::text(&doc, "schema"), "fabcheck.collective.v1");
    let rings = doc["rings"].as_array().expect("rings");
    assert_eq!(rings.len(), 1, "{doc}");
    assert!(super::num(&rings[0], "busbw_gbps") > 0.0, "{doc}");
    assert_eq!(rings[0]["hops"].as_array().map(Vec::len), Some(3), "{doc}");
    eprintln!("collective allreduce over 3 agents: verdict {}, busbw {} Gb/s", doc["verdict"], rings[0]["busbw_gbps"]);

    let mut long = args.clone();
    long.extend(["--iters", "1000000", "--timeout", "60"]);
    let started = Instant::now();
    let controller = Command::new(bin()).args(&long).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(8));
    drop(serves[1].take());
    let out = controller.wait_with_output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{}", ports[1])), "names the killed member: {stderr}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let said = stderr.lines().find(|l| l.contains(&ports[1].to_string())).unwrap_or("");
    eprintln!("collective with member 1 killed at 8 s: exit 2 after {took:?}: {said}");
}

/// `collective -D 5 --report-every 1 --progress-json FILE` over three agents: every member says
/// its send rate each interval while the ring runs, about one record a second each
/// (docs/collective.md: the last, partial interval is not said), every line a parseable
/// `fabcheck.progress.v1` record naming the op and the member. `-D 5` also proves the members
/// are stopped at 5 s: its iterations are planned at the members' link rate (Soft-RoCE's is far
/// below what it says), so without the stop this run would take minutes and end at the
/// deadline, exit 2 (the first version of this test measured that: 304 s).
#[test]
fn report_every_gives_each_member_its_progress_records_while_the_ring_runs() {
    let _serial = require_rxe();
    let (ports, _serves, endpoints) = serve_three(2);
    let mut args: Vec<&str> = vec!["collective"];
    args.extend(endpoints.iter().map(String::as_str));
    args.extend(["--op", "allreduce", "--size", "48K", "--token", TOKEN, "--format", "json"]);
    let run = |extra: &[&str]| {
        let mut all = args.clone();
        all.extend(extra);
        let out = super::fabcheck(&all);
        assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let doc = super::json(&out);
        assert_eq!(super::text(&doc, "schema"), "fabcheck.collective.v1");
        doc
    };
    let file = std::env::temp_dir().join(format!("fabcheck-rxe-collective-progress-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let file_arg = file.to_str().unwrap().to_string();
    let started = Instant::now();
    let doc = run(&["--duration", "5", "--report-every", "1", "--progress-json", &file_arg]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(60), "-D 5 took {took:?}: the members were not stopped at 5 s");
    assert!(super::num(&doc["rings"][0], "algbw_gbps") > 0.0, "{doc}");
    let seconds = 5.0f64;

    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("no --progress-json file {}: {e}", file.display()));
    let _ = std::fs::remove_file(&file);
    let records: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON record ({e}): {l}"))).collect();
    let mut per_member: std::collections::BTreeMap<String, Vec<Option<f64>>> = std::collections::BTreeMap::new();
    for r in &records {
        assert_eq!(super::text(r, "schema"), "fabcheck.progress.v1", "{r}");
        assert_eq!(super::text(r, "test"), "allreduce", "{r}");
        assert!(super::num(r, "t") >= 0.0 && super::num(r, "size") > 0.0, "{r}");
        assert!(r["gbps"].is_null() || r["gbps"].as_f64().is_some_and(|g| g >= 0.0), "{r}");
        per_member.entry(super::text(r, "endpoint").to_string()).or_default().push(r["gbps"].as_f64());
    }
    eprintln!(
        "collective -D 5 --report-every 1 over 3 agents in {took:?}: {} records: {:?}",
        records.len(),
        per_member.iter().map(|(m, g)| format!("{m}: {g:?}")).collect::<Vec<_>>()
    );
    assert_eq!(per_member.len(), 3, "one series per member: {records:#?}");
    let whole = seconds.floor() as usize;
    let (least, most) = (whole.saturating_sub(2).max(1), whole + 2);
    for p in &ports {
        let (member, series) = per_member
            .iter()
            .find(|(m, _)| m.contains(&p.to_string()))
            .unwrap_or_else(|| panic!("no records of the member on port {p}: {records:#?}"));
        assert!((least..=most).contains(&series.len()), "{member}: {} records over {seconds:.1} s at 1 s: {series:?}", series.len());
        assert!(series.iter().any(|g| g.is_some_and(|g| g > 0.0)), "{member} sent nothing it said: {series:?}");
    }
}

/// `fabcheck collective --paths 4` over three serve agents (issue #56): every hop carried by 4
/// RC QPs on rxe0, each its own flow label; each hop's figures name 4 distinct UDP source
/// ports, each path moved data. While a long run holds its QPs, rxe0 has at least 3 hops x 4
/// paths x 2 ends of them.
#[test]
fn paths_4_runs_every_hop_on_four_labelled_qps_with_per_path_figures() {
    let _serial = require_rxe();
    let (_, _serves, endpoints) = serve_three(2);
    let mut args: Vec<&str> = vec!["collective"];
    args.extend(endpoints.iter().map(String::as_str));
    args.extend(["--op", "allreduce", "--size", "48K", "--token", TOKEN, "--paths", "4"]);
    let mut first = args.clone();
    first.extend(["--iters", "10", "--json"]);
    let out = super::fabcheck(&first);
    assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    let hops = doc["rings"][0]["hops"].as_array().expect("hops");
    assert_eq!(hops.len(), 3, "{doc}");
    for h in hops {
        let paths = h["paths"].as_array().unwrap_or_else(|| panic!("per-path figures on every hop: {h}"));
        assert_eq!(paths.len(), 4, "{h}");
        let sports: std::collections::BTreeSet<u64> = paths.iter().filter_map(|p| p["udp_sport"].as_u64()).collect();
        assert_eq!(sports.len(), 4, "four distinct UDP source ports: {h}");
        for (k, p) in paths.iter().enumerate() {
            let want = fabcheck::model::paths::flow_label_to_udp_sport(fabcheck::model::paths::flow_label(k as u32));
            assert_eq!(p["udp_sport"].as_u64(), Some(u64::from(want)), "{p}");
            assert!(p["gbps"].as_f64().is_some_and(|g| g > 0.0), "path {k} moved nothing: {h}");
        }
    }
    let paths_named = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.path").count();
    eprintln!(
        "collective --paths 4 over 3 agents: verdict {}, busbw {} Gb/s, {paths_named} pair.path; hop 0: {}",
        doc["verdict"], doc["rings"][0]["busbw_gbps"], hops[0]["paths"]
    );

    // A long run: its QPs counted on rxe0 while it holds them, then the controller killed (the
    // agents release on the closed channel).
    let before = rc_qps();
    let mut long = args.clone();
    long.extend(["--iters", "1000000", "--timeout", "60"]);
    let mut controller = Command::new(bin()).args(&long).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(45);
    let mut most = 0;
    while Instant::now() < until && most < before + 24 && matches!(controller.try_wait(), Ok(None)) {
        most = most.max(rc_qps());
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = controller.kill();
    let _ = controller.wait();
    assert!(most >= before + 24, "3 hops x 4 paths x 2 ends = 24 RC QPs expected on rxe0 during the run; saw {most} (before: {before})");
    eprintln!("collective --paths 4: {most} RC QPs on rxe0 during the run ({before} before)");
}
