//! What a test measured: one result per test, direction and size, as every document that
//! carries measurements (pair, `--rails`, mesh's pair records) writes it and every printer
//! reads it; and the typed measures and tallies a document hands its printers ([`Measure`],
//! [`Tally`]).

use super::{Subject, SuspectKind, Verdict};
use crate::model::{Direction, LatencySummary, TestKind};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub test: TestKind,
    pub direction: Direction,
    pub size: u32,
    pub iterations: u64,
    pub qps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "rounded_latency")]
    pub lat_us: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub bw_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub peak_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_6dp")]
    pub msg_rate_mpps: Option<f64>,
    /// Retransmission and error counters that rose during the test, as `a:name` / `b:name`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Why the test failed to complete (completion error, stall), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    /// `--paths` (RoCE): each QP's flow label, UDP source port and rate, in QP order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<super::paths::PathFigure>,
    /// lat_under_load: the idle latency beside the loaded one (`lat_us`), and the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<UnderLoad>,
}

/// lat_under_load's comparison: the latency QP's figures before the load started (`lat_us` of
/// the result is under it), the loaded p50 and p99 as multiples of the idle ones, and what the
/// load's bandwidth QPs moved meanwhile (the link was full, or this says it was not).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UnderLoad {
    #[serde(serialize_with = "rounded_summary")]
    pub idle_lat_us: LatencySummary,
    #[serde(serialize_with = "units::serialize_3dp")]
    pub p50_ratio: f64,
    #[serde(serialize_with = "units::serialize_3dp")]
    pub p99_ratio: f64,
    #[serde(serialize_with = "units::serialize_3dp")]
    pub load_gbps: f64,
    /// The load's bandwidth QPs (`--qps`).
    pub load_qps: u32,
}

impl UnderLoad {
    /// The comparison of a loaded phase with its idle one (`None` without an idle p50 or p99).
    pub fn of(idle: LatencySummary, loaded: &LatencySummary, load_gbps: f64, load_qps: u32) -> Option<UnderLoad> {
        (idle.p50 > 0.0 && idle.p99 > 0.0).then(|| UnderLoad {
            idle_lat_us: idle,
            p50_ratio: loaded.p50 / idle.p50,
            p99_ratio: loaded.p99 / idle.p99,
            load_gbps,
            load_qps,
        })
    }
}

fn rounded_summary<S: serde::Serializer>(value: &LatencySummary, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&value.rounded(), s)
}

impl TestResult {
    /// Which result this is.
    pub fn key(&self) -> super::ResultKey {
        super::ResultKey { test: self.test, direction: self.direction, size: self.size }
    }
}

/// Serde: latency figures to three decimals in the document.
fn rounded_latency<S: serde::Serializer>(value: &Option<LatencySummary>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(l) => s.serialize_some(&l.rounded()),
        None => s.serialize_none(),
    }
}

/// Which of a mesh pair's figures made it bad: its bandwidth (short of the link or the median),
/// its latency (an outlier), both, or neither said (a test that failed, an expectation): then
/// every test of the pair stands for the verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairBlame {
    pub bandwidth: bool,
    pub latency: bool,
}

impl PairBlame {
    /// Whether a failed pair's `result` is one of the figures that failed it.
    pub fn names(self, result: &TestResult) -> bool {
        match (self.bandwidth, self.latency) {
            (false, false) => true,
            (bandwidth, latency) => (bandwidth && result.bw_gbps.is_some()) || (latency && result.lat_us.is_some()),
        }
    }
}

