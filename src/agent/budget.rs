//! Registered memory, counted before it is registered: every session of one `fabcheck serve`
//! draws from one budget, so a local client cannot pin the node's memory by opening many
//! sessions with the largest tests (issue #27 item 7).

use std::sync::{Arc, Mutex};

/// The caps, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// All sessions together.
    pub total: u64,
    /// One session (one controller).
    pub per_session: u64,
}

/// Default for all sessions together: 256 MiB fits a 1 GiB guest with room to spare, and is two
/// sessions' worth of [`DEFAULT_PER_SESSION`].
pub const DEFAULT_TOTAL: u64 = 256 << 20;
/// Default for one session: 8 rails × 1 QP (the default) × 8 MiB (the largest size of a
/// default sweep) × 2 (a test registers a receive and a send half).
pub const DEFAULT_PER_SESSION: u64 = 8 * 8 * (1 << 20) * 2;

impl Limits {
    /// `--max-registered TOTAL`: one session may take at most half of it, so one controller
    /// never shuts out every other.
    pub fn from_total(total: u64) -> Limits {
        Limits { total, per_session: total / 2 }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::from_total(DEFAULT_TOTAL)
    }
}

/// Why a test's buffers were not registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The one test is larger than one session may register.
    PerSession { want: u64, limit: u64 },
    /// The serve's other sessions hold too much already.
    Total { want: u64, held: u64, limit: u64 },
}

impl Refusal {
    pub fn cause(&self) -> String {
        match *self {
            Refusal::PerSession { want, limit } => format!(
                "serve refused to register {} for this test: one session may register at most {} (serve --max-registered)",
                mib(want),
                mib(limit)
            ),
            Refusal::Total { want, held, limit } => format!(
                "serve refused to register {} for this test: its sessions hold {} of the {} it may register (serve --max-registered)",
                mib(want),
                mib(held),
                mib(limit)
            ),
        }
    }

    pub fn remedy(&self) -> &'static str {
        match self {
            Refusal::PerSession { .. } => "test a smaller --size, or restart serve with a larger --max-registered",
            Refusal::Total { .. } => "wait for the other controllers of this serve to finish, or restart serve with a larger --max-registered",
        }
    }
}

fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The bytes one test registers: `perf::session::Session` registers one region of two halves
/// (receive, send), whatever the number of QPs; each half is `perf::latency_probe::region_half`
/// (the message size, or lat_under_load's 64 KiB load messages where larger).
pub fn test_bytes(half: u64) -> u64 {
    half * 2
}

/// The budget every session of one serve shares. Pure accounting: reservations are made
/// before `Session::open` registers anything and released when the session is dropped.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    held: Mutex<u64>,
}

impl Budget {
    pub fn new(limits: Limits) -> Arc<Budget> {
        Arc::new(Budget { limits, held: Mutex::new(0) })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Bytes held by every session now.
    pub fn held(&self) -> u64 {
        *self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `want` bytes for a session that already holds `session_held`.
    pub fn reserve(self: &Arc<Self>, want: u64, session_held: u64) -> Result<Reservation, Refusal> {
        if session_held.saturating_add(want) > self.limits.per_session {
            return Err(Refusal::PerSession { want, limit: self.limits.per_session });
        }
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.saturating_add(want) > self.limits.total {
            return Err(Refusal::Total { want, held: *held, limit: self.limits.total });
        }
        *held += want;
        Ok(Reservation { budget: Arc::clone(self), bytes: want })
    }
}

/// Bytes taken from a [`Budget`], given back on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut held = self.budget.held.lock().unwrap_or_else(|p| p.into_inner());
        *held = held.saturating_sub(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_fits_a_small_guest_and_eight_rails() {
        let l = Limits::default();
        assert!(l.total <= 1 << 30 && l.total * 4 <= 1 << 30, "leaves most of a 1 GiB guest");
        assert!(l.per_session >= 8 * test_bytes(8 << 20), "8 rails of the largest default size");
    }

    #[test]
    fn five_sessions_of_the_largest_test_cannot_pin_640_mb() {
        // Regression (issue #27 item 7): 5 connections × 128 MiB pinned 640 MB of a 960 MB guest.
        let budget = Budget::new(Limits::default());
        let largest = test_bytes(64 << 20);
        let held: Vec<_> = (0..5).filter_map(|_| budget.reserve(largest, 0).ok()).collect();
        assert_eq!(held.len(), 2);
        assert_eq!(budget.held(), 256 << 20);
        let refusal = budget.reserve(largest, 0).unwrap_err();
        assert_eq!(refusal, Refusal::Total { want: 128 << 20, held: 256 << 20, limit: 256 << 20 });
        assert!(refusal.cause().contains("hold 256 MiB of the 256 MiB"), "{}", refusal.cause());
        drop(held);
        assert_eq!(budget.held(), 0, "released with the sessions");
        assert!(budget.reserve(largest, 0).is_ok());
    }

    #[test]
    fn one_session_is_capped_too() {
        let budget = Budget::new(Limits::from_total(64 << 20));
        assert_eq!(budget.limits().per_session, 32 << 20);
        let r = budget.reserve(test_bytes(20 << 20), 0).unwrap_err();
        assert!(matches!(r, Refusal::PerSession { limit, .. } if limit == 32 << 20), "{r:?}");
        assert!(r.cause().contains("one session may register at most 32 MiB"), "{}", r.cause());
        let first = budget.reserve(16 << 20, 0).unwrap();
        assert!(budget.reserve(20 << 20, first.bytes()).is_err(), "what the session holds counts");
    }
}
