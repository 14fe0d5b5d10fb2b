//! Level 1 over the fleet: every node's `check` through its agent (mesh's endpoints and
//! launchers: ssh, srun, tcp), `window` nodes at a time from one thread, each step bounded;
//! then the drift over the nodes that answered, and the report. A node that cannot be reached
//! is `unreachable` in the report, never dropped.

use super::drift::{self, NodeFacts};
use super::report::{self, AcceptDoc, Seen};
use super::talk::CheckTalk;
use crate::control::drive::{drive, Job};
use crate::control::endpoint::EndpointSpec;
use crate::control::hub::Hub;
use crate::control::link::LaunchOptions;
use crate::control::reach::token_for;
use crate::outcome::loss::Loss;
use crate::outcome::{Finding, FindingId, Severity, Subject};
use crate::probe::facts::Fact;
use crate::sanitise::one_line;
use std::time::Duration;

/// One node's answer: its judged checklist and drift facts, or why it could not be had.
pub type Answer = Result<(crate::outcome::Report, Vec<Fact>), Loss>;

pub struct AcceptConfig {
    pub specs: Vec<EndpointSpec>,
    /// Each endpoint's name in the report until its agent says its host (`unique_names`).
    pub names: Vec<String>,
    pub launch: LaunchOptions,
    /// How long one node's read and judgement may take.
    pub check_limit: Duration,
    /// Nodes asked at once.
    pub window: usize,
    /// `--fail-on warning`: a node with a warning fails (and is drained).
    pub fail_on_warning: bool,
}

/// How far the run is: the stage and the nodes done of all (on a terminal, one status line).
pub trait Progress {
    fn nodes(&mut self, stage: &str, done: usize, of: usize);
}

/// Level 1: the document, or `Err` on Ctrl-C (the agents are stopped first).
pub fn level1(config: &AcceptConfig, progress: &mut dyn Progress) -> Result<AcceptDoc, Loss> {
    let fail_on_warning = config.fail_on_warning;
    let mut hub = Hub::new(config.launch.clone());
    let mut jobs: Vec<Job<CheckTalk>> = config
        .specs
        .iter()
        .zip(&config.names)
        .map(|(spec, name)| {
            let link = hub.add(&spec.host, name.clone());
            Job { links: vec![link], conversation: CheckTalk::new(name, token_for(&spec.host, &config.launch.token), config.check_limit) }
        })
        .collect();
    let total = jobs.len();
    let chunk = config.window.max(1);
    progress.nodes("check", 0, total);
    for start in (0..total).step_by(chunk) {
        let end = (start + chunk).min(total);
        if let Err(interrupted) = drive(&mut hub, &mut jobs[start..end], chunk) {
            hub.close_all();
            return Err(interrupted);
        }
        progress.nodes("check", end, total);
    }
    hub.close_all();
    progress.nodes("drift", total, total);
    let answers: Vec<(String, Answer)> = jobs
        .into_iter()
        .zip(&config.names)
        .map(|(job, name)| {
            let t = job.conversation;
            let host = reported_host(&t.host, name);
            let answer = match (t.answer, t.failure) {
                (Some(a), _) => Ok(a),
                (None, Some(loss)) => Err(loss),
                (None, None) => Err(Loss::new(name.clone(), crate::outcome::loss::LossKind::Protocol("no answer".into()))),
            };
            (host, answer)
        })
        .collect();
    Ok(judge(answers, fail_on_warning))
}

/// The name a node has in the report: the host its agent says (sanitised, and only a plain host
/// name), else the endpoint as given.
fn reported_host(said: &str, endpoint: &str) -> String {
    if !said.is_empty() && crate::probe::bundle::valid_host(said) {
        said.to_string()
    } else {
        one_line(endpoint).into_owned()
    }
}

/// The answers (or losses) of every node, in order, judged: each node's checklist, the drift over
/// the nodes that answered, the drain list. Two endpoints that say the same host keep both
/// (the second is `HOST#2`), so no node hides another.
pub fn judge(answers: Vec<(String, Answer)>, fail_on_warning: bool) -> AcceptDoc {
    let mut seen_names = std::collections::BTreeMap::<String, usize>::new();
    let answers: Vec<_> = answers
        .into_iter()
        .map(|(host, a)| {
            let n = seen_names.entry(host.clone()).or_insert(0);
            *n += 1;
            (if *n > 1 { format!("{host}#{n}") } else { host }, a)
        })
        .collect();
    let facts: Vec<NodeFacts<'_>> =
        answers.iter().filter_map(|(host, a)| a.as_ref().ok().map(|(_, facts)| NodeFacts { host: host.as_str(), facts: facts.as_slice() })).collect();
    let (drifts, drift_findings) = drift::judge(&facts);
    let seen = answers
        .iter()
        .map(|(host, a)| {
            let seen = match a {
                Ok((report, _)) => Seen::Checked(report.findings.clone()),
                Err(loss) => Seen::Unreachable(unreachable(loss)),
            };
            (host.clone(), seen)
        })
        .collect();
    report::build(1, seen, drifts, drift_findings, fail_on_warning)
}

fn unreachable(loss: &Loss) -> Finding {
    let (cause, remedy) = crate::report::loss::words(loss);
    Finding::new(FindingId::AcceptUnreachable, Severity::Error, Subject::Node, one_line(&cause).into_owned(), one_line(&remedy).into_owned())
}
