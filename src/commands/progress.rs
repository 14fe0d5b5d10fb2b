//! `--progress`, `--no-progress`, `--quiet`: the progress sink `pair` and `mesh` are given. The
//! only terminal handling of a run is here: on a terminal one status line rewritten in place
//! (`\r`, then the line cleared to its end), elsewhere (with `--progress`) plain lines. Always
//! stderr: stdout holds the result.

use crate::cli::ProgressFlags;
use crate::progress::{Event, Pace, Progress, Silent};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// The sink the flags ask for: progress on a terminal unless `--no-progress` or `--quiet`;
/// `--progress` also when stderr is not a terminal.
pub fn sink(flags: &ProgressFlags) -> Box<dyn Progress> {
    let tty = std::io::stderr().is_terminal();
    let on = if flags.progress { true } else { tty && !flags.no_progress && !flags.quiet };
    if on {
        Box::new(Stderr { status_line: tty, shown: false, start: Instant::now(), pace: Pace::default() })
    } else {
        Box::new(Silent)
    }
}

/// Lines on stderr; on a terminal, one status line.
struct Stderr {
    status_line: bool,
    /// A status line is on the screen (cleared when done, so the result starts on a clean line).
    shown: bool,
    /// When the run began, for the status line's elapsed time and estimate.
    start: Instant,
    pace: Pace,
}

impl Progress for Stderr {
    fn event(&mut self, event: &Event<'_>) {
        let line = crate::sanitise::printable(&event.to_string()).into_owned();
        let mut err = std::io::stderr().lock();
        let _ = if self.status_line {
            self.shown = true;
            let pace = self.pace.note(event, self.start.elapsed());
            write!(err, "\r{line} ({pace})\x1b[K")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    fn done(&mut self) {
        if std::mem::take(&mut self.shown) {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

impl Drop for Stderr {
    fn drop(&mut self) {
        self.done();
    }
}
