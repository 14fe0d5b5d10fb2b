//! `fabcheck collective`: flags in, the agents reached as members, the controller run over
//! them, the document out (exit 0 pass, 1 fail, 2 could not run, as `mesh`).

use super::flags::launch_for;
use crate::cli::CollectiveArgs;
use crate::collective::agents::{self, ReachOptions};
use crate::collective::judge::Criteria;
use crate::collective::op::Op;
use crate::collective::run::{self, Config};
use crate::collective::{Member, RunError};
use crate::control::endpoint;
use crate::error::{Failure, Outcome, Stop};
use std::time::Duration;

/// Iterations when neither --iters nor --duration is given.
const DEFAULT_ITERS: u64 = 20;

pub fn run(args: &CollectiveArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    let op = Op::parse(&args.op).map_err(Failure::usage)?;
    let specs = endpoints(args)?;
    let rails = args.rails.as_deref().map(crate::model::rails::RailSpec::parse).transpose().map_err(Failure::usage)?;
    if rails.is_some() && specs.iter().any(|s| s.device.is_some() || s.port.is_some()) {
        return Err(Failure::usage("--rails picks each host's devices: give hosts (HOST, not HOST/DEV), and no -d").into());
    }
    if !(args.threshold > 0.0 && args.threshold <= 100.0) {
        return Err(Failure::usage("--threshold is a percentage, 1..100").into());
    }
    if !(args.hop_threshold.is_finite() && args.hop_threshold > 1.0) {
        return Err(Failure::usage("--hop-threshold is a factor above 1 (2 names a hop twice as slow as its ring's median)").into());
    }
    let topology = args.topology.as_deref().map(read_topology).transpose()?;
    // Read and checked before any member is reached: a wrong baseline is exit 2 at once.
    let baseline = super::baseline::load(args.baseline.as_deref(), args.regression, crate::collective::doc::SCHEMA)?;
    let launch = launch_for(&args.agents, specs.iter().map(|s| (&s.host, s.to_string())))?;
    // `--report-every`: the file opened before any agent is reached (one that cannot be is exit 2).
    let (every_ms, live_out) = super::flags::burn_in(&args.burn_in, args.json || out.machine())?;
    let recorder = live_out
        .as_ref()
        .map(crate::progress_record::Recorder::open)
        .transpose()
        .map_err(|why| Failure::new(why, "give --progress-json a path in a writable directory"))?;
    let options = ReachOptions { token: launch.token.clone(), connect_timeout: launch.connect_timeout, launch, mem: args.mem.choice() };
    let (members, mut runner) = agents::reach(&specs, rails.as_ref(), &options).map_err(|e| could_not_run(&e, &[]))?;
    if args.paths > 1 {
        if let Some(m) = members.iter().find(|m| m.link_layer != crate::port::LinkLayer::Ethernet) {
            return Err(Failure::usage(format!(
                "--paths spreads RoCE flows by UDP source port; {}/{} is {}: run without --paths",
                crate::sanitise::one_line(&m.host),
                crate::sanitise::one_line(&m.device),
                m.link_layer
            ))
            .into());
        }
    }
    if let (Some(every_ms), Some(recorder)) = (every_ms, recorder) {
        runner.report_into(crate::collective::live::Live::new(recorder, std::time::Instant::now(), every_ms, &op.to_string()));
    }
    let iters = match (args.iters, args.duration) {
        (Some(n), _) => n,
        (None, Some(secs)) => {
            runner.stop_after(Duration::from_secs_f64(secs));
            crate::collective::plan::iterations_within(op, &members, u64::from(args.size), secs)
        }
        (None, None) => DEFAULT_ITERS,
    };
    let config = Config {
        op,
        size: u64::from(args.size),
        iters,
        criteria: Criteria { bw_fraction: args.threshold / 100.0, hop_threshold: args.hop_threshold },
        bisect: args.bisect,
        topology,
        deadline: Duration::from_secs(args.agents.timeout.max(1)).saturating_add(Duration::from_secs_f64(args.duration.unwrap_or(0.0))),
        paths: args.paths,
    };
    let doc = run::run(&members, &mut runner, &config).map_err(|e| match e {
        run::Stop::Plan(refusal) => Failure::usage(refusal.to_string()),
        run::Stop::Run(error) => could_not_run(&error, &members),
    })?;
    let mut report = crate::collective::text::CollectiveReport { doc, quiet: args.progress.quiet };
    if let Some(baseline) = &baseline {
        regressions(&mut report, baseline)?;
    }
    let outcome = out.deliver(&report, args.json || out.machine())?;
    // After the results, so a page that cannot be written loses nothing else.
    if let Some(path) = &args.html {
        let page = crate::collective::html::render(&report.doc, &crate::report::Stamp::now());
        crate::report::output::side_file(path, "the HTML page", "--html", page.as_bytes(), report.doc.verdict == crate::outcome::Verdict::Pass)?;
    }
    Ok(outcome)
}

