use crate::cli::CheckArgs;
use crate::diagnose::node::{self, Window};
use crate::error::{Failure, Outcome, Stop};
use crate::probe::{self, ProbeError, Source};

pub fn run(args: &CheckArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    if let Some(max) = args.max_len {
        out.limit_oneline(usize::from(max));
    }
    let expect = super::flags::read_expectations(args.profile.as_deref(), &args.expect)?;
    let scope = super::flags::device_scope(&args.device)?;
    let origin = super::bundle::origin(args.sysfs_root.as_deref())?;
    let source = args.sysfs_root.clone().map_or(Source::Live, Source::Sysfs);
    let soak = super::soak::window(args.soak.as_deref(), matches!(source, Source::Live))?;
    // Only the named devices are read (a name that is not there is the probe's error, naming
    // those present); then each named port is looked for.
    let only = scope.devices();
    let read = || probe::node::read(&source, &only).map_err(Failure::from);
    let start = read()?;
    for (dev, port) in &scope.only {
        if let (Some(d), Some(port)) = (start.inventory.device(dev), *port) {
            if !d.ports.iter().any(|p| p.port == port) {
                let missing = ProbeError::NoSuchPort { device: dev.clone(), port, present: d.ports.iter().map(|p| p.port).collect() };
                return Err(Failure::from(missing).into());
            }
        }
    }
    // `--soak`: the node read again at the window's end, judged over what rose in it. Nothing to
    // soak on a node without devices: the checklist says why at once.
    let soaked = match soak {
        Some(asked) if !start.inventory.devices.is_empty() => {
            // On a terminal, the window's progress on stderr (issue #57).
            let quiet = crate::cli::ProgressFlags { progress: false, no_progress: false, quiet: false };
            Some((asked, super::soak::run(&start, asked, read, &mut *super::progress::sink(&quiet))?))
        }
        _ => None,
    };
    // The kernel log up to now (after the soak window, so it holds the window's flaps).
    let log = kernel_log(&start, &source, args.since);
    let log = log.as_ref().map(|(log, window)| node::Log { log: log.as_ref().map_err(String::as_str), window: *window });
    let (judged, interrupted) = match &soaked {
        Some((asked, soaked)) => {
            let window = Window { asked: *asked, seconds: soaked.seconds, interrupted: soaked.interrupted, pcie_start: &start.pcie };
            (node::judge_with_log(&soaked.end, &expect, &scope, Some(&window), log.as_ref()), super::soak::interrupted(soaked))
        }
        None => (node::judge_with_log(&start, &expect, &scope, None, log.as_ref()), None),
    };
    let doc = super::check_doc::CheckDoc { schema: crate::outcome::CHECK_SCHEMA, report: &judged.report, gpus: &judged.gpus, origin };
    let outcome = out.deliver(&doc, args.json)?;
    // A soak window cut short by SIGINT: the report above judged what it saw; the run is exit 2.
    if let Some(interrupted) = interrupted {
        return Err(interrupted.into());
    }
    Ok(outcome)
}

/// The kernel log for `link.flap` over `--since`: live, dmesg (or journalctl -k) up to now; a
/// bundle, its `tools/dmesg.txt` up to its last line (a bundle without one is not judged).
fn kernel_log(
    read: &probe::node::NodeRead,
    source: &Source,
    since: std::time::Duration,
) -> Option<(Result<probe::kernel_log::KernelLog, String>, crate::diagnose::flap_rules::LogWindow)> {
    // No RDMA port, nothing of the log is about one.
    if read.inventory.devices.is_empty() {
        return None;
    }
    let (log, end) = probe::kernel_log::read(source)?;
    Some((log, crate::diagnose::flap_rules::LogWindow { end, seconds: since.as_secs().max(1) }))
}
