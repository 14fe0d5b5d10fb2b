//! The agents as a collective's members: reaching them (one agent session per member; with
//! `--rails`, a member per rail of each host) and running their plans over RC.
//!
//! Reaching goes through the same machinery as `pair` and `mesh` (`control::agents`): one hub, `drive`n conversations,
//! every launcher (ssh, srun, kubectl, tcp). An agent whose hello does not say `collective`
//! (older than 0.5) is exit 2 naming its version. A run is one conversation over every member's
//! link (`agents::run_members`); a member lost mid-run ends it at once, naming the member, and every
//! other agent is told goodbye and its channel closed, so it aborts its loop and releases its
//! QPs and memory (a child that does not exit is killed by the hub).

mod run_members;

use super::member::Member;
use super::members::{Members, RunError};
use crate::control::agents::{Agents, HubAgents};
use crate::control::drive::Job;
use crate::control::endpoint::{EndpointSpec, HostSpec};
use crate::control::hub::LinkId;
use crate::control::protocol::{self, Target};
use crate::control::reach::Reach;
use crate::model::collective::{MemberId, MemberPlan, MemberResult};
use crate::model::rails::RailSpec;
use crate::model::Conditions;
use crate::outcome::loss::{Loss, LossKind};
use crate::probe::Inventory;
use run_members::RunMembers;
use std::time::Duration;

/// Agents reached at once (ssh logins, TCP connects in flight), as `mesh`'s default fan-out.
const WINDOW: usize = 64;

/// How to reach the agents.
#[derive(Debug, Clone)]
pub struct ReachOptions {
    pub launch: crate::control::link::LaunchOptions,
    pub token: Option<String>,
    pub mem: crate::model::MemChoice,
    pub connect_timeout: Duration,
}

/// The reached agents, running plans: member `i` talks over `links[i]`.
pub struct AgentMembers {
    fleet: HubAgents,
    links: Vec<LinkId>,
    labels: Vec<String>,
    targets: Vec<Target>,
    /// A run that lost a member tore every session down: later runs answer its error.
    broken: Option<RunError>,
    /// `--report-every`: every run's members report into it.
    live: Option<crate::collective::live::Live>,
    /// Per member: what its agent said it is, and whether it runs several paths per hop.
    agents: Vec<(String, bool)>,
    /// `-D`: each run's members are told to stop this long after they start.
    stop_after: Option<Duration>,
}

impl AgentMembers {
    /// Every later run's members report their figures each `live.every_ms` into `live`.
    pub fn report_into(&mut self, live: crate::collective::live::Live) {
        self.live = Some(live);
    }

    /// `-D`: every later run's members run for `run` and are then told to stop (each answers
    /// with the iterations it finished), whatever their plan's iterations: a slow fabric does
    /// fewer in the same time rather than running past the deadline.
    pub fn stop_after(&mut self, run: Duration) {
        self.stop_after = Some(run);
    }
}

impl Members for AgentMembers {
    fn run(&mut self, plans: &[MemberPlan], deadline: Duration) -> Result<Vec<MemberResult>, RunError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let first = plans.first().map_or(MemberId(0), |p| p.member);
        let mut sides = Vec::with_capacity(plans.len());
        for plan in plans {
            let i = plan.member.0 as usize;
            if i >= self.links.len() || sides.contains(&i) {
                return Err(RunError::Failed {
                    member: plan.member,
                    cause: format!("a plan names member {} of {} reached, or names it twice", plan.member.0, self.links.len()),
                    remedy: "a bug in fabcheck's planner: report it with the command line".into(),
                });
            }
            sides.push(i);
            // `--paths`: an agent that runs one QP per hop is too old (exit 2 naming it).
            if plan.paths > 1 && !self.agents[i].1 {
                let agent = if self.agents[i].0.is_empty() { "an agent that does not say its version" } else { self.agents[i].0.as_str() };
                let (cause, remedy) =
                    protocol::paths_refusal(&crate::sanitise::one_line(agent), &crate::sanitise::one_line(&self.labels[i]), plan.paths);
                return Err(RunError::Failed { member: plan.member, cause, remedy });
            }
        }
        let mut conversation = RunMembers::new(
            plans,
            sides.iter().map(|&i| self.labels[i].clone()).collect(),
            sides.iter().map(|&i| self.targets[i].clone()).collect(),
            deadline,
        )
        .reporting(self.live.as_mut())
        .stopping_after(self.stop_after);
        let links = sides.iter().map(|&i| self.links[i]).collect();
        let outcome = match self.fleet.drive(&mut [Job { links, conversation: &mut conversation }], 1) {
            Ok(()) => conversation.take_outcome(),
            Err(loss) => Err(RunError::Lost { member: first, loss }),
        };
        if let Err(e) = &outcome {
            // Nothing stays running: every agent is told goodbye, its channel closed, and a
            // child that does not leave is killed.
            self.fleet.close_all();
            self.broken = Some(e.clone());
        }
        outcome
    }
}

