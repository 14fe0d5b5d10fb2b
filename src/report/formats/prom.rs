//! `--format prom`: Prometheus text exposition (version 0.0.4) for node_exporter's textfile
//! collector. The names, types and HELP come from the one metric table the exporter writes from
//! (`exporter::metrics`, shown in docs/ci.md): base units (bytes per second, seconds),
//! `fabcheck_` prefix, so `promtool check metrics` finds nothing to say. 0.2's names that
//! promtool accepts are written beside the new ones for one release ([`metrics::DEPRECATED`]).
//! Every family is written once with its HELP and TYPE.

use crate::exporter::metrics::{self, Metric};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Label values escaped as the exposition format requires.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A data rate in Gb/s (as the documents say it) in bytes per second, the base unit.
fn bytes_per_second(gbps: f64) -> f64 {
    gbps * 1e9 / 8.0
}

#[derive(Default)]
struct Families {
    /// name -> (help, samples as (labels, value))
    map: BTreeMap<String, (String, Vec<(String, f64)>)>,
}

impl Families {
    /// One sample; a second with the same labels replaces the first (a series is written once:
    /// mesh's retest of a pair stands for it).
    fn add(&mut self, metric: &Metric, labels: &[(&str, &str)], value: f64) {
        self.add_named(metric.name, metric.help, labels, value);
    }

    fn add_named(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        let samples = self.samples(name, help);
        let labels = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect::<Vec<_>>().join(",");
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(sample) => sample.1 = value,
            None => samples.push((labels, value)),
        }
    }

    /// A Gb/s figure under its table name in bytes per second, and under its 0.2 name (Gb/s)
    /// while that is kept ([`metrics::DEPRECATED`]).
    fn rate(&mut self, metric: &Metric, labels: &[(&str, &str)], gbps: f64) {
        self.add(metric, labels, bytes_per_second(gbps));
        for old in metrics::DEPRECATED.iter().filter(|d| d.written && d.new == *metric) {
            let help = format!("Deprecated since 0.3, removed in 0.4: {} in Gb/s; use {}.", metric.help, metric.name);
            self.add_named(old.old, &help, labels, gbps);
        }
    }

    /// A count: a second sample with the same labels adds to the first.
    fn count(&mut self, metric: &Metric, labels: &[(&str, &str)]) {
        let samples = self.samples(metric.name, metric.help);
        let labels = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect::<Vec<_>>().join(",");
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(sample) => sample.1 += 1.0,
            None => samples.push((labels, 1.0)),
        }
    }

    fn samples(&mut self, name: &str, help: &str) -> &mut Vec<(String, f64)> {
        &mut self.map.entry(name.to_string()).or_insert_with(|| (help.to_string(), Vec::new())).1
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (name, (help, samples)) in &self.map {
            let _ = writeln!(out, "# HELP {name} {}", help.replace('\\', "\\\\").replace('\n', "\\n"));
            let _ = writeln!(out, "# TYPE {name} gauge");
            for (labels, value) in samples {
                let v = if value.is_finite() { format!("{value}") } else { "NaN".into() };
                if labels.is_empty() {
                    let _ = writeln!(out, "{name} {v}");
                } else {
                    let _ = writeln!(out, "{name}{{{labels}}} {v}");
                }
            }
        }
        out
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as f64
}

fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

/// The page of a run that could not run (exit 2): `fabcheck_up 0` and the cause, no verdict,
/// so the `--output` file a textfile collector reads never keeps a stale PASS.
pub fn error_page(command: &str, cause: &str) -> String {
    let mut f = Families::default();
    f.add(&metrics::UP, &[("command", command)], 0.0);
    f.add(&metrics::RUN_ERROR, &[("command", command), ("cause", &crate::report::formats::oneline::eval_safe(cause))], 1.0);
    f.add(&metrics::LAST_RUN, &[("command", command)], now_unix());
    f.render()
}

