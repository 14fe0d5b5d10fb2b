//! What a long run says while it runs: `pair`'s tests (a sweep's sizes), `mesh`'s rounds.
//!
//! The drivers (`pair::run`, `mesh::run`) hand [`Event`]s to a [`Progress`] sink they are given;
//! they know nothing of terminals. `commands` chooses the sink: a line writer on stderr (one
//! status line rewritten on a terminal, plain lines elsewhere) or [`Silent`]. The words of each
//! event are its `Display`, here, so they are tested without a terminal. Progress never goes to
//! stdout: that holds the result (`--json` and the other formats stay one clean document).

use crate::model::TestKind;
use crate::units;
use std::fmt;
use std::time::Duration;

/// Where a run's progress goes.
pub trait Progress {
    fn event(&mut self, event: &Event<'_>);
    /// The run is over and its result is about to be printed (a status line is cleared).
    fn done(&mut self) {}
}

/// No progress at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn event(&mut self, _: &Event<'_>) {}
}

/// Collects each event's line (for tests, and for anything that wants the words).
impl Progress for Vec<String> {
    fn event(&mut self, event: &Event<'_>) {
        self.push(event.to_string());
    }
}

/// Which pass of a mesh a round belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    First,
    Retest,
    Zoom,
}

/// One direction's figure of a finished test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// `a->b`, `b->a`, `bidi`.
    pub direction: &'static str,
    pub bw_gbps: Option<f64>,
    /// p50, microseconds.
    pub lat_us: Option<f64>,
    pub failed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// `mesh`: the agents were reached (or not).
    Reached { reached: usize, total: usize },
    /// `mesh`: a round of pairs finished; `bad` counts the pairs of this pass that failed so
    /// far (on a retest: still failed).
    Round { stage: Stage, round: usize, rounds: usize, bad: usize },
    /// `pair`: a test at one size finished, in every direction it runs (`step` of `steps`:
    /// in a sweep, a step is a size).
    Test { step: usize, steps: usize, test: TestKind, size: u32, figures: &'a [Figure] },
    /// `check --soak`, `fabric --soak`: the window so far and the error counters that rose in
    /// it (`None`: not read until the window's end).
    Soak { elapsed: Duration, window: Duration, risen: Option<&'a [String]> },
}

impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Reached { reached, total } if reached == total => write!(f, "reached {total} agents"),
            Event::Reached { reached, total } => write!(f, "reached {reached}/{total} agents, {} unreachable", total - reached),
            Event::Round { stage, round, rounds, bad } => {
                let (stage, bad_word) = match stage {
                    Stage::First => ("round", "bad"),
                    Stage::Retest => ("retest round", "still bad"),
                    Stage::Zoom => ("zoom-in round", "bad"),
                };
                write!(f, "{stage} {round}/{rounds}, {bad} {bad_word} so far")
            }
            Event::Soak { elapsed, window, risen } => {
                write!(f, "soak window {} of {}, {} left", short(*elapsed), short(*window), short(window.saturating_sub(*elapsed)))?;
                match risen {
                    None => write!(f, "; counters are judged at its end"),
                    Some([]) => write!(f, "; nothing has risen so far"),
                    Some(list) if list.len() <= 3 => write!(f, "; risen so far: {}", list.join(", ")),
                    Some(list) => write!(f, "; risen so far: {} (+{} more)", list[..3].join(", "), list.len() - 3),
                }
            }
            Event::Test { step, steps, test, size, figures } => {
                write!(f, "[{step}/{steps}] {} {} B:", test.name(), size)?;
                let one = figures.len() == 1;
                for (i, x) in figures.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    // A lone a->b needs no direction.
                    let dir = if one && x.direction == "a->b" { String::new() } else { format!("{} ", x.direction) };
                    let value = if x.failed {
                        "FAILED".to_string()
                    } else if let Some(bw) = x.bw_gbps {
                        format!("{} Gb/s", units::measured_gbps(bw))
                    } else if let Some(lat) = x.lat_us {
                        format!("p50 {} us", units::three(lat))
                    } else {
                        "-".to_string()
                    };
                    write!(f, "{sep}{dir}{value}")?;
                }
                Ok(())
            }
        }
    }
}

/// The pace of a long run for a person watching the terminal's status line: the time since the
/// run began and, from the share of the current pass done, about how long it has left (mesh's
/// rounds, pair's steps). The time is handed in with each event, so this is tested without a
/// clock. The plain `--progress` lines keep their 0.2 words (scripts read them); only the status
/// line says this.
#[derive(Debug, Default)]
pub struct Pace {
    /// The pass under way (`None`: pair's steps) and when it began.
    pass: Option<(Option<Stage>, Duration)>,
    /// When the previous event came: a new pass began then.
    last: Duration,
}

