//! How much of a latency loop's wall time its thread lost to preemption: the value a latency
//! result carries (the loop that counts it is `perf::preempt`). Pure.

use serde::{Deserialize, Serialize};

/// How much of a latency loop's wall time its thread lost (absent: none, or an older agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preempt {
    /// Gaps between iterations above the loop's bound (`perf::preempt::GAP_TICKS`).
    pub gaps: u32,
    /// Their total, nanoseconds.
    pub gap_ns: u64,
    /// The loop's wall time, nanoseconds.
    pub elapsed_ns: u64,
}

/// Share of the loop's wall time lost to gaps above which the samples are not judged: a
/// loop that loses a hundredth of its time between iterations loses comparable time inside
/// them, and the median round trip (microseconds) is then the scheduler's.
pub const SPOILED_SHARE: f64 = 0.01;

impl Preempt {
    /// Share of the wall time lost between iterations (0 when the wall time is unknown).
    pub fn share(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.gap_ns as f64 / self.elapsed_ns as f64
        }
    }

    /// Preempted beyond the bound: the sample set is not judged.
    pub fn spoils(&self) -> bool {
        self.share() > SPOILED_SHARE
    }

    /// "N gaps, X ms", for the finding's message.
    pub fn describe(&self) -> String {
        format!("{} gaps, {} ms", self.gaps, crate::units::sig3(self.gap_ns as f64 / 1e6))
    }
}
