//! The JSON printer: a document as the contract writes it, pretty, with the stamp (`host`,
//! `fabcheck_version`, `time`) and the verdict as judged (after `--fail-on`).
//!
//! Keys are written sorted, as 0.3 wrote every document but mesh's (those went through a JSON
//! map): the canonical form, so a document diffs cleanly against the last release's. That is
//! the one place a document becomes a `serde_json` map; no printer reads one back. mesh streams
//! its pair records in its own order ([`crate::report::Document::write_json`]).

use super::document::Stamp;
use crate::outcome::Verdict;
use serde::Serialize;
use std::io::{self, Write};

/// `doc`, stamped, its keys sorted, pretty, with a final newline.
pub fn write_sorted<T: Serialize + ?Sized>(out: &mut dyn Write, doc: &T, stamp: &Stamp, verdict: Option<Verdict>) -> io::Result<()> {
    let mut value = serde_json::to_value(doc).map_err(|e| io::Error::other(format!("cannot serialise the result: {e}")))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("host".into(), stamp.host.clone().into());
        map.insert("fabcheck_version".into(), stamp.fabcheck_version.into());
        map.insert("time".into(), stamp.time.clone().into());
        if let (Some(v), Some(slot)) = (verdict, map.get_mut("verdict")) {
            *slot = serde_json::to_value(v).map_err(io::Error::other)?;
        }
    }
    serde_json::to_writer_pretty(&mut *out, &value)?;
    out.write_all(b"\n")
}

/// The JSON documents a command can write: its schema, `None` for a command without one (serve,
/// exporter, completions).
pub fn schema_of(command: &str) -> Option<&'static str> {
    Some(match command {
        "devices" => "fabcheck.devices.v1",
        "check" => "fabcheck.check.v1",
        "pair" => "fabcheck.pair.v1",
        "mesh" => "fabcheck.mesh.v1",
        "fabric" => "fabcheck.fabric.v1",
        "compare" => "fabcheck.compare.v1",
        "accept" => "fabcheck.accept.v1",
        "collective" => "fabcheck.collective.v1",
        _ => return None,
    })
}

/// A run that could not run (exit 2) as a JSON document of the command's schema, so a script
/// that reads `--json` gets a verdict, not an empty file: `verdict` `error` and `error` with the
/// cause and what to do (the same two lines as stderr), stamped as every document.
#[derive(Serialize)]
struct ErrorDocument<'a> {
    schema: &'static str,
    verdict: &'static str,
    error: ErrorText<'a>,
}

#[derive(Serialize)]
struct ErrorText<'a> {
    cause: &'a str,
    remedy: &'a str,
}

/// The error document of `command` (`None` where the command writes no JSON).
pub fn error_document(command: &str, cause: &str, remedy: &str, stamp: &Stamp) -> Option<String> {
    let schema = schema_of(command)?;
    let doc = ErrorDocument { schema, verdict: "error", error: ErrorText { cause, remedy } };
    let mut out = Vec::new();
    write_sorted(&mut out, &doc, stamp, None).ok()?;
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_document_has_the_schema_the_verdict_error_and_both_lines() {
        let stamp = Stamp { host: "n1".into(), fabcheck_version: "0.4.0", time: "2026-12-02T00:00:00Z".into() };
        let text = error_document("check", "no RDMA device", "load the driver", &stamp).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["schema"], "fabcheck.check.v1");
        assert_eq!(doc["verdict"], "error");
        assert_eq!(doc["error"]["cause"], "no RDMA device");
        assert_eq!(doc["error"]["remedy"], "load the driver");
        assert_eq!(doc["host"], "n1");
        assert!(error_document("serve", "x", "y", &stamp).is_none());
    }
}
