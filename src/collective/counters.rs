//! Each member's port counters over its run, judged as `check --soak` judges a window (pure):
//! the member's readings become a [`PortWindow`] and `diagnose::window_findings` (the soak
//! rules, not a copy) judges it, each finding on the member (`HOST/DEV`) with the soak rules'
//! ids (`link.errors`, `phy.ber`, `roce.qos`: pause storms, discards and the RoCE priority's
//! pause share; `link.retransmission`: sequence errors; `roce.congestion`: CNPs, a warning from
//! `diagnose::limits::CNP_WARN_PER_S` a second). What could not be judged (an agent older than this, a RoCE port whose driver
//! prints no per-priority counters, a priority not worked out) is said once, never passed.

use super::member::Member;
use crate::model::collective::MemberResult;
use crate::outcome::{Finding, FindingId, Severity};
use crate::port::LinkLayer;
use crate::probe::window::{change, CounterChange, PortWindow};

/// The findings of every member's window, then one note of what was not judged.
pub fn judge(members: &[Member], results: &[MemberResult]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut unjudged: Vec<(String, String)> = Vec::new();
    for r in results {
        let Some(m) = members.get(r.member.0 as usize) else { continue };
        let label = super::blame::label(m);
        let Some(w) = &r.window else {
            unjudged.push((label, "its agent sends no counters (older than 0.5)".into()));
            continue;
        };
        let window = PortWindow {
            seconds: w.seconds,
            interrupted: false,
            counters: w
                .counters
                .iter()
                .map(|(name, start, end)| CounterChange { name: name.clone(), start: *start, end: *end, change: change(name, *start, *end) })
                .collect(),
        };
        let roce = (m.link_layer == LinkLayer::Ethernet).then_some(()).and(w.netdev.as_deref());
        if m.link_layer == LinkLayer::Ethernet {
            match (&w.prio_unread, w.roce_priority, roce) {
                (Some(why), _, _) => unjudged.push((label.clone(), crate::sanitise::one_line(why).into_owned())),
                (None, None, Some(_)) => {
                    unjudged.push((label.clone(), "its RoCE priority could not be worked out: its pause share is not judged".into()))
                }
                (_, _, None) => unjudged.push((label.clone(), "its port has no netdev".into())),
                _ => {}
            }
        }
        let priority = w.roce_priority.and_then(crate::probe::qos::Priority::new);
        out.extend(crate::diagnose::window_findings(m.link_layer, m.capacity_gbps, &window, roce.map(|n| (n, priority)), &label));
    }
    if let Some((first, why)) = unjudged.first() {
        let others = unjudged.len() - 1;
        let more = if others > 0 { format!(" (and {others} more)") } else { String::new() };
        out.push(Finding::new(
            FindingId::SoakCounters,
            Severity::Info,
            first.as_str(),
            format!("counters over the run not judged on {} of {} members: {first}: {why}{more}", unjudged.len(), results.len()),
            "per-priority counters come from `ethtool -S` of an mlx5 port's netdev with a 0.5 agent; Soft-RoCE prints none",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::collective::{CounterWindow, MemberId};

    fn member(host: &str, link_layer: LinkLayer) -> Member {
        Member { host: host.into(), device: "mlx5_0".into(), port: 1, rail: None, capacity_gbps: Some(100.0), link_layer, mtu: Some(4096) }
    }

    fn result(i: u32, window: Option<CounterWindow>) -> MemberResult {
        MemberResult { member: MemberId(i), elapsed_ns: 1, iterations: 1, hops: vec![], counter_deltas: vec![], window }
    }

    fn window(counters: &[(&str, u64, u64)], priority: Option<u8>) -> CounterWindow {
        CounterWindow {
            seconds: 10.0,
            netdev: Some("eth2".into()),
            roce_priority: priority,
            prio_unread: None,
            counters: counters.iter().map(|(n, a, b)| (n.to_string(), *a, *b)).collect(),
        }
    }

    #[test]
    fn a_members_pause_share_and_discards_are_judged_by_the_soak_rules_and_named() {
        let members = vec![member("n1", LinkLayer::Ethernet), member("n2", LinkLayer::Ethernet)];
        // n2: priority 3 paused 6 s of 10 (60%), 12 packets discarded on it; n1 clean.
        let clean = window(&[("rx_prio3_pause_duration", 0, 0), ("rx_prio3_buf_discard", 5, 5)], Some(3));
        let bad = window(&[("rx_prio3_pause_duration", 100, 6_000_100), ("rx_prio3_pause", 0, 900), ("rx_prio3_buf_discard", 0, 12)], Some(3));
        let findings = judge(&members, &[result(0, Some(clean)), result(1, Some(bad))]);
        assert!(findings.iter().all(|f| f.subject == "n2/mlx5_0"), "{findings:#?}");
        let discard = findings.iter().find(|f| f.message.contains("discarded")).unwrap();
        assert_eq!((discard.id, discard.severity), (FindingId::RoceQos, Severity::Error));
        let pause = findings.iter().find(|f| f.message.contains("paused for 60.0%")).unwrap();
        assert_eq!(pause.id, FindingId::RoceQos, "{pause:?}");
    }

    #[test]
    fn absent_counters_are_said_not_judged_once_never_passed() {
        let members = vec![member("n1", LinkLayer::Ethernet), member("n2", LinkLayer::Ethernet), member("n3", LinkLayer::InfiniBand)];
        let rxe = CounterWindow { prio_unread: Some("`ethtool -S eth0` prints no per-priority counters".into()), ..window(&[], None) };
        let ib = CounterWindow { netdev: None, ..window(&[("symbol_error", 0, 0)], None) };
        let findings = judge(&members, &[result(0, Some(rxe.clone())), result(1, Some(rxe)), result(2, Some(ib))]);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let f = &findings[0];
        assert_eq!((f.id, f.severity), (FindingId::SoakCounters, Severity::Info));
        assert!(f.message.starts_with("counters over the run not judged on 2 of 3 members: n1/mlx5_0: `ethtool"), "{}", f.message);
        assert!(f.message.ends_with("(and 1 more)"), "{}", f.message);
        // An agent that sends none (older than 0.5).
        let findings = judge(&members[..1], &[result(0, None)]);
        assert!(findings[0].message.contains("sends no counters"), "{findings:?}");
    }

    #[test]
    fn an_infiniband_members_error_counters_that_rose_are_named() {
        let members = vec![member("n1", LinkLayer::InfiniBand)];
        let w = CounterWindow { netdev: None, ..window(&[("port_rcv_errors", 1, 9), ("symbol_error", 0, 0)], None) };
        let findings = judge(&members, &[result(0, Some(w))]);
        let f = findings.iter().find(|f| f.id == FindingId::LinkErrors).unwrap();
        assert!(f.message.contains("port_rcv_errors +8") && f.subject == "n1/mlx5_0", "{f:?}");
    }

    #[test]
    fn a_member_whose_sequence_errors_rose_is_named_a_clean_one_is_not() {
        let members = vec![member("n1", LinkLayer::Ethernet), member("n2", LinkLayer::Ethernet), member("n3", LinkLayer::InfiniBand)];
        let ib = |c: &[(&str, u64, u64)]| CounterWindow { netdev: None, ..window(c, None) };
        let clean = window(&[("out_of_sequence", 40, 40), ("np_cnp_sent", 3, 3), ("rx_prio3_pause_duration", 0, 0)], Some(3));
        let lossy = window(&[("out_of_sequence", 40, 52), ("packet_seq_err", 1, 4), ("rx_prio3_pause_duration", 0, 0)], Some(3));
        let findings = judge(&members, &[result(0, Some(clean)), result(1, Some(lossy)), result(2, Some(ib(&[("out_of_sequence", 0, 9)])))]);
        let named: Vec<String> = findings.iter().filter(|f| f.id == FindingId::LinkRetransmission).map(|f| f.subject.to_string()).collect();
        assert_eq!(named, vec!["n2/mlx5_0", "n3/mlx5_0"], "{findings:#?}");
        let f = findings.iter().find(|f| f.subject == "n2/mlx5_0" && f.id == FindingId::LinkRetransmission).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("out_of_sequence +12 packet_seq_err +3") && f.message.contains("10 s window"), "{}", f.message);
        assert!(findings.iter().all(|f| f.subject != "n1/mlx5_0"), "the clean member is not named: {findings:#?}");
    }

    #[test]
    fn cnps_on_a_roce_member_are_judged_at_the_soak_rules_rate() {
        let members = vec![member("n1", LinkLayer::Ethernet), member("n2", LinkLayer::Ethernet)];
        // 10 s: n1 sent 500 CNPs (50 a second: congestion control acted, info); n2 handled
        // 12,000 (1,200 a second, over the 1,000 from which it is a warning).
        let some = window(&[("np_cnp_sent", 0, 500), ("rx_prio3_pause_duration", 0, 0)], Some(3));
        let many = window(&[("rp_cnp_handled", 0, 12_000), ("np_ecn_marked_roce_packets", 0, 0), ("rx_prio3_pause_duration", 0, 0)], Some(3));
        let findings = judge(&members, &[result(0, Some(some)), result(1, Some(many))]);
        let cnp = |who: &str| findings.iter().find(|f| f.subject == who && f.id == FindingId::RoceCongestion).unwrap();
        assert_eq!(cnp("n1/mlx5_0").severity, Severity::Info);
        assert_eq!(cnp("n2/mlx5_0").severity, Severity::Warning);
        assert!(
            cnp("n2/mlx5_0").message.contains("1200 CNPs a second") && cnp("n2/mlx5_0").message.contains("rp_cnp_handled +12000"),
            "{findings:#?}"
        );
    }
}
