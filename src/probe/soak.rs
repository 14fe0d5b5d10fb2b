//! A soak window (`check --soak DURATION`): the port counters read at its start and its end,
//! and what changed, so rules judge rates (errors per hour, BER over the window, link-down
//! events during it) instead of lifetime totals.
//! Pure: the two inventories come in; what a window is, is `probe::window`.

use super::model::{Inventory, Port};
use super::window::{change, Change, CounterChange, PortWindow, CORRECTED_BITS, FEC_UNCORRECTABLE, LINK_DOWN_EVENTS, SYMBOL_ERRORS};

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
