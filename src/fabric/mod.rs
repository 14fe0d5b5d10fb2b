//! `fabcheck fabric`: the whole InfiniBand subnet over MADs, judged.
//!
//! `discover` is the only I/O (through `fabcheck_verbs::mad`); everything else is pure:
//! `decode` (raw MAD payloads), `model` (typed data), `links` (cables from ports),
//! `topology` (the expected cabling file), `expect` (thresholds), `judge` (findings) and
//! `report` (human and JSON output). The design checks read plain files too: `csv` (bounded
//! RFC 4180), `plan` (a cabling plan as an expected topology), `rails`, `design` (tiers and
//! fat-tree rules) and `duplicate` (GUIDs and descriptions that should be unique). The tables read after discovery are judged apart:
//! `route`/`route_judge` (forwarding tables walked), `pkey` (partitions), `phy` (FEC, lanes,
//! congestion).

pub mod decode;
pub mod discover;
pub mod expect;
pub mod judge;
pub mod links;
pub mod local;
pub mod model;
pub mod phy;
pub mod pkey;
pub mod report;
pub mod route;
pub mod route_judge;
pub mod soak;
pub mod topology;

// Fabric design (#32): cabling plans, rails, fat-tree rules, duplicate identities.
pub mod csv;
pub mod design;
pub mod duplicate;
#[cfg(test)]
pub(crate) mod fixture;
pub mod plan;
pub mod rails;

pub use expect::FabricExpect;
pub use judge::{judge, Judgement};
pub use model::Fabric;
