//! `fabcheck accept`: flags in, a validated [`AcceptConfig`] out, then the run and its report.

use super::flags::launch_for;
use crate::accept::run::{self, AcceptConfig};
use crate::accept::{drain, html, junit};
use crate::cli::AcceptArgs;
use crate::control::endpoint;
use crate::error::{Failure, Outcome, Stop};
use crate::outcome::Verdict;
use crate::report::output::{self, Format};
use crate::report::Stamp;
use crate::sys::fs::{read_text, TEXT_FILE_CAP};
use std::io::{IsTerminal, Write};
use std::time::Duration;

pub fn run(args: &AcceptArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    let mut config = configure(args)?;
    config.fail_on_warning = out.fail_on_warning();
    let format = out.chosen(args.json);
    if format == Format::Prom {
        return Err(Failure::usage("accept writes no Prometheus page: use --format json, junit, oneline or human").into());
    }
    // Checked before any node is asked: a drain that cannot happen is said at once.
    if args.drain && !drain::in_allocation(|k| std::env::var(k).ok()) {
        return Err(Failure::new(
            "--drain runs scontrol inside a Slurm allocation, and this is not one (no SLURM_JOB_ID): nothing was drained",
            "run accept inside salloc/sbatch, or without --drain and drain from its --format oneline lines",
        )
        .into());
    }
    let mut progress = Terminal::new(args.progress.quiet || args.progress.no_progress, args.progress.progress);
    let doc = run::run(&config, &mut progress).map_err(|loss| {
        let (cause, remedy) = crate::report::loss::words(&loss);
        Failure::new(cause, remedy)
    })?;
    progress.done();
    let stamp = Stamp::now();
    let text = match format {
        Format::Json => {
            let mut out = Vec::new();
            crate::report::json::write_sorted(&mut out, &doc, &stamp, Some(doc.verdict)).map_err(|e| Failure::new(e.to_string(), "rerun"))?;
            String::from_utf8_lossy(&out).into_owned()
        }
        Format::Oneline => doc.oneline(),
        Format::Junit => junit::render(&doc, &stamp),
        Format::Human | Format::Prom => doc.human(),
    };
    out.deliver_text(&crate::sanitise::printable(&text))?;
    let pass = doc.verdict == Verdict::Pass;
    if let Some(path) = &args.html {
        output::side_file(path, "the HTML page", "--html", html::render(&doc, &stamp).as_bytes(), pass)?;
    }
    // Nobody answered: the document says who could not be reached; the run itself is exit 2.
    if doc.nodes.iter().all(|n| n.verdict == crate::accept::report::NodeVerdict::Unreachable) {
        return Err(Failure::new(
            format!("no node answered check: all {} could not be reached (the report names each and why)", doc.nodes.len()),
            "start the agents (`fabcheck serve`, or ssh/srun reach with `fabcheck agent`), then rerun",
        )
        .into());
    }
    if args.drain {
        let (said, all) = drain::drain(&doc.drain);
        for line in said {
            output::to_stderr(&line);
        }
        if !all {
            return Err(Failure::new("some failed nodes were not drained (see above)", "drain them by hand with scontrol").into());
        }
    }
    Ok(if pass { Outcome::Pass } else { Outcome::Fail })
}

