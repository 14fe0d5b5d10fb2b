//! A collective as each member runs it (0.5, `fabcheck collective`): the hops it holds and
//! the dependent steps it takes over them, and what it measured. Pure data, carried between
//! controller and agent like [`TestSpec`](super::TestSpec) and [`RunResult`](super::RunResult).
//!
//! The controller (`collective`) turns an op (`allreduce`, `alltoall`, `incast:K`, `bcast`)
//! into one [`MemberPlan`] per member; each agent runs its plan over RC QPs, one QP per hop,
//! and answers a [`MemberResult`]. Who plans knows the op; who runs knows only hops and steps,
//! so one agent-side engine runs every op and the step model (a simulation of the same plans)
//! needs no agent.
//!
//! A hop is one RC connection from a sender to a receiver. Data moves as RDMA writes with
//! immediate of `chunk_bytes` into the receiver's registered ring, so the receiver learns of
//! each arrival from a receive completion, as NCCL's net transport does (`net_ib.cc` posts a
//! write-with-immediate for each chunk).

use super::LatencySummary;
use serde::{Deserialize, Serialize};

/// Most members in one collective (the controller refuses more; the step model runs 10,000).
pub const MAX_MEMBERS: usize = 16_384;
/// Most hops one member holds at once (alltoall among 257 members is 256 out and 256 in).
pub const MAX_HOPS_PER_MEMBER: usize = 1_024;
/// Most QPs one member opens (its hops times `--paths`).
pub const MAX_MEMBER_QPS: usize = 4_096;
/// Most steps in one member's iteration (ring all-reduce among n members is 2(n-1)).
pub const MAX_STEPS: usize = 2 * MAX_MEMBERS;

/// A member: one (host, device, port) endpoint, by its index in the run's member list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MemberId(pub u32);

/// One hop's index in the whole run's hop list (the same number on both its ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HopId(pub u32);

/// One RC connection: `from` writes, `to` receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    pub id: HopId,
    pub from: MemberId,
    pub to: MemberId,
}

/// One step of a member's iteration: wait until one chunk has arrived on each hop of `wait`
/// (the data this step forwards or reduces), then post one chunk on each hop of `send`.
/// The next step starts when this one's writes are posted; its waits are what order it.
///
/// Ring all-reduce (NCCL's dependency): step 0 `{wait: [], send: [out]}`, steps 1..2(n-1)
/// `{wait: [in], send: [out]}`, a last `{wait: [in], send: []}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Indexes into [`MemberPlan::inbound`].
    pub wait: Vec<u16>,
    /// Indexes into [`MemberPlan::outbound`].
    pub send: Vec<u16>,
    /// Taken `1 + repeat` times in a row (0.5, additive): a ring's 2(n-1)-1 identical middle
    /// steps are one `Step`, so a plan is O(hops), not O(n), and the controller holds 10,000
    /// members' plans in kilobytes. Absent on the wire: once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Step {
    /// A step taken once.
    pub fn once(wait: Vec<u16>, send: Vec<u16>) -> Step {
        Step { wait, send, repeat: 0 }
    }

    /// How many times the step is taken.
    pub fn times(&self) -> u64 {
        1 + u64::from(self.repeat)
    }
}

/// What one member runs: its hops and its steps, repeated `iters` times. Every write is
/// `chunk_bytes` long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberPlan {
    pub member: MemberId,
    /// Hops this member writes on, in the order its steps name them.
    pub outbound: Vec<Hop>,
    /// Hops this member receives on.
    pub inbound: Vec<Hop>,
    pub steps: Vec<Step>,
    pub chunk_bytes: u32,
    pub iters: u64,
    /// `--report-every`: the member sends its send rate over each interval this long (a
    /// `progress` reply) while it runs (0.5, additive: absent, none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_every_ms: Option<u64>,
    /// `--paths N` (RoCE ECMP): each hop is N RC QPs from sender to receiver, QP k carrying
    /// flow label [`flow_label(k)`](super::paths::flow_label) (so its own UDP source port), a
    /// hop's chunks spread round-robin over them (0.5, additive: absent, one path, no label).
    #[serde(default = "one_path", skip_serializing_if = "is_one_path")]
    pub paths: u32,
}