impl Drop for AgentMembers {
    fn drop(&mut self) {
        self.fleet.close_all();
    }
}

/// Reaches every endpoint's agent (with `rails`, one member per rail of each host).
pub fn reach(endpoints: &[EndpointSpec], rails: Option<&RailSpec>, options: &ReachOptions) -> Result<(Vec<Member>, AgentMembers), RunError> {
    let launch =
        crate::control::link::LaunchOptions { token: options.token.clone(), connect_timeout: options.connect_timeout, ..options.launch.clone() };
    let mut fleet = HubAgents::new(launch);
    let (specs, rail_of) = match rails {
        Some(spec) => expand_rails(endpoints, spec, &mut fleet)?,
        None => (endpoints.to_vec(), vec![None; endpoints.len()]),
    };
    let labels: Vec<String> = specs.iter().map(ToString::to_string).collect();
    let links: Vec<LinkId> = specs.iter().zip(&labels).map(|(s, label)| fleet.add(&s.host, label.clone())).collect();
    let reached = fleet.reach(&links, &labels, true, WINDOW).map_err(|loss| RunError::Lost { member: MemberId(0), loss })?;
    let mut members = Vec::with_capacity(specs.len());
    let mut targets = Vec::with_capacity(specs.len());
    for (i, (r, spec)) in reached.iter().zip(&specs).enumerate() {
        let member = MemberId(i as u32);
        capable(member, r)?;
        let (m, target) = member_of(spec, rail_of[i], r.inventory.as_ref(), options.mem).map_err(|loss| RunError::Lost { member, loss })?;
        members.push(m);
        targets.push(target);
    }
    let agents = reached.iter().map(|r| (r.agent.clone(), r.member_paths)).collect();
    Ok((members, AgentMembers { fleet, links, labels, targets, broken: None, live: None, agents, stop_after: None }))
}

/// A reached agent that can run a member: lost with its loss, or too old (exit 2 naming its
/// version).
fn capable(member: MemberId, r: &Reach) -> Result<(), RunError> {
    if let Some(loss) = &r.failure {
        return Err(RunError::Lost { member, loss: loss.clone() });
    }
    if !r.collective {
        let agent = if r.agent.is_empty() { "an agent that does not say its version" } else { r.agent.as_str() };
        let (cause, remedy) = protocol::collective_refusal(&crate::sanitise::one_line(agent), &crate::sanitise::one_line(&r.host));
        return Err(RunError::Failed { member, cause, remedy });
    }
    Ok(())
}

