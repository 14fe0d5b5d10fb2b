//! When a hello may be judged (issue #27 item 6, issue #46 item 2): wrong tokens paced per
//! source network, and every judgement under one cap, as a wait before the hello is judged.
//!
//! A source is the peer's /24 (IPv4) or /64 (IPv6): one host, or one subnet an attacker
//! can take addresses from (127.0.0.0/8 on loopback, a /64 on any IPv6 link), is one source.
//! After [`FREE`] wrong tokens from a source, its hellos are judged one per [`PACE`], in the
//! order they arrived; and all hellos together are judged at most [`GLOBAL_BURST`] at once and
//! [`GLOBAL_PER_SEC`] a second. Nothing is refused for pacing: a hello waits for its turn
//! (its own connection waits), so a controller that shares a guesser's network is judged after
//! that wait, never locked out. A right token gives its turn back, so controllers that know
//! the token never use the cap up. Pure: the caller passes the time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Wrong tokens a source may send before it is paced (a typo, a stale file).
pub const FREE: u32 = 5;
/// Once paced, one judged hello per this from that source.
pub const PACE: Duration = Duration::from_secs(1);
/// Hellos judged at once, all sources together (16 controllers connecting at once never wait).
pub const GLOBAL_BURST: u32 = 16;
/// Hellos judged a second beyond the burst, all sources together.
pub const GLOBAL_PER_SEC: u32 = 16;
/// Sources remembered; above it the longest quiet ones are forgotten, so a flood of
/// addresses cannot grow memory without bound.
const MAX_SOURCES: usize = 4096;
/// A source quiet this long starts afresh.
const FORGET: Duration = Duration::from_secs(600);
/// Sources that presented the right token, remembered (the oldest forgotten beyond).
pub const MAX_TRUSTED: usize = 256;
/// How long a source that presented the right token stays trusted.
pub const TRUST_FOR: Duration = Duration::from_secs(24 * 3600);

/// The network a peer is counted in: its /24, or its /64 (an IPv4-mapped IPv6 address is IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    V4([u8; 3]),
    V6([u16; 4]),
}

impl Source {
    pub fn of(ip: IpAddr) -> Source {
        let v4 = match ip {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(v6) => v6.to_ipv4_mapped(),
        };
        match (v4, ip) {
            (Some(v4), _) => {
                let o = v4.octets();
                Source::V4([o[0], o[1], o[2]])
            }
            (None, IpAddr::V6(v6)) => {
                let s = v6.segments();
                Source::V6([s[0], s[1], s[2], s[3]])
            }
            (None, IpAddr::V4(_)) => unreachable!("an IPv4 address is IPv4"),
        }
    }
}

impl Source {
    /// The wider network an IPv6 source is counted in as well: its /48 (one site's, which may
    /// hand out a fresh /64 per guess). `None` for IPv4, whose /24 is the widest counted.
    pub fn wide(&self) -> Option<[u16; 3]> {
        match self {
            Source::V4(_) => None,
            Source::V6([a, b, c, _]) => Some([*a, *b, *c]),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::V4([a, b, c]) => write!(f, "{a}.{b}.{c}.0/24"),
            Source::V6([a, b, c, d]) => write!(f, "{}/64", std::net::Ipv6Addr::new(*a, *b, *c, *d, 0, 0, 0, 0)),
        }
    }
}

/// A hello's turn: when it may be judged, and what it took to give back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    pub source: Source,
    /// Judge it no sooner than this.
    pub at: Instant,
    /// It took a paced turn of its source.
    paced: bool,
}

/// One rate: no more than `burst` at once and one per `interval` beyond (GCRA: the theoretical
/// time the next one is due).
#[derive(Debug, Clone, Copy)]
struct Rate {
    due: Option<Instant>,
}

impl Rate {
    /// The earliest time from `now` one more fits, and takes it.
    fn take(&mut self, now: Instant, interval: Duration, burst: u32) -> Instant {
        let tolerance = interval * burst.saturating_sub(1);
        let due = self.due.unwrap_or(now);
        let at = now.max(due.checked_sub(tolerance).unwrap_or(now));
        self.due = Some(due.max(at) + interval);
        at
    }

    /// Gives back one taken (a right token is not a guess).
    fn give_back(&mut self, interval: Duration) {
        self.due = self.due.and_then(|d| d.checked_sub(interval));
    }
}

#[derive(Debug, Clone)]
struct Record {
    /// Wrong tokens in a row.
    failures: u32,
    /// Its paced turns.
    rate: Rate,
    last: Instant,
}

#[derive(Debug, Default)]
pub struct Guesses {
    sources: HashMap<Source, Record>,
    global: Option<Rate>,
    /// Sources that presented the right token, and when they last did (issue #58): their
    /// hellos are judged outside the cap all sources share, so guessers from many networks
    /// cannot keep a controller that was served before waiting.
    trusted: HashMap<Source, Instant>,
}

