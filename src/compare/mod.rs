//! Baselines: today's `pair`, `mesh` or `collective` figures against an accepted document of the same
//! command, as pure functions of the two documents, read by `read` (typed and streamed: memory
//! in proportion to the figures, not to a JSON tree). `fabcheck compare` prints what they find
//! (`render`); `pair --baseline` and `mesh --baseline` call [`compare_docs`] for their
//! `pair.regression` finding and `regression` suspect reason.
//!
//! A figure is matched by test, direction, size and the two endpoints: the port GUID where
//! both documents have it, else host and device (so a mesh run against the same hosts on new
//! agent ports still matches). Bandwidth and message rate more than PCT below the baseline,
//! or a latency p50 more than PCT above it, is a regression.
//!
//! A collective document (0.5, [`collective`]) gives each ring's busbw, the total's, and each
//! hop's rate between its two members; `collective --baseline` names what regressed (`rail K`,
//! `total`, or the hop `A/DEV <-> B/DEV` with its direction).

pub mod collective;
pub mod figures;
pub mod read;
pub mod render;

use read::{Doc, Figures, Meta};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The default `--regression`.
pub const DEFAULT_PCT: f64 = 5.0;

/// The schemas a baseline may have, by command.
const SCHEMAS: [(&str, Command); 3] =
    [("fabcheck.pair.v1", Command::Pair), ("fabcheck.mesh.v1", Command::Mesh), ("fabcheck.collective.v1", Command::Collective)];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    Pair,
    Mesh,
    Collective,
}

/// Why two documents cannot be compared (exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("the {which} document has no \"schema\": not a fabcheck JSON document")]
    NoSchema { which: &'static str },
    #[error(
        "the {which} document is {schema}, which compare does not take (it compares fabcheck.pair.v1, fabcheck.mesh.v1 and fabcheck.collective.v1)"
    )]
    OtherSchema { which: &'static str, schema: String },
    #[error("the {which} document is {schema}, a version this fabcheck does not know (it knows {known})")]
    UnknownVersion { which: &'static str, schema: String, known: &'static str },
    #[error("the documents are of different commands: {old} and {new}")]
    Mismatch { old: String, new: String },
}

impl CompareError {
    pub fn remedy(&self) -> String {
        match self {
            CompareError::UnknownVersion { .. } => "compare with the fabcheck that wrote it, or re-run the baseline with this one".into(),
            _ => "give two `--json` documents of the same command: pair with pair, mesh with mesh, collective with collective".into(),
        }
    }
}

/// Which figure of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Figure {
    #[serde(rename = "bw_gbps")]
    Bandwidth,
    #[serde(rename = "msg_rate_mpps")]
    MessageRate,
    #[serde(rename = "lat_p50_us")]
    LatencyP50,
    /// A collective ring's or run's bus bandwidth (nccl-tests' busbw).
    #[serde(rename = "busbw_gbps")]
    BusBandwidth,
}

impl Figure {
    /// The figure as the documents name it.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Bandwidth => "bw_gbps",
            Figure::MessageRate => "msg_rate_mpps",
            Figure::LatencyP50 => "lat_p50_us",
            Figure::BusBandwidth => "busbw_gbps",
        }
    }

    /// Higher is better (bandwidth, rate) or worse (latency).
    fn higher_is_better(self) -> bool {
        self != Figure::LatencyP50
    }

    pub fn unit(self) -> &'static str {
        match self {
            Figure::Bandwidth => "Gb/s",
            Figure::MessageRate => "Mpps",
            Figure::LatencyP50 => "us p50",
            Figure::BusBandwidth => "Gb/s busbw",
        }
    }

    pub fn format(self, value: f64) -> String {
        match self {
            Figure::Bandwidth | Figure::BusBandwidth => crate::units::measured_gbps(value),
            Figure::MessageRate => crate::units::sig3(value),
            Figure::LatencyP50 => crate::units::sig3(value),
        }
    }
}

/// A name in a key (an endpoint, a test, a direction), shared by every key that has it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Arc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        &*self.0 == other.as_str()
    }
}

/// What one figure is of: the two endpoints (in a fixed order), test, direction and size.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Key {
    pub a: Name,
    pub b: Name,
    pub test: Name,
    pub direction: Name,
    pub size: u64,
    pub figure: Figure,
}

