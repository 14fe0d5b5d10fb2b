//! The per-priority and pause counters of `ethtool -S IF` on mlx5 (kernel
//! Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst, "Priority Port
//! Counters" and "Physical Port Counters"): `rx_prio[p]_bytes`, `tx_prio[p]_bytes`,
//! `rx_prio[p]_pause` and `_pause_duration` (microseconds the port was told not to send on p),
//! `tx_prio[p]_pause` and `_pause_duration`, `rx_prio[p]_buf_discard` (dropped for lack of
//! receive buffer), `rx_discards_phy` (the port's, any priority), and
//! `tx_pause_storm_warning_events` / `tx_pause_storm_error_events` (the device sent pauses long
//! enough to reach the stall watermarks; at the error one it stops pausing and drops). A counter
//! the driver does not print is `None`: mlx5 prints the pause counters only for priorities with
//! PFC, and Soft-RoCE's veth none of them.

use serde::{Deserialize, Serialize};

/// Lines read at most (mlx5 prints a few thousand with many channels).
const MAX_LINES: usize = 100_000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrioCounters {
    pub rx_bytes: [Option<u64>; 8],
    pub tx_bytes: [Option<u64>; 8],
    pub rx_pause: [Option<u64>; 8],
    pub rx_pause_duration_us: [Option<u64>; 8],
    pub tx_pause: [Option<u64>; 8],
    pub tx_pause_duration_us: [Option<u64>; 8],
    pub rx_buf_discard: [Option<u64>; 8],
    pub rx_discards_phy: Option<u64>,
    pub pause_storm_warning_events: Option<u64>,
    pub pause_storm_error_events: Option<u64>,
    /// IEEE 802.3x global pause frames received and sent (`rx_global_pause`,
    /// `tx_global_pause`: mlx5 prints them with the per-priority counters, counters.rst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_global_pause: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_global_pause: Option<u64>,
}

/// One counter of a priority, by its ethtool name's middle (`rx_prio3_pause_duration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerPrio {
    RxBytes,
    TxBytes,
    RxPause,
    RxPauseDuration,
    TxPause,
    TxPauseDuration,
    RxBufDiscard,
}

impl PerPrio {
    pub const ALL: [PerPrio; 7] = [
        PerPrio::RxBytes,
        PerPrio::TxBytes,
        PerPrio::RxPause,
        PerPrio::RxPauseDuration,
        PerPrio::TxPause,
        PerPrio::TxPauseDuration,
        PerPrio::RxBufDiscard,
    ];

    /// The ethtool name of this counter for priority `p`.
    pub fn name(self, p: u8) -> String {
        let (dir, rest) = match self {
            PerPrio::RxBytes => ("rx", "bytes"),
            PerPrio::TxBytes => ("tx", "bytes"),
            PerPrio::RxPause => ("rx", "pause"),
            PerPrio::RxPauseDuration => ("rx", "pause_duration"),
            PerPrio::TxPause => ("tx", "pause"),
            PerPrio::TxPauseDuration => ("tx", "pause_duration"),
            PerPrio::RxBufDiscard => ("rx", "buf_discard"),
        };
        format!("{dir}_prio{p}_{rest}")
    }
}

/// Port-wide counters, by ethtool name.
pub const RX_DISCARDS_PHY: &str = "rx_discards_phy";
pub const PAUSE_STORM_WARNING: &str = "tx_pause_storm_warning_events";
pub const PAUSE_STORM_ERROR: &str = "tx_pause_storm_error_events";
pub const RX_GLOBAL_PAUSE: &str = "rx_global_pause";
pub const TX_GLOBAL_PAUSE: &str = "tx_global_pause";

impl PrioCounters {
    fn slot(&mut self, which: PerPrio) -> &mut [Option<u64>; 8] {
        match which {
            PerPrio::RxBytes => &mut self.rx_bytes,
            PerPrio::TxBytes => &mut self.tx_bytes,
            PerPrio::RxPause => &mut self.rx_pause,
            PerPrio::RxPauseDuration => &mut self.rx_pause_duration_us,
            PerPrio::TxPause => &mut self.tx_pause,
            PerPrio::TxPauseDuration => &mut self.tx_pause_duration_us,
            PerPrio::RxBufDiscard => &mut self.rx_buf_discard,
        }
    }

    pub fn get(&self, which: PerPrio, p: usize) -> Option<u64> {
        let row = match which {
            PerPrio::RxBytes => &self.rx_bytes,
            PerPrio::TxBytes => &self.tx_bytes,
            PerPrio::RxPause => &self.rx_pause,
            PerPrio::RxPauseDuration => &self.rx_pause_duration_us,
            PerPrio::TxPause => &self.tx_pause,
            PerPrio::TxPauseDuration => &self.tx_pause_duration_us,
            PerPrio::RxBufDiscard => &self.rx_buf_discard,
        };
        row.get(p).copied().flatten()
    }

    /// Whether the driver printed per-priority byte counters at all.
    pub fn has_bytes(&self) -> bool {
        self.rx_bytes.iter().chain(&self.tx_bytes).any(Option::is_some)
    }

