//! Judging a run's figures (pure): each ring's busbw against the slowest capacity on its path,
//! with `pair`'s framing-aware bar ([`crate::pair::verdict::payload_efficiency`]: the share of
//! the wire a payload fills at the path MTU), and each hop against its ring's median hop.

use super::figures::{lower_median, Figures, HopFigure};
use super::member::Member;
use super::op::Op;
use super::plan::{bcast_pieces, Planned};
use crate::pair::side::Side;

/// What a run is judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criteria {
    /// Share of the slowest capacity (times framing) a ring's busbw must reach (0.9).
    pub bw_fraction: f64,
    /// A hop slower than its ring's median hop by more than this factor is named (2.0).
    pub hop_threshold: f64,
}

impl Default for Criteria {
    fn default() -> Criteria {
        Criteria { bw_fraction: 0.9, hop_threshold: 2.0 }
    }
}

/// One ring's judgment.
#[derive(Debug, Clone, PartialEq)]
pub struct RingJudgment {
    /// The busbw the ring needed (None: not judged: no capacity known, or chunks below
    /// `pair`'s judged size, where message rate, not the link, bounds a transfer).
    pub need_gbps: Option<f64>,
    /// What the bar was made of, in words (`90% of 200 Gb/s, 98.0% payload at MTU 4096`).
    pub bar: String,
    pub below: bool,
    /// Its median hop is slower than the rings' median by more than the hop threshold.
    pub slow_against_rings: bool,
    /// Per hop (as [`RingFigure::hops`](super::figures::RingFigure)): its step time over the
    /// ring's median hop's.
    pub hop_ratio: Vec<f64>,
}

impl RingJudgment {
    pub fn slow_hops(&self, threshold: f64) -> impl Iterator<Item = usize> + '_ {
        self.hop_ratio.iter().enumerate().filter(move |(_, r)| **r > threshold).map(|(i, _)| i)
    }
}

/// A hop's time per step: its p50 step time where measured, else the time its rate gives a
/// byte (what compares within a ring, whose chunks are all one size).
pub fn hop_time(h: &HopFigure) -> Option<f64> {
    match &h.step_us {
        Some(s) if s.p50 > 0.0 => Some(s.p50),
        _ if h.gbps > 0.0 => Some(1.0 / h.gbps),
        _ => None,
    }
}

/// One end as `pair` sees it, for its framing bar.
fn side(m: &Member, mtu: Option<u32>) -> Side {
    Side {
        host: m.host.clone(),
        device: m.device.clone(),
        port: m.port,
        gid_index: None,
        gid: None,
        link_layer: m.link_layer,
        rate_gbps: m.capacity_gbps,
        ca_type: String::new(),
        mtu,
        tclass: None,
        tclass_source: None,
        sl: None,
        cpu: None,
        pcie_gbps: None,
        trained_low: None,
        mem: Default::default(),
        mem_path: None,
        gpu: None,
        gpu_pcie_gbps: None,
    }
}

pub fn judge(planned: &Planned, members: &[Member], figures: &Figures, criteria: &Criteria) -> Vec<RingJudgment> {
    let chunk = planned.plans.first().map_or(0, |p| p.chunk_bytes);
    let mut out: Vec<RingJudgment> = figures
        .rings
        .iter()
        .map(|ring| {
            let times: Vec<Option<f64>> = ring.hops.iter().map(hop_time).collect();
            let median = lower_median(&mut times.iter().flatten().copied().collect::<Vec<_>>());
            let hop_ratio = times.iter().map(|t| match (t, median) {
                (Some(t), Some(m)) if m > 0.0 => t / m,
                _ => 0.0,
            });
            let ring_members: Vec<&Member> = ring.order.iter().filter_map(|m| members.get(m.0 as usize)).collect();
            let (need_gbps, bar) = bar(planned.op, &ring_members, ring.capacity_gbps, chunk, planned.ring_bytes, criteria);
            RingJudgment {
                need_gbps,
                bar,
                below: need_gbps.is_some_and(|n| ring.busbw_gbps < n),
                slow_against_rings: false,
                hop_ratio: hop_ratio.collect(),
            }
        })
        .collect();
    // A ring whose every hop is slow looks fine against its own median: rings against rings.
    let medians: Vec<Option<f64>> = figures.rings.iter().map(|r| lower_median(&mut r.hops.iter().filter_map(hop_time).collect::<Vec<_>>())).collect();
    if let Some(all) = lower_median(&mut medians.iter().flatten().copied().collect::<Vec<_>>()) {
        for (j, m) in out.iter_mut().zip(&medians) {
            j.slow_against_rings = m.is_some_and(|m| all > 0.0 && m / all > criteria.hop_threshold);
        }
    }
    out
}

