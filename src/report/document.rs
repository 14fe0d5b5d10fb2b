//! The one shape every command's result has: a schema'd JSON document with a verdict and
//! findings, a human view, and the stamp. `report::output` writes any [`Document`] in any
//! format to stdout or `--output`, so no command can lose `--format`, `--output`, `--fail-on` or
//! the stamp by printing on its own (as 0.2's mesh did).

use crate::outcome::Verdict;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

/// `host`, `fabcheck_version` and `time` (RFC 3339, UTC): every JSON document carries them.
#[derive(Debug, Clone, Serialize)]
pub struct Stamp {
    pub host: String,
    pub fabcheck_version: &'static str,
    pub time: String,
}

impl Stamp {
    /// This host, this build, now.
    pub fn now() -> Stamp {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        Stamp { host: crate::sys::os::hostname(), fabcheck_version: env!("CARGO_PKG_VERSION"), time: super::output::rfc3339(secs) }
    }

    /// Adds the stamp's keys to a JSON object.
    pub fn apply(&self, doc: &mut Value) {
        if let Some(map) = doc.as_object_mut() {
            map.insert("host".into(), self.host.clone().into());
            map.insert("fabcheck_version".into(), self.fabcheck_version.into());
            map.insert("time".into(), self.time.clone().into());
        }
    }
}

/// A command's result.
pub trait Document {
    /// The verdict as judged (`None`: the document has none, as `devices`).
    fn verdict(&self) -> Option<Verdict>;

    /// Whether any finding is a warning (`--fail-on warning` then fails the run).
    fn has_warning(&self) -> bool;

    /// The human view (control characters are escaped when it is written).
    fn human(&self) -> String;

    /// The JSON document without the stamp, as a value (the machine formats read it).
    fn value(&self) -> Result<Value, String>;

    /// Writes the stamped JSON document, pretty, with `verdict` standing for the document's
    /// (after `--fail-on`). A large document overrides this to stream (mesh's pair records).
    fn write_json(&self, out: &mut dyn Write, stamp: &Stamp, verdict: Option<Verdict>) -> io::Result<()> {
        let mut value = self.value().map_err(io::Error::other)?;
        stamp.apply(&mut value);
        set_verdict(&mut value, verdict);
        serde_json::to_writer_pretty(&mut *out, &value)?;
        out.write_all(b"\n")
    }
}

/// `verdict` into a document's `verdict` key, where it has one.
pub fn set_verdict(value: &mut Value, verdict: Option<Verdict>) {
    if let (Some(v), Some(slot)) = (verdict, value.get_mut("verdict")) {
        *slot = serde_json::to_value(v).unwrap_or(Value::Null);
    }
}

/// A serialisable document as a JSON value.
pub fn to_value<T: Serialize + ?Sized>(doc: &T) -> Result<Value, String> {
    serde_json::to_value(doc).map_err(|e| format!("cannot serialise the result: {e}"))
}

/// Whether any of these findings is a warning.
pub fn any_warning(findings: &[crate::outcome::Finding]) -> bool {
    findings.iter().any(|f| f.severity == crate::outcome::Severity::Warning)
}
