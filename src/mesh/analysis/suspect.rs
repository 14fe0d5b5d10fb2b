//! A suspect of a mesh: what kind of thing (node, link, leaf...) explains bad pairs, its
//! subject, why, and how much it weighs (the outcome's [`Severity`]).

pub use crate::outcome::SuspectKind;
use crate::outcome::{Finding, FindingId, Severity, Subject};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    pub kind: SuspectKind,
    /// node, config: the endpoint as given; link: `A<->B`; cluster-wide: `cluster`.
    pub subject: String,
    pub reason: String,
    /// `error`, or `warning` for a suspect that does not fail the mesh unless `--fail-on
    /// warning` (a figure that regressed since `--baseline`).
    #[serde(default = "error")]
    pub severity: Severity,
    /// A link bad in the first pass and good on retest: a lesser suspect than the others. Its
    /// reason says so in words (`flaky: ...`); logic reads this, never the words.
    #[serde(skip)]
    pub flaky: bool,
}

impl Suspect {
    pub fn new(kind: SuspectKind, subject: impl Into<String>, reason: impl Into<String>) -> Suspect {
        Suspect { kind, subject: subject.into(), reason: reason.into(), severity: Severity::Error, flaky: false }
    }

    /// A warning, not an error: the mesh still passes unless `--fail-on warning`.
    pub fn warning(kind: SuspectKind, subject: impl Into<String>, reason: impl Into<String>) -> Suspect {
        Suspect { severity: Severity::Warning, ..Suspect::new(kind, subject, reason) }
    }

    /// Whether this suspect fails the mesh (every suspect but a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// A flaky link (bad in the first pass, good on retest): a lesser suspect than the others.
    pub fn is_flaky(&self) -> bool {
        self.flaky
    }

    /// The suspect as the outcome's finding (`mesh.suspect`), about `subject`: the printers take
    /// mesh's suspects as they take every other command's findings.
    pub fn finding(&self, subject: impl Into<Subject>) -> Finding {
        Finding::new(FindingId::MeshSuspect, self.severity, subject, self.reason.clone(), "")
    }
}

/// Serde: a suspect read without a severity is an error (0.3's documents).
fn error() -> Severity {
    Severity::Error
}
