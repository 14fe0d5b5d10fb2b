//! `pair A B --rails SPEC`: the two nodes tested rail by rail, every rail at once (issue #29,
//! docs/contract.md "Whole nodes"). Each node resolves its own rails (`gpu::rails`, on the
//! agent: only it sees its GPUs); rail k of A is paired with rail k of B; every rail runs
//! `pair`'s own sequence over its own agent sessions, started together by [`lockstep`]; the
//! results are judged per rail, against the sibling rails and as a node total ([`judge`]).

pub mod ask;
pub mod doc;
pub mod judge;
pub mod lockstep;
pub mod words;

use super::sequence::PairSequence;
use super::side::Side;
use super::{side, CpuChoice, PairConfig};
use crate::control::agents::Agents;
use crate::control::drive::Job;
use crate::control::protocol::Target;
use crate::control::reach::Reach;
use crate::error::Failure;
use crate::model::rails::{Rail, RailSpec, RailThreshold};
use crate::model::LinkLayer;
use crate::model::Unparsed;
use crate::outcome::FindingId;
use crate::outcome::Severity;
use crate::progress::Progress;
use doc::RailRecord;
use judge::RailRun;

/// What a `--rails` run found: the rails' part of the pair's document (`report::PairDoc::of_rails`
/// makes the document of it: the document knows the rails, the rails know no document).
#[derive(Debug, Clone, PartialEq)]
pub struct RailsRun {
    pub verdict: crate::outcome::Verdict,
    /// Rail 0's sides, the document's `a` and `b`.
    pub a: Side,
    pub b: Side,
    pub findings: Vec<crate::outcome::Finding>,
    pub capacity_gbps: Option<f64>,
    pub records: Vec<RailRecord>,
    pub aggregate: Vec<doc::Aggregate>,
}

/// `--rails` and `--rail-threshold`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RailsConfig {
    pub spec: RailSpec,
    pub threshold: RailThreshold,
    /// `--cpu A0,A1,...:B0,B1,...`: one CPU per rail per end.
    pub cpus: Option<[Vec<u16>; 2]>,
}

impl RailsConfig {
    /// `--rails`, `--rail-threshold` and `--cpu` as given.
    pub fn parse(rails: &str, threshold: Option<&str>, cpu: Option<&str>) -> Result<RailsConfig, Unparsed> {
        let spec = RailSpec::parse(rails)?;
        let threshold = threshold.map_or(Ok(RailThreshold::default()), RailThreshold::parse)?;
        let cpus = match cpu.and_then(|c| c.split_once(':')) {
            None => None,
            Some((a, b)) => {
                let list = |text: &str| -> Result<Vec<u16>, Unparsed> {
                    text.split(',')
                        .map(|c| {
                            c.trim().parse::<u16>().map_err(|_| format!("--cpu '{}': '{c}' is not a CPU number", cpu.unwrap_or_default()).into())
                        })
                        .collect()
                };
                let (a, b) = (list(a)?, list(b)?);
                if a.len() != b.len() {
                    return Err(format!("--cpu: {} CPUs for A and {} for B; give one per rail on each end", a.len(), b.len()).into());
                }
                Some([a, b])
            }
        };
        Ok(RailsConfig { spec, threshold, cpus })
    }
}

/// Why `--rails` cannot run against an agent: older than 0.3 (no `rails` in its hello).
pub fn too_old(label: &str, reach: &Reach) -> Option<Failure> {
    (!reach.rails).then(|| {
        let agent = if reach.agent.is_empty() { "an agent that does not say its version".to_string() } else { reach.agent.clone() };
        Failure::new(
            format!("{label} runs {agent}, which predates --rails (fabcheck 0.3)"),
            "install the same fabcheck version (0.3 or later) on every node, or run pair without --rails",
        )
    })
}

/// Both ends must have as many rails: rail k of A is paired with rail k of B.
pub fn count_mismatch(labels: &[String; 2], rails: &[Vec<Rail>; 2]) -> Option<Failure> {
    (rails[0].len() != rails[1].len()).then(|| {
        Failure::new(
            format!(
                "--rails: {} has {} rails, {} has {}: rail k of one node is paired with rail k of the other",
                labels[0],
                rails[0].len(),
                labels[1],
                rails[1].len()
            ),
            "give both nodes the same number of rails (--rails N, or a list DEV[:PORT],... present on both)",
        )
    })
}

/// A side for a rail that did not run: what the node said of its port.
fn idle_side(host: &str, rail: &Rail, mem: crate::model::MemChoice) -> Side {
    Side {
        host: host.to_string(),
        device: rail.device.clone(),
        port: u8::try_from(rail.port).unwrap_or(u8::MAX),
        gid_index: None,
        gid: None,
        link_layer: LinkLayer::Unknown(0),
        rate_gbps: None,
        ca_type: String::new(),
        mtu: None,
        tclass: None,
        tclass_source: None,
        sl: None,
        cpu: None,
        pcie_gbps: None,
        trained_low: None,
        mem,
        mem_path: None,
        gpu: None,
        gpu_pcie_gbps: None,
    }
}

