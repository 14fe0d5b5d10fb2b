//! Output of `fabcheck fabric`: the `fabcheck.fabric.v1` JSON document and the human form
//! (a line per problem, then an `iblinkinfo`-like table per switch with problems marked).

use crate::fabric::discovery::links::{end_name, node_name, End, Index};
use crate::fabric::discovery::model::Fabric;
use crate::fabric::judgement::Judgement;
use crate::mad::attributes::{Counters, ErrorCounter, Guid, NodeType, SmInfo, SmState};
use crate::outcome::{Finding, Severity, Verdict};
use crate::port::{PhysState, PortState, Speed, Width};
use crate::units::rate as gbps;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.fabric.v1";

#[derive(Debug, Serialize)]
pub struct FabricDoc {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub sm: Option<SmDoc>,
    pub nodes: Vec<NodeDoc>,
    pub links: Vec<LinkDoc>,
    pub findings: Vec<Finding>,
    /// Added: the port fabcheck ran from, and how long discovery and judging took.
    pub local: crate::fabric::discovery::model::LocalView,
    pub elapsed_ms: u64,
}

#[derive(Debug, Serialize)]
pub struct SmDoc {
    pub lid: u16,
    pub guid: Guid,
    pub priority: u8,
    pub state: SmState,
    pub standby: Vec<SmInfo>,
}

#[derive(Debug, Serialize)]
pub struct NodeDoc {
    pub guid: Guid,
    #[serde(rename = "type")]
    pub node_type: NodeType,
    pub description: String,
    pub ports: u8,
    pub lid: u16,
    /// Fabric design (#32), switches only: the tier (`leaf`, `spine`, `core`, `unknown`), the
    /// cabling that decided it, and a leaf's host-facing over spine-facing bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<crate::fabric::design::tiers::Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oversubscription: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct EndDoc {
    pub guid: Guid,
    pub description: String,
    pub port: u8,
    pub lid: u16,
    /// Added: this end's own counters (the link's `counters` sums both ends).
    pub counters: Option<Counters>,
}

#[derive(Debug, Serialize)]
pub struct LinkDoc {
    pub a: EndDoc,
    pub b: EndDoc,
    pub state: PortState,
    pub phys_state: PhysState,
    pub width: Width,
    pub speed: Speed,
    pub rate_gbps: Option<f64>,
    /// The best both ends support.
    pub width_supported: Option<Width>,
    pub speed_supported: Option<Speed>,
    /// Added: the best both ends support and enable.
    pub width_enabled: Option<Width>,
    pub speed_enabled: Option<Speed>,
    /// Both ends' counters added up (errors seen anywhere on this cable); null if unread.
    pub counters: Option<Counters>,
}

fn end_doc(e: &End) -> EndDoc {
    EndDoc { guid: e.node.guid, description: e.node.description.clone(), port: e.port.number, lid: e.port.lid, counters: e.port.counters }
}

fn sum(a: &Counters, b: &Counters) -> Counters {
    Counters {
        symbol_error: a.symbol_error + b.symbol_error,
        link_error_recovery: a.link_error_recovery + b.link_error_recovery,
        link_downed: a.link_downed + b.link_downed,
        rcv_errors: a.rcv_errors + b.rcv_errors,
        rcv_remote_physical_errors: a.rcv_remote_physical_errors + b.rcv_remote_physical_errors,
        rcv_switch_relay_errors: a.rcv_switch_relay_errors + b.rcv_switch_relay_errors,
        xmit_discards: a.xmit_discards + b.xmit_discards,
        xmit_constraint_errors: a.xmit_constraint_errors + b.xmit_constraint_errors,
        rcv_constraint_errors: a.rcv_constraint_errors + b.rcv_constraint_errors,
        local_link_integrity_errors: a.local_link_integrity_errors + b.local_link_integrity_errors,
        excessive_buffer_overrun_errors: a.excessive_buffer_overrun_errors + b.excessive_buffer_overrun_errors,
        vl15_dropped: a.vl15_dropped + b.vl15_dropped,
        xmit_data: a.xmit_data.saturating_add(b.xmit_data),
        rcv_data: a.rcv_data.saturating_add(b.rcv_data),
        xmit_pkts: a.xmit_pkts.saturating_add(b.xmit_pkts),
        rcv_pkts: a.rcv_pkts.saturating_add(b.rcv_pkts),
        xmit_wait: a.xmit_wait.saturating_add(b.xmit_wait),
    }
}

