//! `--format prom`: Prometheus text exposition (0.0.4) for node_exporter's textfile collector,
//! printed from a document's typed items. The names, types and HELP come from the one metric
//! table ([`metrics`], shown in docs/ci.md), which the exporter's page is written from as well;
//! the checklist's series ([`check_series`]) are one function for both, so the exporter says
//! what `check` says. Base units (bytes per second, seconds), `fabcheck_` prefix, every family
//! once with its HELP and TYPE: `promtool check metrics` finds nothing to say.

mod families;
pub mod metrics;

pub use families::{bytes_per_second, flag, Exposition, Families, Order, Repeat};

use super::sink::{Command, Sink};
use crate::outcome::{Check, Figure, Finding, FindingId, Measure, Severity, Status, Subject, Tally, TestResult, Verdict};
use metrics::Metric;

/// The page of one command's document, or the exporter's page ([`PromPrinter::exporter`]).
pub struct PromPrinter {
    families: Families,
    /// The command whose document this is; `None`: the exporter's page (no `command` label,
    /// each series' first reading kept, no deprecated names).
    command: Option<Command>,
    fail_on_warning: bool,
    /// Checklist rows, grouped at the end ([`check_series`]).
    checks: Vec<Check>,
}

impl PromPrinter {
    pub fn new(command: Command, verdict: Option<Verdict>, fail_on_warning: bool) -> PromPrinter {
        let mut families = Families::new(Order::ByName, Repeat::Replace);
        families.set(&metrics::UP, &[("command", command.name())], 1.0);
        if let Some(verdict) = verdict {
            families.set(&metrics::VERDICT, &[("command", command.name())], flag(verdict == Verdict::Pass));
        }
        PromPrinter { families, command: Some(command), fail_on_warning, checks: Vec::new() }
    }

    /// The exporter's page: its families in the order they are first fed, a series' first
    /// reading the one written.
    pub fn exporter() -> PromPrinter {
        PromPrinter { families: Families::new(Order::AsAdded, Repeat::KeepFirst), command: None, fail_on_warning: false, checks: Vec::new() }
    }

    /// The page, with the time of the run.
    pub fn finish(mut self, now_unix: f64) -> String {
        self.write_checks();
        if let Some(command) = self.command {
            self.families.set(&metrics::LAST_RUN, &[("command", command.name())], now_unix);
        }
        self.families.render(Exposition::Text)
    }

    /// The exporter's page, in the exposition a scrape asked for.
    pub fn finish_page(mut self, format: Exposition) -> String {
        self.write_checks();
        self.families.render(format)
    }

    /// The checklist's series ([`check_series`]), once every row is in.
    fn write_checks(&mut self) {
        for (id, subject, pass) in check_series(&self.checks, self.fail_on_warning) {
            self.families.set(&metrics::CHECK, &[("id", id.as_str()), ("subject", &subject.to_string())], flag(pass));
        }
    }

    /// A Gb/s figure under its table name in bytes per second, and under its 0.2 name (Gb/s)
    /// while that is kept ([`metrics::DEPRECATED`]).
    fn rate(&mut self, metric: &Metric, labels: &[(&str, &str)], gbps: f64) {
        self.families.set(metric, labels, bytes_per_second(gbps));
        if self.command.is_none() {
            return;
        }
        for old in metrics::DEPRECATED.iter().filter(|d| d.written && d.new == *metric) {
            let help = format!("Deprecated since 0.3: {} in Gb/s; use {}.", metric.help, metric.name);
            self.families.set_named(old.old, metrics::Kind::Gauge, &help, labels, gbps);
        }
    }

    /// One test result's figures under `labels` and the result's test, direction and size:
    /// bandwidth in bytes per second, latencies in seconds.
    fn figures(&mut self, r: &TestResult, labels: &[(&str, &str)]) {
        let size = r.size.to_string();
        let mut labels = labels.to_vec();
        labels.extend([("test", r.test.name()), ("direction", r.direction.name()), ("size", size.as_str())]);
        // As the document writes them (three decimals).
        if let Some(bw) = r.bw_gbps {
            self.rate(&metrics::BANDWIDTH, &labels, crate::units::round(bw, 3));
        }
        if let Some(lat) = &r.lat_us {
            // As the document rounds them.
            let lat = lat.rounded();
            self.families.set(&metrics::LATENCY_P50, &labels, lat.p50 * 1e-6);
            self.families.set(&metrics::LATENCY_P99, &labels, lat.p99 * 1e-6);
        }
        if let Some(u) = &r.under_load {
            // lat_under_load: the idle p99 beside the loaded one (LATENCY_P99), and their ratio.
            self.families.set(&metrics::LATENCY_IDLE_P99, &labels, u.idle_lat_us.rounded().p99 * 1e-6);
            self.families.set(&metrics::LOADED_LATENCY_RATIO, &labels, crate::units::round(u.p99_ratio, 3));
        }
    }
}

/// The checklist's series: one per check id and subject, 1 when it passed (a warning passes
/// unless `--fail-on warning`), 0 when it failed; a row repeated for one id and subject fails
/// when any of its repeats fails. A skipped row has no series: what could not be read is not
/// a pass. `check --format prom` and the exporter's page both write these.
pub fn check_series(checks: &[Check], fail_on_warning: bool) -> Vec<(FindingId, Subject, bool)> {
    let mut out: Vec<(FindingId, Subject, bool)> = Vec::new();
    for c in checks.iter().filter(|c| c.status != Status::Skip) {
        let pass = c.status == Status::Pass || (c.status == Status::Warn && !fail_on_warning);
        match out.iter_mut().find(|(id, subject, _)| *id == c.id && *subject == c.subject) {
            Some(row) => row.2 &= pass,
            None => out.push((c.id, c.subject.clone(), pass)),
        }
    }
    out
}

