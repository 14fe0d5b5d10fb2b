//! `collective --html FILE` (pure): one self-contained page (no script, no outside resource):
//! the verdict and figures, each ring drawn as a circle of its members with an arrow per hop,
//! the slow hops marked, the suspects and the hop table. A slow hop (a `collective.hop`
//! finding) is drawn red AND dashed and its table row says `slow`: no reading depends on colour
//! alone. Every outside string is escaped (`sanitise::xml`); the page is well-formed XML.

use super::doc::{CollectiveDoc, MemberDoc, RingDoc};
use crate::outcome::{FindingId, Verdict};
use crate::sanitise::xml as x;
use std::collections::BTreeSet;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:1.5em}\
td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left}.slow{background:#f7d4d4}\
line.hop{stroke:#4a7;stroke-width:2}line.slow{stroke:#c22;stroke-width:4;stroke-dasharray:8 4}\
circle{fill:#eef;stroke:#557}text{font-size:11px}";

/// The side of each ring's drawing, in pixels.
const SIDE: f64 = 420.0;

/// A member as the findings name it: `host/device` (as `blame::label`).
fn label(m: &MemberDoc) -> String {
    format!("{}/{}", crate::sanitise::one_line(&m.host), crate::sanitise::one_line(&m.device))
}

pub fn render(doc: &CollectiveDoc, stamp: &crate::report::Stamp) -> String {
    let verdict = if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" };
    // The hops a `collective.hop` finding names, by their `from -> to` label.
    let slow: BTreeSet<String> = doc.findings.iter().filter(|f| f.id == FindingId::CollectiveHop).map(|f| f.subject.to_string()).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/><title>fabcheck collective: {verdict}</title><style>{STYLE}</style></head><body>"
    );
    let _ = writeln!(
        out,
        "<h1>fabcheck collective {}: {verdict}</h1><p>{} members, {} rings, {} bytes, {} iterations; busbw {:.3} Gb/s in total; run on {} at {} (fabcheck {})</p>",
        x(&doc.op.to_string()),
        doc.members.len(),
        doc.rings.len(),
        doc.size,
        doc.iters,
        doc.total.busbw_gbps,
        x(&stamp.host),
        x(&stamp.time),
        x(stamp.fabcheck_version)
    );
    out.push_str("<h2>Suspects</h2>\n");
    if doc.suspects.is_empty() {
        out.push_str("<p>None.</p>\n");
    } else {
        out.push_str("<table id=\"suspects\"><tr><th>kind</th><th>subject</th><th>why</th></tr>\n");
        for s in &doc.suspects {
            let _ = writeln!(out, "<tr class=\"slow\"><td>{}</td><td>{}</td><td>{}</td></tr>", s.kind.name(), x(&s.subject), x(&s.reason));
        }
        out.push_str("</table>\n");
    }
    for ring in &doc.rings {
        ring_section(&mut out, doc, ring, &slow);
    }
    out.push_str("</body></html>\n");
    out
}

fn ring_section(out: &mut String, doc: &CollectiveDoc, ring: &RingDoc, slow: &BTreeSet<String>) {
    let name = super::blame::ring_label(ring.rail);
    let capacity = ring.capacity_gbps.map_or_else(|| "capacity not known".to_string(), |c| format!("capacity {c:.1} Gb/s"));
    let _ = writeln!(out, "<h2>{}</h2><p>busbw {:.3} Gb/s, algbw {:.3} Gb/s, {capacity}</p>", x(&name), ring.busbw_gbps, ring.algbw_gbps);
    let member = |i: u32| doc.members.get(i as usize);
    let n = ring.order.len().max(1);
    let place = |i: u32| {
        let at = ring.order.iter().position(|&m| m == i).unwrap_or(0) as f64;
        let angle = std::f64::consts::TAU * at / n as f64 - std::f64::consts::FRAC_PI_2;
        (SIDE / 2.0 + SIDE * 0.38 * angle.cos(), SIDE / 2.0 + SIDE * 0.38 * angle.sin())
    };
    let hop_name = |from: u32, to: u32| format!("{} -> {}", member(from).map_or_else(String::new, label), member(to).map_or_else(String::new, label));
    let _ = writeln!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{SIDE}\" height=\"{SIDE}\" role=\"img\">");
    for h in &ring.hops {
        let ((x1, y1), (x2, y2)) = (place(h.from), place(h.to));
        let class = if slow.contains(&hop_name(h.from, h.to)) { "hop slow" } else { "hop" };
        let _ = writeln!(
            out,
            "<line class=\"{class}\" x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\"><title>{}</title></line>",
            x(&hop_name(h.from, h.to))
        );
    }
    for &m in &ring.order {
        let (cx, cy) = place(m);
        let text = member(m).map_or_else(String::new, label);
        let _ = writeln!(out, "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"6\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>", cx + 8.0, cy - 8.0, x(&text));
    }
    out.push_str("</svg>\n<table class=\"hops\"><tr><th>hop</th><th>Gb/s</th><th>step p50 us</th><th>step p99 us</th><th></th></tr>\n");
    for h in &ring.hops {
        let name = hop_name(h.from, h.to);
        let is_slow = slow.contains(&name);
        let (p50, p99) = h.step_us.as_ref().map_or((String::new(), String::new()), |s| (format!("{:.1}", s.p50), format!("{:.1}", s.p99)));
        let _ = writeln!(
            out,
            "<tr{}><td>{}</td><td>{:.3}</td><td>{p50}</td><td>{p99}</td><td>{}</td></tr>",
            if is_slow { " class=\"slow\"" } else { "" },
            x(&name),
            h.gbps,
            if is_slow { "slow" } else { "" }
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::doc::{HopDoc, Total, SCHEMA};
    use crate::collective::op::Op;
    use crate::outcome::{Finding, Severity};

    fn doc(slow_hop: Option<&str>) -> CollectiveDoc {
        let members: Vec<MemberDoc> =
            ["n1", "n2", "n3<&>"].iter().map(|h| MemberDoc { host: (*h).to_string(), device: "mlx5_0".into(), rail: Some(0) }).collect();
        let hop = |from, to, gbps| HopDoc { from, to, step_us: None, gbps, paths: Vec::new() };
        let findings = slow_hop
            .map(|s| vec![Finding::new(FindingId::CollectiveHop, Severity::Error, s, "20.0 Gb/s: 9.0x its ring's median hop", "pair over it")])
            .unwrap_or_default();
        CollectiveDoc {
            schema: SCHEMA.into(),
            verdict: if slow_hop.is_some() { Verdict::Fail } else { Verdict::Pass },
            op: Op::AllReduce,
            size: 1 << 20,
            iters: 4,
            members,
            rings: vec![RingDoc {
                rail: Some(0),
                order: vec![0, 1, 2],
                algbw_gbps: 100.0,
                busbw_gbps: 133.3,
                capacity_gbps: Some(200.0),
                hops: vec![hop(0, 1, 180.0), hop(1, 2, 20.0), hop(2, 0, 181.0)],
            }],
            total: Total { algbw_gbps: 100.0, busbw_gbps: 133.3 },
            suspects: Vec::new(),
            findings,
            bisect: Vec::new(),
        }
    }

    fn stamp() -> crate::report::Stamp {
        crate::report::Stamp { host: "ctl".into(), fabcheck_version: "test", time: "2026-12-04T00:00:00Z".into() }
    }

    #[test]
    fn the_slow_hop_is_drawn_dashed_and_said_in_words_and_nothing_else_is() {
        let page = render(&doc(Some("n2/mlx5_0 -> n3<&>/mlx5_0")), &stamp());
        assert_eq!(page.matches("class=\"hop slow\"").count(), 1, "{page}");
        assert_eq!(page.matches("<td>slow</td>").count(), 1, "{page}");
        assert!(page.contains("n2/mlx5_0 -&gt; n3&lt;&amp;&gt;/mlx5_0"), "escaped: {page}");
        assert!(!page.contains("n3<&>"), "an outside string unescaped: {page}");
        let clean = render(&doc(None), &stamp());
        assert!(!clean.contains("hop slow") && !clean.contains("<td>slow</td>"), "{clean}");
        assert_eq!(clean.matches("<line class=\"hop\"").count(), 3);
    }
}
