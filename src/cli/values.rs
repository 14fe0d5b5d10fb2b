//! The values people type into flags, parsed as the tools they know write them: sizes as perftest
//! takes them (`64K`, `64KB`, `1MiB`: binary, 64K = 65536) and durations as humantime and
//! systemd write them (`500ms`, `5s`, `2m`, `1h30m`; a bare number is seconds). Every flag that
//! takes a duration takes every spelling, so `--timeout 5m` works where `--soak 5m` does.
//! Pure: clap calls these as value parsers, `commands/` calls [`duration`] for string flags.

use crate::model::Unparsed;
use std::time::Duration;

/// The longest duration any flag accepts: a bound, so `99999999h` is an error, not an overflow.
const MAX_SECONDS: f64 = 1e9;

/// perftest's -m: an InfiniBand MTU, 256..4096 bytes, a power of two (`2K` as a size is 2048).
pub fn parse_mtu(text: &str) -> Result<u32, Unparsed> {
    match parse_size(text)? {
        m @ (256 | 512 | 1024 | 2048 | 4096) => Ok(m),
        m => Err(format!("MTU {m}: give 256, 512, 1024, 2048 or 4096 (the IBTA MTUs)").into()),
    }
}

/// A size in bytes: a number, or with K, M or G (binary: 64K = 65536, 1M = 1048576), with or
/// without `B` or `iB` (`64KB`, `64KiB`), as perftest users write them.
pub fn parse_size(text: &str) -> Result<u32, Unparsed> {
    let bad = || format!("'{text}' is not a size (a number of bytes, or with K, M, G: 64K, 64KB, 1MiB)");
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => {
            let unit = t[i..].trim();
            (&t[..i], unit.strip_suffix(['B', 'b']).unwrap_or(unit))
        }
        None => (t, ""),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" | "KI" => 10,
        "M" | "MI" => 20,
        "G" | "GI" => 30,
        _ => return Err(bad().into()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_shl(shift).filter(|&v| v >> shift == n).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| format!("'{text}' is too large").into())
}

/// A duration: a bare number of seconds (`90`, `2.5`), or one or more figures each with its unit
/// (`500ms`, `5s`, `2m`, `1h30m`, `1h 30m`, `1d`): `us`, `ms`, `s`/`sec`, `m`/`min`,
/// `h`/`hr`, `d`. Zero is allowed here; each flag says whether it takes it.
pub fn duration(text: &str) -> Result<Duration, Unparsed> {
    let bad = || format!("'{text}' is not a duration (seconds, or with a unit: 500ms, 5s, 2m, 1h30m)");
    let t = text.trim();
    if t.is_empty() {
        return Err(bad().into());
    }
    let mut seconds = 0.0;
    if let Ok(bare) = t.parse::<f64>() {
        seconds = bare;
    } else {
        let mut rest = t;
        while !rest.is_empty() {
            let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            let (number, after) = rest.split_at(number_end);
            let unit_end = after.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after.len());
            let (unit, after) = after.split_at(unit_end);
            let scale = match unit {
                "us" => 1e-6,
                "ms" => 1e-3,
                "s" | "sec" | "secs" => 1.0,
                "m" | "min" | "mins" => 60.0,
                "h" | "hr" | "hrs" => 3600.0,
                "d" => 86_400.0,
                _ => return Err(bad().into()),
            };
            let value: f64 = number.parse().map_err(|_| bad())?;
            seconds += value * scale;
            rest = after.trim_start();
        }
    }
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(bad().into());
    }
    if seconds > MAX_SECONDS {
        return Err(format!("'{text}' is too long").into());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `--tests`: the tests named, groups (`lat`, `bw`, `all`) opened, each once, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Tests(pub Vec<crate::model::TestKind>);

/// `--tests LIST`: comma-separated test names and groups ([`crate::model::TestKind::parse_list`]).
pub fn parse_tests(text: &str) -> Result<Tests, Unparsed> {
    crate::model::TestKind::parse_list(text).map(Tests)
}

/// `-D`/`--duration`: in seconds, as 0.2's flag held them (range checked by `pair`).
pub fn parse_seconds(text: &str) -> Result<f64, Unparsed> {
    duration(text).map(|d| d.as_secs_f64())
}

/// A window (`--soak`): a duration above zero, in any spelling [`duration`] takes.
pub fn window(text: &str) -> Option<Duration> {
    duration(text).ok().filter(|d| !d.is_zero())
}

/// Whole seconds from 0 to a day (`--timeout`, `--idle-timeout`: 0 has a meaning there).
pub fn seconds_up_to_a_day(text: &str) -> Result<u64, Unparsed> {
    whole_seconds(text, 0)
}

/// Whole seconds from 1 to a day (`--deadline`, `--interval`).
pub fn seconds_1_to_a_day(text: &str) -> Result<u64, Unparsed> {
    whole_seconds(text, 1)
}

fn whole_seconds(text: &str, min: u64) -> Result<u64, Unparsed> {
    const DAY: u64 = 86_400;
    let d = duration(text)?;
    if d.subsec_nanos() != 0 {
        return Err(format!("'{text}': give whole seconds (5, 5s, 2m)").into());
    }
    let s = d.as_secs();
    if s < min || s > DAY {
        return Err(format!("'{text}' is not in {min}s..1d ({min}..{DAY} seconds)").into());
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_perftest_users_write_them() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("64KB"), Ok(65536), "perftest's 64KB is binary");
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("64 KB"), Ok(65536));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("2G"), Ok(1 << 31));
        for bad in ["4G", "12Q", "", "K", "-1", "1.5M", "64KBB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_as_humantime_and_perftest_write_them() {
        let s = |t| duration(t).map(|d| d.as_secs_f64());
        assert_eq!(s("5"), Ok(5.0));
        assert_eq!(s("2.5"), Ok(2.5));
        assert_eq!(s("5s"), Ok(5.0));
        assert_eq!(s("2.5s"), Ok(2.5));
        assert_eq!(s("500ms"), Ok(0.5));
        assert_eq!(s("2m"), Ok(120.0));
        assert_eq!(s("1h"), Ok(3600.0));
        assert_eq!(s("1h30m"), Ok(5400.0));
        assert_eq!(s("1h 30m 5s"), Ok(5405.0));
        assert_eq!(s("1min"), Ok(60.0));
        assert_eq!(s("1d"), Ok(86_400.0));
        assert_eq!(s("0"), Ok(0.0));
        for bad in ["", "soon", "5x", "-5s", "h", "1h30", "5 s s", "NaN", "inf", "99999999999h", "1.2.3s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("500ms"), Ok(0.5));
        assert_eq!(window("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(window("1.5m"), Some(Duration::from_secs(90)));
        assert_eq!(window("0s"), None, "a window of nothing is not a window");
    }

    #[test]
    fn whole_seconds_in_range() {
        assert_eq!(seconds_up_to_a_day("300"), Ok(300));
        assert_eq!(seconds_up_to_a_day("5m"), Ok(300));
        assert_eq!(seconds_up_to_a_day("0"), Ok(0));
        assert_eq!(seconds_1_to_a_day("1d"), Ok(86_400));
        assert!(seconds_1_to_a_day("0").is_err());
        assert!(seconds_up_to_a_day("25h").is_err());
        assert!(seconds_up_to_a_day("1500ms").unwrap_err().contains("whole seconds"));
    }
}
