//! `pair.qos`: which priority a pair's test bytes rode on each RoCE end (mlx5's
//! `rx_prioN_bytes` and `tx_prioN_bytes` over each test), and whether PFC held it. Bytes on a
//! priority without PFC, on a port that has PFC on another priority, is an error naming both:
//! the test measured the lossy class, and so will the application that sets the same ToS.
//! Where an end has no per-priority counters (Soft-RoCE's veth) an info says so. Pure: the
//! agents' counts come in.

use super::{Finding, Severity};
use crate::model::traffic::{NoCounters, PrioTraffic};
use crate::outcome::FindingId;
use crate::probe::qos::{list, Priority};
use std::collections::BTreeMap;

/// A test below this many bytes on a port (a latency test's few kilobytes) says little about
/// its priority against the port's other traffic: not counted.
const MIN_BYTES: u64 = 1 << 20;
/// A priority that carried at least a quarter of a test's bytes rode it.
const SHARE: u64 = 4;

/// One end of the pair, as the judgment needs it.
pub struct PairEnd {
    /// `host/device`, as pair's findings name ends.
    pub name: String,
    pub roce: bool,
    pub soft_roce: bool,
    /// The ToS the tests ran with (`--tclass`, or the end's RoCE DSCP's).
    pub tclass: Option<u8>,
    /// Where that ToS came from when no `--tclass` was given.
    pub tclass_source: Option<crate::model::TclassSource>,
}

/// One test's traffic on both ends (`None`: an older agent, or no RoCE port).
pub struct TestTraffic<'a> {
    /// `write_bw a->b 65536 B`.
    pub label: String,
    pub sides: [Option<&'a PrioTraffic>; 2],
}

/// What each priority carried on one end over the tests that moved enough.
#[derive(Default)]
struct Rode {
    bytes: BTreeMap<Priority, u64>,
    first_test: BTreeMap<Priority, String>,
    tests: BTreeMap<Priority, usize>,
    pfc: Option<[bool; 8]>,
    missing: Option<NoCounters>,
    counted: usize,
}