fn global_interval() -> Duration {
    Duration::from_secs(1) / GLOBAL_PER_SEC
}

impl Guesses {
    /// The turn of a hello from `ip` that arrived (whole) at `now`. Turns are handed out in
    /// order: a source that is paced waits behind its own earlier hellos, and every hello
    /// behind the cap's.
    pub fn turn(&mut self, ip: IpAddr, now: Instant) -> Turn {
        let source = Source::of(ip);
        let (mut at, mut paced) = (now, false);
        if let Some(r) = self.sources.get_mut(&source) {
            if now.saturating_duration_since(r.last) >= FORGET {
                self.sources.remove(&source);
            } else if r.failures >= FREE {
                at = r.rate.take(now, PACE, 1);
                paced = true;
            }
        }
        if self.trusted(source, now) {
            // A source that presented the right token before is judged outside the shared cap
            // (its own wrong tokens still pace it, as any source's).
            return Turn { source, at, paced };
        }
        let global = self.global.get_or_insert(Rate { due: None });
        // The cap is taken at the earliest it allows, even when the source's turn is later:
        // a paced source cannot hold the others up.
        let cap = global.take(now, global_interval(), GLOBAL_BURST);
        at = at.max(cap);
        Turn { source, at, paced }
    }

    /// Whether `source` presented the right token within [`TRUST_FOR`] of `now`.
    pub fn trusted(&self, source: Source, now: Instant) -> bool {
        self.trusted.get(&source).is_some_and(|&at| now.saturating_duration_since(at) < TRUST_FOR)
    }

    /// `source` presented the right token at `now`.
    pub fn trust(&mut self, source: Source, now: Instant) {
        if self.trusted.len() >= MAX_TRUSTED && !self.trusted.contains_key(&source) {
            if let Some(oldest) = self.trusted.iter().min_by_key(|(_, at)| **at).map(|(s, _)| *s) {
                self.trusted.remove(&oldest);
            }
        }
        self.trusted.insert(source, now);
    }

    /// The hello of `turn` had the right token: its turn is given back and its source starts
    /// afresh.
    pub fn right(&mut self, turn: &Turn) {
        if let Some(global) = &mut self.global {
            if !self.trusted.contains_key(&turn.source) {
                global.give_back(global_interval());
            }
        }
        self.sources.remove(&turn.source);
        self.trust(turn.source, turn.at);
    }

    /// The hello of `turn` had a wrong token, judged at `now`: the source's wrong tokens in a
    /// row, and whether it is now paced.
    pub fn wrong(&mut self, turn: &Turn, now: Instant) -> (u32, bool) {
        if self.sources.len() >= MAX_SOURCES && !self.sources.contains_key(&turn.source) {
            self.forget_quietest();
        }
        let r = self.sources.entry(turn.source).or_insert(Record { failures: 0, rate: Rate { due: None }, last: now });
        r.failures = r.failures.saturating_add(1);
        r.last = now;
        if r.failures == FREE && !turn.paced {
            // Paced from now on: the next turn is a PACE away.
            r.rate.due = Some(now + PACE);
        }
        (r.failures, r.failures >= FREE)
    }