pub fn verdict(j: &Judgement) -> Verdict {
    if j.findings.iter().any(|f| f.severity == Severity::Error) {
        Verdict::Fail
    } else {
        Verdict::Pass
    }
}

pub fn document(fabric: &Fabric, j: &Judgement, elapsed_ms: u64) -> FabricDoc {
    let index = Index::new(fabric);
    let sm = fabric.master.as_ref().map(|m| SmDoc {
        lid: m.lid,
        guid: m.guid,
        priority: m.priority,
        state: m.state,
        standby: fabric.others.iter().filter(|o| o.state != SmState::Master || o.guid != m.guid).cloned().collect(),
    });
    let tiers = crate::fabric::design::tiers::tiers(&index);
    let over = crate::fabric::design::tiers::oversubscription(&index, &tiers);
    let nodes = fabric
        .nodes
        .iter()
        .map(|n| {
            let placed = (n.node_type == NodeType::Switch).then(|| tiers.get(&n.guid)).flatten();
            NodeDoc {
                guid: n.guid,
                node_type: n.node_type,
                description: n.description.clone(),
                ports: n.num_ports,
                lid: n.lid(),
                tier: placed.map(|p| p.tier),
                tier_reason: placed.map(|p| p.reason.clone()),
                oversubscription: placed.and_then(|_| over.get(&n.guid)).map(|o| (o.ratio() * 100.0).round() / 100.0),
            }
        })
        .collect();
    let links = index
        .links
        .iter()
        .map(|l| {
            let (a, b) = (&l.a.port.info, &l.b.port.info);
            LinkDoc {
                a: end_doc(&l.a),
                b: end_doc(&l.b),
                state: a.state,
                phys_state: a.phys_state,
                width: a.width_active,
                speed: a.speed_active,
                rate_gbps: a.rate_gbps(),
                width_supported: a.width_supported.intersect(b.width_supported).best(),
                speed_supported: a.speed_supported.intersect(b.speed_supported).best(),
                width_enabled: a.width_supported.intersect(b.width_supported).intersect(a.width_enabled).intersect(b.width_enabled).best(),
                speed_enabled: a.speed_supported.intersect(b.speed_supported).intersect(a.speed_enabled).intersect(b.speed_enabled).best(),
                counters: match (l.a.port.counters, l.b.port.counters) {
                    (Some(x), Some(y)) => Some(sum(&x, &y)),
                    (x, y) => x.or(y),
                },
            }
        })
        .collect();
    FabricDoc { schema: SCHEMA, verdict: verdict(j), sm, nodes, links, findings: j.findings.clone(), local: fabric.local.clone(), elapsed_ms }
}

/// How many findings of one id are printed before the rest are summed up.
const PER_ID: usize = 8;

/// The findings in words: one entry per cause with its subjects and a count, at most
/// [`PER_ID`] entries of an id, the rest summed up.
fn findings_text(findings: &[crate::outcome::Finding]) -> String {
    let mut out = String::new();
    let mut shown: BTreeMap<(&str, Severity), usize> = BTreeMap::new();
    // One entry per cause (issue #57: one warning repeated on every link): findings of the same
    // id, severity, message and remedy are said once, with their subjects and a count.
    let mut causes: Vec<(&crate::outcome::Finding, Vec<String>)> = Vec::new();
    for f in findings {
        match causes.iter_mut().find(|(c, _)| c.id == f.id && c.severity == f.severity && c.message == f.message && c.remedy == f.remedy) {
            Some((_, subjects)) => subjects.push(f.subject.to_string()),
            None => causes.push((f, vec![f.subject.to_string()])),
        }
    }
    for (f, subjects) in &causes {
        let n = shown.entry((f.id.as_str(), f.severity)).or_default();
        *n += 1;
        if *n > PER_ID {
            continue;
        }
        let tag = match f.severity {
            Severity::Error => "FAIL",
            Severity::Warning => "WARN",
            Severity::Info => "INFO",
        };
        let subject = match subjects.as_slice() {
            [one] => one.clone(),
            [a, b, c] => format!("{a}, {b}, {c} (3x)"),
            [a, b] => format!("{a}, {b} (2x)"),
            [a, b, c, rest @ ..] => format!("{a}, {b}, {c} and {} more ({}x)", rest.len(), subjects.len()),
            [] => String::new(),
        };
        let _ = writeln!(out, "{tag}  {:<24} {subject}", f.id);
        let _ = writeln!(out, "      {}", f.message);
        let _ = writeln!(out, "      what to do: {}", f.remedy);
    }
    for ((id, severity), n) in &shown {
        if *n > PER_ID {
            let _ = writeln!(
                out,
                "...   and {} more {id} {} (--json lists every one)",
                n - PER_ID,
                if *severity == Severity::Error { "errors" } else { "warnings" }
            );
        }
    }
    out
}

