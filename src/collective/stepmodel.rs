//! The step model: a discrete-event simulation of the same plans the agents run, over a
//! fabric of rates, latencies and faults ([`Faults`]): the host tier's members, implementing
//! [`Members`], so the planner, judge and `--bisect` are tested without a device.
//!
//! Each hop is a server: its chunks go one after another (one QP), each taking
//! `chunk / rate + latency` to arrive. A hop's rate is the slower end's capacity, times every
//! fault on its path (link, host, NIC, rail, a leaf's uplinks), shared by the hops its ends
//! drive at once (an alltoall member's n-1 writes share its port; an incast receiver's K).
//! Memory is O(hops): a plan's repeated steps are taken in place, and each hop keeps a bounded
//! sample of its step times ([`SAMPLES`]).

use super::member::Member;
use super::members::{Members, RunError};
use crate::model::collective::{HopId, HopResult, MemberId, MemberPlan, MemberResult};
use crate::outcome::loss::{Loss, LossKind};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Step-time samples each hop keeps (evenly strided over the run: its percentiles are
/// estimates).
pub const SAMPLES: usize = 64;

/// What is wrong with the simulated fabric: rate multipliers (0.25 = a quarter of the rate)
/// and added latencies.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// One direction of one link: (from, to, factor).
    pub links: Vec<(MemberId, MemberId, f64)>,
    /// Every hop into or out of a host.
    pub hosts: Vec<(String, f64)>,
    /// Every hop into or out of one member (a NIC).
    pub nics: Vec<(MemberId, f64)>,
    /// Every hop of a rail.
    pub rails: Vec<(u16, f64)>,
    /// Every hop that crosses a leaf's uplinks (one end in the leaf, the other not).
    pub uplinks: Vec<(usize, f64)>,
    /// Latency added to every hop into or out of a host, microseconds (`netem delay`).
    pub host_delay_us: Vec<(String, f64)>,
    /// Flakiness, 0..1: each chunk's rate is scaled by `1 - jitter * u`, u uniform in [0, 1).
    pub jitter: f64,
    /// A member whose agent dies when it is given a plan.
    pub dies: Option<MemberId>,
    pub seed: u64,
    /// The counter window a member reports with its result (others: a window where nothing
    /// moved).
    pub windows: Vec<(MemberId, crate::model::collective::CounterWindow)>,
}

/// Simulated members.
pub struct StepModel {
    members: Vec<Member>,
    /// Each member's leaf (for uplink faults).
    leaves: Vec<Option<usize>>,
    pub faults: Faults,
    /// A member's capacity where its `capacity_gbps` is not known.
    pub default_gbps: f64,
    pub latency_us: f64,
    /// Runs taken (for `--bisect`'s bound).
    pub runs: usize,
    rng: u64,
}

impl StepModel {
    pub fn new(members: Vec<Member>, leaves: Vec<Option<usize>>, faults: Faults) -> StepModel {
        let rng = faults.seed | 1;
        StepModel { members, leaves, faults, default_gbps: 100.0, latency_us: 2.0, runs: 0, rng }
    }

