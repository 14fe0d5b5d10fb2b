//! `--format junit`: JUnit XML valid against the common schema (`junit-10.xsd`, Jenkins'
//! xUnit plugin's, which pytest follows; vendored in `tests/schemas/` and validated in the host
//! tier), printed from a document's typed items: one testcase per check row (check), per test
//! result (pair), per pair and test (mesh), its `<failure>` inside it; findings that no row or
//! result stands for (fabric, mesh suspects, a pair's own verdict) are cases of their own. Names
//! are unique within the suite (a consumer keys its history on them), and `tests`, `failures`,
//! `errors`, `skipped` and `time` are on the suite, `time` on each case (seconds, at most 3
//! decimals as the schema's pattern wants; fabcheck does not time its rows, so `0.000`).

use super::document::Stamp;
use super::sink::{Command, Sink};
use crate::outcome::{Check, Finding, Measure, Severity, Status, Subject, Tally, TestResult, Verdict};
use std::collections::BTreeSet;
use std::fmt::Write;

use crate::sanitise::xml as esc;

struct Case {
    class: String,
    name: String,
    failure: Option<String>,
    skipped: bool,
}

/// The cases of a suite, their names made unique (a second `x` is `x (2)`).
#[derive(Default)]
struct Cases {
    list: Vec<Case>,
    names: BTreeSet<String>,
}

impl Cases {
    fn push(&mut self, mut case: Case) {
        if !self.names.insert(case.name.clone()) {
            let base = case.name.clone();
            let mut n = 2;
            while !self.names.insert(format!("{base} ({n})")) {
                n += 1;
            }
            case.name = format!("{base} ({n})");
        }
        self.list.push(case);
    }
}

/// A rail as fed: its subject (which names its number) and results.
struct Rail {
    subject: Subject,
    results: Vec<TestResult>,
}

/// A mesh pair as fed.
struct MeshPair {
    /// The pair (`a <-> b`).
    subject: Subject,
    rail: Option<usize>,
    failed: bool,
    results: Vec<TestResult>,
    error: Option<String>,
    blame: crate::outcome::PairBlame,
}

/// A figure of `compare` as fed.
struct Difference {
    name: String,
    figure: &'static str,
    failure: Option<String>,
}

/// The suite of one command's document: every item is kept, the cases are made at the end
/// (a check's case carries the findings about it, wherever in the document they stand).
pub struct JunitPrinter {
    command: Command,
    fail_on_warning: bool,
    findings: Vec<Finding>,
    checks: Vec<Check>,
    results: Vec<TestResult>,
    rails: Vec<Rail>,
    pairs: Vec<MeshPair>,
    differences: Vec<Difference>,
    slowed: Vec<(Subject, usize, usize)>,
}

impl JunitPrinter {
    pub fn new(command: Command, fail_on_warning: bool) -> JunitPrinter {
        JunitPrinter {
            command,
            fail_on_warning,
            findings: Vec::new(),
            checks: Vec::new(),
            results: Vec::new(),
            rails: Vec::new(),
            pairs: Vec::new(),
            differences: Vec::new(),
            slowed: Vec::new(),
        }
    }

    /// The document, stamped.
    pub fn finish(self, stamp: &Stamp) -> String {
        let command = self.command.name();
        let cases = self.cases();
        suite(command, &stamp.host, &stamp.time, &cases, 0)
    }

