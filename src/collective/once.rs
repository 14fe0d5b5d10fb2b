//! One run of the controller: plan the op over the members' rings, have the members run it,
//! read the figures, judge them and blame. Pure but for [`Members`]: the agents and the step
//! model drive it alike; `run` and `bisect` call it once per (sub-)run.

use super::blame::{blame, hop_label, ring_label};
use super::doc::{CollectiveDoc, HopDoc, MemberDoc, RingDoc, SubRun, Total, SCHEMA};
use super::figures::{figures, Figures};
use super::judge::{judge, Criteria, RingJudgment};
use super::member::Member;
use super::members::{Members, RunError};
use super::op::Op;
use super::plan::{plan, PlanRefusal, Ring};
use crate::mesh::analysis::Suspect;
use crate::mesh::topology::Topology;
use crate::outcome::{Finding, FindingId, Severity, Verdict};
use std::time::Duration;

/// How to run and judge.
#[derive(Debug, Clone)]
pub struct Config {
    pub op: Op,
    /// Bytes per member (nccl-tests' S).
    pub size: u64,
    pub iters: u64,
    pub criteria: Criteria,
    pub bisect: bool,
    pub topology: Option<Topology>,
    /// Each run of the plans must end within it.
    pub deadline: Duration,
    /// `--paths N` (RoCE ECMP): every hop carried by N QPs, each its own flow label (1: one QP,
    /// no label, as before).
    pub paths: u32,
}

/// Why a collective gave no result (exit 2).
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    Plan(PlanRefusal),
    Run(RunError),
}

/// One run's judged result.
pub struct Judged {
    pub figures: Figures,
    pub rings: Vec<RingJudgment>,
    pub suspects: Vec<Suspect>,
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
}

/// Runs `rings` (member ids into `members`) once and judges it.
pub fn once(members: &[Member], runner: &mut dyn Members, config: &Config, rings: Vec<Ring>) -> Result<Judged, Stop> {
    let mut planned = plan(config.op, rings, config.size, config.iters).map_err(Stop::Plan)?;
    super::paths::apply(&mut planned, config.paths).map_err(Stop::Plan)?;
    let results = runner.run(&planned.plans, config.deadline).map_err(Stop::Run)?;
    let figures = figures(&planned, members, &results);
    let rings = judge(&planned, members, &figures, &config.criteria);
    let suspects = blame(members, &figures, &rings, &config.criteria, config.topology.as_ref());
    let mut findings = findings(members, &figures, &rings, &suspects, &config.criteria);
    // `--paths`: a path of a hop below half its siblings' median (`pair.path`, its UDP port).
    findings.extend(super::paths::judge(members, &figures));
    // Each member's port counters over the run, judged as `check --soak` judges a window.
    findings.extend(super::counters::judge(members, &results));
    let verdict = if findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    Ok(Judged { figures, rings, suspects, findings, verdict })
}

fn findings(members: &[Member], figures: &Figures, rings: &[RingJudgment], suspects: &[Suspect], criteria: &Criteria) -> Vec<Finding> {
    let mut out = Vec::new();
    for (f, j) in figures.rings.iter().zip(rings) {
        let subject = ring_label(f.rail);
        match j.need_gbps {
            Some(need) if j.below => out.push(Finding::new(
                FindingId::CollectiveBusbw,
                Severity::Error,
                subject.as_str(),
                format!("busbw {:.1} Gb/s over {} members is below {:.1} Gb/s ({})", f.busbw_gbps, f.order.len(), need, j.bar),
                "read the suspects beside it; --bisect isolates the members when none is named",
            )),
            None => out.push(Finding::new(
                FindingId::CollectiveBusbw,
                Severity::Info,
                subject.as_str(),
                format!("busbw {:.1} Gb/s: {}", f.busbw_gbps, j.bar),
                "",
            )),
            _ => {}
        }
        for i in j.slow_hops(criteria.hop_threshold) {
            let h = &f.hops[i];
            let p50 = h.step_us.as_ref().map(|s| format!("step p50 {:.1} us, ", s.p50)).unwrap_or_default();
            out.push(Finding::new(
                FindingId::CollectiveHop,
                Severity::Error,
                hop_label(members, h.from, h.to).as_str(),
                format!("{p50}{:.1} Gb/s: {:.1}x its ring's median hop (threshold {}x)", h.gbps, j.hop_ratio[i], criteria.hop_threshold),
                "run `fabcheck pair` over this hop; the suspects say whether a node, NIC, rail or uplink holds it",
            ));
        }
    }
    for s in suspects {
        let remedy = match s.kind {
            crate::mesh::analysis::SuspectKind::Node => REMEDY_NODE,
            crate::mesh::analysis::SuspectKind::Rail => {
                "check that NIC's (or rail's) cable, optic and leaf port; `fabcheck pair --rails` between two of its hosts"
            }
            crate::mesh::analysis::SuspectKind::Switch | crate::mesh::analysis::SuspectKind::Uplink => {
                "contact the fabric team with the leaf's name: its uplinks or the switch"
            }
            _ => "check the cable of this hop; `fabcheck pair` over it",
        };
        out.push(Finding::new(FindingId::CollectiveSuspect, Severity::Error, s.subject.as_str(), format!("{}: {}", s.kind.name(), s.reason), remedy));
    }
    out
}

pub fn document(members: &[Member], config: &Config, judged: &Judged) -> CollectiveDoc {
    let round = |v: f64| crate::units::round(v, 3);
    let rings = judged
        .figures
        .rings
        .iter()
        .map(|r| RingDoc {
            rail: r.rail,
            order: r.order.iter().map(|m| m.0).collect(),
            algbw_gbps: round(r.algbw_gbps),
            busbw_gbps: round(r.busbw_gbps),
            capacity_gbps: r.capacity_gbps,
            hops: r
                .hops
                .iter()
                .map(|h| HopDoc {
                    from: h.from.0,
                    to: h.to.0,
                    step_us: h.step_us.as_ref().map(|s| s.rounded()),
                    gbps: round(h.gbps),
                    paths: h.paths.iter().map(|p| crate::outcome::paths::PathFigure { gbps: round(p.gbps), ..*p }).collect(),
                })
                .collect(),
        })
        .collect();
    CollectiveDoc {
        schema: SCHEMA.into(),
        verdict: judged.verdict,
        op: config.op,
        size: config.size,
        iters: config.iters,
        members: members
            .iter()
            .map(|m| MemberDoc {
                host: crate::sanitise::one_line(&m.host).into_owned(),
                device: crate::sanitise::one_line(&m.device).into_owned(),
                rail: m.rail,
            })
            .collect(),
        rings,
        total: Total { algbw_gbps: round(judged.figures.algbw_gbps), busbw_gbps: round(judged.figures.busbw_gbps) },
        suspects: judged.suspects.clone(),
        findings: judged.findings.clone(),
        bisect: Vec::new(),
    }
}

/// A sub-run as the document lists it.
pub fn sub_run(members: &[u32], judged: &Judged) -> SubRun {
    let busbw = judged.figures.rings.iter().map(|r| r.busbw_gbps).fold(f64::INFINITY, f64::min);
    SubRun { members: members.to_vec(), busbw_gbps: crate::units::round(if busbw.is_finite() { busbw } else { 0.0 }, 3), verdict: judged.verdict }
}

/// The remedy of a node suspect.
pub const REMEDY_NODE: &str = "run `fabcheck check` on the host and `fabcheck pair` from it to a good host";
