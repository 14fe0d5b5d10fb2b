//! Machine formats of every command's document, for health checks and CI (`--format`):
//! `oneline` (a Slurm HealthCheckProgram / NHC drain reason), `prom` (Prometheus text
//! exposition for node_exporter's textfile collector) and `junit` (JUnit XML, one testcase per
//! check or test). Each is a pure function of the command's JSON document, so every command gets
//! every format, and what a format says is what the document says.

pub mod junit;
pub mod oneline;
pub mod prom;

use crate::outcome::Severity;
use serde_json::Value;

/// The document's schema name (`fabcheck.check.v1` -> `check`).
pub fn command_of(doc: &Value) -> String {
    doc["schema"].as_str().and_then(|s| s.strip_prefix("fabcheck.")).and_then(|s| s.split('.').next()).unwrap_or("fabcheck").to_string()
}

/// A string field of a document, `""` when absent.
fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// One finding of a document, as the formats read it: the severity typed, the rest as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Listed<'a> {
    pub id: &'a str,
    pub severity: Severity,
    pub subject: &'a str,
    pub message: &'a str,
}

/// A severity as a document writes it (`"error"`, `"warning"`, `"info"`); anything else is
/// read as info, so a malformed document never invents a failure.
fn severity_of(text: &str) -> Severity {
    serde_json::from_value(Value::String(text.to_string())).unwrap_or(Severity::Info)
}

/// The findings of a document with their severity, subject and message, in order.
pub fn findings(doc: &Value) -> Vec<Listed<'_>> {
    let mut out = Vec::new();
    if let Some(list) = doc["findings"].as_array() {
        for f in list {
            out.push(Listed {
                id: text(&f["id"]),
                severity: severity_of(text(&f["severity"])),
                subject: text(&f["subject"]),
                message: text(&f["message"]),
            });
        }
    }
    // mesh: suspects are its findings, then the endpoints that could not be reached.
    if let Some(list) = doc["suspects"].as_array() {
        for s in list {
            // A suspect says its severity (a regression since --baseline is a warning).
            let severity = if s["severity"] == "warning" { Severity::Warning } else { Severity::Error };
            out.push(Listed { id: "mesh.suspect", severity, subject: text(&s["subject"]), message: text(&s["reason"]) });
        }
    }
    if let Some(list) = doc["unreachable"].as_array() {
        for u in list {
            out.push(Listed { id: "mesh.unreachable", severity: Severity::Error, subject: text(&u["endpoint"]), message: text(&u["error"]) });
        }
    }
    out
}

/// mesh: each pair's record once, the latest standing for it (a retest or a zoom-in measure
/// replaces the first pass's), in the order pairs were first measured.
pub fn latest_pairs(doc: &Value) -> Vec<&Value> {
    let mut order: Vec<(&str, &str)> = Vec::new();
    let mut latest: std::collections::HashMap<(&str, &str), &Value> = std::collections::HashMap::new();
    for p in doc["pairs"].as_array().into_iter().flatten() {
        let (a, b) = (p["a"].as_str().unwrap_or(""), p["b"].as_str().unwrap_or(""));
        let key = if a <= b { (a, b) } else { (b, a) };
        if latest.insert(key, p).is_none() {
            order.push(key);
        }
    }
    order.iter().filter_map(|k| latest.get(k).copied()).collect()
}
