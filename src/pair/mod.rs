//! `fabcheck pair A B`: RC latency and bandwidth between two endpoints, with a verdict.
//!
//! The controller (this process) starts or reaches two agents, relays their endpoints
//! (LID, QPN, PSN, GID, rkey, address: out of band, so no IPoIB is needed), starts the
//! passive side before the active one, collects results and judges them. The test sequence
//! is a pure state machine (`sequence`) driven over the one-thread hub, as `mesh` drives it
//! for every pair of a round.

pub mod plan;
pub mod report;
pub mod sequence;
pub mod verdict;

use crate::control::drive::{drive, Job};
use crate::control::endpoint::EndpointSpec;
use crate::control::hub::Hub;
use crate::control::link::LaunchOptions;
use crate::control::protocol::{CmRole, Endpoint, Target};
use crate::control::reach::{reach_all, token_for};
use crate::error::{Failure, Outcome};
use crate::spec::Conditions;
use plan::PlannedTest;
use report::{PairDoc, Side};
use sequence::PairSequence;
use std::time::Duration;

/// A pair run, validated: everything `run` needs, no flags.
#[derive(Debug, Clone)]
pub struct PairConfig {
    pub endpoints: [EndpointSpec; 2],
    pub plan: Vec<PlannedTest>,
    pub launch: LaunchOptions,
    pub criteria: verdict::Criteria,
    pub gid_index: Option<u8>,
    pub cm: bool,
    pub conditions: Conditions,
    /// Where each agent's measured loop runs (`--cpu`).
    pub cpu: CpuChoice,
    pub test_timeout: Duration,
    pub json: bool,
}

/// `pair --cpu`: which CPU each end's measured loop is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuChoice {
    /// Each agent picks a CPU near its adapter; two ends on one host get distinct CPUs.
    #[default]
    Auto,
    /// Not pinned: where the scheduler puts it.
    Off,
    /// Endpoint A's loop on the first, B's on the second.
    Pin([u16; 2]),
}

impl CpuChoice {
    /// `auto`, `none`, `N` (both ends, each on its own host) or `A,B`.
    pub fn parse(text: &str) -> Result<CpuChoice, String> {
        let cpu = |s: &str| s.trim().parse::<u16>().map_err(|_| format!("--cpu '{text}': '{s}' is not a CPU number"));
        match text.trim() {
            "auto" => Ok(CpuChoice::Auto),
            "none" | "off" => Ok(CpuChoice::Off),
            t => match t.split_once(',') {
                Some((a, b)) => Ok(CpuChoice::Pin([cpu(a)?, cpu(b)?])),
                None => {
                    let n = cpu(t)?;
                    Ok(CpuChoice::Pin([n, n]))
                }
            },
        }
    }

    /// The placement asked of side `side` (0 = A), in its target.
    pub fn apply(self, target: &mut Target, side: usize, same_host: bool) {
        (target.conditions.cpu, target.cpu_slot) = match self {
            CpuChoice::Auto => (None, Some(if same_host { side as u8 } else { 0 })),
            CpuChoice::Off => (None, None),
            CpuChoice::Pin(cpus) => (Some(cpus[side]), None),
        };
    }
}

