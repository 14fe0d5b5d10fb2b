//! `fabcheck check`: failures first with their remedy, then a compact list of what passed.

use crate::outcome::{Report, Severity, Status, Verdict};
use crate::sanitise::one_line as l;
use serde::Serialize;
use std::fmt::Write;

#[derive(Serialize)]
pub struct CheckDoc<'a> {
    pub schema: &'static str,
    #[serde(flatten)]
    pub report: &'a Report,
    /// Each GPU and its nearest RDMA NIC (an addition; absent on nodes without NVIDIA GPUs).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub gpus: &'a [crate::gpu::topology::Pairing],
    /// The bundle read, when its manifest names its host (the stamp's host).
    #[serde(skip)]
    pub origin: Option<crate::probe::bundle::Origin>,
}

pub fn human(report: &Report) -> String {
    let mut out = String::new();
    // The id and subject columns widen for the longest (18 and 12 at least, as 0.2 printed).
    let ids = report.findings.iter().map(|f| &f.id).chain(report.checks.iter().map(|c| &c.id));
    let id_w = ids.map(|id| l(id.as_str()).chars().count()).max().unwrap_or(0).max(18);
    let subjects = report.findings.iter().map(|f| &f.subject).chain(report.checks.iter().map(|c| &c.subject));
    let subject_w = subjects.map(|s| l(&s.to_string()).chars().count()).max().unwrap_or(0).max(12);
    for f in &report.findings {
        let tag = match f.severity {
            Severity::Error => "FAIL",
            Severity::Warning => "WARN",
            Severity::Info => "INFO",
        };
        let _ = writeln!(out, "{tag}  {:<id_w$} {:<subject_w$} {}", l(f.id.as_str()), l(&f.subject.to_string()), l(&f.message));
        let _ = writeln!(out, "      what to do: {}", l(&f.remedy));
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out);
    }
    for c in &report.checks {
        // The row agrees with what was found about it: never `ok` beside a finding.
        let worst = report.findings.iter().filter(|f| f.id == c.id && f.subject == c.subject).map(|f| f.severity).min();
        let tag = match (worst, c.status) {
            (Some(Severity::Error), _) | (None, Status::Fail) => "FAIL",
            (Some(Severity::Warning), _) => "warn",
            (Some(Severity::Info), _) => "info",
            (None, Status::Pass) => "ok  ",
            (None, Status::Skip) => "skip",
            (None, Status::Warn) => "warn",
        };
        let expected = c.expected.as_ref().map_or(String::new(), |e| format!("  (expected {})", l(e)));
        let _ = writeln!(out, "{tag}  {:<id_w$} {:<subject_w$} {}{}", l(c.id.as_str()), l(&c.subject.to_string()), l(&c.observed), expected);
    }
    let errors = report.findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = report.findings.iter().filter(|f| f.severity == Severity::Warning).count();
    // Skipped checks counted (issue #57): a PASS of 16 checks, 9 of them skipped, says so.
    let skipped = report.checks.iter().filter(|c| c.status == Status::Skip).count();
    let skipped = if skipped > 0 { format!(", {skipped} skipped") } else { String::new() };
    let _ = writeln!(
        out,
        "\n{}: {}, {}, {}{skipped}",
        if report.verdict == Verdict::Pass { "PASS" } else { "FAIL" },
        crate::units::count(report.checks.len(), "check"),
        crate::units::count(errors, "error"),
        crate::units::count(warnings, "warning")
    );
    out
}

impl crate::report::Document for CheckDoc<'_> {
    fn origin(&self) -> Option<&str> {
        self.origin.as_ref().map(|o| o.host.as_str())
    }

    fn command(&self) -> crate::report::Command {
        crate::report::Command::Check
    }

    fn verdict(&self) -> Option<Verdict> {
        Some(self.report.verdict)
    }

    fn has_warning(&self) -> bool {
        crate::outcome::any_warning(&self.report.findings)
    }

    fn human(&self) -> String {
        human(self.report)
    }

    fn write_json(&self, out: &mut dyn std::io::Write, stamp: &crate::report::Stamp, verdict: Option<Verdict>) -> std::io::Result<()> {
        crate::report::json::write_sorted(out, self, stamp, verdict)
    }

    fn feed(&self, sink: &mut dyn crate::report::Sink) -> std::io::Result<()> {
        self.report.findings.iter().for_each(|f| sink.finding(f));
        self.report.checks.iter().for_each(|c| sink.check(c));
        Ok(())
    }
}
