//! Baselines: today's `pair` or `mesh` figures against an accepted document of the same
//! command, as pure functions of the two JSON documents. `fabcheck compare` prints what they
//! find (`render`); `pair --baseline` and `mesh --baseline` call [`regressions`] for their
//! `pair.regression` finding and `regression` suspect reason.
//!
//! A figure is matched by test, direction, size and the two endpoints: the port GUID where
//! both documents have it, else host and device (so a mesh run against the same hosts on new
//! agent ports still matches). Bandwidth and message rate more than PCT below the baseline,
//! or a latency p50 more than PCT above it, is a regression.

pub mod render;

use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The default `--regression`.
pub const DEFAULT_PCT: f64 = 5.0;

/// The schemas a baseline may have, by command.
const SCHEMAS: [(&str, Command); 2] = [("fabcheck.pair.v1", Command::Pair), ("fabcheck.mesh.v1", Command::Mesh)];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    Pair,
    Mesh,
}

/// Why two documents cannot be compared (exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("the {which} document has no \"schema\": not a fabcheck JSON document")]
    NoSchema { which: &'static str },
    #[error("the {which} document is {schema}, which compare does not take (it compares fabcheck.pair.v1 and fabcheck.mesh.v1)")]
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
            _ => "give two `--json` documents of the same command: pair with pair, mesh with mesh".into(),
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
}

impl Figure {
    /// The figure as the documents name it.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Bandwidth => "bw_gbps",
            Figure::MessageRate => "msg_rate_mpps",
            Figure::LatencyP50 => "lat_p50_us",
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
        }
    }

    pub fn format(self, value: f64) -> String {
        match self {
            Figure::Bandwidth => crate::units::measured_gbps(value),
            Figure::MessageRate => crate::units::sig3(value),
            Figure::LatencyP50 => crate::units::sig3(value),
        }
    }
}

/// What one figure is of: the two endpoints (in a fixed order), test, direction and size.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Key {
    pub a: String,
    pub b: String,
    pub test: String,
    pub direction: String,
    pub size: u64,
    pub figure: Figure,
}