pub fn render(doc: &Value) -> String {
    let command = super::command_of(doc);
    let mut f = Families::default();
    let cmd = command.as_str();
    f.add(&metrics::UP, &[("command", cmd)], 1.0);
    if let Some(verdict) = doc["verdict"].as_str() {
        f.add(&metrics::VERDICT, &[("command", cmd)], flag(verdict == "pass"));
    }
    for finding in super::findings(doc) {
        let severity = severity_name(finding.severity);
        f.count(&metrics::FINDING, &[("command", cmd), ("id", finding.id), ("severity", severity), ("subject", finding.subject)]);
    }
    if let Some(devices) = doc["devices"].as_array() {
        for d in devices {
            let dev = d["name"].as_str().unwrap_or("");
            for p in d["ports"].as_array().into_iter().flatten() {
                let port = p["port"].to_string();
                let labels = [("device", dev), ("port", port.as_str())];
                f.add(&metrics::PORT_ACTIVE, &labels, flag(p["state"] == "ACTIVE"));
                f.add(&metrics::PORT_LINK_UP, &labels, flag(p["phys_state"] == "LINK_UP"));
                if let Some(rate) = p["rate_gbps"].as_f64() {
                    f.rate(&metrics::PORT_RATE, &labels, rate);
                }
                if let Some(rate) = p["supported_gbps"].as_f64() {
                    f.rate(&metrics::PORT_SUPPORTED, &labels, rate);
                }
            }
            if let Some(usable) = d["pci"]["usable_gbps"].as_f64() {
                f.rate(&metrics::PCIE_USABLE, &[("device", dev)], usable);
            }
        }
    }
    if let Some(checks) = doc["checks"].as_array() {
        for c in checks {
            let id = c["id"].as_str().unwrap_or("");
            let subject = c["subject"].as_str().unwrap_or("");
            let status = c["status"].as_str().unwrap_or("");
            if status != "skip" {
                // A `warn` row passes unless `--fail-on warning` makes warnings failures.
                let pass = status == "pass" || (status == "warn" && !crate::report::output::fail_on_warning());
                f.add(&metrics::CHECK, &[("id", id), ("subject", subject)], flag(pass));
            }
        }
    }
    if cmd == "mesh" {
        mesh(&mut f, doc);
    }
    for r in doc["results"].as_array().into_iter().flatten() {
        let size = r["size"].to_string();
        let labels = [("test", r["test"].as_str().unwrap_or("")), ("direction", r["direction"].as_str().unwrap_or("")), ("size", size.as_str())];
        result(&mut f, r, &labels);
    }
    rails(&mut f, doc);
    if let Some(links) = doc["links"].as_array() {
        f.add(&metrics::FABRIC_LINKS, &[], links.len() as f64);
    }
    f.add(&metrics::LAST_RUN, &[("command", cmd)], now_unix());
    f.render()
}

/// One test result's figures: bandwidth in bytes per second, latencies in seconds.
fn result(f: &mut Families, r: &Value, labels: &[(&str, &str)]) {
    if let Some(bw) = r["bw_gbps"].as_f64() {
        f.rate(&metrics::BANDWIDTH, labels, bw);
    }
    if let Some(p50) = r["lat_us"]["p50"].as_f64() {
        f.add(&metrics::LATENCY_P50, labels, p50 * 1e-6);
    }
    if let Some(p99) = r["lat_us"]["p99"].as_f64() {
        f.add(&metrics::LATENCY_P99, labels, p99 * 1e-6);
    }
}

