//! The `fabcheck.pair.v1` document and its human rendering.

use super::side::Side;
use crate::outcome::{Finding, TestResult, Verdict};
use crate::units;
use crate::units::rate as gbps;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.pair.v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairDoc {
    pub schema: String,
    pub verdict: Verdict,
    pub a: Side,
    pub b: Side,
    pub results: Vec<TestResult>,
    pub findings: Vec<Finding>,
    /// Whether both ends registered their buffers with relaxed ordering.
    #[serde(default)]
    pub relaxed_ordering: bool,
    /// What bandwidth was judged against, Gb/s, and what set it (`link` or `pcie`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_gbps: Option<f64>,
    /// `--rails`: each rail's sides and results (the top-level `results` is then empty and
    /// `a`/`b` are rail 0's sides). Absent without `--rails`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rails: Vec<super::rails::doc::RailRecord>,
    /// `--rails`: the node total per bandwidth test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregate: Vec<super::rails::doc::Aggregate>,
}

impl PairDoc {
    /// The document of a `--rails` run: the top-level `results` empty, `a`/`b` rail 0's sides.
    pub fn of_rails(run: super::rails::RailsRun) -> PairDoc {
        PairDoc {
            schema: SCHEMA.into(),
            verdict: run.verdict,
            a: run.a,
            b: run.b,
            results: Vec::new(),
            findings: run.findings,
            relaxed_ordering: false,
            capacity_gbps: run.capacity_gbps,
            rails: run.records,
            aggregate: run.aggregate,
        }
    }
}

