//! `--soak DURATION` on `check`: the window itself (live only): the node read at its start,
//! a wait (SIGINT ends it early), the node read again, and both reads handed to `probe::soak`
//! (pure) to diff; `diagnose::node::judge` says the window.

use crate::error::Failure;
use crate::probe::node::NodeRead;
use crate::progress::{Event, Progress};
use std::time::{Duration, Instant};

/// What the window was, and the node as read at its end (each port's window on it).
pub struct Soaked {
    pub asked: Duration,
    pub seconds: f64,
    pub interrupted: bool,
    pub end: NodeRead,
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

/// How often the window's progress is said, and how often the node is read for it.
const SAY_EVERY: Duration = Duration::from_secs(1);
const READ_EVERY: Duration = Duration::from_secs(10);

/// Waits the window out (or until SIGINT/SIGTERM), reads the node again, and sets each port's
/// window on the end read from what `start` read. On a terminal (`progress`) it says the time
/// gone and left and the error counters that have risen so far (the node re-read every 10 s).
pub fn run(
    start: &NodeRead,
    window: Duration,
    read: impl FnMut() -> Result<NodeRead, Failure>,
    progress: &mut dyn Progress,
) -> Result<Soaked, Failure> {
    run_paced(start, window, read, progress, (SAY_EVERY, READ_EVERY))
}

/// [`run`], at the pace given (what is said, how often the node is read).
fn run_paced(
    start: &NodeRead,
    window: Duration,
    mut read: impl FnMut() -> Result<NodeRead, Failure>,
    progress: &mut dyn Progress,
    (say_every, read_every): (Duration, Duration),
) -> Result<Soaked, Failure> {
    crate::sys::os::catch_termination();
    let began = Instant::now();
    let mut interrupted = false;
    let (mut said, mut read_at) = (Duration::ZERO, Duration::ZERO);
    let mut risen_now: Vec<String> = Vec::new();
    while began.elapsed() < window {
        if crate::sys::os::interrupted() {
            interrupted = true;
            break;
        }
        let elapsed = began.elapsed();
        // A read for the progress only: one that fails is retried at the next turn.
        if elapsed >= read_at + read_every {
            read_at = elapsed;
            if let Ok(now) = read() {
                risen_now = risen(start, &now);
            }
        }
        if elapsed >= said + say_every {
            said = elapsed;
            progress.event(&Event::Soak { elapsed, window, risen: Some(&risen_now) });
        }
        std::thread::sleep(Duration::from_millis(100).min(window.saturating_sub(began.elapsed())));
    }
    let mut end = read()?;
    let seconds = began.elapsed().as_secs_f64();
    progress.done();
    crate::probe::soak::apply(&start.inventory, &mut end.inventory, seconds, interrupted);
    Ok(Soaked { asked: window, seconds, interrupted, end })
}

/// The error counters that rose from `start` to `now`, as `mlx5_0/1 symbol_error +3` (data and
/// packet counters, which always rise, are not said).
pub fn risen(start: &NodeRead, now: &NodeRead) -> Vec<String> {
    let mut now = now.inventory.clone();
    crate::probe::soak::apply(&start.inventory, &mut now, 1.0, false);
    let mut out = Vec::new();
    for device in &now.devices {
        for port in &device.ports {
            let Some(window) = &port.soak else { continue };
            for c in &window.counters {
                if let (crate::probe::window::Change::Rose(n), true) = (c.change, is_error_counter(&c.name)) {
                    out.push(format!("{}/{} {} +{n}", device.name, port.port, c.name));
                }
            }
        }
    }
    out
}

/// Whether a counter counts errors (a rise is news), not traffic.
fn is_error_counter(name: &str) -> bool {
    use crate::probe::window::{saturates_at, FEC_UNCORRECTABLE, LINK_DOWN_EVENTS, SYMBOL_ERRORS};
    saturates_at(name).is_some()
        || [SYMBOL_ERRORS, LINK_DOWN_EVENTS, FEC_UNCORRECTABLE].contains(&name)
        || ["err", "discard", "drop", "out_of_", "timeout", "retry"].iter().any(|w| name.contains(w))
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
    use crate::outcome::FindingId;

    #[test]
    fn a_window_reads_twice_and_leaves_the_second_read_with_its_window() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ib-4x-at-1x");
        let source = crate::probe::Source::Sysfs(root);
        let start = crate::probe::node::read(&source, &[]).unwrap();
        let mut reads = 0;
        let soaked = run(
            &start,
            Duration::from_millis(300),
            || {
                reads += 1;
                let mut end = crate::probe::node::read(&source, &[])?;
                end.inventory.devices[0].ports[0].counters.iter_mut().find(|c| c.name == "link_downed").unwrap().value += 2;
                Ok(end)
            },
            &mut crate::progress::Silent,
        )
        .unwrap();
        assert_eq!(reads, 1, "one read at the end; the start is the read already made");
        assert!(!soaked.interrupted);
        // Wall time only as a generous bound: the window was waited out, not skipped.
        assert!(soaked.seconds >= 0.3 && soaked.seconds < 30.0, "{}", soaked.seconds);
        let window = soaked.end.inventory.devices[0].ports[0].soak.as_ref().expect("the window is on the port");
        assert_eq!(window.of("link_downed"), Some(crate::probe::window::Change::Rose(2)));
        let said = crate::diagnose::node::Window { asked: soaked.asked, seconds: soaked.seconds, interrupted: false, pcie_start: &start.pcie };
        let judged = crate::diagnose::node::judge(&soaked.end, &Default::default(), &Default::default(), Some(&said));
        let note = judged.report.findings.iter().find(|f| f.id == FindingId::SoakWindow).expect("the window is said");
        assert!(note.message.contains("apart (soak window)"), "{note:?}");
        assert!(judged.report.findings.iter().any(|f| f.id == FindingId::LinkFlap), "{:#?}", judged.report.findings);
        assert!(interrupted(&soaked).is_none());
    }