/// The member an endpoint is, from its agent's inventory: the port it names (or the first
/// active one), its capacity (link, or PCIe where lower), link layer and MTU; and the target its
/// plans run on.
fn member_of(spec: &EndpointSpec, rail: Option<u16>, inventory: Option<&Inventory>, mem: crate::model::MemChoice) -> Result<(Member, Target), Loss> {
    let label = spec.to_string();
    let inventory = inventory.ok_or_else(|| Loss::new(&label, LossKind::Protocol("no inventory".into())))?;
    let candidates: Vec<_> = inventory
        .ports()
        .filter(|(d, _)| spec.device.as_deref().is_none_or(|want| d.name == want))
        .filter(|(_, p)| spec.port.is_none_or(|want| p.port == want))
        .collect();
    let (device, port) =
        candidates.iter().find(|(_, p)| p.state == crate::port::PortState::Active).or(candidates.first()).copied().ok_or_else(|| {
            let why = format!("has no port {}", spec.device.as_deref().unwrap_or("at all"));
            Loss::new(
                &label,
                LossKind::Refused { step: crate::outcome::loss::Step::Inventory, cause: why, remedy: "see `fabcheck devices` on that node".into() },
            )
        })?;
    let soft = crate::probe::catype::CaKind::of(&device.ca_type).is_software();
    let pcie = device.pci.as_ref().and_then(|p| p.usable_gbps);
    let capacity_gbps = if soft { None } else { port.rate_gbps.map(|r| crate::probe::capacity::capacity(r, pcie).gbps) };
    let port_num = u8::try_from(port.port).unwrap_or(1);
    let member = Member {
        host: host_of(&spec.host),
        device: device.name.clone(),
        port: port_num,
        rail,
        capacity_gbps,
        link_layer: port.link_layer,
        mtu: port.active_mtu,
    };
    let target = Target {
        device: Some(device.name.clone()),
        port: Some(port_num),
        gid_index: None,
        cm: None,
        conditions: Conditions { mem, ..Conditions::default() },
        cpu_slot: None,
    };
    Ok((member, target))
}

/// The host as the endpoint named it.
fn host_of(host: &HostSpec) -> String {
    match host {
        HostSpec::Local => "localhost".into(),
        HostSpec::Ssh { host, .. } => host.clone(),
        other => other.to_string(),
    }
}

/// `--rails`: asks each host for its rails (as `mesh --rails` does) and makes one endpoint per
/// rail, host by host, with its rail index. A host that cannot say, or an agent older than 0.3,
/// is the run's error.
fn expand_rails(endpoints: &[EndpointSpec], spec: &RailSpec, fleet: &mut dyn Agents) -> Result<(Vec<EndpointSpec>, Vec<Option<u16>>), RunError> {
    let labels: Vec<String> = endpoints.iter().map(|e| e.host.to_string()).collect();
    let links: Vec<LinkId> = endpoints.iter().zip(&labels).map(|(e, l)| fleet.add(&e.host, l.clone())).collect();
    let lost = |host: usize, loss: Loss| RunError::Lost { member: MemberId(host as u32), loss };
    let reached = fleet.reach(&links, &labels, false, WINDOW).map_err(|l| lost(0, l))?;
    for (i, r) in reached.iter().enumerate() {
        if let Some(loss) = &r.failure {
            return Err(lost(i, loss.clone()));
        }
        if let Some(f) = crate::pair::rails::too_old(&labels[i], r) {
            return Err(RunError::Failed { member: MemberId(i as u32), cause: f.cause.clone(), remedy: f.remedy.clone() });
        }
    }
    let answers = crate::pair::rails::ask::each(fleet, &links, &labels, spec).map_err(|f| RunError::Failed {
        member: MemberId(0),
        cause: f.cause.clone(),
        remedy: f.remedy.clone(),
    })?;
    fleet.close_all();
    let (mut specs, mut rail_of) = (Vec::new(), Vec::new());
    for (i, (answer, endpoint)) in answers.into_iter().zip(endpoints).enumerate() {
        let (rails, _) = answer.map_err(|l| lost(i, l))?;
        for rail in rails {
            specs.push(EndpointSpec { host: endpoint.host.clone(), device: Some(rail.device.clone()), port: Some(rail.port) });
            rail_of.push(u16::try_from(rail.rail).ok());
        }
    }
    Ok((specs, rail_of))
}