/// `pair --rails`: each rail's results labelled `rail` (its number), the node total as
/// `rail="node"`.
fn rails(f: &mut Families, doc: &Value) {
    for r in doc["rails"].as_array().into_iter().flatten() {
        let rail = r["rail"].to_string();
        for t in r["results"].as_array().into_iter().flatten() {
            let size = t["size"].to_string();
            let labels = [
                ("rail", rail.as_str()),
                ("test", t["test"].as_str().unwrap_or("")),
                ("direction", t["direction"].as_str().unwrap_or("")),
                ("size", size.as_str()),
            ];
            result(f, t, &labels);
        }
    }
    for g in doc["aggregate"].as_array().into_iter().flatten() {
        let size = g["size"].to_string();
        let labels = [
            ("rail", "node"),
            ("test", g["test"].as_str().unwrap_or("")),
            ("direction", g["direction"].as_str().unwrap_or("")),
            ("size", size.as_str()),
        ];
        if let Some(bw) = g["bw_gbps"].as_f64() {
            f.rate(&metrics::BANDWIDTH, &labels, bw);
        }
    }
}

/// mesh: one series per pair, test and direction (labels `a`, `b`, with `--rails` `rail`, then
/// `test`, `direction`, `size`; the latest measure of a pair stands for it), each pair's verdict,
/// and the suspects and unreachable endpoints counted (kind `rail` only in a `--rails` mesh).
fn mesh(f: &mut Families, doc: &Value) {
    for p in super::latest_pairs(doc) {
        let (a, b) = (p["a"].as_str().unwrap_or(""), p["b"].as_str().unwrap_or(""));
        // `mesh --rails`: the pair's rail as a label too.
        let rail = p["rail"].as_u64().map(|k| k.to_string());
        let mut pair = vec![("a", a), ("b", b)];
        pair.extend(rail.as_deref().map(|k| ("rail", k)));
        f.add(&metrics::MESH_PAIR_PASS, &pair, flag(p["verdict"] == "pass"));
        for r in p["results"].as_array().into_iter().flatten() {
            let size = r["size"].to_string();
            let mut labels = pair.clone();
            labels.extend([
                ("test", r["test"].as_str().unwrap_or("")),
                ("direction", r["direction"].as_str().unwrap_or("")),
                ("size", size.as_str()),
            ]);
            result(f, r, &labels);
        }
    }
    for kind in ["node", "link", "switch", "uplink", "config"] {
        f.add(&metrics::MESH_SUSPECTS, &[("kind", kind)], 0.0);
    }
    if doc["pairs"].as_array().into_iter().flatten().any(|p| p["rail"].is_u64()) {
        f.add(&metrics::MESH_SUSPECTS, &[("kind", "rail")], 0.0);
    }
    for s in doc["suspects"].as_array().into_iter().flatten() {
        f.count(&metrics::MESH_SUSPECTS, &[("kind", s["kind"].as_str().unwrap_or(""))]);
    }
    let unreachable = doc["unreachable"].as_array().map_or(0, Vec::len);
    f.add(&metrics::MESH_UNREACHABLE, &[], unreachable as f64);
    f.add(&metrics::MESH_ENDPOINTS, &[], doc["endpoints"].as_array().map_or(0, Vec::len) as f64);
}

