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
    fn add(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        let labels = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect::<Vec<_>>().join(",");
        let entry = self.map.entry(format!("fabcheck_{name}")).or_insert_with(|| (help.to_string(), Vec::new()));
        entry.1.push((labels, value));
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
    for (id, severity, subject, _) in super::findings(doc) {
        f.add(
            "finding",
            "A finding of the run (1 per finding), by id, severity and subject.",
            &[("command", cmd), ("id", id), ("severity", severity), ("subject", subject)],
            1.0,
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
    let results: Vec<&Value> = doc["results"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(doc["pairs"].as_array().into_iter().flatten().flat_map(|p| p["results"].as_array().into_iter().flatten()))
        .collect();
    for r in results {
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
    if let Some(links) = doc["links"].as_array() {
        f.add("fabric_links", "Links the fabric discovery found.", &[], links.len() as f64);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    f.add("last_run_timestamp_seconds", "When this run ended, Unix time.", &[("command", cmd)], now as f64);
    f.render()
}
