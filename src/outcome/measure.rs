//! What a test measured: one result per test, direction and size, as every document that
//! carries measurements (pair, `--rails`, mesh's pair records) writes it and every printer
//! reads it.

use crate::model::{Direction, LatencySummary, TestKind};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub test: TestKind,
    pub direction: Direction,
    pub size: u32,
    pub iterations: u64,
    pub qps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "rounded_latency")]
    pub lat_us: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub bw_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub peak_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_6dp")]
    pub msg_rate_mpps: Option<f64>,
    /// Retransmission and error counters that rose during the test, as `a:name` / `b:name`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Why the test failed to complete (completion error, stall), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

impl TestResult {
    /// Which result this is.
    pub fn key(&self) -> super::ResultKey {
        super::ResultKey { test: self.test, direction: self.direction, size: self.size }
    }
}

/// Serde: latency figures to three decimals in the document.
fn rounded_latency<S: serde::Serializer>(value: &Option<LatencySummary>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(l) => s.serialize_some(&l.rounded()),
        None => s.serialize_none(),
    }
}

/// Which of a mesh pair's figures made it bad: its bandwidth (short of the link or the median),
/// its latency (an outlier), both, or neither said (a test that failed, an expectation): then
/// every test of the pair stands for the verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairBlame {
    pub bandwidth: bool,
    pub latency: bool,
}

impl PairBlame {
    /// Whether a failed pair's `result` is one of the figures that failed it.
    pub fn names(self, result: &TestResult) -> bool {
        match (self.bandwidth, self.latency) {
            (false, false) => true,
            (bandwidth, latency) => (bandwidth && result.bw_gbps.is_some()) || (latency && result.lat_us.is_some()),
        }
    }
}
