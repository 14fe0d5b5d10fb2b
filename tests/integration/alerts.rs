//! The shipped alerts (contrib/prometheus) against the real tools: `promtool test rules` on
//! their unit tests, the same rules on series taken from the exporter's own page of real
//! bundles (a partner-limited port raises nothing about its rate, a port without a subnet
//! manager exactly one alert), and `amtool check-config` on the Alertmanager inhibit rules.
//! promtool comes from Debian's `prometheus`, amtool from `prometheus-alertmanager`
//! (tests/deps.sh); without them these tests fail, saying so.

use super::exporter::Exporter;
use super::fixtures_dir;
use super::health_outputs::{scratch, tool};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn contrib(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib").join(rel)
}

/// Every rule of fabcheck.rules.yml as (alert name, expression), read as YAML (expressions span
/// lines).
pub(crate) fn rules() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(contrib("prometheus/fabcheck.rules.yml")).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).expect("the rules are YAML");
    let mut out = Vec::new();
    for group in doc["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"].as_str().or(rule["record"].as_str()).expect("a rule is named").to_string();
            out.push((name, rule["expr"].as_str().expect("a rule has an expr").to_string()));
        }
    }
    out
}

fn said(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_alert_rules_pass_promtool_test_rules() {
    let check = Command::new(tool("promtool")).args(["check", "rules"]).arg(contrib("prometheus/fabcheck.rules.yml")).output().unwrap();
    assert!(check.status.success(), "promtool check rules:\n{}", said(&check));
    let test = Command::new(tool("promtool")).args(["test", "rules", "fabcheck.rules.test.yml"]).current_dir(contrib("prometheus")).output().unwrap();
    assert!(test.status.success() && said(&test).contains("SUCCESS"), "promtool test rules:\n{}", said(&test));
    // Every alert has a unit test that expects it to fire, and one where it does not.
    let tests = std::fs::read_to_string(contrib("prometheus/fabcheck.rules.test.yml")).unwrap();
    for (name, _) in rules() {
        assert!(tests.contains(&format!("alertname: {name}\n")), "no case in fabcheck.rules.test.yml where {name} fires");
        assert!(tests.contains(&format!("alertname: {name}, exp_alerts: [] }}")), "no case in fabcheck.rules.test.yml where {name} is quiet");
    }
}

#[test]
fn the_inhibit_rules_pass_amtool_check_config() {
    let out = Command::new(tool("amtool")).args(["check-config", "alertmanager-inhibit.yml"]).current_dir(contrib("prometheus")).output().unwrap();
    assert!(out.status.success() && said(&out).contains("SUCCESS"), "amtool check-config:\n{}", said(&out));
    assert!(said(&out).contains("5 inhibit rules"), "{}", said(&out));
    // Every alert an inhibit rule names is one of the rules'.
    let config = std::fs::read_to_string(contrib("prometheus/alertmanager-inhibit.yml")).unwrap();
    let names: Vec<String> = rules().into_iter().map(|(n, _)| n).collect();
    for word in config.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.starts_with("Fabcheck") && w.len() > "Fabcheck".len()) {
        assert!(names.iter().any(|n| n == word), "alertmanager-inhibit.yml names {word}, which no rule raises");
    }
}

const INSTANCE: &str = "n1:9879";

/// The exporter's page as promtool input series, each sample held for 30 minutes, scraped as
/// job "fabcheck" from [`INSTANCE`].
fn page_as_series(page: &str) -> String {
    let mut out = format!("      - series: 'up{{job=\"fabcheck\",instance=\"{INSTANCE}\"}}'\n        values: '1x30'\n");
    for line in page.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample line without a value: {line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number in {line}"));
        let ours = format!("job=\"fabcheck\",instance=\"{INSTANCE}\"");
        let series = match series.split_once('{') {
            Some((name, labels)) => format!("{name}{{{ours},{labels}"),
            None => format!("{series}{{{ours}}}"),
        };
        out.push_str(&format!("      - series: '{}'\n        values: '{value}x30'\n", series.replace('\'', "''")));
    }
    out
}

/// What FabcheckCheckFailed says for a port's row, as the rule's annotation writes it.
fn check_failed(id: &str, device: &str, port: &str) -> String {
    let subject = format!("{device}/{port}");
    format!(
        "          - exp_labels: {{ severity: warning, job: fabcheck, instance: \"{INSTANCE}\", id: {id}, subject: {subject}, device: {device}, port: \"{port}\" }}\n            \
         exp_annotations: {{ summary: \"fabcheck check fails {id} on {subject} of {INSTANCE} (`fabcheck check` there says why and what to do)\" }}\n"
    )
}

