//! `pair --validate`: `pair.data` from each test's receiving side's check (pure). See
//! `perf::validate` for who fills and who checks, docs/checks.md for the finding.

use crate::model::{DataCheck, Direction, TestKind};
use crate::outcome::{Finding, FindingId, Severity, TestResult};

/// The tests `--validate` checks.
pub fn checked(test: TestKind) -> bool {
    matches!(test, TestKind::SendBw | TestKind::WriteBw | TestKind::ReadBw)
}

/// The side (0 = A) whose agent checks a test: the receiver of the data.
fn receiver(test: TestKind, direction: Direction) -> Option<usize> {
    let (a_sends, b_sends) = (0, 1);
    match (direction, test) {
        (Direction::Bidi, _) => None,
        // A read's data flows to the reader, the active side.
        (Direction::AtoB, TestKind::ReadBw) => Some(a_sends),
        (Direction::BtoA, TestKind::ReadBw) => Some(b_sends),
        (Direction::AtoB, _) => Some(b_sends),
        (Direction::BtoA, _) => Some(a_sends),
    }
}

/// One finding per checked test that found bad data (error), and per checked test whose
/// receiver sent no check (warning: an older agent). `rail`: the two ends, as findings name them.
pub fn findings(rail: &str, results: &[TestResult], data: &[[Option<DataCheck>; 2]]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (r, sides) in results.iter().zip(data) {
        let Some(side) = receiver(r.test, r.direction).filter(|_| checked(r.test) && r.error.is_none()) else { continue };
        let what = format!("{} {} {} B", r.test, r.direction, r.size);
        match sides[side] {
            None => out.push(Finding {
                id: FindingId::PairData,
                severity: Severity::Warning,
                subject: rail.to_string().into(),
                message: format!("{what}: the receiving agent did not check the data (--validate needs fabcheck 0.5 on both nodes)"),
                remedy: "install the same fabcheck version on every node".into(),
                about: None,
            }),
            Some(check) => {
                if let Some(m) = check.first.filter(|_| check.bad > 0) {
                    let message = m.message.map_or("the last message".to_string(), |n| format!("message {n}"));
                    out.push(Finding {
                        id: FindingId::PairData,
                        severity: Severity::Error,
                        subject: rail.to_string().into(),
                        message: format!(
                            "{what}: {} of {} messages checked arrived changed; first: {message}, offset {}, bits {:#010b} differ \
                             (expected {:#04x}, got {:#04x}; {} bytes differ; pattern seed {:#x})",
                            check.bad,
                            check.checked,
                            m.offset,
                            m.bits(),
                            m.expected,
                            m.got,
                            m.bytes,
                            check.seed
                        ),
                        remedy: "data changed between memory and the wire without a transport error: look at pcie.aer on both nodes \
                                 (`fabcheck check`), reseat the adapter, then swap it"
                            .into(),
                        about: None,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DataMismatch;

    fn result(test: TestKind, direction: Direction) -> TestResult {
        TestResult {
            paths: Vec::new(),
            test,
            direction,
            size: 65536,
            iterations: 5000,
            qps: 1,
            lat_us: None,
            bw_gbps: Some(90.0),
            peak_gbps: None,
            msg_rate_mpps: None,
            counters: Default::default(),
            error: None,
            remedy: None,
            under_load: None,
        }
    }

    #[test]
    fn a_mismatch_names_rail_test_message_offset_and_bits() {
        let bad = DataCheck {
            seed: 0xabc,
            checked: 5500,
            bad: 3,
            first: Some(DataMismatch { message: Some(812), offset: 4100, expected: 0x5a, got: 0x4a, bytes: 1 }),
        };
        let good = DataCheck { seed: 0xabc, checked: 1, bad: 0, first: None };
        let results = [result(TestKind::SendBw, Direction::AtoB), result(TestKind::WriteBw, Direction::BtoA)];
        let f = findings("n1/mlx5_0 <-> n2/mlx5_0", &results, &[[None, Some(bad)], [Some(good), None]]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].id, f[0].severity), (FindingId::PairData, Severity::Error));
        assert_eq!(f[0].subject.to_string(), "n1/mlx5_0 <-> n2/mlx5_0");
        let m = &f[0].message;
        assert!(m.starts_with("send_bw a->b 65536 B: 3 of 5500 messages checked arrived changed"), "{m}");
        assert!(m.contains("message 812, offset 4100, bits 0b00010000 differ"), "{m}");
    }

    #[test]
    fn the_reader_checks_a_read_and_a_missing_check_is_a_warning() {
        let results =
            [result(TestKind::ReadBw, Direction::AtoB), result(TestKind::WriteBw, Direction::Bidi), result(TestKind::SendLat, Direction::AtoB)];
        let f = findings("r", &results, &[[None, Some(DataCheck { seed: 1, checked: 1, bad: 0, first: None })], [None, None], [None, None]]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.starts_with("read_bw a->b"), "{}", f[0].message);
    }
}
