//! `accept --html FILE`: one self-contained page (no script, no outside resource): the stages'
//! results, the node table, the drift, the drain list, then each traffic stage's own page
//! (mesh's heat map for the `pair` ring and the `mesh` shift, collective's rings) embedded
//! whole in an `<iframe srcdoc>`, so each keeps its own styles. Every outside string is escaped
//! (`sanitise::xml`).

use super::report::{AcceptDoc, NodeVerdict};
use crate::outcome::{Severity, Verdict};
use crate::sanitise::xml as x;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:1.5em}\
td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left;vertical-align:top}\
iframe.stage{width:100%;height:720px;border:1px solid #bbb}.pass{background:#d9f2d9}.fail{background:#f7d4d4}.unreachable{background:#e0e0e0}.warn{background:#fcefc7}";

pub fn render(doc: &AcceptDoc, stamp: &crate::report::Stamp) -> String {
    let mut out = String::new();
    let verdict = if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fabcheck accept: {verdict}</title><style>{STYLE}</style></head><body>\n"
    );
    let _ = writeln!(
        out,
        "<h1>fabcheck accept: {verdict}</h1><p>level {}, {} nodes, {} to drain; run on {} at {} (fabcheck {})</p>",
        doc.level,
        doc.nodes.len(),
        doc.drain.len(),
        x(&stamp.host),
        x(&stamp.time),
        x(stamp.fabcheck_version)
    );
    out.push_str("<h2>Stages</h2><table id=\"stages\"><tr><th>stage</th><th>verdict</th><th>seconds</th><th>unreachable</th><th>notes</th></tr>\n");
    for s in &doc.stages {
        let (class, word) = match (&s.skipped, s.verdict) {
            (Some(_), _) => ("unreachable", "skipped"),
            (None, Verdict::Pass) => ("pass", "pass"),
            (None, Verdict::Fail) => ("fail", "fail"),
        };
        let seconds = s.seconds.map_or(String::new(), |t| format!("{t:.1}"));
        let lost: Vec<String> = s.unreachable.iter().map(|h| x(h)).collect();
        let note = s.skipped.as_deref().or(s.error.as_deref()).map(x).unwrap_or_else(|| match &s.document {
            serde_json::Value::String(schema) => format!("results in the node table ({})", x(schema)),
            _ => String::new(),
        });
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{word}</td><td>{seconds}</td><td>{}</td><td>{note}</td></tr>",
            s.name,
            lost.join("<br>")
        );
    }
    out.push_str("</table>\n<h2>Nodes</h2><table id=\"nodes\"><tr><th>host</th><th>verdict</th><th>findings (errors and warnings, with their action)</th></tr>\n");
    for n in &doc.nodes {
        let (class, word) = match n.verdict {
            NodeVerdict::Pass => ("pass", "pass"),
            NodeVerdict::Fail => ("fail", "fail"),
            NodeVerdict::Unreachable => ("unreachable", "unreachable"),
        };
        let findings: Vec<String> = n
            .findings
            .iter()
            .filter(|f| f.severity != Severity::Info)
            .map(|f| format!("{} {} [{}]: {}", x(f.id.as_str()), x(&f.subject.to_string()), crate::outcome::action::of(f), x(&f.message)))
            .collect();
        let _ = writeln!(out, "<tr class=\"{class}\"><td>{}</td><td>{word}</td><td>{}</td></tr>", x(&n.host), findings.join("<br>"));
    }
    out.push_str("</table>\n<h2>Drift</h2>\n");
    if doc.drift.is_empty() {
        out.push_str("<p>Every node agrees on every key.</p>\n");
    } else {
        out.push_str("<table id=\"drift\"><tr><th>key</th><th>majority</th><th>nodes that differ</th></tr>\n");
        for d in &doc.drift {
            let nodes: Vec<String> = d.nodes.iter().map(|n| format!("{}: {}", x(&n.host), x(&n.value))).collect();
            let majority = d.majority.as_deref().map_or("no majority (split)".to_string(), x);
            let _ = writeln!(out, "<tr class=\"warn\"><td>{}</td><td>{majority}</td><td>{}</td></tr>", x(&d.key), nodes.join("<br>"));
        }
        out.push_str("</table>\n");
    }
    out.push_str("<h2>Drain list</h2>\n");
    if doc.drain.is_empty() {
        out.push_str("<p>No node to drain.</p>\n");
    } else {
        out.push_str("<table id=\"drain\"><tr><th>host</th><th>action</th><th>reason</th></tr>\n");
        for d in &doc.drain {
            let _ = writeln!(out, "<tr class=\"fail\"><td>{}</td><td>{}</td><td>{}</td></tr>", x(&d.host), d.action, x(&d.reason));
        }
        out.push_str("</table>\n");
    }
    for s in doc.stages.iter().filter(|s| s.page.is_some()) {
        let page = s.page.as_deref().unwrap_or("");
        let _ = writeln!(
            out,
            "<h2 id=\"stage-{0}\">Stage {0}</h2>\n<iframe class=\"stage\" title=\"{0}\" sandbox=\"\" srcdoc=\"{1}\"></iframe>",
            s.name,
            x(page)
        );
    }
    out.push_str("</body></html>\n");
    out
}
