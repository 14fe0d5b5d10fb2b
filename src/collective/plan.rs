//! An op turned into one [`MemberPlan`] per member (pure): the hops each member holds and the
//! dependent steps it takes over them. Each ring (one per rail with `--rails`, else one of
//! every member) runs the op among its members, all rings at once.
//!
//! - `allreduce`: NCCL's ring (`prims_simple.h`/`all_reduce.h`: reduce-scatter then
//!   all-gather): 2(n-1) chunks of size/n, a member forwarding step s+1 only once step s has
//!   arrived from its predecessor.
//! - `alltoall`: every member writes size/n to every other at once (nccl-tests' alltoall).
//! - `incast:K`: rounds; in round r member r receives [`INCAST_BURST`] chunks from each of the
//!   K members after it, then releases round r+1's senders with one chunk each (a `go` hop,
//!   which is not judged), so one receiver at a time takes K senders' traffic.
//! - `bcast`: the ring's first member sends size in pieces down the ring, each member
//!   forwarding a piece as it arrives (NCCL's pipelined ring broadcast).

use super::op::Op;
use crate::model::collective::{Hop, HopId, MemberId, MemberPlan, PlanError, Step, MAX_HOPS_PER_MEMBER, MAX_STEPS};
use serde::Serialize;

/// Chunks each incast sender writes per round.
pub const INCAST_BURST: u32 = 8;
/// Smallest broadcast piece.
pub const MIN_PIECE: u64 = 4096;

/// One ring: its rail (with `--rails`) and its members in ring order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ring {
    pub rail: Option<u16>,
    pub order: Vec<MemberId>,
}

/// What a hop carries: the op's data, or incast's release of the next round (not judged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopRole {
    Data,
    Go,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedHop {
    pub hop: Hop,
    pub ring: usize,
    pub role: HopRole,
}

/// Every member's plan and what the controller keeps to read the answers.
#[derive(Debug, Clone)]
pub struct Planned {
    pub op: Op,
    pub rings: Vec<Ring>,
    /// Indexed by `HopId`.
    pub hops: Vec<PlannedHop>,
    /// One per member of any ring, in ring order.
    pub plans: Vec<MemberPlan>,
    /// The bytes each ring's op moves per iteration (nccl-tests' S; the size split over rails).
    pub ring_bytes: u64,
    pub iters: u64,
}

/// Why the op cannot be planned over these members.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanRefusal {
    #[error("{op} needs at least {need} members in each ring; ring {ring} has {has}")]
    TooFew { op: Op, ring: usize, need: usize, has: usize },
    #[error("{op} over {members} members holds {hops} hops on one member (at most {MAX_HOPS_PER_MEMBER}): split the members, or use allreduce")]
    TooManyHops { op: Op, members: usize, hops: usize },
    #[error("a chunk of {0} bytes: give a --size whose share per chunk is 1 byte to 64 MiB")]
    Chunk(u64),
    #[error("member {0} is in two rings")]
    Twice(u32),
    #[error("the plan of member {member}: {error}")]
    Invalid { member: u32, error: PlanError },
}

/// Plans `op` over `rings`, `size` bytes per member (split evenly over the rings, as NCCL
/// splits a buffer over its channels), `iters` times.
pub fn plan(op: Op, rings: Vec<Ring>, size: u64, iters: u64) -> Result<Planned, PlanRefusal> {
    let mut planned =
        Planned { op, rings: Vec::new(), hops: Vec::new(), plans: Vec::new(), ring_bytes: (size / rings.len().max(1) as u64).max(1), iters };
    let mut seen = std::collections::HashSet::new();
    for (index, ring) in rings.iter().enumerate() {
        let n = ring.order.len();
        if n < op.min_members() {
            return Err(PlanRefusal::TooFew { op, ring: index, need: op.min_members(), has: n });
        }
        if let Some(m) = ring.order.iter().find(|m| !seen.insert(**m)) {
            return Err(PlanRefusal::Twice(m.0));
        }
        let hops_per_member = match op {
            Op::AllToAll => 2 * (n - 1),
            Op::Incast(k) => 4 * usize::from(k),
            _ => 2,
        };
        if hops_per_member > MAX_HOPS_PER_MEMBER {
            return Err(PlanRefusal::TooManyHops { op, members: n, hops: hops_per_member });
        }
        let mut builder =
            RingBuilder { planned: &mut planned, ring: index, order: &ring.order, local: ring.order.iter().map(|m| empty(*m, iters)).collect() };
        let chunk = match op {
            Op::AllReduce => builder.allreduce(),
            Op::AllToAll => builder.alltoall(),
            Op::Incast(k) => builder.incast(usize::from(k)),
            Op::Bcast => builder.bcast(),
        }?;
        let mut local = std::mem::take(&mut builder.local);
        for p in &mut local {
            p.chunk_bytes = chunk;
        }
        planned.plans.extend(local);
    }
    planned.rings = rings;
    for p in &planned.plans {
        p.validate().map_err(|error| PlanRefusal::Invalid { member: p.member.0, error })?;
    }
    Ok(planned)
}

