//! A running test's figures as they stand (`--report-every`): what the measured loop leaves
//! for another thread to read, and that thread's interval figures.
//!
//! The loop only stores: a bandwidth loop one relaxed store of its bytes completed per poll
//! that reaped something (a plain `mov` on x86, no lock, no allocation); a latency loop one
//! relaxed add into a fixed log-linear histogram of round trips, in loop-clock ticks, per
//! measured iteration (only when progress is asked). The agent's reporter thread reads a
//! [`Snapshot`] every interval and turns two of them into an [`Interval`] (pure, tested here);
//! formatting and sending happen there, never in the loop.

use crate::model::{Interval, IntervalLatency};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Exact buckets below this; above, 16 per power of two (at most 1/16 = 6.25% high).
const LINEAR: u64 = 16;
const SUB_BITS: u32 = 4;
/// Buckets up to 2^63 ticks.
pub const BUCKETS: usize = LINEAR as usize + (64 - SUB_BITS as usize) * (1 << SUB_BITS);

/// The histogram bucket of a round trip of `ticks`.
#[inline(always)]
pub fn bucket(ticks: u64) -> usize {
    if ticks < LINEAR {
        return ticks as usize;
    }
    let e = 63 - ticks.leading_zeros();
    let sub = (ticks >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (LINEAR + u64::from(e - SUB_BITS) * (1 << SUB_BITS) + sub) as usize
}

/// The highest tick count bucket `i` holds (its figure: a percentile never reads low).
pub fn bucket_top(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR {
        return i;
    }
    let e = (i - LINEAR) / (1 << SUB_BITS) + u64::from(SUB_BITS);
    let sub = (i - LINEAR) % (1 << SUB_BITS);
    let low = (1u64 << e) | (sub << (e - u64::from(SUB_BITS)));
    low.saturating_add((1u64 << (e - u64::from(SUB_BITS))) - 1)
}

/// The shared figures of the test running now (one per agent session, in [`super::Signals`]).
#[derive(Debug)]
pub struct Live {
    /// The loop records latency samples here (asked by the spec; off by default).
    on: AtomicBool,
    /// Bytes completed in the measured phase so far (bandwidth).
    bytes: AtomicU64,
    /// Round trips per bucket, in loop-clock ticks (latency).
    hist: Box<[AtomicU64; BUCKETS]>,
    /// The latency loop's clock is the TSC (else nanoseconds).
    tsc: AtomicBool,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            on: AtomicBool::new(false),
            bytes: AtomicU64::new(0),
            hist: Box::new(std::array::from_fn(|_| AtomicU64::new(0))),
            tsc: AtomicBool::new(false),
        }
    }
}

/// What the reporter read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub bytes: u64,
    pub hist: Vec<u64>,
}

impl Live {
    /// Before a test: zeroes, and whether the latency loop records into the histogram.
    pub fn arm(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
        for b in self.hist.iter() {
            b.store(0, Ordering::Relaxed);
        }
    }

    /// Whether a latency loop should record (read once before the loop).
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// The latency loop's clock (before the loop).
    pub fn set_clock(&self, source: super::clock::Source) {
        self.tsc.store(source == super::clock::Source::Tsc, Ordering::Relaxed);
    }

    /// Bandwidth loop: bytes completed so far in the measured phase.
    #[inline(always)]
    pub fn set_bytes(&self, bytes: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Latency loop: one round trip of `ticks`.
    #[inline(always)]
    pub fn sample(&self, ticks: u64) {
        self.hist[bucket(ticks)].fetch_add(1, Ordering::Relaxed);
    }

    /// The reporter's reading (allocates: outside the loop).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot { bytes: self.bytes.load(Ordering::Relaxed), hist: self.hist.iter().map(|b| b.load(Ordering::Relaxed)).collect() }
    }

    /// Nanoseconds per tick of the loop's clock, measured by the reader from `since` (when it
    /// started reading) to now.
    pub fn ns_per_tick(&self, since: &Calibration) -> f64 {
        if !self.tsc.load(Ordering::Relaxed) {
            return 1.0;
        }
        let ns = since.at.elapsed().as_nanos() as f64;
        let ticks = fabcheck_verbs::tsc::cycles().wrapping_sub(since.ticks) as f64;
        if ticks > 0.0 && ns > 0.0 {
            ns / ticks
        } else {
            1.0
        }
    }
}

