//! One problem of a port's QoS set-up, found before it becomes a row or a note: the RoCE QoS
//! rules (`qos_rules`) and their counter rules (`qos_counters`) both make them.

use super::Severity;

pub(super) struct Issue {
    pub severity: Severity,
    pub message: String,
    pub remedy: String,
}

pub(super) fn issue(severity: Severity, message: impl Into<String>, remedy: impl Into<String>) -> Issue {
    Issue { severity, message: message.into(), remedy: remedy.into() }
}
