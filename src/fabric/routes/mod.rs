//! The tables the SM wrote, read after discovery and judged: forwarding tables walked host to
//! host over every LID of an LMC range (`route`) and judged (`judge`), their channel
//! dependencies per VL (`creditloop`), multicast trees (`mcast`), SL to VL against VL
//! arbitration (`vl`), partitions (`pkey`). Pure over the tables `discover` reads.

pub mod creditloop;
pub mod judge;
pub mod mcast;
pub mod pkey;
pub mod route;
pub mod vl;
