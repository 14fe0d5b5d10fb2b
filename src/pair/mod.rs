//! `fabcheck pair A B`: RC latency and bandwidth between two endpoints, with a verdict.
//!
//! The controller (this process) starts or reaches two agents, relays their endpoints
//! (LID, QPN, PSN, GID, rkey, address: out of band, so no IPoIB is needed), starts the
//! passive side before the active one, collects results and judges them.

pub mod plan;
pub mod report;
pub mod verdict;

use crate::cli::parse_device_port;
use crate::control::controller::{deadline, Controller};
use crate::control::endpoint::{self, EndpointSpec};
use crate::control::link::LaunchOptions;
use crate::control::protocol::{CmRole, Endpoint, Reply, Request, Role, RunResult, Target, TestKind};
use crate::error::{Failure, Outcome};
use crate::perf::summary;
use clap::Args;
use plan::{Direction, PlanInput, PlannedTest};
use report::{PairDoc, Side, TestResult};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct PairArgs {
    /// First endpoint: HOST[/DEVICE[:PORT]], HOST = localhost | [user@]host | tcp://host:port.
    pub a: String,
    /// Second endpoint.
    pub b: String,
    /// Device (and port) for endpoints that name none.
    #[arg(long, value_name = "NAME[:PORT]")]
    pub device: Option<String>,
    /// Tests: send_lat write_lat read_lat write_bw read_bw send_bw, or the groups lat, bw, all.
    #[arg(long, default_value = "all", value_name = "LIST")]
    pub tests: String,
    /// Message size in bytes (default 2 for latency, 65536 for bandwidth).
    #[arg(long, value_name = "BYTES", conflicts_with = "sweep")]
    pub size: Option<u32>,
    /// Every power of two from 2 B to 8 MiB.
    #[arg(long)]
    pub sweep: bool,
    /// Measured iterations per test (default 1000 latency, 5000 bandwidth).
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub iters: Option<u64>,
    /// Run each test for this many seconds instead of a count.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Queue pairs for bandwidth tests.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub qps: u32,
    /// Bandwidth directions: ab (A sends), ba, both, bidi, all (default all; latency runs ab).
    #[arg(long, value_name = "DIR")]
    pub direction: Option<String>,
    /// Fail if typical (p50) latency exceeds this, in microseconds.
    #[arg(long, value_name = "US")]
    pub max_lat_us: Option<f64>,
    /// Bandwidth must reach this percentage of the link's data rate (largest size).
    #[arg(long, default_value_t = 90.0, value_name = "PCT")]
    pub threshold: f64,
    #[command(flatten)]
    pub agents: crate::cli::AgentFlags,
    /// Connect through librdmacm (rdma_cm), as MPI, NCCL and storage do, instead of the
    /// out-of-band exchange: A connects, B listens. RoCE only for now.
    #[arg(long)]
    pub cm: bool,
    /// One JSON document on stdout (schema fabcheck.pair.v1).
    #[arg(long)]
    pub json: bool,
}

struct Config {
    endpoints: [EndpointSpec; 2],
    plan: Vec<PlannedTest>,
    launch: LaunchOptions,
    criteria: verdict::Criteria,
    gid_index: Option<u8>,
    cm: bool,
    test_timeout: Duration,
    json: bool,
}

fn configure(args: &PairArgs) -> Result<Config, Failure> {
    let mut endpoints = [endpoint::parse(&args.a).map_err(Failure::usage)?, endpoint::parse(&args.b).map_err(Failure::usage)?];
    if let Some(text) = &args.device {
        let (device, port) = parse_device_port(text).map_err(Failure::usage)?;
        for e in &mut endpoints {
            if e.device.is_none() {
                e.device = Some(device.clone());
                e.port = port;
            }
        }
    }
    let duration_ms = match args.duration {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= 3600.0) => return Err(Failure::usage("--duration must be 0..3600 seconds")),
        Some(s) => Some((s * 1000.0).round().max(1.0) as u64),
        None => None,
    };
    if !(args.threshold > 0.0 && args.threshold <= 100.0) {
        return Err(Failure::usage("--threshold is a percentage, 1..100"));
    }
    if args.max_lat_us.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        return Err(Failure::usage("--max-lat-us must be a positive number"));
    }
    let tests = TestKind::parse_list(&args.tests).map_err(Failure::usage)?;
    let directions = args.direction.as_deref().map(Direction::parse_list).transpose().map_err(Failure::usage)?;
    let plan = plan::build(&PlanInput {
        tests,
        size: args.size,
        sweep: args.sweep,
        iters: args.iters,
        duration_ms,
        qps: args.qps,
        directions,
        stall_timeout_ms: args.agents.stall_timeout_ms,
    })
    .map_err(Failure::usage)?;
    Ok(Config {
        endpoints,
        plan,
        launch: args.agents.launch(),
        criteria: verdict::Criteria { bw_fraction: args.threshold / 100.0, max_lat_us: args.max_lat_us },
        gid_index: args.agents.gid_index,
        cm: args.cm,
        test_timeout: Duration::from_secs(args.agents.timeout.max(1)) + Duration::from_millis(duration_ms.unwrap_or(0)),
        json: args.json,
    })
}

