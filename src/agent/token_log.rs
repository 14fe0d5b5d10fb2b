//! What serve says about wrong tokens on its stderr (issue #46 item 2): an operator must see
//! guessing, but 0.3 wrote a line per wrong token (606 lines for one attack, more from a
//! flood, filling the journal). Now the first [`SAID_PER_WINDOW`] wrong tokens of every
//! [`WINDOW`] are said one by one; the rest are counted and said in one summary line when
//! the window ends. Pure: the caller passes the time and prints what it is given.

use super::guesses::Source;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Wrong tokens said one by one per window.
pub const SAID_PER_WINDOW: u32 = 5;
/// How long a window is.
pub const WINDOW: Duration = Duration::from_secs(5);
/// Sources counted for a summary (the rest are counted in the total only).
const MAX_SOURCES: usize = 1024;

/// A wrong token, as the log says it.
#[derive(Debug, Clone, Copy)]
pub struct Wrong {
    pub ip: IpAddr,
    pub source: Source,
    /// Wrong tokens from its source in a row.
    pub in_a_row: u32,
    /// Its source is paced from now on.
    pub paced: bool,
}

#[derive(Debug, Default)]
pub struct TokenLog {
    window: Option<Instant>,
    said: u32,
    unsaid: u64,
    /// Unsaid wrong tokens per source, this window.
    sources: HashMap<Source, u64>,
}

impl TokenLog {
    /// The lines to write for a wrong token at `now` (a summary of the last window first, when
    /// it ended).
    pub fn wrong(&mut self, w: Wrong, now: Instant) -> Vec<String> {
        let mut lines: Vec<String> = self.tick(now).into_iter().collect();
        if self.window.is_none() {
            self.window = Some(now);
        }
        if self.said < SAID_PER_WINDOW {
            self.said += 1;
            let paced = if w.paced { format!("; {} is paced to one guess a second", w.source) } else { String::new() };
            lines.push(format!("fabcheck serve: wrong token from {} ({} in a row from {}{paced})", w.ip, w.in_a_row, w.source));
        } else {
            self.unsaid += 1;
            if self.sources.len() < MAX_SOURCES || self.sources.contains_key(&w.source) {
                *self.sources.entry(w.source).or_default() += 1;
            }
        }
        lines
    }

    /// The summary of a window that has ended by `now`, if it left anything unsaid (asked on
    /// every tick of the accept loop, so a summary comes without waiting for the next token).
    pub fn tick(&mut self, now: Instant) -> Option<String> {
        let start = self.window?;
        if now.saturating_duration_since(start) < WINDOW {
            return None;
        }
        let line = (self.unsaid > 0).then(|| {
            let (top, top_n) = self.sources.iter().max_by_key(|(s, n)| (**n, std::cmp::Reverse(**s))).map(|(s, n)| (*s, *n)).expect("counted");
            format!(
                "fabcheck serve: {} more wrong tokens in the last {} s from {} sources, not logged one by one (most from {top}: {top_n})",
                self.unsaid,
                WINDOW.as_secs(),
                self.sources.len()
            )
        });
        *self = TokenLog::default();
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrong(k: u8) -> Wrong {
        let ip = IpAddr::from([127, 0, k % 3, k]);
        Wrong { ip, source: Source::of(ip), in_a_row: 1, paced: false }
    }

    #[test]
    fn a_flood_is_five_lines_and_a_summary() {
        // Issue #46 item 2: 606 wrong tokens were 606 lines.
        let t0 = Instant::now();
        let mut log = TokenLog::default();
        let mut lines = Vec::new();
        for k in 0..200u8 {
            lines.extend(log.wrong(wrong(k), t0 + Duration::from_millis(u64::from(k))));
        }
        assert_eq!(lines.len(), SAID_PER_WINDOW as usize);
        assert_eq!(lines[0], "fabcheck serve: wrong token from 127.0.0.0 (1 in a row from 127.0.0.0/24)");
        assert_eq!(log.tick(t0 + Duration::from_secs(1)), None, "the window is not over");
        let summary = log.tick(t0 + WINDOW).expect("a summary");
        assert_eq!(
            summary,
            "fabcheck serve: 195 more wrong tokens in the last 5 s from 3 sources, not logged one by one (most from 127.0.0.0/24: 65)"
        );
        assert_eq!(log.tick(t0 + WINDOW * 3), None, "said once");
        // The next window says its first ones again.
        let next = log.wrong(Wrong { paced: true, in_a_row: 5, ..wrong(7) }, t0 + WINDOW * 4);
        assert_eq!(next, ["fabcheck serve: wrong token from 127.0.1.7 (5 in a row from 127.0.1.0/24; 127.0.1.0/24 is paced to one guess a second)"]);
    }

    #[test]
    fn a_quiet_window_needs_no_summary() {
        let t0 = Instant::now();
        let mut log = TokenLog::default();
        assert_eq!(log.wrong(wrong(1), t0).len(), 1);
        assert_eq!(log.tick(t0 + WINDOW), None);
    }
}