/// The label value of a severity, as the documents write it.
pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

impl Sink for PromPrinter {
    fn finding(&mut self, f: &Finding) {
        let subject = f.subject.to_string();
        let labels = [("id", f.id.as_str()), ("severity", severity_name(f.severity)), ("subject", &subject)];
        match self.command {
            Some(command) => self.families.count(&metrics::FINDING, &[&[("command", command.name())], &labels[..]].concat()),
            // The exporter's page: one series per finding.
            None => self.families.set(&metrics::FINDING, &labels, 1.0),
        }
    }

    fn check(&mut self, check: &Check) {
        self.checks.push(check.clone());
    }

    fn measure(&mut self, m: &Measure<'_>) {
        match *m {
            Measure::Port { subject, active, link_up, rate_gbps, supported_gbps } => {
                let labels = subject_labels(subject);
                let labels = borrowed(&labels);
                self.families.set(&metrics::PORT_ACTIVE, &labels, flag(active));
                self.families.set(&metrics::PORT_LINK_UP, &labels, flag(link_up));
                if let Some(rate) = rate_gbps {
                    self.rate(&metrics::PORT_RATE, &labels, rate);
                }
                if let Some(rate) = supported_gbps {
                    self.rate(&metrics::PORT_SUPPORTED, &labels, rate);
                }
            }
            Measure::PcieUsable { subject, gbps } => {
                let labels = subject_labels(subject);
                self.rate(&metrics::PCIE_USABLE, &borrowed(&labels), gbps);
            }
            Measure::Result(r) => self.figures(r, &[]),
            Measure::Rail { rail, results, .. } => {
                let number = rail.to_string();
                results.iter().for_each(|r| self.figures(r, &[("rail", &number)]));
            }
            Measure::Total { test, direction, size, bw_gbps } => {
                let size = size.to_string();
                let labels = [("rail", "node"), ("test", test.name()), ("direction", direction.name()), ("size", &size)];
                self.rate(&metrics::BANDWIDTH, &labels, crate::units::round(bw_gbps, 3));
            }
            Measure::MeshPair { subject, rail, verdict, results, .. } => {
                let rail = rail.map(|k| k.to_string());
                let ends = subject_labels(subject);
                let mut pair = borrowed(&ends);
                pair.extend(rail.as_deref().map(|k| ("rail", k)));
                self.families.set(&metrics::MESH_PAIR_PASS, &pair, flag(verdict == Verdict::Pass));
                results.iter().for_each(|r| self.figures(r, &pair));
            }
            Measure::Reading { subject, labels, figure, value } => {
                let own = subject_labels(subject);
                let mut all = borrowed(&own);
                all.extend_from_slice(labels);
                match (metrics::of(figure), figure) {
                    (Some(metric), _) => self.families.set(metric, &all, value),
                    (None, Figure::Counter { dir, file, count }) => {
                        if let Some(m) = metrics::counter_metric(dir, file) {
                            self.families.set_named(&m.name, metrics::Kind::Counter, &m.help, &all, count.saturating_mul(m.scale) as f64);
                        }
                    }
                    (None, _) => {}
                }
            }
            Measure::Change { .. } => {}
        }
    }

    fn tally(&mut self, tally: &Tally) {
        match tally {
            Tally::Suspects { kind, count } => self.families.set(&metrics::MESH_SUSPECTS, &[("kind", kind.name())], *count as f64),
            Tally::Unreachable(n) => self.families.set(&metrics::MESH_UNREACHABLE, &[], *n as f64),
            Tally::Endpoints(n) => self.families.set(&metrics::MESH_ENDPOINTS, &[], *n as f64),
            Tally::Links(n) => self.families.set(&metrics::FABRIC_LINKS, &[], *n as f64),
            Tally::Findings { severity, count } => self.families.set(&metrics::FINDINGS, &[("severity", severity_name(*severity))], *count as f64),
            Tally::Slowed { .. } => {}
        }
    }
}

/// The page of a run that could not run (exit 2): `fabcheck_up 0` and the cause, no verdict,
/// so the `--output` file a textfile collector reads never keeps a stale PASS.
pub fn error_page(command: &str, cause: &str, now_unix: f64) -> String {
    let mut f = Families::new(Order::ByName, Repeat::Replace);
    f.set(&metrics::UP, &[("command", command)], 0.0);
    f.set(&metrics::RUN_ERROR, &[("command", command), ("cause", &crate::sanitise::for_eval(cause))], 1.0);
    f.set(&metrics::LAST_RUN, &[("command", command)], now_unix);
    f.render(Exposition::Text)
}

/// The labels a subject's series carry: a port's `device` and `port`, a device's `device`, a
/// pair's `a` and `b`, a rail's `rail`, a PCI function's `function`; the node and other subjects
/// none.
fn subject_labels(subject: &crate::outcome::Subject) -> Vec<(&'static str, String)> {
    use crate::outcome::Subject;
    match subject {
        Subject::Port { device, port } => vec![("device", device.clone()), ("port", port.to_string())],
        Subject::Device(device) => vec![("device", device.clone())],
        Subject::Pair { a, b } => vec![("a", a.clone()), ("b", b.clone())],
        Subject::Rail { rail, .. } => vec![("rail", rail.to_string())],
        Subject::Function(address) => vec![("function", address.clone())],
        Subject::Node | Subject::Text(_) => Vec::new(),
    }
}

/// Labels as the writer takes them.
fn borrowed<'a>(labels: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    labels.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[cfg(test)]
mod tests;
