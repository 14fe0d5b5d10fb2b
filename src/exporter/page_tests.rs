use super::*;
use crate::outcome::FindingId;
use crate::outcome::{Check, Finding, Status};
use crate::probe::tree::SysfsRoot;
use crate::report::prom::metrics;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn reading_of(name: &str) -> Reading {
    let tree = SysfsRoot::at(fixture(name));
    let inventory = tree.inventory();
    assert!(!inventory.devices.is_empty(), "fixture {name} has no devices");
    let counters = inventory
        .ports()
        .map(|(d, p)| PortCounters { device: d.name.clone(), port: p.port, values: crate::probe::counters::read(&tree, &d.name, p.port) })
        .collect();
    Reading { inventory: Some(inventory), counters, ..Reading::default() }
}

fn stats() -> Stats {
    Stats { refreshed_unix_s: 1_764_000_000.5, duration_s: 0.25, interval_s: 60.0, refreshes: 3, failures: 1, seen: BTreeSet::new() }
}

/// Every sample line as (name, labels, value); checks that each family is declared once,
/// before its samples.
fn samples(page: &str) -> Vec<(String, String, f64)> {
    let mut declared = BTreeSet::new();
    let mut out = Vec::new();
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(declared.insert(name.clone()), "{name} declared twice");
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n.to_string(), l.trim_end_matches('}').to_string()),
            None => (series.to_string(), String::new()),
        };
        assert!(declared.contains(&name), "{name} has no TYPE before it");
        out.push((name, labels, value.parse().unwrap()));
    }
    out
}

fn value(page: &str, name: &str, labels: &str) -> f64 {
    samples(page).into_iter().find(|(n, l, _)| n == name && l == labels).unwrap_or_else(|| panic!("no {name}{{{labels}}} in\n{page}")).2
}

#[test]
fn a_healthy_hdr_node_has_every_port_figure() {
    let page = render(&reading_of("hdr-ib-healthy"), &stats(), Exposition::Text);
    let port = r#"device="mlx5_0",port="1",netdev="ib0""#;
    let port = if page.contains(port) { port.to_string() } else { r#"device="mlx5_0",port="1""#.to_string() };
    assert_eq!(value(&page, "fabcheck_up", ""), 1.0);
    assert_eq!(value(&page, "fabcheck_devices", ""), 2.0);
    assert_eq!(value(&page, "fabcheck_port_active", &port), 1.0);
    assert_eq!(value(&page, "fabcheck_port_state", &port), 4.0);
    assert_eq!(value(&page, "fabcheck_port_link_up", &port), 1.0);
    assert_eq!(value(&page, "fabcheck_port_physical_state", &port), 5.0);
    assert_eq!(value(&page, "fabcheck_port_rate_bytes_per_second", &port), 25e9);
    assert_eq!(value(&page, "fabcheck_exporter_refreshes_total", ""), 3.0);
    // The data counters are in bytes: the file counts 4-byte words.
    let words: f64 =
        std::fs::read_to_string(fixture("hdr-ib-healthy/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data")).unwrap().trim().parse().unwrap();
    assert!(words > 0.0, "the fixture's port_xmit_data is 0: the test would prove nothing");
    assert_eq!(value(&page, "fabcheck_port_data_transmitted_bytes_total", &port), words * 4.0);
    assert!(page.contains("# TYPE fabcheck_port_symbol_error_total counter\n"), "{page}");
    // node_exporter's names, HELP that says what is counted and where from.
    assert!(page.contains("# HELP fabcheck_port_errors_received_total Packets received with an error"), "{page}");
    assert!(page.contains("# TYPE fabcheck_port_discards_transmitted_total counter\n"), "{page}");
    assert!(!page.contains("fabcheck_port_port_") && !page.contains("fabcheck_port_xmit_data_bytes_total"), "0.3's stuttering names:\n{page}");
    // Without a check, no verdict is claimed.
    assert!(!page.contains("fabcheck_verdict_pass"));
}

#[test]
fn every_series_is_unique_and_every_port_series_names_its_port() {
    for fixture in ["hdr-ib-healthy", "roce-healthy-cx7", "rxe-veth", "ib-down-polling"] {
        let page = render(&reading_of(fixture), &stats(), Exposition::Text);
        let all = samples(&page);
        let mut seen = BTreeSet::new();
        for (name, labels, _) in &all {
            assert!(seen.insert((name.clone(), labels.clone())), "{fixture}: {name}{{{labels}}} twice");
            if name.starts_with("fabcheck_port_") {
                assert!(labels.starts_with("device=\"") && labels.contains(",port=\""), "{fixture}: {name}{{{labels}}}");
                assert!(!labels.contains("=\"\""), "{fixture}: an empty label in {name}{{{labels}}}");
            }
        }
    }
}

#[test]
fn rxe_hw_counters_are_their_own_families() {
    let page = render(&reading_of("rxe-veth"), &stats(), Exposition::Text);
    assert!(page.contains("# TYPE fabcheck_port_hw_rcvd_pkts_total counter"), "{page}");
    assert!(page.contains("# HELP fabcheck_port_hw_rcvd_pkts_total The port's counter file hw_counters/rcvd_pkts,"), "{page}");
    assert!(!page.contains("lifespan"), "{page}");
}

#[test]
fn a_port_that_is_down_says_so() {
    let page = render(&reading_of("ib-down-polling"), &stats(), Exposition::Text);
    let down: Vec<_> = samples(&page).into_iter().filter(|(n, _, v)| n == "fabcheck_port_active" && *v == 0.0).collect();
    assert!(!down.is_empty(), "{page}");
}

#[test]
fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
    let page = render(&reading_of("hdr-ib-healthy"), &stats(), Exposition::OpenMetrics);
    assert!(page.contains("# TYPE fabcheck_port_symbol_error counter\n"), "{page}");
    assert!(page.contains("# HELP fabcheck_port_symbol_error "), "{page}");
    assert!(page.contains("\nfabcheck_port_symbol_error_total{"), "{page}");
    assert!(page.contains("# TYPE fabcheck_exporter_refreshes counter\n"));
    assert!(page.ends_with("\n# EOF\n"));
    assert_eq!(page.matches("# EOF").count(), 1);
}

