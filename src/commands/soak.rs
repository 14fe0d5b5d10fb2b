//! `--soak DURATION` on `check`: the window itself (live only): the node read at its start,
//! a wait (SIGINT ends it early), the node read again, and both reads handed to `probe::soak`
//! (pure) to diff; `diagnose::node::judge` says the window.

use crate::error::Failure;
use crate::probe::node::NodeRead;
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

/// Waits the window out (or until SIGINT/SIGTERM), reads the node again, and sets each port's
/// window on the end read from what `start` read.
pub fn run(start: &NodeRead, window: Duration, read: impl FnOnce() -> Result<NodeRead, Failure>) -> Result<Soaked, Failure> {
    crate::sys::os::catch_termination();
    let began = Instant::now();
    let mut interrupted = false;
    while began.elapsed() < window {
        if crate::sys::os::interrupted() {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100).min(window.saturating_sub(began.elapsed())));
    }
    let mut end = read()?;
    let seconds = began.elapsed().as_secs_f64();
    crate::probe::soak::apply(&start.inventory, &mut end.inventory, seconds, interrupted);
    Ok(Soaked { asked: window, seconds, interrupted, end })
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
        let start = crate::probe::node::read(&source, None).unwrap();
        let mut reads = 0;
        let soaked = run(&start, Duration::from_millis(300), || {
            reads += 1;
            let mut end = crate::probe::node::read(&source, None)?;
            end.inventory.devices[0].ports[0].counters.iter_mut().find(|c| c.name == "link_downed").unwrap().value += 2;
            Ok(end)
        })
        .unwrap();
        assert_eq!(reads, 1, "one read at the end; the start is the read already made");
        assert!(!soaked.interrupted);
        // Wall time only as a generous bound: the window was waited out, not skipped.
        assert!(soaked.seconds >= 0.3 && soaked.seconds < 30.0, "{}", soaked.seconds);
        let window = soaked.end.inventory.devices[0].ports[0].soak.as_ref().expect("the window is on the port");
        assert_eq!(window.of("link_downed"), Some(crate::probe::window::Change::Rose(2)));
        let said = crate::diagnose::node::Window { asked: soaked.asked, seconds: soaked.seconds, interrupted: false, pcie_start: &start.pcie };
        let judged = crate::diagnose::node::judge(&soaked.end, &Default::default(), &Default::default(), Some(&said));
        let note = judged.report.findings.iter().find(|f| f.id == "soak.window").expect("the window is said");
        assert!(note.message.contains("apart (soak window)"), "{note:?}");
        assert!(judged.report.findings.iter().any(|f| f.id == "link.flap"), "{:#?}", judged.report.findings);
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
