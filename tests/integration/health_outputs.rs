//! Every command's health-check outputs read by the consumers' own tools (issue #28 items 8, 9):
//! `--format prom` linted by `promtool check metrics` (nothing to say), `--format junit`
//! validated by `xmllint --schema` against the vendored `tests/schemas/junit-10.xsd`, and a run
//! that could not run (exit 2) replacing a stale `--output` with `fabcheck_up 0`. `promtool`
//! comes from Debian's `prometheus`, `xmllint` from `libxml2-utils` (tests/deps.sh); a missing
//! tool fails the test, saying what to install.

use super::fake_cluster::{FakeCluster, Knobs};
use super::{fabcheck, fixtures_dir};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A test tool installed by tests/deps.sh (promtool, prometheus, xmllint), by its path.
pub(crate) fn tool(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/local/bin", "/bin"] {
        let path = Path::new(dir).join(name);
        if path.exists() {
            return path;
        }
    }
    panic!("{name} is not installed: tests/deps.sh lists its package (prometheus for promtool, libxml2-utils for xmllint)");
}

pub(crate) fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-health-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// `promtool check metrics` on a page: what it says (nothing when clean) and its exit status.
pub(crate) fn promtool(what: &str, page: &str) {
    assert!(page.contains("# TYPE fabcheck_"), "{what}: no metric at all:\n{page}");
    let (ok, said) = promtool_check(page);
    assert!(ok && said.trim().is_empty(), "{what}: promtool check metrics says:\n{said}\n--- page:\n{page}");
}

/// `promtool check metrics` on a page: whether it passed, and what it said.
pub(crate) fn promtool_check(page: &str) -> (bool, String) {
    let mut child = Command::new(tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// `xmllint --schema junit-10.xsd`, then what the schema cannot say: counts that add up, a
/// `time` on every case, names unique within a suite, every failure inside its case.
pub(crate) fn junit(what: &str, xml: &str, dir: &Path) {
    let file = dir.join("junit.xml");
    std::fs::write(&file, xml).unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/junit-10.xsd");
    let out = Command::new(tool("xmllint")).arg("--noout").arg("--schema").arg(&schema).arg(&file).output().expect("run xmllint");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.contains("validates"), "{what}: xmllint --schema junit-10.xsd says:\n{said}\n--- document:\n{xml}");
    let doc = roxmltree::Document::parse(xml).unwrap();
    let suites: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testsuite")).collect();
    assert!(!suites.is_empty(), "{what}: no suite");
    for suite in suites {
        let cases: Vec<_> = suite.children().filter(|n| n.has_tag_name("testcase")).collect();
        // `devices` judges nothing: its suite is empty. Every other command has cases.
        assert!(!cases.is_empty() || what.starts_with("devices"), "{what}: a suite with no case:\n{xml}");
        let failed = cases.iter().filter(|c| c.children().any(|n| n.has_tag_name("failure"))).count();
        let count = |a: &str| suite.attribute(a).unwrap_or_else(|| panic!("{what}: no {a} on the suite")).parse::<usize>().unwrap();
        assert_eq!(count("tests"), cases.len(), "{what}");
        assert_eq!(count("failures") + count("errors"), failed, "{what}: failures and errors count the failed cases:\n{xml}");
        assert!(suite.attribute("time").is_some(), "{what}: no time on the suite");
        let mut names = std::collections::BTreeSet::new();
        for c in &cases {
            assert!(c.attribute("time").is_some(), "{what}: no time on {:?}", c.attribute("name"));
            assert!(names.insert(c.attribute("name").unwrap()), "{what}: two testcases named {:?}:\n{xml}", c.attribute("name"));
        }
    }
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("failure")).filter(|f| !f.parent().unwrap().has_tag_name("testcase")).count(), 0);
}

fn formats(what: &str, args: &[&str], dir: &Path, want_exit: &[i32]) {
    for (format, check) in [("prom", true), ("junit", false)] {
        let mut full = args.to_vec();
        full.extend_from_slice(&["--format", format]);
        let out = fabcheck(&full);
        let code = out.status.code().unwrap_or(-1);
        assert!(
            want_exit.contains(&code),
            "{what} --format {format}: exit {code}\n{}\n--- stdout:\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        if check {
            promtool(&format!("{what} --format prom"), &text(&out));
        } else {
            junit(&format!("{what} --format junit"), &text(&out), dir);
        }
    }
}

