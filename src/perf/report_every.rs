//! `--report-every`: runs a test with the measured loop on its own thread while this thread
//! reads the loop's [`super::live::Live`] every interval and hands the figures to `send` (the
//! agent writes them as `progress` replies). The loop itself only stores (see `live`); all
//! formatting, allocation and I/O are here. A new thread inherits the CPU the agent pinned
//! this one to, so the loop keeps its CPU; this thread sleeps between readings.

use super::live::{self, Calibration};
use super::session::Session;
use super::{PerfError, Signals};
use crate::model::{Interval, Role, RunResult};
use crossbeam::channel::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Runs this side's part of the test, as [`super::run`], telling `send` of each interval when
/// the spec asks (`report_every_ms`) and this side measures. A `send` that fails (the
/// controller is gone) aborts the test.
pub fn run(s: &mut Session, signals: &Signals, send: &mut dyn FnMut(Interval) -> std::io::Result<()>) -> Result<RunResult, PerfError> {
    let every = match s.spec.report_every_ms {
        Some(ms) if s.spec.role != Role::Passive => Duration::from_millis(ms),
        _ => {
            signals.live.arm(false);
            return super::run(s, signals);
        }
    };
    let halve = !s.spec.test.full_round_trip();
    signals.live.arm(s.spec.test.is_latency());
    let (done_tx, done_rx) = channel::bounded::<()>(1);
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let result = super::run(s, signals);
            let _ = done_tx.send(());
            result
        });
        let calibration = Calibration::start();
        let start = Instant::now();
        let (mut last, mut last_at) = (signals.live.snapshot(), start);
        let mut next = start + every;
        loop {
            match done_rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            let snap = signals.live.snapshot();
            let t_ms = now.duration_since(start).as_millis() as u64;
            let elapsed_ns = now.duration_since(last_at).as_nanos() as u64;
            let figures = live::interval(&last, &snap, t_ms, elapsed_ns, signals.live.ns_per_tick(&calibration), halve);
            if send(figures).is_err() {
                signals.request_abort();
            }
            (last, last_at) = (snap, now);
            next = (next + every).max(now);
        }
        worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
