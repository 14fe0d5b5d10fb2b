//! Connections that have said nothing yet (issue #46 item 2): the accept loop holds each as a
//! descriptor, with no thread and no place, until it speaks (then it asks `admission` for a
//! place), reaches its hello deadline (then it is told so), or is the oldest when the lobby is
//! full (then it is closed). Idle sockets that reconnect as soon as they are dropped therefore
//! never take a place, and never push out a controller: a controller's hello follows its
//! connect, and a connection that has spoken is served before any silent one. Pure: the caller
//! polls the descriptors and passes the time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Silent connections held at once; beyond, the oldest is closed.
pub const LOBBY: usize = 512;

#[derive(Debug)]
pub struct Lobby<T> {
    waiting: VecDeque<(Instant, T)>,
    cap: usize,
}

impl<T> Default for Lobby<T> {
    fn default() -> Self {
        Lobby { waiting: VecDeque::new(), cap: LOBBY }
    }
}

impl<T> Lobby<T> {
    /// A connection accepted at `accepted`; the oldest, when it was made room for.
    pub fn push(&mut self, accepted: Instant, t: T) -> Option<T> {
        let dropped = if self.waiting.len() >= self.cap { self.waiting.pop_front().map(|(_, t)| t) } else { None };
        self.waiting.push_back((accepted, t));
        dropped
    }

    /// Those accepted `limit` or more before `now`, taken out (oldest first).
    pub fn expired(&mut self, now: Instant, limit: Duration) -> Vec<(Instant, T)> {
        let mut out = Vec::new();
        while self.waiting.front().is_some_and(|(at, _)| now.saturating_duration_since(*at) >= limit) {
            out.extend(self.waiting.pop_front());
        }
        out
    }

    /// When the oldest reaches `limit`, if any waits.
    pub fn next_expiry(&self, limit: Duration) -> Option<Instant> {
        self.waiting.front().map(|(at, _)| crate::sys::time::deadline(*at, limit))
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.waiting.iter().map(|(_, t)| t)
    }

    /// Takes out those `ready` says (by position, in [`Lobby::iter`]'s order).
    pub fn take(&mut self, ready: &[bool]) -> Vec<(Instant, T)> {
        let mut kept = VecDeque::with_capacity(self.waiting.len());
        let mut taken = Vec::new();
        for (i, entry) in std::mem::take(&mut self.waiting).into_iter().enumerate() {
            if ready.get(i).copied().unwrap_or(false) {
                taken.push(entry);
            } else {
                kept.push_back(entry);
            }
        }
        self.waiting = kept;
        taken
    }

    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_makes_room_and_the_late_are_taken_out_in_order() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut lobby = Lobby { waiting: VecDeque::new(), cap: 3 };
        for k in 0..3u32 {
            assert_eq!(lobby.push(at(u64::from(k)), k), None);
        }
        assert_eq!(lobby.push(at(10), 3), Some(0), "full: the oldest goes");
        assert_eq!(lobby.next_expiry(Duration::from_secs(5)), Some(at(5001)));
        let late: Vec<u32> = lobby.expired(at(5002), Duration::from_secs(5)).into_iter().map(|(_, k)| k).collect();
        assert_eq!(late, [1, 2]);
        assert_eq!(lobby.iter().copied().collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn those_that_spoke_are_taken_and_the_rest_stay() {
        let t0 = Instant::now();
        let mut lobby = Lobby::default();
        for k in 0..5u32 {
            lobby.push(t0, k);
        }
        let spoke: Vec<u32> = lobby.take(&[false, true, false, true]).into_iter().map(|(_, k)| k).collect();
        assert_eq!(spoke, [1, 3]);
        assert_eq!(lobby.iter().copied().collect::<Vec<_>>(), [0, 2, 4]);
        assert_eq!(lobby.len(), 3);
        assert!(!lobby.is_empty());
    }
}
