//! What a soak window (`check --soak DURATION`) saw on a port: `link.flap` (link-down events
//! during the window), and the error counters that rose in it, named; on InfiniBand ports
//! (no `ethtool`), the symbol errors over the window as a BER (`phy.ber`). A counter that was
//! cleared or sits at its maximum is said, not judged. Ethernet BER and FEC over the window are
//! judged by `phy_rules` from the window's figures. The transport's own counters over the
//! window: packets out of sequence or sent again (`link.retransmission`, any link layer) and,
//! on RoCE, DCQCN's congestion notifications (`roce.congestion`). A `collective` member's
//! window is judged here too (`window_findings`).

use super::limits::{CNP_WARN_PER_S, EFFECTIVE_BER_LIMIT};
use super::{Severity, Sheet};
use crate::outcome::FindingId;
use crate::port::LinkLayer;
use crate::probe::window::{Change, PortWindow, CNP, LINK_DOWN_EVENTS, OUT_OF_SEQUENCE};
use crate::probe::Port;

/// Error counters of `counters/` named when they rise during a window.
const RISING: [&str; 5] =
    ["link_error_recovery", "port_rcv_errors", "local_link_integrity_errors", "port_rcv_remote_physical_errors", "port_xmit_discards"];

pub(super) fn run(port: &Port, window: &PortWindow, s: &str, sheet: &mut Sheet) {
    judge(port.link_layer, port.rate_gbps, window, s, sheet);
}

/// A window of counters read elsewhere than a node's `--soak` (0.5: a `collective` member's
/// port over its run), judged by the same rules: link-down events, the error counters that
/// rose, InfiniBand's symbol errors as a BER, and on RoCE (`roce`: the netdev and the RoCE
/// priority where known) the pause storms, discards and the priority's pause share. The
/// findings only (no checks), each on `subject`.
pub fn window_findings(
    link_layer: LinkLayer,
    rate_gbps: Option<f64>,
    window: &PortWindow,
    roce: Option<(&str, Option<crate::probe::qos::Priority>)>,
    subject: &str,
) -> Vec<crate::outcome::Finding> {
    let mut sheet = Sheet::default();
    judge(link_layer, rate_gbps, window, subject, &mut sheet);
    if let Some((netdev, priority)) = roce {
        let mut issues = Vec::new();
        super::qos_counters::window(window, priority, netdev, &mut issues);
        for i in issues {
            sheet.note(FindingId::RoceQos, subject, i.severity, i.message, i.remedy);
        }
    }
    sheet.finish().findings
}

fn judge(link_layer: LinkLayer, rate_gbps: Option<f64>, window: &PortWindow, s: &str, sheet: &mut Sheet) {
    let w = window.words();
    flap(window, &w, s, sheet);
    let not_judged: Vec<String> = window
        .counters
        .iter()
        .filter_map(|c| match c.change {
            Change::Reset => Some(format!("{} went down ({} to {}: cleared)", c.name, c.start, c.end)),
            Change::Saturated => Some(format!("{} sits at its maximum ({})", c.name, c.end)),
            _ => None,
        })
        .collect();
    if !not_judged.is_empty() {
        sheet.note(
            FindingId::SoakCounters,
            s,
            Severity::Info,
            format!("not judged over the {w} window: {}", not_judged.join("; ")),
            "clear the counters (`perfquery -x -R`, or a driver reload for ethtool's) and soak again",
        );
    }
    let risen: Vec<String> = RISING
        .iter()
        .filter_map(|name| match window.of(name) {
            Some(Change::Rose(n)) => Some(format!("{name} +{n}")),
            _ => None,
        })
        .collect();
    if !risen.is_empty() {
        sheet.note(
            FindingId::LinkErrors,
            s,
            Severity::Warning,
            format!("error counters rose during the {w} window: {}", risen.join(" ")),
            "errors that rise under a soak point at a marginal cable or optic: clean, reseat, replace; `mlxlink -d <pci> -c` shows the PHY counters",
        );
    }
    if link_layer == LinkLayer::InfiniBand {
        ib_symbol_errors(rate_gbps, window, &w, s, sheet);
    }
    out_of_sequence(window, &w, s, sheet);
    if link_layer == LinkLayer::Ethernet {
        cnps(window, &w, s, sheet);
    }
}