/// Runs `pair --rails`.
pub fn run(config: PairConfig, rails_config: &RailsConfig, fleet: &mut dyn Agents, progress: &mut dyn Progress) -> Result<RailsRun, Failure> {
    let labels = config.endpoints.clone().map(|e| e.host.to_string());
    let control = [0, 1].map(|s| fleet.add(&config.endpoints[s].host, labels[s].clone()));
    let reached = fleet.reach(&control, &labels, false, 2)?;
    if let Some(f) = reached.iter().find_map(|r| r.failure.clone()) {
        return Err(f.into());
    }
    if let Some(f) = reached.iter().zip(&labels).find_map(|(r, l)| too_old(l, r)) {
        fleet.close_all();
        return Err(f);
    }
    let hosts = [reached[0].host.clone(), reached[1].host.clone()];
    let [(rails_a, shared_a), (rails_b, shared_b)] = ask::rails(fleet, control, &labels, &rails_config.spec)?;
    let rails = [rails_a, rails_b];
    if let Some(f) = count_mismatch(&labels, &rails) {
        fleet.close_all();
        return Err(f);
    }
    if let Some(cpus) = &rails_config.cpus {
        if cpus[0].len() != rails[0].len() {
            fleet.close_all();
            return Err(Failure::usage(format!("--cpu names {} CPUs per end for {} rails: give one per rail", cpus[0].len(), rails[0].len())));
        }
    }
    // Rails whose ports are both ACTIVE run; each on its own pair of agent sessions (rail 0 on
    // the control sessions).
    let runnable: Vec<usize> = (0..rails[0].len()).filter(|&k| rails[0][k].active && rails[1][k].active).collect();
    let mut links = Vec::new();
    let mut sequences = Vec::new();
    let mut more = Vec::new();
    for (n, &k) in runnable.iter().enumerate() {
        let pair = if n == 0 {
            control
        } else {
            let pair = [0, 1].map(|s| fleet.add(&config.endpoints[s].host, format!("{} rail {k}", labels[s])));
            more.push(pair);
            pair
        };
        links.extend(pair);
        let targets = [0, 1].map(|s| rail_target(&rails[s][k], k, &config, rails_config, s));
        let names = [0, 1].map(|s| format!("{} rail {k} ({})", labels[s], rails[s][k].device));
        sequences.push(PairSequence::new(config.plan.clone(), targets, names, config.test_timeout));
    }
    let extra: Vec<usize> = more.iter().flatten().copied().collect();
    let extra_labels: Vec<String> =
        more.iter().enumerate().flat_map(|(n, _)| [0, 1].map(|s| format!("{} rail {}", labels[s], runnable[n + 1]))).collect();
    for r in fleet.reach(&extra, &extra_labels, false, extra.len().max(1))? {
        if let Some(f) = r.failure {
            fleet.close_all();
            return Err(f.into());
        }
    }
    let mut done = lockstep::Lockstep::new(sequences);
    fleet.drive(&mut [Job { links, conversation: &mut done }], 1)?;
    fleet.close_all();
    progress.done();
    let mut runs: Vec<RailRun> = Vec::new();
    let mut done_rails = done.rails.into_iter();
    for (k, ends) in rails[0].iter().zip(&rails[1]).enumerate() {
        let ends = [ends.0, ends.1];
        let idle = |why: judge::Idle| RailRun {
            record: RailRecord {
                rail: k,
                a: idle_side(&hosts[0], ends[0], config.conditions.mem),
                b: idle_side(&hosts[1], ends[1], config.conditions.mem),
                results: Vec::new(),
            },
            windows: Vec::new(),
            unreachable: Some(why),
        };
        if !runnable.contains(&k) {
            let down = (0..2).filter(|&s| !ends[s].active).map(|s| (hosts[s].clone(), ends[s].device.clone(), ends[s].port)).collect();
            runs.push(idle(judge::Idle::PortsDown(down)));
            continue;
        }
        let seq = done_rails.next().expect("one sequence per runnable rail");
        match (&seq.could_not_run, &seq.endpoints) {
            (Some(loss), _) => runs.push(idle(judge::Idle::NotRun(loss.clone()))),
            (None, None) => runs.push(idle(judge::Idle::NoEndpoints)),
            (None, Some((ea, eb))) => runs.push(RailRun {
                record: RailRecord { rail: k, a: side(ea), b: side(eb), results: seq.results.clone() },
                windows: seq.windows.clone(),
                unreachable: None,
            }),
        }
    }
    let bound = [shared_bound(&runs, &shared_a), shared_bound(&runs, &shared_b)].into_iter().flatten().reduce(f64::min);
    let (verdict, mut findings, aggregate) = judge::judge(&runs, &config.criteria, rails_config.threshold, bound);
    if let Some(info) = pinning_info(&config.cpu, &runs) {
        findings.push(info);
    }
    let records: Vec<RailRecord> = runs.into_iter().map(|r| r.record).collect();
    let (a, b) = (records[0].a.clone(), records[0].b.clone());
    let capacity_gbps = super::verdict::capacity(&a, &b).map(|c| c.gbps);
    Ok(RailsRun { verdict, a, b, findings, capacity_gbps, records, aggregate })
}

