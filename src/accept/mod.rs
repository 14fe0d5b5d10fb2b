//! `fabcheck accept`: one command from the checklist to the collective over the whole fleet,
//! one report, a drain list (contract 0.5, "Fleet acceptance"). Level 1: every node's `check`
//! through its agent, and the drift across nodes; level 2 adds `pair --rails` between ring
//! neighbours and `fabric`; level 3 `mesh --pattern shift`, the collectives and a soak window.
//! docs/accept.md says how to read the report.
//!
//! A node's drift facts are read in `probe::facts` and the agent's side of `check` is
//! `agent::check_answer` (both below this room, so the agent never imports it). Rooms: drift
//! (the majority rule), talk (one node's conversation), config (what a run is given and tells),
//! run (the fleet, level by level), stage
//! (a stage's result and the nodes its document blames, pure), stages (the traffic stages over
//! mesh's and collective's libraries), fabric_stage (`fabric` from the controller, or skipped),
//! budget (level 3's time, pure), soak (the window's judgement, pure), report (the document,
//! human and oneline), junit, html, drain (Slurm).

pub mod budget;
pub mod config;
pub mod drain;
pub mod drift;
pub mod fabric_stage;
pub mod html;
pub mod junit;
pub mod report;
pub mod run;
pub mod soak;
pub mod stage;
pub mod stages;
pub mod talk;
