//! `fabcheck accept`: one command from the checklist over the whole fleet, one report, a drain
//! list (contract 0.5, "Fleet acceptance"). Level 1: every node's `check` through its agent,
//! and the drift across nodes. docs/accept.md says how to read the report.
//!
//! A node's drift facts are read in `probe::facts` and the agent's side of `check` is
//! `agent::check_answer` (both below this room, so the agent never imports it). Rooms: drift (the majority rule), talk (one node's conversation), run (the
//! fleet), report (the document, human and oneline), junit, html, drain (Slurm).

pub mod drain;
pub mod drift;
pub mod html;
pub mod junit;
pub mod report;
pub mod run;
pub mod talk;
