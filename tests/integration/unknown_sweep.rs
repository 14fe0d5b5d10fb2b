//! "Unknown is not ok" (0.3's lesson, issue #44), swept over every tree under tests/fixtures:
//! `check --json` on each (with its case's arguments, and without any), and no check row that
//! says `pass` may show an unknown value as what it observed or expected.
//!
//! Unknown, concretely, is what the rules print when they have no figure: an empty text, a `?`
//! anywhere (`x?`, `? GT/s`, `carrier=?`, `speed ?`), or the words `unknown`, `n/a`, `null`,
//! `none known`, `NaN` standing for a value. A row whose input is missing must be `skip`, saying
//! what is missing (docs/checks.md).

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;

/// Why `text` reads as an unknown value, if it does.
fn unknown(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric() && c != '/').filter(|w| !w.is_empty()).collect();
    if text.trim().is_empty() {
        Some("empty")
    } else if text.contains('?') {
        Some("a '?'")
    } else if words.contains(&"unknown") {
        Some("'unknown'")
    } else if words.iter().any(|w| ["n/a", "null", "nan"].contains(w)) {
        Some("n/a, null or NaN")
    } else if lower.contains("none known") {
        Some("'none known'")
    } else {
        None
    }
}

/// Every fixture tree (a folder with `class/`), with the case's arguments where it has one.
fn trees() -> Vec<(String, std::path::PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures_dir()).unwrap().filter_map(Result::ok) {
        let dir = entry.path();
        if !dir.join("class").is_dir() {
            continue;
        }
        let args = std::fs::read_to_string(dir.join("case.json"))
            .ok()
            .map(|text| serde_json::from_str::<Value>(&text).unwrap())
            .map(|case| case["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect())
            .unwrap_or_default();
        out.push((entry.file_name().to_string_lossy().into_owned(), dir, args));
    }
    out.sort();
    out
}

#[test]
fn the_markers_are_what_the_rules_print_for_nothing() {
    for said in ["x? ?", "x16 ?", "", "PFC on priorities unknown", "up carrier=? 100000 Mb/s", "N/A", "speed ?"] {
        assert!(unknown(said).is_some(), "{said:?}");
    }
    for known in ["x16 16.0 GT/s PCIe", "none pending", "nvidia_peermem loaded", "24 bridges on GPU<->NIC paths, none redirects P2P", "2/1"] {
        assert_eq!(unknown(known), None, "{known:?}");
    }
}

#[test]
fn no_check_passes_on_an_unknown_value() {
    let trees = trees();
    assert!(trees.len() >= 30, "fixture trees went missing: {}", trees.len());
    let mut caught = Vec::new();
    for (name, dir, args) in &trees {
        let mut runs = vec![Vec::new()];
        if !args.is_empty() {
            runs.push(args.clone());
        }
        for extra in runs {
            let mut argv = vec!["check".to_string(), "--json".into(), "--sysfs-root".into(), dir.display().to_string()];
            argv.extend(extra.iter().cloned());
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            let doc = json(&fabcheck(&refs));
            for c in doc["checks"].as_array().unwrap().iter().filter(|c| c["status"] == "pass") {
                for field in ["observed", "expected"] {
                    let Some(text) = c[field].as_str() else { continue };
                    if let Some(why) = unknown(text) {
                        caught.push(format!("{name} {extra:?}: {} {} passes with {field} {text:?} ({why})", c["id"], c["subject"]));
                    }
                }
            }
        }
    }
    assert!(caught.is_empty(), "checks that pass on an unknown value:\n{}", caught.join("\n"));
}
