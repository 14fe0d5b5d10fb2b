use super::*;
use crate::model::{Direction, LatencySummary, TestKind};
use crate::outcome::FindingId;
use crate::outcome::SuspectKind;

fn scrape(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("valid exposition")
}

fn get(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) => v,
            _ => f64::NAN,
        })
        .collect()
}

fn bw(gbps: f64) -> TestResult {
    TestResult {
        paths: Vec::new(),
        test: TestKind::WriteBw,
        direction: Direction::AtoB,
        size: 65536,
        iterations: 1,
        qps: 1,
        lat_us: None,
        bw_gbps: Some(gbps),
        peak_gbps: None,
        msg_rate_mpps: None,
        counters: Default::default(),
        error: None,
        remedy: None,
        under_load: None,
    }
}

#[test]
fn mesh_has_a_series_per_pair_test_and_direction_and_suspect_counts() {
    let mut p = PromPrinter::new(Command::Mesh, Some(Verdict::Fail), false);
    p.finding(&Finding::new(FindingId::MeshSuspect, Severity::Error, "n1 <-> n2", "flaky", ""));
    let lat = TestResult {
        test: TestKind::SendLat,
        lat_us: Some(LatencySummary { min: 1.0, p50: 1.9, p90: 2.0, p99: 2.5, p999: 3.0, max: 4.0, mean: 2.0, stdev: 0.1, preempt: None }),
        bw_gbps: None,
        size: 2,
        ..bw(0.0)
    };
    let (first, second) = ([lat, bw(90.0)], [bw(190.0)]);
    p.measure(&Measure::MeshPair {
        subject: &Subject::pair("n1", "n2"),
        rail: None,
        verdict: Verdict::Pass,
        results: &[bw(191.0)],
        error: None,
        blame: Default::default(),
    });
    p.measure(&Measure::MeshPair {
        subject: &Subject::pair("n1", "n3"),
        rail: None,
        verdict: Verdict::Pass,
        results: &second,
        error: None,
        blame: Default::default(),
    });
    p.measure(&Measure::MeshPair {
        subject: &Subject::pair("n2", "n3"),
        rail: None,
        verdict: Verdict::Fail,
        results: &first,
        error: None,
        blame: Default::default(),
    });
    p.tally(&Tally::Suspects { kind: SuspectKind::Node, count: 0 });
    p.tally(&Tally::Suspects { kind: SuspectKind::Link, count: 1 });
    p.tally(&Tally::Unreachable(0));
    p.tally(&Tally::Endpoints(3));
    let s = scrape(&p.finish(1.0));
    let pair = [("a", "n1"), ("b", "n2"), ("test", "write_bw"), ("direction", "a->b"), ("size", "65536")];
    assert_eq!(get(&s, "fabcheck_bandwidth_bytes_per_second", &pair), [191.0e9 / 8.0]);
    assert_eq!(get(&s, "fabcheck_bandwidth_bytes_per_second", &[]).len(), 3);
    assert_eq!(get(&s, "fabcheck_latency_p50_seconds", &[("a", "n2"), ("test", "send_lat")]), [1.9 * 1e-6]);
    assert_eq!(get(&s, "fabcheck_mesh_suspects", &[("kind", "link")]), [1.0]);
    assert_eq!(get(&s, "fabcheck_mesh_suspects", &[("kind", "node")]), [0.0]);
    assert_eq!(get(&s, "fabcheck_mesh_pair_pass", &[("a", "n2"), ("b", "n3")]), [0.0]);
    assert_eq!(get(&s, "fabcheck_verdict_pass", &[("command", "mesh")]), [0.0]);
    assert_eq!(get(&s, "fabcheck_up", &[("command", "mesh")]), [1.0]);
    assert_eq!(get(&s, "fabcheck_finding", &[("id", "mesh.suspect"), ("subject", "n1 <-> n2")]), [1.0]);
}

#[test]
fn figures_are_in_base_units_from_the_table() {
    let mut p = PromPrinter::new(Command::Devices, None, false);
    p.measure(&Measure::Port { subject: &Subject::port("mlx5_0", 1), active: true, link_up: true, rate_gbps: Some(200.0), supported_gbps: None });
    p.measure(&Measure::PcieUsable { subject: &Subject::device("mlx5_0"), gbps: 230.0 });
    let text = p.finish(1.0);
    assert!(text.contains("\nfabcheck_port_rate_bytes_per_second{device=\"mlx5_0\",port=\"1\"} 25000000000\n"), "{text}");
    assert!(!text.contains("verdict_pass"), "devices has no verdict:\n{text}");
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let name = line.split(' ').nth(2).unwrap();
        let known = metrics::TABLE.iter().any(|m| m.name == name && m.format_labels.is_some())
            || metrics::DEPRECATED.iter().any(|d| d.old == name && d.written);
        assert!(known, "{name} is not in the metric table");
    }
    assert!(!text.lines().any(|l| l.starts_with("# TYPE ") && l.contains("_us ")), "promtool refuses abbreviated units:\n{text}");
}

#[test]
fn the_checklist_series_pass_warn_unless_asked_skip_none_and_a_repeat_that_fails_fails() {
    let row = |id, subject: &str, status| Check { id, subject: subject.into(), status, observed: String::new(), expected: None, cause: None };
    let checks = [
        row(FindingId::PortState, "mlx5_0/1", Status::Pass),
        row(FindingId::PcieBound, "mlx5_0", Status::Warn),
        row(FindingId::PhyModule, "mlx5_0/1", Status::Skip),
        row(FindingId::StackService, "node", Status::Pass),
        row(FindingId::StackService, "node", Status::Fail),
    ];
    let series = |fow| check_series(&checks, fow).into_iter().map(|(id, s, pass)| (id.as_str(), s.to_string(), pass)).collect::<Vec<_>>();
    let want = |warn| {
        vec![("port.state", "mlx5_0/1".to_string(), true), ("pcie.bound", "mlx5_0".to_string(), warn), ("stack.service", "node".to_string(), false)]
    };
    assert_eq!(series(false), want(true));
    assert_eq!(series(true), want(false), "--fail-on warning");
}

#[test]
fn a_run_that_could_not_run_says_up_0_and_why_and_no_verdict() {
    let text = error_page("check", "cannot open /sys/class/infiniband: \"gone\" $(x)", 5.0);
    assert!(text.contains("\nfabcheck_up{command=\"check\"} 0\n"), "{text}");
    assert!(text.contains("fabcheck_run_error{command=\"check\",cause=\"cannot open /sys/class/infiniband: _gone_ _(x)\"} 1"), "{text}");
    assert!(!text.contains("verdict_pass"), "{text}");
    scrape(&text);
}
