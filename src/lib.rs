//! fabcheck: a verbs-level RDMA fabric validator.
//!
//! Layers, bottom up: the `fabcheck-verbs` crate (the only unsafe code: libibverbs, librdmacm,
//! the MAD libraries and the CUDA-free TSC, loaded at run time) -> `sys` (the OS in safe code),
//! `model` (what a test is) and `probe` (the inventory) -> `diagnose` (pure rules) and `gpu` ->
//! `perf` (the measured loops), `control` (the controller's side of agents: protocol, links,
//! the hub) and `agent` (an agent's side: `serve` and the per-session state machine) -> `pair`,
//! `mesh`, `fabric`, `compare`, `exporter` -> `report` (every document and every writer) ->
//! `commands` (flags to runs) -> `main.rs`. `docs/architecture.md` draws it.
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
pub mod mad;
pub mod mesh;
pub mod model;
pub mod outcome;
pub mod pair;
pub mod perf;
pub mod port;
pub mod probe;
pub mod progress;
pub mod report;
pub mod sanitise;
pub mod sys;
pub mod units;