fn one_path() -> u32 {
    1
}

fn is_one_path(n: &u32) -> bool {
    *n == 1
}

/// Why a plan cannot be run as given (checked on both ends: an agent takes no plan on trust).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan holds {0} hops; at most {MAX_HOPS_PER_MEMBER} per member")]
    TooManyHops(usize),
    #[error("the plan has {0} steps; at most {MAX_STEPS}")]
    TooManySteps(usize),
    #[error("step {step} names hop index {index}, beyond the member's {held} hops")]
    NoSuchHop { step: usize, index: u16, held: usize },
    #[error("hop {0} is not this member's (its from/to does not name member {1})")]
    NotMine(u32, u32),
    #[error("the plan moves no data (no step sends)")]
    Empty,
    #[error("a chunk of 0 bytes or above the largest message")]
    ChunkSize,
    #[error("{0} paths per hop; 1 to {max}", max = super::MAX_QPS)]
    Paths(u32),
    #[error("{hops} hops of {paths} paths are {qps} QPs on one member; at most {MAX_MEMBER_QPS}: fewer --paths, or fewer members")]
    TooManyQps { hops: usize, paths: u32, qps: usize },
}

impl MemberPlan {
    /// Checks the plan is well formed for this member (every index in range, hops its own).
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.paths == 0 || self.paths > super::MAX_QPS {
            return Err(PlanError::Paths(self.paths));
        }
        let held = self.outbound.len() + self.inbound.len();
        if held > MAX_HOPS_PER_MEMBER {
            return Err(PlanError::TooManyHops(held));
        }
        let qps = held.saturating_mul(self.paths as usize);
        if qps > MAX_MEMBER_QPS {
            return Err(PlanError::TooManyQps { hops: held, paths: self.paths, qps });
        }
        if self.steps.len() > MAX_STEPS {
            return Err(PlanError::TooManySteps(self.steps.len()));
        }
        let taken: u64 = self.steps.iter().map(Step::times).sum();
        if taken > MAX_STEPS as u64 {
            return Err(PlanError::TooManySteps(taken.min(usize::MAX as u64) as usize));
        }
        if self.chunk_bytes == 0 || self.chunk_bytes > super::MAX_SIZE {
            return Err(PlanError::ChunkSize);
        }
        let me = self.member;
        if let Some(h) = self.outbound.iter().find(|h| h.from != me) {
            return Err(PlanError::NotMine(h.id.0, me.0));
        }
        if let Some(h) = self.inbound.iter().find(|h| h.to != me) {
            return Err(PlanError::NotMine(h.id.0, me.0));
        }
        for (step, s) in self.steps.iter().enumerate() {
            for (&index, held) in s.wait.iter().map(|i| (i, self.inbound.len())).chain(s.send.iter().map(|i| (i, self.outbound.len()))) {
                if usize::from(index) >= held {
                    return Err(PlanError::NoSuchHop { step, index, held });
                }
            }
        }
        if self.steps.iter().all(|s| s.send.is_empty()) && self.inbound.is_empty() {
            return Err(PlanError::Empty);
        }
        Ok(())
    }
}

/// What one hop measured on its sending member: each chunk's time from posting the write to
/// its completion (the receiver's ACK), so a hop is timed by one clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopResult {
    pub hop: HopId,
    pub chunks: u64,
    pub bytes: u64,
    /// Per-chunk time, microseconds.
    pub step_us: Option<LatencySummary>,
    /// Bytes over the time this hop was busy sending, Gb/s.
    pub gbps: f64,
    /// `--paths N` (N > 1): what each of the hop's QPs moved, in path order (0.5, additive:
    /// absent with one path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<super::paths::PathRun>,
}

