//! `--format prom`: Prometheus text exposition (version 0.0.4) for node_exporter's textfile
//! collector. Metric names are prefixed `fabcheck_`; labels carry devices, ports, tests and
//! finding ids. Every metric family is written once with its HELP and TYPE.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Label values escaped as the exposition format requires.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[derive(Default)]
struct Families {
    /// name -> (help, samples as (labels, value))
    map: BTreeMap<String, (String, Vec<(String, f64)>)>,
}

impl Families {
    /// One sample; a second with the same labels replaces the first (a series is written once:
    /// mesh's retest of a pair stands for it).
    fn add(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        let samples = self.samples(name, help);
        let labels = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect::<Vec<_>>().join(",");
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(sample) => sample.1 = value,
            None => samples.push((labels, value)),
        }
    }

    /// A count: a second sample with the same labels adds to the first.
    fn count(&mut self, name: &str, help: &str, labels: &[(&str, &str)]) {
        let samples = self.samples(name, help);
        let labels = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect::<Vec<_>>().join(",");
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(sample) => sample.1 += 1.0,
            None => samples.push((labels, 1.0)),
        }
    }

    fn samples(&mut self, name: &str, help: &str) -> &mut Vec<(String, f64)> {
        &mut self.map.entry(format!("fabcheck_{name}")).or_insert_with(|| (help.to_string(), Vec::new())).1
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (name, (help, samples)) in &self.map {
            let _ = writeln!(out, "# HELP {name} {help}");
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

pub fn render(doc: &Value) -> String {
    let command = super::command_of(doc);
    let mut f = Families::default();
    let cmd = command.as_str();
    if let Some(verdict) = doc["verdict"].as_str() {
        f.add("verdict_pass", "1 when the run passed, 0 when it failed.", &[("command", cmd)], f64::from(u8::from(verdict == "pass")));
    }
    for finding in super::findings(doc) {
        let severity = severity_name(finding.severity);
        f.count(
            "finding",
            "A finding of the run (1 per finding), by id, severity and subject.",
            &[("command", cmd), ("id", finding.id), ("severity", severity), ("subject", finding.subject)],
        );
    }
    if let Some(devices) = doc["devices"].as_array() {
        for d in devices {
            let dev = d["name"].as_str().unwrap_or("");
            for p in d["ports"].as_array().into_iter().flatten() {
                let port = p["port"].to_string();
                let labels = [("device", dev), ("port", port.as_str())];
                f.add("port_active", "1 when the port is ACTIVE.", &labels, f64::from(u8::from(p["state"] == "ACTIVE")));
                f.add("port_link_up", "1 when the physical link is up.", &labels, f64::from(u8::from(p["phys_state"] == "LINK_UP")));
                if let Some(rate) = p["rate_gbps"].as_f64() {
                    f.add("port_rate_gbps", "Data rate of the port's link, Gb/s.", &labels, rate);
                }
                if let Some(rate) = p["supported_gbps"].as_f64() {
                    f.add("port_supported_gbps", "Fastest link the port supports, Gb/s.", &labels, rate);
                }
            }
            if let Some(usable) = d["pci"]["usable_gbps"].as_f64() {
                f.add("pcie_usable_gbps", "What the adapter's PCIe link carries, Gb/s.", &[("device", dev)], usable);
            }
        }
    }
    if let Some(checks) = doc["checks"].as_array() {
        for c in checks {
            let id = c["id"].as_str().unwrap_or("");
            let subject = c["subject"].as_str().unwrap_or("");
            let status = c["status"].as_str().unwrap_or("");
            if status != "skip" {
                f.add(
                    "check_pass",
                    "1 when the check passed, 0 when it failed (skipped checks are left out).",
                    &[("id", id), ("subject", subject)],
                    // A `warn` row passes unless `--fail-on warning` makes warnings failures.
                    f64::from(u8::from(status == "pass" || (status == "warn" && !crate::report::output::fail_on_warning()))),
                );
            }
        }
    }
    if cmd == "mesh" {
        mesh(&mut f, doc);
    }
    for r in doc["results"].as_array().into_iter().flatten() {
        let test = r["test"].as_str().unwrap_or("");
        let dir = r["direction"].as_str().unwrap_or("");
        let size = r["size"].to_string();
        let labels = [("test", test), ("direction", dir), ("size", size.as_str())];
        if let Some(bw) = r["bw_gbps"].as_f64() {
            f.add("bandwidth_gbps", "Measured bandwidth, Gb/s.", &labels, bw);
        }
        if let Some(p50) = r["lat_us"]["p50"].as_f64() {
            f.add("latency_p50_us", "Typical (p50) latency, microseconds.", &labels, p50);
        }
        if let Some(p99) = r["lat_us"]["p99"].as_f64() {
            f.add("latency_p99_us", "p99 latency, microseconds.", &labels, p99);
        }
    }
    rails(&mut f, doc);
    if let Some(links) = doc["links"].as_array() {
        f.add("fabric_links", "Links the fabric discovery found.", &[], links.len() as f64);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    f.add("last_run_timestamp_seconds", "When this run ended, Unix time.", &[("command", cmd)], now as f64);
    f.render()
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
            if let Some(bw) = t["bw_gbps"].as_f64() {
                f.add("bandwidth_gbps", "Measured bandwidth, Gb/s.", &labels, bw);
            }
            if let Some(p50) = t["lat_us"]["p50"].as_f64() {
                f.add("latency_p50_us", "Typical (p50) latency, microseconds.", &labels, p50);
            }
            if let Some(p99) = t["lat_us"]["p99"].as_f64() {
                f.add("latency_p99_us", "p99 latency, microseconds.", &labels, p99);
            }
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
            f.add("bandwidth_gbps", "Measured bandwidth, Gb/s.", &labels, bw);
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
        f.add("mesh_pair_pass", "1 when the pair passed, 0 when it failed.", &pair, f64::from(u8::from(p["verdict"] == "pass")));
        for r in p["results"].as_array().into_iter().flatten() {
            let size = r["size"].to_string();
            let mut labels = pair.clone();
            labels.extend([
                ("test", r["test"].as_str().unwrap_or("")),
                ("direction", r["direction"].as_str().unwrap_or("")),
                ("size", size.as_str()),
            ]);
            if let Some(bw) = r["bw_gbps"].as_f64() {
                f.add("bandwidth_gbps", "Measured bandwidth, Gb/s.", &labels, bw);
            }
            if let Some(p50) = r["lat_us"]["p50"].as_f64() {
                f.add("latency_p50_us", "Typical (p50) latency, microseconds.", &labels, p50);
            }
            if let Some(p99) = r["lat_us"]["p99"].as_f64() {
                f.add("latency_p99_us", "p99 latency, microseconds.", &labels, p99);
            }
        }
    }
    let help = "Suspects the mesh named, by kind.";
    for kind in ["node", "link", "switch", "uplink", "config"] {
        f.add("mesh_suspects", help, &[("kind", kind)], 0.0);
    }
    if doc["pairs"].as_array().into_iter().flatten().any(|p| p["rail"].is_u64()) {
        f.add("mesh_suspects", help, &[("kind", "rail")], 0.0);
    }
    for s in doc["suspects"].as_array().into_iter().flatten() {
        f.count("mesh_suspects", help, &[("kind", s["kind"].as_str().unwrap_or(""))]);
    }
    let unreachable = doc["unreachable"].as_array().map_or(0, Vec::len);
    f.add("mesh_unreachable", "Endpoints whose agent could not be reached.", &[], unreachable as f64);
    f.add("mesh_endpoints", "Endpoints of the mesh.", &[], doc["endpoints"].as_array().map_or(0, Vec::len) as f64);
}

/// The label value of a severity, as the documents write it.
fn severity_name(severity: crate::diagnose::Severity) -> &'static str {
    match severity {
        crate::diagnose::Severity::Error => "error",
        crate::diagnose::Severity::Warning => "warning",
        crate::diagnose::Severity::Info => "info",
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
        assert_eq!(get("fabcheck_bandwidth_gbps", &pair), [191.0], "one series, the retest standing for the pair");
        assert_eq!(get("fabcheck_bandwidth_gbps", &[]).len(), 2);
        assert!(get("fabcheck_latency_p50_us", &[("a", "n1"), ("test", "send_lat")]).is_empty(), "the retest ran no latency test");
        assert_eq!(get("fabcheck_mesh_suspects", &[("kind", "link")]), [1.0]);
        assert_eq!(get("fabcheck_mesh_suspects", &[("kind", "node")]), [0.0]);
        assert_eq!(get("fabcheck_mesh_pair_pass", &[("a", "n1"), ("b", "n3")]), [1.0]);
        assert_eq!(get("fabcheck_verdict_pass", &[("command", "mesh")]), [0.0]);
    }
}
