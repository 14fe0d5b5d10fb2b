//! `fabcheck collective` (0.5): the traffic of a training step, every member sending and
//! receiving at once, judged hop by hop. The controller plans each member's part
//! ([`MemberPlan`](crate::model::collective::MemberPlan)) and hands the plans to whatever
//! runs them ([`Members`]): the agents over RC, or the step model in tests.

pub mod agents;
pub mod member;
pub mod members;

pub use member::Member;
pub use members::{Members, RunError};
pub mod bisect;
pub mod blame;
pub mod counters;
pub mod doc;
pub mod figures;
pub mod html;
pub mod judge;
pub mod live;
pub mod once;
pub mod op;
pub mod order;
pub mod paths;
pub mod plan;
pub mod run;
pub mod stepmodel;
pub mod text;