pub fn human(fabric: &Fabric, j: &Judgement) -> String {
    let mut out = findings_text(&j.findings);
    if !j.findings.is_empty() {
        let _ = writeln!(out);
    }
    match &fabric.master {
        Some(m) => {
            let standby: Vec<String> = fabric.others.iter().map(|o| format!("LID {} {} priority {}", o.lid, o.state.name(), o.priority)).collect();
            let _ = writeln!(
                out,
                "SM  LID {} {} priority {} {}; others: {}",
                m.lid,
                m.guid,
                m.priority,
                m.state.name(),
                if standby.is_empty() { "none".into() } else { standby.join(", ") }
            );
        }
        None => {
            let _ = writeln!(out, "SM  none answering (local port {}/{} SM LID {})", fabric.local.ca, fabric.local.port, fabric.local.sm_lid);
        }
    }
    let index = Index::new(fabric);
    let tiers = crate::fabric::design::tiers::tiers(&index);
    let over = crate::fabric::design::tiers::oversubscription(&index, &tiers);
    let mut switches: Vec<_> = fabric.nodes.iter().filter(|n| n.node_type == NodeType::Switch).collect();
    switches.sort_by_key(|n| node_name(n));
    for sw in switches {
        let tier = tiers.get(&sw.guid).map_or(String::new(), |p| {
            let ratio = over.get(&sw.guid).map_or(String::new(), |o| format!(", oversubscription {:.2}:1", o.ratio()));
            format!("  tier {} ({}{ratio})", p.tier.name(), p.reason)
        });
        let _ = writeln!(out, "\nSwitch {} {} LID {}{tier}", node_name(sw), sw.guid, sw.lid());
        let mut idle = 0;
        for port in sw.ports.iter().filter(|p| p.number != 0) {
            let marks = j.marks.get(&(sw.guid, port.number)).map(|m| dedup(m)).unwrap_or_default();
            let info = &port.info;
            match index.peer_of(sw.guid, port.number) {
                Some(peer) => {
                    let rate = info.rate_gbps().map_or("?".into(), gbps);
                    let _ = writeln!(
                        out,
                        "  {:>3} ==( {:>3} {:<5} {:>5} Gb/s {:>6}/{:<8})==> {:<28} LID {:<5}{}",
                        port.number,
                        info.width_active.name(),
                        info.speed_active.name(),
                        rate,
                        info.state.name(),
                        info.phys_state.name(),
                        peer.name(),
                        peer.port.lid,
                        if marks.is_empty() { String::new() } else { format!("  <- {marks}") }
                    );
                }
                None if !marks.is_empty() || info.link_up() => {
                    let _ = writeln!(
                        out,
                        "  {:>3} ==( {:^23} {:>6}/{:<8})==> {:<28}     {}",
                        port.number,
                        "",
                        info.state.name(),
                        info.phys_state.name(),
                        if info.link_up() { "(no answer)" } else { "" },
                        if marks.is_empty() { String::new() } else { format!("  <- {marks}") }
                    );
                }
                None => idle += 1,
            }
        }
        if idle > 0 {
            let _ = writeln!(out, "      ({idle} ports without a link)");
        }
    }
    let ca_links: Vec<_> = index.links.iter().filter(|l| l.a.node.node_type != NodeType::Switch).collect();
    if !ca_links.is_empty() {
        let _ = writeln!(out, "\nLinks without a switch");
        for l in ca_links {
            let i = &l.a.port.info;
            let _ = writeln!(out, "  {} ==( {} {} )==> {}", end_name(l.a.node, l.a.port.number), i.width_active, i.speed_active, l.b.name());
        }
    }
    let errors = j.findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = j.findings.iter().filter(|f| f.severity == Severity::Warning).count();
    let switches = fabric.nodes.iter().filter(|n| n.node_type == NodeType::Switch).count();
    let counters =
        if fabric.counters_read { format!("counters of {} error kinds read", ErrorCounter::ALL.len()) } else { "counters not read (no LIDs)".into() };
    let _ = writeln!(
        out,
        "\n{}: {} ({}), {}, {counters}; {}, {}",
        if verdict(j) == Verdict::Pass { "PASS" } else { "FAIL" },
        crate::units::count(fabric.nodes.len(), "node"),
        crate::units::count(switches, "switch"),
        crate::units::count(index.links.len(), "link"),
        crate::units::count(errors, "error"),
        crate::units::count(warnings, "warning")
    );
    out
}

