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
}