impl Key {
    /// The two ends, or one alone: a collective's ring or total has no second end.
    pub fn subject(&self) -> String {
        if self.b.as_str().is_empty() {
            return self.a.to_string();
        }
        format!("{} <-> {}", self.a, self.b)
    }
}

/// One figure in both documents, or in one of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    #[serde(flatten)]
    pub key: Key,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    /// Current against baseline, percent (negative: lower).
    pub change_pct: Option<f64>,
    pub regression: bool,
}

/// A figure that got worse by more than the threshold, in words for a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    #[serde(flatten)]
    pub key: Key,
    pub baseline: f64,
    pub current: f64,
    pub change_pct: f64,
    /// The baseline document's `time`, when it has one.
    pub baseline_time: Option<String>,
    pub message: String,
}

/// An endpoint most of whose pairs regressed: the node that slowed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowedNode {
    // In the order the document writes its keys (sorted, as 0.3 wrote them).
    pub endpoint: String,
    pub pairs: usize,
    pub regressed_pairs: usize,
}

/// Everything `compare` finds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub command: Command,
    pub regression_pct: f64,
    pub differences: Vec<Difference>,
    pub regressions: Vec<Regression>,
    pub slowed: Vec<SlowedNode>,
}

/// The command both documents are of, or why they cannot be compared.
pub fn command_of(old: &Value, new: &Value) -> Result<Command, CompareError> {
    let meta = |v: &Value| Meta { schema: v.get("schema").and_then(Value::as_str).map(str::to_string), ..Meta::default() };
    commands(&meta(old), &meta(new))
}

/// [`command_of`] for documents as read.
pub fn commands(old: &Meta, new: &Meta) -> Result<Command, CompareError> {
    let old_cmd = schema_command(old, "baseline")?;
    let new_cmd = schema_command(new, "new")?;
    if old_cmd != new_cmd {
        return Err(CompareError::Mismatch { old: old.schema.clone().unwrap_or_default(), new: new.schema.clone().unwrap_or_default() });
    }
    Ok(old_cmd)
}

fn schema_command(doc: &Meta, which: &'static str) -> Result<Command, CompareError> {
    let schema = doc.schema.clone().ok_or(CompareError::NoSchema { which })?;
    if let Some((_, cmd)) = SCHEMAS.iter().find(|(s, _)| *s == schema) {
        return Ok(*cmd);
    }
    for (known, _) in SCHEMAS {
        let family = known.trim_end_matches("v1");
        if schema.starts_with(family) {
            return Err(CompareError::UnknownVersion { which, schema, known });
        }
    }
    Err(CompareError::OtherSchema { which, schema })
}

/// The regressions of `current` against `baseline`, for a finding each.
pub fn regressions(baseline: &Value, current: &Value, pct: f64) -> Result<Vec<Regression>, CompareError> {
    Ok(compare(baseline, current, pct)?.regressions)
}

/// [`compare_docs`] of two documents in memory.
pub fn compare(baseline: &Value, current: &Value, pct: f64) -> Result<Comparison, CompareError> {
    compare_docs(&Doc::from_value(baseline), &Doc::from_value(current), pct)
}

