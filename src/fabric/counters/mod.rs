//! The ports' counters across the subnet: the physical layer (FEC, lanes, congestion: `phy`)
//! and what rose over a `--soak` window (`soak`). Pure over what `discover` read.

pub mod phy;
pub mod soak;
