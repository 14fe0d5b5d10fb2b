//! The human view of a collective: each ring's figures, the hops named, the suspects, the
//! bisection's runs and the verdict. (oneline, prom and JUnit come from the findings through
//! `report::output`, as for every command.) And `CollectiveReport`: the document as
//! `report::output` delivers it.

use super::doc::CollectiveDoc;
use crate::outcome::{Severity, Verdict};
use crate::sanitise::one_line;
use std::fmt::Write;

/// Hops listed per ring beyond the named ones: the slowest, so a passing run shows its tail.
const SLOWEST_SHOWN: usize = 3;

pub fn human(doc: &CollectiveDoc, quiet: bool) -> String {
    let mut out = String::new();
    let name =
        |i: u32| doc.members.get(i as usize).map_or_else(|| format!("member {i}"), |m| format!("{}/{}", one_line(&m.host), one_line(&m.device)));
    if !quiet {
        let _ = writeln!(
            out,
            "fabcheck collective: {} over {} members, {} ring{}, {} bytes per member, {} iteration{}",
            doc.op,
            doc.members.len(),
            doc.rings.len(),
            if doc.rings.len() == 1 { "" } else { "s" },
            doc.size,
            doc.iters,
            if doc.iters == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "\n  {:<8} {:>7} {:>11} {:>11} {:>10}", "ring", "members", "algbw Gb/s", "busbw Gb/s", "link Gb/s");
        for r in &doc.rings {
            let ring = r.rail.map_or_else(|| "ring".into(), |k| format!("rail {k}"));
            let cap = r.capacity_gbps.map_or_else(|| "-".into(), |c| format!("{c:.0}"));
            let _ = writeln!(out, "  {:<8} {:>7} {:>11.1} {:>11.1} {:>10}", ring, r.order.len(), r.algbw_gbps, r.busbw_gbps, cap);
        }
        let _ = writeln!(out, "  {:<8} {:>7} {:>11.1} {:>11.1}", "total", doc.members.len(), doc.total.algbw_gbps, doc.total.busbw_gbps);
        for r in &doc.rings {
            let mut hops: Vec<_> = r.hops.iter().collect();
            hops.sort_by(|a, b| a.gbps.total_cmp(&b.gbps));
            let ring = r.rail.map_or_else(|| "ring".into(), |k| format!("rail {k}"));
            let _ = writeln!(out, "\n  slowest hops of {ring}:");
            for h in hops.iter().take(SLOWEST_SHOWN) {
                let p50 = h.step_us.as_ref().map_or_else(|| "-".into(), |s| format!("{:.1}", s.p50));
                let p99 = h.step_us.as_ref().map_or_else(|| "-".into(), |s| format!("{:.1}", s.p99));
                let _ = writeln!(out, "    {} -> {}: step p50 {p50} us, p99 {p99} us, {:.1} Gb/s", name(h.from), name(h.to), h.gbps);
            }
            paths(&mut out, r, &name);
        }
    }
    let named: Vec<_> = doc.findings.iter().filter(|f| f.severity != Severity::Info || !quiet).collect();
    if !named.is_empty() {
        let _ = writeln!(out, "\nFindings:");
        for f in named {
            let _ = writeln!(
                out,
                "  {:<7} {} {}: {}",
                format!("{:?}", f.severity).to_lowercase(),
                f.id,
                one_line(&f.subject.to_string()),
                one_line(&f.message)
            );
        }
    }
    if !doc.bisect.is_empty() {
        let _ = writeln!(out, "\nBisection: {} runs", doc.bisect.len());
        for s in &doc.bisect {
            let first: Vec<String> = s.members.iter().take(4).map(|m| name(*m)).collect();
            let more = if s.members.len() > 4 { format!(" and {} more", s.members.len() - 4) } else { String::new() };
            let _ = writeln!(out, "  {:<4} {:>8.1} Gb/s  {}{more}", verdict(s.verdict), s.busbw_gbps, first.join(", "));
        }
    }
    let _ = writeln!(out, "\nVerdict: {}", verdict(doc.verdict));
    out
}

/// `--paths`: each hop with a slow path, every path by its UDP source port (the slow ones
/// marked), then the other hops in one line.
fn paths(out: &mut String, r: &super::doc::RingDoc, name: &dyn Fn(u32) -> String) {
    let several: Vec<_> = r.hops.iter().filter(|h| h.paths.len() > 1).collect();
    let Some(n) = several.iter().map(|h| h.paths.len()).max() else { return };
    let ring = r.rail.map_or_else(|| "ring".into(), |k| format!("rail {k}"));
    let _ = writeln!(out, "\n  paths of {ring} ({n} per hop, Gb/s by UDP source port):");
    let mut fine = 0;
    for h in several {
        let slow = super::paths::slow_ports(&h.paths);
        if slow.is_empty() {
            fine += 1;
            continue;
        }
        let each: Vec<String> =
            h.paths.iter().map(|p| format!("UDP {} {:.1}{}", p.udp_sport, p.gbps, if slow.contains(&p.udp_sport) { " slow" } else { "" })).collect();
        let _ = writeln!(out, "    {} -> {}: {}", name(h.from), name(h.to), each.join(", "));
    }
    if fine > 0 {
        let _ = writeln!(out, "    {fine} hop{} with every path within half its siblings' median", if fine == 1 { "" } else { "s" });
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
    }
}

/// The document and how the human view is asked for.
pub type CollectiveReport = crate::report::Judged<CollectiveDoc>;

/// Findings only to the machine printers: every suspect, ring and hop the run judged is one.
impl crate::report::JudgedDoc for CollectiveDoc {
    const COMMAND: crate::report::Command = crate::report::Command::Collective;

    fn judged(&self) -> (Verdict, &[crate::outcome::Finding]) {
        (self.verdict, &self.findings)
    }

    fn human(&self, quiet: bool) -> String {
        human(self, quiet)
    }
}
