//! `fabcheck pair A B`: RC latency and bandwidth between two endpoints, with a verdict.
//!
//! The controller (this process) starts or reaches two agents, relays their endpoints
//! (LID, QPN, PSN, GID, rkey, address: out of band, so no IPoIB is needed), starts the
//! passive side before the active one, collects results and judges them. The test sequence
//! is a pure state machine (`sequence`) driven over the one-thread hub, as `mesh` drives it
//! for every pair of a round.

pub mod plan;
pub mod report;
pub mod sequence;
pub mod verdict;

use crate::cli::parse_device_port;
use crate::control::drive::{drive, Job};
use crate::control::endpoint::{self, EndpointSpec};
use crate::control::hub::Hub;
use crate::control::link::LaunchOptions;
use crate::control::protocol::{CmRole, Endpoint, Target, TestKind};
use crate::control::reach::reach_all;
use crate::error::{Failure, Outcome};
use clap::Args;
use plan::{Direction, PlanInput, PlannedTest};
use report::{PairDoc, Side};
use sequence::PairSequence;
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
    crate::sys::os::catch_termination();
    let mut hub = Hub::new(config.launch.clone());
    let labels = config.endpoints.clone().map(|e| e.host.to_string());
    let links = [hub.add(&config.endpoints[0].host, labels[0].clone()), hub.add(&config.endpoints[1].host, labels[1].clone())];
    // Both agents are reached at once; the first that cannot be is the error.
    if let Some(f) = reach_all(&mut hub, &links, &labels, &config.launch.token, false, 2)?.into_iter().find_map(|r| r.failure) {
        return Err(f);
    }
    let roles = [CmRole::Connect, CmRole::Listen];
    let targets = [0, 1].map(|i| target(&config.endpoints[i], config.gid_index, config.cm.then_some(roles[i])));
    let sequence = PairSequence::new(config.plan.clone(), targets, labels, config.test_timeout);
    let mut jobs = [Job { links: links.to_vec(), conversation: sequence }];
    drive(&mut hub, &mut jobs, 1)?;
    hub.close_all();
    let [Job { conversation: done, .. }] = jobs;
    if let Some(f) = done.could_not_run {
        return Err(f);
    }
    let Some((ea, eb)) = done.endpoints else {
        return Err(Failure::new("no test reached its endpoints", "see the errors above"));
    };
    let (a, b) = (side(&ea), side(&eb));
    let results = done.results;
    let (verdict, findings) = verdict::judge(&a, &b, &results, &config.criteria);
    let doc = PairDoc { schema: report::SCHEMA.into(), verdict, a, b, results, findings };
    if config.json {
        crate::report::print_json(&doc);
    } else {
        print!("{}", report::human(&doc));
    }
    Ok(if verdict == crate::diagnose::Verdict::Pass { Outcome::Pass } else { Outcome::Fail })
}

/// Where a test runs on one endpoint, as the agent is told.
pub(crate) fn target(spec: &EndpointSpec, gid_index: Option<u8>, cm: Option<CmRole>) -> Target {
    Target { device: spec.device.clone(), port: spec.port.map(|p| p as u8), gid_index, cm }
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
