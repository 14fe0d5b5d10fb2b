//! One stage of levels 2 and 3 as the report holds it: its verdict, its own document (mesh's,
//! collective's, fabric's), the nodes it could not reach, and what it found per node. Reading
//! a stage's document for the nodes and rails to blame is here (pure): a suspect naming a host
//! or a rail (`HOST/DEV`) is a finding on that host; a pair that could not run is a finding on
//! the end its error names (both ends when it names neither).

use crate::outcome::{Finding, FindingId, Severity, Verdict};
use crate::sanitise::one_line;
use serde::Serialize;
use serde_json::Value;

/// A stage's name as the report writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageName {
    Check,
    Drift,
    Pair,
    Fabric,
    Mesh,
    CollectiveAllreduce,
    CollectiveAlltoall,
    Soak,
}

impl StageName {
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Check => "check",
            StageName::Drift => "drift",
            StageName::Pair => "pair",
            StageName::Fabric => "fabric",
            StageName::Mesh => "mesh",
            StageName::CollectiveAllreduce => "collective-allreduce",
            StageName::CollectiveAlltoall => "collective-alltoall",
            StageName::Soak => "soak",
        }
    }
}

impl std::fmt::Display for StageName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stage run (or skipped): what the report says of it, and its findings per node.
#[derive(Debug, Clone)]
pub struct StageRun {
    pub name: StageName,
    pub verdict: Verdict,
    /// The stage's own document (`fabcheck.mesh.v1`, ...); a schema name where the stage's
    /// results are elsewhere in the report (check, drift), or where it did not run.
    pub document: Value,
    /// Nodes the stage could not reach or ask (level 1's unreachable ones included): named, never
    /// dropped.
    pub unreachable: Vec<String>,
    /// Why it did not run (not a failure: `fabric` without an InfiniBand port here).
    pub skipped: Option<String>,
    /// Why it could not run at all (a failure of the stage, no node to blame).
    pub error: Option<String>,
    pub seconds: f64,
    /// Findings on nodes, by the host the report names.
    pub findings: Vec<(String, Finding)>,
    /// The stage's own page (mesh's heat map, collective's rings), for `--html`.
    pub page: Option<String>,
}

impl StageRun {
    pub fn skipped(name: StageName, why: impl Into<String>, unreachable: Vec<String>) -> StageRun {
        StageRun {
            name,
            verdict: Verdict::Pass,
            document: Value::Null,
            unreachable,
            skipped: Some(why.into()),
            error: None,
            seconds: 0.0,
            findings: Vec::new(),
            page: None,
        }
    }

    pub fn could_not_run(name: StageName, why: impl Into<String>, unreachable: Vec<String>) -> StageRun {
        StageRun { verdict: Verdict::Fail, skipped: None, error: Some(why.into()), ..StageRun::skipped(name, "", unreachable) }
    }
}

/// The names a stage may use for a node (its endpoint as given, the host its agent said) and
/// the host the report names it by.
#[derive(Debug, Clone, Default)]
pub struct Aliases {
    /// (alias, host), longest alias first.
    names: Vec<(String, String)>,
}

impl Aliases {
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Aliases {
        let mut names: Vec<(String, String)> = pairs.into_iter().filter(|(a, _)| !a.is_empty()).collect();
        names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        names.dedup();
        Aliases { names }
    }

    /// The host of a subject: a node (`HOST`), a rail (`HOST/DEV`, `HOST/DEV:PORT`, `HOST/rail
    /// K`) or a pair end, whichever alias it starts with.
    pub fn host_of(&self, subject: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(alias, _)| {
                subject == alias || subject.strip_prefix(alias.as_str()).is_some_and(|rest| rest.starts_with('/') || rest.starts_with('#'))
            })
            .map(|(_, host)| host.as_str())
    }
}