/// What one dependent step waits beyond its chunk's transfer: the write's one-way latency to the
/// next member and the poll that sees it arrive. perftest's `ib_write_lat` gives about 1-2 us
/// one way on ConnectX HDR/NDR and 200/400GbE; fabcheck allows 3 us (the step model takes 2).
/// A ring of n members at size S moves S/n a step, so at 400 Gb/s and S/n = 1 MiB a step is
/// 21 us of transfer and 3 us of wait: a healthy ring reaches 88% of the link, not 99%.
pub const STEP_LATENCY_US: f64 = 3.0;

/// The busbw a ring needs: the fraction of its slowest capacity, times the payload's share of
/// the wire at the ring's path MTU (pair's bar), times a broadcast pipeline's fill or an
/// incast's release between rounds, times (for the ops whose steps wait on the one before:
/// allreduce and bcast) a step's transfer over its transfer and [`STEP_LATENCY_US`].
fn bar(op: Op, ring: &[&Member], capacity: Option<f64>, chunk: u32, ring_bytes: u64, criteria: &Criteria) -> (Option<f64>, String) {
    let Some(capacity) = capacity else {
        return (None, "no capacity known: reported, not judged".into());
    };
    if chunk < crate::pair::verdict::JUDGED_MIN_SIZE {
        return (None, format!("chunks of {chunk} bytes are bound by message rate, not the link: reported, not judged (give a larger --size)"));
    }
    let mtu = ring.iter().filter_map(|m| m.mtu).min();
    let slowest = ring.iter().min_by(|a, b| a.capacity_gbps.unwrap_or(f64::MAX).total_cmp(&b.capacity_gbps.unwrap_or(f64::MAX)));
    let (efficiency, framing) = match slowest.and_then(|m| crate::pair::verdict::payload_efficiency(&side(m, mtu), &side(m, mtu))) {
        Some((e, mtu)) => (e, format!(", {:.1}% payload at MTU {mtu}", 100.0 * e)),
        None => (1.0, String::new()),
    };
    let (fill, pipeline) = match op {
        Op::Bcast => {
            let n = ring.len() as f64;
            let p = bcast_pieces(ring.len(), ring_bytes) as f64;
            (p / (p + n - 2.0), format!(", {:.0}% pipeline fill ({} pieces)", 100.0 * p / (p + n - 2.0), p))
        }
        Op::Incast(k) => {
            // Each round ends with the receiver releasing the next round's senders: one chunk's
            // time per K x burst chunks received.
            let chunks = f64::from(k) * f64::from(super::plan::INCAST_BURST);
            (chunks / (chunks + 1.0), format!(", {:.0}% for the release between rounds", 100.0 * chunks / (chunks + 1.0)))
        }
        _ => (1.0, String::new()),
    };
    let (wait, waits) = match op {
        Op::AllReduce | Op::Bcast => {
            // The bcast's steps move pieces, the ring's chunks.
            let step_bytes = if op == Op::Bcast { ring_bytes as f64 / bcast_pieces(ring.len(), ring_bytes) as f64 } else { f64::from(chunk) };
            let transfer_us = step_bytes * 8.0 / (capacity * 1e3);
            let share = transfer_us / (transfer_us + STEP_LATENCY_US);
            // Said where it moves the bar by a tenth of a percent or more.
            let words = if share < 0.999 {
                format!(", {:.1}% for each step's wait on the last ({STEP_LATENCY_US} us)", 100.0 * share)
            } else {
                String::new()
            };
            (share, words)
        }
        _ => (1.0, String::new()),
    };
    let need = criteria.bw_fraction * capacity * efficiency * fill * wait;
    (Some(need), format!("{:.0}% of {} Gb/s{framing}{pipeline}{waits}", 100.0 * criteria.bw_fraction, crate::units::rate(capacity)))
}
