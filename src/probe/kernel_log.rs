//! The kernel log as `check --since` reads it (`link.flap`): link downs and ups, mlx5 health
//! events and PCIe AER lines, each with its wall-clock time.
//!
//! Live it is `dmesg --time-format=iso --kernel` (util-linux dmesg reads `/dev/kmsg`), else
//! `journalctl -k -o short-iso` where dmesg is restricted; a bundle keeps the same output in
//! `tools/dmesg.txt`. Both print an ISO 8601 time first: dmesg
//! `2026-12-04T19:20:01,123456+00:00 MESSAGE`, journalctl `2026-12-04T19:20:01+0000 HOST
//! kernel: MESSAGE` (short-iso) or with fractions (short-iso-precise). Lines without a time
//! (`[   12.345678]` monotonic stamps of a plain `dmesg`) cannot be placed in a window and are
//! left out, counted.
//!
//! The strings, from the kernel's sources:
//! - mlx5 Ethernet/RoCE: `drivers/net/ethernet/mellanox/mlx5/core/en_main.c`,
//!   `mlx5e_update_carrier`: `netdev_info(priv->netdev, "Link up\n")` / `"Link down\n"`, printed
//!   `mlx5_core 0000:18:00.0 ens1f0np0: Link down`;
//! - mlx5 health: `drivers/net/ethernet/mellanox/mlx5/core/health.c`, `poll_health`:
//!   `"device's health compromised - reached miss count"`, `"Fatal error %u detected"`, and
//!   `mlx5_health_report`'s `"Health issue observed, ..."`;
//! - Soft-RoCE: `drivers/infiniband/sw/rxe/rxe_net.c`, `rxe_port_down` / `rxe_port_up`:
//!   `dev_info(&rxe->ib_dev.dev, "set down\n")` / `"set active\n"` (`infiniband rxe0: set down`);
//! - IPoIB and other netdevs: `drivers/infiniband/ulp/ipoib` drops the carrier silently, so the
//!   generic lines stand for them: `"NIC Link is Down"`/`"NIC Link is Up"` (Intel, Broadcom
//!   bnxt_en `bnxt_report_link`: `"NIC Link is Down"`), and `net/ipv6/addrconf.c`'s
//!   `"ADDRCONF(NETDEV_CHANGE): %s: link becomes ready"` (an up);
//! - PCIe AER: `drivers/pci/pcie/aer.c`, `"AER: ... error received: ..."` and the lines after it
//!   (`aer_print_error`: `"PCIe Bus Error: severity=..."`).

/// What a line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    LinkDown,
    LinkUp,
    Health,
    Aer,
}

impl EventKind {
    pub fn word(self) -> &'static str {
        match self {
            EventKind::LinkDown => "link down",
            EventKind::LinkUp => "link up",
            EventKind::Health => "mlx5 health",
            EventKind::Aer => "PCIe AER",
        }
    }
}

/// One line of interest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Unix seconds.
    pub at: i64,
    pub kind: EventKind,
    /// What it happened to: the netdev or device the line names (`ens1f0np0`, `rxe0`,
    /// `0000:18:00.0`), else "node".
    pub subject: String,
    /// The line's message (outside text: sanitised before it is shown).
    pub text: String,
}

/// The log read: its events and how many lines had no time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelLog {
    pub events: Vec<Event>,
    pub untimed: usize,
    /// The latest time any line carried (a bundle is judged as of it).
    pub last: Option<i64>,
}

/// Most bytes of log read (the kernel's ring is 128 KiB - 32 MiB; the tail is what counts).
pub const LOG_CAP: usize = 4 << 20;

/// Parses dmesg's or journalctl's ISO-stamped lines.
pub fn parse(text: &str) -> KernelLog {
    let mut log = KernelLog::default();
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with("-- ") {
            continue;
        }
        let Some((stamp, rest)) = line.split_once(' ') else { continue };
        let Some(at) = iso_seconds(stamp) else {
            log.untimed += 1;
            continue;
        };
        log.last = Some(log.last.map_or(at, |l| l.max(at)));
        // journalctl: "HOST kernel: MESSAGE".
        let message = match rest.split_once(" kernel: ") {
            Some((host, m)) if !host.contains(' ') => m,
            _ => rest,
        };
        if let Some((kind, subject)) = classify(message) {
            log.events.push(Event { at, kind, subject, text: message.chars().take(300).collect() });
        }
    }
    log
}

