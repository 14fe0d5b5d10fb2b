//! `accept --format junit`: one `<testsuite>` per stage (contract 0.5): `check` a case per node
//! (failed: its errors; unreachable: counted as an error, naming why), `drift` a case per key that
//! differs (failed on an error drift); each stage of levels 2 and 3 a case per node it ran on
//! (failed: what it found there), each node it could not reach an error case, a stage that
//! could not run one failed case saying why, a skipped stage one skipped case saying why.
//! Valid against tests/schemas/junit-10.xsd.

use super::report::{AcceptDoc, NodeVerdict, Stage};
use super::stage::StageName;
use crate::outcome::{FindingId, Severity};
use crate::report::Stamp;
use crate::sanitise::xml as x;
use std::fmt::Write;

struct Case {
    name: String,
    failure: Option<String>,
    error: Option<String>,
    skipped: Option<String>,
}

impl Case {
    fn new(name: impl Into<String>, failure: Option<String>, error: Option<String>) -> Case {
        Case { name: name.into(), failure, error, skipped: None }
    }
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
                // A later stage's finding is that stage's case, not check's.
                .filter(|f| !doc.stages.iter().flat_map(|s| &s.blamed).any(|(h, g)| *h == n.host && g == *f))
                .map(|f| format!("{} {}: {}", f.id, f.subject, f.message))
                .collect();
            let joined = (!errors.is_empty()).then(|| errors.join("; "));
            match n.verdict {
                NodeVerdict::Unreachable => Case::new(n.host.clone(), None, joined),
                _ => Case::new(n.host.clone(), joined, None),
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
            Case::new(d.key.clone(), error.then_some(text), None)
        })
        .collect();
    let mut suites: Vec<(&str, Vec<Case>)> = vec![("check", check), ("drift", drift)];
    for stage in doc.stages.iter().filter(|s| !matches!(s.name, StageName::Check | StageName::Drift)) {
        suites.push((stage.name.as_str(), stage_cases(doc, stage)));
    }
    let total: usize = suites.iter().map(|(_, c)| c.len()).sum();
    let failures: usize = suites.iter().map(|(_, c)| c.iter().filter(|c| c.failure.is_some()).count()).sum();
    let errors: usize = suites.iter().map(|(_, c)| c.iter().filter(|c| c.error.is_some()).count()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"fabcheck accept\" tests=\"{total}\" failures=\"{failures}\" errors=\"{errors}\" time=\"0.000\">");
    for (stage, cases) in &suites {
        let f = cases.iter().filter(|c| c.failure.is_some()).count();
        let e = cases.iter().filter(|c| c.error.is_some()).count();
        let sk = cases.iter().filter(|c| c.skipped.is_some()).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"fabcheck accept {stage}\" hostname=\"{}\" tests=\"{}\" failures=\"{f}\" errors=\"{e}\" skipped=\"{sk}\" time=\"0.000\" timestamp=\"{}\">",
            x(&stamp.host),
            cases.len(),
            x(&stamp.time)
        );
        for c in cases {
            let open = format!("    <testcase classname=\"fabcheck.accept.{stage}\" name=\"{}\" time=\"0.000\"", x(&c.name));
            if let Some(why) = &c.skipped {
                let _ = writeln!(out, "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>", x(why));
                continue;
            }
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

/// A stage of levels 2 and 3 as cases: skipped (one case), could not run (one failed case),
/// else a case per node it ran on, failed where it found something, and an error case per
/// node it could not reach.
fn stage_cases(doc: &AcceptDoc, stage: &Stage) -> Vec<Case> {
    if let Some(why) = &stage.skipped {
        return vec![Case { skipped: Some(why.clone()), ..Case::new(stage.name.as_str(), None, None) }];
    }
    let mut cases = Vec::new();
    if let Some(why) = &stage.error {
        cases.push(Case::new(format!("{} could not run", stage.name), Some(why.clone()), None));
    }
    for n in &doc.nodes {
        if stage.unreachable.contains(&n.host) {
            cases.push(Case::new(n.host.clone(), None, Some(format!("{} did not reach it", stage.name))));
            continue;
        }
        let found: Vec<String> = stage
            .blamed
            .iter()
            .filter(|(h, f)| *h == n.host && f.severity != Severity::Info)
            .map(|(_, f)| format!("{} {}: {}", f.id, f.subject, f.message))
            .collect();
        cases.push(Case::new(n.host.clone(), (!found.is_empty()).then(|| found.join("; ")), None));
    }
    cases
}