/// The reader's own measure of the TSC rate: the TSC and the monotonic clock when it began.
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    at: std::time::Instant,
    ticks: u64,
}

impl Calibration {
    pub fn start() -> Calibration {
        Calibration { at: std::time::Instant::now(), ticks: fabcheck_verbs::tsc::cycles() }
    }
}

/// The figures of the interval between two snapshots `elapsed_ns` apart, ending `t_ms` into
/// the test. `halve`: one-way latency from round trips (send and write latency).
pub fn interval(before: &Snapshot, after: &Snapshot, t_ms: u64, elapsed_ns: u64, ns_per_tick: f64, halve: bool) -> Interval {
    let bytes = after.bytes.saturating_sub(before.bytes);
    let counts: Vec<u64> = after.hist.iter().zip(&before.hist).map(|(a, b)| a.saturating_sub(*b)).collect();
    let n: u64 = counts.iter().sum();
    let us = |i: usize| bucket_top(i) as f64 * ns_per_tick / if halve { 2000.0 } else { 1000.0 };
    let at = |q: f64| {
        let rank = ((n as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return us(i);
            }
        }
        us(counts.len() - 1)
    };
    let lat_us =
        (n > 0).then(|| IntervalLatency { p50: at(0.5), p99: at(0.99), max: counts.iter().rposition(|&c| c > 0).map_or(0.0, us), samples: n });
    let gbps = (after.bytes > 0 || before.bytes > 0).then(|| super::summary::gbps(bytes, elapsed_ns));
    Interval { t_ms, gbps, lat_us }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_16_and_within_a_sixteenth_above() {
        for t in 0..16 {
            assert_eq!(bucket_top(bucket(t)), t);
        }
        for t in [16u64, 17, 100, 1000, 4095, 4096, 123_456, 1 << 40, u64::MAX / 2] {
            let top = bucket_top(bucket(t));
            assert!(top >= t && (top - t) as f64 <= t as f64 / 16.0, "{t} -> {top}");
        }
        assert!(bucket(u64::MAX) < BUCKETS);
        // Monotonic: a longer round trip never lands in a lower bucket.
        let mut last = 0;
        for t in (0..100_000u64).step_by(7) {
            assert!(bucket(t) >= last);
            last = bucket(t);
        }
    }

    #[test]
    fn an_interval_is_the_difference_of_two_snapshots() {
        let live = Live::default();
        live.arm(true);
        for _ in 0..99 {
            live.sample(2000);
        }
        let first = live.snapshot();
        // The next interval: 98 round trips of 2000 ticks, 2 of 40000, and 1.25 GB in 1 s.
        for _ in 0..98 {
            live.sample(2000);
        }
        live.sample(40_000);
        live.sample(40_000);
        live.set_bytes(1_250_000_000);
        let second = live.snapshot();
        let i = interval(&first, &second, 2000, 1_000_000_000, 1.0, true);
        assert_eq!(i.t_ms, 2000);
        assert_eq!(i.gbps, Some(10.0));
        let lat = i.lat_us.unwrap();
        assert_eq!(lat.samples, 100);
        // One-way: half the round trip, in microseconds (bucket tops: at most 1/16 high).
        assert!((1.0..=1.07).contains(&lat.p50), "{lat:?}");
        assert!((20.0..=21.3).contains(&lat.p99), "{lat:?}");
        assert_eq!(lat.max, lat.p99);
        // A latency test has no bandwidth figure; an empty interval no latency.
        assert_eq!(interval(&first, &first, 1000, 1_000_000_000, 1.0, true), Interval { t_ms: 1000, gbps: None, lat_us: None });
    }

    #[test]
    fn arming_zeroes_what_the_last_test_left() {
        let live = Live::default();
        live.arm(true);
        live.sample(5);
        live.set_bytes(7);
        live.arm(false);
        assert!(!live.is_on());
        let s = live.snapshot();
        assert_eq!((s.bytes, s.hist.iter().sum::<u64>()), (0, 0));
    }
}