    fn next(&mut self) -> f64 {
        // xorshift64*: deterministic per seed.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A hop's unshared rate (Gb/s) and latency (ns).
    fn path(&self, from: MemberId, to: MemberId) -> (f64, f64) {
        let (a, b) = (&self.members[from.0 as usize], &self.members[to.0 as usize]);
        let cap = |m: &Member| m.capacity_gbps.unwrap_or(self.default_gbps);
        let mut rate = cap(a).min(cap(b));
        let f = &self.faults;
        rate *= f.links.iter().filter(|l| l.0 == from && l.1 == to).map(|l| l.2).product::<f64>();
        rate *= f.hosts.iter().filter(|h| h.0 == a.host || h.0 == b.host).map(|h| h.1).product::<f64>();
        rate *= f.nics.iter().filter(|n| n.0 == from || n.0 == to).map(|n| n.1).product::<f64>();
        rate *= f.rails.iter().filter(|r| Some(r.0) == a.rail).map(|r| r.1).product::<f64>();
        let (la, lb) = (self.leaves.get(from.0 as usize).copied().flatten(), self.leaves.get(to.0 as usize).copied().flatten());
        if la != lb {
            rate *= f.uplinks.iter().filter(|u| Some(u.0) == la || Some(u.0) == lb).map(|u| u.1).product::<f64>();
        }
        let delay: f64 = f.host_delay_us.iter().filter(|h| h.0 == a.host || h.0 == b.host).map(|h| h.1).sum();
        (rate, (self.latency_us + delay) * 1000.0)
    }
}

struct HopState {
    to: usize,
    id: HopId,
    /// ns per byte, shared.
    ns_per_byte: f64,
    latency_ns: f64,
    free_at: f64,
    arrivals: VecDeque<f64>,
    chunks: u64,
    busy_ns: f64,
    seen: u64,
    /// Every `stride`-th step time; when full, every other one is dropped and the stride doubles.
    stride: u64,
    samples: Vec<u64>,
}

impl HopState {
    fn sample(&mut self, step_ns: u64) {
        if self.seen.is_multiple_of(self.stride) {
            if self.samples.len() == SAMPLES {
                let mut keep = 0;
                for i in (0..SAMPLES).step_by(2) {
                    self.samples[keep] = self.samples[i];
                    keep += 1;
                }
                self.samples.truncate(keep);
                self.stride *= 2;
            }
            if self.seen.is_multiple_of(self.stride) {
                self.samples.push(step_ns);
            }
        }
        self.seen += 1;
    }
}

struct MemberState {
    step: usize,
    /// Times the current step has been taken.
    taken: u64,
    iter: u64,
    t: f64,
    last: f64,
    queued: bool,
    out: Vec<usize>,
    inb: Vec<usize>,
}

impl Members for StepModel {
    fn run(&mut self, plans: &[MemberPlan], _deadline: Duration) -> Result<Vec<MemberResult>, RunError> {
        self.runs += 1;
        if let Some(dead) = self.faults.dies.filter(|d| plans.iter().any(|p| p.member == *d)) {
            let label = self.members.get(dead.0 as usize).map_or_else(String::new, |m| m.host.clone());
            return Err(RunError::Lost {
                member: dead,
                loss: Loss::new(label, LossKind::Gone { why: "the simulated agent died".into(), tail: String::new() }),
            });
        }
        let (mut hops, mut states) = self.build(plans)?;
        let mut work: VecDeque<usize> = (0..plans.len()).collect();
        for s in &mut states {
            s.queued = true;
        }
        while let Some(m) = work.pop_front() {
            states[m].queued = false;
            self.advance(m, &plans[m], &mut states, &mut hops, &mut work);
        }
        if let Some((i, _)) = states.iter().enumerate().find(|(i, s)| s.iter < plans[*i].iters) {
            return Err(RunError::Failed {
                member: plans[i].member,
                cause: "the plans wait on each other: no member can take its next step".into(),
                remedy: "a planner defect: report it with the op and member count".into(),
            });
        }
        Ok(self.results(plans, &states, &hops))
    }
}

impl StepModel {
    fn build(&self, plans: &[MemberPlan]) -> Result<(Vec<HopState>, Vec<MemberState>), RunError> {
        let index: HashMap<MemberId, usize> = plans.iter().enumerate().map(|(i, p)| (p.member, i)).collect();
        let mut hops = Vec::new();
        let mut by_id: HashMap<HopId, usize> = HashMap::new();
        // How many hops each end drives at once: the most a step sends (waits) alongside it.
        let mut out_share: HashMap<HopId, usize> = HashMap::new();
        let mut in_share: HashMap<HopId, usize> = HashMap::new();
        for p in plans {
            for s in &p.steps {
                for &o in &s.send {
                    let e = out_share.entry(p.outbound[usize::from(o)].id).or_insert(1);
                    *e = (*e).max(s.send.len());
                }
                for &w in &s.wait {
                    let e = in_share.entry(p.inbound[usize::from(w)].id).or_insert(1);
                    *e = (*e).max(s.wait.len());
                }
            }
        }
        for p in plans {
            for h in &p.outbound {
                let Some(&to) = index.get(&h.to) else {
                    return Err(RunError::Failed {
                        member: p.member,
                        cause: format!("hop {} leads to member {}, who has no plan", h.id.0, h.to.0),
                        remedy: "a planner defect".into(),
                    });
                };
                let (rate, latency_ns) = self.path(h.from, h.to);
                let share = out_share.get(&h.id).copied().unwrap_or(1).max(in_share.get(&h.id).copied().unwrap_or(1));
                let ns_per_byte = 8.0 * share as f64 / rate.max(1e-9);
                by_id.insert(h.id, hops.len());
                hops.push(HopState {
                    to,
                    id: h.id,
                    ns_per_byte,
                    latency_ns,
                    free_at: 0.0,
                    arrivals: VecDeque::new(),
                    chunks: 0,
                    busy_ns: 0.0,
                    seen: 0,
                    stride: 1,
                    samples: Vec::new(),
                });
            }
        }
        let mut states = Vec::with_capacity(plans.len());
        for p in plans {
            let out = p.outbound.iter().map(|h| by_id[&h.id]).collect();
            let inb = p.inbound.iter().map(|h| by_id.get(&h.id).copied()).collect::<Option<Vec<_>>>().ok_or_else(|| RunError::Failed {
                member: p.member,
                cause: "an inbound hop has no sender's plan".into(),
                remedy: "a planner defect".into(),
            })?;
            states.push(MemberState { step: 0, taken: 0, iter: 0, t: 0.0, last: 0.0, queued: false, out, inb });
        }
        Ok((hops, states))
    }

