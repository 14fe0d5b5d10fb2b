//! One interval's figures of a running test (`--report-every`): what an agent sends while the
//! test runs (`progress` replies), and what `fabcheck.progress.v1` records carry.

use serde::{Deserialize, Serialize};

/// The figures of the last interval of a running test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Milliseconds since the side's run began (its warm-up included), at the interval's end.
    pub t_ms: u64,
    /// Bandwidth over the interval (bandwidth tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
    /// Latency over the interval's round trips (latency tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_us: Option<IntervalLatency>,
}

/// An interval's latency, microseconds (one-way where the test reports one-way), from a
/// log-linear histogram: each figure at most 1/16 above the true one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntervalLatency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    /// Round trips in the interval.
    pub samples: u64,
}
