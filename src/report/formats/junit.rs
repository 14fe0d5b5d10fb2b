//! `--format junit`: JUnit XML valid against the common schema (`junit-10.xsd`, Jenkins'
//! xUnit plugin's, which pytest follows; vendored in `tests/schemas/` and validated in the host
//! tier): one testcase per check row (check), per test result (pair), per pair and test (mesh),
//! its `<failure>` inside it; findings that no row or result stands for (fabric, mesh suspects,
//! a pair's own verdict) are cases of their own. Names are unique within the suite (a consumer
//! keys its history on them), and `tests`, `failures`, `errors`, `skipped` and `time` are on
//! the suite, `time` on each case (seconds, at most 3 decimals as the schema's pattern wants;
//! fabcheck does not time its rows, so `0.000`).

use super::text;
use crate::outcome::Severity;
use serde_json::Value;
use std::collections::BTreeSet;
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

/// The cases of a suite, their names made unique (a second `x` is `x (2)`).
#[derive(Default)]
struct Cases {
    list: Vec<Case>,
    names: BTreeSet<String>,
}

impl Cases {
    fn push(&mut self, mut case: Case) {
        if !self.names.insert(case.name.clone()) {
            let base = case.name.clone();
            let mut n = 2;
            while !self.names.insert(format!("{base} ({n})")) {
                n += 1;
            }
            case.name = format!("{base} ({n})");
        }
        self.list.push(case);
    }
}

/// A result's words as pair's findings begin them (`write_bw a->b at 65536 bytes: ...`): the
/// finding belongs to the result's case, not a case of its own.
fn about_result(message: &str, r: &Value) -> bool {
    let (test, dir) = (r["test"].as_str().unwrap_or(""), r["direction"].as_str().unwrap_or(""));
    !test.is_empty() && message.starts_with(&format!("{test} {dir} at {} bytes", r["size"]))
}

fn cases(doc: &Value, command: &str) -> Vec<Case> {
    let findings = super::findings(doc);
    // A row's failure is its error finding, or with `--fail-on warning` its warning.
    let fails = |severity: Severity| severity == Severity::Error || (severity == Severity::Warning && crate::report::output::fail_on_warning());
    let failing: Vec<_> = findings.iter().filter(|f| fails(f.severity)).collect();
    // Which failing findings a case already carries (each is said once, inside its case).
    let mut used = vec![false; failing.len()];
    let mut out = Cases::default();
    if let Some(checks) = doc["checks"].as_array() {
        for c in checks {
            let (id, subject) = (c["id"].as_str().unwrap_or(""), c["subject"].as_str().unwrap_or(""));
            let mut messages = Vec::new();
            for (i, f) in failing.iter().enumerate() {
                if f.id == id && f.subject == subject {
                    used[i] = true;
                    messages.push(f.message);
                }
            }
            // A row the document marks failed with no finding of its own still fails.
            if messages.is_empty() && c["status"] == "fail" {
                messages.push(c["observed"].as_str().unwrap_or("failed"));
            }
            out.push(Case {
                class: format!("fabcheck.{command}.{id}"),
                name: format!("{id} {subject}"),
                failure: (!messages.is_empty()).then(|| messages.join("; ")),
                skipped: c["status"] == "skip",
            });
        }
    }
    for item in doc["results"].as_array().into_iter().flatten() {
        let test = item["test"].as_str().unwrap_or("test");
        let name = format!("{test} {} {}", item["direction"].as_str().unwrap_or(""), item["size"]);
        let mut messages: Vec<&str> = item["error"].as_str().into_iter().collect();
        for (i, f) in failing.iter().enumerate() {
            if !used[i] && about_result(f.message, item) {
                used[i] = true;
                messages.push(f.message);
            }
        }
        let failure = (!messages.is_empty()).then(|| messages.join("; "));
        out.push(Case { class: format!("fabcheck.{command}.{test}"), name, failure, skipped: false });
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
                name: format!("{subject} {test} {} {}", r["direction"].as_str().unwrap_or(""), r["size"]),
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
                name: format!("{name} {test} {} {}", r["direction"].as_str().unwrap_or(""), r["size"]),
                failure,
                skipped: false,
            });
        }
    }
    // compare: one case per figure compared, failed when it regressed; a slowed endpoint too.
    for d in doc["differences"].as_array().into_iter().flatten() {
        let figure = d["figure"].as_str().unwrap_or("figure");
        let (a, b, test, dir) = (text(&d["a"]), text(&d["b"]), text(&d["test"]), text(&d["direction"]));
        let same = |r: &&Value| ["a", "b", "test", "direction", "size", "figure"].iter().all(|k| r[*k] == d[*k]);
        let failure = (d["regression"] == true).then(|| {
            let regression = doc["regressions"].as_array().and_then(|list| list.iter().find(same));
            regression.and_then(|r| r["message"].as_str()).map_or_else(|| format!("{} %", d["change_pct"]), str::to_string)
        });
        out.push(Case {
            class: format!("fabcheck.{command}.{figure}"),
            name: format!("{a} <-> {b} {test} {dir} {} {figure}", d["size"]),
            failure,
            skipped: false,
        });
    }
    for s in doc["slowed"].as_array().into_iter().flatten() {
        let endpoint = text(&s["endpoint"]);
        let failure = Some(format!("{endpoint} slowed since the baseline: {} of its {} pairs regressed", s["regressed_pairs"], s["pairs"]));
        out.push(Case { class: format!("fabcheck.{command}.slowed"), name: format!("slowed {endpoint}"), failure, skipped: false });
    }
    // Failing findings no check or result stands for (pair verdict findings, fabric, mesh
    // suspects and unreachable endpoints), each its own case.
    for (i, f) in failing.iter().enumerate() {
        if used[i] {
            continue;
        }
        out.push(Case {
            class: format!("fabcheck.{command}.{}", f.id),
            name: format!("{} {}", f.id, f.subject),
            failure: Some(f.message.to_string()),
            skipped: false,
        });
    }
    out.list
}