pub fn run(args: &PairArgs) -> Result<Outcome, Failure> {
    let config = configure(args)?;
    crate::verbs::os::catch_termination();
    let mut ctl = Controller::connect(&config.endpoints, &config.launch)?;
    let targets: Vec<Target> = config
        .endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| Target {
            device: e.device.clone(),
            port: e.port.map(|p| p as u8),
            gid_index: config.gid_index,
            cm: config.cm.then_some(if i == 0 { CmRole::Connect } else { CmRole::Listen }),
        })
        .collect();
    let mut sides: Option<(Endpoint, Endpoint)> = None;
    let mut results = Vec::new();
    for test in &config.plan {
        match run_one(&mut ctl, test, &targets, config.test_timeout) {
            Ok((ea, eb, result)) => {
                sides.get_or_insert((ea, eb));
                results.push(result);
            }
            Err(Step::Failed { endpoints, result }) => {
                if let Some(ends) = endpoints {
                    sides.get_or_insert(*ends);
                }
                results.push(*result);
                break;
            }
            Err(Step::CouldNotRun(f)) => {
                ctl.close();
                return Err(f);
            }
        }
    }
    ctl.close();
    let Some((ea, eb)) = sides else {
        return Err(Failure::new("no test reached its endpoints", "see the errors above"));
    };
    let (a, b) = (side(&ea), side(&eb));
    let (verdict, findings) = verdict::judge(&a, &b, &results, &config.criteria);
    let doc = PairDoc { schema: report::SCHEMA.into(), verdict, a, b, results, findings };
    if config.json {
        crate::report::print_json(&doc);
    } else {
        print!("{}", report::human(&doc));
    }
    Ok(if verdict == crate::diagnose::Verdict::Pass { Outcome::Pass } else { Outcome::Fail })
}

pub(crate) enum Step {
    /// The test ran and the fabric failed it (completion error, stall): a result, exit 1.
    Failed { endpoints: Option<Box<(Endpoint, Endpoint)>>, result: Box<TestResult> },
    /// Could not run (agent lost, timeout, bad device): exit 2.
    CouldNotRun(Failure),
}

impl From<Failure> for Step {
    fn from(f: Failure) -> Self {
        Step::CouldNotRun(f)
    }
}

