//! Turning raw measurements into the numbers a report shows (pure).

use hdrhistogram::Histogram;

pub use crate::model::LatencySummary;

/// Summarises samples in nanoseconds; `halve` reports one-way latency from round trips
/// (send and write latency, as perftest does). `None` for no samples.
pub fn latency(samples_ns: &[u64], halve: bool) -> Option<LatencySummary> {
    if samples_ns.is_empty() {
        return None;
    }
    // Three significant digits over 1 ns .. 1 hour; recorded after the measured loop.
    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).ok()?;
    let div = if halve { 2.0 } else { 1.0 };
    let mut min = u64::MAX;
    let mut max = 0;
    for &s in samples_ns {
        let v = s.max(1);
        min = min.min(v);
        max = max.max(v);
        hist.saturating_record(v);
    }
    let us = |ns: f64| ns / div / 1000.0;
    Some(LatencySummary {
        min: us(min as f64),
        p50: us(hist.value_at_quantile(0.50) as f64),
        p90: us(hist.value_at_quantile(0.90) as f64),
        p99: us(hist.value_at_quantile(0.99) as f64),
        p999: us(hist.value_at_quantile(0.999) as f64),
        max: us(max as f64),
        mean: us(hist.mean()),
        stdev: us(hist.stdev()),
        preempt: None,
    })
}

/// Gb/s (10^9 bit/s) for `bytes` in `elapsed_ns`.
pub fn gbps(bytes: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        return 0.0;
    }
    bytes as f64 * 8.0 / elapsed_ns as f64
}

/// Millions of messages per second.
pub fn mpps(messages: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        return 0.0;
    }
    messages as f64 * 1000.0 / elapsed_ns as f64
}

/// Best throughput over any window of `window` consecutive completion marks.
/// `marks` are (elapsed ns, bytes completed so far), in time order.
pub fn peak_gbps(marks: &[(u64, u64)], window: usize) -> Option<f64> {
    if marks.len() < 2 {
        return None;
    }
    let window = window.clamp(1, marks.len() - 1);
    let mut best: f64 = 0.0;
    for i in window..marks.len() {
        let (t1, b1) = marks[i];
        let (t0, b0) = marks[i - window];
        if t1 > t0 {
            best = best.max((b1 - b0) as f64 * 8.0 / (t1 - t0) as f64);
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let samples: Vec<u64> = (1..=1000).map(|i| i * 1000).collect(); // 1..1000 us
        let s = latency(&samples, false).unwrap();
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 1000.0);
        assert!((s.p50 - 500.0).abs() < 1.0, "{}", s.p50);
        assert!((s.p99 - 990.0).abs() < 1.5, "{}", s.p99);
        assert!((s.mean - 500.5).abs() < 1.0);
        let half = latency(&samples, true).unwrap();
        assert_eq!(half.max, 500.0);
        assert!(latency(&[], false).is_none());
    }

    #[test]
    fn bandwidth_units() {
        // 1 GB in 1 s = 8 Gb/s.
        assert_eq!(gbps(1_000_000_000, 1_000_000_000), 8.0);
        assert_eq!(gbps(1, 0), 0.0);
        assert_eq!(mpps(5_000_000, 1_000_000_000), 5.0);
    }

    #[test]
    fn peak_finds_the_fast_window() {
        let marks = vec![(0, 0), (1000, 1000), (2000, 3000), (3000, 4000)];
        assert_eq!(peak_gbps(&marks, 1), Some(16.0));
        assert_eq!(peak_gbps(&marks[..1], 1), None);
    }
}
