//! Deadlines from durations that came from outside (flags, the wire): never an overflow panic.

use std::time::{Duration, Instant};

/// The longest wait fabcheck ever arms: a limit beyond it is as good as no limit, and `Instant`
/// arithmetic stays far from overflow.
pub const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// `now + limit`, with `limit` capped at [`FOREVER`].
pub fn deadline(now: Instant, limit: Duration) -> Instant {
    now.checked_add(limit.min(FOREVER)).unwrap_or(now + FOREVER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_limits_do_not_overflow() {
        let now = Instant::now();
        assert_eq!(deadline(now, Duration::MAX), now + FOREVER);
        assert_eq!(deadline(now, Duration::from_secs(1)), now + Duration::from_secs(1));
    }
}
