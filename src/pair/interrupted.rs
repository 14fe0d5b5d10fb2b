//! A pair stopped by SIGINT, SIGTERM or SIGHUP (a burn-in's `-D 7d` ended early): the tests
//! that finished are the document, the verdict is `fail`, and the run is exit 2 with the cause
//! said after the document (as `mesh` does). The agents are stopped by closing their channels
//! (the caller's `Hub::close_all`), a test in flight included.

use super::sequence::PairSequence;
use crate::error::Failure;
use crate::outcome::loss::Loss;

/// What `drive` ended with, read after the hub is closed: `Ok(Some(cause))` when a signal
/// stopped the run and at least one test reached its endpoints (there is something to
/// report), `Ok(None)` when it ran to its end, the loss itself when nothing can be reported.
pub fn after(driven: Result<(), Loss>, done: &PairSequence) -> Result<Option<Failure>, Failure> {
    match driven {
        Ok(()) => Ok(None),
        Err(loss) if done.endpoints.is_none() => Err(loss.into()),
        Err(_) => Ok(Some(cause(done.results.len(), crate::sys::os::termination_signal()))),
    }
}

/// The cause and next step of an interrupted pair that reported `finished` tests.
pub fn cause(finished: usize, signal: Option<&str>) -> Failure {
    let by = signal.map(|s| format!(" by {s}")).unwrap_or_default();
    Failure::new(
        format!("interrupted{by} after {finished} finished test(s): the report above covers those; the agents were told to stop"),
        "run the pair again (a long burn-in under nohup, tmux or a batch job, so a closed login session does not stop it)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_names_the_signal_and_what_was_reported() {
        let f = cause(3, Some("SIGTERM"));
        assert!(f.cause.contains("interrupted by SIGTERM after 3 finished test(s)"), "{}", f.cause);
        assert!(f.cause.contains("the report above covers those"), "{}", f.cause);
        assert!(!cause(0, None).cause.contains(" by "));
    }
}
