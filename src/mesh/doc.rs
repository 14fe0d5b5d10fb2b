//! `fabcheck.mesh.v1`: the document's types (plain serde data, read back by `compare` and
//! `--baseline`). The finished mesh as a report is `mesh::report`.

use super::analysis::Suspect;
use crate::outcome::{TestResult, Verdict};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairRecord {
    pub a: String,
    pub b: String,
    pub verdict: Verdict,
    pub results: Vec<TestResult>,
    /// Why the pair could not run, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// This record is the re-test of a pair that was bad on the first pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retest: bool,
    /// This pair was added by the zoom-in: an endpoint of a still-bad pair against a
    /// known-good partner.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zoom: bool,
    /// `mesh --rails`: the rail both endpoints are (rail k is only paired with rail k).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<usize>,
    /// The rate the mesh judged this pair's bandwidth against: the smaller capacity of its two
    /// ends (link, or PCIe where smaller). Absent where either end's is unknown (Soft-RoCE, no
    /// rate reported): the pair was compared with the cluster's median instead. (0.3, additive.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_against_gbps: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MeshDoc {
    pub schema: String,
    pub verdict: Verdict,
    pub endpoints: Vec<String>,
    /// The host each endpoint's agent reported, where it reported one (endpoint as given ->
    /// host): what `--baseline` and `fabcheck compare` match on when ports change.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hosts: std::collections::BTreeMap<String, String>,
    pub pairs: Vec<PairRecord>,
    pub suspects: Vec<Suspect>,
    /// Endpoints whose agent could not be reached, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<Unreachable>,
    /// Which pairs were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<PatternDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
}

/// The pattern a mesh ran: its name, rounds of the first pass, and for `random:K` the seed
/// that repeats it (`--seed`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternDoc {
    pub name: String,
    pub rounds: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Endpoints matched to a leaf switch of `--topology`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves: Option<usize>,
}

/// Where the controller's time went.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timing {
    /// Judging every pair and naming suspects, milliseconds.
    pub analysis_ms: f64,
}

/// An endpoint whose agent could not be reached (on the first pass and again before the
/// re-tests).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unreachable {
    pub endpoint: String,
    pub error: String,
}
