//! The bring-up checklist as pure rules: inventory + host facts + expectations in, checks
//! and findings (each with cause and remedy) out. No I/O here; tests feed fixtures.

pub mod driver_rules;
pub mod expect;
pub mod gpu_rules;
mod node_rules;
mod pci_link_rules;
pub mod pcie_rules;
mod phy_rules;
mod port_rules;
mod soak_rules;
mod stack_rules;
mod unreadable;

pub use expect::{ExpectError, Expectations};

use crate::probe::host::HostFacts;
use crate::probe::Inventory;
use serde::{Deserialize, Serialize};

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
    pub id: String,
    pub subject: String,
    pub status: Status,
    pub observed: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expected: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub severity: Severity,
    pub subject: String,
    pub message: String,
    pub remedy: String,
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
    /// nothing) is said about it; a row that was skipped and has no finding stays `skip`.
    /// Called after the rules run and again by anything that adds findings afterwards.
    pub fn settle(&mut self) {
        use std::collections::HashMap;
        self.findings.sort_by_key(|f| f.severity);
        let mut worst: HashMap<(&str, &str), Severity> = HashMap::new();
        for f in &self.findings {
            worst.entry((f.id.as_str(), f.subject.as_str())).and_modify(|s| *s = (*s).min(f.severity)).or_insert(f.severity);
        }
        for c in &mut self.checks {
            c.status = match (worst.get(&(c.id.as_str(), c.subject.as_str())), c.status) {
                (Some(Severity::Error), _) => Status::Fail,
                (Some(Severity::Warning), _) => Status::Warn,
                (Some(Severity::Info), Status::Skip) | (None, Status::Skip) => Status::Skip,
                (Some(Severity::Info), _) | (None, _) => Status::Pass,
            };
        }
        self.verdict = if self.findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    }
}

/// Which ports to examine.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub device: Option<String>,
    pub port: Option<u32>,
}

/// Everything a rule may read.
pub struct Input<'a> {
    pub inventory: &'a Inventory,
    /// `None` when diagnosing a captured tree from another node: stack checks are skipped.
    pub host: Option<&'a HostFacts>,
    pub expect: &'a Expectations,
    pub scope: &'a Scope,
}

/// Accumulates checks and findings while the rules run.
#[derive(Default)]
pub(crate) struct Sheet {
    checks: Vec<Check>,
    findings: Vec<Finding>,
}

impl Sheet {
    pub(crate) fn pass(&mut self, id: &str, subject: &str, observed: impl Into<String>, expected: Option<String>) {
        self.checks.push(Check { id: id.into(), subject: subject.into(), status: Status::Pass, observed: observed.into(), expected });
    }

    pub(crate) fn skip(&mut self, id: &str, subject: &str, why: impl Into<String>) {
        self.checks.push(Check { id: id.into(), subject: subject.into(), status: Status::Skip, observed: why.into(), expected: None });
    }

    /// A check and the finding that explains it: its status follows the severity (error `fail`,
    /// warning `warn`, info `pass`; see [`Report::settle`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fail(
        &mut self,
        id: &str,
        subject: &str,
        observed: impl Into<String>,
        expected: Option<String>,
        severity: Severity,
        message: impl Into<String>,
        remedy: impl Into<String>,
    ) {
        let status = match severity {
            Severity::Error => Status::Fail,
            Severity::Warning => Status::Warn,
            Severity::Info => Status::Pass,
        };
        self.checks.push(Check { id: id.into(), subject: subject.into(), status, observed: observed.into(), expected });
        self.note(id, subject, severity, message, remedy);
    }

    /// A finding with no check of its own.
    pub(crate) fn note(&mut self, id: &str, subject: &str, severity: Severity, message: impl Into<String>, remedy: impl Into<String>) {
        self.findings.push(Finding { id: id.into(), severity, subject: subject.into(), message: message.into(), remedy: remedy.into() });
    }
}

/// Runs every rule.
pub fn run(input: &Input<'_>) -> Report {
    let mut sheet = Sheet::default();
    if let Some(host) = input.host {
        stack_rules::run(input.inventory, host, &mut sheet);
    }
    let unread = unreadable::Unread::of(input.inventory);
    node_rules::run(input, &unread, &mut sheet);
    for (device, port) in input.inventory.ports() {
        if input.scope.device.as_deref().is_some_and(|d| d != device.name) || input.scope.port.is_some_and(|p| p != port.port) {
            continue;
        }
        port_rules::run(device, port, input.expect, &unread, &mut sheet);
        phy_rules::run(port, &format!("{}/{}", device.name, port.port), &mut sheet);
    }
    let mut report = Report { verdict: Verdict::Pass, checks: sheet.checks, findings: sheet.findings };
    report.settle();
    // A node whose devices cannot be counted says so first (the one-line format quotes the
    // first error); the stack findings after it say why.
    if let Some(i) = report.findings.iter().position(|f| f.id == "devices.count" && f.severity == Severity::Error) {
        let first = report.findings.remove(i);
        report.findings.insert(0, first);
    }
    report
}

/// Why a port cannot carry traffic, and what to do: the `port.state` rule's words, for
/// callers (such as `pair`) that meet a port that is not ACTIVE.
pub fn explain_port(device: &crate::probe::Device, port: &crate::probe::Port) -> (String, String) {
    let mut sheet = Sheet::default();
    port_rules::run(device, port, &Expectations::default(), &unreadable::Unread::default(), &mut sheet);
    sheet
        .findings
        .into_iter()
        .find(|f| f.severity == Severity::Error)
        .map(|f| (f.message, f.remedy))
        .unwrap_or_else(|| (format!("port is {} / {}", port.state, port.phys_state), "run `fabcheck check`".into()))
}

pub use stack_rules::memlock_remedy;

/// Formats a link rate in Gb/s (see [`crate::units::rate`]).
pub(crate) use crate::units::rate as gbps;

#[cfg(test)]
mod rule_tests;

#[cfg(test)]
mod status_tests;
