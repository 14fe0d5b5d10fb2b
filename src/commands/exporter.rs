//! `fabcheck exporter`: flags in, a validated config out.

use crate::cli::ExporterArgs;
use crate::error::{Failure, Outcome};
use crate::exporter::{self, ExporterConfig};
use crate::probe::Source;
use std::net::SocketAddr;
use std::time::Duration;

/// The exporter writes no document: it serves its page over HTTP, in the exposition the scraper
/// asks for, and its check's rows are judged as `check` judges them without `--fail-on`. So
/// `--format`, `--output` and `--fail-on` would change nothing, and are refused.
pub fn refuse_globals(given: &[super::Global]) -> Result<(), Failure> {
    match given.first() {
        None => Ok(()),
        Some(flag) => Err(Failure::new(
            format!(
                "exporter does not take {}: it serves its page at /metrics (Prometheus text, or OpenMetrics when the scraper asks), and writes no document",
                flag.flag()
            ),
            "drop the flag; for one page in a file use `fabcheck check --format prom --output FILE`, or `curl http://ADDR:PORT/metrics`",
        )),
    }
}

pub fn run(args: &ExporterArgs) -> Result<Outcome, Failure> {
    exporter::run(&configure(args)?)
}

pub fn configure(args: &ExporterArgs) -> Result<ExporterConfig, Failure> {
    let listen: SocketAddr =
        args.listen.parse().map_err(|_| Failure::usage(format!("--listen '{}' is not ADDR:PORT (e.g. 127.0.0.1:9879)", args.listen)))?;
    let source = match &args.sysfs_root {
        Some(root) if !root.join("class/infiniband").is_dir() => {
            return Err(Failure::new(
                format!("--sysfs-root {} holds no class/infiniband", root.display()),
                "point --sysfs-root at the folder that holds class/infiniband (make one with `fabcheck bundle DIR`)",
            ))
        }
        Some(root) => Source::Sysfs(root.clone()),
        None => Source::Live,
    };
    let expect = super::flags::read_expectations(args.profile.as_deref(), &args.expect)?;
    let scope = super::flags::device_scope(&args.device)?;
    // The live figures are this node's runs': a captured tree serves them only when told where.
    let live_dir = match args.live_dir.as_deref() {
        Some(p) if p == std::path::Path::new("none") => None,
        Some(p) => Some(p.to_path_buf()),
        None if args.sysfs_root.is_some() => None,
        None => Some(std::path::PathBuf::from(crate::progress_record::LIVE_DIR)),
    };
    Ok(ExporterConfig {
        listen,
        interval: Duration::from_secs(args.interval),
        source,
        expect,
        scope,
        limits: exporter::http::Limits::default(),
        live_dir,
    })
}
