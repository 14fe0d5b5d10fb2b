//! `roce.qos`'s counters (mlx5 `ethtool -S`, counters.rst): pause storms, discards on the RoCE
//! priority and on the port, and, over a `--soak` window, how much of the window the RoCE
//! priority spent paused. Lifetime figures are at most warnings (they may be old); what rose
//! in a window is judged as now.

use super::limits::{PAUSE_ERROR, PAUSE_WARN};
use super::qos_issue::Issue;
use super::Severity;
use crate::probe::qos::counters::{PerPrio, PAUSE_STORM_ERROR, PAUSE_STORM_WARNING, RX_DISCARDS_PHY};
use crate::probe::qos::{PortQos, Priority};
use crate::probe::window::{Change, PortWindow};
use crate::probe::Port;

/// Judges the window where there is one, else the lifetime totals. `p`: the RoCE priority,
/// where known (its own counters are judged only then).
pub(super) fn lifetime_or_window(port: &Port, q: &PortQos, p: Option<Priority>, netdev: &str, issues: &mut Vec<Issue>) {
    match &port.soak {
        Some(w) => window(w, p, netdev, issues),
        None => lifetime(q, p, netdev, issues),
    }
}

fn storm_remedy(netdev: &str) -> String {
    format!(
        "a receiver that stops draining (this host, or the peer it pauses) makes the NIC send pauses until its stall watermarks: find it \
         (`ethtool -S {netdev} | grep -E 'prio.*pause|storm'`, the switch's PFC counters); mlx5's storm prevention \
         (`/sys/class/net/{netdev}/settings/pfc_stall_prevention`) then stops pausing, and the lossless class drops"
    )
}

fn discard_remedy(netdev: &str, p: Priority) -> String {
    format!(
        "the receive buffer of priority {p} overflowed: PFC did not hold the sender in time (the cable length that sets the xoff threshold: \
         `mlnx_qos -i {netdev} --cable_len N`; the switch port's PFC on {p}); `ethtool -S {netdev} | grep prio{p}` shows the pauses"
    )
}

fn lifetime(q: &PortQos, p: Option<Priority>, netdev: &str, issues: &mut Vec<Issue>) {
    let Some(c) = &q.counters else { return };
    // The uptime bounds what a lifetime figure covers (`/proc/uptime`; "since boot" in a bundle).
    let old = format!(
        "(lifetime figures, {}: since the driver loaded or the counters were cleared; `check --soak 10m` judges what rises)",
        crate::probe::pci::health::read::uptime_words(q.uptime_s)
    );
    let storms: Vec<String> = [(PAUSE_STORM_ERROR, c.pause_storm_error_events), (PAUSE_STORM_WARNING, c.pause_storm_warning_events)]
        .iter()
        .filter_map(|(name, v)| v.filter(|&n| n > 0).map(|n| format!("{name} {n}")))
        .collect();
    if !storms.is_empty() {
        issues.push(Issue {
            severity: Severity::Warning,
            message: format!(
                "PFC pause storm on {netdev}: the NIC sent pauses long enough to reach its stall watermarks ({}) {old}",
                storms.join(", ")
            ),
            remedy: storm_remedy(netdev),
        });
    }
    if let Some(p) = p {
        // A lifetime discard count is history (info); a rise in a `--soak` window is judged.
        if let Some(n) = c.get(PerPrio::RxBufDiscard, p.index()).filter(|&n| n > 0) {
            issues.push(Issue {
                severity: Severity::Info,
                message: format!(
                    "{n} packets of RoCE's priority {p} were discarded for lack of receive buffer ({}) {old}",
                    PerPrio::RxBufDiscard.name(p.get())
                ),
                remedy: discard_remedy(netdev, p),
            });
        }
    }
    if let Some(n) = c.rx_discards_phy.filter(|&n| n > 0) {
        issues.push(Issue {
            severity: Severity::Info,
            message: format!(
                "{n} packets were discarded at the port for lack of receive buffer ({RX_DISCARDS_PHY}, any priority: a lossy priority's drops count here too) {old}"
            ),
            remedy: format!("`ethtool -S {netdev} | grep -E 'prio[0-7]_(buf_)?discard'` tells which priority; on the lossless one, see its PFC and xoff threshold"),
        });
    }
}

fn rose(w: &PortWindow, name: &str) -> Option<u64> {
    match w.of(name) {
        Some(Change::Rose(n)) => Some(n),
        _ => None,
    }
}

pub(super) fn window(w: &PortWindow, p: Option<Priority>, netdev: &str, issues: &mut Vec<Issue>) {
    let span = w.words();
    let storms: Vec<String> =
        [PAUSE_STORM_ERROR, PAUSE_STORM_WARNING].iter().filter_map(|name| rose(w, name).map(|n| format!("{name} +{n}"))).collect();
    if !storms.is_empty() {
        issues.push(Issue {
            severity: Severity::Error,
            message: format!(
                "PFC pause storm on {netdev} during the {span} window ({}): the NIC paused its peer past its stall watermarks",
                storms.join(", ")
            ),
            remedy: storm_remedy(netdev),
        });
    }
    if let Some(n) = rose(w, RX_DISCARDS_PHY) {
        issues.push(Issue {
            severity: Severity::Warning,
            message: format!("{n} packets were discarded at the port during the {span} window ({RX_DISCARDS_PHY}, any priority)"),
            remedy: format!("`ethtool -S {netdev} | grep -E 'prio[0-7]_(buf_)?discard'` tells which priority"),
        });
    }
    let Some(p) = p else { return };
    if let Some(n) = rose(w, &PerPrio::RxBufDiscard.name(p.get())) {
        issues.push(Issue {
            severity: Severity::Error,
            message: format!(
                "{n} packets of RoCE's lossless priority {p} were discarded during the {span} window ({})",
                PerPrio::RxBufDiscard.name(p.get())
            ),
            remedy: discard_remedy(netdev, p),
        });
    }
    // The share of the window priority p spent paused: told to stop (rx) or telling its peer to (tx).
    let window_us = w.seconds * 1e6;
    if window_us <= 0.0 {
        return;
    }
    let paused = [
        (PerPrio::RxPauseDuration, PerPrio::RxPause, "the peer paused this port"),
        (PerPrio::TxPauseDuration, PerPrio::TxPause, "this port paused its peer"),
    ]
    .into_iter()
    .filter_map(|(duration, frames, who)| {
        let us = rose(w, &duration.name(p.get()))?;
        Some((us as f64 / window_us, rose(w, &frames.name(p.get())).unwrap_or(0), who))
    })
    .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((share, frames, who)) = paused {
        let severity = if share >= PAUSE_ERROR {
            Severity::Error
        } else if share >= PAUSE_WARN {
            Severity::Warning
        } else {
            Severity::Info
        };
        issues.push(Issue {
            severity,
            message: format!("RoCE's priority {p} was paused for {:.1}% of the {span} window ({who}; {frames} pause frames)", share * 100.0),
            remedy: format!(
                "pauses are PFC holding the lossless class; a large share is a congested or slow receiver: `ethtool -S {netdev} | grep prio{p}_pause` on both ends and the switch's per-priority counters"
            ),
        });
    }
}
