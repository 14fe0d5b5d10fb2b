//! The `fabcheck.accept.v1` document (contract 0.5, "Fleet acceptance"): each node with its
//! verdict and findings, the drift, each stage's result, and the drain list. Built here from
//! what the stages found (pure); written as JSON, human text, oneline drain lines and JUnit.

use super::drift::Drift;
use crate::outcome::action::{self, Action};
use crate::outcome::{Finding, Severity, Verdict};
use crate::sanitise::one_line as l;
use serde::Serialize;
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.accept.v1";
/// Longest drain reason (Slurm keeps reasons short; the JSON has every finding).
const REASON_MAX: usize = 160;

/// A node's verdict: `unreachable` is named, never dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeVerdict {
    Pass,
    Fail,
    Unreachable,
}

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub host: String,
    pub verdict: NodeVerdict,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub name: &'static str,
    pub verdict: Verdict,
    /// The schema of the documents the stage judged (`fabcheck.check.v1`: each node's check,
    /// whose findings are under `nodes`).
    pub document: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DrainEntry {
    pub host: String,
    pub reason: String,
    pub action: Action,
}

#[derive(Debug, Clone, Serialize)]
pub struct AcceptDoc {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub level: u8,
    pub nodes: Vec<Node>,
    pub drift: Vec<Drift>,
    pub stages: Vec<Stage>,
    pub drain: Vec<DrainEntry>,
}

/// One node as the stages saw it: its check's findings, or why it could not be reached.
pub enum Seen {
    Checked(Vec<Finding>),
    Unreachable(Finding),
}

/// The document of a level-1 run: `seen` in the order the nodes were given, with each node's
/// drift findings added to its own. With `--fail-on warning` a node with a warning fails (and
/// is drained) too.
pub fn build(
    level: u8,
    seen: Vec<(String, Seen)>,
    drift: Vec<Drift>,
    mut drift_findings: std::collections::BTreeMap<String, Vec<Finding>>,
    fail_on_warning: bool,
) -> AcceptDoc {
    let fails = |s: Severity| s == Severity::Error || (fail_on_warning && s == Severity::Warning);
    let mut nodes = Vec::new();
    let mut check_failed = false;
    for (host, seen) in seen {
        let node = match seen {
            Seen::Unreachable(f) => {
                check_failed = true;
                Node { host, verdict: NodeVerdict::Unreachable, findings: vec![f] }
            }
            Seen::Checked(mut findings) => {
                check_failed |= findings.iter().any(|f| fails(f.severity));
                findings.extend(drift_findings.remove(&host).unwrap_or_default());
                findings.sort_by_key(|f| f.severity);
                let failed = findings.iter().any(|f| fails(f.severity));
                Node { host, verdict: if failed { NodeVerdict::Fail } else { NodeVerdict::Pass }, findings }
            }
        };
        nodes.push(node);
    }
    let drift_failed = nodes.iter().flat_map(|n| &n.findings).any(|f| f.id == crate::outcome::FindingId::AcceptDrift && fails(f.severity));
    let verdict = |failed: bool| if failed { Verdict::Fail } else { Verdict::Pass };
    let stages = vec![
        Stage { name: "check", verdict: verdict(check_failed), document: crate::outcome::CHECK_SCHEMA },
        Stage { name: "drift", verdict: verdict(drift_failed), document: SCHEMA },
    ];
    let drain = nodes.iter().filter_map(drain_entry).collect::<Vec<_>>();
    AcceptDoc { schema: SCHEMA, verdict: verdict(!drain.is_empty()), level, nodes, drift, stages, drain }
}

/// A failed node's drain line: its first error (findings are sorted worst first) as the reason,
/// and that finding's action.
fn drain_entry(node: &Node) -> Option<DrainEntry> {
    if node.verdict == NodeVerdict::Pass {
        return None;
    }
    // Sorted worst first: an error, else (`--fail-on warning`) a warning.
    let first = node.findings.iter().find(|f| f.severity != Severity::Info)?;
    let errors = node.findings.iter().filter(|f| f.severity == first.severity).count();
    let more = if errors > 1 { format!(" (+{} more)", errors - 1) } else { String::new() };
    let mut reason = format!("{} {}: {}", first.id, first.subject, l(&first.message));
    if reason.chars().count() > REASON_MAX {
        reason = reason.chars().take(REASON_MAX - 3).collect::<String>() + "...";
    }
    reason.push_str(&more);
    Some(DrainEntry { host: node.host.clone(), reason, action: action::of(first) })
}

impl AcceptDoc {
    pub fn has_warning(&self) -> bool {
        self.nodes.iter().flat_map(|n| &n.findings).any(|f| f.severity == Severity::Warning)
    }

    /// `--format oneline`: `HOST ACTION: REASON`, one line per failed node (nothing when none).
    pub fn oneline(&self) -> String {
        self.drain.iter().map(|d| format!("{} {}: {}\n", l(&d.host), d.action, l(&d.reason))).collect()
    }

