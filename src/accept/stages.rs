//! Levels 2 and 3's traffic stages over the nodes level 1 reached, each through its command's
//! library (no child fabcheck): `pair --rails` between ring neighbours and `mesh --pattern
//! shift` are `mesh::run` (rails, ring and shift patterns are mesh's), the collectives are
//! `collective::run` over `collective::agents`. Each stage's document is kept whole in the
//! report, and read ([`stage::findings_of`]) for the nodes and rails to blame. The nodes level 1
//! could not reach are named unreachable in every stage; every wait is bounded by the stage's
//! own deadline.

use super::config::{AcceptConfig, Progress};
use super::stage::{self, Aliases, StageName, StageRun};
use crate::collective::op::Op;
use crate::mesh::pattern::Pattern;
use crate::mesh::MeshConfig;
use crate::model::TestKind;
use crate::outcome::Verdict;
use crate::pair::plan::{self, PlanInput};
use crate::report::{Document, Stamp};
use std::time::{Duration, Instant};

/// What every stage is given: the nodes level 1 reached (indexes into the config's specs), how
/// the report names them, and those it could not reach.
pub struct Fleet<'a> {
    pub config: &'a AcceptConfig,
    pub reached: Vec<usize>,
    pub aliases: Aliases,
    pub lost: Vec<String>,
}

impl Fleet<'_> {
    fn lost_and(&self, more: Vec<String>) -> Vec<String> {
        let mut all = self.lost.clone();
        all.extend(more.into_iter().filter(|h| !self.lost.contains(h)));
        all
    }
}

/// `pair --rails` between neighbours of a ring of the nodes (level 2), or `mesh --pattern shift`
/// over every rail (level 3): one mesh run, its document, its heat map.
pub fn mesh_stage(fleet: &Fleet<'_>, name: StageName, pattern: Pattern, duration: Option<Duration>, progress: &mut dyn Progress) -> StageRun {
    let started = Instant::now();
    if fleet.reached.len() < 2 {
        return StageRun::skipped(name, "fewer than two nodes answered level 1: no pair to run", fleet.lost.clone());
    }
    let config = match mesh_config(fleet, pattern, duration) {
        Ok(c) => c,
        Err(why) => return StageRun::could_not_run(name, why, fleet.lost.clone()),
    };
    let mut rounds = RoundProgress { progress, stage: name.as_str() };
    let run = match crate::mesh::run(config, &mut crate::control::agents::HubAgents::new(fleet.config.launch.clone()), &mut rounds) {
        Ok(run) => run,
        Err(failure) => return StageRun::could_not_run(name, format!("{} ({})", failure.cause, failure.remedy), fleet.lost.clone()),
    };
    let mut bytes = Vec::new();
    let stamp = Stamp::now();
    if let Err(e) = run.report.write_json(&mut bytes, &stamp, None) {
        return StageRun::could_not_run(name, format!("its document could not be written: {e}"), fleet.lost.clone());
    }
    let document: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    let what = if name == StageName::Pair { "pair --rails (ring)" } else { "mesh --pattern shift" };
    let unreachable = fleet.lost_and(stage::unreachable_of(&document, &fleet.aliases));
    let findings = stage::findings_of(&document, &fleet.aliases, what);
    let error = run.could_not_run.map(|f| format!("{} ({})", f.cause, f.remedy));
    let verdict = if error.is_some() { Verdict::Fail } else { run.report.doc.verdict };
    StageRun {
        name,
        verdict,
        document,
        unreachable,
        skipped: None,
        error,
        seconds: started.elapsed().as_secs_f64(),
        findings,
        page: run.html.map(|h| String::from_utf8_lossy(&h.bytes).into_owned()),
    }
}

/// The mesh a stage runs: the reached nodes as hosts, tested rail by rail (`--rails`), one
/// bandwidth and one latency test per pair; `duration` each test's time (level 3), else
/// pair's default iterations.
fn mesh_config(fleet: &Fleet<'_>, pattern: Pattern, duration: Option<Duration>) -> Result<MeshConfig, String> {
    let c = fleet.config;
    let duration_ms = duration.map(|d| d.as_millis().clamp(1000, u128::from(u32::MAX)) as u64);
    let plan = plan::build(&PlanInput {
        tests: TestKind::parse_list("write_bw,send_lat").map_err(|e| e.to_string())?,
        size: None,
        sweep: false,
        iters: if duration_ms.is_some() { None } else { c.iters },
        duration_ms,
        qps: 1,
        directions: None,
        stall_timeout_ms: c.stall_timeout_ms,
    })?;
    let specs: Vec<_> = fleet.reached.iter().map(|&i| c.specs[i].clone()).collect();
    let names: Vec<String> = fleet.reached.iter().map(|&i| c.names[i].clone()).collect();
    Ok(MeshConfig {
        specs,
        names,
        plan,
        pair_criteria: crate::pair::verdict::Criteria {
            bw_fraction: 0.9,
            max_lat_us: None,
            expect: Default::default(),
            load_threshold: crate::pair::loaded::DEFAULT_THRESHOLD,
        },
        gid_index: c.gid_index,
        conditions: Default::default(),
        timeout: c.check_limit.saturating_add(Duration::from_millis(duration_ms.unwrap_or(0))),
        fanout: c.window,
        // Never written: the page's bytes are the report's heat map.
        html: Some(std::path::PathBuf::from("accept-stage.html")),
        csv: None,
        json: true,
        quiet: true,
        pattern: Some(pattern),
        rounds: None,
        seed: Some(0),
        topology: None,
        intra_leaf: false,
        rails: Some(c.rails.clone()),
        planes: None,
        live: None,
    })
}