/// The findings of a pair-based stage (`pair` ring, `mesh` shift: `fabcheck.mesh.v1`) and of a
/// collective (`fabcheck.collective.v1`), per host: each suspect on the hosts it names, each
/// pair that could not run on the end its error names. `what` says the stage in the message.
pub fn findings_of(doc: &Value, aliases: &Aliases, what: &str) -> Vec<(String, Finding)> {
    let mut out: Vec<(String, Finding)> = Vec::new();
    // Pairs that could not run: the end the error names (the other end was fine).
    let mut explained: Vec<(String, String)> = Vec::new();
    for p in doc["pairs"].as_array().into_iter().flatten().filter(|p| p["verdict"] == "fail" && p["error"].is_string()) {
        let (a, b, error) = (p["a"].as_str().unwrap_or(""), p["b"].as_str().unwrap_or(""), p["error"].as_str().unwrap_or(""));
        if p["retest"] != true && doc["pairs"].as_array().into_iter().flatten().any(|r| r["retest"] == true && r["a"] == a && r["b"] == b) {
            continue; // its retest stands for it
        }
        let names_a = error.contains(a) && !a.is_empty();
        let names_b = error.contains(b) && !b.is_empty();
        let ends: Vec<&str> = match (names_a, names_b) {
            (true, false) => vec![a],
            (false, true) => vec![b],
            _ => vec![a, b],
        };
        let rail = p["rail"].as_u64().map(|k| format!(" rail {k}")).unwrap_or_default();
        for end in ends {
            let Some(host) = aliases.host_of(end) else { continue };
            let message = format!("{what}: {a} <-> {b}{rail} could not run: {}", one_line(error));
            push(
                &mut out,
                host,
                Finding::new(
                    FindingId::PairRail,
                    Severity::Error,
                    end,
                    message,
                    "see the stage's document in the report; fix the named port, then rerun",
                ),
            );
        }
        explained.push((a.to_string(), b.to_string()));
    }
    for s in doc["suspects"].as_array().into_iter().flatten() {
        let (kind, subject, reason) = (s["kind"].as_str().unwrap_or(""), s["subject"].as_str().unwrap_or(""), s["reason"].as_str().unwrap_or(""));
        let severity = if s["severity"] == "warning" { Severity::Warning } else { Severity::Error };
        let ends: Vec<&str> = if kind == "link" { subject.split("<->").collect() } else { vec![subject] };
        // A link whose pair could not run is said already, on the end its error named.
        if kind == "link" && ends.len() == 2 && explained.iter().any(|(a, b)| (a == ends[0] && b == ends[1]) || (a == ends[1] && b == ends[0])) {
            continue;
        }
        let id = match kind {
            "rail" => FindingId::PairRail,
            _ if what.starts_with("collective") => FindingId::CollectiveSuspect,
            _ => FindingId::MeshSuspect,
        };
        let mut hosts: Vec<&str> = ends.iter().filter_map(|e| aliases.host_of(e.trim())).collect();
        hosts.dedup();
        for host in hosts {
            let finding = Finding::new(
                id,
                severity,
                subject,
                format!("{what}: {kind} {subject}: {}", one_line(reason)),
                "see the stage's document in the report: the suspect's pairs and figures",
            );
            push(&mut out, host, finding);
        }
    }
    out
}

fn push(out: &mut Vec<(String, Finding)>, host: &str, f: Finding) {
    if !out.iter().any(|(h, g)| h == host && g.id == f.id && g.subject == f.subject) {
        out.push((host.to_string(), f));
    }
}

/// The endpoints a stage's document lists as unreachable, as the report names their hosts.
pub fn unreachable_of(doc: &Value, aliases: &Aliases) -> Vec<String> {
    let mut hosts: Vec<String> = doc["unreachable"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u["endpoint"].as_str())
        .map(|e| aliases.host_of(e).map_or_else(|| one_line(e).into_owned(), str::to_string))
        .collect();
    hosts.dedup();
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn aliases() -> Aliases {
        Aliases::new([
            ("tcp://127.0.0.1:7001".to_string(), "n1".to_string()),
            ("n1".into(), "n1".into()),
            ("n2".into(), "n2".into()),
            ("n12".into(), "n12".into()),
        ])
    }

    #[test]
    fn a_subject_is_its_longest_alias_s_host() {
        let a = aliases();
        assert_eq!(a.host_of("n1/mlx5_3"), Some("n1"));
        assert_eq!(a.host_of("n12/mlx5_3:2"), Some("n12"));
        assert_eq!(a.host_of("tcp://127.0.0.1:7001/rail 1"), Some("n1"));
        assert_eq!(a.host_of("n3"), None);
    }

    #[test]
    fn a_rail_suspect_is_its_host_s_and_a_pair_that_could_not_run_is_the_end_its_error_names() {
        let doc = json!({
            "pairs": [
                {"a": "n1/rxe1", "b": "n2/rxe1", "verdict": "fail", "rail": 1, "error": "n2/rxe1: port 1 is DOWN (bring the link up)"},
                {"a": "n1/rxe0", "b": "n2/rxe0", "verdict": "pass", "rail": 0}
            ],
            "suspects": [
                {"kind": "link", "subject": "n1/rxe1<->n2/rxe1", "reason": "failed", "severity": "error"},
                {"kind": "rail", "subject": "n12/mlx5_3", "reason": "slow", "severity": "error"}
            ]
        });
        let found: Vec<(String, FindingId, String)> =
            findings_of(&doc, &aliases(), "pair ring").into_iter().map(|(h, f)| (h, f.id, f.subject.to_string())).collect();
        assert_eq!(
            found,
            [("n2".to_string(), FindingId::PairRail, "n2/rxe1".to_string()), ("n12".to_string(), FindingId::PairRail, "n12/mlx5_3".to_string())]
        );
    }

    #[test]
    fn a_link_suspect_is_on_both_hosts_and_the_unreachable_are_named() {
        let doc = json!({"pairs": [], "suspects": [{"kind": "link", "subject": "n1<->n2", "reason": "slow"}],
            "unreachable": [{"endpoint": "tcp://127.0.0.1:7001/rail 0", "error": "x"}, {"endpoint": "tcp://10.0.0.9:1", "error": "y"}]});
        let hosts: Vec<String> = findings_of(&doc, &aliases(), "mesh").into_iter().map(|(h, _)| h).collect();
        assert_eq!(hosts, ["n1", "n2"]);
        assert_eq!(unreachable_of(&doc, &aliases()), ["n1", "tcp://10.0.0.9:1"]);
    }
}
