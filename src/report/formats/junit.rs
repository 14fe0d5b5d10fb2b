//! `--format junit`: JUnit XML, one testcase per check (check, fabric: per finding) or per test
//! result (pair, mesh), `<failure>` for what failed, so CI systems show each as a test.

use crate::diagnose::Severity;
use serde_json::Value;
use std::fmt::Write;

fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 allows tab, newline and carriage return among the control characters.
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

struct Case {
    class: String,
    name: String,
    failure: Option<String>,
    skipped: bool,
}

fn cases(doc: &Value, command: &str) -> Vec<Case> {
    let findings = super::findings(doc);
    // A row's failure is its error finding, or with `--fail-on warning` its warning.
    let fails = |severity: Severity| severity == Severity::Error || (severity == Severity::Warning && crate::report::output::fail_on_warning());
    let failure_of =
        |id: &str, subject: &str| findings.iter().find(|f| fails(f.severity) && f.id == id && f.subject == subject).map(|f| f.message.to_string());
    let mut out = Vec::new();
    if let Some(checks) = doc["checks"].as_array() {
        for c in checks {
            let (id, subject) = (c["id"].as_str().unwrap_or(""), c["subject"].as_str().unwrap_or(""));
            out.push(Case {
                class: format!("fabcheck.{command}.{id}"),
                name: subject.to_string(),
                failure: failure_of(id, subject),
                skipped: c["status"] == "skip",
            });
        }
    }
    for item in doc["results"].as_array().into_iter().flatten() {
        let name = format!("{} {} {}", item["test"].as_str().unwrap_or(""), item["direction"].as_str().unwrap_or(""), item["size"]);
        let failure = item["error"].as_str().map(str::to_string);
        out.push(Case { class: format!("fabcheck.{command}.{}", item["test"].as_str().unwrap_or("test")), name, failure, skipped: false });
    }
    // pair --rails: one testcase per rail and test, named after the rail; its failure is the
    // test's error or the rail's error finding.
    for rail in doc["rails"].as_array().into_iter().flatten() {
        let subject = format!(
            "rail {} ({} {} <-> {} {})",
            rail["rail"],
            rail["a"]["host"].as_str().unwrap_or(""),
            rail["a"]["device"].as_str().unwrap_or(""),
            rail["b"]["host"].as_str().unwrap_or(""),
            rail["b"]["device"].as_str().unwrap_or("")
        );
        let finding = findings.iter().find(|f| fails(f.severity) && f.subject == subject).map(|f| f.message.to_string());
        let results = rail["results"].as_array().map(Vec::as_slice).unwrap_or_default();
        if results.is_empty() {
            out.push(Case { class: format!("fabcheck.{command}.rail"), name: subject, failure: finding, skipped: false });
            continue;
        }
        for r in results {
            let test = r["test"].as_str().unwrap_or("test");
            out.push(Case {
                class: format!("fabcheck.{command}.{test}"),
                name: format!("{subject} {} {}", r["direction"].as_str().unwrap_or(""), r["size"]),
                failure: r["error"].as_str().map(str::to_string).or_else(|| finding.clone()),
                skipped: false,
            });
        }
    }
    // mesh: one testcase per pair and test (the latest measure of a pair stands for it); a pair
    // that could not run is one testcase with its error.
    for pair in super::latest_pairs(doc) {
        let mut name = format!("{} <-> {}", pair["a"].as_str().unwrap_or(""), pair["b"].as_str().unwrap_or(""));
        // `mesh --rails`: the rail leads the name.
        if let Some(k) = pair["rail"].as_u64() {
            name = format!("rail {k}: {name}");
        }
        let failed = pair["verdict"] == "fail";
        let results = pair["results"].as_array().map(Vec::as_slice).unwrap_or_default();
        if results.is_empty() {
            let failure = failed.then(|| pair["error"].as_str().unwrap_or("failed").to_string());
            out.push(Case { class: format!("fabcheck.{command}.pair"), name, failure, skipped: false });
            continue;
        }
        for r in results {
            let test = r["test"].as_str().unwrap_or("test");
            let failure =
                r["error"].as_str().map(str::to_string).or_else(|| failed.then(|| format!("the pair {name} failed its verdict (see the suspects)")));
            out.push(Case {
                class: format!("fabcheck.{command}.{test}"),
                name: format!("{name} {} {}", r["direction"].as_str().unwrap_or(""), r["size"]),
                failure,
                skipped: false,
            });
        }
    }
    // Findings no check or result stands for (pair verdict findings, fabric, mesh suspects).
    for f in &findings {
        if f.severity != Severity::Error || out.iter().any(|c| c.failure.as_deref() == Some(f.message)) {
            continue;
        }
        out.push(Case {
            class: format!("fabcheck.{command}.{}", f.id),
            name: f.subject.to_string(),
            failure: Some(f.message.to_string()),
            skipped: false,
        });
    }
    out
}

pub fn render(doc: &Value) -> String {
    let command = super::command_of(doc);
    let cases = cases(doc, &command);
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let skipped = cases.iter().filter(|c| c.skipped).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"fabcheck\" tests=\"{}\" failures=\"{failures}\">", cases.len());
    let host = doc["host"].as_str().unwrap_or("");
    let _ = writeln!(
        out,
        "  <testsuite name=\"fabcheck {}\" hostname=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" timestamp=\"{}\">",
        esc(&command),
        esc(host),
        cases.len(),
        esc(doc["time"].as_str().unwrap_or(""))
    );
    for c in &cases {
        let _ = write!(out, "    <testcase classname=\"{}\" name=\"{}\"", esc(&c.class), esc(&c.name));
        match (&c.failure, c.skipped) {
            (Some(msg), _) => {
                let _ = writeln!(out, ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>", esc(msg), esc(msg));
            }
            (None, true) => out.push_str(">\n      <skipped/>\n    </testcase>\n"),
            (None, false) => out.push_str("/>\n"),
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mesh_has_a_testcase_per_pair_and_test() {
        let bw = |v: f64| json!({"test":"write_bw","direction":"a->b","size":65536,"bw_gbps":v});
        let doc = json!({"schema":"fabcheck.mesh.v1","verdict":"fail","host":"h","time":"t",
            "pairs":[{"a":"n1","b":"n2","verdict":"fail","results":[{"test":"send_lat","direction":"a->b","size":2}, bw(90.0)]},
                     {"a":"n1","b":"n3","verdict":"fail","results":[],"error":"cannot reach n3"},
                     {"a":"n2","b":"n1","verdict":"pass","results":[bw(191.0)],"retest":true}],
            "suspects":[{"kind":"node","subject":"n3","reason":"unreachable & <gone>"}]});
        let text = render(&doc);
        let xml = roxmltree::Document::parse(&text).expect("well-formed XML");
        let cases: Vec<(&str, &str, bool)> = xml
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|c| (c.attribute("classname").unwrap(), c.attribute("name").unwrap(), c.children().any(|n| n.has_tag_name("failure"))))
            .collect();
        assert_eq!(
            cases,
            [
                ("fabcheck.mesh.write_bw", "n2 <-> n1 a->b 65536", false),
                ("fabcheck.mesh.pair", "n1 <-> n3", true),
                ("fabcheck.mesh.mesh.suspect", "n3", true),
            ]
        );
        let suite = xml.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
        assert_eq!((suite.attribute("tests"), suite.attribute("failures")), (Some("3"), Some("2")));
    }
}
