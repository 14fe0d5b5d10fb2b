//! `fabcheck pair`: flags in, a validated [`PairConfig`] out, then the run.

use super::flags::{measuring, MeasureFlags};
use crate::cli::PairArgs;
use crate::control::agents::HubAgents;
use crate::control::endpoint;
use crate::control::link::LaunchOptions;
use crate::error::{Failure, Outcome, Stop};
use crate::model::Direction;
use crate::model::{parse_device_port, TestKind};
use crate::pair::plan::{self, PlanInput};
use crate::pair::{self, verdict, CpuChoice, PairConfig};

pub fn run(args: &PairArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    let (mut config, launch) = configure(args)?;
    config.json |= out.machine();
    // A machine format on stdout and a records file: the interval lines stay off stderr.
    if let Some(live) = config.live.as_mut().filter(|l| l.json.is_some()) {
        live.lines &= !config.json;
    }
    // Read and checked before any test runs: a wrong baseline is exit 2 at once.
    let baseline = super::baseline::load(args.baseline.as_deref(), args.regression, "fabcheck.pair.v1")?;
    let json = config.json;
    let mut run = pair::run(config, &mut HubAgents::new(launch), &mut *super::progress::sink(&args.progress))?;
    if let Some(baseline) = &baseline {
        let comparison = baseline.compare(&run.report)?;
        run.report.doc.findings.extend(comparison.regressions.iter().map(super::baseline::finding));
    }
    let outcome = out.deliver(&run.report, json)?;
    // Stopped by a signal: the document of what ran is out; the run is exit 2.
    if let Some(failure) = run.interrupted {
        return Err(failure.into());
    }
    // The side files after the results, so one that cannot be written loses nothing else.
    let pass = run.report.doc.verdict == crate::outcome::Verdict::Pass;
    for file in &run.side_files {
        file.write(pass)?;
    }
    Ok(outcome)
}

/// `--validate`: a fresh seed for the run's pattern (said in any `pair.data` finding), when the
/// plan has a test it checks on host memory.
fn validate_seed(args: &PairArgs, tests: &[TestKind]) -> Result<Option<u64>, Failure> {
    if !args.validate {
        return Ok(None);
    }
    if !args.conditions.mem.choice().is_host() {
        return Err(Failure::usage("--validate checks host memory only: drop --mem, or --validate"));
    }
    if !tests.iter().copied().any(pair::data::checked) {
        return Err(Failure::usage("--validate checks send_bw, write_bw and read_bw: name one in --tests"));
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(Some(now.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32)))
}

