//! The tables the SM wrote, read after discovery and judged: forwarding tables walked host to
//! host (`route`) and judged (`judge`), partitions (`pkey`). Pure over the tables `discover`
//! reads.

pub mod creditloop;
pub mod judge;
pub mod pkey;
pub mod route;
