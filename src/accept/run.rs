//! The run over the fleet. Level 1: every node's `check` through its agent (mesh's endpoints
//! and launchers: ssh, srun, tcp), `window` nodes at a time from one thread, each step bounded;
//! then the drift over the nodes that answered. Levels 2 and 3: the stages (`stages`,
//! `fabric_stage`, `soak`) over the nodes level 1 reached, then the report. A node that cannot
//! be reached is `unreachable` in the report and in every stage, never dropped.

use super::drift::{self, NodeFacts};
use super::report::{self, AcceptDoc, NodeVerdict, Seen};
use super::stage::{Aliases, StageName, StageRun};
use super::stages::{self, Fleet};
use super::talk::CheckTalk;
use crate::collective::op::Op;
use crate::control::drive::{drive, Job};
use crate::control::hub::Hub;
use crate::control::reach::token_for;
use crate::mesh::pattern::Pattern;
use crate::outcome::loss::Loss;
use crate::outcome::{Finding, FindingId, Severity, Subject};
use crate::sanitise::one_line;
use std::time::{Duration, Instant};

pub use super::config::{AcceptConfig, Answer, Progress};

/// The run at its level: the document, or `Err` on Ctrl-C during level 1 (the agents are
/// stopped first). Levels 2 and 3 run their stages over the nodes level 1 reached.
pub fn run(config: &AcceptConfig, progress: &mut dyn Progress) -> Result<AcceptDoc, Loss> {
    let started = Instant::now();
    let all: Vec<usize> = (0..config.specs.len()).collect();
    let answers = ask(config, &all, "check", progress)?;
    let mut doc = judge(answers, config.fail_on_warning);
    doc.level = config.level;
    let reached: Vec<usize> = (0..doc.nodes.len()).filter(|&i| doc.nodes[i].verdict != NodeVerdict::Unreachable).collect();
    if config.level < 2 || reached.is_empty() {
        return Ok(doc);
    }
    let checked_in = started.elapsed();
    let fleet = Fleet {
        config,
        reached: reached.clone(),
        aliases: aliases(config, &doc),
        lost: doc.nodes.iter().filter(|n| n.verdict == NodeVerdict::Unreachable).map(|n| n.host.clone()).collect(),
    };
    // After Ctrl-C, the stages not begun are said, not run.
    let stopped = |name: StageName| {
        crate::sys::os::interrupted().then(|| StageRun::could_not_run(name, "not run: the run was interrupted (Ctrl-C)", fleet.lost.clone()))
    };
    let mut stages = vec![stages::mesh_stage(&fleet, StageName::Pair, Pattern::Ring, None, progress)];
    progress.step("fabric", 0, 1, "discoveries");
    stages.push(stopped(StageName::Fabric).unwrap_or_else(|| super::fabric_stage::run(&fleet.aliases, fleet.lost.clone())));
    if config.level >= 3 {
        let budget = super::budget::Budget::split(config.duration, reached.len());
        let shift = stopped(StageName::Mesh);
        stages.push(shift.unwrap_or_else(|| stages::mesh_stage(&fleet, StageName::Mesh, Pattern::Shift, Some(budget.mesh_test), progress)));
        for op in [Op::AllReduce, Op::AllToAll] {
            let name = if op == Op::AllToAll { StageName::CollectiveAlltoall } else { StageName::CollectiveAllreduce };
            stages.push(stopped(name).unwrap_or_else(|| stages::collective_stage(&fleet, op, budget.collective, progress)));
        }
        // The soak window's rest: the end check is due when the duration is up, less the time
        // the first one took.
        let end = started + config.duration.saturating_sub(checked_in);
        let interrupted = wait_until(end, started, config.duration, progress);
        let before: Vec<(String, Vec<Finding>)> = reached.iter().map(|&i| (doc.nodes[i].host.clone(), doc.nodes[i].findings.clone())).collect();
        let indexes: Vec<usize> = reached.clone();
        let after = ask(config, &indexes, "soak", progress).unwrap_or_default();
        let after: Vec<(String, Answer)> = before.iter().map(|(h, _)| h.clone()).zip(after.into_iter().map(|(_, a)| a)).collect();
        stages.push(super::soak::judge(&before, &after, started.elapsed(), interrupted, fleet.lost.clone()));
    }
    report::add_stages(&mut doc, stages, config.fail_on_warning);
    Ok(doc)
}

/// Waits for `end` (Ctrl-C ends it early: true), saying the soak window's time.
fn wait_until(end: Instant, started: Instant, total: Duration, progress: &mut dyn Progress) -> bool {
    crate::sys::os::catch_termination();
    let mut said = Instant::now().checked_sub(Duration::from_secs(2)).unwrap_or_else(Instant::now);
    while Instant::now() < end {
        if crate::sys::os::interrupted() {
            return true;
        }
        if said.elapsed() >= Duration::from_secs(1) {
            said = Instant::now();
            progress.step("soak", started.elapsed().as_secs() as usize, total.as_secs() as usize, "s of the window");
        }
        std::thread::sleep(Duration::from_millis(100).min(end.saturating_duration_since(Instant::now())));
    }
    false
}

/// How the stages may name a node (its endpoint as given, its host part, the host its agent
/// said) and the host the report names it by.
fn aliases(config: &AcceptConfig, doc: &AcceptDoc) -> Aliases {
    let mut pairs = Vec::new();
    for (i, node) in doc.nodes.iter().enumerate() {
        let spec = &config.specs[i];
        let mut names = vec![config.names[i].clone(), spec.to_string(), spec.host.to_string(), node.host.clone()];
        if let crate::control::endpoint::HostSpec::Ssh { host, .. } | crate::control::endpoint::HostSpec::Tcp { host, .. } = &spec.host {
            names.push(host.clone());
        }
        pairs.extend(names.into_iter().map(|n| (n, node.host.clone())));
    }
    Aliases::new(pairs)
}

/// Each node's `check` through its agent, `window` at a time from one thread: the answers (or
/// losses) in the order of `which`, named by endpoint.
fn ask(config: &AcceptConfig, which: &[usize], stage: &str, progress: &mut dyn Progress) -> Result<Vec<(String, Answer)>, Loss> {
    let mut hub = Hub::new(config.launch.clone());
    let mut jobs: Vec<Job<CheckTalk>> = which
        .iter()
        .map(|&i| {
            let (spec, name) = (&config.specs[i], &config.names[i]);
            let link = hub.add(&spec.host, name.clone());
            Job { links: vec![link], conversation: CheckTalk::new(name, token_for(&spec.host, &config.launch.token), config.check_limit) }
        })
        .collect();
    let total = jobs.len();
    let chunk = config.window.max(1);
    progress.nodes(stage, 0, total);
    for start in (0..total).step_by(chunk) {
        let end = (start + chunk).min(total);
        if let Err(interrupted) = drive(&mut hub, &mut jobs[start..end], chunk) {
            hub.close_all();
            return Err(interrupted);
        }
        progress.nodes(stage, end, total);
    }
    hub.close_all();
    Ok(jobs
        .into_iter()
        .zip(which)
        .map(|(job, &i)| {
            let name = &config.names[i];
            let t = job.conversation;
            let host = reported_host(&t.host, name);
            let answer = match (t.answer, t.failure) {
                (Some(a), _) => Ok(a),
                (None, Some(loss)) => Err(loss),
                (None, None) => Err(Loss::new(name.clone(), crate::outcome::loss::LossKind::Protocol("no answer".into()))),
            };
            (host, answer)
        })
        .collect())
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