/// `pair`'s flags as a validated run, and how its agents are launched.
pub fn configure(args: &PairArgs) -> Result<(PairConfig, LaunchOptions), Failure> {
    // The flags' own values first; then the endpoints, and the files the flags name.
    if !(args.threshold > 0.0 && args.threshold <= 100.0) {
        return Err(Failure::usage("--threshold is a percentage, 1..100"));
    }
    if args.max_lat_us.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        return Err(Failure::usage("--max-lat-us must be a positive number"));
    }
    let tests = args.tests.0.clone();
    if !(args.load_threshold.is_finite() && args.load_threshold >= 1.0) {
        return Err(Failure::usage("--load-threshold is how many times the idle p99 the loaded one may be: a number of at least 1 (default 4)"));
    }
    if args.cm && tests.contains(&TestKind::LatUnderLoad) {
        return Err(Failure::usage("lat_under_load connects its latency QP and its load's QPs out of band: run it without --cm (-R)"));
    }
    let validate_seed = validate_seed(args, &tests)?;
    let parse = |text: &str| endpoint::parse_with_tcp_port(text, args.tcp_port).map_err(Failure::usage);
    let mut endpoints = [parse(&args.a)?, parse(&args.b)?];
    if let Some(text) = &args.device {
        let (device, port) = parse_device_port(text).map_err(Failure::usage)?;
        for e in &mut endpoints {
            if e.device.is_none() {
                e.device = Some(device.clone());
                e.port = port;
            }
        }
    }
    // perftest's -i: the port, where neither the endpoint nor --device names one.
    for e in &mut endpoints {
        if e.port.is_none() {
            e.port = args.ib_port;
        }
    }
    // A machine `--format` wants the document too: `run` adds it (and quiets the lines).
    let json = args.json;
    let flags = MeasureFlags { duration: args.duration, burn_in: &args.burn_in, conditions: &args.conditions, agents: &args.agents, json };
    let shared = measuring(&flags, endpoints.iter().map(|e| (&e.host, e.host.to_string())))?;
    let direction = if args.bidirectional { Some("bidi") } else { args.direction.as_deref() };
    let directions = direction.map(Direction::parse_list).transpose().map_err(Failure::usage)?;
    let mut plan = plan::build(&PlanInput {
        tests,
        size: args.size,
        sweep: args.sweep,
        iters: args.iters,
        duration_ms: shared.duration_ms,
        qps: args.qps,
        directions,
        stall_timeout_ms: args.agents.stall_timeout_ms,
    })
    .map_err(Failure::usage)?;
    let tuning = plan::Tuning {
        atomic: args.atomic,
        inline: args.inline,
        tx_depth: args.tx_depth,
        events: args.events,
        report_every_ms: shared.report_every_ms,
        validate_seed,
    };
    plan::tune(&mut plan, &tuning).map_err(Failure::usage)?;
    if let Some(n) = args.paths {
        if args.cm {
            return Err(Failure::usage("--paths with --cm: rdma_cm builds the address vector and its flow label; drop --cm"));
        }
        pair::paths::apply(&mut plan, n).map_err(Failure::usage)?;
    }
    let rails = match &args.rails {
        Some(spec) => Some(pair::rails::RailsConfig::parse(spec, args.rail_threshold.as_deref(), args.cpu.as_deref()).map_err(Failure::usage)?),
        None if args.rail_threshold.is_some() => return Err(Failure::usage("--rail-threshold judges rails against each other: give --rails too")),
        None => None,
    };
    if args.cm && args.conditions.mtu.is_some() {
        return Err(Failure::usage("-m with --cm: rdma_cm sets the path MTU from its path record; drop -m, or --cm to set it"));
    }
    if rails.is_some() && (args.cm || args.csv.is_some() || args.svg.is_some() || shared.live.is_some()) {
        return Err(Failure::usage(
            "--rails does not combine with --cm, --csv, --svg or --report-every yet: run those on one rail (pair A/DEV B/DEV)",
        ));
    }
    let per_rail_cpus = rails.as_ref().is_some_and(|r| r.cpus.is_some());
    let cpu = match args.cpu.as_deref() {
        _ if per_rail_cpus => CpuChoice::Off,
        cpu => cpu.map_or(Ok(CpuChoice::Auto), CpuChoice::parse).map_err(Failure::usage)?,
    };
    if let CpuChoice::Pin([a, b]) = cpu {
        if a == b && endpoints[0].host == endpoints[1].host {
            return Err(Failure::usage(format!(
                "--cpu {a}: both ends run on {} and would busy-poll one CPU; give two CPUs, --cpu A,B",
                endpoints[0].host
            )));
        }
    }
    let expect = shared.expect;
    let mut asked = shared.conditions;
    // `--expect roce_dscp=N` without --tclass: both ends send that DSCP (else each its own).
    if let (None, Some(dscp)) = (asked.tclass, expect.roce_dscp) {
        asked.tclass = Some(dscp.get() << 2);
        asked.tclass_source = Some(crate::model::TclassSource::Expect);
    }
    let config = PairConfig {
        endpoints,
        plan,
        criteria: verdict::Criteria { bw_fraction: args.threshold / 100.0, max_lat_us: args.max_lat_us, expect, load_threshold: args.load_threshold },
        conditions: asked,
        cpu,
        gid_index: args.agents.gid_index,
        cm: args.cm,
        test_timeout: shared.test_timeout,
        json,
        quiet: args.progress.quiet,
        csv: args.csv.clone(),
        svg: args.svg.clone(),
        rails,
        live: shared.live,
    };
    Ok((config, shared.launch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use std::time::Duration;

    fn parsed(extra: &[&str]) -> Result<PairConfig, Failure> {
        let mut argv = vec!["fabcheck", "pair", "localhost", "localhost"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("clap accepts the flags").command {
            Command::Pair(args) => configure(&args).map(|(config, _)| config),
            _ => unreachable!(),
        }
    }

    /// Issue #35 item 5: perftest's habits. `-D 5s` with the default tests runs them all (bidi
    /// send_bw by count), `-R` is `--cm`, `-F` is accepted, durations and sizes in any spelling,
    /// `-a -s MAX` sweeps up to MAX.
    #[test]
    fn perftest_habits() {
        let timed = parsed(&["-D", "5s"]).expect("-D 5s with the default tests");
        assert_eq!(timed.plan.len(), 12);
        assert_eq!(timed.plan.iter().filter(|t| t.spec.duration_ms == Some(5000)).count(), 11);
        assert_eq!(parsed(&["-D", "2m"]).unwrap().plan[0].spec.duration_ms, Some(120_000));
        assert_eq!(parsed(&["--duration", "1m30s"]).unwrap().plan[0].spec.duration_ms, Some(90_000));
        assert_eq!(parsed(&["-D", "2h"]).unwrap().plan[0].spec.duration_ms, Some(7_200_000), "a burn-in: up to 7 days");
        assert!(parsed(&["-D", "8d"]).is_err(), "at most 7 days per test");
        assert!(parsed(&["-R"]).unwrap().cm);
        assert!(!parsed(&[]).unwrap().cm);
        assert!(parsed(&["-F", "-R", "-D", "5s"]).is_ok());
        let swept = parsed(&["--tests", "write_bw", "--direction", "ab", "-a", "-s", "64KB"]).unwrap();
        assert_eq!(swept.plan.len(), 16, "2 B .. 64 KiB");
        assert_eq!(swept.plan.last().unwrap().spec.size, 65536);
        assert_eq!(parsed(&["-s", "1MiB", "--tests", "write_bw"]).unwrap().plan[0].spec.size, 1 << 20);
        assert_eq!(parsed(&["--timeout", "5m", "-D", "1s"]).unwrap().test_timeout, Duration::from_secs(301));
    }

    /// Issue #45: the rest of perftest's habits. `--report_gbits` is accepted (fabcheck reports
    /// Gb/s), `-b` is bidirectional, `-p` the port of tcp:// agents that name none, `-m` caps
    /// the path MTU (an IBTA MTU only, and not with rdma_cm, which sets its own).
    #[test]
    fn perftest_habits_of_0_4() {
        assert!(parsed(&["--report_gbits"]).is_ok() && parsed(&["--report-gbits"]).is_ok());
        let bidi = parsed(&["-b", "--tests", "write_bw"]).unwrap();
        assert!(bidi.plan.iter().all(|t| t.direction == Direction::Bidi) && !bidi.plan.is_empty());
        assert!(Cli::try_parse_from(["fabcheck", "pair", "a", "b", "-b", "--direction", "ab"]).is_err(), "-b is a direction");
        let argv = ["fabcheck", "pair", "tcp://n1", "tcp://[fd00::2]", "-p", "9000"];
        let Command::Pair(args) = Cli::try_parse_from(argv).unwrap().command else { unreachable!() };
        let (config, _) = configure(&args).unwrap();
        assert_eq!(config.endpoints.iter().map(|e| e.host.to_string()).collect::<Vec<_>>(), ["tcp://n1:9000", "tcp://[fd00::2]:9000"]);
        let argv = ["fabcheck", "pair", "tcp://n1", "tcp://n2:18515"];
        let Command::Pair(args) = Cli::try_parse_from(argv).unwrap().command else { unreachable!() };
        assert!(configure(&args).unwrap_err().to_string().contains("-p PORT"));
        assert_eq!(parsed(&["-m", "2048"]).unwrap().conditions.mtu, Some(2048));
        assert_eq!(parsed(&["-m", "4K"]).unwrap().conditions.mtu, Some(4096));
        assert!(Cli::try_parse_from(["fabcheck", "pair", "a", "b", "-m", "1500"]).is_err(), "1500 is no IBTA MTU");
        assert!(parsed(&["-m", "1024", "-R"]).is_err());
    }

    #[test]
    fn cpu_flag() {
        assert_eq!(parsed(&[]).unwrap().cpu, CpuChoice::Auto, "default: the agents choose");
        assert_eq!(parsed(&["--cpu", "0,1"]).unwrap().cpu, CpuChoice::Pin([0, 1]));
        assert_eq!(parsed(&["--cpu", " 3 , 2"]).unwrap().cpu, CpuChoice::Pin([3, 2]));
        assert_eq!(parsed(&["--cpu", "none"]).unwrap().cpu, CpuChoice::Off);
        assert_eq!(parsed(&["--cpu", "auto"]).unwrap().cpu, CpuChoice::Auto);
        for bad in ["x", "1,y", "-1", "1,2,3", ""] {
            assert!(parsed(&[&format!("--cpu={bad}")]).is_err(), "--cpu {bad}");
        }
        let one = parsed(&["--cpu", "3"]).unwrap_err();
        assert!(one.to_string().contains("one CPU"), "{one}");
    }
}