fn empty(member: MemberId, iters: u64) -> MemberPlan {
    MemberPlan { member, outbound: Vec::new(), inbound: Vec::new(), steps: Vec::new(), chunk_bytes: 1, iters, report_every_ms: None, paths: 1 }
}

fn chunk_of(bytes: u64, parts: u64) -> Result<u32, PlanRefusal> {
    let chunk = bytes.div_ceil(parts.max(1)).max(1);
    match u32::try_from(chunk) {
        Ok(c) if c <= crate::model::MAX_SIZE => Ok(c),
        _ => Err(PlanRefusal::Chunk(chunk)),
    }
}

struct RingBuilder<'a> {
    planned: &'a mut Planned,
    ring: usize,
    order: &'a [MemberId],
    /// One plan per position in the ring.
    local: Vec<MemberPlan>,
}

impl RingBuilder<'_> {
    /// A new hop between two positions; its index on each end.
    fn hop(&mut self, from: usize, to: usize, role: HopRole) -> (u16, u16) {
        let hop = Hop { id: HopId(self.planned.hops.len() as u32), from: self.order[from], to: self.order[to] };
        self.planned.hops.push(PlannedHop { hop, ring: self.ring, role });
        self.local[from].outbound.push(hop);
        self.local[to].inbound.push(hop);
        ((self.local[from].outbound.len() - 1) as u16, (self.local[to].inbound.len() - 1) as u16)
    }

    fn allreduce(&mut self) -> Result<u32, PlanRefusal> {
        let n = self.order.len();
        for i in 0..n {
            self.hop(i, (i + 1) % n, HopRole::Data);
        }
        for p in &mut self.local {
            p.steps.push(Step::once(vec![], vec![0]));
            // 2(n-1)-1 middle steps: with the first, 2(n-1) chunks out.
            p.steps.push(Step { wait: vec![0], send: vec![0], repeat: (2 * n - 4) as u32 });
            p.steps.push(Step::once(vec![0], vec![]));
        }
        chunk_of(self.planned.ring_bytes, n as u64)
    }

    fn alltoall(&mut self) -> Result<u32, PlanRefusal> {
        let n = self.order.len();
        // Shift order (i+1, i+2, ...): no two members write to one receiver first.
        for shift in 1..n {
            for i in 0..n {
                self.hop(i, (i + shift) % n, HopRole::Data);
            }
        }
        for p in &mut self.local {
            p.steps.push(Step::once(vec![], (0..p.outbound.len() as u16).collect()));
            p.steps.push(Step::once((0..p.inbound.len() as u16).collect(), vec![]));
        }
        chunk_of(self.planned.ring_bytes, n as u64)
    }

    fn incast(&mut self, k: usize) -> Result<u32, PlanRefusal> {
        let n = self.order.len();
        let senders = |r: usize| (1..=k).map(move |d| (r + d) % n);
        // data[r][j]: the hop from round r's j-th sender into r, as (sender's out, receiver's in).
        let mut data = Vec::with_capacity(n);
        for r in 0..n {
            data.push(senders(r).map(|s| self.hop(s, r, HopRole::Data)).collect::<Vec<_>>());
        }
        // go[r]: the hops that release round r's senders, from the receiver before them.
        let mut go: Vec<Vec<(usize, u16, u16)>> = Vec::with_capacity(n);
        for r in 0..n {
            let before = (r + n - 1) % n;
            go.push(
                senders(r)
                    .filter(|s| *s != before)
                    .map(|s| {
                        let (out, into) = self.hop(before, s, HopRole::Go);
                        (s, out, into)
                    })
                    .collect(),
            );
        }
        const _: () = assert!(INCAST_BURST >= 2);
        if let Some(first) = go.first().filter(|g| !g.is_empty()) {
            self.local[n - 1].steps.push(Step::once(vec![], first.iter().map(|g| g.1).collect()));
        }
        for r in 0..n {
            let ins: Vec<u16> = data[r].iter().map(|d| d.1).collect();
            let release = if r + 1 < n { go[r + 1].iter().map(|g| g.1).collect() } else { vec![] };
            self.local[r].steps.push(Step { wait: ins.clone(), send: vec![], repeat: INCAST_BURST - 2 });
            self.local[r].steps.push(Step::once(ins, release));
            for (j, s) in senders(r).enumerate() {
                let wait = go[r].iter().find(|g| g.0 == s).map(|g| vec![g.2]).unwrap_or_default();
                self.local[s].steps.push(Step::once(wait, vec![data[r][j].0]));
                self.local[s].steps.push(Step { wait: vec![], send: vec![data[r][j].0], repeat: INCAST_BURST - 2 });
            }
        }
        chunk_of(self.planned.ring_bytes, k as u64 * u64::from(INCAST_BURST))
    }

    fn bcast(&mut self) -> Result<u32, PlanRefusal> {
        let n = self.order.len();
        for i in 0..n - 1 {
            self.hop(i, i + 1, HopRole::Data);
        }
        let pieces = bcast_pieces(n, self.planned.ring_bytes);
        for (i, p) in self.local.iter_mut().enumerate() {
            let (wait, send) = match i {
                0 => (vec![], vec![0]),
                _ if i == n - 1 => (vec![0], vec![]),
                _ => (vec![0], vec![0]),
            };
            p.steps = vec![Step { wait, send, repeat: (pieces - 1) as u32 }];
        }
        chunk_of(self.planned.ring_bytes, pieces)
    }
}

