//! `fabcheck compare`'s output: the differences as a table, or the `fabcheck.compare.v1`
//! document. Pure: the command prints what these return.

use super::{Comparison, Difference, Figure};
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
}

/// The `fabcheck.compare.v1` document.
#[derive(Debug, Clone, Serialize)]
pub struct CompareDoc<'a> {
    pub schema: &'static str,
    pub verdict: &'static str,
    pub baseline: &'a Source,
    pub current: &'a Source,
    #[serde(flatten)]
    pub comparison: &'a Comparison,
}

pub fn doc<'a>(baseline: &'a Source, current: &'a Source, comparison: &'a Comparison) -> CompareDoc<'a> {
    let verdict = if comparison.regressions.is_empty() { "pass" } else { "fail" };
    CompareDoc { schema: SCHEMA, verdict, baseline, current, comparison }
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
        d.key.test.clone(),
        d.key.direction.clone(),
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
    let rows: Vec<[String; 8]> = std::iter::once(header).chain(c.differences.iter().map(row)).collect();
    let widths: Vec<usize> = (0..8).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for r in &rows {
        let cells: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
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
    fn command(&self) -> crate::report::Command {
        crate::report::Command::Compare
    }

    /// A regression fails the comparison (exit 1).
    fn verdict(&self) -> Option<crate::outcome::Verdict> {
        Some(if self.comparison.regressions.is_empty() { crate::outcome::Verdict::Pass } else { crate::outcome::Verdict::Fail })
    }

    fn has_warning(&self) -> bool {
        false
    }

    fn human(&self) -> String {
        human(self.baseline, self.current, self.comparison)
    }

    fn write_json(
        &self,
        out: &mut dyn std::io::Write,
        stamp: &crate::report::Stamp,
        verdict: Option<crate::outcome::Verdict>,
    ) -> std::io::Result<()> {
        crate::report::json::write_sorted(out, &doc(self.baseline, self.current, self.comparison), stamp, verdict)
    }

    fn feed(&self, sink: &mut dyn crate::report::Sink) -> std::io::Result<()> {
        let c = self.comparison;
        for d in &c.differences {
            let regression = c.regressions.iter().find(|r| r.key == d.key).map(|r| r.message.as_str());
            sink.difference(&crate::report::sink::DifferenceLine {
                a: &d.key.a,
                b: &d.key.b,
                test: &d.key.test,
                direction: &d.key.direction,
                size: d.key.size,
                figure: d.key.figure.name(),
                change_pct: d.change_pct,
                regression,
                regressed: d.regression,
            });
        }
        for s in &c.slowed {
            sink.slowed(&crate::report::sink::SlowedLine { endpoint: &s.endpoint, regressed_pairs: s.regressed_pairs, pairs: s.pairs });
        }
        Ok(())
    }
}