    /// Takes member `m`'s steps until one waits on a chunk not yet sent.
    fn advance(&mut self, m: usize, plan: &MemberPlan, states: &mut [MemberState], hops: &mut [HopState], work: &mut VecDeque<usize>) {
        let chunk = f64::from(plan.chunk_bytes);
        loop {
            let s = &states[m];
            if s.iter >= plan.iters || plan.steps.is_empty() {
                return;
            }
            let step = &plan.steps[s.step];
            if step.wait.iter().any(|w| hops[s.inb[usize::from(*w)]].arrivals.is_empty()) {
                return;
            }
            let mut t = s.t;
            for w in &step.wait {
                let h = states[m].inb[usize::from(*w)];
                t = t.max(hops[h].arrivals.pop_front().unwrap_or(0.0));
            }
            let mut last = states[m].last.max(t);
            for o in &step.send {
                let h = states[m].out[usize::from(*o)];
                let scale = 1.0 - self.faults.jitter * if self.faults.jitter > 0.0 { self.next() } else { 0.0 };
                let hop = &mut hops[h];
                let start = t.max(hop.free_at);
                let wire = chunk * hop.ns_per_byte / scale.max(1e-3);
                let arrive = start + wire + hop.latency_ns;
                hop.free_at = start + wire;
                hop.arrivals.push_back(arrive);
                hop.chunks += 1;
                hop.busy_ns += wire;
                // A chunk's step time: from when the QP could start it to its completion (the ACK).
                hop.sample((arrive + hop.latency_ns - start) as u64);
                last = last.max(arrive + hops[h].latency_ns);
                let to = hops[h].to;
                if !states[to].queued && to != m {
                    states[to].queued = true;
                    work.push_back(to);
                }
            }
            let s = &mut states[m];
            s.t = t;
            s.last = last;
            s.taken += 1;
            if s.taken >= step.times() {
                s.taken = 0;
                s.step += 1;
                if s.step == plan.steps.len() {
                    s.step = 0;
                    s.iter += 1;
                }
            }
        }
    }