/// `accept`'s flags as a validated run: mesh's endpoints, hostfile and launchers.
pub fn configure(args: &AcceptArgs) -> Result<AcceptConfig, Failure> {
    let rails = crate::model::rails::RailSpec::parse(&args.rails).map_err(|e| Failure::usage(format!("--rails: {e}")))?;
    if !(args.duration.is_finite() && args.duration >= 1.0 && args.duration <= 7.0 * 86_400.0) {
        return Err(Failure::usage("--duration is seconds, 1 to 604800 (7 days): level 3's whole run"));
    }
    let mut texts: Vec<(String, Option<usize>)> = args.endpoints.iter().map(|e| (e.clone(), None)).collect();
    if let Some(path) = &args.hostfile {
        let text = read_text(path, TEXT_FILE_CAP)
            .map_err(|e| Failure::new(format!("cannot read hostfile: {e}"), "give a readable file, one endpoint per line"))?;
        let lines = text.lines().enumerate().map(|(i, l)| (l.split('#').next().unwrap_or("").trim(), i + 1));
        texts.extend(lines.filter(|(l, _)| !l.is_empty()).map(|(l, n)| (l.to_string(), Some(n))));
    }
    if texts.is_empty() {
        return Err(Failure::usage("accept needs endpoints (arguments or --hostfile)"));
    }
    let mut specs = Vec::new();
    for (t, line) in &texts {
        let spec = endpoint::parse_with_tcp_port(t, args.tcp_port).map_err(|e| match (line, &args.hostfile) {
            // Never the line itself (as mesh): the line number is enough to find a typo.
            (Some(n), Some(path)) => Failure::usage(format!(
                "--hostfile {}: line {n} is not an endpoint ([USER@]HOST or tcp://HOST:PORT); the line is not shown",
                path.display()
            )),
            _ => Failure::usage(e),
        })?;
        specs.push(spec);
    }
    let launch = launch_for(&args.agents, specs.iter().map(|s| (&s.host, s.to_string())))?;
    Ok(AcceptConfig {
        names: crate::mesh::unique_names(&specs),
        specs,
        launch,
        check_limit: Duration::from_secs(args.agents.timeout.max(1)),
        window: args.fanout as usize,
        // `--fail-on`, a global flag: `run` sets it.
        fail_on_warning: false,
        level: args.level,
        rails,
        duration: Duration::from_secs_f64(args.duration),
        gid_index: args.agents.gid_index,
        stall_timeout_ms: args.agents.stall_timeout_ms,
        iters: args.iters,
    })
}

/// Progress on stderr: on a terminal one status line (stage, steps done, the stage's ETA), with
/// `--progress` plain lines elsewhere; nothing with `--quiet` or `--no-progress`.
struct Terminal {
    on: bool,
    tty: bool,
    shown: bool,
    /// The stage shown and when it began (its ETA is from its own pace).
    stage: String,
    since: std::time::Instant,
}

impl Terminal {
    fn new(off: bool, forced: bool) -> Terminal {
        let tty = std::io::stderr().is_terminal();
        Terminal { on: forced || (tty && !off), tty, shown: false, stage: String::new(), since: std::time::Instant::now() }
    }

    fn done(&mut self) {
        if std::mem::take(&mut self.shown) {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

/// The time left at the pace so far, in words (`ETA 2m10s`); nothing before the first step.
fn eta(elapsed: Duration, done: usize, of: usize) -> String {
    if done == 0 || done >= of {
        return String::new();
    }
    let left = elapsed.mul_f64((of - done) as f64 / done as f64).as_secs();
    if left >= 60 {
        format!(", ETA {}m{:02}s", left / 60, left % 60)
    } else {
        format!(", ETA {left}s")
    }
}

impl run::Progress for Terminal {
    fn step(&mut self, stage: &str, done: usize, of: usize, unit: &str) {
        if !self.on {
            return;
        }
        if self.stage != stage {
            self.stage = stage.to_string();
            self.since = std::time::Instant::now();
        }
        let eta = eta(self.since.elapsed(), done, of);
        let mut err = std::io::stderr().lock();
        if self.tty {
            self.shown = true;
            let _ = write!(err, "\raccept: {stage}: {done}/{of} {unit}{eta}\x1b[K");
        } else {
            let _ = writeln!(err, "accept: {stage}: {done}/{of} {unit}{eta}");
        }
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_eta_is_the_pace_so_far() {
        let s = std::time::Duration::from_secs;
        assert_eq!(super::eta(s(30), 1, 4), ", ETA 1m30s");
        assert_eq!(super::eta(s(10), 5, 6), ", ETA 2s");
        assert_eq!(super::eta(s(10), 0, 6), "");
        assert_eq!(super::eta(s(10), 6, 6), "");
    }
}
