//! `fabcheck accept`: one command from the checklist over the whole fleet, one report, a drain
//! list (contract 0.5, "Fleet acceptance"). Level 1: every node's `check` through its agent,
//! and the drift across nodes. docs/accept.md says how to read the report.
//!
//! Rooms: facts (a node's value of each drift key) and answer (the agent's side of `check`),
//! which the agent uses; drift (the majority rule), talk (one node's conversation), run (the
//! fleet), report (the document, human and oneline), junit, html, drain (Slurm).

pub mod answer;
pub mod drain;
pub mod drift;
pub mod facts;
pub mod html;
pub mod junit;
pub mod report;
pub mod run;
pub mod talk;