/// Sequence errors over the window: `link.retransmission` (warning: on a lossless fabric, any
/// is loss the transport repaired by retransmitting).
fn out_of_sequence(window: &PortWindow, w: &str, s: &str, sheet: &mut Sheet) {
    let rose = rises(window, &OUT_OF_SEQUENCE);
    let Some(most) = rose.iter().map(|(_, n)| *n).max() else { return };
    let per_s = most as f64 / window.seconds.max(1e-3);
    sheet.note(
        FindingId::LinkRetransmission,
        s,
        Severity::Warning,
        format!("packets went missing during the {w} window and were sent again: {} ({per_s:.1} sequence errors a second)", said(&rose)),
        "packets were lost and retransmitted: on RoCE, `fabcheck check` (roce.qos) on both ends says whether PFC holds the RoCE priority, then \
         the switches' PFC and buffers on it; on InfiniBand, symbol errors and link_downed on the path (`fabcheck check`, `fabcheck fabric`)",
    );
}

/// CNPs over the window on a RoCE port: `roce.congestion`, a warning from [`CNP_WARN_PER_S`] a
/// second (the larger of sent and handled), else an info (congestion control acted).
fn cnps(window: &PortWindow, w: &str, s: &str, sheet: &mut Sheet) {
    let rose = rises(window, &CNP);
    if rose.is_empty() {
        return;
    }
    let most = rose.iter().filter(|(n, _)| *n != "np_ecn_marked_roce_packets").map(|(_, v)| *v).max().unwrap_or(0);
    let per_s = most as f64 / window.seconds.max(1e-3);
    let severity = if per_s >= CNP_WARN_PER_S { Severity::Warning } else { Severity::Info };
    let what = if severity == Severity::Warning {
        format!("congestion through the {w} window: {per_s:.0} CNPs a second (from {CNP_WARN_PER_S:.0} a warning)")
    } else {
        format!("congestion control acted during the {w} window: {per_s:.1} CNPs a second (below {CNP_WARN_PER_S:.0})")
    };
    sheet.note(
        FindingId::RoceCongestion,
        s,
        severity,
        format!("{what}: {}", said(&rose)),
        "ECN marks on the RoCE priority's traffic: a congested path or receiver; `np_cnp_sent` rising here means this port received \
         the marked packets, `rp_cnp_handled` that it was slowed; the switches' ECN thresholds and queues on that priority",
    );
}

