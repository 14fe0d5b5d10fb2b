//! The one error the commands return when they cannot run: a cause and what to do (exit 2).

use crate::probe::ProbeError;

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub cause: String,
    pub remedy: String,
}

impl Failure {
    pub fn new(cause: impl Into<String>, remedy: impl Into<String>) -> Self {
        Failure { cause: cause.into(), remedy: remedy.into() }
    }

    /// A command line that cannot run as given. The remedy names the flag the cause names
    /// (issue #57: ten of them ended in a generic "see --help").
    pub fn usage(cause: impl Into<String>) -> Self {
        let cause = cause.into();
        let remedy = usage_remedy(&cause);
        Failure { cause, remedy }
    }
}

/// What to do about a usage error: change the flag its cause names, as the cause says.
fn usage_remedy(cause: &str) -> String {
    let words = cause.split(|c: char| c.is_whitespace() || ",:;'`()=".contains(c));
    let flag = words.into_iter().find(|w| {
        let long = w.len() > 2 && w.starts_with("--") && w[2..].chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let short = w.len() == 2 && w.starts_with('-') && w[1..].chars().all(|c| c.is_ascii_alphabetic());
        long || short
    });
    match flag {
        Some(flag) => format!("change {flag} as said above (`fabcheck COMMAND --help` describes {flag})"),
        None => "correct the command line as said above (`fabcheck COMMAND --help` lists the flags)".into(),
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.cause)
    }
}

impl From<ProbeError> for Failure {
    fn from(err: ProbeError) -> Self {
        let cause = match &err {
            ProbeError::NoDevices => "no RDMA devices found: the driver is not loaded, no rdma-core provider matches the \
                                      adapter, or this container has no /dev/infiniband"
                .to_string(),
            ProbeError::NoVerbs(source) => format!("libibverbs cannot list devices ({source}): this kernel may have no RDMA support"),
            other => other.to_string(),
        };
        Failure::new(cause, err.remedy())
    }
}

/// How a command ended when it did run: `0` pass, `1` something failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
}

/// The result could not be delivered (exit 2): stdout or `--output` refused it, or the document
/// could not be produced (mesh's pair-record spool failed). A run whose result is lost did not
/// do what it was asked, whatever its verdict.
#[derive(Debug)]
pub enum Delivery {
    /// stdout's reader went away (`| head`, `| true`): stop quietly, as `cat` does.
    BrokenPipe,
    /// Writing to stdout failed (`> /dev/full`, a closed descriptor).
    Stdout(std::io::Error),
    /// `--output FILE` (or a file of `manpage --dir`) could not be written.
    File(crate::sys::atomic::WriteError),
    /// The document itself could not be produced; the words say why.
    Document(String),
}

impl Delivery {
    /// Whether nothing should be said: the reader that would see it is gone.
    pub fn is_quiet(&self) -> bool {
        matches!(self, Delivery::BrokenPipe)
    }

    /// The cause and the next step, as a [`Failure`] prints them.
    pub fn to_failure(&self) -> Failure {
        match self {
            Delivery::BrokenPipe => Failure::new("stdout was closed by its reader", "read the whole output, or give --output FILE"),
            Delivery::Stdout(e) => Failure::new(
                format!("cannot write the result to stdout: {e}"),
                "check where stdout goes (a full disk, a closed descriptor), or give --output FILE",
            ),
            Delivery::File(e) => Failure::new(
                format!("the result could not be delivered: {e}"),
                "give --output a regular file (or a FIFO, or a device) in a writable directory",
            ),
            Delivery::Document(why) => Failure::new(
                format!("the result could not be produced: {why}"),
                "free space in the temporary directory, or point TMPDIR at one with room, and run again",
            ),
        }
    }
}

/// Why a command did not reach an outcome (exit 2): it could not run, or its result could not
/// be delivered. `main` alone turns it into words on stderr and the exit code.
#[derive(Debug)]
pub enum Stop {
    Failure(Failure),
    Delivery(Delivery),
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Self {
        Stop::Failure(f)
    }
}

impl From<Delivery> for Stop {
    fn from(d: Delivery) -> Self {
        Stop::Delivery(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #57: a usage error's remedy names the flag to change, not a generic "see --help".
    #[test]
    fn a_usage_error_names_the_flag_to_change() {
        for (cause, flag) in [
            ("--threshold is a percentage, 1..100", "--threshold"),
            ("-m with --cm: rdma_cm sets the path MTU from its path record", "-m"),
            ("--expect nope=1: unknown expectation key", "--expect"),
            ("--listen 'x' is not ADDR:PORT (e.g. 127.0.0.1:9879)", "--listen"),
        ] {
            let remedy = Failure::usage(cause).remedy;
            assert!(remedy.starts_with(&format!("change {flag} as said above")), "{cause}: {remedy}");
        }
        let remedy = Failure::usage("mesh needs at least two endpoints").remedy;
        assert!(!remedy.contains("see `fabcheck --help` and docs/"), "{remedy}");
    }
}