/// promtool test rules on the exporter's page of `fixture`: `fires` is what FabcheckCheckFailed
/// raises (id, device, port); every other alert stays quiet.
fn alerts_on_the_page_of(fixture: &str, fires: &[(&str, &str, &str)]) -> String {
    let page = Exporter::start_with(&fixtures_dir().join(fixture), &[]).metrics();
    let dir = scratch(&format!("alerts-{fixture}"));
    std::fs::copy(contrib("prometheus/fabcheck.rules.yml"), dir.join("fabcheck.rules.yml")).unwrap();
    let mut test = format!(
        "rule_files:\n  - fabcheck.rules.yml\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n{}",
        page_as_series(&page)
    );
    test.push_str("    alert_rule_test:\n");
    for (name, _) in rules() {
        let expected: String =
            if name == "FabcheckCheckFailed" { fires.iter().map(|(id, d, p)| check_failed(id, d, p)).collect() } else { String::new() };
        if expected.is_empty() {
            test.push_str(&format!("      - {{ eval_time: 20m, alertname: {name}, exp_alerts: [] }}\n"));
        } else {
            test.push_str(&format!("      - eval_time: 20m\n        alertname: {name}\n        exp_alerts:\n{expected}"));
        }
    }
    std::fs::write(dir.join("page.test.yml"), &test).unwrap();
    let out = Command::new(tool("promtool")).args(["test", "rules", "page.test.yml"]).current_dir(&dir).output().unwrap();
    assert!(out.status.success() && said(&out).contains("SUCCESS"), "{fixture}: promtool test rules on the exporter's page:\n{}\n{test}", said(&out));
    let _ = std::fs::remove_dir_all(&dir);
    page
}

/// roce-trained-low: a 400G NIC on a 200G switch port, which `check` passes. Nothing fires about
/// its rate; what fires is exactly the rows check fails on that bundle (its lossless set-up: one
/// fault, one error, roce.qos's; roce.lossless's row fails by that finding, naming the same
/// cause without a second finding, so both rows are 0 and both alert).
#[test]
fn a_partner_limited_port_raises_nothing_about_its_rate() {
    let page = alerts_on_the_page_of("roce-trained-low", &[("roce.lossless", "mlx5_0", "1"), ("roce.qos", "mlx5_0", "1")]);
    assert!(page.contains("fabcheck_check_pass{id=\"link.trained\",subject=\"mlx5_0/1\"} 1\n"), "{page}");
    assert!(page.contains("fabcheck_port_trained_below_supported{device=\"mlx5_0\",port=\"1\",netdev=\"ens2np0\"} 0\n"), "{page}");
    let check = super::fabcheck(&["check", "--format", "prom", "--sysfs-root", fixtures_dir().join("roce-trained-low").to_str().unwrap()]);
    let failing: Vec<&str> =
        std::str::from_utf8(&check.stdout).unwrap().lines().filter(|l| l.starts_with("fabcheck_check_pass{") && l.ends_with(" 0")).collect();
    assert_eq!(failing.len(), 2, "check fails other rows than the alerts say: {failing:?}");
    assert!(failing.iter().all(|l| l.contains("id=\"roce.qos\"") || l.contains("id=\"roce.lossless\"")), "{failing:?}");
}

/// ib-init-no-sm: port.state (INIT), port.lid and port.sm fail, the verdict fails, the port is
/// not ACTIVE; one alert, the cause.
#[test]
fn a_port_without_a_subnet_manager_raises_one_alert() {
    let page = alerts_on_the_page_of("ib-init-no-sm", &[("port.sm", "mlx5_0", "1")]);
    for id in ["port.state", "port.lid", "port.sm"] {
        assert!(page.contains(&format!("fabcheck_check_pass{{id=\"{id}\",subject=\"mlx5_0/1\"}} 0\n")), "{id}:\n{page}");
    }
    assert!(page.contains("\nfabcheck_verdict_pass 0\n"), "{page}");
}

#[test]
fn a_healthy_node_raises_nothing() {
    alerts_on_the_page_of("hdr-ib-healthy", &[]);
}