    pub fn human(&self) -> String {
        let mut out = String::new();
        let width = self.nodes.iter().map(|n| l(&n.host).chars().count()).max().unwrap_or(4).max(4);
        let _ = writeln!(out, "{:<width$}  {:<11}  findings", "host", "verdict");
        for n in &self.nodes {
            let verdict = match n.verdict {
                NodeVerdict::Pass => "pass",
                NodeVerdict::Fail => "FAIL",
                NodeVerdict::Unreachable => "UNREACHABLE",
            };
            let errors = n.findings.iter().filter(|f| f.severity == Severity::Error).count();
            let warnings = n.findings.iter().filter(|f| f.severity == Severity::Warning).count();
            let _ = writeln!(out, "{:<width$}  {verdict:<11}  {errors} errors, {warnings} warnings", l(&n.host));
        }
        if !self.drift.is_empty() {
            let _ = writeln!(out, "\ndrift (the majority is the reference):");
            for d in &self.drift {
                let majority = d.majority.as_deref().map_or("no majority (the nodes are split)".to_string(), |m| format!("majority {}", l(m)));
                let _ = writeln!(out, "  {}: {majority}", l(&d.key));
                for n in &d.nodes {
                    let _ = writeln!(out, "    {}: {}", l(&n.host), l(&n.value));
                }
            }
        }
        for n in self.nodes.iter().filter(|n| n.verdict != NodeVerdict::Pass) {
            let _ = writeln!(out, "\n{}:", l(&n.host));
            for f in n.findings.iter().filter(|f| f.severity != Severity::Info) {
                let tag = if f.severity == Severity::Error { "FAIL" } else { "WARN" };
                let _ = writeln!(out, "  {tag} {} {} [{}]: {}", f.id, l(&f.subject.to_string()), action::of(f), l(&f.message));
            }
        }
        let stages: Vec<String> =
            self.stages.iter().map(|s| format!("{} {}", s.name, if s.verdict == Verdict::Pass { "pass" } else { "FAIL" })).collect();
        let failed = self.drain.len();
        let _ = writeln!(
            out,
            "\n{}: level {}, {} nodes, {failed} to drain; stages: {}",
            if self.verdict == Verdict::Pass { "PASS" } else { "FAIL" },
            self.level,
            self.nodes.len(),
            stages.join(", ")
        );
        if !self.drain.is_empty() {
            let _ = writeln!(out, "drain:");
            out.push_str(&self.oneline());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{FindingId, Subject};

    fn f(id: FindingId, severity: Severity, subject: &str) -> Finding {
        Finding::new(id, severity, Subject::Text(subject.into()), "m", "r")
    }

    #[test]
    fn the_drain_list_is_exactly_the_failed_nodes_with_their_worst_findings_action() {
        let seen = vec![
            ("a".to_string(), Seen::Checked(vec![f(FindingId::FwPending, Severity::Info, "mlx5_0")])),
            (
                "b".to_string(),
                Seen::Checked(vec![f(FindingId::PhyModule, Severity::Error, "mlx5_0/1"), f(FindingId::LinkErrors, Severity::Error, "x")]),
            ),
            ("c".to_string(), Seen::Checked(vec![f(FindingId::AcceptDrift, Severity::Warning, "mtu mlx5_0/1")])),
            ("d".to_string(), Seen::Unreachable(f(FindingId::AcceptUnreachable, Severity::Error, "node"))),
        ];
        let doc = build(1, seen, Vec::new(), Default::default(), false);
        let drain: Vec<(&str, Action)> = doc.drain.iter().map(|d| (d.host.as_str(), d.action)).collect();
        assert_eq!(drain, [("b", Action::ReplaceOptic), ("d", Action::Reboot)]);
        assert!(doc.drain[0].reason.ends_with("(+1 more)"), "{}", doc.drain[0].reason);
        let verdicts: Vec<NodeVerdict> = doc.nodes.iter().map(|n| n.verdict).collect();
        assert_eq!(verdicts, [NodeVerdict::Pass, NodeVerdict::Fail, NodeVerdict::Pass, NodeVerdict::Unreachable]);
        assert_eq!(doc.verdict, Verdict::Fail);
        assert_eq!(doc.oneline().lines().count(), 2);
    }

    #[test]
    fn fail_on_warning_drains_a_node_with_a_warning() {
        let seen = vec![("c".to_string(), Seen::Checked(vec![f(FindingId::AcceptDrift, Severity::Warning, "mtu mlx5_0/1")]))];
        let doc = build(1, seen, Vec::new(), Default::default(), true);
        assert_eq!(doc.drain.len(), 1);
        assert_eq!(doc.drain[0].action, Action::FixConfig);
        assert_eq!(doc.stages[1].verdict, Verdict::Fail);
    }
}
