//! Level 3's time (pure): `--duration` (an hour by default) bounds the run, and each traffic
//! stage's share derives from it. The soak window is the whole run: the fleet's `check` at the
//! start (level 1) and again at the end, what appeared in between judged; the traffic stages
//! run inside it, and what they leave of the duration is waited out (a quiet fabric, its
//! counters still read at the end).
//!
//! | stage | share of `--duration` |
//! |---|---|
//! | `pair --rails` ring | pair's default iterations (seconds) |
//! | `mesh --pattern shift` | 40%, split over its rounds and its two tests |
//! | `collective` allreduce, alltoall | 15% each |
//! | the rest of the soak window | what is left, then the end check |

use crate::collective::op::Op;
use crate::collective::Member;
use std::time::Duration;

/// Shortest test a stage is given, whatever the duration.
const MIN_TEST: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub total: Duration,
    /// Each test of each mesh shift round.
    pub mesh_test: Duration,
    /// Each collective op.
    pub collective: Duration,
}

impl Budget {
    /// The shares of `total` for a fleet of `hosts` nodes (shift runs `hosts - 1` rounds).
    pub fn split(total: Duration, hosts: usize) -> Budget {
        let rounds = hosts.saturating_sub(1).max(1) as u32;
        let mesh_test = (total.mul_f64(0.40) / (rounds * 2)).max(MIN_TEST);
        Budget { total, mesh_test, collective: total.mul_f64(0.15).max(MIN_TEST) }
    }
}

/// Iterations of `op` that take about `secs` at the slowest member's link rate (as `collective
/// --duration` counts them: a healthy fabric's time; a slow one takes longer, bounded by the
/// stage's deadline).
pub fn iterations(op: Op, members: &[Member], size: u64, secs: f64) -> u64 {
    let slowest = members.iter().filter_map(|m| m.capacity_gbps).fold(f64::INFINITY, f64::min);
    let gbps = if slowest.is_finite() && slowest > 0.0 { slowest } else { 100.0 };
    let n = members.len().max(2);
    let bits = size as f64 * 8.0 * op.bus_factor(n).max(1.0);
    ((secs / (bits / (gbps * 1e9)).max(1e-9)) as u64).clamp(1, 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_gives_the_mesh_forty_percent_over_its_rounds_and_each_collective_fifteen() {
        let b = Budget::split(Duration::from_secs(3600), 9);
        assert_eq!(b.mesh_test, Duration::from_secs(90));
        assert_eq!(b.collective, Duration::from_secs(540));
        // A short run still gives every test a second.
        let b = Budget::split(Duration::from_secs(4), 64);
        assert_eq!((b.mesh_test, b.collective), (MIN_TEST, MIN_TEST));
    }

    #[test]
    fn iterations_follow_the_slowest_link() {
        let m = |gbps| Member {
            host: "h".into(),
            device: "mlx5_0".into(),
            port: 1,
            rail: None,
            capacity_gbps: Some(gbps),
            link_layer: crate::port::LinkLayer::InfiniBand,
            mtu: None,
        };
        // 4 members at 100 Gb/s, allreduce of 100 MB: 1.5 x 800 Mb = 12 ms an iteration.
        let members = vec![m(100.0), m(400.0), m(100.0), m(100.0)];
        assert!((99..=100).contains(&iterations(Op::AllReduce, &members, 100_000_000, 1.2)));
        assert_eq!(iterations(Op::AllToAll, &members, 100_000_000, 0.0), 1);
    }
}
