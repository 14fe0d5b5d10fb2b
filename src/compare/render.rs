//! `fabcheck compare`'s output: the differences as a table, or the `fabcheck.compare.v1`
//! document. Pure: the command prints what these return.

use super::{Comparison, Difference, Figure};
use crate::outcome::Verdict;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.compare.v1";

/// Which document a comparison read: its schema and stamp, when it has them. (Fields in the
/// order the document writes its keys: sorted, as 0.3 wrote them.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub file: String,
    pub host: Option<String>,
    pub schema: Option<String>,
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

/// The `fabcheck.compare.v1` document. Written streamed (a comparison of two large meshes
/// has millions of differences, never held as a JSON tree), its keys sorted at every level as
/// 0.3 wrote them ([`Serialize`] below names them in that order).
#[derive(Debug, Clone)]
pub struct CompareDoc<'a> {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub baseline: &'a Source,
    pub current: &'a Source,
    pub comparison: &'a Comparison,
    /// `host`, `fabcheck_version`, `time` when written by the output path.
    pub stamp: Option<&'a crate::report::document::Stamp>,
}

impl Serialize for CompareDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let c = self.comparison;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("baseline", self.baseline)?;
        m.serialize_entry("command", &c.command)?;
        m.serialize_entry("current", self.current)?;
        m.serialize_entry("differences", &Sorted(&c.differences))?;
        if let Some(stamp) = self.stamp {
            m.serialize_entry("fabcheck_version", stamp.fabcheck_version)?;
            m.serialize_entry("host", &stamp.host)?;
        }
        m.serialize_entry("regression_pct", &c.regression_pct)?;
        m.serialize_entry("regressions", &Sorted(&c.regressions))?;
        m.serialize_entry("schema", self.schema)?;
        m.serialize_entry("slowed", &c.slowed)?;
        if let Some(stamp) = self.stamp {
            m.serialize_entry("time", &stamp.time)?;
        }
        m.serialize_entry("verdict", &self.verdict)?;
        m.end()
    }
}

/// A list of differences or regressions, each written with its keys sorted (its key's fields
/// among its own).
struct Sorted<'a, T>(&'a [T]);

impl<T: SortedKeys> Serialize for Sorted<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&SortedItem(item))?;
        }
        seq.end()
    }
}

struct SortedItem<'a, T>(&'a T);

trait SortedKeys {
    fn write<M: serde::ser::SerializeMap>(&self, m: &mut M) -> Result<(), M::Error>;
}

impl<T: SortedKeys> Serialize for SortedItem<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        self.0.write(&mut m)?;
        m.end()
    }
}

impl SortedKeys for Difference {
    fn write<M: serde::ser::SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        let k = &self.key;
        m.serialize_entry("a", &k.a)?;
        m.serialize_entry("b", &k.b)?;
        m.serialize_entry("baseline", &self.baseline)?;
        m.serialize_entry("change_pct", &self.change_pct)?;
        m.serialize_entry("current", &self.current)?;
        m.serialize_entry("direction", &k.direction)?;
        m.serialize_entry("figure", &k.figure)?;
        m.serialize_entry("regression", &self.regression)?;
        m.serialize_entry("size", &k.size)?;
        m.serialize_entry("test", &k.test)
    }
}

impl SortedKeys for super::Regression {
    fn write<M: serde::ser::SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        let k = &self.key;
        m.serialize_entry("a", &k.a)?;
        m.serialize_entry("b", &k.b)?;
        m.serialize_entry("baseline", &self.baseline)?;
        m.serialize_entry("baseline_time", &self.baseline_time)?;
        m.serialize_entry("change_pct", &self.change_pct)?;
        m.serialize_entry("current", &self.current)?;
        m.serialize_entry("direction", &k.direction)?;
        m.serialize_entry("figure", &k.figure)?;
        m.serialize_entry("message", &self.message)?;
        m.serialize_entry("size", &k.size)?;
        m.serialize_entry("test", &k.test)
    }
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
    // A figure unchanged (to the table's 0.1%) is counted, not listed (issue #57: every
    // unchanged figure buried the ones that moved); JSON keeps them all.
    let shown = |d: &&Difference| d.regression || d.change_pct.is_none_or(|p| (p * 10.0).round() != 0.0);
    let rows = || std::iter::once(header.clone()).chain(c.differences.iter().filter(shown).map(row));
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
    let unchanged = c.differences.iter().filter(|d| !shown(d)).count();
    if unchanged > 0 {
        let _ = writeln!(out, "{} as in the baseline (not listed; --json has every figure)", crate::units::count(unchanged, "figure"));
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

    fn feed(&self, sink: &mut dyn crate::report::Sink) -> std::io::Result<()> {
        use crate::outcome::{Measure, Subject, Tally};
        let c = self.comparison;
        for d in &c.differences {
            let regression = c.regressions.iter().find(|r| r.key == d.key).map(|r| r.message.as_str());
            // A collective's ring or total is one subject (`rail 2`, `total`).
            let subject = if d.key.b.as_str().is_empty() {
                Subject::Text(d.key.a.to_string())
            } else {
                Subject::Pair { a: d.key.a.to_string(), b: d.key.b.to_string() }
            };
            sink.measure(&Measure::Change {
                subject: &subject,
                test: d.key.test.as_str(),
                direction: d.key.direction.as_str(),
                size: d.key.size,
                figure: d.key.figure.name(),
                change_pct: d.change_pct,
                regression,
                regressed: d.regression,
            });
        }
        for s in &c.slowed {
            sink.tally(&Tally::Slowed { endpoint: Subject::Text(s.endpoint.to_string()), regressed: s.regressed_pairs, pairs: s.pairs });
        }
        Ok(())
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