/// What a document measured, item by item and typed, as it hands it to the printers
/// ([`crate::report::Sink::measure`]): each is about a subject ([`Subject`]) and carries its
/// figures; the printers choose the words and the series. Text here is prose (an error, a
/// regression's words) or a name read from a document (compare's test and direction).
#[derive(Debug, Clone, Copy)]
pub enum Measure<'a> {
    /// A port's state and rates (`devices`): `subject` is the port.
    Port { subject: &'a Subject, active: bool, link_up: bool, rate_gbps: Option<f64>, supported_gbps: Option<f64> },
    /// What a device's PCIe link can carry, Gb/s: `subject` is the device.
    PcieUsable { subject: &'a Subject, gbps: f64 },
    /// A result of `pair` (its one link).
    Result(&'a TestResult),
    /// A rail of `pair --rails`: its number, its subject (the finding of a bad rail has it) and
    /// its results.
    Rail { rail: usize, subject: &'a Subject, results: &'a [TestResult] },
    /// `pair --rails`: the node total of one bandwidth test.
    Total { test: TestKind, direction: Direction, size: u32, bw_gbps: f64 },
    /// One pair of a mesh, its latest measure (a retest or zoom-in stands for the first pass's):
    /// `subject` is the pair ([`Subject::Pair`], the ends as the terminal names them).
    MeshPair {
        subject: &'a Subject,
        rail: Option<usize>,
        verdict: Verdict,
        results: &'a [TestResult],
        error: Option<&'a str>,
        /// A failed pair: which of its figures failed it (JUnit fails those tests' cases only).
        blame: PairBlame,
    },
    /// A figure of a node as the exporter read it, in its family's base unit (bytes per second,
    /// seconds, watts...): `figure` names it (the metric table maps it to its family),
    /// `subject` is what it is about, `labels` the series' labels beyond the subject's (a
    /// port's `netdev` and `gpu`, a lane, an info gauge's words).
    Reading { subject: &'a Subject, labels: &'a [(&'static str, &'a str)], figure: Figure<'a>, value: f64 },
    /// A figure `compare` set beside its baseline: `subject` is the pair.
    Change {
        subject: &'a Subject,
        test: &'a str,
        direction: &'a str,
        size: u64,
        /// The figure as the documents name it (`bw_gbps`, `lat_p50_us`, ...).
        figure: &'static str,
        change_pct: Option<f64>,
        /// Its regression's words, when it regressed.
        regression: Option<&'a str>,
        regressed: bool,
    },
}

/// What a [`Measure::Reading`] is a figure of: the exporter's own state, a device, a port, its
/// physical layer and module, a PCI function's AER rows, the check's verdict; one variant per
/// family of the metric table (`report::prom::metrics::of`), and a port's counter files by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure<'a> {
    Up,
    BuildInfo,
    RefreshError,
    LastRefresh,
    RefreshDuration,
    Interval,
    Refreshes,
    RefreshFailures,
    Devices,
    DevicePresent,
    DeviceInfo,
    PcieUsable,
    PortInfo,
    PortState,
    PortActive,
    PortPhysState,
    PortLinkUp,
    PortRate,
    PortCapacity,
    PortSupported,
    PortTrainedLow,
    PortMtu,
    PhyFecInfo,
    PhyBerRaw,
    PhyBerEffective,
    PhySymbolErrors,
    PhyCorrectedBits,
    PhyReceived,
    PhyFecCorrected,
    PhyFecUncorrectable,
    PhyLinkDown,
    PhyLaneErrors,
    ModuleInfo,
    ModuleTemperature,
    ModuleRxPower,
    ModuleTxPower,
    ModuleTxBias,
    PcieAer,
    /// The check's verdict (1 pass).
    Verdict,
    /// A running pair's or mesh's last interval (`--report-every`, its `--live-dir` state):
    /// bandwidth in bytes per second, latency in seconds, and when the interval ended.
    LiveBandwidth,
    LiveLatencyP50,
    LiveLatencyP99,
    LiveTimestamp,
    /// A port's counter file, by folder and name as sysfs has it, and its count as read (the
    /// table says the family and what one count is worth).
    Counter {
        dir: CounterDir,
        file: &'a str,
        count: u64,
    },
}

/// The folder of a port's counter files under `ports/N/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CounterDir {
    /// `counters/`: the IBTA PortCounters (and PortCountersExtended) the kernel keeps.
    Ibta,
    /// `hw_counters/`: the driver's own (mlx5's `out_of_sequence`, rxe's `rcvd_pkts`...).
    Hardware,
}

impl CounterDir {
    /// The folder's name under `ports/N/`.
    pub fn folder(self) -> &'static str {
        match self {
            CounterDir::Ibta => "counters",
            CounterDir::Hardware => "hw_counters",
        }
    }
}

/// A count a document hands its printers ([`crate::report::Sink::tally`]), once per kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tally {
    /// A mesh's suspects of one kind (every kind is told, 0 where none).
    Suspects { kind: SuspectKind, count: usize },
    /// A mesh's endpoints that could not be reached.
    Unreachable(usize),
    /// A mesh's endpoints.
    Endpoints(usize),
    /// The links `fabric` found.
    Links(usize),
    /// The findings of one severity (every severity is told, 0 where none): the exporter's page.
    Findings { severity: super::Severity, count: usize },
    /// An endpoint `compare` found slowed since the baseline: `regressed` of its `pairs`.
    Slowed { endpoint: Subject, regressed: usize, pairs: usize },
}
