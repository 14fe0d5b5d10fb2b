//! The control channel: a small versioned line protocol (pure), the agent that serves it,
//! and the controller side that drives agents over local pipes, ssh or TCP.

pub mod agent;
pub mod controller;
pub mod endpoint;
pub mod lines;
pub mod link;
pub mod protocol;
pub mod serve;
