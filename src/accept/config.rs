//! What an acceptance run is given and tells: its validated configuration (built by
//! `commands::accept`), one node's answer, and the progress it reports. Its own file so that
//! the run and its stages both import it and not each other.

use crate::control::endpoint::EndpointSpec;
use crate::control::link::LaunchOptions;
use crate::model::rails::RailSpec;
use crate::outcome::loss::Loss;
use crate::probe::facts::Fact;
use std::time::Duration;

/// One node's answer: its judged checklist and drift facts, or why it could not be had.
pub type Answer = Result<(crate::outcome::Report, Vec<Fact>), Loss>;

pub struct AcceptConfig {
    pub specs: Vec<EndpointSpec>,
    /// Each endpoint's name in the report until its agent says its host (`unique_names`).
    pub names: Vec<String>,
    pub launch: LaunchOptions,
    /// How long one node's read and judgement may take (and each stage's agents' timeout).
    pub check_limit: Duration,
    /// Nodes asked at once.
    pub window: usize,
    /// `--fail-on warning`: a node with a warning fails (and is drained).
    pub fail_on_warning: bool,
    /// 1, 2 or 3.
    pub level: u8,
    /// Levels 2 and 3: each node's rails (`--rails`, as `pair --rails`).
    pub rails: RailSpec,
    /// Level 3: the whole run (`--duration`).
    pub duration: Duration,
    pub gid_index: Option<u8>,
    pub stall_timeout_ms: u64,
    /// The pair ring's iterations per test (`--iters`; `None`: pair's default).
    pub iters: Option<u64>,
}

/// How far the run is: the stage and the steps done of all (on a terminal, one status line
/// with the stage's ETA).
pub trait Progress {
    fn step(&mut self, stage: &str, done: usize, of: usize, unit: &str);

    fn nodes(&mut self, stage: &str, done: usize, of: usize) {
        self.step(stage, done, of, "nodes");
    }
}