impl Key {
    pub fn subject(&self) -> String {
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
    pub endpoint: String,
    pub regressed_pairs: usize,
    pub pairs: usize,
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
    let old_cmd = schema_command(old, "baseline")?;
    let new_cmd = schema_command(new, "new")?;
    if old_cmd != new_cmd {
        return Err(CompareError::Mismatch { old: schema(old).unwrap_or_default(), new: schema(new).unwrap_or_default() });
    }
    Ok(old_cmd)
}

fn schema(doc: &Value) -> Option<String> {
    doc.get("schema")?.as_str().map(str::to_string)
}

fn schema_command(doc: &Value, which: &'static str) -> Result<Command, CompareError> {
    let schema = schema(doc).ok_or(CompareError::NoSchema { which })?;
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

/// Every figure of both documents side by side, the regressions, and the nodes that slowed.
pub fn compare(baseline: &Value, current: &Value, pct: f64) -> Result<Comparison, CompareError> {
    let command = command_of(baseline, current)?;
    let use_guid = has_guids(baseline, command) && has_guids(current, command);
    let old = figures(baseline, command, use_guid);
    let new = figures(current, command, use_guid);
    let baseline_time = baseline.get("time").and_then(Value::as_str).map(str::to_string);
    let keys: BTreeSet<&Key> = old.keys().chain(new.keys()).collect();
    let mut differences = Vec::new();
    let mut regressions = Vec::new();
    for key in keys {
        let (b, c) = (old.get(key).copied(), new.get(key).copied());
        let change_pct = match (b, c) {
            (Some(b), Some(c)) if b != 0.0 => Some((c - b) / b * 100.0),
            _ => None,
        };
        let regression = change_pct.is_some_and(|ch| if key.figure.higher_is_better() { ch < -pct } else { ch > pct });
        if let (true, Some(b), Some(c), Some(ch)) = (regression, b, c, change_pct) {
            let message = words(key, b, c, ch, baseline_time.as_deref());
            regressions.push(Regression { key: key.clone(), baseline: b, current: c, change_pct: ch, baseline_time: baseline_time.clone(), message });
        }
        differences.push(Difference { key: key.clone(), baseline: b, current: c, change_pct, regression });
    }
    let slowed = if command == Command::Mesh { slowed_nodes(&differences) } else { Vec::new() };
    Ok(Comparison { command, regression_pct: pct, differences, regressions, slowed })
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
    for d in differences.iter().filter(|d| d.change_pct.is_some()) {
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

/// Whether every side of a pair document names its port GUID (mesh records do not).
fn has_guids(doc: &Value, command: Command) -> bool {
    command == Command::Pair && ["a", "b"].iter().all(|s| guid(&doc[*s]).is_some())
}

fn guid(side: &Value) -> Option<&str> {
    ["port_guid", "guid"].iter().find_map(|k| side.get(*k)?.as_str()).filter(|g| !g.is_empty())
}

/// A pair document's side as an endpoint name: `guid:G`, else `host/device:port`.
fn side_name(side: &Value, use_guid: bool) -> String {
    if use_guid {
        if let Some(g) = guid(side) {
            return format!("guid:{g}");
        }
    }
    let host = side["host"].as_str().unwrap_or("?");
    let device = side["device"].as_str().unwrap_or("?");
    match side["port"].as_u64() {
        Some(p) => format!("{host}/{device}:{p}"),
        None => format!("{host}/{device}"),
    }
}

/// Every figure of a document, by key.
fn figures(doc: &Value, command: Command, use_guid: bool) -> BTreeMap<Key, f64> {
    let mut out = BTreeMap::new();
    match command {
        Command::Pair => {
            let (a, b) = (side_name(&doc["a"], use_guid), side_name(&doc["b"], use_guid));
            add_results(&mut out, &a, &b, &doc["results"]);
            // With --rails, each rail's results are under `rails`.
            for rail in doc["rails"].as_array().into_iter().flatten() {
                let (a, b) = (side_name(&rail["a"], use_guid), side_name(&rail["b"], use_guid));
                add_results(&mut out, &a, &b, &rail["results"]);
            }
        }
        Command::Mesh => {
            let hosts = mesh_hosts(doc);
            // Records in order: a retest or zoom-in record of a pair replaces its first one.
            for record in doc["pairs"].as_array().into_iter().flatten() {
                let a = mesh_endpoint(record, "a", &hosts);
                let b = mesh_endpoint(record, "b", &hosts);
                add_results(&mut out, &a, &b, &record["results"]);
            }
        }
    }
    out
}

fn add_results(out: &mut BTreeMap<Key, f64>, a: &str, b: &str, results: &Value) {
    for r in results.as_array().into_iter().flatten() {
        if r.get("error").is_some_and(|e| !e.is_null()) {
            continue;
        }
        let (Some(test), Some(direction), Some(size)) = (r["test"].as_str(), r["direction"].as_str(), r["size"].as_u64()) else { continue };
        // One order for the two ends, so a run with the ends swapped still matches.
        let (first, second, direction) = if a <= b { (a, b, direction.to_string()) } else { (b, a, swapped(direction)) };
        let figures = [
            (Figure::Bandwidth, r["bw_gbps"].as_f64()),
            (Figure::MessageRate, r["msg_rate_mpps"].as_f64()),
            (Figure::LatencyP50, r["lat_us"]["p50"].as_f64()),
        ];
        for (figure, value) in figures {
            if let Some(v) = value.filter(|v| v.is_finite()) {
                let key = Key { a: first.to_string(), b: second.to_string(), test: test.to_string(), direction: direction.clone(), size, figure };
                out.insert(key, v);
            }
        }
    }
}

fn swapped(direction: &str) -> String {
    match direction {
        "a->b" => "b->a".into(),
        "b->a" => "a->b".into(),
        other => other.into(),
    }
}

/// The host each mesh endpoint's agent reported, where the document says: a top-level
/// `hosts` map (endpoint -> host) or `endpoints` written as `{"endpoint","host"}` objects.
fn mesh_hosts(doc: &Value) -> BTreeMap<String, String> {
    let mut hosts = BTreeMap::new();
    if let Some(map) = doc["hosts"].as_object() {
        for (endpoint, host) in map {
            if let Some(h) = host.as_str() {
                hosts.insert(endpoint.clone(), h.to_string());
            }
        }
    }
    for e in doc["endpoints"].as_array().into_iter().flatten() {
        let name = e.get("endpoint").or_else(|| e.get("name")).and_then(Value::as_str);
        if let (Some(name), Some(host)) = (name, e.get("host").and_then(Value::as_str)) {
            hosts.insert(name.to_string(), host.to_string());
        }
    }
    hosts
}

/// A mesh record's end as host/device: the agent's reported host (`a_host` on the record, or
/// the document's host map) with the device of the endpoint as given; else the endpoint as
/// given.
fn mesh_endpoint(record: &Value, side: &str, hosts: &BTreeMap<String, String>) -> String {
    let given = record[side].as_str().unwrap_or("?");
    let reported = record.get(format!("{side}_host")).and_then(Value::as_str).map(str::to_string).or_else(|| hosts.get(given).cloned());
    let Some(host) = reported else { return given.to_string() };
    match crate::control::endpoint::parse(given).ok().and_then(|e| e.device.map(|d| (d, e.port))) {
        Some((device, Some(port))) => format!("{host}/{device}:{port}"),
        Some((device, None)) => format!("{host}/{device}"),
        None => host,
    }
}

#[cfg(test)]
mod tests;
