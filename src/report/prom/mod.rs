//! `--format prom`: Prometheus text exposition (0.0.4) for node_exporter's textfile collector,
//! printed from a document's typed items. The names, types and HELP come from the one metric
//! table ([`metrics`], shown in docs/ci.md), which the exporter's page is written from as well;
//! the checklist's series ([`check_series`]) are one function for both, so the exporter says
//! what `check` says. Base units (bytes per second, seconds), `fabcheck_` prefix, every family
//! once with its HELP and TYPE: `promtool check metrics` finds nothing to say.

mod families;
pub mod metrics;

pub use families::{bytes_per_second, flag, Exposition, Families, Order, Repeat};

use super::sink::{AggregateLine, Command, MeshPairLine, MeshTally, PortLine, RailLine, Sink};
use crate::outcome::{Check, Finding, FindingId, Severity, Status, Subject, TestResult, Verdict};
use metrics::Metric;

/// The page of one command's document.
pub struct PromPrinter {
    families: Families,
    command: Command,
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
        PromPrinter { families, command, fail_on_warning, checks: Vec::new() }
    }

    /// The page, with the time of the run.
    pub fn finish(mut self, now_unix: f64) -> String {
        for (id, subject, pass) in check_series(&self.checks, self.fail_on_warning) {
            self.families.set(&metrics::CHECK, &[("id", id.as_str()), ("subject", &subject.to_string())], flag(pass));
        }
        self.families.set(&metrics::LAST_RUN, &[("command", self.command.name())], now_unix);
        self.families.render(Exposition::Text)
    }

    /// A Gb/s figure under its table name in bytes per second, and under its 0.2 name (Gb/s)
    /// while that is kept ([`metrics::DEPRECATED`]).
    fn rate(&mut self, metric: &Metric, labels: &[(&str, &str)], gbps: f64) {
        self.families.set(metric, labels, bytes_per_second(gbps));
        for old in metrics::DEPRECATED.iter().filter(|d| d.written && d.new == *metric) {
            let help = format!("Deprecated since 0.3: {} in Gb/s; use {}.", metric.help, metric.name);
            self.families.set_named(old.old, metrics::Kind::Gauge, &help, labels, gbps);
        }
    }

    /// One test result's figures: bandwidth in bytes per second, latencies in seconds.
    fn figures(&mut self, r: &TestResult, labels: &[(&str, &str)]) {
        // As the document writes them (three decimals).
        if let Some(bw) = r.bw_gbps {
            self.rate(&metrics::BANDWIDTH, labels, crate::units::round(bw, 3));
        }
        if let Some(lat) = &r.lat_us {
            // As the document rounds them.
            let lat = lat.rounded();
            self.families.set(&metrics::LATENCY_P50, labels, lat.p50 * 1e-6);
            self.families.set(&metrics::LATENCY_P99, labels, lat.p99 * 1e-6);
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
        let labels = [("command", self.command.name()), ("id", f.id.as_str()), ("severity", severity_name(f.severity)), ("subject", &subject)];
        self.families.count(&metrics::FINDING, &labels);
    }

    fn check(&mut self, check: &Check) {
        self.checks.push(check.clone());
    }

    fn port(&mut self, p: &PortLine<'_>) {
        let port = p.port.to_string();
        let labels = [("device", p.device), ("port", port.as_str())];
        self.families.set(&metrics::PORT_ACTIVE, &labels, flag(p.active));
        self.families.set(&metrics::PORT_LINK_UP, &labels, flag(p.link_up));
        if let Some(rate) = p.rate_gbps {
            self.rate(&metrics::PORT_RATE, &labels, rate);
        }
        if let Some(rate) = p.supported_gbps {
            self.rate(&metrics::PORT_SUPPORTED, &labels, rate);
        }
    }

    fn pcie(&mut self, device: &str, usable_gbps: f64) {
        self.rate(&metrics::PCIE_USABLE, &[("device", device)], usable_gbps);
    }

    fn result(&mut self, r: &TestResult) {
        let size = r.size.to_string();
        self.figures(r, &[("test", r.test.name()), ("direction", r.direction.name()), ("size", &size)]);
    }

    fn rail(&mut self, rail: &RailLine<'_>) {
        let number = rail.rail.to_string();
        for r in rail.results {
            let size = r.size.to_string();
            self.figures(r, &[("rail", &number), ("test", r.test.name()), ("direction", r.direction.name()), ("size", &size)]);
        }
    }

    fn aggregate(&mut self, total: &AggregateLine<'_>) {
        let size = total.size.to_string();
        if let Some(bw) = total.bw_gbps.map(|bw| crate::units::round(bw, 3)) {
            self.rate(&metrics::BANDWIDTH, &[("rail", "node"), ("test", total.test), ("direction", total.direction), ("size", &size)], bw);
        }
    }

    fn mesh_pair(&mut self, p: &MeshPairLine<'_>) {
        let rail = p.rail.map(|k| k.to_string());
        let mut pair = vec![("a", p.a), ("b", p.b)];
        pair.extend(rail.as_deref().map(|k| ("rail", k)));
        self.families.set(&metrics::MESH_PAIR_PASS, &pair, flag(p.verdict == Verdict::Pass));
        for r in p.results {
            let size = r.size.to_string();
            let mut labels = pair.clone();
            labels.extend([("test", r.test.name()), ("direction", r.direction.name()), ("size", size.as_str())]);
            self.figures(r, &labels);
        }
    }

    fn mesh_tally(&mut self, tally: &MeshTally<'_>) {
        for (kind, count) in &tally.suspects {
            self.families.set(&metrics::MESH_SUSPECTS, &[("kind", kind)], *count as f64);
        }
        self.families.set(&metrics::MESH_UNREACHABLE, &[], tally.unreachable as f64);
        self.families.set(&metrics::MESH_ENDPOINTS, &[], tally.endpoints as f64);
    }

    fn links(&mut self, count: usize) {
        self.families.set(&metrics::FABRIC_LINKS, &[], count as f64);
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

#[cfg(test)]
mod tests;
