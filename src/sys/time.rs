//! Time as fabcheck uses it: deadlines from durations that came from outside (flags, the wire),
//! never an overflow panic; and the one RFC 3339 date of a document's stamp.

use std::time::{Duration, Instant};

/// The longest wait fabcheck ever arms: a limit beyond it is as good as no limit, and `Instant`
/// arithmetic stays far from overflow.
pub const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// `now + limit`, with `limit` capped at [`FOREVER`].
pub fn deadline(now: Instant, limit: Duration) -> Instant {
    now.checked_add(limit.min(FOREVER)).unwrap_or(now + FOREVER)
}

/// Unix seconds as RFC 3339 UTC (`2026-11-30T14:05:00Z`): civil-from-days (Howard Hinnant's
/// algorithm), so no date crate is needed for one timestamp.
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
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

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_050_500), "2026-11-30T14:55:00Z");
    }
}
