//! `--baseline FILE` on `pair`, `mesh` and `collective`: a previous document of the same command, and what
//! regressed since (`compare::compare_docs`, the judgement `fabcheck compare` prints). Also
//! where `compare` reads its documents.

use crate::compare::{self, read::Doc, read::Meta};
use crate::error::Failure;
use crate::outcome::{Finding, FindingId, Severity};
use std::path::Path;

/// Largest document read. A mesh document is about 550 bytes a pair: 1.1 GB for 2,000
/// endpoints all-pairs (docs/mesh.md); 4 GiB takes 3,000. What compare keeps of a document is
/// a fixed-size entry per figure, not the text (issue #46 item 5), so such a file fits.
pub const DOCUMENT_CAP: u64 = 4 << 30;

/// A baseline document, checked against the command that will compare with it.
pub struct Baseline {
    doc: Doc,
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
    let this = Meta { schema: Some(schema.to_string()), ..Meta::default() };
    compare::commands(&doc.meta, &this).map_err(|e| Failure::new(format!("--baseline {}: {e}", path.display()), e.remedy()))?;
    Ok(Some(Baseline { doc, pct }))
}

impl Baseline {
    /// What regressed in `current` (this run's document) since the baseline.
    pub fn compare(&self, current: &dyn crate::report::Document) -> Result<compare::Comparison, Failure> {
        // This run's document, written as `--json` writes it and read back as compare reads a
        // file: the streamed mesh records are never one tree in memory.
        let mut json = Vec::new();
        current.write_json(&mut json, &crate::report::Stamp::now(), None).map_err(|e| {
            Failure::new(format!("cannot compare this run with the baseline: {e}"), "check TMPDIR (mesh's pair records are spooled there)")
        })?;
        let current = Doc::read(json.as_slice()).map_err(|e| Failure::new(format!("cannot read this run's document back: {e}"), "report a bug"))?;
        compare::compare_docs(&self.doc, &current, self.pct).map_err(|e| Failure::new(e.to_string(), e.remedy()))
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

/// A pair, mesh or collective document from a file, bounded in size, read as a stream (never whole).
pub fn read_document(path: &Path) -> Result<Doc, Failure> {
    let remedy = "give the JSON document a pair, mesh or collective run wrote with --json";
    let cannot = |why: String| Failure::new(format!("cannot read {}: {why}", path.display()), remedy);
    let (file, len) = crate::sys::fs::open_for_reading(path).map_err(|e| cannot(e.reason()))?;
    if len > DOCUMENT_CAP {
        return Err(cannot(format!("larger than {DOCUMENT_CAP} bytes")));
    }
    // A file that grows while it is read is cut at the cap, and is then not a whole document.
    Doc::read(std::io::Read::take(file, DOCUMENT_CAP)).map_err(|e| match e.classify() {
        serde_json::error::Category::Io => cannot(e.to_string()),
        serde_json::error::Category::Data => {
            Failure::new(format!("{} is not a pair, mesh or collective document this fabcheck reads ({e})", path.display()), remedy)
        }
        _ => Failure::new(format!("{} is not a JSON document ({e})", path.display()), remedy),
    })
}
