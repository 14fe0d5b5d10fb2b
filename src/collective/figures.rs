//! The figures of a run (pure), as nccl-tests defines them (NVIDIA/nccl-tests
//! doc/PERFORMANCE.md): `algbw` = S / t, the bytes of the op over its time, and
//! `busbw` = algbw x the op's factor ([`Op::bus_factor`]), the rate the busiest link carried
//! so it compares with the link. Here in Gb/s (bits), per ring and for the whole run; per hop
//! its step times and rate, as its sender measured them.

use super::member::Member;
use super::op::Op;
use super::plan::{HopRole, Planned};
use crate::model::collective::{HopId, MemberId, MemberResult};
use crate::model::LatencySummary;
use crate::outcome::paths::PathFigure;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct HopFigure {
    pub hop: HopId,
    pub from: MemberId,
    pub to: MemberId,
    pub step_us: Option<LatencySummary>,
    pub gbps: f64,
    /// Chunks the hop carried over the run (all its paths).
    pub chunks: u64,
    /// `--paths N` (N > 1): each of the hop's paths, in path order (empty with one path).
    pub paths: Vec<PathFigure>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RingFigure {
    pub rail: Option<u16>,
    pub order: Vec<MemberId>,
    /// One iteration's time: the slowest member's, nanoseconds.
    pub time_ns: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// The slowest member's link capacity.
    pub capacity_gbps: Option<f64>,
    /// Its data hops (incast's `go` hops are not the op's traffic).
    pub hops: Vec<HopFigure>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub rings: Vec<RingFigure>,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
}

/// Bytes one ring's op moves per iteration in nccl-tests' sense (S): incast counts each of
/// its n rounds' receiver's S.
pub fn op_bytes(op: Op, ring_bytes: u64, n: usize) -> f64 {
    match op {
        Op::Incast(_) => ring_bytes as f64 * n as f64,
        _ => ring_bytes as f64,
    }
}

/// The figures of `results` (one per plan of `planned`).
pub fn figures(planned: &Planned, members: &[Member], results: &[MemberResult]) -> Figures {
    let by_member: HashMap<MemberId, &MemberResult> = results.iter().map(|r| (r.member, r)).collect();
    let mut hop_results = HashMap::new();
    for r in results {
        for h in &r.hops {
            hop_results.insert(h.hop, h);
        }
    }
    let mut rings = Vec::with_capacity(planned.rings.len());
    let (mut weighted, mut bytes, mut slowest) = (0.0, 0.0, 0.0f64);
    for (index, ring) in planned.rings.iter().enumerate() {
        let n = ring.order.len();
        // One iteration's time, by each member's own count: with `-D` the members are stopped,
        // each after the iterations it finished (its elapsed time runs to the stop).
        let time_ns =
            ring.order.iter().filter_map(|m| by_member.get(m)).map(|r| r.elapsed_ns as f64 / r.iterations.max(1) as f64).fold(0.0, f64::max);
        let s = op_bytes(planned.op, planned.ring_bytes, n);
        let algbw = if time_ns > 0.0 { s * 8.0 / time_ns } else { 0.0 };
        let factor = planned.op.bus_factor(n);
        let capacity_gbps = ring.order.iter().filter_map(|m| members.get(m.0 as usize)?.capacity_gbps).reduce(f64::min);
        let hops = planned
            .hops
            .iter()
            .filter(|h| h.ring == index && h.role == HopRole::Data)
            .map(|h| {
                let r = hop_results.get(&h.hop.id);
                HopFigure {
                    hop: h.hop.id,
                    from: h.hop.from,
                    to: h.hop.to,
                    step_us: r.and_then(|r| r.step_us),
                    gbps: r.map_or(0.0, |r| r.gbps),
                    chunks: r.map_or(0, |r| r.chunks),
                    paths: r.map_or_else(Vec::new, |r| r.paths.iter().map(crate::pair::paths::figure).collect()),
                }
            })
            .collect();
        weighted += s * factor;
        bytes += s;
        slowest = slowest.max(time_ns);
        rings.push(RingFigure {
            rail: ring.rail,
            order: ring.order.clone(),
            time_ns,
            algbw_gbps: algbw,
            busbw_gbps: algbw * factor,
            capacity_gbps,
            hops,
        });
    }
    let per = |b: f64| if slowest > 0.0 { b * 8.0 / slowest } else { 0.0 };
    Figures { rings, algbw_gbps: per(bytes), busbw_gbps: per(weighted) }
}

/// The lower median (of two, the smaller: a ring of two hops compares its slow hop with its
/// fast one).
pub fn lower_median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[(values.len() - 1) / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::plan::{plan, Ring};
    use crate::collective::stepmodel::{Faults, StepModel};
    use crate::collective::Members;
    use std::time::Duration;

    fn members(n: usize) -> Vec<Member> {
        (0..n)
            .map(|i| Member {
                host: format!("n{i}"),
                device: "mlx5_0".into(),
                port: 1,
                rail: None,
                capacity_gbps: Some(100.0),
                link_layer: crate::port::LinkLayer::InfiniBand,
                mtu: Some(4096),
            })
            .collect()
    }

    #[test]
    fn a_clean_ring_allreduce_has_busbw_near_the_link_as_all_reduce_perf_shows() {
        let n = 8;
        let planned = plan(Op::AllReduce, vec![Ring { rail: None, order: (0..n).map(MemberId).collect() }], 64 << 20, 2).unwrap();
        let results =
            StepModel::new(members(n as usize), vec![None; n as usize], Faults::default()).run(&planned.plans, Duration::from_secs(1)).unwrap();
        let f = figures(&planned, &members(n as usize), &results);
        let ring = &f.rings[0];
        // busbw = algbw * 2(n-1)/n, and the ring's link-rate bound is the link.
        assert!((ring.busbw_gbps / ring.algbw_gbps - 1.75).abs() < 1e-9);
        assert!(ring.busbw_gbps > 95.0 && ring.busbw_gbps <= 100.0, "{}", ring.busbw_gbps);
        assert_eq!(ring.hops.len(), 8);
        assert!((f.busbw_gbps - ring.busbw_gbps).abs() < 1e-9);
    }

    #[test]
    fn lower_median_of_two_is_the_smaller() {
        assert_eq!(lower_median(&mut [3.0, 1.0]), Some(1.0));
        assert_eq!(lower_median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(lower_median(&mut []), None);
    }
}
