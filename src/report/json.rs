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