/// The counters of `names` that rose in the window, with their rise.
fn rises(window: &PortWindow, names: &[&'static str]) -> Vec<(&'static str, u64)> {
    names
        .iter()
        .filter_map(|name| match window.of(name) {
            Some(Change::Rose(n)) => Some((*name, n)),
            _ => None,
        })
        .collect()
}

fn said(rose: &[(&str, u64)]) -> String {
    rose.iter().map(|(n, v)| format!("{n} +{v}")).collect::<Vec<_>>().join(" ")
}

fn flap(window: &PortWindow, w: &str, s: &str, sheet: &mut Sheet) {
    let changes: Vec<(&str, Change)> = ["link_downed", LINK_DOWN_EVENTS].iter().filter_map(|n| Some((*n, window.of(n)?))).collect();
    if changes.is_empty() {
        sheet.skip(FindingId::LinkFlap, s, "no link-down counter readable");
        return;
    }
    let downs = changes.iter().filter_map(|(_, c)| if let Change::Rose(n) = c { Some(*n) } else { None }).max();
    match downs {
        Some(n) => sheet.fail(
            FindingId::LinkFlap,
            s,
            format!("{n} link-down events in {w}"),
            Some("0".into()),
            Severity::Error,
            format!("the link went down {n} time{} during the {w} window: it flaps", if n == 1 { "" } else { "s" }),
            "a flapping link: reseat or replace the cable/optic, check phy.module for a weak lane and the switch port's log",
        ),
        None if changes.iter().all(|(_, c)| matches!(c, Change::Reset | Change::Saturated)) => {
            sheet.skip(FindingId::LinkFlap, s, format!("the link-down counters were cleared or are saturated: not judged over {w}"))
        }
        None => sheet.pass(FindingId::LinkFlap, s, format!("0 link-down events in {w}"), Some("0".into())),
    }
}

/// InfiniBand's SymbolErrorCounter over the window, as a BER over the bits the link carried.
fn ib_symbol_errors(rate_gbps: Option<f64>, window: &PortWindow, w: &str, s: &str, sheet: &mut Sheet) {
    match window.of("symbol_error") {
        Some(Change::Rose(n)) => {
            let ber = rate_gbps.filter(|_| window.seconds > 0.0).map(|g| n as f64 / (g * 1e9 * window.seconds));
            let severity = if ber.is_none_or(|b| b > EFFECTIVE_BER_LIMIT) { Severity::Error } else { Severity::Warning };
            let per_hour = n as f64 * 3600.0 / window.seconds.max(1.0);
            sheet.fail(
                FindingId::PhyBer,
                s,
                format!("symbol_error +{n} in {w}{}", ber.map_or(String::new(), |b| format!(", BER {b:.1e}"))),
                None,
                severity,
                format!("{n} symbol errors during the {w} window ({per_hour:.0} an hour)"),
                "a marginal cable or optic: clean, reseat, replace; `mlxlink -d <pci> -c` shows the raw BER per lane",
            );
        }
        Some(Change::Same) => sheet.pass(FindingId::PhyBer, s, format!("symbol_error +0 in {w}"), None),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnose::{run, Expectations, Input, Scope};
    use crate::outcome::{FindingId, Severity, Status};
    use crate::probe::soak::apply;
    use crate::probe::{self, Inventory};
    use std::path::Path;

    fn fixture(name: &str) -> Inventory {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
        probe::inventory(&probe::Source::Sysfs(root), None).unwrap()
    }

    fn counter(inv: &mut Inventory, name: &str, value: u64) {
        inv.devices[0].ports[0].counters.iter_mut().find(|c| c.name == name).unwrap().value = value;
    }

    #[test]
    fn a_counter_raised_during_the_window_is_named_an_old_total_is_not_an_error() {
        // ib-4x-at-1x has lifetime symbol errors: without a window only link.errors warns.
        let start = fixture("ib-4x-at-1x");
        let old_total = start.devices[0].ports[0].counters.iter().find(|c| c.name == "symbol_error").unwrap().value;
        assert!(old_total > 0, "the fixture must carry a lifetime total");
        let mut end = start.clone();
        apply(&start, &mut end, 10.0, false);
        let r = run(&Input { inventory: &end, host: None, expect: &Expectations::default(), scope: &Scope::default() });
        let ber = r.checks.iter().find(|c| c.id == FindingId::PhyBer).unwrap();
        assert_eq!(ber.status, Status::Pass, "nothing rose in the window: {ber:?}");
        assert!(r.findings.iter().all(|f| f.id != FindingId::PhyBer && f.id != FindingId::LinkFlap), "{:#?}", r.findings);
        let flap = r.checks.iter().find(|c| c.id == FindingId::LinkFlap).unwrap();
        assert_eq!((flap.status, flap.observed.as_str()), (Status::Pass, "0 link-down events in 10 s"));

        // Raised during the window: 3 symbol errors and a link-down.
        let mut end = start.clone();
        counter(&mut end, "symbol_error", old_total + 3);
        let downed = start.devices[0].ports[0].counters.iter().find(|c| c.name == "link_downed").unwrap().value;
        counter(&mut end, "link_downed", downed + 1);
        apply(&start, &mut end, 10.0, false);
        let r = run(&Input { inventory: &end, host: None, expect: &Expectations::default(), scope: &Scope::default() });
        let f = r.findings.iter().find(|f| f.id == FindingId::PhyBer).unwrap();
        assert_eq!(f.severity, Severity::Error, "3 errors in 10 s at 50 Gb/s is a BER of 6e-12: {f:?}");
        assert!(f.message.contains("3 symbol errors during the 10 s window"), "{}", f.message);
        let f = r.findings.iter().find(|f| f.id == FindingId::LinkFlap).unwrap();
        assert!(f.message.contains("went down 1 time during the 10 s window"), "{}", f.message);
    }

    #[test]
    fn a_cleared_or_saturated_counter_is_said_not_judged() {
        let start = fixture("ib-4x-at-1x");
        let mut end = start.clone();
        counter(&mut end, "symbol_error", 0);
        counter(&mut end, "link_downed", 255);
        let mut before = start.clone();
        counter(&mut before, "symbol_error", 40);
        apply(&before, &mut end, 10.0, false);
        let r = run(&Input { inventory: &end, host: None, expect: &Expectations::default(), scope: &Scope::default() });
        let note = r.findings.iter().find(|f| f.id == FindingId::SoakCounters).unwrap();
        assert_eq!(note.severity, Severity::Info);
        assert!(note.message.contains("symbol_error went down") && note.message.contains("link_downed sits at its maximum"), "{}", note.message);
        assert!(r.findings.iter().all(|f| f.id != FindingId::LinkFlap && f.id != FindingId::PhyBer), "{:#?}", r.findings);
    }

    #[test]
    fn ethernet_ber_over_the_window_from_corrected_bits() {
        // roce-cx6dx-fec-lane at 100 Gb/s: 1e7 corrected bits in 10 s is a raw BER of 1e-5.
        let start = fixture("roce-cx6dx-fec-lane");
        let mut end = start.clone();
        let phy = end.devices[0].ports[0].phy.as_mut().unwrap();
        phy.corrected_bits = phy.corrected_bits.map(|b| b + 10_000_000);
        apply(&start, &mut end, 10.0, false);
        let phy = end.devices[0].ports[0].phy.as_ref().unwrap();
        assert_eq!(phy.ber_raw, Some(1e-5));
        assert_eq!(phy.ber_effective, Some(0.0), "no symbol errors in the window");
        let r = run(&Input { inventory: &end, host: None, expect: &Expectations::default(), scope: &Scope::default() });
        // The lifetime symbol errors and uncorrectable codewords are no longer judged.
        let fec = r.checks.iter().find(|c| c.id == FindingId::PhyFec).unwrap();
        assert_eq!(fec.status, Status::Pass, "{fec:?}");
        let ber = r.findings.iter().find(|f| f.id == FindingId::PhyBer).unwrap();
        assert_eq!(ber.severity, Severity::Warning, "1e-5 is within RS-528's 5e-5 but under a decade of margin: {ber:?}");
        assert!(ber.message.contains("lane 2"), "{}", ber.message);
    }

    fn window(seconds: f64, counters: &[(&str, u64, u64)]) -> crate::probe::window::PortWindow {
        use crate::probe::window::{change, CounterChange, PortWindow};
        let counters =
            counters.iter().map(|(n, a, b)| CounterChange { name: n.to_string(), start: *a, end: *b, change: change(n, *a, *b) }).collect();
        PortWindow { seconds, interrupted: false, counters }
    }

    fn findings(link_layer: crate::port::LinkLayer, w: &crate::probe::window::PortWindow) -> Vec<crate::outcome::Finding> {
        crate::diagnose::window_findings(link_layer, Some(100.0), w, None, "n1/mlx5_0")
    }

    #[test]
    fn sequence_errors_that_rose_in_the_window_are_retransmission_not_duplicates_or_timeouts() {
        use crate::port::LinkLayer;
        // mlx5's out_of_sequence and rxe's out_of_seq_request rose: named with their rise.
        for (link_layer, name) in
            [(LinkLayer::Ethernet, "out_of_sequence"), (LinkLayer::InfiniBand, "out_of_sequence"), (LinkLayer::Ethernet, "out_of_seq_request")]
        {
            let f = findings(link_layer, &window(10.0, &[(name, 5, 45), ("packet_seq_err", 0, 0)]));
            let f: Vec<_> = f.iter().filter(|f| f.id == FindingId::LinkRetransmission).collect();
            assert_eq!(f.len(), 1, "{f:#?}");
            assert_eq!(f[0].severity, Severity::Warning);
            assert!(f[0].message.contains(&format!("{name} +40")) && f[0].message.contains("4.0 sequence errors a second"), "{}", f[0].message);
        }
        // Lifetime totals, a duplicate window resent, a timeout: nothing.
        let f = findings(
            LinkLayer::Ethernet,
            &window(10.0, &[("out_of_sequence", 9, 9), ("duplicate_request", 0, 300), ("local_ack_timeout_err", 0, 2)]),
        );
        assert!(f.iter().all(|f| f.id != FindingId::LinkRetransmission), "{f:#?}");
    }

    #[test]
    fn cnps_over_a_roce_window_are_said_below_1000_a_second_and_a_warning_from_it() {
        use crate::port::LinkLayer;
        // 10 s: 2,000 CNPs sent is 200 a second (info); 15,000 handled is 1,500 a second (warning).
        let quiet = findings(LinkLayer::Ethernet, &window(10.0, &[("np_cnp_sent", 0, 2_000), ("np_ecn_marked_roce_packets", 0, 2_400)]));
        let f = quiet.iter().find(|f| f.id == FindingId::RoceCongestion).unwrap();
        assert_eq!(f.severity, Severity::Info, "{f:?}");
        assert!(f.message.contains("200.0 CNPs a second") && f.message.contains("np_ecn_marked_roce_packets +2400"), "{}", f.message);
        let busy = findings(LinkLayer::Ethernet, &window(10.0, &[("np_cnp_sent", 0, 10), ("rp_cnp_handled", 100, 15_100)]));
        let f = busy.iter().find(|f| f.id == FindingId::RoceCongestion).unwrap();
        assert_eq!(f.severity, Severity::Warning, "{f:?}");
        assert!(f.message.contains("1500 CNPs a second") && f.message.contains("rp_cnp_handled +15000"), "{}", f.message);
        // None rose, or not RoCE: no finding.
        assert!(findings(LinkLayer::Ethernet, &window(10.0, &[("np_cnp_sent", 7, 7)])).iter().all(|f| f.id != FindingId::RoceCongestion));
        assert!(findings(LinkLayer::InfiniBand, &window(10.0, &[("np_cnp_sent", 0, 70_000)])).iter().all(|f| f.id != FindingId::RoceCongestion));
    }

    #[test]
    fn a_nodes_soak_window_judges_its_sequence_errors_and_cnps_by_the_same_rule() {
        // check --soak: the port's counters (hw_counters/ read beside counters/) at both ends.
        let mut start = fixture("roce-cx6dx-fec-lane");
        for (name, value) in [("out_of_sequence", 10), ("np_cnp_sent", 0)] {
            start.devices[0].ports[0].counters.push(crate::probe::model::Counter { name: name.into(), value });
        }
        let mut end = start.clone();
        counter(&mut end, "out_of_sequence", 17);
        counter(&mut end, "np_cnp_sent", 50_000);
        apply(&start, &mut end, 10.0, false);
        let r = run(&Input { inventory: &end, host: None, expect: &Expectations::default(), scope: &Scope::default() });
        let oos = r.findings.iter().find(|f| f.id == FindingId::LinkRetransmission).unwrap();
        assert!(oos.message.contains("out_of_sequence +7"), "{}", oos.message);
        let cnp = r.findings.iter().find(|f| f.id == FindingId::RoceCongestion).unwrap();
        assert_eq!(cnp.severity, Severity::Warning, "5,000 a second: {cnp:?}");
    }
}
