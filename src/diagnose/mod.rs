//! The bring-up checklist as pure rules: inventory + host facts + expectations in, checks
//! and findings (each with cause and remedy) out. No I/O here; tests feed fixtures.

mod bond_rules;
pub mod driver_rules;
pub mod expect;
mod facts;
pub mod flap_rules;
pub mod gpu_rules;
pub mod ibgda_rules;
mod limits;
pub mod node;
mod node_rules;
mod pci_link_rules;
pub mod pci_path_rules;
pub mod pcie_rules;
mod phy_rules;
mod port_rules;
mod qos_counters;
mod qos_issue;
pub mod qos_pair;
mod qos_rules;
mod qos_source;
mod soak_rules;
pub use soak_rules::window_findings;
mod stack_rules;
mod unreadable;

pub use expect::{ExpectError, Expectations};

use crate::outcome::{Check, Finding, FindingId, Report, Severity, Status, Subject, Verdict};
use crate::probe::host::HostFacts;
use crate::probe::Inventory;

/// Which ports to examine (`check --device`): every one when `only` is empty, else each named
/// device (all its ports, or the one port named with it). A dual-port adapter whose second port
/// is not cabled is judged by its first alone when the operator names it (`mlx5_0:1,mlx5_1:1`),
/// as NHC's `check_hw_ib` takes the ports it checks.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub only: Vec<(String, Option<u32>)>,
}

impl Scope {
    /// Whether this device's own rows (firmware, PCIe) are judged: it is named, or none is.
    pub fn device(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|(d, _)| d == name)
    }

    /// The named devices, each once (none: every device is read).
    pub fn devices(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.only.iter().map(|(device, _)| device.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether this port is judged.
    pub fn port(&self, device: &str, port: u32) -> bool {
        self.only.is_empty() || self.only.iter().any(|(d, p)| d == device && p.is_none_or(|p| p == port))
    }
}

/// Everything a rule may read.
pub struct Input<'a> {
    pub inventory: &'a Inventory,
    /// `None` when diagnosing a captured tree from another node: stack checks are skipped.
    pub host: Option<&'a HostFacts>,
    pub expect: &'a Expectations,
    pub scope: &'a Scope,
}

/// Accumulates checks and findings while the rules run, over the facts that word them.
#[derive(Default)]
pub(crate) struct Sheet {
    checks: Vec<Check>,
    findings: Vec<Finding>,
    /// Facts several rules word their findings by (pending firmware, the stack that runs).
    facts: facts::Facts,
}

impl Sheet {
    /// An empty sheet over `facts`.
    pub(crate) fn over(facts: facts::Facts) -> Sheet {
        Sheet { facts, ..Sheet::default() }
    }

    /// The one place a sheet becomes a report: each check's status follows its findings and the
    /// verdict the errors ([`Report::settle`]); a node whose devices cannot be counted says so
    /// first (the one-line format quotes the first error), the stack findings after it say why.
    pub(crate) fn finish(self) -> Report {
        let mut report = Report { verdict: Verdict::Pass, checks: self.checks, findings: self.findings };
        report.settle();
        if let Some(i) = report.findings.iter().position(|f| f.id == FindingId::DevicesCount && f.severity == Severity::Error) {
            let first = report.findings.remove(i);
            report.findings.insert(0, first);
        }
        report
    }

    pub(crate) fn pass(&mut self, id: FindingId, subject: impl Into<Subject>, observed: impl Into<String>, expected: Option<String>) {
        self.checks.push(Check { id, subject: subject.into(), status: Status::Pass, observed: observed.into(), expected, cause: None });
    }

    pub(crate) fn skip(&mut self, id: FindingId, subject: impl Into<Subject>, why: impl Into<String>) {
        self.checks.push(Check { id, subject: subject.into(), status: Status::Skip, observed: why.into(), expected: None, cause: None });
    }

    /// A check that fails by another check's finding on the same subject (one fault, one
    /// error): no finding of its own; [`Report::settle`] gives it the status of `cause`'s finding.
    pub(crate) fn fail_by(&mut self, id: FindingId, subject: impl Into<Subject>, observed: impl Into<String>, cause: FindingId) {
        let (subject, observed) = (subject.into(), observed.into());
        self.checks.push(Check { id, subject, status: Status::Fail, observed, expected: None, cause: Some(cause) });
    }

    /// A check and the finding that explains it: its status follows the severity (error `fail`,
    /// warning `warn`, info `pass`; see [`Report::settle`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fail(
        &mut self,
        id: FindingId,
        subject: impl Into<Subject>,
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
        let subject = subject.into();
        self.checks.push(Check { id, subject: subject.clone(), status, observed: observed.into(), expected, cause: None });
        self.note(id, subject, severity, message, remedy);
    }

    /// A finding with no check of its own.
    pub(crate) fn note(
        &mut self,
        id: FindingId,
        subject: impl Into<Subject>,
        severity: Severity,
        message: impl Into<String>,
        remedy: impl Into<String>,
    ) {
        self.findings.push(Finding::new(id, severity, subject, message, remedy));
    }
}

/// Runs the rules of the inventory alone (no PCI tree, stack facts or log): what a test of
/// those rules judges. A node's whole checklist is [`node::judge`].
pub fn run(input: &Input<'_>) -> Report {
    let mut sheet = Sheet::default();
    inventory_rules(input, &mut sheet);
    sheet.finish()
}

/// The inventory's rule families, in order: the stack (live only), the node, then each port
/// in scope (its state and expectations, then its PHY).
pub(crate) fn inventory_rules(input: &Input<'_>, sheet: &mut Sheet) {
    if let Some(host) = input.host {
        stack_rules::run(input.inventory, host, sheet);
    }
    let unread = unreadable::Unread::of(input.inventory);
    node_rules::run(input, &unread, sheet);
    let physical = input.inventory.has_physical_function();
    for (device, port) in input.inventory.ports() {
        if !input.scope.port(&device.name, port.port) {
            continue;
        }
        let subject = format!("{}/{}", device.name, port.port);
        // A VF beside its physical functions is its user's; its PHY is its PF's.
        if device.virtual_function && physical {
            port_rules::virtual_function(port, &subject, sheet);
            continue;
        }
        let sibling_up = input.inventory.card_sibling_up(device, port.port);
        port_rules::run(device, port, sibling_up.as_deref(), input.expect, &unread, sheet);
        if !device.virtual_function {
            phy_rules::run(port, &subject, sheet);
        }
    }
}

/// Why a port cannot carry traffic, and what to do: the `port.state` rule's words, for
/// callers (such as `pair`) that meet a port that is not ACTIVE.
pub fn explain_port(device: &crate::probe::Device, port: &crate::probe::Port) -> (String, String) {
    let mut sheet = Sheet::default();
    port_rules::run(device, port, None, &Expectations::default(), &unreadable::Unread::default(), &mut sheet);
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
mod qos_rule_tests;

#[cfg(test)]
mod rule_tests;

#[cfg(test)]
mod status_tests;
