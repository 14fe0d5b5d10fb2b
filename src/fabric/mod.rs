//! `fabcheck fabric`: the whole InfiniBand subnet over MADs, judged.
//!
//! In rooms: `discovery` (the subnet over MADs and its typed model: the only I/O), `design`
//! (the expected cabling and the design rules), `routes` (forwarding tables and partitions),
//! `counters` (the physical layer and soak windows), `ibdiagnet` (AR, SHARP and CC judged from an
//! ibdiagnet capture); `expect` (thresholds), `judgement` (what judging yields: findings and
//! the link ends they mark, below both `judge` and `design`), `judge` (the subnet's findings) and `report` (human and JSON output) at the top. The MAD payloads are
//! decoded below, in `crate::mad`, which `check`'s reads of its own ports share.

pub mod counters;
pub mod design;
pub mod discovery;
pub mod expect;
pub mod ibdiagnet;
pub mod judge;
pub mod judgement;
pub mod report;
pub mod routes;
pub mod rulebook;

pub use discovery::model::Fabric;
pub use expect::FabricExpect;
pub use judge::judge;
pub use judgement::Judgement;
