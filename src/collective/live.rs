//! `collective --report-every` on the controller (0.5): each `progress` reply a member sends
//! while it runs becomes one `fabcheck.progress.v1` record (`progress_record`), labelled with
//! the op (the record's `test`), the member that measured it (`HOST/DEV`) and its chunk size;
//! `gbps` is the member's send rate over the interval (every outbound hop), `t` seconds since
//! the command began, on the controller's clock.

use crate::model::Interval;
use crate::progress_record::{Record, Recorder};
use std::time::Instant;

/// The records of a run: where they go, since when, how often members report, and the op.
pub struct Live {
    recorder: Recorder,
    start: Instant,
    pub every_ms: u64,
    test: String,
}

impl Live {
    pub fn new(recorder: Recorder, start: Instant, every_ms: u64, test: &str) -> Live {
        Live { recorder, start, every_ms, test: test.to_string() }
    }

    /// One interval of `member` (its label) with chunks of `chunk` bytes, received at `now`.
    pub fn record(&mut self, member: &str, chunk: u32, interval: &Interval, now: Instant) {
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        let record = Record {
            endpoint: Some(crate::sanitise::one_line(member).into_owned()),
            size: Some(chunk),
            gbps: interval.gbps,
            lat_us: None,
            ..Record::new(t, &self.test)
        };
        self.recorder.record(&record);
    }

    /// Records written so far.
    pub fn written(&self) -> usize {
        self.recorder.written
    }
}
