//! What judging a subnet yields: its findings, sorted errors first, and the link ends each
//! one marks in the per-switch table. Below both `judge` (the subnet's own rules) and
//! `design` (the design rules, which hand in [`Noted`] findings), so neither imports the other
//! for it.

use crate::mad::attributes::Guid;
use crate::outcome::{Finding, FindingId, Severity};
use std::collections::HashMap;

/// Findings, sorted errors first, and which link ends each finding touches (for the table).
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    pub findings: Vec<Finding>,
    /// (node, port) -> ids of findings about that port.
    pub marks: HashMap<(Guid, u8), Vec<FindingId>>,
}

/// A finding of a design rule (`design::tiers`, `rails`, `duplicate`), with the link ends it
/// marks in the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Noted {
    pub finding: Finding,
    pub ends: Vec<(Guid, u8)>,
}

/// How the design rules found the switches cabled: what a route imbalance is then put down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cabling {
    /// Every leaf reaches every spine of its tree alike (or no rule could tell).
    Even,
    /// `fabric.design` names missing or uneven uplinks.
    Uneven,
    /// Uneven, but as the `--topology` or `--plan` file cables it (said as info).
    UnevenAsPlanned,
}

impl Noted {
    pub fn new(id: FindingId, severity: Severity, subject: String, message: String, remedy: &str, ends: &[(Guid, u8)]) -> Noted {
        Noted { finding: Finding::new(id, severity, subject, message, remedy), ends: ends.to_vec() }
    }
}

impl Judgement {
    /// Adds findings of other rules, keeping the order errors first.
    pub fn extend(&mut self, noted: Vec<Noted>) {
        for n in noted {
            for end in &n.ends {
                self.marks.entry(*end).or_default().push(n.finding.id);
            }
            self.findings.push(n.finding);
        }
        self.findings.sort_by_key(|f| f.severity);
    }
}
