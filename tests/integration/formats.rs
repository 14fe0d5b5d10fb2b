//! `--format oneline|prom|junit` and `--output`, read back by real parsers: a Prometheus
//! exposition parser and an XML parser, not string comparisons.

use super::{fabcheck, fixtures_dir, json};

fn run(fixture: &str, command: &str, extra: &[&str]) -> std::process::Output {
    let root = fixtures_dir().join(fixture);
    let mut args = vec![command, "--sysfs-root", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    fabcheck(&args)
}

#[test]
fn every_json_document_carries_host_version_and_time() {
    let doc = json(&run("hdr-ib-healthy", "check", &["--json"]));
    assert!(doc["host"].as_str().is_some_and(|h| !h.is_empty()), "{doc}");
    assert_eq!(doc["fabcheck_version"], env!("CARGO_PKG_VERSION"));
    let time = doc["time"].as_str().unwrap();
    assert!(time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T', "RFC 3339: {time}");
    let doc = json(&run("hdr-ib-healthy", "devices", &["--format", "json"]));
    assert_eq!(doc["schema"], "fabcheck.devices.v1");
    assert!(doc["time"].is_string());
}

#[test]
fn oneline_is_one_line_with_the_first_error() {
    let out = run("ib-init-no-sm", "check", &["--format", "oneline"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("fabcheck check FAIL: mlx5_0/1: port.state: port INIT"), "{text}");
    let out = run("hdr-ib-healthy", "check", &["--format", "oneline"]);
    assert_eq!((out.status.code(), String::from_utf8(out.stdout).unwrap().as_str()), (Some(0), "fabcheck check PASS\n"));
}

#[test]
fn prom_parses_and_carries_ports_checks_and_findings() {
    let out = run("ndr-ib-pcie-gen4", "check", &["--format", "prom"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("valid exposition");
    let find = |name: &str, labels: &[(&str, &str)]| {
        scrape.samples.iter().find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))).map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
    };
    assert_eq!(find("fabcheck_verdict_pass", &[("command", "check")]), Some(1.0));
    assert_eq!(find("fabcheck_finding", &[("id", "pcie.bound"), ("severity", "warning"), ("subject", "mlx5_1")]), Some(1.0));
    // A `warn` row (0.3) passes unless `--fail-on warning` (below).
    assert_eq!(find("fabcheck_check_pass", &[("id", "pcie.bound"), ("subject", "mlx5_0")]), Some(1.0));
    assert_eq!(find("fabcheck_check_pass", &[("id", "port.state"), ("subject", "mlx5_0/1")]), Some(1.0));
    let out = run("ndr-ib-pcie-gen4", "devices", &["--format", "prom"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("valid exposition");
    let rate = scrape.samples.iter().find(|s| s.metric == "fabcheck_port_rate_gbps" && s.labels.get("device") == Some("mlx5_1")).unwrap();
    assert!(matches!(rate.value, prometheus_parse::Value::Gauge(v) if v == 400.0), "{rate:?}");
    assert!(scrape.docs.contains_key("fabcheck_port_rate_gbps"), "HELP lines");
}

#[test]
fn junit_parses_with_a_testcase_per_check_and_failures_for_errors() {
    let out = run("roce-mtu-mismatch", "check", &["--format", "junit", "--expect", "mtu=4096"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("well-formed XML");
    let suite = xml.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    let cases: Vec<_> = suite.children().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(suite.attribute("tests"), Some(cases.len().to_string().as_str()));
    let failed: Vec<(&str, &str)> = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .map(|c| (c.attribute("classname").unwrap(), c.attribute("name").unwrap()))
        .collect();
    // 0.3: a case is named by its id and subject (names unique within the suite; 0.2: the subject).
    assert_eq!(failed, [("fabcheck.check.roce.mtu", "roce.mtu mlx5_1/1")]);
    assert_eq!(suite.attribute("failures"), Some("1"));
}

#[test]
fn output_writes_the_file_and_nothing_on_stdout() {
    let dir = std::env::temp_dir().join(format!("fabcheck-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fabcheck.prom");
    let out = run("hdr-ib-healthy", "check", &["--format", "prom", "--output", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).is_ok());
    let out = run("hdr-ib-healthy", "check", &["--format", "prom", "--output", "/nonexistent/dir/x.prom"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fail_on_warning_fails_a_run_with_only_warnings() {
    // ndr-ib-pcie-gen4 passes with two pcie.bound warnings.
    let out = run("ndr-ib-pcie-gen4", "check", &["--json"]);
    assert_eq!((out.status.code(), json(&out)["verdict"].as_str()), (Some(0), Some("pass")));
    let out = run("ndr-ib-pcie-gen4", "check", &["--json", "--fail-on", "warning"]);
    assert_eq!((out.status.code(), json(&out)["verdict"].as_str()), (Some(1), Some("fail")));
    let out = run("ndr-ib-pcie-gen4", "check", &["--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(1), "human output too");
    let out = run("hdr-ib-healthy", "check", &["--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(0), "nothing to fail on");
}

#[test]
fn version_completions_and_perftest_habits() {
    let out = fabcheck(&["--version"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("fabcheck {} (commit ", env!("CARGO_PKG_VERSION"))), "{text}");
    assert!(text.contains("rdma-core here: "), "{text}");
    for shell in ["bash", "zsh", "fish"] {
        let out = fabcheck(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stdout).contains("fabcheck"), "{shell}");
    }
    // perftest's short flags and units are accepted (the run then fails for want of a device:
    // exit 2 from fabcheck, not a usage error from clap).
    let out = fabcheck(&["pair", "localhost", "localhost", "-d", "mlx5_9", "-s", "64K", "-D", "500ms", "-q", "2", "-x", "3", "-i", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("unexpected argument") && !err.contains("invalid value"), "{err}");
    let out = fabcheck(&["pair", "localhost", "localhost", "-s", "12Q"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a size"));
}

#[test]
fn oneline_on_exit_2_still_prints_the_cause_on_stdout_safe_to_eval() {
    // NHC reads stdout only: a run that could not run still says why, in one eval-safe line.
    let out = fabcheck(&["--format", "oneline", "check", "--sysfs-root", "/nonexistent/it's-gone"]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("fabcheck check ERROR: "), "{stdout:?}");
    assert_eq!(stdout.matches('\n').count(), 1, "{stdout:?}");
    assert!(!stdout.contains('\''), "the apostrophe of the path is replaced: {stdout:?}");
}
