//! fabcheck: a verbs-level RDMA fabric validator.
//!
//! Layers: `verbs` (the only unsafe code) -> `probe` (inventory) -> `diagnose` (pure rules)
//! -> `report` (human and JSON output). `perf` measures, `control` connects agents, `pair`
//! orchestrates a two-node run.
#![deny(unsafe_code)]

pub mod agent;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod control;
pub mod diagnose;
pub mod error;
pub mod exporter;
pub mod fabric;
pub mod gpu;
pub mod mesh;
pub mod pair;
pub mod perf;
pub mod probe;
pub mod progress;
pub mod report;
pub mod spec;
pub mod sys;
pub mod units;
