//! The `fabcheck.accept.v1` document (contract 0.5, "Fleet acceptance"): each node with its
//! verdict and findings, the drift, each stage's result, and the drain list. Built here from
//! what the stages found (pure); written as JSON, human text, oneline drain lines and JUnit.

use super::drift::Drift;
use super::stage::{StageName, StageRun};
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
    pub name: StageName,
    pub verdict: Verdict,
    /// The stage's own document (levels 2 and 3: `fabcheck.mesh.v1`, `fabcheck.collective.v1`,
    /// `fabcheck.fabric.v1`, the soak's), or the schema of the documents it judged where they
    /// are elsewhere in the report (`check`: each node's findings under `nodes`; `drift`).
    pub document: serde_json::Value,
    /// The nodes this stage could not reach or ask (named, never dropped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<String>,
    /// Why the stage did not run where that is no failure (`fabric` without InfiniBand here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Why the stage could not run at all (it fails; no node to blame).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it ran, seconds (levels 2 and 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// What it found on each node (also in the node's findings): its JUnit cases.
    #[serde(skip)]
    pub blamed: Vec<(String, Finding)>,
    /// Its heat map or rings (`--html`).
    #[serde(skip)]
    pub page: Option<String>,
}

impl Stage {
    fn of_schema(name: StageName, verdict: Verdict, schema: &str, unreachable: Vec<String>) -> Stage {
        Stage {
            name,
            verdict,
            document: serde_json::Value::String(schema.into()),
            unreachable,
            skipped: None,
            error: None,
            seconds: None,
            blamed: Vec::new(),
            page: None,
        }
    }
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
    let lost: Vec<String> = nodes.iter().filter(|n| n.verdict == NodeVerdict::Unreachable).map(|n| n.host.clone()).collect();
    let stages = vec![
        Stage::of_schema(StageName::Check, verdict(check_failed), crate::outcome::CHECK_SCHEMA, lost.clone()),
        Stage::of_schema(StageName::Drift, verdict(drift_failed), SCHEMA, lost),
    ];
    let drain = nodes.iter().filter_map(drain_entry).collect::<Vec<_>>();
    AcceptDoc { schema: SCHEMA, verdict: verdict(!drain.is_empty()), level, nodes, drift, stages, drain }
}

/// Levels 2 and 3: each stage's result added to the document, its findings to their nodes'
/// (a node level 1 could not reach stays `unreachable`), and the verdicts and drain list
/// settled again. A stage that failed with no node to blame fails the run, draining nobody.
pub fn add_stages(doc: &mut AcceptDoc, runs: Vec<StageRun>, fail_on_warning: bool) {
    let fails = |s: Severity| s == Severity::Error || (fail_on_warning && s == Severity::Warning);
    for run in runs {
        for (host, finding) in run.findings.iter().cloned() {
            match doc.nodes.iter_mut().find(|n| n.host == host) {
                Some(node) => node.findings.push(finding),
                None => doc.nodes.push(Node { host, verdict: NodeVerdict::Pass, findings: vec![finding] }),
            }
        }
        doc.stages.push(Stage {
            name: run.name,
            verdict: run.verdict,
            document: run.document,
            unreachable: run.unreachable,
            skipped: run.skipped,
            error: run.error,
            seconds: Some((run.seconds * 10.0).round() / 10.0),
            blamed: run.findings,
            page: run.page,
        });
    }
    for node in doc.nodes.iter_mut().filter(|n| n.verdict != NodeVerdict::Unreachable) {
        node.findings.sort_by_key(|f| f.severity);
        node.verdict = if node.findings.iter().any(|f| fails(f.severity)) { NodeVerdict::Fail } else { NodeVerdict::Pass };
    }
    doc.drain = doc.nodes.iter().filter_map(drain_entry).collect();
    let failed = !doc.drain.is_empty() || doc.stages.iter().any(|s| s.verdict == Verdict::Fail);
    doc.verdict = if failed { Verdict::Fail } else { Verdict::Pass };
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
        let stages: Vec<String> = self
            .stages
            .iter()
            .map(|s| {
                let word = match (&s.skipped, s.verdict) {
                    (Some(_), _) => "skipped",
                    (None, Verdict::Pass) => "pass",
                    (None, Verdict::Fail) => "FAIL",
                };
                format!("{} {word}", s.name)
            })
            .collect();
        for s in &self.stages {
            if let Some(why) = s.skipped.as_deref().or(s.error.as_deref()) {
                let _ = writeln!(out, "\nstage {}: {}", s.name, l(why));
            }
            if !s.unreachable.is_empty() && s.name != StageName::Drift {
                let _ = writeln!(
                    out,
                    "\nstage {}: unreachable: {}",
                    s.name,
                    s.unreachable.iter().map(|h| l(h).into_owned()).collect::<Vec<_>>().join(", ")
                );
            }
        }
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
    fn a_stage_s_findings_join_their_nodes_and_a_stage_that_could_not_run_fails_the_run_draining_nobody() {
        let seen = vec![
            ("a".to_string(), Seen::Checked(vec![])),
            ("b".to_string(), Seen::Checked(vec![])),
            ("c".to_string(), Seen::Unreachable(f(FindingId::AcceptUnreachable, Severity::Error, "node"))),
        ];
        let mut doc = build(2, seen, Vec::new(), Default::default(), false);
        let mut pair = StageRun::skipped(StageName::Pair, "", vec!["c".into()]);
        (pair.skipped, pair.verdict) = (None, Verdict::Fail);
        pair.findings = vec![("b".into(), f(FindingId::PairRail, Severity::Error, "b/mlx5_1"))];
        doc.nodes[1].findings.push(f(FindingId::FwPending, Severity::Info, "mlx5_0"));
        add_stages(&mut doc, vec![pair, StageRun::skipped(StageName::Fabric, "no InfiniBand port", vec!["c".into()])], false);
        let verdicts: Vec<NodeVerdict> = doc.nodes.iter().map(|n| n.verdict).collect();
        assert_eq!(verdicts, [NodeVerdict::Pass, NodeVerdict::Fail, NodeVerdict::Unreachable]);
        assert_eq!(doc.nodes[1].findings[0].id, FindingId::PairRail, "worst first");
        let drain: Vec<(&str, Action)> = doc.drain.iter().map(|d| (d.host.as_str(), d.action)).collect();
        assert_eq!(drain, [("b", Action::ReplaceCable), ("c", Action::Reboot)]);
        assert_eq!(doc.stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["check", "drift", "pair", "fabric"]);
        assert!(doc.stages.iter().all(|s| s.unreachable == ["c"]), "named in every stage");
        assert!(doc.human().contains("stages: check FAIL, drift pass, pair FAIL, fabric skipped"), "{}", doc.human());

        // A stage that could not run, no node to blame: the run fails, nobody is drained for it.
        let mut doc = build(2, vec![("a".to_string(), Seen::Checked(vec![]))], Vec::new(), Default::default(), false);
        add_stages(&mut doc, vec![StageRun::could_not_run(StageName::Pair, "rail counts differ", vec![])], false);
        assert_eq!((doc.verdict, doc.drain.len()), (Verdict::Fail, 0));
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
