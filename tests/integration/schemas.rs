//! Every JSON document fabcheck writes is valid against its JSON Schema in docs/schemas/, checked
//! by a real validator (Python's `jsonschema`, Debian's python3-jsonschema, through
//! tests/schemas/validate.py): the recorded documents of every command (tests/golden: check and
//! devices on every fixture, pair, mesh, their `--rails`, fabric, compare; golden.rs proves they
//! are what the binary writes today), documents written now, and the error document of each
//! command that has one (exit 2). A validator that accepts anything would pass all of that, so it
//! must also refuse documents that break the schema.

use super::{fabcheck, fixtures_dir};
use std::path::{Path, PathBuf};

fn validate(files: &[PathBuf]) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/validate.py");
    // Debian's interpreter: python3-jsonschema is installed for it, not for a python3 on the PATH.
    std::process::Command::new("/usr/bin/python3")
        .arg(&script)
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("cannot run /usr/bin/python3 {}: {e} (tests/deps.sh installs python3 and python3-jsonschema)", script.display()))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-schemas-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn jsons_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            jsons_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

pub(crate) fn assert_valid(what: &str, files: &[PathBuf]) {
    let out = validate(files);
    assert_eq!(out.status.code(), Some(0), "{what}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_recorded_document_is_valid_against_its_schema() {
    let mut files = Vec::new();
    jsons_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"), &mut files);
    files.sort();
    for schema in ["check", "devices", "pair", "mesh", "fabric", "compare"] {
        let kind = format!("\"fabcheck.{schema}.v1\"");
        assert!(files.iter().any(|f| std::fs::read_to_string(f).unwrap().contains(&kind)), "no recorded {schema} document to validate");
    }
    assert_valid("tests/golden", &files);
}

#[test]
fn documents_written_now_and_error_documents_are_valid() {
    let dir = scratch("now");
    let fixture = fixtures_dir().join("roce-qos-pfc-on-4");
    let gone = dir.join("no-such-tree");
    let missing = dir.join("missing.json");
    let (fixture, gone, missing) = (fixture.to_str().unwrap(), gone.to_str().unwrap(), missing.to_str().unwrap());
    // (file, command line, exit code): documents, then one run of each command that cannot run.
    let runs: Vec<(&str, Vec<&str>, i32)> = vec![
        ("devices.json", vec!["devices", "--sysfs-root", fixture, "--json"], 0),
        ("check.json", vec!["check", "--sysfs-root", fixture, "--json"], 1),
        ("check-format.json", vec!["check", "--sysfs-root", fixture, "--format", "json", "--fail-on", "warning"], 1),
        ("devices-error.json", vec!["devices", "--sysfs-root", gone, "--json"], 2),
        ("check-error.json", vec!["check", "--sysfs-root", gone, "--format", "json"], 2),
        ("pair-error.json", vec!["pair", "tcp://127.0.0.1:1", "tcp://127.0.0.1:1", "--json"], 2),
        // (A mesh whose agents are all unreachable still writes its document: who could not be reached.)
        ("mesh-error.json", vec!["mesh", "tcp://127.0.0.1:1", "--json"], 2),
        ("fabric-error.json", vec!["fabric", "--topology", missing, "--json"], 2),
        ("compare-error.json", vec!["compare", missing, missing, "--json"], 2),
        // accept: a level 3 it cannot run (a duration of 0; its error document); its full
        // documents are validated in accept.rs and accept_levels.rs.
        ("accept-error.json", vec!["accept", "tcp://127.0.0.1:1", "--level", "3", "--duration", "0", "--json"], 2),
        // collective: agents that cannot be reached (its full documents: collective.rs).
        ("collective-error.json", vec!["collective", "tcp://127.0.0.1:1", "tcp://127.0.0.1:1", "--op", "allreduce", "--json"], 2),
    ];
    let mut files = Vec::new();
    for (file, args, code) in &runs {
        let path = dir.join(file);
        let mut args = args.clone();
        let output = path.to_str().unwrap().to_string();
        args.extend(["--output", output.as_str()]);
        let out = fabcheck(&args);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"))).unwrap();
        if *code == 2 {
            assert_eq!(doc["verdict"], "error", "{file}: {doc}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(doc["error"]["cause"].as_str().unwrap()), "{file}: the cause stderr says: {doc}\n{stderr}");
        }
        files.push(path);
    }
    // A bundle's manifest (captured from a fixture, no tools run).
    let bundle = dir.join("bundle");
    let out = fabcheck(&["bundle", bundle.to_str().unwrap(), "--from-root", fixture]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    files.push(bundle.join("fabcheck-bundle.json"));
    assert_valid("documents written now", &files);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_validator_refuses_what_breaks_a_schema() {
    let dir = scratch("bad");
    let good = r#"{"schema":"fabcheck.check.v1","verdict":"pass","checks":[{"id":"port.state","subject":"mlx5_0/1","status":"pass"}],"findings":[],"host":"h","fabcheck_version":"0.4.0","time":"2026-12-02T00:00:00Z"}"#;
    std::fs::write(dir.join("good.json"), good).unwrap();
    assert_valid("a valid document", &[dir.join("good.json")]);
    let broken = [
        ("status", good.replace("\"status\":\"pass\"", "\"status\":\"maybe\"")),
        ("no-stamp", good.replace(",\"host\":\"h\"", "")),
        ("verdict", good.replace("\"verdict\":\"pass\"", "\"verdict\":\"ok\"")),
        ("unknown-schema", good.replace("fabcheck.check.v1", "fabcheck.check.v9")),
        (
            "error-without-cause",
            r#"{"schema":"fabcheck.pair.v1","verdict":"error","error":{"remedy":"x"},"host":"h","fabcheck_version":"0.4.0","time":"t"}"#.to_string(),
        ),
        (
            "finding-severity",
            good.replace("\"findings\":[]", r#""findings":[{"id":"port.state","severity":"fatal","subject":"s","message":"m","remedy":"r"}]"#),
        ),
    ];
    for (name, text) in &broken {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        let out = validate(std::slice::from_ref(&path));
        assert_eq!(out.status.code(), Some(1), "{name} must be refused: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::remove_dir_all(&dir).ok();
}
