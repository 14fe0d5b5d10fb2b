//! The per-priority byte counters of a RoCE port around one test (`pair.qos`), on the agent's
//! host: `ethtool -S` before and after (a bounded child each, outside the measured loop), and
//! the port's PFC (`dcb -j pfc show`, else `mlnx_qos`), remembered a minute per netdev so a
//! sweep does not ask it per size. The judgment is `diagnose::qos_pair` (pure).

use super::counters;
use crate::model::traffic::{NoCounters, PrioTraffic};
use crate::probe::tool::{self, ToolError};
use crate::probe::tree::SysfsRoot;
use std::time::{Duration, Instant};

const ETHTOOL_LIMIT: Duration = Duration::from_secs(3);
const STATS_CAP: u64 = crate::probe::tree::REPORT_CAP;
/// How long a port's PFC read is reused.
const PFC_TTL: Duration = Duration::from_secs(60);

/// One read of a port's per-priority bytes (tx, rx), or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    bytes: Result<([u64; 8], [u64; 8]), NoCounters>,
    pfc: Option<[bool; 8]>,
}

/// Reads `device` port `port`'s counters now (live).
pub fn snapshot(device: &str, port: u8) -> Snapshot {
    let sysfs = SysfsRoot::live();
    let Some(netdev) = sysfs.port_netdev(device, u32::from(port), &[]).filter(|n| crate::probe::tree::valid_tool_netdev(n)) else {
        return Snapshot { bytes: Err(NoCounters::NoNetdev), pfc: None };
    };
    let bytes = match tool::run("ethtool", &["-S", &netdev], ETHTOOL_LIMIT, STATS_CAP) {
        Ok(report) => from_report(&report),
        Err(ToolError::NotInstalled) => Err(NoCounters::EthtoolMissing),
        Err(_) => Err(NoCounters::EthtoolFailed),
    };
    Snapshot { bytes, pfc: pfc_remembered(&netdev) }
}

/// The byte counters of a report (pure).
pub fn from_report(report: &str) -> Result<([u64; 8], [u64; 8]), NoCounters> {
    let c = counters::parse(report).filter(counters::PrioCounters::has_bytes).ok_or(NoCounters::NoPriorityCounters)?;
    Ok((c.tx_bytes.map(|v| v.unwrap_or(0)), c.rx_bytes.map(|v| v.unwrap_or(0))))
}

/// What the port carried between two reads (pure).
pub fn window(before: &Snapshot, after: &Snapshot) -> PrioTraffic {
    let pfc = before.pfc.or(after.pfc);
    match (&before.bytes, &after.bytes) {
        (Ok((tx0, rx0)), Ok((tx1, rx1))) => {
            if (0..8).any(|p| tx1[p] < tx0[p] || rx1[p] < rx0[p]) {
                return PrioTraffic { pfc, missing: Some(NoCounters::Reset), ..PrioTraffic::default() };
            }
            PrioTraffic {
                tx_bytes: Some(std::array::from_fn(|p| tx1[p] - tx0[p])),
                rx_bytes: Some(std::array::from_fn(|p| rx1[p] - rx0[p])),
                pfc,
                missing: None,
            }
        }
        (Err(why), _) | (_, Err(why)) => PrioTraffic { pfc, missing: Some(*why), ..PrioTraffic::default() },
    }
}

/// The port's PFC, read at most once a minute per netdev.
fn pfc_remembered(netdev: &str) -> Option<[bool; 8]> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Seen = HashMap<String, (Instant, Option<[bool; 8]>)>;
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some((at, pfc)) = seen.lock().ok().and_then(|m| m.get(netdev).copied()) {
        if at.elapsed() < PFC_TTL {
            return pfc;
        }
    }
    let pfc = super::read::live_pfc(netdev);
    if let Ok(mut m) = seen.lock() {
        m.insert(netdev.to_string(), (Instant::now(), pfc));
    }
    pfc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(tx3: u64, rx3: u64) -> Snapshot {
        let mut tx = [0; 8];
        let mut rx = [0; 8];
        tx[3] = tx3;
        rx[3] = rx3;
        Snapshot { bytes: Ok((tx, rx)), pfc: Some([false, false, false, true, false, false, false, false]) }
    }

    #[test]
    fn bytes_over_the_test() {
        let w = window(&snap(1000, 50), &snap(1_000_000, 60));
        assert_eq!(w.tx_bytes.map(|t| t[3]), Some(999_000));
        assert_eq!(w.total().map(|t| t[3]), Some(999_010));
        assert_eq!(w.pfc.map(|p| p[3]), Some(true));
        assert_eq!(window(&snap(1000, 50), &snap(10, 60)).missing, Some(NoCounters::Reset));
        let none = Snapshot { bytes: Err(NoCounters::NoPriorityCounters), pfc: None };
        assert_eq!(window(&none, &none).missing, Some(NoCounters::NoPriorityCounters));
    }

    #[test]
    fn a_veth_report_has_no_priority_counters() {
        assert_eq!(from_report("NIC statistics:\n     peer_ifindex: 5\n"), Err(NoCounters::NoPriorityCounters));
        assert_eq!(from_report("     rx_prio3_bytes: 7\n     tx_prio3_bytes: 9\n").map(|(tx, rx)| (tx[3], rx[3])), Ok((9, 7)));
    }
}
