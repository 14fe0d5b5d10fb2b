//! `--baseline FILE` on `pair` and `mesh`: a previous document of the same command, and what
//! regressed since (`compare::regressions`, the judgement `fabcheck compare` prints).

use crate::compare;
use crate::error::Failure;
use crate::outcome::FindingId;
use crate::outcome::{Finding, Severity};
use serde_json::{json, Value};
use std::path::Path;

/// Largest document read: a mesh of thousands of endpoints is tens of megabytes.
const DOCUMENT_CAP: u64 = 256 << 20;

/// A baseline document, checked against the command that will compare with it.
pub struct Baseline {
    doc: Value,
    pct: f64,
}

/// Reads and checks `--baseline` before the run starts: a file that cannot be read, is not
/// JSON, or is another command's document or an unknown version is exit 2, naming it.
pub fn load(path: Option<&Path>, pct: f64, schema: &str) -> Result<Option<Baseline>, Failure> {
    let Some(path) = path else { return Ok(None) };
    if !(pct.is_finite() && pct >= 0.0) {
        return Err(Failure::usage(format!("--regression {pct} is not a percentage (0 or more)")));
    }
    let doc = read_document(path)?;
    compare::command_of(&doc, &json!({ "schema": schema })).map_err(|e| Failure::new(format!("--baseline {}: {e}", path.display()), e.remedy()))?;
    Ok(Some(Baseline { doc, pct }))
}

impl Baseline {
    /// What regressed in `current` (this run's document) since the baseline.
    pub fn compare(&self, current: &dyn crate::report::Document) -> Result<compare::Comparison, Failure> {
        let mut json = Vec::new();
        current.write_json(&mut json, &crate::report::Stamp::now(), None).map_err(|e| {
            Failure::new(format!("cannot compare this run with the baseline: {e}"), "check TMPDIR (mesh's pair records are spooled there)")
        })?;
        let current: Value =
            serde_json::from_slice(&json).map_err(|e| Failure::new(format!("cannot read this run's document back: {e}"), "report a bug"))?;
        compare::compare(&self.doc, &current, self.pct).map_err(|e| Failure::new(e.to_string(), e.remedy()))
    }
}

/// A regression as `pair`'s finding: a warning, naming both figures and the baseline's time.
pub fn finding(r: &compare::Regression) -> Finding {
    Finding {
        id: FindingId::PairRegression,
        severity: Severity::Warning,
        subject: r.key.subject().into(),
        message: r.message.clone(),
        remedy: "find what changed since the baseline (firmware, driver, cabling, the switch port, other traffic); \
                 `fabcheck compare BASELINE NEW` shows every figure side by side"
            .into(),
        about: None,
    }
}

/// A JSON document from a file, bounded in size.
pub fn read_document(path: &Path) -> Result<Value, Failure> {
    let text = crate::sys::fs::read_text(path, DOCUMENT_CAP).map_err(|e| {
        Failure::new(format!("cannot read {}: {}", path.display(), e.reason()), "give the JSON document a pair or mesh run wrote with --json")
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(format!("{} is not a JSON document ({e})", path.display()), "give the JSON document a pair or mesh run wrote with --json")
    })
}
