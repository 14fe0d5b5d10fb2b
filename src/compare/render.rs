//! `fabcheck compare`'s output: the differences as a table, or the `fabcheck.compare.v1`
//! document. Pure: the command prints what these return.

use super::{Comparison, Difference, Figure};
use crate::diagnose::Verdict;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.compare.v1";

/// Which document a comparison read: its schema and stamp, when it has them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub file: String,
    pub schema: Option<String>,
    pub host: Option<String>,
    pub time: Option<String>,
}

impl Source {
    pub fn of(file: &str, doc: &Value) -> Source {
        let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
        Source { file: file.to_string(), schema: text("schema"), host: text("host"), time: text("time") }
    }

    /// The source of a document as read.
    pub fn of_meta(file: &str, meta: &super::read::Meta) -> Source {
        Source { file: file.to_string(), schema: meta.schema.clone(), host: meta.host.clone(), time: meta.time.clone() }
    }
}

/// The `fabcheck.compare.v1` document.
#[derive(Debug, Clone, Serialize)]
pub struct CompareDoc<'a> {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub baseline: &'a Source,
    pub current: &'a Source,
    #[serde(flatten)]
    pub comparison: &'a Comparison,
    /// `host`, `fabcheck_version`, `time` when written by the output path.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<&'a crate::report::document::Stamp>,
}

pub fn doc<'a>(baseline: &'a Source, current: &'a Source, comparison: &'a Comparison) -> CompareDoc<'a> {
    let verdict = if comparison.regressions.is_empty() { Verdict::Pass } else { Verdict::Fail };
    CompareDoc { schema: SCHEMA, verdict, baseline, current, comparison, stamp: None }
}

fn figure(f: Figure, v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| f.format(v))
}

fn row(d: &Difference) -> [String; 8] {
    let change = match (d.change_pct, d.baseline, d.current) {
        (Some(c), _, _) => format!("{c:+.1}%"),
        (None, Some(_), None) => "only in baseline".into(),
        (None, None, Some(_)) => "new".into(),
        _ => "-".into(),
    };
    [
        d.key.subject(),
        d.key.test.to_string(),
        d.key.direction.to_string(),
        d.key.size.to_string(),
        d.key.figure.unit().to_string(),
        figure(d.key.figure, d.baseline),
        figure(d.key.figure, d.current),
        if d.regression { format!("{change}  REGRESSION") } else { change },
    ]
}

/// The human table: every figure, the regressions and slowed nodes named after it.
pub fn human(baseline: &Source, current: &Source, c: &Comparison) -> String {
    let mut out = String::new();
    let when = |s: &Source| s.time.clone().map(|t| format!(" ({t})")).unwrap_or_default();
    let _ = writeln!(out, "baseline {}{}  ->  {}{}", baseline.file, when(baseline), current.file, when(current));
    let header = ["PAIR", "TEST", "DIR", "SIZE", "FIGURE", "BASELINE", "NEW", "CHANGE"].map(str::to_string);
    // Two passes over the rows, each made and dropped at once: the widths, then the lines (a
    // table of millions of figures is never held as cells).
    let rows = || std::iter::once(header.clone()).chain(c.differences.iter().map(row));
    let mut widths = [0usize; 8];
    for r in rows() {
        for (w, cell) in widths.iter_mut().zip(&r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in rows() {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(&widths).enumerate() {
            let sep = if i == 0 { "" } else { "  " };
            let _ = write!(line, "{sep}{cell:<w$}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for node in &c.slowed {
        let _ = writeln!(out, "slowed since the baseline: {} ({} of its {} pairs regressed)", node.endpoint, node.regressed_pairs, node.pairs);
    }
    for r in &c.regressions {
        let _ = writeln!(out, "regression: {}", r.message);
    }
    if c.regressions.is_empty() {
        let _ = writeln!(out, "PASS: no figure more than {}% worse than the baseline", c.regression_pct);
    } else {
        let _ = writeln!(out, "FAIL: {} more than {}% worse than the baseline", crate::units::count(c.regressions.len(), "figure"), c.regression_pct);
    }
    out
}

/// The comparison as a command's document: `report::output` writes it in every format, to
/// stdout or `--output`, with the stamp.
pub struct CompareReport<'a> {
    pub baseline: &'a Source,
    pub current: &'a Source,
    pub comparison: &'a Comparison,
}

impl crate::report::Document for CompareReport<'_> {
    /// A regression fails the comparison (exit 1).
    fn verdict(&self) -> Option<crate::diagnose::Verdict> {
        Some(if self.comparison.regressions.is_empty() { crate::diagnose::Verdict::Pass } else { crate::diagnose::Verdict::Fail })
    }

    fn has_warning(&self) -> bool {
        false
    }

    fn human(&self) -> String {
        human(self.baseline, self.current, self.comparison)
    }

    fn value(&self) -> Result<Value, String> {
        crate::report::document::to_value(&doc(self.baseline, self.current, self.comparison))
    }

    /// Streamed: a comparison of two large meshes has millions of differences, never held as
    /// a JSON tree.
    fn write_json(&self, out: &mut dyn std::io::Write, stamp: &crate::report::document::Stamp, verdict: Option<Verdict>) -> std::io::Result<()> {
        let mut d = doc(self.baseline, self.current, self.comparison);
        d.stamp = Some(stamp);
        if let Some(v) = verdict {
            d.verdict = v;
        }
        serde_json::to_writer_pretty(&mut *out, &d)?;
        out.write_all(b"\n")
    }
}