/// `--baseline`: each figure that regressed (a ring's or the total's busbw, a hop's rate) as
/// `pair.regression`, a warning naming it, and each member most of whose hops regressed.
fn regressions(report: &mut crate::collective::text::CollectiveReport, baseline: &super::baseline::Baseline) -> Result<(), Failure> {
    let comparison = baseline.compare(&*report)?;
    let findings = &mut report.doc.findings;
    for node in &comparison.slowed {
        findings.push(crate::outcome::Finding::new(
            crate::outcome::FindingId::PairRegression,
            crate::outcome::Severity::Warning,
            node.endpoint.as_str(),
            format!(
                "{} of its {} hops slower than the baseline by more than {}%: the member slowed",
                node.regressed_pairs, node.pairs, comparison.regression_pct
            ),
            "find what changed on this member since the baseline (firmware, driver, cabling, its switch port); `fabcheck compare BASELINE NEW` shows every figure",
        ));
    }
    findings.extend(comparison.regressions.iter().map(super::baseline::finding));
    Ok(())
}

/// The endpoints of the arguments and the hostfile, parsed as `mesh` parses them.
fn endpoints(args: &CollectiveArgs) -> Result<Vec<endpoint::EndpointSpec>, Failure> {
    super::flags::endpoints(&super::flags::EndpointFlags {
        command: "collective",
        endpoints: &args.endpoints,
        hostfile: args.hostfile.as_deref(),
        tcp_port: args.tcp_port,
        device: args.device.as_deref(),
        ib_port: None,
    })
}

/// `--topology FILE`, as `mesh` reads it.
fn read_topology(path: &std::path::Path) -> Result<crate::mesh::topology::Topology, Failure> {
    let cabling = crate::fabric::design::topology::load(path).map_err(|e| Failure::new(e.to_string(), e.remedy()))?;
    crate::mesh::topology::Topology::from_cabling(&cabling).map_err(|e| Failure::usage(format!("--topology {}: {e}", path.display())))
}

/// A run that gave no result, in words (exit 2): the member named.
fn could_not_run(error: &RunError, members: &[Member]) -> Failure {
    let name = |m: crate::model::collective::MemberId| members.get(m.0 as usize).map(crate::collective::blame::label);
    match error {
        RunError::Lost { member, loss } => {
            let (cause, remedy) = crate::report::loss::words(loss);
            let who = name(*member).map(|n| format!("{n}: ")).unwrap_or_default();
            Failure::new(format!("{who}{}", crate::sanitise::one_line(&cause)), remedy)
        }
        RunError::Failed { member, cause, remedy } => {
            let who = name(*member).map(|n| format!("{n}: ")).unwrap_or_default();
            Failure::new(format!("{who}{}", crate::sanitise::one_line(cause)), crate::sanitise::one_line(remedy).into_owned())
        }
    }
}