    fn forget_quietest(&mut self) {
        if let Some(s) = self.sources.iter().min_by_key(|(_, r)| r.last).map(|(s, _)| *s) {
            self.sources.remove(&s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// Judges `n` wrong hellos from `from` (cycled), each arriving at `arrive(k)`; the times
    /// they were judged at.
    fn guess(g: &mut Guesses, from: &[IpAddr], n: usize, arrive: impl Fn(usize) -> Instant) -> Vec<Instant> {
        (0..n)
            .map(|k| {
                let t = g.turn(from[k % from.len()], arrive(k));
                g.wrong(&t, t.at);
                t.at
            })
            .collect()
    }

    #[test]
    fn sources_are_slash_24_and_slash_64() {
        assert_eq!(Source::of(ip("192.0.2.7")), Source::of(ip("192.0.2.200")));
        assert_ne!(Source::of(ip("192.0.2.7")), Source::of(ip("192.0.3.7")));
        assert_eq!(Source::of(ip("::ffff:192.0.2.9")), Source::of(ip("192.0.2.7")), "IPv4-mapped is IPv4");
        assert_eq!(Source::of(ip("2001:db8:1:2::1")), Source::of(ip("2001:db8:1:2:ffff:1:2:3")));
        assert_ne!(Source::of(ip("2001:db8:1:2::1")), Source::of(ip("2001:db8:1:3::1")));
        assert_eq!(Source::of(ip("192.0.2.7")).to_string(), "192.0.2.0/24");
        assert_eq!(Source::of(ip("2001:db8:1:2::1")).to_string(), "2001:db8:1:2::/64");
    }

    #[test]
    fn after_five_wrong_tokens_a_source_gets_one_turn_a_second_in_order() {
        let t0 = Instant::now();
        let mut g = Guesses::default();
        let me = [ip("192.0.2.7")];
        // 40 hellos as fast as they come (one every 200 µs): 5 at once, then one a second.
        let at = guess(&mut g, &me, 40, |k| t0 + Duration::from_micros(200 * k as u64));
        assert!(at[..FREE as usize].iter().all(|&a| a - t0 < Duration::from_millis(2)), "{at:?}");
        for w in at[FREE as usize..].windows(2) {
            assert_eq!(w[1] - w[0], PACE, "one a second, in order");
        }
        assert!(at[39] - t0 >= PACE * 35);
        // Another address of the same /24 waits its turn behind them; another /24 does not.
        assert!(g.turn(ip("192.0.2.8"), t0 + Duration::from_secs(1)).at > at[39]);
        let other = g.turn(ip("192.0.3.8"), t0 + Duration::from_secs(100));
        assert_eq!(other.at, t0 + Duration::from_secs(100));
    }

    #[test]
    fn a_right_token_behind_a_guesser_is_judged_after_the_wait_and_clears_the_source() {
        let t0 = Instant::now();
        let mut g = Guesses::default();
        let shared = [ip("10.0.0.5")];
        let at = guess(&mut g, &shared, 8, |_| t0);
        // The controller on the same address: judged after the guesser's turns, not refused.
        let controller = g.turn(ip("10.0.0.5"), t0);
        assert_eq!(controller.at, *at.last().unwrap() + PACE);
        g.right(&controller);
        // Its source starts afresh: the next hello is judged at once.
        let next = g.turn(ip("10.0.0.5"), controller.at);
        assert_eq!(next.at, controller.at);
    }

    #[test]
    fn all_sources_together_are_capped() {
        // Issue #46 item 2: 600 guesses from rotating /24s were judged in 0.8 s. Now whatever
        // the sources, by time t at most GLOBAL_BURST + GLOBAL_PER_SEC * t are judged.
        let t0 = Instant::now();
        let mut g = Guesses::default();
        let sources: Vec<IpAddr> = (0..600u32).map(|k| IpAddr::from([127, (k / 256) as u8, (k % 256) as u8, 1])).collect();
        let at = guess(&mut g, &sources, 600, |k| t0 + Duration::from_micros(1300 * k as u64));
        for (i, a) in at.iter().enumerate() {
            let allowed = f64::from(GLOBAL_BURST) + f64::from(GLOBAL_PER_SEC) * (*a - t0).as_secs_f64() + 1e-6;
            assert!((i + 1) as f64 <= allowed, "{} judged by {:?}", i + 1, *a - t0);
        }
        let in_first_800_ms = at.iter().filter(|a| **a - t0 <= Duration::from_millis(800)).count();
        assert!(in_first_800_ms <= 29, "{in_first_800_ms} judged in 0.8 s");
        // Right tokens give their turn back: controllers never wait for each other.
        let mut g = Guesses::default();
        for (k, &source) in sources.iter().enumerate().take(100) {
            let t = g.turn(source, t0);
            assert_eq!(t.at, t0, "{k}");
            g.right(&t);
        }
    }

    #[test]
    fn a_paced_source_does_not_hold_up_the_others() {
        let t0 = Instant::now();
        let mut g = Guesses::default();
        let guesser = [ip("192.0.2.7")];
        let at = guess(&mut g, &guesser, 12, |_| t0);
        assert!(*at.last().unwrap() - t0 >= Duration::from_secs(7));
        // The cap had room all along: another source is judged at once.
        assert_eq!(g.turn(ip("198.51.100.1"), t0 + Duration::from_secs(2)).at, t0 + Duration::from_secs(2));
    }

    #[test]
    fn memory_is_bounded_and_quiet_sources_are_forgotten() {
        let t0 = Instant::now();
        let mut g = Guesses::default();
        for k in 0..(MAX_SOURCES as u32 + 100) {
            let t = g.turn(IpAddr::from((k << 8).to_be_bytes()), t0);
            g.wrong(&t, t0 + Duration::from_millis(u64::from(k)));
        }
        assert_eq!(g.sources.len(), MAX_SOURCES);
        let mut g = Guesses::default();
        let me = [ip("192.0.2.7")];
        guess(&mut g, &me, 6, |_| t0);
        let later = t0 + FORGET + Duration::from_secs(10);
        assert_eq!(g.turn(me[0], later).at, later, "forgotten after a quiet spell");
    }
}
