//! `fabcheck.collective.v1`, as the contract gives it: the members, each ring's figures and
//! hops, the total, the suspects, the findings and `--bisect`'s sub-runs (its
//! [`Document`](crate::report::Document), which `report::output` writes in every format, is
//! `text::CollectiveReport`).

use super::op::Op;
use crate::mesh::analysis::Suspect;
use crate::model::LatencySummary;
use crate::outcome::{Finding, Verdict};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "fabcheck.collective.v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveDoc {
    pub schema: String,
    pub verdict: Verdict,
    pub op: Op,
    /// `--size`: bytes per member (nccl-tests' S), split over the rails' rings.
    pub size: u64,
    pub iters: u64,
    pub members: Vec<MemberDoc>,
    pub rings: Vec<RingDoc>,
    pub total: Total,
    pub suspects: Vec<Suspect>,
    pub findings: Vec<Finding>,
    /// `--bisect`'s sub-runs, in the order they ran (absent without `--bisect`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bisect: Vec<SubRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberDoc {
    pub host: String,
    pub device: String,
    pub rail: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RingDoc {
    pub rail: Option<u16>,
    /// Members (indexes into `members`) in ring order.
    pub order: Vec<u32>,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    pub capacity_gbps: Option<f64>,
    pub hops: Vec<HopDoc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopDoc {
    /// Indexes into `members`.
    pub from: u32,
    pub to: u32,
    pub step_us: Option<LatencySummary>,
    pub gbps: f64,
    /// `--paths N` (N > 1): each of the hop's QPs, in path order: its flow label, the UDP
    /// source port that label gives, its rate (absent with one path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<crate::outcome::paths::PathFigure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Total {
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
}

/// One run of `--bisect`: its members (indexes into `members`), its busbw (the slowest
/// ring's) and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubRun {
    pub members: Vec<u32>,
    pub busbw_gbps: f64,
    pub verdict: Verdict,
}
