//! `accept --format junit`: one `<testsuite>` per stage (contract 0.5): `check` a case per node
//! (failed: its errors; unreachable: counted as an error, naming why), `drift` a case per key that
//! differs (failed on an error drift). Valid against tests/schemas/junit-10.xsd.

use super::report::{AcceptDoc, NodeVerdict};
use crate::outcome::{FindingId, Severity};
use crate::report::Stamp;
use crate::sanitise::xml as x;
use std::fmt::Write;

struct Case {
    name: String,
    failure: Option<String>,
    error: Option<String>,
}

pub fn render(doc: &AcceptDoc, stamp: &Stamp) -> String {
    let check: Vec<Case> = doc
        .nodes
        .iter()
        .map(|n| {
            let errors: Vec<String> = n
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error && f.id != FindingId::AcceptDrift)
                .map(|f| format!("{} {}: {}", f.id, f.subject, f.message))
                .collect();
            let joined = (!errors.is_empty()).then(|| errors.join("; "));
            match n.verdict {
                NodeVerdict::Unreachable => Case { name: n.host.clone(), failure: None, error: joined },
                _ => Case { name: n.host.clone(), failure: joined, error: None },
            }
        })
        .collect();
    let drift: Vec<Case> = doc
        .drift
        .iter()
        .map(|d| {
            let nodes: Vec<String> = d.nodes.iter().map(|n| format!("{} has {}", n.host, n.value)).collect();
            let error = doc.nodes.iter().flat_map(|n| &n.findings).any(|f| {
                f.id == FindingId::AcceptDrift && f.severity == Severity::Error && f.subject == crate::outcome::Subject::Text(d.key.clone())
            });
            let majority = d.majority.as_deref().unwrap_or("no majority");
            let text = format!("{}: majority {majority}; {}", d.key, nodes.join(", "));
            Case { name: d.key.clone(), failure: error.then_some(text), error: None }
        })
        .collect();
    let suites = [("check", check), ("drift", drift)];
    let total: usize = suites.iter().map(|(_, c)| c.len()).sum();
    let failures: usize = suites.iter().map(|(_, c)| c.iter().filter(|c| c.failure.is_some()).count()).sum();
    let errors: usize = suites.iter().map(|(_, c)| c.iter().filter(|c| c.error.is_some()).count()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"fabcheck accept\" tests=\"{total}\" failures=\"{failures}\" errors=\"{errors}\" time=\"0.000\">");
    for (stage, cases) in &suites {
        let f = cases.iter().filter(|c| c.failure.is_some()).count();
        let e = cases.iter().filter(|c| c.error.is_some()).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"fabcheck accept {stage}\" hostname=\"{}\" tests=\"{}\" failures=\"{f}\" errors=\"{e}\" skipped=\"0\" time=\"0.000\" timestamp=\"{}\">",
            x(&stamp.host),
            cases.len(),
            x(&stamp.time)
        );
        for c in cases {
            let open = format!("    <testcase classname=\"fabcheck.accept.{stage}\" name=\"{}\" time=\"0.000\"", x(&c.name));
            match (&c.failure, &c.error) {
                (Some(text), _) => {
                    let _ = writeln!(out, "{open}>\n      <failure message=\"{0}\">{0}</failure>\n    </testcase>", x(text));
                }
                // Counted as an error; held in a `<failure>` as report/junit.rs does (the
                // schema's `<errors>` element is a plural no consumer reads).
                (None, Some(text)) => {
                    let text = format!("unreachable: {text}");
                    let _ = writeln!(out, "{open}>\n      <failure message=\"{0}\">{0}</failure>\n    </testcase>", x(&text));
                }
                (None, None) => {
                    let _ = writeln!(out, "{open}/>");
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