/// The label value of a severity, as the documents write it.
fn severity_name(severity: crate::outcome::Severity) -> &'static str {
    match severity {
        crate::outcome::Severity::Error => "error",
        crate::outcome::Severity::Warning => "warning",
        crate::outcome::Severity::Info => "info",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mesh_has_a_series_per_pair_test_and_direction_and_suspect_counts() {
        let lat = json!({"test":"send_lat","direction":"a->b","size":2,"lat_us":{"p50":1.9,"p99":2.5}});
        let bw = |v: f64| json!({"test":"write_bw","direction":"a->b","size":65536,"bw_gbps":v});
        let doc = json!({"schema":"fabcheck.mesh.v1","verdict":"fail","endpoints":["n1","n2","n3"],
            "pairs":[{"a":"n1","b":"n2","verdict":"fail","results":[lat, bw(90.0)]},
                     {"a":"n1","b":"n3","verdict":"pass","results":[bw(190.0)]},
                     {"a":"n1","b":"n2","verdict":"pass","results":[bw(191.0)],"retest":true}],
            "suspects":[{"kind":"link","subject":"n1<->n2","reason":"flaky"}]});
        let text = render(&doc);
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("valid exposition");
        let get = |name: &str, labels: &[(&str, &str)]| -> Vec<f64> {
            scrape
                .samples
                .iter()
                .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
                .map(|s| match s.value {
                    prometheus_parse::Value::Gauge(v) => v,
                    _ => f64::NAN,
                })
                .collect()
        };
        let pair = [("a", "n1"), ("b", "n2"), ("test", "write_bw"), ("direction", "a->b"), ("size", "65536")];
        assert_eq!(get("fabcheck_bandwidth_bytes_per_second", &pair), [191.0e9 / 8.0], "one series, the retest standing for the pair");
        assert_eq!(get("fabcheck_bandwidth_gbps", &pair), [191.0], "0.2's name kept beside it, deprecated");
        assert_eq!(get("fabcheck_bandwidth_bytes_per_second", &[]).len(), 2);
        assert!(get("fabcheck_latency_p50_seconds", &[("a", "n1"), ("test", "send_lat")]).is_empty(), "the retest ran no latency test");
        assert_eq!(get("fabcheck_mesh_suspects", &[("kind", "link")]), [1.0]);
        assert_eq!(get("fabcheck_mesh_suspects", &[("kind", "node")]), [0.0]);
        assert_eq!(get("fabcheck_mesh_pair_pass", &[("a", "n1"), ("b", "n3")]), [1.0]);
        assert_eq!(get("fabcheck_verdict_pass", &[("command", "mesh")]), [0.0]);
        assert_eq!(get("fabcheck_up", &[("command", "mesh")]), [1.0]);
    }

    #[test]
    fn figures_are_in_base_units_from_the_table() {
        let doc = json!({"schema":"fabcheck.pair.v1","verdict":"pass",
            "results":[{"test":"send_lat","direction":"a->b","size":2,"lat_us":{"p50":1.5,"p99":2.5}}],
            "devices":[{"name":"mlx5_0","pci":{"usable_gbps":230.0},"ports":[{"port":1,"state":"ACTIVE","phys_state":"LINK_UP","rate_gbps":200.0}]}]});
        let text = render(&doc);
        assert!(text.contains("\nfabcheck_latency_p50_seconds{test=\"send_lat\",direction=\"a->b\",size=\"2\"} 0.0000015\n"), "{text}");
        assert!(text.contains("\nfabcheck_port_rate_bytes_per_second{device=\"mlx5_0\",port=\"1\"} 25000000000\n"), "{text}");
        assert!(text.contains("\nfabcheck_port_rate_gbps{device=\"mlx5_0\",port=\"1\"} 200\n"), "0.2's name beside it:\n{text}");
        assert!(text.contains("# HELP fabcheck_port_rate_gbps Deprecated since 0.3"), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("# TYPE ") && l.contains("_us ")), "promtool refuses abbreviated units:\n{text}");
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = line.split(' ').nth(2).unwrap();
            let known = metrics::TABLE.iter().any(|m| m.name == name && m.format_labels.is_some())
                || metrics::DEPRECATED.iter().any(|d| d.old == name && d.written);
            assert!(known, "{name} is not in the metric table");
        }
    }

    #[test]
    fn a_run_that_could_not_run_says_up_0_and_why_and_no_verdict() {
        let text = error_page("check", "cannot open /sys/class/infiniband: \"gone\" $(x)");
        assert!(text.contains("\nfabcheck_up{command=\"check\"} 0\n"), "{text}");
        assert!(text.contains("fabcheck_run_error{command=\"check\",cause=\"cannot open /sys/class/infiniband: _gone_ _(x)\"} 1"), "{text}");
        assert!(!text.contains("verdict_pass"), "{text}");
        assert!(prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).is_ok());
    }
}
