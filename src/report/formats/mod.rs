//! Machine formats of every command's document, for health checks and CI (`--format`):
//! `oneline` (a Slurm HealthCheckProgram / NHC drain reason), `prom` (Prometheus text
//! exposition for node_exporter's textfile collector) and `junit` (JUnit XML, one testcase per
//! check or test). Each is a pure function of the command's JSON document, so every command gets
//! every format, and what a format says is what the document says.

pub mod junit;
pub mod oneline;
pub mod prom;

use serde_json::Value;

/// The document's schema name (`fabcheck.check.v1` -> `check`).
pub fn command_of(doc: &Value) -> String {
    doc["schema"].as_str().and_then(|s| s.strip_prefix("fabcheck.")).and_then(|s| s.split('.').next()).unwrap_or("fabcheck").to_string()
}

/// The findings of a document with their severity, subject and message, in order.
pub fn findings(doc: &Value) -> Vec<(&str, &str, &str, &str)> {
    let mut out = Vec::new();
    if let Some(list) = doc["findings"].as_array() {
        for f in list {
            out.push((
                f["id"].as_str().unwrap_or(""),
                f["severity"].as_str().unwrap_or(""),
                f["subject"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or(""),
            ));
        }
    }
    // mesh: suspects are its findings.
    if let Some(list) = doc["suspects"].as_array() {
        for s in list {
            out.push(("mesh.suspect", "error", s["subject"].as_str().unwrap_or(""), s["reason"].as_str().unwrap_or("")));
        }
    }
    out
}
