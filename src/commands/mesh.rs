//! `fabcheck mesh`: flags in, a validated [`MeshConfig`] out, then the run.

use super::flags::{measuring, MeasureFlags};
use crate::cli::MeshArgs;
use crate::control::agents::HubAgents;
use crate::control::link::LaunchOptions;
use crate::error::{Failure, Outcome, Stop};
use crate::mesh::pattern::Pattern;
use crate::mesh::topology::Topology;
use crate::mesh::{self, MeshConfig};
use crate::model::Direction;
use crate::pair::plan::{self, PlanInput};
use crate::pair::verdict;

pub fn run(args: &MeshArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    let (mut config, launch) = configure(args)?;
    config.json |= out.machine();
    // A machine format on stdout and a records file: the interval lines stay off stderr.
    if let Some(live) = config.live.as_mut().filter(|l| l.json.is_some()) {
        live.lines &= !config.json;
    }
    // Read and checked before any pair runs: a wrong baseline is exit 2 at once.
    let baseline = super::baseline::load(args.baseline.as_deref(), args.regression, "fabcheck.mesh.v1")?;
    let json = config.json;
    let mut run = mesh::run(config, &mut HubAgents::new(launch), &mut *super::progress::sink(&args.progress))?;
    if let Some(baseline) = &baseline {
        regression_suspects(&mut run.report, baseline)?;
    }
    // No test could run: one cause (exit 2) in every format, no matrix of pairs that never ran.
    if run.nothing_ran {
        if let Some(failure) = run.could_not_run {
            return Err(failure.into());
        }
    }
    // The results first: a side file that cannot be written must not throw the run away.
    let outcome = out.deliver(&run.report, json)?;
    if let Some(failure) = run.could_not_run {
        return Err(failure.into());
    }
    let pass = run.report.doc.verdict == crate::outcome::Verdict::Pass;
    if let Some(csv) = run.csv {
        csv.finish(pass)?;
    }
    if let Some(html) = &run.html {
        html.write(pass)?;
    }
    Ok(outcome)
}

/// `mesh`'s flags as a validated run.
pub fn configure(args: &MeshArgs) -> Result<(MeshConfig, LaunchOptions), Failure> {
    let specs = super::flags::endpoints(&super::flags::EndpointFlags {
        command: "mesh",
        endpoints: &args.endpoints,
        hostfile: args.hostfile.as_deref(),
        tcp_port: args.tcp_port,
        device: args.device.as_deref(),
        ib_port: args.ib_port,
    })?;
    if !(args.threshold > 0.0 && args.threshold <= 100.0) {
        return Err(Failure::usage("--threshold is a percentage, 1..100"));
    }
    if args.sweep {
        return Err(Failure::usage(
            "mesh measures one size per pair and judges it against the link: sweep the sizes of one pair with `fabcheck pair A B -a`",
        ));
    }
    // A machine `--format` wants the document too: `run` adds it (and quiets the lines).
    let json = args.json;
    let flags = MeasureFlags { duration: args.duration, burn_in: &args.burn_in, conditions: &args.conditions, agents: &args.agents, json };
    let shared = measuring(&flags, specs.iter().map(|s| (&s.host, s.to_string())))?;
    let direction = if args.bidirectional { "bidi" } else { &args.direction };
    let mut plan = plan::build(&PlanInput {
        tests: args.tests.0.clone(),
        size: args.size,
        sweep: false,
        iters: args.iters,
        duration_ms: shared.duration_ms,
        qps: args.qps,
        directions: Some(Direction::parse_list(direction).map_err(Failure::usage)?),
        stall_timeout_ms: args.agents.stall_timeout_ms,
    })
    .map_err(Failure::usage)?;
    // `--report-every`: the interval rides in every spec; the rest of the tuning is pair's.
    plan.iter_mut().for_each(|t| t.spec.report_every_ms = shared.report_every_ms);
    // `--paths N`: passed through to every pair's bandwidth tests; each pair judged on its own.
    if let Some(n) = args.paths {
        crate::pair::paths::apply(&mut plan, n).map_err(Failure::usage)?;
    }
    let rails = args.rails.as_deref().map(crate::model::rails::RailSpec::parse).transpose().map_err(Failure::usage)?;
    if rails.is_some() && specs.iter().any(|s| s.device.is_some() || s.port.is_some()) {
        return Err(Failure::usage("--rails picks each host's devices: give hosts (HOST, not HOST/DEV), and no -d or -i"));
    }
    let config = MeshConfig {
        names: mesh::unique_names(&specs),
        specs,
        plan,
        pair_criteria: verdict::Criteria {
            bw_fraction: args.threshold / 100.0,
            max_lat_us: None,
            expect: shared.expect,
            load_threshold: crate::pair::loaded::DEFAULT_THRESHOLD,
        },
        conditions: shared.conditions,
        gid_index: args.agents.gid_index,
        timeout: shared.test_timeout,
        fanout: args.fanout as usize,
        html: args.html.clone(),
        csv: args.csv.clone(),
        json,
        quiet: args.progress.quiet,
        pattern: args.pattern.as_deref().map(Pattern::parse).transpose().map_err(Failure::usage)?,
        rounds: args.rounds.map(|r| r as usize),
        seed: args.seed,
        topology: args.topology.as_deref().map(read_topology).transpose()?,
        intra_leaf: args.intra_leaf,
        rails,
        planes: None,
        live: shared.live,
    };
    Ok((config, shared.launch))
}

/// `--topology FILE`: ibnetdiscover output (a large fabric's runs to megabytes).
fn read_topology(path: &std::path::Path) -> Result<Topology, Failure> {
    let cabling = crate::fabric::design::topology::load(path).map_err(|e| Failure::new(e.to_string(), e.remedy()))?;
    Topology::from_cabling(&cabling).map_err(|e| Failure::usage(format!("--topology {}: {e}", path.display())))
}

/// `--baseline`: each node most of whose pairs regressed since the baseline, and each other
/// pair that regressed, as a suspect of severity `warning` whose reason starts `regression:`
/// (the mesh still passes unless `--fail-on warning`).
fn regression_suspects(report: &mut crate::mesh::MeshReport, baseline: &super::baseline::Baseline) -> Result<(), Failure> {
    use crate::mesh::analysis::{Suspect, SuspectKind};
    let comparison = baseline.compare(&*report)?;
    let when = |r: &crate::compare::Regression| r.baseline_time.as_deref().map(|t| format!(" (baseline of {t})")).unwrap_or_default();
    for node in &comparison.slowed {
        let since = comparison.regressions.iter().find(|r| r.key.a == node.endpoint || r.key.b == node.endpoint).map(when).unwrap_or_default();
        report.doc.suspects.push(Suspect::warning(
            SuspectKind::Node,
            node.endpoint.clone(),
            format!(
                "regression: {} of its {} pairs slower than the baseline by more than {}%{since}",
                node.regressed_pairs, node.pairs, comparison.regression_pct
            ),
        ));
    }
    for r in &comparison.regressions {
        if comparison.slowed.iter().any(|n| r.key.a == n.endpoint || r.key.b == n.endpoint) {
            continue;
        }
        report.doc.suspects.push(Suspect::warning(SuspectKind::Link, format!("{}<->{}", r.key.a, r.key.b), format!("regression: {}", r.message)));
    }
    Ok(())
}