/// One member's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberResult {
    pub member: MemberId,
    /// From the member's first post to its last arrival, over all iterations.
    pub elapsed_ns: u64,
    pub iterations: u64,
    /// One per outbound hop.
    pub hops: Vec<HopResult>,
    /// Port error/retransmission counters that moved during the run (name, delta).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_deltas: Vec<(String, u64)>,
    /// The member's port counters read before and after its run, for the controller to judge
    /// as `check --soak` judges a window (0.5, additive: an older agent sends none, and its
    /// counters are said not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<CounterWindow>,
}

/// Most counters one member reports over its run (mlx5's `ethtool -S` per-priority counters
/// and the port's error counters are about a hundred).
pub const MAX_WINDOW_COUNTERS: usize = 1_024;

/// A member's port counters over its run: each counter read at both ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterWindow {
    /// Between the two reads.
    pub seconds: f64,
    /// The port's netdev (RoCE), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev: Option<String>,
    /// The RoCE priority the port's set-up gives its traffic (as `check` works it out), where
    /// it could be worked out: its pause share and buffer discards are judged only then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce_priority: Option<u8>,
    /// Why the per-priority counters were not read (RoCE: no `ethtool`, a driver that prints
    /// none, as Soft-RoCE's); absent when they were, or on InfiniBand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio_unread: Option<String>,
    /// Each counter read at both ends: (name, start, end).
    pub counters: Vec<(String, u64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring_member(n: u32, me: u32) -> MemberPlan {
        let out = Hop { id: HopId(me), from: MemberId(me), to: MemberId((me + 1) % n) };
        let pred = (me + n - 1) % n;
        let inb = Hop { id: HopId(pred), from: MemberId(pred), to: MemberId(me) };
        let mut steps = vec![Step::once(vec![], vec![0])];
        for _ in 1..2 * (n - 1) {
            steps.push(Step::once(vec![0], vec![0]));
        }
        steps.push(Step::once(vec![0], vec![]));
        MemberPlan {
            member: MemberId(me),
            outbound: vec![out],
            inbound: vec![inb],
            steps,
            chunk_bytes: 1 << 20,
            iters: 10,
            report_every_ms: None,
            paths: 1,
        }
    }

    #[test]
    fn a_ring_member_is_valid_and_travels_the_wire_unchanged() {
        let plan = ring_member(4, 1);
        assert_eq!(plan.validate(), Ok(()));
        let back: MemberPlan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
    }

    #[test]
    fn a_plan_that_names_a_hop_it_does_not_hold_is_refused() {
        let mut plan = ring_member(4, 1);
        plan.steps[2].send = vec![3];
        assert_eq!(plan.validate(), Err(PlanError::NoSuchHop { step: 2, index: 3, held: 1 }));
        let mut plan = ring_member(4, 1);
        plan.outbound[0].from = MemberId(2);
        assert_eq!(plan.validate(), Err(PlanError::NotMine(1, 1)));
        let mut plan = ring_member(4, 1);
        plan.chunk_bytes = 0;
        assert_eq!(plan.validate(), Err(PlanError::ChunkSize));
    }

    #[test]
    fn a_repeated_step_counts_every_time_and_a_single_one_is_written_as_before() {
        let once = serde_json::to_string(&Step::once(vec![0], vec![0])).unwrap();
        assert_eq!(once, r#"{"wait":[0],"send":[0]}"#);
        let mut plan = ring_member(4, 1);
        plan.steps = vec![Step::once(vec![], vec![0]), Step { wait: vec![0], send: vec![0], repeat: 5 }, Step::once(vec![0], vec![])];
        assert_eq!(plan.validate(), Ok(()));
        let back: MemberPlan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back.steps[1].times(), 6);
        plan.steps[1].repeat = MAX_STEPS as u32;
        assert!(matches!(plan.validate(), Err(PlanError::TooManySteps(_))));
    }
}