/// The suite around `cases`: the counts and time the schema requires, the stamp's host and time.
fn suite(command: &str, host: &str, timestamp: &str, cases: &[Case], errors: usize) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count() - errors;
    let skipped = cases.iter().filter(|c| c.skipped).count();
    let tests = cases.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"fabcheck\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"0.000\">");
    let _ = writeln!(
        out,
        "  <testsuite name=\"fabcheck {}\" hostname=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"0.000\" timestamp=\"{}\">",
        esc(command),
        esc(host),
        esc(timestamp)
    );
    for c in cases {
        let _ = write!(out, "    <testcase classname=\"{}\" name=\"{}\" time=\"0.000\"", esc(&c.class), esc(&c.name));
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

pub fn render(doc: &Value) -> String {
    let command = super::command_of(doc);
    let cases = cases(doc, &command);
    suite(&command, doc["host"].as_str().unwrap_or(""), doc["time"].as_str().unwrap_or(""), &cases, 0)
}

/// The document of a run that could not run (exit 2): one case, `run`, failed with the cause,
/// counted as an error (the schema's `<errors>` element is a plural no consumer reads, so the
/// case holds a `<failure>`), so CI never shows the last run's green.
pub fn error_document(command: &str, cause: &str, stamp: &crate::report::document::Stamp) -> String {
    let case = Case { class: format!("fabcheck.{command}"), name: "run".into(), failure: Some(format!("could not run: {cause}")), skipped: false };
    suite(command, &stamp.host, &stamp.time, &[case], 1)
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
                ("fabcheck.mesh.write_bw", "n2 <-> n1 write_bw a->b 65536", false),
                ("fabcheck.mesh.pair", "n1 <-> n3", true),
                ("fabcheck.mesh.mesh.suspect", "mesh.suspect n3", true),
            ]
        );
        let suite = xml.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
        assert_eq!((suite.attribute("tests"), suite.attribute("failures"), suite.attribute("errors")), (Some("3"), Some("2"), Some("0")));
    }

    #[test]
    fn a_pair_failure_sits_inside_its_result_case_and_names_are_unique() {
        // 0.2: the bandwidth case passed, and its failure was a second case named like it.
        let doc = json!({"schema":"fabcheck.pair.v1","verdict":"fail","host":"h","time":"t",
            "results":[{"test":"write_bw","direction":"a->b","size":65536,"bw_gbps":90.0},
                       {"test":"write_bw","direction":"a->b","size":65536,"bw_gbps":91.0},
                       {"test":"send_lat","direction":"a->b","size":2}],
            "findings":[{"id":"pair.bw","severity":"error","subject":"n1/mlx5_0 <-> n2/mlx5_0",
                         "message":"write_bw a->b at 65536 bytes: 90 Gb/s is 45% of the 200 Gb/s link (needs 90%)"},
                        {"id":"pair.ends","severity":"error","subject":"n1/mlx5_0 <-> n2/mlx5_0","message":"x"},
                        {"id":"pair.ends","severity":"error","subject":"n1/mlx5_0 <-> n2/mlx5_0","message":"y"}]});
        let text = render(&doc);
        let xml = roxmltree::Document::parse(&text).expect("well-formed XML");
        let cases: Vec<(&str, Option<&str>)> = xml
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|c| (c.attribute("name").unwrap(), c.children().find(|n| n.has_tag_name("failure")).and_then(|f| f.attribute("message"))))
            .collect();
        assert_eq!(cases[0].0, "write_bw a->b 65536");
        assert!(cases[0].1.is_some_and(|m| m.starts_with("write_bw a->b at 65536 bytes: 90 Gb/s")), "{text}");
        let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
        assert_eq!(
            names,
            [
                "write_bw a->b 65536",
                "write_bw a->b 65536 (2)",
                "send_lat a->b 2",
                "pair.ends n1/mlx5_0 <-> n2/mlx5_0",
                "pair.ends n1/mlx5_0 <-> n2/mlx5_0 (2)"
            ]
        );
        assert!(xml.descendants().filter(|n| n.has_tag_name("testcase")).all(|c| c.attribute("time") == Some("0.000")));
        let suite = xml.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
        assert_eq!((suite.attribute("failures"), suite.attribute("errors"), suite.attribute("time")), (Some("3"), Some("0"), Some("0.000")));
    }

    #[test]
    fn a_run_that_could_not_run_is_an_error_case() {
        let stamp = crate::report::document::Stamp { host: "n1".into(), fabcheck_version: "x", time: "t".into() };
        let text = error_document("check", "no RDMA device & <none>", &stamp);
        let xml = roxmltree::Document::parse(&text).expect("well-formed XML");
        let suite = xml.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
        assert_eq!((suite.attribute("tests"), suite.attribute("failures"), suite.attribute("errors")), (Some("1"), Some("0"), Some("1")));
        assert!(text.contains("could not run: no RDMA device &amp; &lt;none&gt;"), "{text}");
    }
}