/// Pieces of a broadcast: 4 per member (the pipeline's fill costs n-2 pieces of the P+n-2 a
/// piece's trip takes, so P = 4n keeps it near 80% full), at least 8, each at least
/// [`MIN_PIECE`] bytes.
pub fn bcast_pieces(n: usize, bytes: u64) -> u64 {
    let want = (4 * n as u64).max(8);
    want.min((bytes / MIN_PIECE).max(1)).min(MAX_STEPS as u64)
}

/// Iterations of `op` among `members` that take about `secs` at the slowest member's link rate:
/// a healthy fabric's time. An unknown rate counts as 100 Gb/s; an incast's iteration is every
/// member's round.
pub fn iterations_for(op: Op, members: &[crate::collective::Member], size: u64, secs: f64) -> u64 {
    let slowest = members.iter().filter_map(|m| m.capacity_gbps).fold(f64::INFINITY, f64::min);
    let gbps = if slowest.is_finite() && slowest > 0.0 { slowest } else { 100.0 };
    let n = members.len().max(2);
    let bits = size as f64 * 8.0 * op.bus_factor(n).max(1.0) * if matches!(op, Op::Incast(_)) { n as f64 } else { 1.0 };
    let per_iter = bits / (gbps * 1e9);
    ((secs / per_iter.max(1e-9)) as u64).clamp(1, 1_000_000)
}

