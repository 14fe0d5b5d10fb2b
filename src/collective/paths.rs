//! `collective --paths N` (RoCE ECMP, contract "Many paths"), pure: every hop of the plans is
//! carried by N QPs, each its own flow label and so its own UDP source port
//! ([`model::paths`](crate::model::paths)), a hop's chunks spread round-robin over them; a path
//! of a hop below half the median of that hop's other paths is `pair.path`, the hop its
//! subject, its UDP source port in the message (`pair`'s rule and words:
//! [`crate::pair::paths`]).
//!
//! One QP per hop is one flow, one hash, one ECMP member: a ring whose hops each hash onto a
//! good link shows nothing of a bad one beside them. N labels per hop are N draws.

use super::blame::hop_label;
use super::figures::Figures;
use super::member::Member;
use super::plan::{PlanRefusal, Planned};
use crate::outcome::{Finding, FindingId, Severity};
use crate::pair::paths::{finding, slow};

/// Most paths per hop: `pair`'s.
pub const MAX_PATHS: u32 = crate::pair::paths::MAX_PATHS;

/// Sets `--paths n` on every member's plan (checked again: 1..=[`MAX_PATHS`], and a member's
/// hops times `n` within the QPs one member may open).
pub fn apply(planned: &mut Planned, n: u32) -> Result<(), PlanRefusal> {
    for plan in &mut planned.plans {
        plan.paths = n;
        plan.validate().map_err(|error| PlanRefusal::Invalid { member: plan.member.0, error })?;
    }
    Ok(())
}

/// Chunks each path of a hop must carry before its rate is judged. A ring's hop has about one
/// chunk in flight, so a path's rate is the sum of its few chunks' times: with ten, one chunk
/// held up (a descheduled CPU, a retransmission) halves it. Measured in the two-guest tier: 3
/// of 8 clean paths named at 10-12 chunks each; fabcheck's choice is 16.
pub const MIN_CHUNKS_PER_PATH: u64 = 16;

/// `pair.path` for each hop of several paths with one or more below half their siblings'
/// median: one finding per hop, naming the slow paths' UDP source ports (and no other). Hops
/// whose paths carried fewer than [`MIN_CHUNKS_PER_PATH`] chunks each are not judged; one info
/// says how many and how to judge them.
pub fn judge(members: &[Member], figures: &Figures) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut short = 0;
    for h in figures.rings.iter().flat_map(|r| &r.hops).filter(|h| h.paths.len() > 1) {
        if h.chunks < MIN_CHUNKS_PER_PATH * h.paths.len() as u64 {
            short += 1;
            continue;
        }
        let slow = slow(&h.paths);
        if !slow.is_empty() {
            let subject = hop_label(members, h.from, h.to);
            out.push(finding(&subject, &format!("hop {subject} ({} Gb/s over its paths)", crate::units::rate(h.gbps)), &h.paths, &slow));
        }
    }
    if short > 0 {
        out.push(Finding::new(
            FindingId::PairPath,
            Severity::Info,
            "collective",
            format!(
                "{short} hops' paths carried fewer than {MIN_CHUNKS_PER_PATH} chunks each: their per-path rates are reported, not judged (one late chunk swings a short path's rate)"
            ),
            format!("raise --iters (or -D) until each path of a hop carries {MIN_CHUNKS_PER_PATH} chunks or more"),
        ));
    }
    out
}

