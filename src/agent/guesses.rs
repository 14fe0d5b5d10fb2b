//! Wrong tokens, counted per source address (issue #27 item 6): after [`FREE`] wrong tokens
//! from one address, it gets at most one guess per [`PACE`]; a right token clears its record.
//! Pure: the caller passes the time, so the limit is tested by counting, without sleeping.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Wrong tokens an address may send before it is slowed (a typo, a stale file).
pub const FREE: u32 = 5;
/// Once slowed, one guess per this.
pub const PACE: Duration = Duration::from_secs(1);
/// Addresses remembered; above it the longest quiet ones are forgotten, so a spoofing flood
/// cannot grow memory without bound.
const MAX_SOURCES: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Record {
    failures: u32,
    /// No guess is taken from this address before this.
    next: Instant,
    last: Instant,
}

#[derive(Debug, Default)]
pub struct Guesses {
    sources: HashMap<IpAddr, Record>,
}

impl Guesses {
    /// Whether a hello from `ip` may be judged now; `Err` says how long until it may. A slowed
    /// address that is admitted uses up its guess for the next [`PACE`] at once, so parallel
    /// connections cannot guess faster.
    pub fn admit(&mut self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let Some(r) = self.sources.get_mut(&ip) else { return Ok(()) };
        if r.failures < FREE {
            return Ok(());
        }
        if now < r.next {
            return Err(r.next - now);
        }
        r.next = now + PACE;
        r.last = now;
        Ok(())
    }

    /// A wrong token from `ip`: its count so far.
    pub fn failed(&mut self, ip: IpAddr, now: Instant) -> u32 {
        if self.sources.len() >= MAX_SOURCES && !self.sources.contains_key(&ip) {
            self.forget_quietest();
        }
        let r = self.sources.entry(ip).or_insert(Record { failures: 0, next: now, last: now });
        r.failures = r.failures.saturating_add(1);
        r.last = now;
        if r.failures >= FREE {
            r.next = r.next.max(now + PACE);
        }
        r.failures
    }

    /// A right token: the address starts afresh.
    pub fn succeeded(&mut self, ip: IpAddr) {
        self.sources.remove(&ip);
    }

    fn forget_quietest(&mut self) {
        if let Some(ip) = self.sources.iter().min_by_key(|(_, r)| r.last).map(|(ip, _)| *ip) {
            self.sources.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_five_wrong_tokens_one_guess_a_second() {
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let t0 = Instant::now();
        let mut g = Guesses::default();
        // 5,000 attempts within one second of fake time: the first five and no more are judged.
        let mut judged = 0;
        for k in 0..5000u32 {
            let now = t0 + Duration::from_micros(u64::from(k) * 200);
            if g.admit(ip, now).is_ok() {
                judged += 1;
                g.failed(ip, now);
            }
        }
        assert_eq!(judged, FREE);
        assert_eq!(g.admit(other, t0), Ok(()), "another address is not slowed");
        // From then on, one a second: 10 s of attempts every millisecond -> about 10 guesses.
        let mut judged = 0;
        for ms in 0..10_000u64 {
            let now = t0 + Duration::from_secs(1) + Duration::from_millis(ms);
            if g.admit(ip, now).is_ok() {
                judged += 1;
                g.failed(ip, now);
            }
        }
        assert!((9..=11).contains(&judged), "{judged} guesses in 10 s");
        let wait = g.admit(ip, t0 + Duration::from_millis(10_999)).unwrap_err();
        assert!(wait <= PACE);
        g.succeeded(ip);
        assert_eq!(g.admit(ip, t0 + Duration::from_millis(11_000)), Ok(()));
    }

    #[test]
    fn parallel_connections_share_the_pace() {
        let ip: IpAddr = "::1".parse().unwrap();
        let t0 = Instant::now();
        let mut g = Guesses::default();
        for _ in 0..FREE {
            g.failed(ip, t0);
        }
        let later = t0 + Duration::from_secs(2);
        let admitted = (0..16).filter(|_| g.admit(ip, later).is_ok()).count();
        assert_eq!(admitted, 1);
    }

    #[test]
    fn memory_is_bounded() {
        let t0 = Instant::now();
        let mut g = Guesses::default();
        for k in 0..(MAX_SOURCES as u32 + 100) {
            g.failed(IpAddr::from(k.to_be_bytes()), t0 + Duration::from_millis(u64::from(k)));
        }
        assert_eq!(g.sources.len(), MAX_SOURCES);
    }
}