/// The plan's iterations for a run stopped at `secs` (`collective --duration`, and `accept`'s
/// collective stages): four times [`iterations_for`]'s, so that a link faster than its rate says
/// (or an unknown one, taken as 100 Gb/s) still runs the whole time; the members are told to
/// stop at `secs`, and a slow fabric finishes fewer iterations in it rather than running on.
pub fn iterations_within(op: Op, members: &[crate::collective::Member], size: u64, secs: f64) -> u64 {
    iterations_for(op, members, size, secs).saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(n: u32) -> Vec<Ring> {
        vec![Ring { rail: None, order: (0..n).map(MemberId).collect() }]
    }

    fn sends(planned: &Planned) -> u64 {
        planned.plans.iter().map(|p| p.steps.iter().map(|s| s.send.len() as u64 * s.times()).sum::<u64>()).sum()
    }

    fn waits(planned: &Planned) -> u64 {
        planned.plans.iter().map(|p| p.steps.iter().map(|s| s.wait.len() as u64 * s.times()).sum::<u64>()).sum()
    }

    #[test]
    fn every_op_plans_valid_members_whose_sends_match_their_waits() {
        for n in [2u32, 3, 5, 8, 17, 64] {
            for op in [Op::AllReduce, Op::AllToAll, Op::Bcast, Op::Incast(1), Op::Incast(2), Op::Incast(7)] {
                if (n as usize) < op.min_members() {
                    assert!(matches!(plan(op, ring(n), 1 << 20, 3), Err(PlanRefusal::TooFew { .. })));
                    continue;
                }
                let planned = plan(op, ring(n), 1 << 20, 3).unwrap();
                assert_eq!(planned.plans.len(), n as usize);
                for p in &planned.plans {
                    assert_eq!(p.validate(), Ok(()), "{op} n={n} member {}", p.member.0);
                }
                // Every chunk written is waited for: no hop is left with chunks nobody takes.
                assert_eq!(sends(&planned), waits(&planned), "{op} n={n}");
            }
        }
    }

    #[test]
    fn allreduce_sends_2_n_minus_1_chunks_at_every_size() {
        for n in [2u32, 3, 4, 9] {
            let planned = plan(Op::AllReduce, ring(n), 1 << 20, 1).unwrap();
            for p in &planned.plans {
                assert_eq!(p.steps.iter().filter(|s| !s.send.is_empty()).map(Step::times).sum::<u64>(), 2 * u64::from(n - 1), "n={n}");
            }
        }
    }

    #[test]
    fn allreduce_is_nccls_ring() {
        let planned = plan(Op::AllReduce, ring(4), 4 << 20, 1).unwrap();
        let p = &planned.plans[1];
        assert_eq!(p.steps.iter().map(Step::times).sum::<u64>(), 2 * 3 + 1);
        assert_eq!(p.steps.iter().filter(|s| !s.send.is_empty()).map(Step::times).sum::<u64>(), 2 * 3);
        assert_eq!(p.outbound[0].to, MemberId(2));
        assert_eq!(p.inbound[0].from, MemberId(0));
        assert_eq!(p.chunk_bytes, 1 << 20);
    }

    #[test]
    fn rails_split_the_size_and_keep_rings_apart() {
        let rings =
            vec![Ring { rail: Some(0), order: vec![MemberId(0), MemberId(2)] }, Ring { rail: Some(1), order: vec![MemberId(1), MemberId(3)] }];
        let planned = plan(Op::AllReduce, rings, 4 << 20, 1).unwrap();
        assert_eq!(planned.ring_bytes, 2 << 20);
        assert!(planned.hops.iter().all(|h| (h.ring == 0) == (h.hop.from.0 % 2 == 0)));
        let twice =
            vec![Ring { rail: Some(0), order: vec![MemberId(0), MemberId(1)] }, Ring { rail: Some(1), order: vec![MemberId(1), MemberId(2)] }];
        assert_eq!(plan(Op::AllReduce, twice, 1 << 20, 1).unwrap_err(), PlanRefusal::Twice(1));
    }

    #[test]
    fn alltoall_beyond_the_hop_bound_is_refused_with_the_way_out() {
        let err = plan(Op::AllToAll, ring(600), 1 << 20, 1).unwrap_err();
        assert!(err.to_string().contains("allreduce"), "{err}");
    }

    #[test]
    fn incast_rounds_release_each_other_and_go_hops_are_marked() {
        let planned = plan(Op::Incast(3), ring(6), 1 << 20, 2).unwrap();
        assert!(planned.hops.iter().any(|h| h.role == HopRole::Go));
        let data_into_0: Vec<_> = planned.hops.iter().filter(|h| h.role == HopRole::Data && h.hop.to == MemberId(0)).map(|h| h.hop.from.0).collect();
        assert_eq!(data_into_0, vec![1, 2, 3]);
    }

    #[test]
    fn bcast_pieces_fill_the_pipeline() {
        assert_eq!(bcast_pieces(4, 64 << 20), 16);
        assert_eq!(bcast_pieces(2, 64 << 20), 8);
        assert_eq!(bcast_pieces(100, 8192), 2);
    }

    #[test]
    fn duration_gives_iterations_from_the_slowest_link() {
        let m = |gbps| crate::collective::Member {
            host: "h".into(),
            device: "mlx5_0".into(),
            port: 1,
            rail: None,
            capacity_gbps: Some(gbps),
            link_layer: crate::port::LinkLayer::InfiniBand,
            mtu: None,
        };
        // 4 members, the slowest at 100 Gb/s, allreduce of 100 MB: 1.5 x 800 Mb = 12 ms an iteration.
        let members = vec![m(100.0), m(100.0), m(400.0), m(100.0)];
        assert!((99..=100).contains(&iterations_for(Op::AllReduce, &members, 100_000_000, 1.2)));
        assert_eq!(iterations_for(Op::AllReduce, &members, 100_000_000, 0.0), 1);
        assert_eq!(iterations_for(Op::AllToAll, &members, 100_000_000, 0.0), 1);
    }
}
