//! `fabcheck mesh`: every pair of endpoints, in rounds of disjoint pairs run in parallel, the
//! bad pairs re-tested once, and the result read for the node, link or setting to blame.
//!
//! Orchestration (`run`) is the only part with I/O; scheduling (`schedule`, `pattern`),
//! judgement (`analysis`), the document (`doc`), the human view (`text`), the CSV rows (`csv`)
//! and the heat map (`page`, `heatmap`) are pure. The result is a `report::Document`:
//! `report::output` writes it, in every format, and the side files. A thousand endpoints cost a
//! thousand channels (and, over ssh, a thousand ssh processes), not a thousand threads.

pub mod analysis;
pub mod csv;
pub mod doc;
pub mod heatmap;
mod idle;
pub mod names;
mod page;
pub mod pattern;
pub mod rails;
mod report;
mod run;
pub mod schedule;
mod spool;
mod text;
pub mod topology;

pub use doc::{MeshDoc, PairRecord, PatternDoc, Timing, Unreachable};
pub use report::MeshReport;
pub use run::{run, MeshRun};

use crate::control::endpoint::EndpointSpec;
use crate::pair::plan::PlannedTest;
use crate::pair::verdict;
use pattern::Pattern;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use topology::Topology;

/// Above this many endpoints the human output shows per-endpoint summaries and the worst
/// pairs instead of the matrix.
pub const MATRIX_MAX: usize = 32;

/// A mesh run, validated: everything `run` needs, no flags.
#[derive(Debug, Clone)]
pub struct MeshConfig {
    pub specs: Vec<EndpointSpec>,
    pub names: Vec<String>,
    pub plan: Vec<PlannedTest>,
    pub pair_criteria: verdict::Criteria,
    pub gid_index: Option<u8>,
    pub conditions: crate::model::Conditions,
    pub timeout: Duration,
    pub fanout: usize,
    pub html: Option<PathBuf>,
    /// `--csv FILE`: every pair's results, one row per test (see [`csv`]).
    pub csv: Option<PathBuf>,
    pub json: bool,
    /// Human output: only problems (unreachable endpoints, suspects) and the verdict.
    pub quiet: bool,
    /// `None`: all-pairs up to 64 endpoints, shift above.
    pub pattern: Option<Pattern>,
    /// Rounds of the first pass, at most.
    pub rounds: Option<usize>,
    /// Seed of `random:K` (`None`: a fresh one, printed).
    pub seed: Option<u64>,
    pub topology: Option<Topology>,
    /// Shift may pair endpoints of one leaf.
    pub intra_leaf: bool,
    /// `--rails SPEC`: the endpoints are hosts, tested rail by rail ([`rails`]).
    pub rails: Option<crate::model::rails::RailSpec>,
    /// With `--rails`: how the rail endpoints map onto the hosts. Filled by `run` from the
    /// hosts' answers (the specs and names are then the rails'); `None` without `--rails`.
    pub planes: Option<rails::Planes>,
    /// `--report-every`: where each interval's figures go (the plan's specs carry the interval).
    pub live: Option<crate::progress_record::LiveOutput>,
}

/// Endpoint names, with `#2`, `#3`... on repeats (`localhost/rxe0` given four times is four
/// endpoints), so suspects and matrix rows name one endpoint each.
pub fn unique_names(specs: &[EndpointSpec]) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(specs.len());
    specs
        .iter()
        .map(|s| {
            let name = s.to_string();
            let nth = seen.entry(name.clone()).or_insert(0);
            *nth += 1;
            if *nth > 1 {
                format!("{name}#{nth}")
            } else {
                name
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_number_repeats() {
        let specs: Vec<EndpointSpec> = ["a/rxe0", "a/rxe0", "b", "a/rxe0"].iter().map(|t| crate::control::endpoint::parse(t).unwrap()).collect();
        assert_eq!(unique_names(&specs), ["a/rxe0", "a/rxe0#2", "b", "a/rxe0#3"]);
    }
}