pub fn run(config: PairConfig) -> Result<Outcome, Failure> {
    crate::sys::os::catch_termination();
    let mut hub = Hub::new(config.launch.clone());
    let labels = config.endpoints.clone().map(|e| e.host.to_string());
    let links = [hub.add(&config.endpoints[0].host, labels[0].clone()), hub.add(&config.endpoints[1].host, labels[1].clone())];
    // Both agents are reached at once; the first that cannot be is the error.
    let tokens = config.endpoints.clone().map(|e| token_for(&e.host, &config.launch.token));
    let reached = reach_all(&mut hub, &links, &labels, &tokens, false, 2)?;
    let same_host = reached[0].host == reached[1].host;
    if let Some(f) = reached.into_iter().find_map(|r| r.failure) {
        return Err(f);
    }
    let roles = [CmRole::Connect, CmRole::Listen];
    let targets = [0, 1].map(|i| {
        let mut t = target(&config.endpoints[i], config.gid_index, config.cm.then_some(roles[i]), config.conditions);
        config.cpu.apply(&mut t, i, same_host);
        t
    });
    let sequence = PairSequence::new(config.plan.clone(), targets, labels, config.test_timeout);
    let mut jobs = [Job { links: links.to_vec(), conversation: sequence }];
    drive(&mut hub, &mut jobs, 1)?;
    hub.close_all();
    let [Job { conversation: done, .. }] = jobs;
    if let Some(f) = done.could_not_run {
        return Err(f);
    }
    let Some((ea, eb)) = done.endpoints else {
        return Err(Failure::new("no test reached its endpoints", "see the errors above"));
    };
    let (a, b) = (side(&ea), side(&eb));
    let results = done.results;
    let (verdict, findings) = verdict::judge(&a, &b, &results, &config.criteria);
    let relaxed_ordering = ea.conditions.relaxed_ordering && eb.conditions.relaxed_ordering;
    let capacity_gbps = verdict::capacity(&a, &b).map(|c| c.gbps);
    let doc = PairDoc { schema: report::SCHEMA.into(), verdict, a, b, results, findings, relaxed_ordering, capacity_gbps };
    if config.json {
        crate::report::print_json(&doc);
    } else {
        crate::report::output::note_warning(doc.findings.iter().any(|f| f.severity == crate::diagnose::Severity::Warning));
        crate::report::print_human(&report::human(&doc));
    }
    Ok(if verdict == crate::diagnose::Verdict::Pass { Outcome::Pass } else { Outcome::Fail })
}

/// Where a test runs on one endpoint, as the agent is told.
pub(crate) fn target(spec: &EndpointSpec, gid_index: Option<u8>, cm: Option<CmRole>, conditions: Conditions) -> Target {
    Target { device: spec.device.clone(), port: spec.port.map(|p| p as u8), gid_index, cm, conditions, cpu_slot: None }
}

pub(crate) fn side(e: &Endpoint) -> Side {
    Side {
        host: e.host.clone(),
        device: e.device.clone(),
        port: e.port,
        gid_index: e.gid_index,
        gid: e.gid,
        link_layer: e.link_layer,
        rate_gbps: e.rate_gbps,
        ca_type: e.ca_type.clone(),
        mtu: Some(e.mtu),
        tclass: e.conditions.tclass,
        sl: e.conditions.sl,
        cpu: e.conditions.cpu,
        pcie_gbps: e.pcie_gbps,
        trained_low: e.trained_low.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_choice_per_side() {
        let placed = |choice: CpuChoice, same_host: bool| {
            [0, 1].map(|side| {
                let mut t = Target { device: None, port: None, gid_index: None, cm: None, conditions: Conditions::default(), cpu_slot: None };
                choice.apply(&mut t, side, same_host);
                (t.conditions.cpu, t.cpu_slot)
            })
        };
        assert_eq!(placed(CpuChoice::Auto, true), [(None, Some(0)), (None, Some(1))], "one host: distinct CPUs");
        assert_eq!(placed(CpuChoice::Auto, false), [(None, Some(0)), (None, Some(0))]);
        assert_eq!(placed(CpuChoice::Off, true), [(None, None), (None, None)]);
        assert_eq!(placed(CpuChoice::Pin([4, 7]), true), [(Some(4), None), (Some(7), None)]);
        // Old agents ignore the fields; a target without them deserialises unpinned.
        let t: Target = serde_json::from_str(r#"{"device":null,"port":null,"gid_index":null}"#).unwrap();
        assert_eq!((t.conditions.cpu, t.cpu_slot), (None, None));
        assert_eq!(serde_json::to_string(&Conditions::default()).unwrap(), "{}");
    }
}