fn dedup(ids: &[crate::outcome::FindingId]) -> String {
    let mut v: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v.join(" ")
}

/// The document with the route walk's figures, where the forwarding tables were read.
#[derive(Serialize)]
struct WithRoutes<'a, D: Serialize> {
    #[serde(flatten)]
    doc: D,
    #[serde(skip_serializing_if = "Option::is_none")]
    routes: Option<&'a crate::fabric::routes::judge::RouteFigures>,
}

/// `fabric`'s result: what was discovered and judged, and how long it took.
pub struct FabricReport<'a> {
    pub fabric: &'a Fabric,
    pub judgement: &'a Judgement,
    pub elapsed_ms: u64,
    /// `fabric.route`'s figures, when the forwarding tables were read.
    pub routes: Option<&'a crate::fabric::routes::judge::RouteFigures>,
}

impl crate::report::Document for FabricReport<'_> {
    fn command(&self) -> crate::report::Command {
        crate::report::Command::Fabric
    }

    fn verdict(&self) -> Option<Verdict> {
        Some(verdict(self.judgement))
    }

    fn has_warning(&self) -> bool {
        crate::outcome::any_warning(&self.judgement.findings)
    }

    fn human(&self) -> String {
        let mut out = human(self.fabric, self.judgement);
        if let Some(routes) = self.routes {
            out += &routes_line(routes);
        }
        out
    }

    fn write_json(&self, out: &mut dyn std::io::Write, stamp: &crate::report::Stamp, verdict: Option<Verdict>) -> std::io::Result<()> {
        let doc = WithRoutes { doc: document(self.fabric, self.judgement, self.elapsed_ms), routes: self.routes };
        crate::report::json::write_sorted(out, &doc, stamp, verdict)
    }

    fn feed(&self, sink: &mut dyn crate::report::Sink) -> std::io::Result<()> {
        self.judgement.findings.iter().for_each(|f| sink.finding(f));
        sink.tally(&crate::outcome::Tally::Links(Index::new(self.fabric).links.len()));
        Ok(())
    }
}

/// The route walk in one line (and each leaf's uplink load): what was walked, and the seed
/// that repeats a sample.
fn routes_line(r: &crate::fabric::routes::judge::RouteFigures) -> String {
    let walked = match r.seed {
        Some(seed) => format!("{} of {} host pairs walked (a sample: --seed {seed} repeats it)", r.walked, r.pairs),
        None => format!("{} host pairs walked (every pair)", r.walked),
    };
    let mut out = format!(
        "Routes: {walked} through {} switch forwarding tables ({} SMPs); longest route {} switches, {}-tier tree\n",
        r.switches_with_tables, r.mads, r.longest_route, r.depth
    );
    for leaf in &r.uplinks {
        let loads: Vec<String> = leaf.ports.iter().map(|p| format!("{}:{}", p.port, p.destinations)).collect();
        let _ = writeln!(out, "  uplinks of {}: {} (port:destinations)", leaf.leaf, loads.join(" "));
    }
    out
}

#[cfg(test)]
mod words_tests {
    use super::*;
    use crate::outcome::{Finding, FindingId};

    /// Issue #57: `fabric` repeated one warning on every link; it is one entry with a count.
    #[test]
    fn one_warning_per_cause_with_a_count() {
        let same = |s: &str| Finding::new(FindingId::FabricLinkWidth, Severity::Warning, s, "link trained at 2X of 4X", "reseat the cable");
        let other = Finding::new(FindingId::FabricLinkWidth, Severity::Warning, "sw1/9", "link trained at 1X of 4X", "reseat the cable");
        let findings: Vec<Finding> = ["sw1/1", "sw1/2", "sw1/3", "sw1/4", "sw1/5"].into_iter().map(same).chain([other]).collect();
        let text = findings_text(&findings);
        assert_eq!(text.matches("link trained at 2X of 4X").count(), 1, "{text}");
        assert!(text.contains("sw1/1, sw1/2, sw1/3 and 2 more (5x)"), "{text}");
        assert!(text.contains("link trained at 1X of 4X"), "{text}");
    }
}
