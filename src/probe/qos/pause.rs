//! IEEE 802.3x global pause, as `ethtool -a IF` prints it (ethtool `netlink/pause.c`,
//! `pause_reply_cb`: `Pause parameters for IF:`, `Autonegotiate:\t%s`, `RX:\t\t%s`,
//! `TX:\t\t%s`, and with autonegotiation on `RX negotiated: %s` / `TX negotiated: %s`; the
//! ioctl path's `dump_pause` prints the same lines). A bundle keeps it as
//! `ethtool/IF.pause.txt`. With global pause on and PFC off, mlx5 makes its receive buffer
//! lossless for every priority (`en/port_buffer.c`, `update_buffer_lossy`: `pause_en` makes
//! buffer 0 lossless when no priority has PFC).

use serde::{Deserialize, Serialize};

/// Where the global pause state came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseFrom {
    /// `ethtool -a` (or the bundle's `ethtool/IF.pause.txt`).
    Ethtool,
    /// The `rx_global_pause`/`tx_global_pause` counters of `ethtool -S` are above zero.
    Counters,
}

/// A port's global pause state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalPause {
    /// The port honours received pause frames (stops sending).
    pub rx: bool,
    /// The port sends pause frames when its buffer fills (what makes its receive lossless).
    pub tx: bool,
    pub from: PauseFrom,
}

impl GlobalPause {
    /// Whether any direction is on.
    pub fn on(self) -> bool {
        self.rx || self.tx
    }
}

/// Reads `ethtool -a`'s answer; `None` when it has no `RX:`/`TX:` lines. With autonegotiation
/// on, the negotiated state (`RX negotiated:`) wins over the configured one.
pub fn parse(text: &str) -> Option<GlobalPause> {
    let mut rx = None;
    let mut tx = None;
    let mut rx_neg = None;
    let mut tx_neg = None;
    for line in text.lines().take(64) {
        let Some((key, value)) = line.split_once(':') else { continue };
        let on = match value.trim() {
            "on" => true,
            "off" => false,
            _ => continue,
        };
        match key.trim() {
            "RX" => rx = Some(on),
            "TX" => tx = Some(on),
            "RX negotiated" => rx_neg = Some(on),
            "TX negotiated" => tx_neg = Some(on),
            _ => {}
        }
    }
    Some(GlobalPause { rx: rx_neg.or(rx)?, tx: tx_neg.or(tx)?, from: PauseFrom::Ethtool })
}

/// Global pause as the counters show it, where `ethtool -a` was not read: frames counted in
/// either direction mean it is (or was) on.
pub fn from_counters(c: &super::PrioCounters) -> Option<GlobalPause> {
    let (rx, tx) = (c.rx_global_pause?, c.tx_global_pause.unwrap_or(0));
    (rx > 0 || tx > 0).then_some(GlobalPause { rx: rx > 0, tx: tx > 0, from: PauseFrom::Counters })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_ethtool_prints() {
        let netlink = "Pause parameters for ens2np0:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\ton\n\n";
        assert_eq!(parse(netlink), Some(GlobalPause { rx: true, tx: true, from: PauseFrom::Ethtool }));
        let negotiated = "Pause parameters for ens2np0:\nAutonegotiate:\ton\nRX:\t\ton\nTX:\t\ton\nRX negotiated: off\nTX negotiated: off\n";
        assert_eq!(parse(negotiated).map(GlobalPause::on), Some(false), "the negotiated state wins");
        assert_eq!(parse("Pause parameters for x:\nAutonegotiate:\toff\nRX:\t\toff\nTX:\t\toff\n").map(GlobalPause::on), Some(false));
        assert_eq!(parse("Cannot get device pause settings: Operation not supported\n"), None);
    }

    #[test]
    fn counters_show_it() {
        let c = super::super::counters::parse("     rx_global_pause: 4\n     tx_global_pause: 0\n").unwrap();
        assert_eq!(from_counters(&c).map(|g| (g.rx, g.tx)), Some((true, false)));
        let zero = super::super::counters::parse("     rx_global_pause: 0\n     tx_global_pause: 0\n").unwrap();
        assert_eq!(from_counters(&zero), None);
    }
}
