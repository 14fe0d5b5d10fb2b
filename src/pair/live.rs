//! `pair --report-every`: each `progress` reply an agent sends while a test runs becomes one
//! `fabcheck.progress.v1` record (`progress_record`), labelled with the test, its direction
//! and size, and the endpoint that measured it; `t` is seconds since the pair began, on the
//! controller's clock (given, so tests need none).

use super::plan::PlannedTest;
use crate::error::Failure;
use crate::model::Interval;
use crate::progress_record::{LiveOutput, Record, Recorder};
use std::time::Instant;

/// The records of one pair run.
pub struct Live {
    recorder: Recorder,
    /// The endpoints' labels, side 0 = A.
    labels: [String; 2],
    start: Instant,
}

impl Live {
    /// `None` when `--report-every` was not given; the file that cannot be created is exit 2.
    pub fn open(out: Option<&LiveOutput>, labels: [String; 2]) -> Result<Option<Live>, Failure> {
        let Some(out) = out else { return Ok(None) };
        let recorder = Recorder::open(out).map_err(|why| Failure::new(why, "give --progress-json a path in a writable directory"))?;
        Ok(Some(Live::to(recorder, labels, Instant::now())))
    }

    /// Into a recorder the caller made (tests), from `start`.
    pub fn to(recorder: Recorder, labels: [String; 2], start: Instant) -> Live {
        Live { recorder, labels, start }
    }

    /// One interval of `test`, measured by `side`'s agent, received at `now`.
    pub fn record(&mut self, side: usize, test: &PlannedTest, interval: &Interval, now: Instant) {
        self.recorder.record(&record(&self.labels, side, test, interval, now.saturating_duration_since(self.start).as_secs_f64()));
    }

    pub fn written(&self) -> usize {
        self.recorder.written
    }
}

/// The record of one interval, `t` seconds into the run.
pub fn record(labels: &[String; 2], side: usize, test: &PlannedTest, interval: &Interval, t: f64) -> Record {
    Record {
        endpoint: labels.get(side).map(|l| crate::sanitise::one_line(l).into_owned()),
        direction: Some(test.direction.name()),
        size: Some(test.spec.size),
        gbps: interval.gbps,
        lat_us: interval.lat_us,
        ..Record::new(t, test.spec.test.name())
    }
}

/// `mesh --report-every`: one recorder for every pair of a run (shared by its conversations,
/// all on the controller's one thread).
pub type Shared = std::rc::Rc<std::cell::RefCell<Recorder>>;

/// A pair's sequence whose agents' figures go to a shared recorder (mesh's pairs).
pub struct Reporting {
    pub seq: super::sequence::PairSequence,
    live: Option<(Shared, [String; 2], Instant)>,
}

impl Reporting {
    /// `live`: the run's recorder and its start (`None`: no `--report-every`).
    pub fn new(seq: super::sequence::PairSequence, live: Option<(&Shared, Instant)>, labels: [String; 2]) -> Reporting {
        Reporting { seq, live: live.map(|(r, start)| (std::rc::Rc::clone(r), labels, start)) }
    }
}

use crate::control::drive::{Actions, Conversation};
use crate::control::protocol::Reply;
use crate::outcome::loss::Loss;

impl Conversation for Reporting {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        self.seq.start(now, act);
    }
    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        if let (Reply::Progress { interval }, Some((shared, labels, start)), Some(test)) = (&reply, self.live.as_ref(), self.seq.current()) {
            let t = now.saturating_duration_since(*start).as_secs_f64();
            shared.borrow_mut().record(&record(labels, side, test, interval, t));
        }
        self.seq.on_reply(side, reply, now, act);
    }
    fn on_lost(&mut self, side: usize, loss: Loss, now: Instant, act: &mut Actions) {
        self.seq.on_lost(side, loss, now, act);
    }
    fn on_deadline(&mut self, now: Instant, act: &mut Actions) {
        self.seq.on_deadline(now, act);
    }
    fn deadline(&self) -> Option<Instant> {
        self.seq.deadline()
    }
    fn is_done(&self) -> bool {
        self.seq.is_done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, IntervalLatency};
    use crate::pair::plan::{build, PlanInput};

    fn planned(tests: &str) -> PlannedTest {
        let input = PlanInput {
            tests: crate::model::TestKind::parse_list(tests).unwrap(),
            size: None,
            sweep: false,
            iters: None,
            duration_ms: Some(10_000),
            qps: 1,
            directions: Some(vec![Direction::AtoB]),
            stall_timeout_ms: 5000,
        };
        build(&input).unwrap().remove(0)
    }

    #[test]
    fn an_interval_is_labelled_with_its_test_and_the_side_that_measured_it() {
        let labels = ["nodeA/mlx5_0".to_string(), "nodeB/mlx5_0".to_string()];
        let r = record(&labels, 0, &planned("write_bw"), &Interval { t_ms: 1000, gbps: Some(97.1), lat_us: None }, 3.0);
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(
            (v["schema"].as_str(), v["test"].as_str(), v["direction"].as_str()),
            (Some("fabcheck.progress.v1"), Some("write_bw"), Some("a->b"))
        );
        assert_eq!(
            (v["endpoint"].as_str(), v["size"].as_u64(), v["gbps"].as_f64(), v["t"].as_f64()),
            (Some("nodeA/mlx5_0"), Some(65536), Some(97.1), Some(3.0))
        );
        let lat = IntervalLatency { p50: 1.9, p99: 2.4, max: 7.0, samples: 9000 };
        let r = record(&labels, 1, &planned("send_lat"), &Interval { t_ms: 1000, gbps: None, lat_us: Some(lat) }, 1.0);
        assert_eq!((r.test.as_str(), r.endpoint.as_deref(), r.lat_us), ("send_lat", Some("nodeB/mlx5_0"), Some(lat)));
    }
}
