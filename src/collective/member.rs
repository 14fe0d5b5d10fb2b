//! Who a collective's member is, as reached: one (host, device, port) endpoint, its rail (with
//! `--rails`), its port's capacity and link layer. The planner orders members by these, the
//! judge bars a ring by their capacity, and the document names them.

use serde::{Deserialize, Serialize};

/// One member of a collective, as its agent answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// The host as the endpoint named it (sanitised before it is shown).
    pub host: String,
    pub device: String,
    pub port: u8,
    /// The rail index (0-based, in the `--rails` order) this member's port is, if any.
    pub rail: Option<u16>,
    /// The port's link capacity, Gb/s, where the agent could read it.
    pub capacity_gbps: Option<f64>,
    pub link_layer: crate::port::LinkLayer,
    /// The port's active MTU, where known: the ring's bar counts framing at the path MTU (as
    /// `pair` does, `pair::verdict::payload_efficiency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}
