//! A soak window (`check --soak DURATION`): the port counters read at its start and its end,
//! and what changed, so rules judge rates (errors per hour, BER over the window, link-down
//! events during it) instead of lifetime totals.
//!
//! A counter that went down (reset, or a wrapped 64-bit counter) or that sits at its maximum
//! (PortCounters saturate: SymbolErrorCounter is 16 bits, LinkDownedCounter 8) says nothing
//! reliable about the window: it is said, not judged. Pure: the two inventories come in.

use super::model::{Inventory, Port};
use serde::{Deserialize, Serialize};

/// What the window saw on one port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortWindow {
    /// How long the window lasted, seconds (shorter than asked when it was interrupted).
    pub seconds: f64,
    pub interrupted: bool,
    pub counters: Vec<CounterChange>,
}

/// One counter over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterChange {
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "by")]
pub enum Change {
    Same,
    Rose(u64),
    /// Lower at the end than at the start: cleared (or wrapped) during the window.
    Reset,
    /// At the counter's maximum at the end: it stopped counting.
    Saturated,
}

/// The physical-layer counters of `ethtool -S` as they are named in a window.
pub const CORRECTED_BITS: &str = "corrected_bits";
pub const SYMBOL_ERRORS: &str = "symbol_errors";
pub const LINK_DOWN_EVENTS: &str = "link_down_events";
pub const FEC_UNCORRECTABLE: &str = "fec_uncorrectable_blocks";

/// The width of an InfiniBand PortCounters field the kernel exposes in `counters/` (IBTA vol. 1
/// 16.1.3.5); the extended (64-bit) ones and ethtool's counters never saturate.
pub fn saturates_at(name: &str) -> Option<u64> {
    match name {
        "symbol_error" | "port_rcv_errors" | "port_xmit_discards" | "port_rcv_remote_physical_errors" => Some(0xffff),
        "link_error_recovery" | "link_downed" => Some(0xff),
        "local_link_integrity_errors" | "excessive_buffer_overrun_errors" => Some(0xf),
        _ => None,
    }
}

/// What one counter did.
pub fn change(name: &str, start: u64, end: u64) -> Change {
    if saturates_at(name).is_some_and(|max| end >= max) {
        Change::Saturated
    } else if end < start {
        Change::Reset
    } else if end == start {
        Change::Same
    } else {
        Change::Rose(end - start)
    }
}

fn readings(port: &Port) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = port.counters.iter().map(|c| (c.name.clone(), c.value)).collect();
    if let Some(phy) = &port.phy {
        for (name, value) in [
            (CORRECTED_BITS, phy.corrected_bits),
            (SYMBOL_ERRORS, phy.symbol_errors),
            (LINK_DOWN_EVENTS, phy.link_down_events),
            (FEC_UNCORRECTABLE, phy.fec_uncorrectable_blocks),
        ] {
            if let Some(v) = value {
                out.push((name.to_string(), v));
            }
        }
    }
    // RoCE: the per-priority pause, discard and storm counters (`roce.qos` judges the window).
    if let Some(c) = port.qos.as_ref().and_then(|q| q.counters.as_ref()) {
        out.extend(c.readings());
    }
    out
}

/// Sets each port's `soak` in `end` from what `start` read, and its BERs to the window's
/// (errors over the bits the link carried in it: its data rate times the window).
pub fn apply(start: &Inventory, end: &mut Inventory, seconds: f64, interrupted: bool) {
    for device in &mut end.devices {
        let Some(before_device) = start.device(&device.name) else { continue };
        for port in &mut device.ports {
            let Some(before) = before_device.ports.iter().find(|p| p.port == port.port) else { continue };
            let earlier = readings(before);
            let counters: Vec<CounterChange> = readings(port)
                .into_iter()
                .filter_map(|(name, end)| {
                    let (_, start) = earlier.iter().find(|(n, _)| *n == name)?;
                    Some(CounterChange { change: change(&name, *start, end), name, start: *start, end })
                })
                .collect();
            let window = PortWindow { seconds, interrupted, counters };
            let bits = port.rate_gbps.filter(|_| seconds > 0.0).map(|g| g * 1e9 * seconds);
            if let Some(phy) = port.phy.as_mut() {
                let rate = |name: &str| match (window.counters.iter().find(|c| c.name == name).map(|c| c.change), bits) {
                    (Some(Change::Rose(n)), Some(b)) => Some(n as f64 / b),
                    (Some(Change::Same), Some(_)) => Some(0.0),
                    _ => None,
                };
                phy.ber_raw = rate(CORRECTED_BITS);
                phy.ber_effective = rate(SYMBOL_ERRORS);
            }
            port.soak = Some(window);
        }
    }
}

impl PortWindow {
    /// The counter's change over the window, if it was read at both ends.
    pub fn of(&self, name: &str) -> Option<Change> {
        self.counters.iter().find(|c| c.name == name).map(|c| c.change)
    }

    /// The window in words: `10 s`, `5 min`.
    pub fn words(&self) -> String {
        let s = self.seconds;
        let text = if s >= 3600.0 && (s % 3600.0).abs() < 1.0 {
            format!("{:.0} h", s / 3600.0)
        } else if s >= 60.0 && (s % 60.0).abs() < 1.0 {
            format!("{:.0} min", s / 60.0)
        } else {
            format!("{s:.0} s")
        };
        if self.interrupted {
            format!("{text} (interrupted)")
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_said_not_judged_when_reset_or_saturated() {
        assert_eq!(change("symbol_error", 10, 15), Change::Rose(5));
        assert_eq!(change("symbol_error", 10, 10), Change::Same);
        assert_eq!(change("symbol_error", 10, 3), Change::Reset);
        assert_eq!(change("symbol_error", 65000, 65535), Change::Saturated);
        assert_eq!(change("link_downed", 254, 255), Change::Saturated);
        assert_eq!(change(CORRECTED_BITS, 1 << 40, (1 << 40) + 7), Change::Rose(7), "64-bit counters never saturate");
    }
}