#[test]
fn a_device_seen_before_and_gone_now_is_absent() {
    let mut stats = stats();
    stats.seen.insert("mlx5_0".into());
    stats.seen.insert("mlx5_9".into());
    let page = render(&reading_of("hdr-ib-healthy"), &stats, Exposition::Text);
    assert_eq!(value(&page, "fabcheck_device_present", r#"device="mlx5_9""#), 0.0);
    assert_eq!(value(&page, "fabcheck_device_present", r#"device="mlx5_0""#), 1.0);
    assert_eq!(value(&page, "fabcheck_device_present", r#"device="mlx5_1""#), 1.0);
}

#[test]
fn a_read_that_failed_is_up_0_with_its_cause() {
    let reading = Reading { error: Some("sysfs tree /x holds no \"class/infiniband\"".into()), ..Reading::default() };
    let page = render(&reading, &stats(), Exposition::Text);
    assert_eq!(value(&page, "fabcheck_up", ""), 0.0);
    assert_eq!(value(&page, "fabcheck_exporter_refresh_error", r#"cause="sysfs tree /x holds no \"class/infiniband\"""#), 1.0);
    assert!(!page.contains("fabcheck_port_"), "{page}");
}

#[test]
fn the_check_verdict_rows_and_findings_are_written_once_each() {
    let mut reading = reading_of("hdr-ib-healthy");
    let check = |status| Check { id: FindingId::PortState, subject: "mlx5_0/1".into(), status, observed: "x".into(), expected: None, cause: None };
    let finding = |severity| Finding {
        id: FindingId::PortState,
        severity,
        subject: "mlx5_0/1 \"a\"\nb".into(),
        message: "m".into(),
        remedy: "r".into(),
        about: None,
    };
    reading.report = Some(Report {
        verdict: Verdict::Fail,
        checks: vec![check(Status::Pass), check(Status::Fail), check(Status::Pass)],
        findings: vec![finding(Severity::Error), finding(Severity::Error), finding(Severity::Warning)],
    });
    let page = render(&reading, &stats(), Exposition::Text);
    assert_eq!(value(&page, "fabcheck_verdict_pass", ""), 0.0);
    assert_eq!(value(&page, "fabcheck_check_pass", r#"id="port.state",subject="mlx5_0/1""#), 0.0);
    assert_eq!(value(&page, "fabcheck_finding", r#"id="port.state",severity="error",subject="mlx5_0/1 \"a\"\nb""#), 1.0);
    assert_eq!(value(&page, "fabcheck_findings", r#"severity="error""#), 2.0);
    assert_eq!(value(&page, "fabcheck_findings", r#"severity="info""#), 0.0);
    assert_eq!(page.matches("fabcheck_check_pass{").count(), 1);
}

#[test]
fn a_passing_row_with_an_error_finding_of_its_id_and_subject_fails() {
    let mut reading = reading_of("hdr-ib-healthy");
    let row = |id: &str| Check {
        id: FindingId::parse(id).unwrap(),
        subject: "node".into(),
        status: Status::Pass,
        observed: "0".into(),
        expected: None,
        cause: None,
    };
    let error = Finding {
        id: FindingId::DevicesCount,
        severity: Severity::Error,
        subject: "node".into(),
        message: "m".into(),
        remedy: "r".into(),
        about: None,
    };
    let info = Finding { id: FindingId::StackMemlock, severity: Severity::Info, ..error.clone() };
    let mut report = Report { verdict: Verdict::Fail, checks: vec![row("devices.count"), row("stack.memlock")], findings: vec![error, info] };
    // The node read settles every report it makes (rows follow their findings in one place,
    // as check's do); the page writes the rows as settled.
    report.settle();
    reading.report = Some(report);
    let page = render(&reading, &stats(), Exposition::Text);
    assert_eq!(value(&page, "fabcheck_check_pass", r#"id="devices.count",subject="node""#), 0.0);
    assert_eq!(value(&page, "fabcheck_check_pass", r#"id="stack.memlock",subject="node""#), 1.0);
}

#[test]
fn every_fixed_family_of_the_table_can_appear() {
    // The table is what docs/ci.md documents: a family never written would be a lie there.
    let mut reading = reading_of("ndr-ib-pcie-gen4");
    reading.error = Some("x".into());
    reading.report = Some(Report { verdict: Verdict::Pass, checks: vec![], findings: vec![] });
    let mut all = render(&reading, &stats(), Exposition::Text);
    all.push_str(&judged_page("roce-trained-low"));
    let page_with_checks = {
        let mut r = reading_of("hdr-ib-healthy");
        r.report = Some(Report {
            verdict: Verdict::Pass,
            checks: vec![Check {
                id: FindingId::PortState,
                subject: "b".into(),
                status: Status::Pass,
                observed: "".into(),
                expected: None,
                cause: None,
            }],
            findings: vec![Finding {
                id: FindingId::PortState,
                severity: Severity::Info,
                subject: "b".into(),
                message: "".into(),
                remedy: "".into(),
                about: None,
            }],
        });
        let mut s = stats();
        s.seen.insert("gone".into());
        render(&r, &s, Exposition::Text)
    };
    all.push_str(&page_with_checks);
    all.push_str(&render(&reading_of("roce-cx7-phy-clean"), &stats(), Exposition::Text));
    for phy in ["roce-cx7-dark-lane", "roce-bnxt-clean", "roce-cx6dx-fec-lane"] {
        all.push_str(&render(&reading_of(phy), &stats(), Exposition::Text));
    }
    all.push_str(&render(&with_aer(), &stats(), Exposition::Text));
    all.push_str(&render(&with_live(), &stats(), Exposition::Text));
    // The table also holds what only `--format prom` of the commands writes (0.3).
    for m in metrics::TABLE.iter().filter(|m| m.exporter) {
        if m.name == "fabcheck_port_mtu_bytes" || m.name == "fabcheck_port_supported_rate_bytes_per_second" {
            continue; // sysfs trees do not hold them on InfiniBand; live verbs does
        }
        assert!(all.contains(&format!("# TYPE {} ", m.name)), "{} never written", m.name);
    }
}

/// hdr-ib-healthy with the AER counters of its first NIC's function (Linux 6.x rows).
fn with_aer() -> Reading {
    use crate::probe::pci::health::aer::{parse, AerSeverity};
    use crate::probe::pci::health::{DevlinkRead, FunctionHealth, PcieHealth, Role};
    let mut reading = reading_of("hdr-ib-healthy");
    let mut aer = BTreeMap::new();
    aer.insert(AerSeverity::Correctable, parse("RxErr 2\nBadTLP 0\nBadDLLP 1\nTOTAL_ERR_COR 3\n"));
    aer.insert(AerSeverity::Fatal, parse("Undefined 0\nCmpltTO 0\nTOTAL_ERR_FATAL 0\n"));
    let function = FunctionHealth { bdf: "0000:17:00.0".into(), role: Role::Nic { name: "mlx5_0".into() }, aer, unreadable: vec![], mlx5: None };
    reading.pcie =
        Some(PcieHealth { functions: vec![function], nics: vec![], devlink: DevlinkRead::NotLooked, tree: true, live: false, uptime_s: None });
    reading
}

#[test]
fn aer_counters_are_written_per_function_with_their_totals() {
    let page = render(&with_aer(), &stats(), Exposition::Text);
    let series = |severity: &str, row: &str| format!(r#"function="0000:17:00.0",severity="{severity}",row="{row}""#);
    assert_eq!(value(&page, "fabcheck_pcie_aer_errors_total", &series("correctable", "TOTAL_ERR_COR")), 3.0);
    assert_eq!(value(&page, "fabcheck_pcie_aer_errors_total", &series("correctable", "RxErr")), 2.0);
    assert_eq!(value(&page, "fabcheck_pcie_aer_errors_total", &series("fatal", "TOTAL_ERR_FATAL")), 0.0, "a total is written at 0");
    assert!(!page.contains(r#"row="BadTLP""#), "a row at 0 is left out");
    assert!(page.contains("# TYPE fabcheck_pcie_aer_errors_total counter"));
}

/// The page of one read of a fixture, judged as the exporter judges it (the one node read and
/// checklist, `refresh::read_node`).
fn judged_page(name: &str) -> String {
    let reading = crate::exporter::refresh::read_node(&crate::probe::Source::Sysfs(fixture(name)), &Default::default(), &Default::default());
    assert!(reading.report.is_some(), "{name}: {:?}", reading.error);
    render(&reading, &stats(), Exposition::Text)
}

/// `fabcheck_port_trained_below_supported` is check's link.trained: a 400G NIC at the 200G its
/// switch port offers passes (0), though it runs below what it supports itself; one below what
/// its partner offers too fails (1); a port link.trained did not judge has no series.
#[test]
fn trained_below_supported_is_what_link_trained_says() {
    let port = r#"device="mlx5_0",port="1",netdev="ens2np0""#;
    let partner_limited = judged_page("roce-trained-low");
    assert!(
        value(&partner_limited, "fabcheck_port_rate_bytes_per_second", port)
            < value(&partner_limited, "fabcheck_port_supported_rate_bytes_per_second", port)
    );
    assert_eq!(value(&partner_limited, "fabcheck_check_pass", r#"id="link.trained",subject="mlx5_0/1""#), 1.0);
    assert_eq!(value(&partner_limited, "fabcheck_port_trained_below_supported", port), 0.0);
    let low = judged_page("roce-trained-low-400g-partner");
    assert_eq!(value(&low, "fabcheck_check_pass", r#"id="link.trained",subject="mlx5_0/1""#), 0.0);
    assert_eq!(value(&low, "fabcheck_port_trained_below_supported", port), 1.0);
    // Without a check there is no judgment to say.
    let unjudged = render(&reading_of("roce-trained-low"), &stats(), Exposition::Text);
    assert!(!unjudged.contains("fabcheck_port_trained_below_supported{"), "{unjudged}");
}

/// `--device` on the exporter is `check --device`'s: a device left out has no series at all (a
/// port meant to stay uncabled raises no alert), the named one is judged as before.
#[test]
fn the_exporter_judges_only_the_named_devices() {
    let scope = crate::diagnose::Scope { only: vec![("mlx5_0".into(), Some(1))] };
    let source = crate::probe::Source::Sysfs(fixture("roce-mtu-mismatch"));
    let reading = crate::exporter::refresh::read_node(&source, &Default::default(), &scope);
    let page = render(&reading, &stats(), Exposition::Text);
    assert!(page.contains(r#"subject="mlx5_0/1""#), "{page}");
    assert!(!page.contains("mlx5_1"), "mlx5_1 was not named: {page}");
    let whole = judged_page("roce-mtu-mismatch");
    assert!(whole.contains(r#"subject="mlx5_1/1""#), "without --device every port has its series");
}

fn with_phy(phy: Phy) -> Reading {
    let mut reading = reading_of("roce-healthy-cx7");
    let inventory = reading.inventory.as_mut().unwrap();
    let port = &mut inventory.devices[0].ports[0];
    port.phy = Some(phy);
    port.netdev = Some("ens2np0".into());
    reading.gpu_of.clear();
    reading
}

#[test]
fn the_physical_layer_is_written_per_port_and_per_lane() {
    use crate::probe::phy::fec::FecMode;
    use crate::probe::phy::module::{Media, Module, DARK_DBM};
    let module = Module {
        kind: Some("OSFP".into()),
        vendor: Some("NVIDIA".into()),
        part: Some("MMA4Z00-NS400".into()),
        serial: None,
        media: Some(Media::Optical),
        temperature_c: Some(41.5),
        rx_power_dbm: Some(vec![Some(0.0), Some(DARK_DBM)]),
        tx_power_dbm: Some(vec![Some(-10.0), None]),
        tx_bias_ma: Some(vec![Some(6.5), Some(6.6)]),
        flags: vec![],
    };
    let phy = Phy {
        fec: Some(FecMode::Rs544),
        ber_raw: Some(2.5e-8),
        ber_effective: None,
        symbol_errors: Some(0),
        corrected_bits: Some(5_123_456),
        received_bits: Some(800),
        lane_errors: vec![10, 0, 30, 40],
        fec_corrected_blocks: Some(120_345),
        fec_uncorrectable_blocks: None,
        link_down_events: Some(7),
        module: Some(module),
        ..Phy::default()
    };
    let reading = with_phy(phy);
    let page = render(&reading, &stats(), Exposition::Text);
    let (d, p) = reading.inventory.as_ref().unwrap().ports().next().unwrap();
    let port = format!(r#"device="{}",port="{}",netdev="ens2np0""#, d.name, p.port);
    let at = |extra: &str| if extra.is_empty() { port.clone() } else { format!("{port},{extra}") };
    assert_eq!(value(&page, "fabcheck_port_phy_fec_info", &at(r#"mode="RS-544""#)), 1.0);
    assert_eq!(value(&page, "fabcheck_port_phy_ber_raw_ratio", &at("")), 2.5e-8);
    assert_eq!(value(&page, "fabcheck_port_phy_symbol_errors_total", &at("")), 0.0);
    assert_eq!(value(&page, "fabcheck_port_phy_corrected_bit_errors_total", &at("")), 5_123_456.0);
    assert_eq!(value(&page, "fabcheck_port_phy_received_bytes_total", &at("")), 100.0);
    assert_eq!(value(&page, "fabcheck_port_phy_fec_corrected_blocks_total", &at("")), 120_345.0);
    assert_eq!(value(&page, "fabcheck_port_phy_link_down_events_total", &at("")), 7.0);
    for (lane, errors) in [(1, 10.0), (2, 0.0), (3, 30.0), (4, 40.0)] {
        assert_eq!(value(&page, "fabcheck_port_phy_lane_corrected_errors_total", &at(&format!(r#"lane="{lane}""#))), errors);
    }
    let info = at(r#"type="OSFP",vendor="NVIDIA",part="MMA4Z00-NS400",media="optical""#);
    assert_eq!(value(&page, "fabcheck_port_module_info", &info), 1.0);
    assert_eq!(value(&page, "fabcheck_port_module_temperature_celsius", &at("")), 41.5);
    assert_eq!(value(&page, "fabcheck_port_module_rx_power_watts", &at(r#"lane="1""#)), 0.001);
    assert_eq!(value(&page, "fabcheck_port_module_rx_power_watts", &at(r#"lane="2""#)), 0.0, "a dark lane is 0 W");
    assert!((value(&page, "fabcheck_port_module_tx_power_watts", &at(r#"lane="1""#)) - 1e-4).abs() < 1e-12);
    assert!((value(&page, "fabcheck_port_module_tx_bias_amperes", &at(r#"lane="2""#)) - 0.0066).abs() < 1e-12);
    // Not read: no series, never a 0.
    for absent in ["fabcheck_port_phy_ber_effective_ratio", "fabcheck_port_phy_fec_uncorrectable_blocks_total"] {
        assert!(!page.contains(&format!("\n{absent}{{")), "{absent} written though not read:\n{page}");
    }
    assert!(!samples(&page).iter().any(|(n, l, _)| n == "fabcheck_port_module_tx_power_watts" && l.ends_with(r#"lane="2""#)));
    assert!(!page.contains("serial="), "a label the module does not say is left out");
}

#[test]
fn a_port_without_a_phy_has_no_phy_series() {
    let page = render(&reading_of("hdr-ib-healthy"), &stats(), Exposition::Text);
    assert!(!page.contains("fabcheck_port_phy_") && !page.contains("fabcheck_port_module_"), "{page}");
}

#[test]
fn a_bundle_with_phy_reports_gives_phy_series() {
    let page = render(&reading_of("roce-cx7-phy-clean"), &stats(), Exposition::Text);
    let s = samples(&page);
    let has = |name: &str| s.iter().any(|(n, _, _)| n == name);
    for name in [
        "fabcheck_port_phy_fec_info",
        "fabcheck_port_phy_fec_corrected_blocks_total",
        "fabcheck_port_module_info",
        "fabcheck_port_module_rx_power_watts",
    ] {
        assert!(has(name), "no {name} in\n{page}");
    }
}

/// Hostile counter file names that come to one metric name, or to an OpenMetrics sample
/// suffix, make no second series and no clash: every series is unique (issue #58).
#[test]
fn hostile_counter_names_make_no_clash() {
    let mut reading = reading_of("rxe-veth");
    let hostile = ["evil-name", "evil.name", "EVIL_NAME", "evil_name_total", "x_created", "\u{1b}]52;c;x\u{7}", "a\nb"];
    for c in &mut reading.counters {
        for (i, name) in hostile.iter().enumerate() {
            c.values.push((CounterDir::Hardware, name.to_string(), i as u64));
        }
    }
    let page = render(&reading, &stats(), Exposition::Text);
    let all = samples(&page);
    let mut seen = BTreeSet::new();
    for (name, labels, _) in &all {
        assert!(seen.insert((name.clone(), labels.clone())), "{name}{{{labels}}} twice");
        assert!(!name.ends_with("_created") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name}");
    }
    assert!(page.contains("fabcheck_port_hw_evil_name_total{"), "the first of them is written");
    assert!(!page.contains('\u{1b}') && !page.contains('\u{7}'), "{page}");
}

/// The exporter judges the kernel log with the node, as `check` does (one ordered list of rule
/// families, the log's among them): the flapping fixture's link.flap is on its page's report.
#[test]
fn the_exporter_judges_the_kernel_log_with_the_node() {
    let reading =
        crate::exporter::refresh::read_node(&crate::probe::Source::Sysfs(fixture("roce-cx7-link-flaps")), &Default::default(), &Default::default());
    let report = reading.report.expect("the fixture is judged");
    assert!(report.findings.iter().any(|f| f.id == crate::outcome::FindingId::LinkFlap), "{:#?}", report.findings);
}

/// hdr-ib-healthy while a burn-in runs: one bandwidth and one latency test's last interval.
fn with_live() -> Reading {
    let mut r = reading_of("hdr-ib-healthy");
    let bw = crate::exporter::live::LiveFigure {
        pid: 7,
        test: "write_bw".into(),
        direction: Some("a->b".into()),
        size: Some(65536),
        endpoint: Some("n1 <-> n2".into()),
        gbps: Some(93.5),
        p50_us: None,
        p99_us: None,
        written_unix: 1000.0,
    };
    let lat = crate::exporter::live::LiveFigure { test: "send_lat".into(), gbps: None, p50_us: Some(1.5), p99_us: Some(2.0), ..bw.clone() };
    r.live = vec![bw, lat];
    r
}

/// The live figures as their families: bytes per second and seconds, labelled by test and run.
#[test]
fn a_running_burn_in_s_last_interval_is_on_the_page() {
    let page = render(&with_live(), &stats(), Exposition::Text);
    let line = |name: &str| page.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in\n{page}")).to_string();
    assert_eq!(
        line("fabcheck_live_bandwidth_bytes_per_second{"),
        r#"fabcheck_live_bandwidth_bytes_per_second{test="write_bw",direction="a->b",size="65536",endpoint="n1 <-> n2",pid="7"} 11687500000"#
    );
    assert!(line("fabcheck_live_latency_p99_seconds{").contains(r#"test="send_lat""#));
    assert!(line("fabcheck_live_latency_p99_seconds{").ends_with(" 0.000002"));
    assert_eq!(page.matches("fabcheck_live_timestamp_seconds{").count(), 2);
    let idle = render(&reading_of("hdr-ib-healthy"), &stats(), Exposition::Text);
    assert!(!idle.contains("fabcheck_live_"), "no run, no live series");
}
