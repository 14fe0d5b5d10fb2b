//! The one vocabulary of outcomes every command speaks: check rows and findings (typed ids and
//! subjects, severities, the verdict), the measurements a test produced, and why an agent was
//! lost. A leaf: rules (`diagnose`, `fabric`, `pair`, `mesh`) produce these values, the printers
//! (`report`) write them, and neither side needs the other's modules to name them.

pub mod action;
mod id;
pub mod loss;
mod measure;
pub mod paths;
mod subject;

pub use id::{Family, FindingId};
pub use measure::{CounterDir, Figure, Measure, PairBlame, Tally, TestResult, UnderLoad};
pub use subject::{RailEnd, Subject, SuspectKind};

use serde::{Deserialize, Serialize};

/// The schema of check's document (its checklist and findings, a [`Report`]): `check` writes it,
/// and `accept` names it as its `check` stage's document.
pub const CHECK_SCHEMA: &str = "fabcheck.check.v1";

/// A check row's status: always what its findings say (see [`Report::settle`]), so every format
/// (JSON, prom, junit, human) agrees with the findings beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skip,
    /// Its worst finding is a warning (`--fail-on warning` makes it a failure).
    Warn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub id: FindingId,
    pub subject: Subject,
    pub status: Status,
    pub observed: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expected: Option<String>,
    /// The check whose finding (on this row's subject) is this row's cause too: the row takes
    /// that finding's status in [`Report::settle`] without a finding of its own (one fault, one
    /// error: `roce.lossless` fails by `roce.qos`'s). Not in the document: the row's status and
    /// observed text (which names that check) say it.
    #[serde(skip)]
    pub cause: Option<FindingId>,
}

/// Written with its `action` (0.5), from [`action::of`]: never stored, so it cannot disagree
/// with the table. Read back without it (older documents have none).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Finding {
    pub id: FindingId,
    pub severity: Severity,
    pub subject: Subject,
    pub message: String,
    pub remedy: String,
    /// The test result the finding is about, where it is about one (`pair.bw` of a size): the
    /// JUnit printer puts it in that result's case. Not in the document: its message says it.
    #[serde(skip)]
    pub about: Option<ResultKey>,
}

/// Which result of a run: its test, direction and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResultKey {
    pub test: crate::model::TestKind,
    pub direction: crate::model::Direction,
    pub size: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub verdict: Verdict,
    pub checks: Vec<Check>,
    pub findings: Vec<Finding>,
}

impl Report {
    /// Makes the rows, the order of the findings and the verdict follow from the findings: the
    /// one place a check's status is decided. A row is `fail` when an error finding has its id
    /// and subject, `warn` when its worst such finding is a warning, `pass` when only info (or
    /// nothing) is said about it; a row that was skipped and has no finding stays `skip`. A row
    /// with a [`Check::cause`] counts that check's findings on its subject as its own.
    /// Called after the rules run and again by anything that adds findings afterwards.
    pub fn settle(&mut self) {
        use std::collections::HashMap;
        self.findings.sort_by_key(|f| f.severity);
        let mut worst: HashMap<(FindingId, &Subject), Severity> = HashMap::new();
        for f in &self.findings {
            worst.entry((f.id, &f.subject)).and_modify(|s| *s = (*s).min(f.severity)).or_insert(f.severity);
        }
        for c in &mut self.checks {
            let own = worst.get(&(c.id, &c.subject)).copied();
            let by = c.cause.and_then(|id| worst.get(&(id, &c.subject)).copied());
            c.status = match (own.into_iter().chain(by).min(), c.status) {
                (Some(Severity::Error), _) => Status::Fail,
                (Some(Severity::Warning), _) => Status::Warn,
                (Some(Severity::Info), Status::Skip) | (None, Status::Skip) => Status::Skip,
                (Some(Severity::Info), _) | (None, _) => Status::Pass,
            };
        }
        self.verdict = if self.findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    }
}

impl Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Written<'a> {
            id: FindingId,
            severity: Severity,
            subject: &'a Subject,
            message: &'a str,
            remedy: &'a str,
            action: action::Action,
        }
        Written {
            id: self.id,
            severity: self.severity,
            subject: &self.subject,
            message: &self.message,
            remedy: &self.remedy,
            action: action::of(self),
        }
        .serialize(s)
    }
}

impl Finding {
    pub fn new(id: FindingId, severity: Severity, subject: impl Into<Subject>, message: impl Into<String>, remedy: impl Into<String>) -> Finding {
        Finding { id, severity, subject: subject.into(), message: message.into(), remedy: remedy.into(), about: None }
    }

    /// The finding, said of this result.
    pub fn about(self, result: &TestResult) -> Finding {
        Finding { about: Some(result.key()), ..self }
    }
}

/// Whether any of these findings is a warning (`--fail-on warning` then fails the run).
pub fn any_warning(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Warning)
}
