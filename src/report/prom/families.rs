//! The Prometheus text exposition (0.0.4) and OpenMetrics (1.0) writer: families of samples
//! under their HELP and TYPE, each family written once, a series never twice. One writer for
//! `--format prom` and the exporter's page, so both escape, order and number alike.

use crate::report::prom::metrics::{Kind, Metric};
use std::collections::HashMap;
use std::fmt::Write;

/// Which exposition format the page is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    /// Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics 1.0 (counter families named without `_total`, `# EOF` at the end).
    OpenMetrics,
}

impl Exposition {
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Text => "text/plain; version=0.0.4; charset=utf-8",
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The order the families are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// By name (`--format prom`: a command's page, diffable run to run).
    ByName,
    /// As first added (the exporter's page, grouped as its reader is).
    AsAdded,
}

/// What a second sample of a series does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Replaces the first (mesh: a retest stands for the pair).
    Replace,
    /// Is dropped (the exporter: the first reading of a series is the one written).
    KeepFirst,
}

struct Family {
    name: String,
    kind: Kind,
    help: String,
    samples: Vec<(String, f64)>,
}

/// The families of one page.
pub struct Families {
    list: Vec<Family>,
    index: HashMap<String, usize>,
    order: Order,
    repeat: Repeat,
}

impl Families {
    pub fn new(order: Order, repeat: Repeat) -> Families {
        Families { list: Vec::new(), index: HashMap::new(), order, repeat }
    }

    /// One sample of a family of the table.
    pub fn set(&mut self, metric: &Metric, labels: &[(&str, &str)], value: f64) {
        self.set_named(metric.name, metric.kind, metric.help, labels, value);
    }

    /// One sample of a family by name (the exporter's counter families are named from sysfs).
    pub fn set_named(&mut self, name: &str, kind: Kind, help: &str, labels: &[(&str, &str)], value: f64) {
        let repeat = self.repeat;
        let samples = self.samples(name, kind, help);
        let labels = label_text(labels);
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(sample) if repeat == Repeat::Replace => sample.1 = value,
            Some(_) => {}
            None => samples.push((labels, value)),
        }
    }

    /// A count: a second sample of a series adds one to the first.
    pub fn count(&mut self, metric: &Metric, labels: &[(&str, &str)]) {
        let samples = self.samples(metric.name, metric.kind, metric.help);
        let labels = label_text(labels);
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(sample) => sample.1 += 1.0,
            None => samples.push((labels, 1.0)),
        }
    }

    fn samples(&mut self, name: &str, kind: Kind, help: &str) -> &mut Vec<(String, f64)> {
        let at = match self.index.get(name) {
            Some(at) => *at,
            None => {
                self.list.push(Family { name: name.to_string(), kind, help: help.to_string(), samples: Vec::new() });
                self.index.insert(name.to_string(), self.list.len() - 1);
                self.list.len() - 1
            }
        };
        &mut self.list[at].samples
    }

    /// The page.
    pub fn render(&self, format: Exposition) -> String {
        let mut families: Vec<&Family> = self.list.iter().collect();
        if self.order == Order::ByName {
            families.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let mut out = String::new();
        for family in families {
            let declared = match (format, family.kind) {
                (Exposition::OpenMetrics, Kind::Counter) => family.name.strip_suffix("_total").unwrap_or(&family.name),
                _ => &family.name,
            };
            let _ = writeln!(out, "# HELP {declared} {}", escape_help(&family.help));
            let _ = writeln!(out, "# TYPE {declared} {}", family.kind.name());
            for (labels, value) in &family.samples {
                let name = &family.name;
                let value = number(*value);
                if labels.is_empty() {
                    let _ = writeln!(out, "{name} {value}");
                } else {
                    let _ = writeln!(out, "{name}{{{labels}}} {value}");
                }
            }
        }
        if format == Exposition::OpenMetrics {
            out.push_str("# EOF\n");
        }
        out
    }
}

fn label_text(labels: &[(&str, &str)]) -> String {
    labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect::<Vec<_>>().join(",")
}

/// Label values escaped as the exposition format requires.
fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(value: &str) -> String {
    value.replace('\\', "\\\\").replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.is_finite() {
        format!("{value}")
    } else {
        "NaN".into()
    }
}

/// A data rate in Gb/s in bytes per second, Prometheus's base unit for data (`promtool check
/// metrics` flags `_bits`): a 200 Gb/s link is 25e9.
pub fn bytes_per_second(gbps: f64) -> f64 {
    gbps * 1e9 / 8.0
}

/// 1 or 0.
pub fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::prom::metrics;

    #[test]
    fn a_series_is_written_once_and_families_in_the_order_asked() {
        let mut replace = Families::new(Order::ByName, Repeat::Replace);
        replace.set(&metrics::UP, &[("command", "mesh")], 1.0);
        replace.set(&metrics::BANDWIDTH, &[("a", "n1")], 1.0);
        replace.set(&metrics::BANDWIDTH, &[("a", "n1")], 2.0);
        let page = replace.render(Exposition::Text);
        assert!(page.find("fabcheck_bandwidth").unwrap() < page.find("fabcheck_up").unwrap(), "{page}");
        assert!(page.contains("fabcheck_bandwidth_bytes_per_second{a=\"n1\"} 2\n") && !page.contains("} 1\n# HELP fabcheck_up"), "{page}");
        let mut keep = Families::new(Order::AsAdded, Repeat::KeepFirst);
        keep.set(&metrics::UP, &[], 1.0);
        keep.set(&metrics::REFRESHES, &[], 3.0);
        keep.set(&metrics::REFRESHES, &[], 4.0);
        let page = keep.render(Exposition::OpenMetrics);
        assert!(page.starts_with("# HELP fabcheck_up ") && page.contains("# TYPE fabcheck_exporter_refreshes counter\n"), "{page}");
        assert!(page.contains("fabcheck_exporter_refreshes_total 3\n") && page.ends_with("# EOF\n"), "{page}");
    }

    #[test]
    fn labels_and_help_are_escaped() {
        let mut f = Families::new(Order::ByName, Repeat::Replace);
        f.set_named("fabcheck_x", Kind::Gauge, "a \\ b\nc", &[("cause", "say \"no\"\\\n")], f64::NAN);
        assert_eq!(
            f.render(Exposition::Text),
            "# HELP fabcheck_x a \\\\ b\\nc\n# TYPE fabcheck_x gauge\nfabcheck_x{cause=\"say \\\"no\\\"\\\\\\n\"} NaN\n"
        );
    }
}
