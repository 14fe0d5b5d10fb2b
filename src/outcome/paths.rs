//! `--paths`: one path's figures in a test's result (`"paths":[{"flow_label","udp_sport",
//! "gbps","retransmits"}]`, contract "Many paths").

use crate::units;
use serde::{Deserialize, Serialize};

/// One QP of a `--paths` bandwidth test: the flow label it carried, the UDP source port that
/// label gives on RoCE v2 (both ends of the path set the same label, so the data and its ACKs
/// leave with this port), what it moved per second, and its retransmissions where a per-QP
/// counter can be read (none today: rxe has no per-QP counters and fabcheck binds no mlx5
/// counter set per QP; the port's retransmission counters for the whole test are in `counters`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PathFigure {
    pub flow_label: u32,
    pub udp_sport: u16,
    #[serde(serialize_with = "units::serialize_3dp")]
    pub gbps: f64,
    pub retransmits: Option<u64>,
}