/// What one node's shared uplinks let its rails move together: per uplink the smaller of it and
/// its rails' summed capacity, plus every other rail's capacity. `None` when nothing is shared
/// or a capacity is unknown.
fn shared_bound(runs: &[RailRun], shared: &[crate::gpu::rails::SharedUplink]) -> Option<f64> {
    if shared.is_empty() {
        return None;
    }
    let cap =
        |k: usize| runs.get(k).filter(|r| r.unreachable.is_none()).and_then(|r| super::verdict::capacity(&r.record.a, &r.record.b)).map(|c| c.gbps);
    let mut total = 0.0;
    for g in shared {
        total += g.rails.iter().map(|&k| cap(k).unwrap_or(0.0)).sum::<f64>().min(g.gbps);
    }
    for k in (0..runs.len()).filter(|k| !shared.iter().any(|g| g.rails.contains(k))) {
        total += cap(k)?;
    }
    Some(total)
}

/// Rail `k`'s target on side `side`: its port, and its CPU slot `k` (the agent pins it near
/// its NIC, distinct per rail) unless `--cpu` says otherwise.
fn rail_target(rail: &Rail, k: usize, config: &PairConfig, rails_config: &RailsConfig, side: usize) -> Target {
    let mut target = Target {
        device: Some(rail.device.clone()),
        port: u8::try_from(rail.port).ok(),
        gid_index: config.gid_index,
        cm: None,
        conditions: config.conditions,
        cpu_slot: None,
    };
    if let Some(cpus) = &rails_config.cpus {
        target.conditions.cpu = cpus[side].get(k).copied();
        return target;
    }
    match config.cpu {
        CpuChoice::Auto => target.cpu_slot = Some(u8::try_from(k).unwrap_or(u8::MAX)),
        CpuChoice::Off => {}
        CpuChoice::Pin(cpus) => target.conditions.cpu = Some(cpus[side]),
    }
    target
}

/// The `info` finding when rails asked to be pinned ran unpinned (the agent found fewer CPUs
/// near a NIC than it needed).
fn pinning_info(cpu: &CpuChoice, runs: &[RailRun]) -> Option<crate::outcome::Finding> {
    if *cpu != CpuChoice::Auto {
        return None;
    }
    let unpinned: Vec<String> = runs
        .iter()
        .filter(|r| r.unreachable.is_none())
        .flat_map(|r| [(&r.record.a, r.record.rail), (&r.record.b, r.record.rail)])
        .filter(|(s, _)| s.cpu.is_none())
        .map(|(s, k)| format!("rail {k} on {}", s.host))
        .collect();
    (!unpinned.is_empty()).then(|| crate::outcome::Finding {
        id: FindingId::PairRailCpu,
        severity: Severity::Info,
        subject: "cpu".into(),
        message: format!("not pinned (too few CPUs near the NIC, or a small host): {}", unpinned.join(", ")),
        remedy: "pin the rails with --cpu, or run on a host with a CPU per rail near each NIC".into(),
        about: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::rails::SharedUplink;
    use crate::pair::side::test_side;

    fn run(k: usize, rate: f64) -> RailRun {
        let side = Side { rate_gbps: Some(rate), ..test_side() };
        RailRun { record: RailRecord { rail: k, a: side.clone(), b: side, results: Vec::new() }, windows: Vec::new(), unreachable: None }
    }

    #[test]
    fn a_shared_uplink_bounds_the_rails_behind_it() {
        let runs: Vec<RailRun> = (0..4).map(|k| run(k, 400.0)).collect();
        assert_eq!(shared_bound(&runs, &[]), None, "nothing shared: the sum stands");
        // Rails 0 and 1 behind one Gen4 x16 uplink (230 Gb/s), 2 and 3 on their own.
        let shared = [SharedUplink { uplink: "0000:01:00.0".into(), rails: vec![0, 1], gbps: 230.0 }];
        assert_eq!(shared_bound(&runs, &shared), Some(230.0 + 800.0));
        // An uplink wider than its rails does not bound them.
        let wide = [SharedUplink { uplink: "0000:01:00.0".into(), rails: vec![0, 1], gbps: 2000.0 }];
        assert_eq!(shared_bound(&runs, &wide), Some(1600.0));
    }

    #[test]
    fn rails_config_parses_per_rail_cpus() {
        let c = RailsConfig::parse("auto", None, Some("1,2,3:33,34,35")).unwrap();
        assert_eq!(c.cpus, Some([vec![1, 2, 3], vec![33, 34, 35]]));
        assert_eq!(RailsConfig::parse("auto", None, Some("auto")).unwrap().cpus, None);
        assert!(RailsConfig::parse("auto", None, Some("1,2:3")).unwrap_err().contains("one per rail"));
        assert!(RailsConfig::parse("auto", None, Some("1,x:3,4")).is_err());
    }
}
