//! Who runs a collective's plans: one seam, so the planner, the judge and `--bisect` are the
//! same code whether the members are agents moving bytes over RC or the step model.

use crate::model::collective::{MemberId, MemberPlan, MemberResult};
use crate::outcome::loss::Loss;
use std::time::Duration;

/// Why a run of plans gave no result.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// An agent was lost (dead, unreachable, timed out); it names the member.
    Lost { member: MemberId, loss: Loss },
    /// An agent refused or failed its plan, in its own words.
    Failed { member: MemberId, cause: String, remedy: String },
}

/// Runs one collective: every plan at once, one result per plan (any order), or the member
/// that could not. Must return within `deadline` (plus a bounded grace to tear down), having
/// left nothing running on any member.
pub trait Members {
    fn run(&mut self, plans: &[MemberPlan], deadline: Duration) -> Result<Vec<MemberResult>, RunError>;
}
