//! The control channel: a small versioned line protocol (pure), the agent that serves it,
//! and the controller side: a one-thread reactor (`hub`) over every agent's channel (local
//! pipes, ssh or TCP), driving pure conversations (`drive`, `reach`).

pub mod agent;
pub mod drive;
pub mod endpoint;
pub mod hub;
pub mod lines;
pub mod link;
pub mod protocol;
pub mod reach;
pub mod serve;
