//! fabcheck: a verbs-level RDMA fabric validator.
//!
//! Layers, bottom up: the `fabcheck-verbs` crate (the only unsafe code: libibverbs, librdmacm,
//! the MAD libraries, CUDA and the TSC, loaded at run time) -> the leaves `units`, `sanitise`,
//! `port` -> `model` -> `outcome` (the one vocabulary of results) and `sys` -> `mad` -> `probe`
//! (everything read off a node; `probe::node::read` the one node read) -> `gpu` -> `diagnose`
//! (pure rules) -> `report` (the printers) -> `perf`, `control`, `agent` -> `pair`, `mesh`,
//! `fabric`, `compare`, `exporter` -> `commands` (flags to runs) -> `main.rs`.
//! `docs/architecture.md` draws it.
#![deny(unsafe_code)]

pub mod accept;
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