/// Mesh's round events as the accept status line: the stage, rounds done, ETA.
struct RoundProgress<'a> {
    progress: &'a mut dyn Progress,
    stage: &'static str,
}

impl crate::progress::Progress for RoundProgress<'_> {
    fn event(&mut self, event: &crate::progress::Event<'_>) {
        match event {
            crate::progress::Event::Round { round, rounds, .. } => self.progress.step(self.stage, *round, *rounds, "rounds"),
            crate::progress::Event::Reached { reached, total } => self.progress.step(self.stage, *reached, *total, "agents reached"),
            _ => {}
        }
    }
}

/// `collective --op OP` over every rail of the reached nodes for `budget` (the members are told
/// to stop then; its deadline: twice that, plus the agents' timeout).
pub fn collective_stage(fleet: &Fleet<'_>, op: Op, budget: Duration, progress: &mut dyn Progress) -> StageRun {
    let name = if op == Op::AllToAll { StageName::CollectiveAlltoall } else { StageName::CollectiveAllreduce };
    let started = Instant::now();
    if fleet.reached.len() < 2 {
        return StageRun::skipped(name, "fewer than two nodes answered level 1: no collective to run", fleet.lost.clone());
    }
    progress.step(name.as_str(), 0, 1, "runs");
    let c = fleet.config;
    let specs: Vec<_> = fleet.reached.iter().map(|&i| c.specs[i].clone()).collect();
    let options = crate::collective::agents::ReachOptions {
        launch: c.launch.clone(),
        token: c.launch.token.clone(),
        mem: Default::default(),
        connect_timeout: c.launch.connect_timeout,
    };
    let lost = |error: &crate::collective::RunError, members: &[crate::collective::Member]| -> StageRun {
        let (who, cause) = run_error_words(error, members);
        let mut run = StageRun::could_not_run(name, cause.clone(), fleet.lost.clone());
        if let Some(host) = who.as_deref().and_then(|w| fleet.aliases.host_of(w)) {
            let finding = crate::outcome::Finding::new(
                crate::outcome::FindingId::CollectiveSuspect,
                crate::outcome::Severity::Error,
                who.clone().unwrap_or_default(),
                format!("collective {}: could not run: {cause}", op),
                "see the stage's error in the report; fix that node, then rerun",
            );
            run.findings.push((host.to_string(), finding));
        }
        run.seconds = started.elapsed().as_secs_f64();
        run
    };
    let (members, mut runner) = match crate::collective::agents::reach(&specs, Some(&c.rails), &options) {
        Ok(reached) => reached,
        Err(e) => return lost(&e, &[]),
    };
    runner.stop_after(budget);
    let config = crate::collective::run::Config {
        op,
        size: 64 << 20,
        iters: crate::collective::plan::iterations_within(op, &members, 64 << 20, budget.as_secs_f64()),
        criteria: crate::collective::judge::Criteria::default(),
        bisect: false,
        topology: None,
        deadline: c.check_limit.saturating_add(budget.saturating_mul(2)),
        paths: 1,
    };
    let doc = match crate::collective::run::run(&members, &mut runner, &config) {
        Ok(doc) => doc,
        Err(crate::collective::run::Stop::Run(e)) => return lost(&e, &members),
        Err(crate::collective::run::Stop::Plan(refusal)) => {
            return StageRun::could_not_run(name, format!("no plan: {refusal}"), fleet.lost.clone());
        }
    };
    progress.step(name.as_str(), 1, 1, "runs");
    let document = serde_json::to_value(&doc).unwrap_or(serde_json::Value::Null);
    let findings = stage::findings_of(&document, &fleet.aliases, &format!("collective {}", op));
    StageRun {
        name,
        verdict: doc.verdict,
        page: Some(crate::collective::html::render(&doc, &Stamp::now())),
        document,
        unreachable: fleet.lost.clone(),
        skipped: None,
        error: None,
        seconds: started.elapsed().as_secs_f64(),
        findings,
    }
}

/// A collective that gave no result: the member it names (`HOST/DEV`) and the cause.
fn run_error_words(error: &crate::collective::RunError, members: &[crate::collective::Member]) -> (Option<String>, String) {
    use crate::collective::RunError;
    let name = |m: crate::model::collective::MemberId| members.get(m.0 as usize).map(crate::collective::blame::label);
    match error {
        RunError::Lost { member, loss } => {
            let (cause, remedy) = crate::report::loss::words(loss);
            (name(*member).or_else(|| Some(loss.agent.clone())), format!("{} ({})", crate::sanitise::one_line(&cause), remedy))
        }
        RunError::Failed { member, cause, remedy } => {
            (name(*member), format!("{} ({})", crate::sanitise::one_line(cause), crate::sanitise::one_line(remedy)))
        }
    }
}
