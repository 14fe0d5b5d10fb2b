//! Judging a node rail by rail (pure): each rail against its own capacity (as `pair` judges one
//! link), against its sibling rails (the median of the others: `pair.rail`, which works where
//! no capacity is known, as on rxe), the node's aggregate against the rails' summed capacity or
//! a shared bound (`pair.aggregate`), and rails that could not reach their peer
//! (`pair.rail.unreachable`).

use super::doc::{Aggregate, RailRecord};
use crate::model::rails::RailThreshold;
use crate::model::Direction;
use crate::model::TestKind;
use crate::outcome::loss::Loss;
use crate::outcome::TestResult;
use crate::outcome::{Finding, Severity, Verdict};
use crate::outcome::{FindingId, Subject};
use crate::pair::sequence::Window;
use crate::pair::side::Side;
use crate::pair::verdict::{self, Criteria, JUDGED_MIN_SIZE};
use crate::perf::summary;
use crate::units;
use crate::units::rate as gbps;
use std::collections::BTreeMap;

/// `rail K (A DEV <-> B DEV)`: the rail and both NICs, each after its host.
pub fn subject(rail: usize, a: &Side, b: &Side) -> Subject {
    Subject::rail(rail, (&a.host, &a.device), (&b.host, &b.device))
}

/// One rail as run: its record, and each bandwidth result's window (same index as
/// `record.results`) for the aggregate. `unreachable`: why it did not run, if it did not.
#[derive(Debug, Clone)]
pub struct RailRun {
    pub record: RailRecord,
    pub windows: Vec<Option<Window>>,
    pub unreachable: Option<Idle>,
}

/// Why a rail did not run: typed until its finding says it.
#[derive(Debug, Clone, PartialEq)]
pub enum Idle {
    /// A port of it is not ACTIVE: (host, device, port) of each.
    PortsDown(Vec<(String, String, u32)>),
    /// Its test plan could not run: an agent was lost, refused, or fell silent.
    NotRun(Loss),
    /// No test reached its endpoints.
    NoEndpoints,
}

impl Idle {
    /// The reason in words, for the rail's finding.
    pub fn words(&self) -> String {
        match self {
            Idle::PortsDown(ports) => {
                ports.iter().map(|(host, device, port)| format!("{host}'s {device} port {port} is not ACTIVE")).collect::<Vec<_>>().join("; ")
            }
            Idle::NotRun(loss) => {
                let (cause, remedy) = crate::report::loss::words(loss);
                format!("{cause} ({remedy})")
            }
            Idle::NoEndpoints => "no test reached its endpoints".into(),
        }
    }
}

/// Values per test, direction and size, in the order the tests first came.
type Keyed<T> = Vec<((TestKind, Direction, u32), Vec<T>)>;

fn entry<T>(keyed: &mut Keyed<T>, key: (TestKind, Direction, u32)) -> &mut Vec<T> {
    let pos = keyed.iter().position(|(k, _)| *k == key).unwrap_or_else(|| {
        keyed.push((key, Vec::new()));
        keyed.len() - 1
    });
    &mut keyed[pos].1
}

/// The headline figure of a result for sibling comparison: bandwidth, or latency p50.
fn figure(r: &TestResult) -> Option<f64> {
    if r.error.is_some() {
        return None;
    }
    if r.test.is_latency() {
        r.lat_us.map(|l| l.p50)
    } else {
        r.bw_gbps
    }
}

/// Every rail's findings, the node aggregate and the verdict. `shared_bound_gbps`: a PCIe
/// bound several rails share (NICs behind one switch uplink), when known.
pub fn judge(
    rails: &[RailRun],
    criteria: &Criteria,
    threshold: RailThreshold,
    shared_bound_gbps: Option<f64>,
) -> (Verdict, Vec<Finding>, Vec<Aggregate>) {
    let mut findings = Vec::new();
    for run in rails {
        let (a, b) = (&run.record.a, &run.record.b);
        let subject = subject(run.record.rail, a, b);
        if let Some(why) = &run.unreachable {
            findings.push(Finding {
                id: FindingId::PairRailUnreachable,
                severity: Severity::Error,
                subject,
                message: format!("rail {} cannot reach its peer rail: {}", run.record.rail, why.words()),
                remedy: "check both ports with `fabcheck check` (state, GID, subnet) and that rail k of A is cabled to the leaf of rail k of B; the other rails still ran".into(),
                about: None,
            });
            continue;
        }
        // Against its own capacity, as `pair` judges one link; the rail is the subject.
        let (_, own) = verdict::judge(a, b, &run.record.results, criteria);
        for mut f in own {
            if f.id == FindingId::PairBw {
                f.id = FindingId::PairRail;
            }
            f.subject = subject.clone();
            findings.push(f);
        }
    }
    // A rail already below its own capacity is said once, by that finding.
    let own_bad: Vec<Subject> =
        findings.iter().filter(|f| f.id == FindingId::PairRail && f.severity == Severity::Error).map(|f| f.subject.clone()).collect();
    findings.extend(siblings(rails, threshold).into_iter().filter(|f| !own_bad.contains(&f.subject)));
    // A rail that drops packets its siblings do not, however fast it still is: said once.
    let named: Vec<Subject> =
        findings.iter().filter(|f| f.id == FindingId::PairRail && f.severity == Severity::Error).map(|f| f.subject.clone()).collect();
    findings.extend(lossy(rails).into_iter().filter(|f| !named.contains(&f.subject)));
    let aggregate = aggregate(rails, shared_bound_gbps);
    // The node total is judged when every rail is good: a bad rail already explains a low
    // total, and `pair.aggregate` is for what no single rail shows (a shared bound).
    if !findings.iter().any(|f| f.severity == Severity::Error) {
        findings.extend(judge_aggregate(rails, &aggregate, criteria));
    }
    let verdict = if findings.iter().any(|f| f.severity == Severity::Error) { Verdict::Fail } else { Verdict::Pass };
    (verdict, findings, aggregate)
}

