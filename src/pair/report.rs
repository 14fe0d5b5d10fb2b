//! The `fabcheck.pair.v1` document and its human rendering.

use crate::diagnose::{gbps, Finding, Verdict};
use crate::model::{LinkLayer, MemChoice, MemPath, TestKind};
use crate::pair::plan::Direction;
use crate::perf::summary::LatencySummary;
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.pair.v1";

/// One end of the pair, as the test used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub host: String,
    pub device: String,
    pub port: u8,
    pub gid_index: Option<u8>,
    pub gid: Option<std::net::Ipv6Addr>,
    pub link_layer: LinkLayer,
    pub rate_gbps: Option<f64>,
    pub ca_type: String,
    pub mtu: Option<u32>,
    /// RoCE traffic class the test ran in (`--tclass`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tclass: Option<u8>,
    /// InfiniBand service level (`--sl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl: Option<u8>,
    /// The CPU this end's measured loop was pinned to (`--cpu`, or the agent's choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u16>,
    /// Usable bandwidth of the adapter's PCIe link, Gb/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gbps: Option<f64>,
    /// How this end's link runs below what it supports, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained_low: Option<String>,
    /// Where this end's buffers lived (`--mem`; absent: host memory, as before 0.3).
    #[serde(default, skip_serializing_if = "MemChoice::is_host")]
    pub mem: MemChoice,
    /// How they were registered: `dmabuf`, `peermem` (GPU memory) or `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_path: Option<MemPath>,
    /// The GPU's PCI address, with `--mem cuda`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The GPU's PCIe bound by design, Gb/s, with `--mem cuda` (`gpu::bound`; `pcie_gbps` is
    /// the lower of it and the NIC's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_pcie_gbps: Option<f64>,
}

/// A 200 Gb/s InfiniBand end (mlx5_0 port 1, MTU 4096, nothing optional set), for tests to
/// change the fields they are about.
#[cfg(test)]
pub(crate) fn test_side() -> Side {
    Side {
        host: "n".into(),
        device: "mlx5_0".into(),
        port: 1,
        gid_index: None,
        gid: None,
        link_layer: LinkLayer::InfiniBand,
        rate_gbps: Some(200.0),
        ca_type: "MT4123".into(),
        mtu: Some(4096),
        tclass: None,
        sl: None,
        cpu: None,
        pcie_gbps: None,
        trained_low: None,
        mem: MemChoice::Host,
        mem_path: None,
        gpu: None,
        gpu_pcie_gbps: None,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub test: TestKind,
    pub direction: Direction,
    pub size: u32,
    pub iterations: u64,
    pub qps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "rounded_latency")]
    pub lat_us: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub bw_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub peak_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_6dp")]
    pub msg_rate_mpps: Option<f64>,
    /// Retransmission and error counters that rose during the test, as `a:name` / `b:name`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Why the test failed to complete (completion error, stall), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairDoc {
    pub schema: String,
    pub verdict: Verdict,
    pub a: Side,
    pub b: Side,
    pub results: Vec<TestResult>,
    pub findings: Vec<Finding>,
    /// Whether both ends registered their buffers with relaxed ordering.
    #[serde(default)]
    pub relaxed_ordering: bool,
    /// What bandwidth was judged against, Gb/s, and what set it (`link` or `pcie`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_gbps: Option<f64>,
    /// `--rails`: each rail's sides and results (the top-level `results` is then empty and
    /// `a`/`b` are rail 0's sides). Absent without `--rails`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rails: Vec<super::rails::doc::RailRecord>,
    /// `--rails`: the node total per bandwidth test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregate: Vec<super::rails::doc::Aggregate>,
}

/// Serde: latency figures to three decimals in the document.
fn rounded_latency<S: serde::Serializer>(value: &Option<LatencySummary>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(l) => s.serialize_some(&l.rounded()),
        None => s.serialize_none(),
    }
}