    /// Issue #57: `check --soak 10m` was ten silent minutes. The window says its time gone and
    /// left and what has risen so far (the pace injected: every turn says, every turn reads).
    #[test]
    fn a_window_says_its_progress_and_what_has_risen() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ib-4x-at-1x");
        let source = crate::probe::Source::Sysfs(root);
        let start = crate::probe::node::read(&source, &[]).unwrap();
        let mut said: Vec<String> = Vec::new();
        let read = || {
            let mut now = crate::probe::node::read(&source, &[])?;
            now.inventory.devices[0].ports[0].counters.iter_mut().find(|c| c.name == "symbol_error").unwrap().value += 3;
            if let Some(c) = now.inventory.devices[0].ports[0].counters.iter_mut().find(|c| c.name == "port_xmit_data") {
                c.value += 1000;
            }
            Ok(now)
        };
        run_paced(&start, Duration::from_millis(400), read, &mut said, (Duration::ZERO, Duration::ZERO)).unwrap();
        assert!(!said.is_empty(), "the window said nothing");
        let last = said.last().unwrap();
        assert!(last.starts_with("soak window ") && last.contains(" left; "), "{last}");
        let dev = &start.inventory.devices[0];
        assert!(said.iter().any(|l| l.contains(&format!("risen so far: {}/{} symbol_error +3", dev.name, dev.ports[0].port))), "{said:?}");
        assert!(!said.iter().any(|l| l.contains("port_xmit_data")), "traffic is not news: {said:?}");
        let none = Event::Soak { elapsed: Duration::from_secs(60), window: Duration::from_secs(600), risen: Some(&[]) };
        assert_eq!(none.to_string(), "soak window 1m00s of 10m00s, 9m00s left; nothing has risen so far");
    }

    #[test]
    fn soak_is_live_only_and_takes_a_duration() {
        assert!(window(Some("10s"), false).is_err());
        assert!(window(Some("ten"), true).is_err());
        assert_eq!(window(Some("10s"), true).unwrap(), Some(Duration::from_secs(10)));
        assert_eq!(window(None, false).unwrap(), None);
    }
}