    fn cases(&self) -> Vec<Case> {
        let command = self.command.name();
        // A row's failure is its error finding, or with `--fail-on warning` its warning.
        let fails = |severity: Severity| severity == Severity::Error || (severity == Severity::Warning && self.fail_on_warning);
        let failing: Vec<&Finding> = self.findings.iter().filter(|f| fails(f.severity)).collect();
        // Which failing findings a case already carries (each is said once, inside its case).
        let mut used = vec![false; failing.len()];
        let mut out = Cases::default();
        for c in &self.checks {
            let mut messages = Vec::new();
            for (i, f) in failing.iter().enumerate() {
                if f.id == c.id && f.subject == c.subject {
                    used[i] = true;
                    messages.push(f.message.as_str());
                }
            }
            // A row the document marks failed with no finding of its own still fails.
            if messages.is_empty() && c.status == Status::Fail {
                messages.push(&c.observed);
            }
            out.push(Case {
                class: format!("fabcheck.{command}.{}", c.id),
                name: format!("{} {}", c.id, c.subject),
                failure: (!messages.is_empty()).then(|| messages.join("; ")),
                skipped: c.status == Status::Skip,
            });
        }
        for r in &self.results {
            let mut messages: Vec<&str> = r.error.as_deref().into_iter().collect();
            for (i, f) in failing.iter().enumerate() {
                if !used[i] && f.about == Some(r.key()) {
                    used[i] = true;
                    messages.push(&f.message);
                }
            }
            let failure = (!messages.is_empty()).then(|| messages.join("; "));
            out.push(Case {
                class: format!("fabcheck.{command}.{}", r.test),
                name: format!("{} {} {}", r.test, r.direction, r.size),
                failure,
                skipped: false,
            });
        }
        // pair --rails: one testcase per rail and test, named after the rail; its failure is
        // the test's error or the rail's error finding.
        for rail in &self.rails {
            let subject = rail.subject.to_string();
            let finding = self.findings.iter().find(|f| fails(f.severity) && f.subject == rail.subject).map(|f| f.message.clone());
            if rail.results.is_empty() {
                out.push(Case { class: format!("fabcheck.{command}.rail"), name: subject, failure: finding, skipped: false });
                continue;
            }
            for r in &rail.results {
                out.push(Case {
                    class: format!("fabcheck.{command}.{}", r.test),
                    name: format!("{subject} {} {} {}", r.test, r.direction, r.size),
                    failure: r.error.clone().or_else(|| finding.clone()),
                    skipped: false,
                });
            }
        }
        // mesh: one testcase per pair and test (the latest measure of a pair stands for it); a
        // pair that could not run is one testcase with its error.
        for pair in &self.pairs {
            let mut name = pair.subject.to_string();
            // `mesh --rails`: the rail leads the name.
            if let Some(k) = pair.rail {
                name = format!("rail {k}: {name}");
            }
            if pair.results.is_empty() {
                let failure = pair.failed.then(|| pair.error.clone().unwrap_or_else(|| "failed".into()));
                out.push(Case { class: format!("fabcheck.{command}.pair"), name, failure, skipped: false });
                continue;
            }
            // A pair failed by its bandwidth fails its bandwidth cases, not its healthy latency
            // ones (and the other way round); where no case holds the blamed figure, all do.
            let named = pair.results.iter().any(|r| pair.blame.names(r));
            for r in &pair.results {
                let blamed = pair.failed && (!named || pair.blame.names(r));
                let failure = r.error.clone().or_else(|| blamed.then(|| format!("the pair {name} failed its verdict (see the suspects)")));
                out.push(Case {
                    class: format!("fabcheck.{command}.{}", r.test),
                    name: format!("{name} {} {} {}", r.test, r.direction, r.size),
                    failure,
                    skipped: false,
                });
            }
        }
        // compare: one case per figure compared, failed when it regressed; a slowed endpoint too.
        for d in &self.differences {
            out.push(Case { class: format!("fabcheck.{command}.{}", d.figure), name: d.name.clone(), failure: d.failure.clone(), skipped: false });
        }
        for (endpoint, regressed, pairs) in &self.slowed {
            let failure = Some(format!("{endpoint} slowed since the baseline: {regressed} of its {pairs} pairs regressed"));
            out.push(Case { class: format!("fabcheck.{command}.slowed"), name: format!("slowed {endpoint}"), failure, skipped: false });
        }
        // Failing findings no check or result stands for (pair verdict findings, fabric, mesh
        // suspects and unreachable endpoints), each its own case.
        for (i, f) in failing.iter().enumerate() {
            if used[i] {
                continue;
            }
            out.push(Case {
                class: format!("fabcheck.{command}.{}", f.id),
                name: format!("{} {}", f.id, f.subject),
                failure: Some(f.message.clone()),
                skipped: false,
            });
        }
        out.list
    }
}

impl Sink for JunitPrinter {
    fn finding(&mut self, finding: &Finding) {
        self.findings.push(finding.clone());
    }

    fn check(&mut self, check: &Check) {
        self.checks.push(check.clone());
    }

    fn measure(&mut self, m: &Measure<'_>) {
        match *m {
            Measure::Result(result) => self.results.push(result.clone()),
            Measure::Rail { subject, results, .. } => self.rails.push(Rail { subject: subject.clone(), results: results.to_vec() }),
            Measure::MeshPair { subject, rail, verdict, results, error, blame } => self.pairs.push(MeshPair {
                subject: subject.clone(),
                rail,
                failed: verdict == Verdict::Fail,
                results: results.to_vec(),
                error: error.map(str::to_string),
                blame,
            }),
            Measure::Change { subject, test, direction, size, figure, change_pct, regression, regressed } => {
                let change = change_pct.map_or_else(|| "null".to_string(), |c| c.to_string());
                let failure = regressed.then(|| regression.map_or_else(|| format!("{change} %"), str::to_string));
                let name = format!("{subject} {test} {direction} {size} {figure}");
                self.differences.push(Difference { name, figure, failure });
            }
            Measure::Port { .. } | Measure::PcieUsable { .. } | Measure::Total { .. } | Measure::Reading { .. } => {}
        }
    }

    fn tally(&mut self, tally: &Tally) {
        if let Tally::Slowed { endpoint, regressed, pairs } = tally {
            self.slowed.push((endpoint.clone(), *regressed, *pairs));
        }
    }
}

/// The suite around `cases`: the counts and time the schema requires, the stamp's host and time.
fn suite(command: &str, host: &str, timestamp: &str, cases: &[Case], errors: usize) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count() - errors;
    let skipped = cases.iter().filter(|c| c.skipped).count();
    let tests = cases.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"fabcheck\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"0.000\">");
    let _ = writeln!(
        out,
        "  <testsuite name=\"fabcheck {}\" hostname=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"0.000\" timestamp=\"{}\">",
        esc(command),
        esc(host),
        esc(timestamp)
    );
    for c in cases {
        let _ = write!(out, "    <testcase classname=\"{}\" name=\"{}\" time=\"0.000\"", esc(&c.class), esc(&c.name));
        match (&c.failure, c.skipped) {
            (Some(msg), _) => {
                let _ = writeln!(out, ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>", esc(msg), esc(msg));
            }
            (None, true) => out.push_str(">\n      <skipped/>\n    </testcase>\n"),
            (None, false) => out.push_str("/>\n"),
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The document of a run that could not run (exit 2): one case, `run`, failed with the cause,
/// counted as an error (the schema's `<errors>` element is a plural no consumer reads, so the
/// case holds a `<failure>`), so CI never shows the last run's green.
pub fn error_document(command: &str, cause: &str, stamp: &Stamp) -> String {
    let case = Case { class: format!("fabcheck.{command}"), name: "run".into(), failure: Some(format!("could not run: {cause}")), skipped: false };
    suite(command, &stamp.host, &stamp.time, &[case], 1)
}

#[cfg(test)]
#[path = "junit_tests.rs"]
mod tests;