    /// Every counter read, by its ethtool name (what a soak window diffs).
    pub fn readings(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for which in PerPrio::ALL {
            for p in 0..8u8 {
                if let Some(v) = self.get(which, usize::from(p)) {
                    out.push((which.name(p), v));
                }
            }
        }
        for (name, v) in [
            (RX_DISCARDS_PHY, self.rx_discards_phy),
            (PAUSE_STORM_WARNING, self.pause_storm_warning_events),
            (PAUSE_STORM_ERROR, self.pause_storm_error_events),
            (RX_GLOBAL_PAUSE, self.rx_global_pause),
            (TX_GLOBAL_PAUSE, self.tx_global_pause),
        ] {
            if let Some(v) = v {
                out.push((name.to_string(), v));
            }
        }
        out
    }
}

/// Reads the counters out of an `ethtool -S IF` report; `None` when it holds none of them.
pub fn parse(report: &str) -> Option<PrioCounters> {
    let mut c = PrioCounters::default();
    let mut any = false;
    for line in report.lines().take(MAX_LINES) {
        let Some((name, value)) = line.trim().split_once(':') else { continue };
        let Ok(value) = value.trim().parse::<u64>() else { continue };
        let name = name.trim();
        let slot = match name {
            RX_DISCARDS_PHY => &mut c.rx_discards_phy,
            PAUSE_STORM_WARNING => &mut c.pause_storm_warning_events,
            PAUSE_STORM_ERROR => &mut c.pause_storm_error_events,
            RX_GLOBAL_PAUSE => &mut c.rx_global_pause,
            TX_GLOBAL_PAUSE => &mut c.tx_global_pause,
            other => {
                let Some((which, p)) = per_prio(other) else { continue };
                &mut c.slot(which)[p]
            }
        };
        // The first line wins, as in ethtool_stats.
        slot.get_or_insert(value);
        any = true;
    }
    any.then_some(c)
}

/// `rx_prio3_pause_duration` → (RxPauseDuration, 3).
fn per_prio(name: &str) -> Option<(PerPrio, usize)> {
    let (dir, rest) = name.split_once("_prio")?;
    let digit = rest.chars().next()?.to_digit(10)?;
    let p = usize::try_from(digit).ok().filter(|&p| p < 8)?;
    let which = match (dir, rest.get(1..)?) {
        ("rx", "_bytes") => PerPrio::RxBytes,
        ("tx", "_bytes") => PerPrio::TxBytes,
        ("rx", "_pause") => PerPrio::RxPause,
        ("rx", "_pause_duration") => PerPrio::RxPauseDuration,
        ("tx", "_pause") => PerPrio::TxPause,
        ("tx", "_pause_duration") => PerPrio::TxPauseDuration,
        ("rx", "_buf_discard") => PerPrio::RxBufDiscard,
        _ => return None,
    };
    Some((which, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An excerpt of mlx5's report with PFC on priority 3 (pause counters for 3 only).
    pub(crate) const MLX5: &str = "NIC statistics:\n     rx_packets: 9281\n     rx_discards_phy: 0\n     tx_pause_storm_warning_events: 0\n     tx_pause_storm_error_events: 0\n     rx_prio0_bytes: 51234\n     rx_prio0_packets: 600\n     rx_prio0_discards: 0\n     tx_prio0_bytes: 48871\n     tx_prio0_packets: 590\n     rx_prio3_bytes: 918273645\n     rx_prio3_packets: 221000\n     tx_prio3_bytes: 917000000\n     tx_prio3_packets: 220900\n     rx_prio3_pause: 12\n     rx_prio3_pause_duration: 340\n     tx_prio3_pause: 0\n     tx_prio3_pause_duration: 0\n     rx_prio3_pause_transition: 12\n     rx_prio3_buf_discard: 0\n     rx_prio3_cong_discard: 0\n     rx_prio3_marked: 0\n     ch0_arm: 0\n";

    #[test]
    fn mlx5_priority_counters() {
        let c = parse(MLX5).unwrap();
        assert_eq!(c.rx_bytes[3], Some(918_273_645));
        assert_eq!(c.tx_bytes[0], Some(48_871));
        assert_eq!(c.rx_pause_duration_us[3], Some(340));
        assert_eq!(c.rx_pause[0], None, "no PFC on 0: mlx5 prints no pause counter");
        assert_eq!(c.rx_buf_discard[3], Some(0));
        assert_eq!((c.rx_discards_phy, c.pause_storm_warning_events, c.pause_storm_error_events), (Some(0), Some(0), Some(0)));
        assert!(c.has_bytes());
        let names: Vec<String> = c.readings().into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&"rx_prio3_pause_duration".to_string()) && names.contains(&"tx_pause_storm_error_events".to_string()), "{names:?}");
    }

    #[test]
    fn a_veth_report_has_none() {
        let veth = "NIC statistics:\n     peer_ifindex: 5\n     rx_queue_0_xdp_packets: 0\n     rx_queue_0_xdp_bytes: 0\n     rx_queue_0_drops: 0\n";
        assert_eq!(parse(veth), None);
        assert_eq!(parse("     rx_prio9_bytes: 1\n     rx_prio3_bytes: x\n     tx_prio3_cong_discard: 4\n"), None);
    }
}