/// The UDP source ports of a hop's slow paths (what the human view marks).
pub fn slow_ports(paths: &[crate::outcome::paths::PathFigure]) -> Vec<u16> {
    slow(paths).iter().map(|s| paths[s.index].udp_sport).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::figures::{HopFigure, RingFigure};
    use crate::collective::op::Op;
    use crate::collective::plan::{plan, Ring};
    use crate::model::collective::{HopId, MemberId, PlanError};
    use crate::model::paths::{flow_label, flow_label_to_udp_sport};
    use crate::outcome::paths::PathFigure;
    use crate::outcome::{FindingId, Severity};

    fn members(n: usize) -> Vec<Member> {
        (0..n)
            .map(|i| Member {
                host: format!("n{i}"),
                device: "rxe0".into(),
                port: 1,
                rail: None,
                capacity_gbps: None,
                link_layer: crate::port::LinkLayer::Ethernet,
                mtu: Some(1024),
            })
            .collect()
    }

    fn hop(from: u32, to: u32, rates: &[f64]) -> HopFigure {
        let paths: Vec<PathFigure> = rates
            .iter()
            .enumerate()
            .map(|(k, &gbps)| PathFigure {
                flow_label: flow_label(k as u32),
                udp_sport: flow_label_to_udp_sport(flow_label(k as u32)),
                gbps,
                retransmits: None,
            })
            .collect();
        HopFigure { hop: HopId(from), from: MemberId(from), to: MemberId(to), step_us: None, gbps: rates.iter().sum(), chunks: 1_000, paths }
    }

    fn figures(hops: Vec<HopFigure>) -> Figures {
        let ring = RingFigure {
            rail: None,
            order: (0..3).map(MemberId).collect(),
            time_ns: 1.0,
            algbw_gbps: 1.0,
            busbw_gbps: 1.0,
            capacity_gbps: None,
            hops,
        };
        Figures { rings: vec![ring], algbw_gbps: 1.0, busbw_gbps: 1.0 }
    }

    #[test]
    fn a_hop_whose_paths_carried_few_chunks_is_reported_not_judged() {
        let m = members(3);
        let mut short = hop(0, 1, &[10.0, 10.0, 1.0, 10.0]);
        short.chunks = 4 * MIN_CHUNKS_PER_PATH - 1;
        let f = judge(&m, &figures(vec![short.clone()]));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].id, f[0].severity), (FindingId::PairPath, Severity::Info));
        assert!(f[0].message.starts_with("1 hops' paths carried fewer than 16 chunks"), "{}", f[0].message);
        short.chunks += 1;
        let f = judge(&m, &figures(vec![short]));
        assert_eq!((f.len(), f[0].severity), (1, Severity::Error), "{f:#?}");
    }

    #[test]
    fn one_bad_path_among_eight_is_named_by_its_port_and_no_other_is() {
        let mut rates = [5.0; 8];
        rates[5] = 0.8;
        let f = figures(vec![hop(0, 1, &[5.0; 8]), hop(1, 2, &rates), hop(2, 0, &[5.0; 8])]);
        let found = judge(&members(3), &f);
        assert_eq!(found.len(), 1, "{found:?}");
        let bad = &found[0];
        assert_eq!((bad.id, bad.severity), (FindingId::PairPath, Severity::Error));
        assert_eq!(bad.subject.to_string(), "n1/rxe0 -> n2/rxe0");
        let port = f.rings[0].hops[1].paths[5].udp_sport.to_string();
        assert!(bad.message.contains(&port) && bad.remedy.contains(&port), "{}", bad.message);
        for (k, p) in f.rings[0].hops[1].paths.iter().enumerate().filter(|&(k, _)| k != 5) {
            assert!(!bad.message.contains(&p.udp_sport.to_string()), "path {k}: {}", bad.message);
        }
        assert_eq!(slow_ports(&f.rings[0].hops[1].paths), vec![f.rings[0].hops[1].paths[5].udp_sport]);
    }

    #[test]
    fn a_hop_of_one_path_or_even_paths_names_nothing() {
        let f = figures(vec![hop(0, 1, &[0.1]), hop(1, 2, &[3.0, 3.1, 2.9, 3.0]), hop(2, 0, &[])]);
        assert!(judge(&members(3), &f).is_empty());
    }

    #[test]
    fn apply_sets_every_plan_and_refuses_what_a_member_cannot_open() {
        let ring = || vec![Ring { rail: None, order: (0..4).map(MemberId).collect() }];
        let mut planned = plan(Op::AllReduce, ring(), 1 << 20, 2).unwrap();
        apply(&mut planned, 8).unwrap();
        assert!(planned.plans.iter().all(|p| p.paths == 8));
        let back: crate::model::collective::MemberPlan = serde_json::from_str(&serde_json::to_string(&planned.plans[0]).unwrap()).unwrap();
        assert_eq!(back.paths, 8);
        let mut planned = plan(Op::AllReduce, ring(), 1 << 20, 2).unwrap();
        assert!(matches!(apply(&mut planned, 0), Err(PlanRefusal::Invalid { error: PlanError::Paths(0), .. })));
        assert!(matches!(apply(&mut planned, MAX_PATHS + 1), Err(PlanRefusal::Invalid { error: PlanError::Paths(_), .. })));
        // One path is written as before: no `paths` on the wire (an older agent reads the plan).
        let mut planned = plan(Op::AllReduce, ring(), 1 << 20, 2).unwrap();
        apply(&mut planned, 1).unwrap();
        assert!(!serde_json::to_string(&planned.plans[0]).unwrap().contains("paths"));
        // alltoall among 257 holds 512 hops on a member: 16 paths are more QPs than one opens.
        let mut wide = plan(Op::AllToAll, vec![Ring { rail: None, order: (0..257).map(MemberId).collect() }], 257 << 12, 1).unwrap();
        assert!(matches!(apply(&mut wide, 16), Err(PlanRefusal::Invalid { error: PlanError::TooManyQps { .. }, .. })));
    }
}
