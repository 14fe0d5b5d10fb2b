use crate::cli::CheckArgs;
use crate::diagnose::node::{self, Window};
use crate::diagnose::Scope;
use crate::error::{Failure, Outcome, Stop};
use crate::model::parse_device_port;
use crate::probe::{self, ProbeError, Source};
use crate::report;

pub fn run(args: &CheckArgs) -> Result<Outcome, Stop> {
    if let Some(max) = args.max_len {
        crate::report::output::limit_oneline(usize::from(max));
    }
    let expect = super::flags::read_expectations(args.profile.as_deref(), &args.expect)?;
    let scope = match &args.device {
        Some(text) => {
            let (device, port) = parse_device_port(text).map_err(Failure::usage)?;
            Scope { device: Some(device), port }
        }
        None => Scope::default(),
    };
    let origin = super::bundle::origin(args.sysfs_root.as_deref())?;
    let source = args.sysfs_root.clone().map_or(Source::Live, Source::Sysfs);
    let soak = super::soak::window(args.soak.as_deref(), matches!(source, Source::Live))?;
    let read = || probe::node::read(&source, scope.device.as_deref()).map_err(Failure::from);
    let start = read()?;
    if let (Some(dev), Some(port)) = (&scope.device, scope.port) {
        if let Some(d) = start.inventory.device(dev) {
            if !d.ports.iter().any(|p| p.port == port) {
                let missing = ProbeError::NoSuchPort { device: dev.clone(), port, present: d.ports.iter().map(|p| p.port).collect() };
                return Err(Failure::from(missing).into());
            }
        }
    }
    // `--soak`: the node read again at the window's end, judged over what rose in it. Nothing to
    // soak on a node without devices: the checklist says why at once.
    let (judged, interrupted) = match soak {
        Some(asked) if !start.inventory.devices.is_empty() => {
            // On a terminal, the window's progress on stderr (issue #57).
            let quiet = crate::cli::ProgressFlags { progress: false, no_progress: false, quiet: false };
            let soaked = super::soak::run(&start, asked, read, &mut *super::progress::sink(&quiet))?;
            let window = Window { asked, seconds: soaked.seconds, interrupted: soaked.interrupted, pcie_start: &start.pcie };
            (node::judge(&soaked.end, &expect, &scope, Some(&window)), super::soak::interrupted(&soaked))
        }
        _ => (node::judge(&start, &expect, &scope, None), None),
    };
    let mut judged = judged;
    kernel_log(&mut judged, &start, &source, args.since, &expect);
    let doc = report::check::CheckDoc { schema: report::check::SCHEMA, report: &judged.report, gpus: &judged.gpus, origin };
    let outcome = report::output::deliver(&doc, args.json)?;
    // A soak window cut short by SIGINT: the report above judged what it saw; the run is exit 2.
    if let Some(interrupted) = interrupted {
        return Err(interrupted.into());
    }
    Ok(outcome)
}

/// `link.flap` from the kernel log over `--since`: live, dmesg (or journalctl -k) up to now; a
/// bundle, its `tools/dmesg.txt` up to its last line (a bundle without one is not judged).
fn kernel_log(
    judged: &mut node::Judged,
    read: &probe::node::NodeRead,
    source: &Source,
    since: std::time::Duration,
    expect: &crate::diagnose::Expectations,
) {
    // No RDMA port, nothing of the log is about one.
    if read.inventory.devices.is_empty() {
        return;
    }
    if let Some((log, end)) = probe::kernel_log::read(source) {
        let window = crate::diagnose::flap_rules::LogWindow { end, seconds: since.as_secs().max(1) };
        node::judge_kernel_log(judged, &read.inventory, log.as_ref().map_err(String::as_str), window, expect);
    }
}
