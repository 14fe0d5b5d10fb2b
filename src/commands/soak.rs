//! `--soak DURATION` on `check`: the window itself (live only): read, wait (SIGINT ends it
//! early), read again, and hand both reads to `probe::soak` (pure) to diff.

use crate::error::Failure;
use crate::outcome::FindingId;
use crate::outcome::{Finding, Report, Severity};
use crate::probe::{Inventory, ProbeError};
use std::time::{Duration, Instant};

/// What the window was.
pub struct Soaked {
    pub asked: Duration,
    pub seconds: f64,
    pub interrupted: bool,
}

/// The window asked for, validated: a bundle has no second read, so `--soak` is live only.
pub fn window(text: Option<&str>, live: bool) -> Result<Option<Duration>, Failure> {
    let Some(text) = text else { return Ok(None) };
    let duration =
        crate::cli::values::window(text).ok_or_else(|| Failure::usage(format!("--soak {text}: not a duration; write it as 10s, 5m, 1h or 1h30m")))?;
    if !live {
        return Err(Failure::new(
            "--soak reads the counters twice, a window apart: a --sysfs-root bundle was read once",
            "run `check --soak` on the node itself; a bundle is judged on its lifetime counters without --soak",
        ));
    }
    Ok(Some(duration))
}

/// Waits the window out (or until SIGINT/SIGTERM), reads the inventory again, and leaves in
/// `inventory` the second read with each port's window.
pub fn run(inventory: &mut Inventory, window: Duration, read: impl FnOnce() -> Result<Inventory, ProbeError>) -> Result<Soaked, Failure> {
    crate::sys::os::catch_termination();
    let start = Instant::now();
    let mut interrupted = false;
    while start.elapsed() < window {
        if crate::sys::os::interrupted() {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100).min(window.saturating_sub(start.elapsed())));
    }
    let mut end = read()?;
    crate::probe::local_mads::enrich(&mut end);
    let seconds = start.elapsed().as_secs_f64();
    crate::probe::soak::apply(inventory, &mut end, seconds, interrupted);
    *inventory = end;
    Ok(Soaked { asked: window, seconds, interrupted })
}

/// Says the window in the output (an info finding on the node).
pub fn say_window(report: &mut Report, soaked: &Soaked) {
    let message = if soaked.interrupted {
        format!(
            "soak window interrupted after {:.0} s of {} s: counters read at its start and when it ended, rates judged over what was seen",
            soaked.seconds,
            soaked.asked.as_secs()
        )
    } else {
        format!("counters read {:.0} s apart (soak window): rates over the window are judged, not lifetime totals", soaked.seconds)
    };
    report.findings.push(Finding {
        id: FindingId::SoakWindow,
        severity: Severity::Info,
        subject: "node".into(),
        message,
        remedy: "a longer window (--soak 1h) catches rarer errors and flaps".into(),
        about: None,
    });
}

/// An interrupted window is a run that could not finish (exit 2), after its report.
pub fn interrupted(soaked: &Soaked) -> Option<Failure> {
    soaked.interrupted.then(|| {
        Failure::new(
            format!("the soak window was interrupted after {:.0} of {} s", soaked.seconds, soaked.asked.as_secs()),
            "the report judges what the shortened window saw; let the window run to its end for a full judgement",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_twice_and_leaves_the_second_read_with_its_window() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ib-4x-at-1x");
        let source = crate::probe::Source::Sysfs(root);
        let mut inventory = crate::probe::inventory(&source, None).unwrap();
        let mut reads = 0;
        let soaked = run(&mut inventory, Duration::from_millis(300), || {
            reads += 1;
            let mut end = crate::probe::inventory(&source, None)?;
            end.devices[0].ports[0].counters.iter_mut().find(|c| c.name == "link_downed").unwrap().value += 2;
            Ok(end)
        })
        .unwrap();
        assert_eq!(reads, 1, "one read at the end; the start is the read already made");
        assert!(!soaked.interrupted);
        // Wall time only as a generous bound: the window was waited out, not skipped.
        assert!(soaked.seconds >= 0.3 && soaked.seconds < 30.0, "{}", soaked.seconds);
        let window = inventory.devices[0].ports[0].soak.as_ref().expect("the window is on the port");
        assert_eq!(window.of("link_downed"), Some(crate::probe::window::Change::Rose(2)));
        let mut report = Report { verdict: crate::outcome::Verdict::Pass, checks: vec![], findings: vec![] };
        say_window(&mut report, &soaked);
        assert!(report.findings[0].message.contains("apart (soak window)"), "{:?}", report.findings);
        assert!(interrupted(&soaked).is_none());
    }

    #[test]
    fn soak_is_live_only_and_takes_a_duration() {
        assert!(window(Some("10s"), false).is_err());
        assert!(window(Some("ten"), true).is_err());
        assert_eq!(window(Some("10s"), true).unwrap(), Some(Duration::from_secs(10)));
        assert_eq!(window(None, false).unwrap(), None);
    }
}
