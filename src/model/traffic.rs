//! What one side's port carried per priority during a test (RoCE): `pair.qos` tells from it
//! which priority the test's bytes rode and whether PFC held that priority. Plain data: the
//! agent fills it (`probe::qos::traffic`), the controller judges it (`diagnose::qos_pair`).

use serde::{Deserialize, Serialize};

/// Bytes per priority over one test, and the port's PFC as read before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrioTraffic {
    /// Bytes sent on priority 0..7 during the test (`tx_prioN_bytes` after minus before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<[u64; 8]>,
    /// Bytes received on priority 0..7 (`rx_prioN_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes: Option<[u64; 8]>,
    /// Priority 0..7 to whether PFC is on for the port; `None` where it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc: Option<[bool; 8]>,
    /// Why there are no byte counts, where there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<NoCounters>,
}

/// Why a side has no per-priority byte counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoCounters {
    /// The port's netdev is not known.
    NoNetdev,
    /// `ethtool` is not installed on that host.
    EthtoolMissing,
    /// `ethtool -S` failed or did not answer in time.
    EthtoolFailed,
    /// The driver prints no `rx_prioN_bytes` / `tx_prioN_bytes` (Soft-RoCE's veth, most
    /// non-NVIDIA NICs).
    NoPriorityCounters,
    /// A counter went down during the test (cleared, or the driver reloaded).
    Reset,
}

impl PrioTraffic {
    /// Bytes sent and received on each priority.
    pub fn total(&self) -> Option<[u64; 8]> {
        let (tx, rx) = (self.tx_bytes?, self.rx_bytes?);
        Some(std::array::from_fn(|p| tx[p].saturating_add(rx[p])))
    }
}
