//! mlx5's PCIe counters in `ethtool -S IFACE` (the Device Counters of the kernel's
//! `Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst`):
//! `rx_pci_signal_integrity` (transitions of the PCIe link to recovery on framing and CRC
//! errors, "Error"), `tx_pci_signal_integrity` (recovery started by the other end, "Error"),
//! `outbound_pci_stalled_rd` / `_wr` (the share of the last second the NIC had reads or writes
//! and no credits, 0-100) and their `_events` (seconds above 30%), `outbound_pci_buffer_overflow`.
//! A counter a firmware does not expose has no line, and stays `None`. Pure.

use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Mlx5Pcie {
    pub rx_signal_integrity: Option<u64>,
    pub tx_signal_integrity: Option<u64>,
    /// Percent of the last second (a gauge, not a counter).
    pub stalled_rd_percent: Option<u64>,
    pub stalled_wr_percent: Option<u64>,
    pub stalled_rd_events: Option<u64>,
    pub stalled_wr_events: Option<u64>,
    pub buffer_overflow: Option<u64>,
}

impl Mlx5Pcie {
    pub fn is_empty(&self) -> bool {
        *self == Mlx5Pcie::default()
    }

    /// The counters (not the percent gauges), named as ethtool prints them.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        [
            ("rx_pci_signal_integrity", self.rx_signal_integrity),
            ("tx_pci_signal_integrity", self.tx_signal_integrity),
            ("outbound_pci_stalled_rd_events", self.stalled_rd_events),
            ("outbound_pci_stalled_wr_events", self.stalled_wr_events),
            ("outbound_pci_buffer_overflow", self.buffer_overflow),
        ]
        .into_iter()
        .filter_map(|(n, v)| Some((n, v?)))
        .collect()
    }
}

/// Lines read at most (mlx5 with many channels prints thousands; these come early).
const MAX_LINES: usize = 100_000;

/// Reads the PCIe counters out of an `ethtool -S IFACE` report.
pub fn parse_ethtool(report: &str) -> Mlx5Pcie {
    let mut out = Mlx5Pcie::default();
    for line in report.lines().take(MAX_LINES) {
        let Some((name, value)) = line.trim().split_once(':') else { continue };
        let Ok(value) = value.trim().parse::<u64>() else { continue };
        let slot = match name.trim() {
            "rx_pci_signal_integrity" => &mut out.rx_signal_integrity,
            "tx_pci_signal_integrity" => &mut out.tx_signal_integrity,
            "outbound_pci_stalled_rd" => &mut out.stalled_rd_percent,
            "outbound_pci_stalled_wr" => &mut out.stalled_wr_percent,
            "outbound_pci_stalled_rd_events" => &mut out.stalled_rd_events,
            "outbound_pci_stalled_wr_events" => &mut out.stalled_wr_events,
            "outbound_pci_buffer_overflow" => &mut out.buffer_overflow,
            _ => continue,
        };
        slot.get_or_insert(value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlx5_device_counters() {
        // As mlx5_core prints them (a ConnectX-6 Dx, between the pause and the per-queue lines).
        let report = "NIC statistics:\n     rx_packets: 1234\n     tx_pause_ctrl_phy: 0\n     rx_pci_signal_integrity: 2411\n     \
                      tx_pci_signal_integrity: 1471\n     outbound_pci_stalled_rd: 0\n     outbound_pci_stalled_wr: 35\n     \
                      outbound_pci_stalled_rd_events: 0\n     outbound_pci_stalled_wr_events: 12\n     rx0_packets: 7\n";
        let c = parse_ethtool(report);
        assert_eq!((c.rx_signal_integrity, c.tx_signal_integrity), (Some(2411), Some(1471)));
        assert_eq!((c.stalled_wr_percent, c.stalled_wr_events, c.buffer_overflow), (Some(35), Some(12), None));
        assert_eq!(c.counters().len(), 4);
        assert!(parse_ethtool("NIC statistics:\n     rx_bytes: 1\n").is_empty(), "another driver: nothing, not zero");
    }
}
