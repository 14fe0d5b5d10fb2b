//! The control channel: a small versioned line protocol (pure) and the figures it may carry,
//! and the controller side: a one-thread reactor (`hub`) over every agent's channel (local
//! pipes, ssh or TCP), driving pure conversations (`drive`, `reach`), behind one seam for the
//! runs above it (`agents`); what goes wrong is a typed `loss`, put
//! into words by `report::loss`. The agent that answers
//! lives in `crate::agent`; nothing here imports `perf`.

pub mod agents;
pub mod drive;
pub mod endpoint;
pub mod figures;
pub mod hub;
pub mod kubectl;
pub mod lines;
pub mod link;
pub mod link_id;
pub mod protocol;
pub mod reach;
pub mod ssh_share;
pub mod ssh_sockets;
