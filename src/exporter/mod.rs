//! `fabcheck exporter`: a Prometheus endpoint for one node. Two threads: the refresh thread
//! reads the node every interval and writes the finished pages ([`refresh`], [`page`] over
//! the one metric table, `report::prom::metrics`, and its writer); the listener answers scrapes from the last pages
//! ([`serve`] over the bounded request reader in [`http`]). Read-only, and safe to leave
//! running: see docs/ci.md, "The exporter".

pub mod http;
pub mod live;
pub mod page;
pub mod refresh;
pub mod serve;

use crate::error::{Failure, Outcome};
use crate::probe::Source;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A validated `fabcheck exporter` run.
#[derive(Debug, Clone)]
pub struct ExporterConfig {
    pub listen: SocketAddr,
    pub interval: Duration,
    pub source: Source,
    /// What the checklist is judged against (`--expect`, `--profile`), as `check`'s is.
    pub expect: crate::diagnose::Expectations,
    /// Which devices and ports (`--device`), as `check`'s.
    pub scope: crate::diagnose::Scope,
    pub limits: http::Limits,
    /// `--live-dir`: running burn-ins' last intervals (`None`: none served).
    pub live_dir: Option<std::path::PathBuf>,
}

/// Binds, starts the refresh thread, and serves until SIGINT or SIGTERM.
pub fn run(config: &ExporterConfig) -> Result<Outcome, Failure> {
    let listener = TcpListener::bind(config.listen).map_err(|e| {
        Failure::new(
            format!("cannot listen on {}: {e}", config.listen),
            "choose a free port (`ss -ltnp` shows who holds it) and an address of this host",
        )
    })?;
    let bound = listener.local_addr().map_err(|e| Failure::new(format!("cannot read the listening address: {e}"), "retry"))?;
    crate::sys::os::catch_termination();
    eprintln!("fabcheck exporter: serving http://{bound}/metrics, reading the node every {} s", config.interval.as_secs_f64());
    let shelf: serve::Shelf = Arc::new(RwLock::new(refresh::starting_pages(config.interval)));
    {
        let shelf = Arc::clone(&shelf);
        let refresh = refresh::Refresh {
            source: config.source.clone(),
            interval: config.interval,
            expect: config.expect.clone(),
            scope: config.scope.clone(),
            live_dir: config.live_dir.clone(),
        };
        std::thread::Builder::new()
            .name("fabcheck-refresh".into())
            .spawn(move || refresh::run(&refresh, &shelf, &crate::sys::os::interrupted))
            .map_err(|e| Failure::new(format!("cannot start the refresh thread: {e}"), "check the process and thread limits (ulimit -u)"))?;
    }
    // The refresh thread sees the same stop flag; it is not waited for, as a read in progress
    // may be stuck in a slow sysfs file, and the process ends with the listener.
    serve::serve(&listener, &shelf, &config.limits, &crate::sys::os::interrupted)
        .map_err(|e| Failure::new(format!("the exporter's listener failed: {e}"), "restart it; see the log for the cause"))?;
    Ok(Outcome::Pass)
}
