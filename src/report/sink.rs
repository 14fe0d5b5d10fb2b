//! What a document says, item by item and typed, for the machine printers (`prom`, `junit`,
//! `oneline`): each printer is a [`Sink`], and every document feeds every sink the same items in
//! the same order ([`super::Document::feed`]). grep-printer's model: the searcher (here the
//! document) hands typed matches to a sink; the sink chooses the words. No printer reads a
//! document back as JSON, so a renamed field is a compile error, not a series that vanishes.

use crate::outcome::{Check, Finding, Subject, TestResult, Verdict};

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
        }
    }

    /// The command a command line names, for a run that could not produce a document.
    pub fn named(name: &str) -> Option<Command> {
        [Command::Devices, Command::Check, Command::Pair, Command::Mesh, Command::Fabric, Command::Compare].into_iter().find(|c| c.name() == name)
    }
}

/// A device's port as the machine formats report it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortLine<'a> {
    pub device: &'a str,
    pub port: u32,
    pub active: bool,
    pub link_up: bool,
    pub rate_gbps: Option<f64>,
    pub supported_gbps: Option<f64>,
}

/// One rail of `pair --rails`: its subject (the finding of a bad rail has it) and its results.
#[derive(Debug, Clone, Copy)]
pub struct RailLine<'a> {
    pub rail: usize,
    pub subject: &'a Subject,
    pub results: &'a [TestResult],
}

/// `pair --rails`: the node total of one bandwidth test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AggregateLine<'a> {
    pub test: &'a str,
    pub direction: &'a str,
    pub size: u32,
    pub bw_gbps: Option<f64>,
}

/// One pair of a mesh: its latest measure (a retest or zoom-in stands for the first pass's).
#[derive(Debug, Clone, Copy)]
pub struct MeshPairLine<'a> {
    pub a: &'a str,
    pub b: &'a str,
    pub rail: Option<usize>,
    pub verdict: Verdict,
    pub results: &'a [TestResult],
    pub error: Option<&'a str>,
    /// A failed pair: which of its figures failed it (JUnit fails those tests' cases only).
    pub blame: crate::outcome::PairBlame,
}

/// A mesh's counts: suspects of each kind (every kind, 0 where none), unreachable endpoints,
/// endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshTally<'a> {
    pub suspects: Vec<(&'a str, usize)>,
    pub unreachable: usize,
    pub endpoints: usize,
}

/// One figure `compare` set side by side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DifferenceLine<'a> {
    pub a: &'a str,
    pub b: &'a str,
    pub test: &'a str,
    pub direction: &'a str,
    pub size: u64,
    pub figure: &'a str,
    pub change_pct: Option<f64>,
    /// Its regression's words, when it regressed.
    pub regression: Option<&'a str>,
    pub regressed: bool,
}

/// An endpoint `compare` found slowed since the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowedLine<'a> {
    pub endpoint: &'a str,
    pub regressed_pairs: usize,
    pub pairs: usize,
}

/// What a printer is given, item by item. Every method has a default that ignores the item: a
/// printer takes what it prints.
pub trait Sink {
    /// A finding (a mesh's suspects and unreachable endpoints are findings too: `mesh.suspect`,
    /// `mesh.unreachable`).
    fn finding(&mut self, _finding: &Finding) {}
    /// A row of the checklist.
    fn check(&mut self, _check: &Check) {}
    /// A device's port (`devices`).
    fn port(&mut self, _port: &PortLine<'_>) {}
    /// What a device's PCIe link can carry, Gb/s.
    fn pcie(&mut self, _device: &str, _usable_gbps: f64) {}
    /// A result of `pair` (one link).
    fn result(&mut self, _result: &TestResult) {}
    /// A rail of `pair --rails`.
    fn rail(&mut self, _rail: &RailLine<'_>) {}
    /// A node total of `pair --rails`.
    fn aggregate(&mut self, _total: &AggregateLine<'_>) {}
    /// A pair of a mesh.
    fn mesh_pair(&mut self, _pair: &MeshPairLine<'_>) {}
    /// A mesh's counts, once.
    fn mesh_tally(&mut self, _tally: &MeshTally<'_>) {}
    /// A figure `compare` set side by side.
    fn difference(&mut self, _difference: &DifferenceLine<'_>) {}
    /// An endpoint `compare` found slowed.
    fn slowed(&mut self, _slowed: &SlowedLine<'_>) {}
    /// How many links `fabric` found.
    fn links(&mut self, _count: usize) {}
}