pub fn judge(ends: &[PairEnd; 2], same_port: bool, tests: &[TestTraffic<'_>], subject: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let sides = if same_port { 1 } else { 2 };
    for (i, end) in ends.iter().enumerate().take(sides) {
        if !end.roce {
            continue;
        }
        let rode = tally(tests, i);
        findings.extend(end_findings(end, &rode, subject));
    }
    findings
}

fn tally(tests: &[TestTraffic<'_>], side: usize) -> Rode {
    let mut r = Rode::default();
    for t in tests {
        let Some(traffic) = t.sides[side] else { continue };
        r.pfc = traffic.pfc.or(r.pfc);
        let Some(total) = traffic.total() else {
            r.missing = r.missing.or(traffic.missing);
            continue;
        };
        let sum: u64 = total.iter().sum();
        if sum < MIN_BYTES {
            continue;
        }
        r.counted += 1;
        for p in Priority::all() {
            let b = total[p.index()];
            if b.saturating_mul(SHARE) >= sum {
                *r.bytes.entry(p).or_default() += b;
                *r.tests.entry(p).or_default() += 1;
                r.first_test.entry(p).or_insert_with(|| t.label.clone());
            }
        }
    }
    r
}

fn end_findings(end: &PairEnd, r: &Rode, subject: &str) -> Vec<Finding> {
    let name = &end.name;
    let finding = |severity, message: String, remedy: String| Finding {
        id: FindingId::PairQos,
        severity,
        subject: subject.to_string().into(),
        message,
        remedy,
        about: None,
    };
    if r.bytes.is_empty() {
        if r.counted > 0 {
            return Vec::new();
        }
        let Some(missing) = r.missing else { return Vec::new() };
        let soft = end.soft_roce && matches!(missing, NoCounters::NoPriorityCounters | NoCounters::EthtoolMissing | NoCounters::EthtoolFailed);
        let why = match missing {
            _ if soft => "is Soft-RoCE (rxe): its netdev has no per-priority counters",
            NoCounters::NoPriorityCounters => "has no per-priority counters (`ethtool -S` prints no rx_prioN_bytes)",
            NoCounters::EthtoolMissing => "has no `ethtool` installed to read its per-priority counters",
            NoCounters::EthtoolFailed => "did not answer `ethtool -S`",
            NoCounters::NoNetdev => "has no netdev known for the port",
            NoCounters::Reset => "had its counters cleared during the tests",
        };
        return vec![finding(
            Severity::Info,
            format!("{name} {why}, so which priority the tests' bytes rode is not known"),
            "on ConnectX ports `ethtool -S IF | grep prio` shows them; `fabcheck check` on the node judges the lossless set-up (roce.qos)".into(),
        )];
    }
    let tclass = match (end.tclass, end.tclass_source) {
        (Some(t), Some(source)) => format!("the tests ran with ToS {t} (DSCP {}) from {}", t >> 2, source.words()),
        (Some(t), None) => format!("the tests ran with --tclass {t} (DSCP {})", t >> 2),
        (None, _) => "the tests ran without --tclass (ToS 0, DSCP 0)".into(),
    };
    let pfc_on: Option<Vec<Priority>> = r.pfc.map(|pfc| Priority::all().filter(|p| pfc[p.index()]).collect());
    let mut out = Vec::new();
    let mut held = Vec::new();
    for (&p, &bytes) in &r.bytes {
        match &pfc_on {
            Some(on) if !on.is_empty() && !on.contains(&p) => out.push(finding(
                Severity::Error,
                format!(
                    "on {name} the tests' bytes rode priority {p} ({} in {} test{}, {} first), which has no PFC; PFC is on {} there: the traffic ran lossy ({tclass})",
                    bytes_words(bytes),
                    r.tests[&p],
                    if r.tests[&p] == 1 { "" } else { "s" },
                    r.first_test[&p],
                    list(on)
                ),
                format!(
                    "run the tests in the class PFC holds: the --tclass whose DSCP the port maps to priority {} (106, DSCP 26, where the port trusts DSCP and maps 26 to 3; NCCL's NCCL_IB_TC is the same byte); `fabcheck check` on {name} names its RoCE priority and why (roce.qos)",
                    list(on)
                ),
            )),
            _ => held.push(p),
        }
    }
    if out.is_empty() {
        let pfc_words = match &pfc_on {
            Some(on) if on.is_empty() => "PFC is off on every priority of that port".to_string(),
            Some(on) => format!("PFC on {}", list(on)),
            None => "its PFC not read".into(),
        };
        out.push(finding(
            Severity::Info,
            format!("on {name} the tests' bytes rode priority {} ({pfc_words}; {tclass})", list(&held)),
            "nothing to do; `fabcheck check` judges the rest of the lossless set-up (roce.qos)".into(),
        ));
    }
    out
}

fn bytes_words(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30))
    } else {
        format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(name: &str, soft: bool) -> PairEnd {
        PairEnd { name: name.into(), roce: true, soft_roce: soft, tclass: Some(106), tclass_source: None }
    }

    fn traffic(p: usize, bytes: u64, pfc_on: &[usize]) -> PrioTraffic {
        let mut tx = [0; 8];
        tx[p] = bytes;
        tx[6] = 4096; // CNPs and background: under a quarter, not "rode"
        PrioTraffic { tx_bytes: Some(tx), rx_bytes: Some([0; 8]), pfc: Some(std::array::from_fn(|q| pfc_on.contains(&q))), missing: None }
    }

    #[test]
    fn bytes_on_a_priority_without_pfc_beside_one_with_it_is_an_error_naming_both() {
        let a = traffic(0, 5 << 30, &[3]);
        let b = traffic(3, 5 << 30, &[3]);
        let tests = [TestTraffic { label: "write_bw a->b 65536 B".into(), sides: [Some(&a), Some(&b)] }];
        let f = judge(&[end("n1/mlx5_0", false), end("n2/mlx5_0", false)], false, &tests, "n1/mlx5_0 <-> n2/mlx5_0");
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message.contains(
                "on n1/mlx5_0 the tests' bytes rode priority 0 (5.0 GiB in 1 test, write_bw a->b 65536 B first), which has no PFC; PFC is on 3"
            ),
            "{}",
            f[0].message
        );
        assert_eq!(f[1].severity, Severity::Info);
        assert!(
            f[1].message.contains("on n2/mlx5_0 the tests' bytes rode priority 3 (PFC on 3; the tests ran with --tclass 106 (DSCP 26))"),
            "{}",
            f[1].message
        );
    }

    #[test]
    fn no_pfc_anywhere_small_tests_and_missing_counters() {
        let a = traffic(0, 5 << 30, &[]);
        let tests = [TestTraffic { label: "write_bw".into(), sides: [Some(&a), None] }];
        let f = judge(&[end("a", false), end("b", false)], false, &tests, "s");
        assert_eq!((f.len(), f[0].severity), (1, Severity::Info), "no PFC elsewhere: said, not an error: {f:#?}");
        let tiny = traffic(0, 4096, &[3]);
        let f = judge(&[end("a", false), end("b", false)], false, &[TestTraffic { label: "send_lat".into(), sides: [Some(&tiny), None] }], "s");
        assert!(f.is_empty(), "{f:#?}");
        let none = PrioTraffic { missing: Some(NoCounters::NoPriorityCounters), ..PrioTraffic::default() };
        let tests = [TestTraffic { label: "write_bw".into(), sides: [Some(&none), Some(&none)] }];
        let f = judge(&[end("h/rxe0", true), end("h/rxe0", true)], true, &tests, "s");
        assert_eq!(f.len(), 1, "one port under both agents: said once");
        assert!(f[0].message.contains("h/rxe0 is Soft-RoCE (rxe): its netdev has no per-priority counters"), "{}", f[0].message);
        let ib = PairEnd { roce: false, ..end("ib", false) };
        assert!(judge(&[ib, end("x", false)], false, &[], "s").is_empty());
    }
}
