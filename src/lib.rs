//! fabcheck: a verbs-level RDMA fabric validator.
//!
//! Layers, bottom up (docs/architecture.md's layer table, which `tests/integration/architecture.rs`
//! holds every `crate::` path to): the `fabcheck-verbs` crate (the only unsafe code: libibverbs,
//! librdmacm, the MAD libraries, CUDA and the TSC, loaded at run time) -> the leaves `units`,
//! `sanitise`, `port` -> `model` -> `outcome` (the one vocabulary of results), `progress` ->
//! `sys` -> `mad` -> `probe` (everything read off a node; `probe::node::read` the one node read)
//! -> `error` -> `gpu` -> `diagnose` (pure rules) -> `report` (the printers) -> `perf`, `control`
//! -> `agent` -> `fabric`, `compare`, `exporter` -> `pair` -> `mesh`, `accept`, `collective` ->
//! `cli` (clap types only) -> `commands` (flags to runs) -> `main.rs`.
#![deny(unsafe_code)]

pub mod accept;
pub mod agent;
pub mod cli;
pub mod collective;
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
pub mod progress_record;
pub mod report;
pub mod sanitise;
pub mod sys;
pub mod units;
