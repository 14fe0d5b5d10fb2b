//! What the exporter says is what `check` says (issue #41): on every bundle under
//! tests/fixtures, with its case's expectations, the exporter's `fabcheck_check_pass` series
//! and `fabcheck_finding` series against `check --json`'s rows and findings, id for id. A
//! skipped row has no series on either side (unknown is not a pass).

use super::exporter::Exporter;
use super::golden::bundles;
use super::{fabcheck, fixtures_dir, json};
use std::collections::BTreeSet;

/// `(id, subject, passed)` of each row that has a series, and `(id, severity, subject)` of each
/// finding.
type Said = (BTreeSet<(String, String, bool)>, BTreeSet<(String, String, String)>);

/// `(id, subject, passed)` of each row that has a series, and `(id, severity, subject)` of each
/// finding, as check's JSON says them.
fn of_check(root: &str, args: &[String]) -> Said {
    let mut full = vec!["check", "--json", "--sysfs-root", root];
    full.extend(args.iter().map(String::as_str));
    let out = fabcheck(&full);
    assert!(matches!(out.status.code(), Some(0 | 1)), "check {root}: {}", String::from_utf8_lossy(&out.stderr));
    let doc = json(&out);
    let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let mut rows: Vec<(String, String, bool)> = Vec::new();
    for c in doc["checks"].as_array().unwrap().iter().filter(|c| c["status"] != "skip") {
        let (id, subject, pass) = (s(&c["id"]), s(&c["subject"]), c["status"] != "fail");
        // A row repeated for one id and subject fails when any repeat fails (both sides say so).
        match rows.iter_mut().find(|(i, j, _)| *i == id && *j == subject) {
            Some(row) => row.2 &= pass,
            None => rows.push((id, subject, pass)),
        }
    }
    let findings = doc["findings"].as_array().unwrap().iter().map(|f| (s(&f["id"]), s(&f["severity"]), s(&f["subject"]))).collect();
    (rows.into_iter().collect(), findings)
}

/// The samples of `name` on a text page: labels and value. Label values are read as the
/// exposition format writes them (quoted, `\\`, `\"` and `\n` escaped): a subject may hold a
/// comma (`mlx5_0,mlx5_1`), which a naive split (prometheus-parse's) cuts.
fn series(page: &str, name: &str) -> Vec<(std::collections::BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in page.lines() {
        let Some(rest) = line.strip_prefix(name).and_then(|r| r.strip_prefix('{')) else { continue };
        let mut labels = std::collections::BTreeMap::new();
        let mut chars = rest.chars().peekable();
        loop {
            let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
            assert_eq!(chars.next(), Some('"'), "{line}");
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some(other) => value.push(other),
                        None => {}
                    },
                    '"' => break,
                    c => value.push(c),
                }
            }
            labels.insert(key, value);
            match chars.next() {
                Some(',') => continue,
                _ => break,
            }
        }
        let number: String = chars.collect();
        out.push((labels, number.trim().parse::<f64>().unwrap_or(f64::NAN)));
    }
    out
}

/// The same, as the exporter's page says them.
fn of_exporter(page: &str) -> Said {
    let get = |l: &std::collections::BTreeMap<String, String>, k: &str| l.get(k).cloned().unwrap_or_default();
    let rows = series(page, "fabcheck_check_pass").into_iter().map(|(l, v)| (get(&l, "id"), get(&l, "subject"), v == 1.0)).collect();
    let findings = series(page, "fabcheck_finding").into_iter().map(|(l, _)| (get(&l, "id"), get(&l, "severity"), get(&l, "subject"))).collect();
    (rows, findings)
}

#[test]
fn the_exporter_says_what_check_says_on_every_bundle() {
    let mut compared = 0;
    for name in bundles() {
        let dir = fixtures_dir().join(&name);
        let case: serde_json::Value =
            std::fs::read_to_string(dir.join("case.json")).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        let args: Vec<String> =
            case["args"].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let root = dir.to_str().unwrap();
        let (rows, findings) = of_check(root, &args);
        let exporter = Exporter::start_with(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
        let page = exporter.metrics();
        assert!(page.contains("\nfabcheck_verdict_pass "), "{name}: the exporter's page has no checklist:\n{page}");
        let (e_rows, e_findings) = of_exporter(&page);
        assert_eq!(e_rows, rows, "{name} {args:?}: the exporter's fabcheck_check_pass against check's rows");
        assert_eq!(e_findings, findings, "{name} {args:?}: the exporter's fabcheck_finding against check's findings");
        compared += 1;
    }
    assert!(compared >= 40, "only {compared} bundles compared");
}