    fn results(&self, plans: &[MemberPlan], states: &[MemberState], hops: &[HopState]) -> Vec<MemberResult> {
        plans
            .iter()
            .zip(states)
            .map(|(p, s)| MemberResult {
                member: p.member,
                elapsed_ns: s.last.max(s.t) as u64,
                iterations: p.iters,
                hops: s
                    .out
                    .iter()
                    .map(|&h| {
                        let hop = &hops[h];
                        let bytes = hop.chunks * u64::from(p.chunk_bytes);
                        HopResult {
                            hop: hop.id,
                            chunks: hop.chunks,
                            bytes,
                            step_us: crate::perf::summary::latency(&hop.samples, false),
                            gbps: if hop.busy_ns > 0.0 { bytes as f64 * 8.0 / hop.busy_ns } else { 0.0 },
                            paths: Vec::new(),
                        }
                    })
                    .collect(),
                counter_deltas: Vec::new(),
                // A simulated port's counters stay still unless the faults say otherwise.
                window: Some(self.faults.windows.iter().find(|(m, _)| *m == p.member).map_or_else(
                    || crate::model::collective::CounterWindow {
                        seconds: 0.0,
                        netdev: None,
                        roce_priority: None,
                        prio_unread: None,
                        counters: Vec::new(),
                    },
                    |(_, w)| w.clone(),
                )),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::op::Op;
    use crate::collective::plan::{plan, Ring};
    use crate::port::LinkLayer;

    pub(crate) fn members(n: usize) -> Vec<Member> {
        (0..n)
            .map(|i| Member {
                host: format!("n{i:03}"),
                device: "mlx5_0".into(),
                port: 1,
                rail: None,
                capacity_gbps: Some(100.0),
                link_layer: LinkLayer::InfiniBand,
                mtu: Some(4096),
            })
            .collect()
    }

    fn ring(n: u32) -> Vec<Ring> {
        vec![Ring { rail: None, order: (0..n).map(MemberId).collect() }]
    }

    #[test]
    fn a_clean_ring_runs_at_the_link_rate_and_every_op_completes() {
        for n in [2u32, 3, 7, 16] {
            for op in [Op::AllReduce, Op::AllToAll, Op::Bcast, Op::Incast(1)] {
                let planned = plan(op, ring(n), 8 << 20, 2).unwrap();
                let mut model = StepModel::new(members(n as usize), vec![None; n as usize], Faults::default());
                let results = model.run(&planned.plans, Duration::from_secs(10)).unwrap();
                assert_eq!(results.len(), n as usize);
                for h in results.iter().flat_map(|r| &r.hops) {
                    assert!(h.chunks > 0, "{op} n={n}");
                }
            }
        }
        let planned = plan(Op::AllReduce, ring(8), 8 << 20, 1).unwrap();
        let results = StepModel::new(members(8), vec![None; 8], Faults::default()).run(&planned.plans, Duration::from_secs(1)).unwrap();
        assert!(results.iter().flat_map(|r| &r.hops).all(|h| (h.gbps - 100.0).abs() < 0.5));
    }

    #[test]
    fn a_slow_link_is_slow_only_on_its_hop() {
        let planned = plan(Op::AllReduce, ring(6), 6 << 20, 1).unwrap();
        let faults = Faults { links: vec![(MemberId(2), MemberId(3), 0.25)], ..Faults::default() };
        let results = StepModel::new(members(6), vec![None; 6], faults).run(&planned.plans, Duration::from_secs(1)).unwrap();
        for r in &results {
            let want = if r.member == MemberId(2) { 25.0 } else { 100.0 };
            assert!((r.hops[0].gbps - want).abs() < 0.5, "{:?}", r);
        }
    }

    #[test]
    fn a_dead_member_is_lost_by_name() {
        let planned = plan(Op::AllReduce, ring(4), 1 << 20, 1).unwrap();
        let faults = Faults { dies: Some(MemberId(2)), ..Faults::default() };
        let err = StepModel::new(members(4), vec![None; 4], faults).run(&planned.plans, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, RunError::Lost { member: MemberId(2), .. }));
    }

    /// 10,000 members as a cluster of them is built: 1,250 hosts of 8 rails, a ring per rail
    /// (NCCL's inter-node rings), every step of every member simulated. One ring of 10,000 is
    /// 2x10^8 steps: benches/collective.sh runs it in a release build.
    #[test]
    fn ten_thousand_members_allreduce_over_eight_rails() {
        let (hosts, rails) = (1_250usize, 8u16);
        let members: Vec<Member> = (0..hosts)
            .flat_map(|h| {
                (0..rails).map(move |r| Member {
                    host: format!("n{h:04}"),
                    device: format!("mlx5_{r}"),
                    port: 1,
                    rail: Some(r),
                    capacity_gbps: Some(400.0),
                    link_layer: LinkLayer::InfiniBand,
                    mtu: Some(4096),
                })
            })
            .collect();
        let rings = crate::collective::order::rings(&members, None);
        assert_eq!((members.len(), rings.len()), (10_000, 8));
        let planned = plan(Op::AllReduce, rings, 1 << 30, 1).unwrap();
        let faults = Faults { nics: vec![(MemberId(8 * 700 + 3), 0.5)], ..Faults::default() };
        let mut model = StepModel::new(members, vec![None; 10_000], faults);
        let results = model.run(&planned.plans, Duration::from_secs(60)).unwrap();
        assert_eq!(results.len(), 10_000);
        let slow: Vec<u32> = results.iter().filter(|r| r.hops[0].gbps < 300.0).map(|r| r.member.0).collect();
        // The NIC's own hop and its predecessor's into it.
        assert_eq!(slow, vec![8 * 699 + 3, 8 * 700 + 3]);
    }
}