fn classify(message: &str) -> Option<(EventKind, String)> {
    let words: Vec<&str> = message.split_whitespace().collect();
    // "DRIVER DEVICE NETDEV: Link down" (netdev_info) or "infiniband rxe0: set down" (dev_info).
    let named = |i: usize| words.get(i).map(|w| w.trim_end_matches(':').to_string());
    if message.ends_with(": Link down") || message.contains("NIC Link is Down") {
        return Some((EventKind::LinkDown, netdev_of(&words).unwrap_or_else(|| "node".into())));
    }
    if message.ends_with(": Link up") || message.contains("NIC Link is Up") {
        return Some((EventKind::LinkUp, netdev_of(&words).unwrap_or_else(|| "node".into())));
    }
    if message.starts_with("infiniband ") && message.ends_with(": set down") {
        return Some((EventKind::LinkDown, named(1)?));
    }
    if message.starts_with("infiniband ") && message.ends_with(": set active") {
        return Some((EventKind::LinkUp, named(1)?));
    }
    if let Some(i) = message.find("ADDRCONF(NETDEV_CHANGE): ") {
        let after = &message[i + "ADDRCONF(NETDEV_CHANGE): ".len()..];
        if after.ends_with("link becomes ready") {
            return Some((EventKind::LinkUp, after.split(':').next()?.trim().to_string()));
        }
    }
    if message.starts_with("mlx5_core")
        && (message.contains("health compromised") || message.contains("Fatal error") || message.contains("Health issue observed"))
    {
        return Some((EventKind::Health, named(1).unwrap_or_else(|| "node".into())));
    }
    if message.contains("AER: ") || message.contains("PCIe Bus Error") {
        return Some((EventKind::Aer, named(1).unwrap_or_else(|| "node".into())));
    }
    None
}

/// The netdev of a `netdev_info` line: the word before the last colon-terminated word's message
/// (`mlx5_core 0000:18:00.0 ens1f0np0: Link down` -> `ens1f0np0`).
fn netdev_of(words: &[&str]) -> Option<String> {
    let i = words.iter().position(|w| w.ends_with(':') && !w.contains("0000:"))?;
    Some(words[i].trim_end_matches(':').to_string())
}

/// `2026-12-04T19:20:01,123456+00:00`, `2026-12-04T19:20:01+0000`, `...01.123456+0100`,
/// `...01Z` as Unix seconds.
pub fn iso_seconds(stamp: &str) -> Option<i64> {
    let b = stamp.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, s) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Fractions, then the offset.
    let mut rest = &stamp[19..];
    if let Some(r) = rest.strip_prefix([',', '.']) {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "" | "Z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let digits: String = rest[1..].chars().filter(|c| *c != ':').collect();
            if digits.len() != 4 {
                return None;
            }
            // `get`: four bytes of a line read as UTF-8 need not be four characters (`+0é0`).
            sign * (digits.get(0..2)?.parse::<i64>().ok()? * 3600 + digits.get(2..4)?.parse::<i64>().ok()? * 60)
        }
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset)
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm, as `sys::time::rfc3339` the other way).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The kernel log of `source` and the Unix second its window ends at: a live node's log up to
/// now; a bundle's `tools/dmesg.txt` (read inside the bundle, never through a link out of it) up
/// to its last line. `None`: a bundle without one (not judged). `Err`: why it was not read.
pub fn read(source: &super::Source) -> Option<(Result<KernelLog, String>, i64)> {
    match source {
        super::Source::Live => {
            let end = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
            Some((read_live().map(|text| parse(&text)).map_err(|why| crate::sanitise::one_line(&why).into_owned()), end))
        }
        super::Source::Sysfs(root) => {
            let tree = crate::sys::beneath::Tree::new(root.clone());
            match tree.read_text(std::path::Path::new("tools/dmesg.txt"), LOG_CAP as u64) {
                Err(e) if e.is_not_found() => None,
                Err(e) => Some((Err(format!("tools/dmesg.txt: {}", e.reason())), 0)),
                Ok(text) => {
                    let log = parse(&text);
                    let end = log.last.unwrap_or(0);
                    Some((Ok(log), end))
                }
            }
        }
    }
}

