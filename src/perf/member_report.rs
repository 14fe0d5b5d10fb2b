//! `collective --report-every` on the agent (0.5): the member's step loop on its own thread
//! while this one reads the loop's bytes sent ([`Live`]) every interval and hands the
//! interval's figures on (the agent writes them as `progress` replies). The loop only stores
//! its running byte count (one relaxed store per poll that reaped a send); the reading,
//! formatting and sending are here. As `report_every` does for a pair's test.

use super::live::{self, Live};
use crate::model::Interval;
use crossbeam::channel::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Runs `work` on a scoped thread and, until it returns, calls `each` with the figures of every
/// `every` (bytes over the interval as Gb/s; the last, partial interval is not said). Returns
/// what `work` returned.
pub fn report_while<R: Send>(work: impl FnOnce() -> R + Send, live: &Live, every: Duration, mut each: impl FnMut(Interval)) -> R {
    let (done_tx, done_rx) = channel::bounded::<()>(1);
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let result = work();
            let _ = done_tx.send(());
            result
        });
        let start = Instant::now();
        let (mut last, mut last_at) = (live.snapshot(), start);
        let mut next = start + every;
        loop {
            match done_rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            let snap = live.snapshot();
            let t_ms = now.duration_since(start).as_millis() as u64;
            let elapsed_ns = now.duration_since(last_at).as_nanos() as u64;
            let mut figures = live::interval(&last, &snap, t_ms, elapsed_ns, 1.0, false);
            // Bytes only: a member's steps are not round trips.
            figures.lat_us = None;
            figures.gbps = Some(figures.gbps.unwrap_or(0.0));
            each(figures);
            (last, last_at) = (snap, now);
            next = (next + every).max(now);
        }
        worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_intervals_give_about_n_figures_each_of_the_bytes_in_it() {
        let live = Live::default();
        live.arm(false);
        let every = Duration::from_millis(40);
        let mut seen = Vec::new();
        let answer = report_while(
            || {
                // About 8 intervals: 1 MB every 10 ms.
                for i in 1..=32u64 {
                    live.set_bytes(i * 1_000_000);
                    std::thread::sleep(Duration::from_millis(10));
                }
                7
            },
            &live,
            every,
            |i| seen.push(i),
        );
        assert_eq!(answer, 7);
        // Generous: a loaded machine sleeps longer, never shorter, so 8 intervals or more.
        assert!((5..=40).contains(&seen.len()), "{} intervals: {seen:?}", seen.len());
        assert!(seen.windows(2).all(|w| w[0].t_ms < w[1].t_ms), "{seen:?}");
        assert!(seen.iter().all(|i| i.gbps.is_some_and(|g| g >= 0.0) && i.lat_us.is_none()), "{seen:?}");
        assert!(seen.iter().any(|i| i.gbps.is_some_and(|g| g > 0.0)), "{seen:?}");
    }
}
