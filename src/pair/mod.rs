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
    pub test_timeout: Duration,
    pub json: bool,
}

pub fn run(config: PairConfig) -> Result<Outcome, Failure> {
    crate::sys::os::catch_termination();
    let mut hub = Hub::new(config.launch.clone());
    let labels = config.endpoints.clone().map(|e| e.host.to_string());
    let links = [hub.add(&config.endpoints[0].host, labels[0].clone()), hub.add(&config.endpoints[1].host, labels[1].clone())];
    // Both agents are reached at once; the first that cannot be is the error.
    let tokens = config.endpoints.clone().map(|e| token_for(&e.host, &config.launch.token));
    if let Some(f) = reach_all(&mut hub, &links, &labels, &tokens, false, 2)?.into_iter().find_map(|r| r.failure) {
        return Err(f);
    }
    let roles = [CmRole::Connect, CmRole::Listen];
    let targets = [0, 1].map(|i| target(&config.endpoints[i], config.gid_index, config.cm.then_some(roles[i]), config.conditions));
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
    Target { device: spec.device.clone(), port: spec.port.map(|p| p as u8), gid_index, cm, conditions }
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
        pcie_gbps: e.pcie_gbps,
        trained_low: e.trained_low.clone(),
    }
}