#[test]
fn check_and_devices_on_every_fixture_pass_promtool_and_the_junit_schema() {
    let dir = scratch("fixtures");
    let mut ran = 0;
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let root = entry.unwrap().path();
        if !root.join("class/infiniband").is_dir() {
            continue;
        }
        let root = root.to_str().unwrap();
        formats(&format!("check {root}"), &["check", "--sysfs-root", root], &dir, &[0, 1]);
        formats(&format!("check {root} --fail-on warning"), &["check", "--sysfs-root", root, "--fail-on", "warning"], &dir, &[0, 1]);
        formats(&format!("devices {root}"), &["devices", "--sysfs-root", root], &dir, &[0]);
        ran += 1;
    }
    assert!(ran >= 20, "only {ran} fixtures found under {}", fixtures_dir().display());
    let mtu = fixtures_dir().join("roce-mtu-mismatch");
    formats("check --expect mtu=4096", &["check", "--sysfs-root", mtu.to_str().unwrap(), "--expect", "mtu=4096"], &dir, &[1]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn pair_mesh_and_compare_pass_promtool_and_the_junit_schema() {
    let dir = scratch("runs");
    let healthy = FakeCluster::healthy(3);
    let mut knobs = vec![Knobs::default(); 4];
    knobs[2].slow_node = true;
    let slow = FakeCluster::start(knobs, Duration::ZERO);
    // Many iterations, which cost the fake agents nothing: a bidirectional figure is computed
    // over the longer side's window widened by the skew between the two starts as the
    // controller saw them (real time). At the default count a fake window is a few ms, and on
    // a loaded 2-core host that skew alone once put the passing pair's bidi at 0.73 of its
    // capacity; over a fake window of a few hundred ms it is noise.
    let tests = ["--tests", "write_bw,send_lat", "--iters", "100000"];
    let (h, s) = (&healthy.endpoints, &slow.endpoints);
    formats("pair (passing)", &[&["pair", h[0].as_str(), h[1].as_str()][..], &tests].concat(), &dir, &[0]);
    formats("pair (slow: pair.bw fails)", &[&["pair", s[0].as_str(), s[2].as_str()][..], &tests].concat(), &dir, &[1]);
    formats("mesh (passing)", &[&["mesh"][..], &tests, &h.iter().map(String::as_str).collect::<Vec<_>>()].concat(), &dir, &[0]);
    formats("mesh (slow node)", &[&["mesh"][..], &tests, &s.iter().map(String::as_str).collect::<Vec<_>>()].concat(), &dir, &[1]);
    // The slow pair's bandwidth failure is inside its write_bw case, not a second case.
    let out = fabcheck(&[&["pair", s[0].as_str(), s[2].as_str(), "--format", "junit"][..], &tests].concat());
    let xml = text(&out);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let bw: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase") && n.attribute("classname") == Some("fabcheck.pair.write_bw")).collect();
    assert!(!bw.is_empty() && bw.iter().all(|c| c.children().any(|n| n.has_tag_name("failure"))), "{xml}");
    assert!(!doc.descendants().any(|n| n.attribute("classname") == Some("fabcheck.pair.pair.bw")), "the failure stands alone again:\n{xml}");
    // compare: two pair documents.
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    for (file, eps) in [(&old, h), (&new, s)] {
        let out = fabcheck(&[&["pair", eps[0].as_str(), eps[2].as_str(), "--json", "--output", file.to_str().unwrap()][..], &tests].concat());
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    }
    formats("compare", &["compare", old.to_str().unwrap(), new.to_str().unwrap()], &dir, &[1]);
    let out = fabcheck(&["compare", old.to_str().unwrap(), new.to_str().unwrap(), "--format", "junit"]);
    let xml = text(&out);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert!(
        doc.descendants().any(|n| n.has_tag_name("failure") && n.attribute("message").is_some_and(|m| m.contains("below the baseline"))),
        "a regression is a failed case:\n{xml}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fabric_documents_pass_promtool_and_the_junit_schema() {
    // The subnet runs in the ibsim tier; the items a fabric document feeds the printers are
    // enough for the formats (golden::render prints them as a live run does).
    let dir = scratch("fabric");
    let doc = serde_json::json!({"schema":"fabcheck.fabric.v1","verdict":"fail","host":"n1","time":"2026-12-01T00:00:00Z",
        "links":[{"a":{"node":"sw1","port":1},"b":{"node":"n1","port":1}},{"a":{"node":"sw1","port":2},"b":{"node":"n2","port":1}}],
        "findings":[{"id":"fabric.errors","severity":"error","subject":"sw1/1 <-> n1/1","message":"symbol_error rose by 40","remedy":"r"},
                    {"id":"fabric.errors","severity":"error","subject":"sw1/1 <-> n1/1","message":"link_downed rose by 2","remedy":"r"},
                    {"id":"fabric.link.width","severity":"warning","subject":"sw1/2 <-> n2/1","message":"2X of 4X","remedy":"r"}]});
    promtool("fabric", &super::golden::render(&doc, "prom"));
    junit("fabric", &super::golden::render(&doc, "junit"), &dir);
    // And a node with no umad device: exit 2, its outputs still valid.
    formats("fabric (no umad device)", &["fabric"], &dir, &[2]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_that_cannot_run_replaces_a_stale_pass_with_up_0_and_its_cause() {
    let dir = scratch("exit2");
    let file = dir.join("fabcheck.prom");
    let healthy = fixtures_dir().join("hdr-ib-healthy");
    let out = fabcheck(&["check", "--sysfs-root", healthy.to_str().unwrap(), "--format", "prom", "--output", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let before = std::fs::read_to_string(&file).unwrap();
    assert!(before.contains("\nfabcheck_verdict_pass{command=\"check\"} 1\n") && before.contains("\nfabcheck_up{command=\"check\"} 1\n"), "{before}");
    // The node breaks: the tree is gone.
    let gone = dir.join("no-such-tree");
    let out = fabcheck(&["check", "--sysfs-root", gone.to_str().unwrap(), "--format", "prom", "--output", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "--output: nothing on stdout");
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.contains("\nfabcheck_up{command=\"check\"} 0\n"), "{after}");
    assert!(!after.contains("fabcheck_verdict_pass"), "the stale PASS survived:\n{after}");
    let cause = after.lines().find(|l| l.starts_with("fabcheck_run_error{")).expect("the cause");
    assert!(cause.contains("no-such-tree"), "{cause}");
    promtool("exit 2 page", &after);
    // junit the same way: one error case instead of the last run's green.
    let xml = dir.join("fabcheck.xml");
    let out = fabcheck(&["check", "--sysfs-root", gone.to_str().unwrap(), "--format", "junit", "--output", xml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let doc = std::fs::read_to_string(&xml).unwrap();
    junit("exit 2 junit", &doc, &dir);
    assert!(doc.contains("errors=\"1\"") && doc.contains("no-such-tree"), "{doc}");
    // JSON too (`--json` and `--format json`): the check schema's document with verdict
    // `error` and the same cause and remedy as stderr, replacing the last run's pass.
    let json = dir.join("x.json");
    for flags in [&["--json"][..], &["--format", "json"][..]] {
        std::fs::write(&json, "{\"verdict\":\"pass\"}").unwrap();
        let mut args = vec!["check", "--sysfs-root", gone.to_str().unwrap(), "--output", json.to_str().unwrap()];
        args.extend_from_slice(flags);
        let out = fabcheck(&args);
        assert_eq!(out.status.code(), Some(2));
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!((doc["schema"].as_str(), doc["verdict"].as_str()), (Some("fabcheck.check.v1"), Some("error")), "{flags:?}: {doc}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let cause = doc["error"]["cause"].as_str().unwrap();
        assert!(cause.contains("no-such-tree") && stderr.contains(cause), "{doc}\n{stderr}");
        assert!(stderr.contains(doc["error"]["remedy"].as_str().unwrap()), "{doc}\n{stderr}");
        assert!(doc["host"].is_string() && doc["time"].is_string() && doc["fabcheck_version"].is_string(), "{doc}");
    }
    // The human view is unchanged: nothing written on stdout.
    let out = fabcheck(&["check", "--sysfs-root", gone.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(&dir).ok();
}
