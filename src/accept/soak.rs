//! Level 3's soak window (pure): the whole run, from the fleet's `check` at its start (level 1)
//! to the same `check` again at its end, after the traffic stages loaded every rail. What a node
//! did not have at the start and has at the end (a counter past its bar, a port down, a link
//! flap, a health event) appeared under load: that finding, with its own id and action, is the
//! soak's. A node that answered at the start and not at the end is `accept.unreachable` (lost
//! during the run). Findings it already had at the start are level 1's, not said twice.

use super::config::Answer;
use super::stage::{StageName, StageRun};
use crate::outcome::{Finding, FindingId, Severity, Verdict};
use std::time::Duration;

/// The soak stage from each node's findings at the start and its answer at the end (in the same
/// order, by host).
pub fn judge(before: &[(String, Vec<Finding>)], after: &[(String, Answer)], window: Duration, interrupted: bool, lost: Vec<String>) -> StageRun {
    let mut findings = Vec::new();
    let mut unreachable = lost;
    let mut risen = Vec::new();
    for ((host, had), (_, end)) in before.iter().zip(after) {
        match end {
            Ok((report, _)) => {
                for f in report.findings.iter().filter(|f| f.severity != Severity::Info) {
                    if had.iter().any(|h| h.id == f.id && h.subject == f.subject) {
                        continue;
                    }
                    let mut f = f.clone();
                    f.message = format!("appeared during the soak window ({:.0} s): {}", window.as_secs_f64(), f.message);
                    risen.push(serde_json::json!({"host": host, "id": f.id.as_str(), "subject": f.subject.to_string(), "severity": f.severity}));
                    findings.push((host.clone(), f));
                }
            }
            Err(loss) => {
                let (cause, remedy) = crate::report::loss::words(loss);
                let message = format!("answered check at the start of the soak window, not at its end: {}", crate::sanitise::one_line(&cause));
                findings.push((
                    host.clone(),
                    Finding::new(FindingId::AcceptUnreachable, Severity::Error, crate::outcome::Subject::Node, message, remedy),
                ));
                unreachable.push(host.clone());
            }
        }
    }
    let failed = findings.iter().any(|(_, f)| f.severity == Severity::Error);
    let document = serde_json::json!({
        "window_s": (window.as_secs_f64() * 10.0).round() / 10.0,
        "interrupted": interrupted,
        "nodes": before.len(),
        "risen": risen,
    });
    StageRun {
        name: StageName::Soak,
        verdict: if failed { Verdict::Fail } else { Verdict::Pass },
        document,
        unreachable,
        skipped: None,
        error: interrupted.then(|| "the soak window was interrupted (Ctrl-C): what it saw is judged".to_string()),
        seconds: window.as_secs_f64(),
        findings,
        page: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::loss::{Loss, LossKind};

    fn f(id: FindingId, subject: &str) -> Finding {
        Finding::new(id, Severity::Error, crate::outcome::Subject::Text(subject.into()), "m", "r")
    }

    fn report(findings: Vec<Finding>) -> crate::outcome::Report {
        crate::outcome::Report { verdict: Verdict::Pass, checks: Vec::new(), findings }
    }

    #[test]
    fn only_what_appeared_in_the_window_is_the_soak_s_and_a_node_lost_is_named() {
        let before = vec![("n1".to_string(), vec![f(FindingId::LinkErrors, "mlx5_0/1")]), ("n2".to_string(), vec![]), ("n3".to_string(), vec![])];
        let after: Vec<(String, Answer)> = vec![
            ("n1".into(), Ok((report(vec![f(FindingId::LinkErrors, "mlx5_0/1")]), vec![]))),
            ("n2".into(), Ok((report(vec![f(FindingId::LinkFlap, "mlx5_1/1")]), vec![]))),
            ("n3".into(), Err(Loss::new("n3", LossKind::Protocol("gone".into())))),
        ];
        let run = judge(&before, &after, Duration::from_secs(60), false, vec![]);
        let found: Vec<(&str, FindingId)> = run.findings.iter().map(|(h, f)| (h.as_str(), f.id)).collect();
        assert_eq!(found, [("n2", FindingId::LinkFlap), ("n3", FindingId::AcceptUnreachable)]);
        assert!(run.findings[0].1.message.starts_with("appeared during the soak window (60 s)"));
        assert_eq!(run.unreachable, ["n3"]);
        assert_eq!(run.verdict, Verdict::Fail);
    }
}