/// The human report. `quiet`: only problems (failed tests, error and warning findings) and the
/// verdict.
pub fn human(doc: &PairDoc, quiet: bool) -> String {
    let mut out = String::new();
    if !doc.rails.is_empty() {
        return rails_human(doc, quiet);
    }
    for (name, s) in [("A", &doc.a), ("B", &doc.b)].into_iter().filter(|_| !quiet) {
        let _ = writeln!(
            out,
            "{name}  {} {}/{}  {}  {}  gid {} {}  mtu {}  {}",
            s.host,
            s.device,
            s.port,
            s.ca_type,
            s.link_layer,
            s.gid_index.map_or("-".into(), |i| i.to_string()),
            s.gid.map(|g| g.to_string()).unwrap_or_default(),
            s.mtu.map_or("?".into(), |m| m.to_string()),
            s.rate_gbps.map_or(String::new(), |r| format!("link {} Gb/s", gbps(r)))
        );
        if !s.mem.is_host() {
            let path = s.mem_path.map_or("?", |p| p.name());
            let _ = writeln!(
                out,
                "   memory {} ({path}{})",
                s.mem,
                s.gpu.as_deref().map_or(String::new(), |g| format!(", GPU {}", crate::report::one_line(g)))
            );
        }
    }
    let shown: Vec<&TestResult> = doc.results.iter().filter(|r| !quiet || r.error.is_some()).collect();
    if !shown.is_empty() {
        if !quiet {
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{:<10} {:<5} {:>8} {:>8} {:>3}  result", "test", "dir", "size", "iters", "qps");
    }
    for r in shown {
        let result = if let Some(e) = &r.error {
            format!("FAILED: {e}")
        } else if let Some(l) = &r.lat_us {
            format!(
                "p50 {} us  p99 {} us  p99.9 {} us  min {} max {} (us)",
                units::three(l.p50),
                units::three(l.p99),
                units::three(l.p999),
                units::three(l.min),
                units::three(l.max)
            )
        } else {
            format!(
                "{} Gb/s  peak {} Gb/s  {}",
                r.bw_gbps.map_or("?".into(), units::measured_gbps),
                r.peak_gbps.map_or("?".into(), units::measured_gbps),
                r.msg_rate_mpps.map_or("?".into(), units::msg_rate)
            )
        };
        let _ = writeln!(out, "{:<10} {:<5} {:>8} {:>8} {:>3}  {}", r.test, r.direction, r.size, r.iterations, r.qps, result);
    }
    let findings: Vec<&Finding> = doc.findings.iter().filter(|f| !quiet || f.severity != crate::diagnose::Severity::Info).collect();
    if !findings.is_empty() && !out.is_empty() {
        let _ = writeln!(out);
    }
    for f in findings {
        let _ = writeln!(out, "{:<7} {:<20} {}", format!("{:?}", f.severity).to_uppercase(), f.id, f.message);
        let _ = writeln!(out, "        what to do: {}", f.remedy);
    }
    if !out.is_empty() {
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{}", if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" });
    out
}

/// `pair --rails`: the rail table, the findings, the verdict.
fn rails_human(doc: &PairDoc, quiet: bool) -> String {
    let bad: Vec<usize> = doc
        .rails
        .iter()
        .filter(|r| {
            let subject = super::rails::judge::subject(r.rail, &r.a, &r.b);
            doc.findings.iter().any(|f| f.severity == crate::diagnose::Severity::Error && f.subject == subject)
        })
        .map(|r| r.rail)
        .collect();
    let mut out = super::rails::doc::table(&doc.rails, &doc.aggregate, &bad, quiet);
    let findings: Vec<&Finding> = doc.findings.iter().filter(|f| !quiet || f.severity != crate::diagnose::Severity::Info).collect();
    if !findings.is_empty() {
        let _ = writeln!(out);
    }
    for f in findings {
        let _ = writeln!(out, "{:<7} {:<22} {}", format!("{:?}", f.severity).to_uppercase(), f.id, crate::report::one_line(&f.message));
        let _ = writeln!(out, "        what to do: {}", f.remedy);
    }
    let _ = writeln!(out);
    let verdict = if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" };
    let _ = writeln!(out, "{verdict} ({})", super::rails::doc::summary(doc.rails.len(), &bad, doc.verdict));
    out
}

/// `pair`'s result: the document, and whether the human view is `--quiet`.
pub struct PairReport {
    pub doc: PairDoc,
    pub quiet: bool,
}

impl crate::report::Document for PairReport {
    fn verdict(&self) -> Option<crate::diagnose::Verdict> {
        Some(self.doc.verdict)
    }

    fn has_warning(&self) -> bool {
        crate::report::document::any_warning(&self.doc.findings)
    }

    fn human(&self) -> String {
        human(&self.doc, self.quiet)
    }

    fn value(&self) -> Result<serde_json::Value, String> {
        crate::report::document::to_value(&self.doc)
    }
}