/// Every figure of both documents side by side, the regressions, and the nodes that slowed.
pub fn compare_docs(baseline: &Doc, current: &Doc, pct: f64) -> Result<Comparison, CompareError> {
    let command = commands(&baseline.meta, &current.meta)?;
    let (old_pair, new_pair);
    let (old, new): (&Figures, &Figures) = match command {
        Command::Pair => {
            let use_guid = baseline.has_guids() && current.has_guids();
            old_pair = baseline.pair_figures(use_guid);
            new_pair = current.pair_figures(use_guid);
            (&old_pair, &new_pair)
        }
        Command::Mesh => (baseline.mesh_figures(), current.mesh_figures()),
        Command::Collective => (baseline.collective_figures(), current.collective_figures()),
    };
    let baseline_time = baseline.meta.time.clone();
    let mut differences = Vec::with_capacity(old.entries.len().max(new.entries.len()));
    let mut regressions = Vec::new();
    let key = |f: &Figures, e: &read::Entry| Key {
        a: f.names.name(e.a),
        b: f.names.name(e.b),
        test: f.names.name(e.test),
        direction: f.names.name(e.direction),
        size: e.size,
        figure: e.figure,
    };
    // Both in key order: one pass, each figure with its match (or none).
    let (mut i, mut j) = (0, 0);
    while i < old.entries.len() || j < new.entries.len() {
        let order = match (old.entries.get(i), new.entries.get(j)) {
            (Some(x), Some(y)) => cross_order(old, x, new, y),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let (k, b, c) = match order {
            std::cmp::Ordering::Less => {
                i += 1;
                (key(old, &old.entries[i - 1]), Some(old.entries[i - 1].value), None)
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                (key(new, &new.entries[j - 1]), None, Some(new.entries[j - 1].value))
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
                (key(new, &new.entries[j - 1]), Some(old.entries[i - 1].value), Some(new.entries[j - 1].value))
            }
        };
        let change_pct = match (b, c) {
            (Some(b), Some(c)) if b != 0.0 => Some((c - b) / b * 100.0),
            _ => None,
        };
        let regression = change_pct.is_some_and(|ch| if k.figure.higher_is_better() { ch < -pct } else { ch > pct });
        if let (true, Some(b), Some(c), Some(ch)) = (regression, b, c, change_pct) {
            let message = words(&k, b, c, ch, baseline_time.as_deref());
            regressions.push(Regression { key: k.clone(), baseline: b, current: c, change_pct: ch, baseline_time: baseline_time.clone(), message });
        }
        differences.push(Difference { key: k, baseline: b, current: c, change_pct, regression });
    }
    let slowed = if command == Command::Pair { Vec::new() } else { slowed_nodes(&differences) };
    Ok(Comparison { command, regression_pct: pct, differences, regressions, slowed })
}

/// The order of two figures' keys from two documents (names compared as text).
fn cross_order(f: &Figures, x: &read::Entry, g: &Figures, y: &read::Entry) -> std::cmp::Ordering {
    let (n, m) = (|id| f.names.get(id), |id| g.names.get(id));
    (n(x.a), n(x.b), n(x.test), n(x.direction), x.size, x.figure).cmp(&(m(y.a), m(y.b), m(y.test), m(y.direction), y.size, y.figure))
}

/// The finding's words: both figures and the baseline's time.
fn words(key: &Key, baseline: f64, current: f64, change: f64, time: Option<&str>) -> String {
    let (unit, f) = (key.figure.unit(), key.figure);
    let how = if key.figure.higher_is_better() { "below" } else { "above" };
    let when = time.map(|t| format!(" of {t}")).unwrap_or_default();
    format!(
        "{}: {} {} {} B: {} {unit}, {:.1}% {how} the baseline's {} {unit}{when}",
        key.subject(),
        key.test,
        key.direction,
        key.size,
        f.format(current),
        change.abs(),
        f.format(baseline),
    )
}

/// Endpoints with at least two compared pairs, more than half of them regressed.
fn slowed_nodes(differences: &[Difference]) -> Vec<SlowedNode> {
    /// The pairs an endpoint is in: compared, and those with a regression.
    type Pairs<'a> = (BTreeSet<(&'a str, &'a str)>, BTreeSet<(&'a str, &'a str)>);
    let mut pairs: BTreeMap<&str, Pairs<'_>> = BTreeMap::new();
    // Figures between two ends only (a collective's ring and total have one).
    for d in differences.iter().filter(|d| d.change_pct.is_some() && !d.key.b.as_str().is_empty()) {
        let pair = (d.key.a.as_str(), d.key.b.as_str());
        for end in [pair.0, pair.1] {
            let entry = pairs.entry(end).or_default();
            entry.0.insert(pair);
            if d.regression {
                entry.1.insert(pair);
            }
        }
    }
    let mut slowed: Vec<SlowedNode> = pairs
        .into_iter()
        .filter(|(_, (all, bad))| bad.len() >= 2 && bad.len() * 2 > all.len())
        .map(|(end, (all, bad))| SlowedNode { endpoint: end.to_string(), regressed_pairs: bad.len(), pairs: all.len() })
        .collect();
    slowed.sort_by(|x, y| y.regressed_pairs.cmp(&x.regressed_pairs).then(x.endpoint.cmp(&y.endpoint)));
    slowed
}

#[cfg(test)]
mod tests;
