//! The burn-in's live-figure flags that `pair`, `mesh` and `collective` share
//! (`--report-every`, `--progress-json`, `--live-dir`).

use super::values;
use clap::Args;
use std::path::PathBuf;

/// A burn-in's live figures (`pair`, `mesh`, `collective`; perftest's --run_infinitely prints every 5 s).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Output")]
pub struct BurnInFlags {
    /// While a test runs, its figures every SECS (at least 0.1): a line on stderr, and with
    /// --progress-json a fabcheck.progress.v1 record per line. Give -D for a long test.
    #[arg(long, value_name = "SECS", value_parser = values::parse_seconds)]
    pub report_every: Option<f64>,
    /// With --report-every: one JSON record per interval in FILE (replaced at the start).
    #[arg(long, value_name = "FILE", requires = "report_every")]
    pub progress_json: Option<PathBuf>,
    /// With --report-every: keep the last interval's figures in DIR for `fabcheck exporter
    /// --live-dir` while the run lasts (default /run/fabcheck/live where it may write; none: off).
    #[arg(long, value_name = "DIR", requires = "report_every")]
    pub live_dir: Option<PathBuf>,
}