/// The human report. `quiet`: only problems (failed tests, error and warning findings) and the
/// verdict.
pub fn human(doc: &PairDoc, quiet: bool) -> String {
    let mut out = String::new();
    if !doc.rails.is_empty() {
        return rails_human(doc, quiet);
    }
    for (name, s) in [("A", &doc.a), ("B", &doc.b)].into_iter().filter(|_| !quiet) {
        let _ = writeln!(
            out,
            "{name}  {} {}/{}  {}  {}  gid {} {}  mtu {}  {}",
            s.host,
            s.device,
            s.port,
            s.ca_type,
            s.link_layer,
            s.gid_index.map_or("-".into(), |i| i.to_string()),
            s.gid.map(|g| g.to_string()).unwrap_or_default(),
            s.mtu.map_or("?".into(), |m| m.to_string()),
            s.rate_gbps.map_or(String::new(), |r| format!("link {} Gb/s", gbps(r)))
        );
        if let (Some(tos), Some(source)) = (s.tclass, s.tclass_source) {
            let _ = writeln!(out, "   tclass {tos} (DSCP {}) from {}", tos >> 2, source.words());
        }
        if !s.mem.is_host() {
            let path = s.mem_path.map_or("?", |p| p.name());
            let _ = writeln!(
                out,
                "   memory {} ({path}{})",
                s.mem,
                s.gpu.as_deref().map_or(String::new(), |g| format!(", GPU {}", crate::sanitise::one_line(g)))
            );
        }
    }
    let shown: Vec<&TestResult> = doc.results.iter().filter(|r| !quiet || r.error.is_some()).collect();
    if !shown.is_empty() {
        if !quiet {
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{:<10} {:<5} {:>8} {:>8} {:>3}  result", "test", "dir", "size", "iters", "qps");
    }
    for r in shown {
        let result = if let Some(e) = &r.error {
            format!("FAILED: {e}")
        } else if let (Some(l), Some(u)) = (&r.lat_us, &r.under_load) {
            format!(
                "under load p50 {} us  p99 {} us;  idle p50 {} us  p99 {} us;  p99 {}x idle  (load {} Gb/s)",
                units::three(l.p50),
                units::three(l.p99),
                units::three(u.idle_lat_us.p50),
                units::three(u.idle_lat_us.p99),
                units::three(u.p99_ratio),
                units::measured_gbps(u.load_gbps)
            )
        } else if let Some(l) = &r.lat_us {
            format!(
                "p50 {} us  p99 {} us  p99.9 {} us  min {} max {} (us)",
                units::three(l.p50),
                units::three(l.p99),
                units::three(l.p999),
                units::three(l.min),
                units::three(l.max)
            )
        } else {
            format!(
                "{} Gb/s  peak {} Gb/s  {}",
                r.bw_gbps.map_or("?".into(), units::measured_gbps),
                r.peak_gbps.map_or("?".into(), units::measured_gbps),
                r.msg_rate_mpps.map_or("?".into(), units::msg_rate)
            )
        };
        let _ = writeln!(out, "{:<10} {:<5} {:>8} {:>8} {:>3}  {}", r.test, r.direction, r.size, r.iterations, r.qps, result);
    }
    let findings: Vec<&Finding> = doc.findings.iter().filter(|f| !quiet || f.severity != crate::outcome::Severity::Info).collect();
    if !findings.is_empty() && !out.is_empty() {
        let _ = writeln!(out);
    }
    for f in findings {
        let _ = writeln!(out, "{:<7} {:<20} {}", format!("{:?}", f.severity).to_uppercase(), f.id, f.message);
        let _ = writeln!(out, "        what to do: {}", f.remedy);
    }
    if !out.is_empty() {
        let _ = writeln!(out);
    }
    if let (Some((e, mtu)), false) = (super::verdict::payload_efficiency(&doc.a, &doc.b), quiet) {
        let _ = writeln!(out, "bandwidth judged against the payload the link carries at MTU {mtu}: {:.1}% of its rate", 100.0 * e);
    }
    let _ = writeln!(out, "{}", if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" });
    out
}

/// `pair --rails`: the rail table, the findings, the verdict.
fn rails_human(doc: &PairDoc, quiet: bool) -> String {
    let bad: Vec<usize> = doc
        .rails
        .iter()
        .filter(|r| {
            let subject = super::rails::judge::subject(r.rail, &r.a, &r.b);
            doc.findings.iter().any(|f| f.severity == crate::outcome::Severity::Error && f.subject == subject)
        })
        .map(|r| r.rail)
        .collect();
    let subject = |r: &super::rails::doc::RailRecord| super::rails::judge::subject(r.rail, &r.a, &r.b);
    let rows = super::rails::words::bad_rows(&doc.rails, &bad, &doc.findings, subject);
    let mut out = super::rails::doc::table(&doc.rails, &doc.aggregate, &bad, &rows, quiet);
    let findings: Vec<&Finding> = doc.findings.iter().filter(|f| !quiet || f.severity != crate::outcome::Severity::Info).collect();
    if !findings.is_empty() {
        let _ = writeln!(out);
    }
    // One line per cause, naming its rails (issue #57).
    let rail_of = |s: &crate::outcome::Subject| doc.rails.iter().find(|r| subject(r) == *s).map(|r| r.rail);
    out.push_str(&super::rails::words::finding_lines(&findings, rail_of));
    let _ = writeln!(out);
    let verdict = if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" };
    let _ = writeln!(out, "{verdict} ({})", super::rails::doc::summary(doc.rails.len(), &bad, doc.verdict));
    out
}

/// `pair`'s result: the document, and whether the human view is `--quiet`.
pub type PairReport = crate::report::Judged<PairDoc>;

impl crate::report::JudgedDoc for PairDoc {
    const COMMAND: crate::report::Command = crate::report::Command::Pair;

    fn judged(&self) -> (Verdict, &[crate::outcome::Finding]) {
        (self.verdict, &self.findings)
    }

    fn human(&self, quiet: bool) -> String {
        human(self, quiet)
    }

    /// Every result, each rail's, then the totals across rails.
    fn measures(&self, sink: &mut dyn crate::report::Sink) {
        use crate::outcome::Measure;
        self.results.iter().for_each(|r| sink.measure(&Measure::Result(r)));
        for r in &self.rails {
            let subject = super::rails::judge::subject(r.rail, &r.a, &r.b);
            sink.measure(&Measure::Rail { rail: r.rail, subject: &subject, results: &r.results });
        }
        for g in &self.aggregate {
            sink.measure(&Measure::Total { test: g.test, direction: g.direction, size: g.size, bw_gbps: g.bw_gbps });
        }
    }
}
