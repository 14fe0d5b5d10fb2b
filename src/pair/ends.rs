//! Findings about a pair's two ends themselves (pure): one trained below what it supports,
//! the expectations the user gave (judged by `diagnose::expect`, worded here), ends at
//! different rates or MTUs.

use super::side::Side;
use crate::diagnose::expect::Miss;
use crate::diagnose::Expectations;
use crate::model::LinkLayer;
use crate::outcome::{Finding, FindingId, Severity};
use crate::units::rate as gbps;

/// Findings about the two ends themselves: one trained below what it supports (the verdict
/// must not pass it at the lower rate it negotiated), ends at different rates, and the
/// expectations the user gave.
pub(super) fn judge(a: &Side, b: &Side, expect: &Expectations, subject: &str, findings: &mut Vec<Finding>) {
    for (name, s) in [("A", a), ("B", b)] {
        if let Some(what) = &s.trained_low {
            findings.push(Finding {
                id: FindingId::PairCapacity,
                severity: Severity::Error,
                subject: subject.into(),
                message: format!("{name} ({}/{}) trained below what its port supports: {what}", s.host, s.device),
                remedy: "a cable, connector or lane fault, or a switch port configured low: run `fabcheck check` on that node \
                         (link.trained); on InfiniBand `fabcheck fabric` names both ends of the link"
                    .into(),
                about: None,
            });
        }
        // The one judge of each expectation (check's link.rate, port.link_layer, port.mtu):
        // pair's end is the measured link's, at its data rate (nominal worked out on InfiniBand).
        let ib = s.link_layer == LinkLayer::InfiniBand;
        let misses = [expect.rate_miss(ib, s.rate_gbps, None), expect.link_layer_miss(s.link_layer), s.mtu.and_then(|m| expect.mtu_miss(m))];
        for miss in misses.into_iter().flatten() {
            findings.push(missed(name, s, miss, subject));
        }
    }
    if let (Some(ra), Some(rb)) = (a.rate_gbps, b.rate_gbps) {
        if (ra - rb).abs() > 0.5 {
            findings.push(Finding {
                id: FindingId::PairRate,
                severity: Severity::Warning,
                subject: subject.into(),
                message: format!("the ends run at different rates ({} vs {} Gb/s): the pair is judged against the slower", gbps(ra), gbps(rb)),
                remedy: "if both should match, run `fabcheck check` on the slower node".into(),
                about: None,
            });
        }
    }
}

/// An expectation an end misses, in pair's words.
fn missed(name: &str, s: &Side, miss: Miss, subject: &str) -> Finding {
    let (id, message, remedy) = match miss {
        Miss::Rate { got, want } => (
            FindingId::PairCapacity,
            format!("{name} ({}/{}) runs at {} Gb/s, {} Gb/s expected", s.host, s.device, gbps(got), gbps(want)),
            "run `fabcheck check --expect rate=...` on that node: the link trained low or the wrong port was used",
        ),
        Miss::LinkLayer { got, want } => (
            FindingId::PairCapacity,
            format!("{name} ({}/{}) is {got}, {want} expected", s.host, s.device),
            "run `fabcheck check` on that node (port.link_layer says how to change it)",
        ),
        Miss::Mtu { got, want } => (
            FindingId::PairMtu,
            format!("{name} ({}/{}) has active MTU {got}, {want} expected", s.host, s.device),
            "set the netdev MTU to 9000 for a RoCE MTU of 4096; on InfiniBand the partition's MTU",
        ),
    };
    Finding { id, severity: Severity::Error, subject: subject.into(), message, remedy: remedy.into(), about: None }
}

/// Ends whose active MTUs differ: the connection used the smaller.
pub(super) fn mtus_differ(a: &Side, b: &Side, subject: &str, findings: &mut Vec<Finding>) {
    if let (Some(ma), Some(mb)) = (a.mtu, b.mtu) {
        if ma != mb {
            findings.push(Finding {
                id: FindingId::PairMtu,
                severity: Severity::Warning,
                subject: subject.into(),
                message: format!("active MTUs differ ({ma} vs {mb}); the connection used {}", ma.min(mb)),
                remedy: "set the same MTU on both ends (netdev MTU 9000 for RoCE 4096, the SM partition MTU on InfiniBand)".into(),
                about: None,
            });
        }
    }
}