pub(crate) fn run_one(ctl: &mut Controller, t: &PlannedTest, targets: &[Target], timeout: Duration) -> Result<(Endpoint, Endpoint, TestResult), Step> {
    let what = format!("{} {} {} B", t.spec.test.name(), t.direction.name(), t.spec.size);
    for (i, target) in targets.iter().enumerate() {
        ctl.send(i, &Request::Prepare { target: target.clone(), spec: t.spec_for(i == 0) })?;
    }
    let mut eps = Vec::new();
    for i in 0..2 {
        match ctl.expect(i, deadline::PREPARE, &format!("preparing {what}"))? {
            Reply::Ready { endpoint } => eps.push(endpoint),
            other => return Err(ctl.unexpected(i, &other).into()),
        }
    }
    let (ea, eb) = (eps[0].clone(), eps[1].clone());
    ctl.send(0, &Request::Connect { peer: eb.clone() })?;
    ctl.send(1, &Request::Connect { peer: ea.clone() })?;
    for i in 0..2 {
        match ctl.expect(i, deadline::CONNECT, &format!("connecting {what}"))? {
            Reply::Connected => {}
            other => return Err(ctl.unexpected(i, &other).into()),
        }
    }
    let (ra, rb) = t.direction.roles();
    let roles = [ra, rb];
    // Passive sides first, so receives are posted and loops running before the first send.
    let order: Vec<usize> = (0..2).filter(|&i| roles[i] == Role::Passive).chain((0..2).filter(|&i| roles[i] != Role::Passive)).collect();
    for &i in &order {
        ctl.send(i, &Request::Run)?;
        match ctl.expect(i, deadline::START, &format!("starting {what}"))? {
            Reply::Running => {}
            other => return Err(ctl.unexpected(i, &other).into()),
        }
    }
    let mut runs: [Option<RunResult>; 2] = [None, None];
    let mut failure: Option<Failure> = None;
    for &i in order.iter().filter(|&&i| roles[i] != Role::Passive) {
        match ctl.expect(i, timeout, &format!("running {what}")) {
            Ok(Reply::Done { result }) => runs[i] = Some(result),
            Ok(other) => return Err(ctl.unexpected(i, &other).into()),
            Err(f) if f.cause.contains("agent lost") || f.cause.contains("interrupted") || f.cause.contains("no answer") => {
                return Err(Step::CouldNotRun(f))
            }
            Err(f) => {
                failure = Some(f);
                break;
            }
        }
    }
    for &i in order.iter().filter(|&&i| roles[i] == Role::Passive) {
        ctl.send(i, &Request::Stop)?;
        match ctl.expect(i, deadline::STOP, &format!("stopping {what}")) {
            Ok(Reply::Done { result }) => runs[i] = Some(result),
            Ok(other) => return Err(ctl.unexpected(i, &other).into()),
            Err(f) if failure.is_some() => {
                tracing::debug!(cause = %f.cause, "passive side after a failed test");
            }
            Err(f) => failure = Some(f),
        }
    }
    // One port under both agents (a loopback run): its counters are one set, not two.
    let same_port = ea.host == eb.host && ea.device == eb.device && ea.port == eb.port;
    let mut result = summarise(t, &runs, same_port);
    if let Some(f) = failure {
        result.error = Some(f.cause);
        result.remedy = Some(f.remedy);
        // Release both sides before giving the result back; errors here change nothing.
        for i in 0..2 {
            let _ = ctl.send(i, &Request::Finish);
        }
        for i in 0..2 {
            let _ = ctl.expect(i, deadline::STOP, "cleaning up");
        }
        return Err(Step::Failed { endpoints: Some(Box::new((ea, eb))), result: Box::new(result) });
    }
    for i in 0..2 {
        ctl.send(i, &Request::Finish)?;
    }
    for i in 0..2 {
        match ctl.expect(i, deadline::STOP, &format!("finishing {what}"))? {
            Reply::Finished => {}
            other => return Err(ctl.unexpected(i, &other).into()),
        }
    }
    Ok((ea, eb, result))
}

fn summarise(t: &PlannedTest, runs: &[Option<RunResult>; 2], same_port: bool) -> TestResult {
    let spec = &t.spec;
    let (ra, rb) = t.direction.roles();
    let active: Vec<&RunResult> = [(ra, &runs[0]), (rb, &runs[1])]
        .into_iter()
        .filter(|(role, _)| *role != Role::Passive)
        .filter_map(|(_, r)| r.as_ref())
        .collect();
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
        test: spec.test.name().into(),
        direction: t.direction.name().into(),
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
    };
    if spec.test.is_latency() {
        result.lat_us = active.first().and_then(|r| r.lat);
    } else if !active.is_empty() {
        // Bidirectional: the two directions add up.
        let bw: f64 = active.iter().map(|r| summary::gbps(r.bytes, r.elapsed_ns)).sum();
        let rate: f64 = active.iter().map(|r| summary::mpps(r.iterations, r.elapsed_ns)).sum();
        let rate = (rate * 1e6).round() / 1e6;
        let peak: f64 = active.iter().map(|r| r.peak_gbps.unwrap_or(0.0)).sum();
        result.bw_gbps = Some((bw * 1000.0).round() / 1000.0);
        result.msg_rate_mpps = Some(rate);
        result.peak_gbps = Some(((peak.max(bw)) * 1000.0).round() / 1000.0);
    }
    result
}

pub(crate) fn side(e: &Endpoint) -> Side {
    Side {
        host: e.host.clone(),
        device: e.device.clone(),
        port: e.port,
        gid_index: e.gid_index,
        gid: e.gid.clone(),
        link_layer: e.link_layer.clone(),
        rate_gbps: e.rate_gbps,
        ca_type: e.ca_type.clone(),
        mtu: Some(e.mtu),
    }
}