impl Pace {
    /// `elapsed` is the time from the start of the run to `event`.
    pub fn note(&mut self, event: &Event<'_>, elapsed: Duration) -> String {
        let progress = match event {
            Event::Round { stage, round, rounds, .. } => Some((Some(*stage), *round, *rounds)),
            Event::Test { step, steps, .. } => Some((None, *step, *steps)),
            Event::Reached { .. } | Event::Soak { .. } => None,
        };
        let mut said = format!("{} elapsed", short(elapsed));
        if let Some((pass, done, total)) = progress {
            let began = match self.pass {
                Some((p, began)) if p == pass && done > 1 => began,
                _ => self.last,
            };
            self.pass = Some((pass, began));
            if done > 0 && done < total {
                let per = elapsed.saturating_sub(began).as_secs_f64() / done as f64;
                let left = Duration::from_secs_f64(per * (total - done) as f64);
                said.push_str(&format!(", about {} left", short(left)));
            }
        }
        self.last = elapsed;
        said
    }
}

/// A duration at the precision a person watching wants: `42s`, `3m05s`, `1h02m`.
pub fn short(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #35 item 10: elapsed time and an estimate of what is left, from an injected clock.
    #[test]
    fn the_pace_of_rounds_and_steps() {
        let secs = Duration::from_secs;
        let mut pace = Pace::default();
        assert_eq!(pace.note(&Event::Reached { reached: 8, total: 8 }, secs(4)), "4s elapsed");
        let round = |round| Event::Round { stage: Stage::First, round, rounds: 10, bad: 0 };
        // The pass began when the agents were reached (4 s): 10 s a round.
        assert_eq!(pace.note(&round(1), secs(14)), "14s elapsed, about 1m30s left");
        assert_eq!(pace.note(&round(5), secs(54)), "54s elapsed, about 50s left");
        assert_eq!(pace.note(&round(10), secs(104)), "1m44s elapsed", "nothing left to estimate");
        // A retest pass is estimated from its own rounds, not the first pass's.
        let retest = |round| Event::Round { stage: Stage::Retest, round, rounds: 3, bad: 1 };
        assert_eq!(pace.note(&retest(1), secs(106)), "1m46s elapsed, about 4s left");
        let mut pace = Pace::default();
        let test = |step| Event::Test { step, steps: 23, test: TestKind::WriteBw, size: 2, figures: &[] };
        assert_eq!(pace.note(&test(1), secs(3)), "3s elapsed, about 1m06s left");
        assert_eq!(pace.note(&test(23), secs(3700)), "1h01m elapsed");
        assert_eq!(short(Duration::from_millis(400)), "0s");
    }

    #[test]
    fn the_words_of_each_event() {
        let mut lines: Vec<String> = Vec::new();
        lines.event(&Event::Round { stage: Stage::First, round: 37, rounds: 499, bad: 3 });
        lines.event(&Event::Round { stage: Stage::Retest, round: 1, rounds: 2, bad: 5 });
        lines.event(&Event::Reached { reached: 8, total: 8 });
        lines.event(&Event::Reached { reached: 7, total: 8 });
        let bw = |direction, gbps| Figure { direction, bw_gbps: Some(gbps), lat_us: None, failed: false };
        lines.event(&Event::Test { step: 1, steps: 1, test: TestKind::WriteBw, size: 65536, figures: &[bw("a->b", 23.14)] });
        let figures = [bw("a->b", 23.14), bw("b->a", 9.5), Figure { direction: "bidi", bw_gbps: None, lat_us: None, failed: true }];
        lines.event(&Event::Test { step: 3, steps: 23, test: TestKind::WriteBw, size: 8, figures: &figures });
        let lat = [Figure { direction: "a->b", bw_gbps: None, lat_us: Some(1.0234), failed: false }];
        lines.event(&Event::Test { step: 2, steps: 4, test: TestKind::SendLat, size: 2, figures: &lat });
        assert_eq!(
            lines,
            [
                "round 37/499, 3 bad so far",
                "retest round 1/2, 5 still bad so far",
                "reached 8 agents",
                "reached 7/8 agents, 1 unreachable",
                "[1/1] write_bw 65536 B: 23.1 Gb/s",
                "[3/23] write_bw 8 B: a->b 23.1 Gb/s, b->a 9.500 Gb/s, bidi FAILED",
                "[2/4] send_lat 2 B: p50 1.023 us",
            ]
        );
        Silent.event(&Event::Reached { reached: 1, total: 1 });
    }
}