/// Each rail against the median of its siblings (the other rails that ran the same test),
/// per test, direction and size.
fn siblings(rails: &[RailRun], threshold: RailThreshold) -> Vec<Finding> {
    let mut by_key: Keyed<(usize, f64)> = Vec::new();
    for (i, run) in rails.iter().enumerate().filter(|(_, r)| r.unreachable.is_none()) {
        for r in &run.record.results {
            if let Some(x) = figure(r) {
                entry(&mut by_key, (r.test, r.direction, r.size)).push((i, x));
            }
        }
    }
    let mut findings = Vec::new();
    for ((test, direction, size), values) in by_key {
        if values.len() < 2 {
            continue;
        }
        for &(i, x) in &values {
            let others: Vec<f64> = values.iter().filter(|(j, _)| *j != i).map(|(_, v)| *v).collect();
            let m = crate::units::median(others).unwrap_or(f64::NAN);
            let (bad, words) = if test.is_latency() {
                (
                    x > threshold.lat_factor * m,
                    format!(
                        "p50 {} us, above {}x its sibling rails' median {} us",
                        units::three(x),
                        units::three(threshold.lat_factor),
                        units::three(m)
                    ),
                )
            } else {
                (
                    x < threshold.bw_fraction * m,
                    format!(
                        "{} Gb/s, below {}% of its sibling rails' median {} Gb/s",
                        units::measured_gbps(x),
                        units::three(threshold.bw_fraction * 100.0),
                        units::measured_gbps(m)
                    ),
                )
            };
            if bad {
                let run = &rails[i];
                findings.push(Finding {
                    id: FindingId::PairRail,
                    severity: Severity::Error,
                    subject: subject(run.record.rail, &run.record.a, &run.record.b),
                    message: format!("rail {} {test} {direction} {size} B: {words}", run.record.rail),
                    remedy: "this rail alone is slow: check its cable, transceiver and switch port (`fabcheck check` on both nodes), its PCIe slot, and the CPU its loop ran on".into(),
                    about: None,
                });
            }
        }
    }
    findings
}

/// Counters that rise when a packet went missing: the receiver saw a PSN out of sequence (and
/// NAKed it), or the sender got such a NAK. mlx5 and rxe names. Not the timeout retries
/// (`local_ack_timeout_err`, rxe's `completer_retry_err`), which a starved CPU raises without
/// any loss, nor `duplicate_request`, which counts a whole resent window.
const SEQUENCE_ERRORS: [&str; 4] = ["out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "rcvd_seq_err"];
/// Sequence errors from which one rail's are judged against its siblings'.
const LOSSY_MIN: u64 = 20;
/// How many times its siblings' median (at least 1) a lossy rail's sequence errors are.
const LOSSY_FACTOR: u64 = 10;

/// The sequence errors a rail's tests raised (both ends, every test), and each counter's rise.
fn sequence_errors(run: &RailRun) -> (u64, Vec<String>) {
    let mut total = 0;
    let mut by_name: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &run.record.results {
        for (name, rise) in &r.counters {
            if SEQUENCE_ERRORS.contains(&name.split(':').nth(1).unwrap_or(name)) {
                total += rise;
                *by_name.entry(name.as_str()).or_default() += rise;
            }
        }
    }
    (total, by_name.into_iter().map(|(n, v)| format!("{n} +{v}")).collect())
}

/// Each rail's packet loss against its siblings': a rail whose tests raised [`LOSSY_MIN`] or
/// more sequence errors, [`LOSSY_FACTOR`] times its siblings' median, drops packets on its own
/// link (cable, optic, switch port, a lossless class missing on its switch port), even when its
/// bandwidth still passes. Works with no capacity known, as the bandwidth comparison does.
fn lossy(rails: &[RailRun]) -> Vec<Finding> {
    let ran: Vec<(&RailRun, (u64, Vec<String>))> = rails.iter().filter(|r| r.unreachable.is_none()).map(|r| (r, sequence_errors(r))).collect();
    if ran.len() < 2 {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for (i, (run, (errors, which))) in ran.iter().enumerate() {
        let others: Vec<f64> = ran.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, (_, (e, _)))| *e as f64).collect();
        let m = crate::units::median(others).unwrap_or(f64::NAN);
        if *errors < LOSSY_MIN || (*errors as f64) < (LOSSY_FACTOR as f64) * m.max(1.0) {
            continue;
        }
        findings.push(Finding {
            id: FindingId::PairRail,
            severity: Severity::Error,
            subject: subject(run.record.rail, &run.record.a, &run.record.b),
            message: format!(
                "rail {} drops packets: {errors} sequence errors ({}) against a median of {} on its sibling rails",
                run.record.rail,
                which.join(", "),
                units::three(m)
            ),
            remedy: "this rail's link loses packets the other rails do not: check its cable and transceiver (`fabcheck check` on both \
                     nodes: link.errors, phy.*), its switch port's error counters and, on RoCE, that its switch port has the lossless \
                     class (PFC) the other rails' ports have"
                .into(),
            about: None,
        });
    }
    findings
}

