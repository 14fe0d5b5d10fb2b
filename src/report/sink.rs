//! What a document says, item by item and typed, for the machine printers (`prom`, `junit`,
//! `oneline`): each printer is a [`Sink`], and every document feeds every sink the same items in
//! the same order ([`super::Document::feed`]). grep-printer's model: the searcher (here the
//! document) hands typed matches to a sink; the sink chooses the words. No printer reads a
//! document back as JSON, so a renamed field is a compile error, not a series that vanishes.

use crate::outcome::{Check, Finding, Measure, Tally};

/// Which command a document is the result of: the `command` label, JUnit's suite name and the
/// one-line format's first words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Devices,
    Check,
    Pair,
    Mesh,
    Fabric,
    Compare,
    Collective,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Devices => "devices",
            Command::Check => "check",
            Command::Pair => "pair",
            Command::Mesh => "mesh",
            Command::Fabric => "fabric",
            Command::Compare => "compare",
            Command::Collective => "collective",
        }
    }

    /// The command a command line names, for a run that could not produce a document.
    pub fn named(name: &str) -> Option<Command> {
        [Command::Devices, Command::Check, Command::Pair, Command::Mesh, Command::Fabric, Command::Compare, Command::Collective]
            .into_iter()
            .find(|c| c.name() == name)
    }
}

/// What a printer is given, item by item: rows of the checklist, findings (a mesh's suspects
/// and unreachable endpoints are findings too: `mesh.suspect`, `mesh.unreachable`), measures
/// and tallies, all of them the outcome's typed values. Every method has a default that ignores
/// the item: a printer takes what it prints.
pub trait Sink {
    /// A row of the checklist.
    fn check(&mut self, _check: &Check) {}
    /// A finding.
    fn finding(&mut self, _finding: &Finding) {}
    /// What was measured, on what.
    fn measure(&mut self, _measure: &Measure<'_>) {}
    /// A count, once per kind.
    fn tally(&mut self, _tally: &Tally) {}
}
