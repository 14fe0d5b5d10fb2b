//! A collective member's messages checked on both ends (0.5): each hop's peer endpoint, the
//! ring every inbound hop lends, and the bounds an agent holds a plan to. Pure, and a leaf like
//! the rest of `model`, so the agent's engine (`perf`) and the controller (`control`) share it
//! without importing each other.

use super::{Endpoint, MAX_ITERS};
use serde::{Deserialize, Serialize};

/// One hop's end as the other end needs it: for an inbound hop the receiver's QP and ring
/// (`addr`, `rkey`, `len`), for an outbound hop the sender's QP (no memory lent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopPeer {
    pub hop: super::collective::HopId,
    pub endpoint: Endpoint,
}

/// Slots in each inbound hop's ring (the receiver lends `RING_SLOTS * chunk_bytes`); a sender
/// keeps at most this many writes in flight on a hop, so no two in flight share a slot.
pub const RING_SLOTS: u32 = 8;
/// Most bytes a collective member may ask an agent to register (the serve budget caps it
/// further): every inbound ring and the send buffer together.
pub const MAX_MEMBER_BYTES: u64 = 1 << 34;
/// Longest stall limit a collective member is given (the run's deadline bounds it anyway).
pub const MAX_MEMBER_STALL_MS: u64 = 600_000;

/// Why a collective request cannot be run as given (checked by the agent before anything is
/// opened, and by the controller on what comes back).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemberWireError {
    #[error("invalid member plan: {0}")]
    Plan(#[from] super::collective::PlanError),
    #[error("the plan asks {0} iterations; at most {MAX_ITERS}")]
    Iters(u64),
    #[error("the plan reports every {0} ms; at least {} and at most {}", super::MIN_REPORT_EVERY_MS, super::MAX_DURATION_MS)]
    ReportEvery(u64),
    #[error("the plan would register {0} bytes; at most {MAX_MEMBER_BYTES}")]
    TooLarge(u64),
    #[error("stall limit {0} ms; at most {MAX_MEMBER_STALL_MS}")]
    Stall(u64),
    #[error("hop {0} is not one of this member's hops")]
    UnknownHop(u32),
    #[error("hop {0} is named twice")]
    DuplicateHop(u32),
    #[error("hop {0} has no peer endpoint")]
    MissingHop(u32),
    #[error("the endpoint of hop {0} names {1} QPs; a hop is {2} (one per path)")]
    QpCount(u32, usize, u32),
    #[error("the result of hop {0} names {1} paths; the plan asked {2}")]
    PathCount(u32, usize, u32),
    #[error("the paths of hop {0} moved more bytes than the hop did")]
    PathBytes(u32),
    #[error("the result names {0}, not the member asked")]
    WrongMember(u32),
    #[error("the result's counter window holds {0} counters or a time that is no time; at most {}", super::collective::MAX_WINDOW_COUNTERS)]
    Window(usize),
}

/// Checks a `prepare_member` request (the agent takes no plan on trust).
pub fn check_member_plan(plan: &super::collective::MemberPlan, stall_timeout_ms: u64) -> Result<(), MemberWireError> {
    plan.validate()?;
    if plan.iters == 0 || plan.iters > MAX_ITERS {
        return Err(MemberWireError::Iters(plan.iters));
    }
    if let Some(ms) = plan.report_every_ms.filter(|ms| !(super::MIN_REPORT_EVERY_MS..=super::MAX_DURATION_MS).contains(ms)) {
        return Err(MemberWireError::ReportEvery(ms));
    }
    if stall_timeout_ms > MAX_MEMBER_STALL_MS {
        return Err(MemberWireError::Stall(stall_timeout_ms));
    }
    let bytes = member_bytes(plan);
    if bytes > MAX_MEMBER_BYTES {
        return Err(MemberWireError::TooLarge(bytes));
    }
    Ok(())
}

/// The bytes a member registers: a ring of [`RING_SLOTS`] chunks per inbound hop, and one
/// chunk to send from (every outbound write reads the same bytes).
pub fn member_bytes(plan: &super::collective::MemberPlan) -> u64 {
    let chunk = u64::from(plan.chunk_bytes);
    (plan.inbound.len() as u64).saturating_mul(u64::from(RING_SLOTS)).saturating_mul(chunk).saturating_add(chunk)
}

/// Checks a `connect_hops` or `member_ready` list against the plan: exactly one endpoint per
/// hop the member holds, each of one QP per path (`plan.paths`). Returns the peers in the
/// plan's order, outbound hops first, then inbound.
pub fn match_hops<'a>(plan: &super::collective::MemberPlan, peers: &'a [HopPeer]) -> Result<Vec<&'a Endpoint>, MemberWireError> {
    let mut seen = std::collections::HashSet::new();
    for p in peers {
        if !seen.insert(p.hop) {
            return Err(MemberWireError::DuplicateHop(p.hop.0));
        }
        if !plan.outbound.iter().chain(&plan.inbound).any(|h| h.id == p.hop) {
            return Err(MemberWireError::UnknownHop(p.hop.0));
        }
        if p.endpoint.qpns.len() != plan.paths as usize {
            return Err(MemberWireError::QpCount(p.hop.0, p.endpoint.qpns.len(), plan.paths));
        }
    }
    plan.outbound
        .iter()
        .chain(&plan.inbound)
        .map(|h| peers.iter().find(|p| p.hop == h.id).map(|p| &p.endpoint).ok_or(MemberWireError::MissingHop(h.id.0)))
        .collect()
}

/// Checks a `member_done` against the plan it answers: its member, and one figure per
/// outbound hop of the plan at most, each a hop of the plan, with no more paths than asked.
pub fn check_member_result(plan: &super::collective::MemberPlan, result: &super::collective::MemberResult) -> Result<(), MemberWireError> {
    if result.member != plan.member {
        return Err(MemberWireError::WrongMember(result.member.0));
    }
    if let Some(w) = &result.window {
        if w.counters.len() > super::collective::MAX_WINDOW_COUNTERS || !(w.seconds.is_finite() && w.seconds >= 0.0) {
            return Err(MemberWireError::Window(w.counters.len()));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for h in &result.hops {
        if !seen.insert(h.hop) {
            return Err(MemberWireError::DuplicateHop(h.hop.0));
        }
        if !plan.outbound.iter().any(|o| o.id == h.hop) {
            return Err(MemberWireError::UnknownHop(h.hop.0));
        }
        if h.paths.len() > plan.paths as usize {
            return Err(MemberWireError::PathCount(h.hop.0, h.paths.len(), plan.paths));
        }
        if h.paths.iter().map(|p| p.bytes).fold(0u64, u64::saturating_add) > h.bytes {
            return Err(MemberWireError::PathBytes(h.hop.0));
        }
    }
    Ok(())
}