/// The node's total per bandwidth test, direction and size: all rails' bytes over the union of
/// their windows (first start to last end), never a sum of separately timed figures.
pub fn aggregate(rails: &[RailRun], shared_bound_gbps: Option<f64>) -> Vec<Aggregate> {
    let mut by_key: Keyed<(usize, Window)> = Vec::new();
    for (i, run) in rails.iter().enumerate().filter(|(_, r)| r.unreachable.is_none()) {
        for (r, w) in run.record.results.iter().zip(&run.windows) {
            let (Some(w), None) = (w, &r.error) else { continue };
            entry(&mut by_key, (r.test, r.direction, r.size)).push((i, *w));
        }
    }
    by_key
        .into_iter()
        .map(|((test, direction, size), windows)| {
            let start = windows.iter().map(|(_, w)| w.start).min().expect("one window");
            let end = windows.iter().map(|(_, w)| w.start + std::time::Duration::from_nanos(w.elapsed_ns)).max().expect("one window");
            let span = u64::try_from((end - start).as_nanos()).unwrap_or(u64::MAX);
            let bytes: u64 = windows.iter().map(|(_, w)| w.bytes).sum();
            let messages: u64 = windows.iter().map(|(_, w)| w.messages).sum();
            let capacities: Vec<Option<f64>> =
                windows.iter().map(|(i, _)| verdict::capacity(&rails[*i].record.a, &rails[*i].record.b).map(|c| c.gbps)).collect();
            let sum = capacities.iter().copied().sum::<Option<f64>>();
            let capacity_gbps = match (sum, shared_bound_gbps) {
                (Some(s), Some(b)) => Some(s.min(b)),
                (s, b) => s.or(b),
            };
            Aggregate {
                test,
                direction,
                size,
                rails: windows.len(),
                bw_gbps: summary::gbps(bytes, span),
                msg_rate_mpps: summary::mpps(messages, span),
                capacity_gbps,
            }
        })
        .collect()
}

/// `pair.aggregate`: the node total at the largest judged size of each test and direction,
/// below `--threshold` of its capacity. Soft-RoCE (no real capacity) is not judged here.
fn judge_aggregate(rails: &[RailRun], aggregate: &[Aggregate], criteria: &Criteria) -> Vec<Finding> {
    let soft = rails.iter().any(|r| {
        crate::probe::catype::CaKind::of(&r.record.a.ca_type).is_software() || crate::probe::catype::CaKind::of(&r.record.b.ca_type).is_software()
    });
    if soft {
        return Vec::new();
    }
    let mut largest: BTreeMap<(&str, &str), &Aggregate> = BTreeMap::new();
    for g in aggregate.iter().filter(|g| g.size >= JUDGED_MIN_SIZE) {
        let e = largest.entry((g.test.name(), g.direction.name())).or_insert(g);
        if g.size > e.size {
            *e = g;
        }
    }
    let (a, b) = rails.first().map(|r| (r.record.a.host.clone(), r.record.b.host.clone())).unwrap_or_default();
    largest
        .values()
        .filter_map(|g| {
            let cap = g.capacity_gbps?;
            (g.bw_gbps < criteria.bw_fraction * cap).then(|| Finding {
                id: FindingId::PairAggregate,
                severity: Severity::Error,
                subject: (format!("{a} <-> {b} ({} rails)", g.rails)).into(),
                message: format!(
                    "{} {} {} B over {} rails at once: {} Gb/s, below {}% of the node's {} Gb/s",
                    g.test,
                    g.direction,
                    g.size,
                    g.rails,
                    units::measured_gbps(g.bw_gbps),
                    units::three(criteria.bw_fraction * 100.0),
                    gbps(cap.round())
                ),
                remedy: "every rail may pass alone while the node cannot feed them all: look for a shared bound (PCIe switch uplink, socket, memory bandwidth) and at the CPUs the rails ran on".into(),
                about: None,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