/// This node's kernel log: dmesg (ISO times), else journalctl -k; `Err` with why neither could.
pub fn read_live() -> Result<String, String> {
    let limit = std::time::Duration::from_secs(20);
    let attempts: [(&str, &[&str]); 2] =
        [("dmesg", &["--time-format=iso", "--kernel"]), ("journalctl", &["-k", "-o", "short-iso", "--no-pager", "--since", "-7d"])];
    let mut why = Vec::new();
    for (program, args) in attempts {
        match crate::sys::child::run_bounded(program, args, limit, LOG_CAP) {
            Ok(out) if out.status.is_some_and(|s| s.success()) && !out.stdout.is_empty() => {
                return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
            }
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr);
                why.push(format!("{program}: {}", err.lines().next().unwrap_or("printed nothing").trim().chars().take(160).collect::<String>()));
            }
            Err(e) => why.push(format!("{program}: {e}")),
        }
    }
    Err(why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_of_dmesg_and_journalctl() {
        assert_eq!(iso_seconds("1970-01-01T00:00:00+00:00"), Some(0));
        assert_eq!(iso_seconds("2026-12-04T19:20:01,123456+00:00"), Some(1_796_412_001));
        assert_eq!(iso_seconds("2026-12-04T20:20:01+0100"), Some(1_796_412_001));
        assert_eq!(iso_seconds("2026-12-04T19:20:01.5Z"), Some(1_796_412_001));
        assert_eq!(iso_seconds("[   12.345678]"), None);
        assert_eq!(iso_seconds("2026-13-04T19:20:01+00:00"), None);
    }

    /// An offset of four bytes that are not four ASCII characters (a captured log is any UTF-8)
    /// is no time, not a slice through a character.
    #[test]
    fn a_non_ascii_offset_is_no_time() {
        assert_eq!(iso_seconds("2026-12-04T19:20:01+0\u{e9}0"), None);
        assert_eq!(iso_seconds("2026-12-04T19:20:01+\u{fffd}0"), None);
        assert_eq!(parse("2026-12-04T19:20:01+0\u{e9}0 mlx5_core 0000:18:00.0 ens1f0np0: Link down\n").untimed, 1);
    }

    /// The kernel's own strings (see the module's sources), as dmesg and journalctl print them.
    #[test]
    fn link_health_and_aer_lines_are_named() {
        let text = "\
2026-12-04T10:00:00,000000+00:00 mlx5_core 0000:18:00.0 ens1f0np0: Link down
2026-12-04T10:00:05,000000+00:00 mlx5_core 0000:18:00.0 ens1f0np0: Link up
2026-12-04T10:01:00+0000 node7 kernel: infiniband rxe0: set down
2026-12-04T10:01:02+0000 node7 kernel: infiniband rxe0: set active
2026-12-04T10:02:00,000000+00:00 mlx5_core 0000:18:00.0: poll_health:825: device's health compromised - reached miss count
2026-12-04T10:03:00,000000+00:00 pcieport 0000:17:00.0: AER: Corrected error received: 0000:18:00.0
2026-12-04T10:04:00,000000+00:00 IPv6: ADDRCONF(NETDEV_CHANGE): va: link becomes ready
2026-12-04T10:05:00,000000+00:00 EXT4-fs (sda1): mounted filesystem
[   12.345678] mlx5_core 0000:18:00.0 ens1f0np0: Link down
";
        let log = parse(text);
        let got: Vec<(EventKind, &str)> = log.events.iter().map(|e| (e.kind, e.subject.as_str())).collect();
        assert_eq!(
            got,
            [
                (EventKind::LinkDown, "ens1f0np0"),
                (EventKind::LinkUp, "ens1f0np0"),
                (EventKind::LinkDown, "rxe0"),
                (EventKind::LinkUp, "rxe0"),
                (EventKind::Health, "0000:18:00.0"),
                (EventKind::Aer, "0000:17:00.0"),
                (EventKind::LinkUp, "va"),
            ]
        );
        assert_eq!(log.untimed, 1);
        assert_eq!(log.last, iso_seconds("2026-12-04T10:05:00+00:00"));
    }
}
