//! `--format junit`: JUnit XML, one testcase per check (check, fabric: per finding) or per test
//! result (pair, mesh), `<failure>` for what failed, so CI systems show each as a test.

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
    let fails = |severity: &str| severity == "error" || (severity == "warning" && crate::report::output::fail_on_warning());
    let failure_of = |id: &str, subject: &str| findings.iter().find(|f| fails(f.1) && f.0 == id && f.2 == subject).map(|f| f.3.to_string());
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
    for (key, pair_name) in [("results", None), ("pairs", Some(()))] {
        let Some(list) = doc[key].as_array() else { continue };
        for item in list {
            if pair_name.is_some() {
                let name = format!("{} <-> {}", item["a"].as_str().unwrap_or(""), item["b"].as_str().unwrap_or(""));
                let failure = (item["verdict"] == "fail").then(|| item["error"].as_str().unwrap_or("failed").to_string());
                out.push(Case { class: format!("fabcheck.{command}.pair"), name, failure, skipped: false });
            } else {
                let name = format!("{} {} {}", item["test"].as_str().unwrap_or(""), item["direction"].as_str().unwrap_or(""), item["size"]);
                let failure = item["error"].as_str().map(str::to_string);
                out.push(Case { class: format!("fabcheck.{command}.{}", item["test"].as_str().unwrap_or("test")), name, failure, skipped: false });
            }
        }
    }
    // Findings no check or result stands for (pair verdict findings, fabric, mesh suspects).
    for (id, severity, subject, message) in &findings {
        if *severity != "error" || out.iter().any(|c| c.failure.as_deref() == Some(message)) {
            continue;
        }
        out.push(Case { class: format!("fabcheck.{command}.{id}"), name: subject.to_string(), failure: Some(message.to_string()), skipped: false });
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
