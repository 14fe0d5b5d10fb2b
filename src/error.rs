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

    pub fn usage(cause: impl Into<String>) -> Self {
        Failure::new(cause, "see `fabcheck --help` and docs/")
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
