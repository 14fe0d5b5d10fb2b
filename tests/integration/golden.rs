//! Golden outputs: what every format says on the fixtures, byte for byte, against what 0.3 said
//! (recorded in tests/golden/ before 0.4's printers replaced 0.3's re-reading of JSON). A
//! change here is a change users see: record it on purpose (`FABCHECK_GOLDEN_RECORD=1 cargo test
//! --test integration golden`), review the diff, and say why in the commit.
//!
//! Only what cannot be the same twice is normalised: the stamp (`host`, `time`,
//! `fabcheck_version`), JUnit's `hostname` and `timestamp`, the prom page's run timestamp, and
//! the checkout's own path (a fixture's `source`, the files `compare` read), which is `CHECKOUT`
//! in the golden files: they hold the same bytes from a clone anywhere.

use super::{fabcheck, fixtures_dir};
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// `FABCHECK_GOLDEN_RECORD=1` records everything, the fake agents' documents too;
/// `FABCHECK_GOLDEN_RECORD=prints` only what is printed of the documents already recorded.
fn recording() -> bool {
    std::env::var_os("FABCHECK_GOLDEN_RECORD").is_some_and(|v| v == "1" || v == "prints")
}

fn recording_documents() -> bool {
    std::env::var_os("FABCHECK_GOLDEN_RECORD").is_some_and(|v| v == "1")
}

/// What the checkout's path is in the golden files.
const CHECKOUT: &str = "CHECKOUT";

/// The checkout's path replaced by `CHECKOUT`: as written (the human format) and as a JSON
/// string holds it (a path with a quote or a backslash is escaped there). The longer form first.
fn without_checkout(text: &str) -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let escaped = serde_json::to_string(dir).unwrap();
    let escaped = &escaped[1..escaped.len() - 1];
    let (long, short) = if escaped.len() > dir.len() { (escaped, dir) } else { (dir, escaped) };
    text.replace(long, CHECKOUT).replace(short, CHECKOUT)
}

/// The parts of an output that differ from run to run or from clone to clone, replaced by fixed
/// words.
pub fn normalise(text: &str) -> String {
    let text = without_checkout(text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let end = if line.ends_with('\n') { "\n" } else { "" };
        if let Some(rest) = trimmed.strip_prefix("\"time\": ") {
            let comma = if rest.trim_end().ends_with(',') { "," } else { "" };
            out.push_str(&format!("{indent}\"time\": \"TIME\"{comma}{end}"));
        } else if let Some(rest) = trimmed.strip_prefix("\"host\": ") {
            let comma = if rest.trim_end().ends_with(',') { "," } else { "" };
            out.push_str(&format!("{indent}\"host\": \"HOST\"{comma}{end}"));
        } else if let Some(rest) = trimmed.strip_prefix("\"fabcheck_version\": ") {
            let comma = if rest.trim_end().ends_with(',') { "," } else { "" };
            out.push_str(&format!("{indent}\"fabcheck_version\": \"VERSION\"{comma}{end}"));
        } else if trimmed.starts_with("fabcheck_last_run_timestamp_seconds") {
            let series = trimmed.rsplit_once(' ').map_or(trimmed, |(s, _)| s);
            out.push_str(&format!("{indent}{series} 0{end}"));
        } else if trimmed.starts_with("<testsuite ") {
            out.push_str(&attribute(&attribute(line, "hostname", "HOST"), "timestamp", "TIME"));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `name="..."` in an XML line with its value replaced.
fn attribute(line: &str, name: &str, value: &str) -> String {
    let key = format!(" {name}=\"");
    let Some(start) = line.find(&key) else { return line.to_string() };
    let from = start + key.len();
    let Some(len) = line[from..].find('"') else { return line.to_string() };
    format!("{}{value}{}", &line[..from], &line[from + len..])
}

/// Compares `actual` with the golden file `name` (or records it).
pub fn golden(name: &str, actual: &str, mismatches: &mut Vec<String>) {
    let path = golden_dir().join(name);
    let actual = normalise(actual);
    if recording() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (record with FABCHECK_GOLDEN_RECORD=1)", path.display()));
    if want != actual {
        let line = want.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(want.lines().count().min(actual.lines().count()));
        mismatches.push(format!(
            "{name}: differs from line {}:\n  golden: {:?}\n  now:    {:?}",
            line + 1,
            want.lines().nth(line).unwrap_or("<end>"),
            actual.lines().nth(line).unwrap_or("<end>")
        ));
    }
}

fn stdout(args: &[&str]) -> String {
    let out = fabcheck(args);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The fixtures that are bundles (a `class/infiniband` tree), by name.
pub fn bundles() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("class/infiniband").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn check_and_devices_say_on_every_fixture_what_they_said_before() {
    let mut mismatches = Vec::new();
    let fixtures = bundles();
    assert!(fixtures.len() >= 30, "only {} bundles under {}", fixtures.len(), fixtures_dir().display());
    for name in &fixtures {
        let root = fixtures_dir().join(name);
        let root = root.to_str().unwrap();
        for (format, ext) in [("human", "txt"), ("json", "json"), ("prom", "prom"), ("junit", "xml"), ("oneline", "line")] {
            golden(&format!("check/{name}.{ext}"), &stdout(&["check", "--sysfs-root", root, "--format", format]), &mut mismatches);
            golden(&format!("devices/{name}.{ext}"), &stdout(&["devices", "--sysfs-root", root, "--format", format]), &mut mismatches);
        }
        for (format, ext) in [("prom", "prom"), ("junit", "xml"), ("oneline", "line")] {
            let args = ["check", "--sysfs-root", root, "--fail-on", "warning", "--format", format];
            golden(&format!("check-fail-on-warning/{name}.{ext}"), &stdout(&args), &mut mismatches);
        }
    }
    assert!(mismatches.is_empty(), "{} outputs changed:\n{}", mismatches.len(), mismatches.join("\n"));
}

/// A recorded document printed again in a machine format, by the printers a live run uses.
/// The document is read back into its typed form (`PairDoc`, `MeshDoc`); what a document does
/// not hold is rebuilt as the live run had it: which result a pair finding is about (its message
/// begins with that result's test, direction and size). `fabric` is a typed stand-in feeding
/// the items a fabric document holds (its subnet runs in the ibsim tier).
pub(crate) fn render(doc: &serde_json::Value, format: &str) -> String {
    use fabcheck::report::junit::JunitPrinter;
    use fabcheck::report::oneline::OnelinePrinter;
    use fabcheck::report::prom::PromPrinter;
    use fabcheck::report::{Document, Sink, Stamp};
    let report: Box<dyn Document> = match doc["schema"].as_str() {
        Some("fabcheck.pair.v1") => {
            let mut doc: fabcheck::pair::report::PairDoc = serde_json::from_value(doc.clone()).expect("a pair document");
            for f in &mut doc.findings {
                f.about =
                    doc.results.iter().find(|r| f.message.starts_with(&format!("{} {} at {} bytes", r.test, r.direction, r.size))).map(|r| r.key());
            }
            Box::new(fabcheck::pair::report::PairReport { doc, quiet: false })
        }
        Some("fabcheck.mesh.v1") => Box::new(fabcheck::mesh::MeshReport::replay(serde_json::from_value(doc.clone()).expect("a mesh document"))),
        Some("fabcheck.fabric.v1") => Box::new(FabricShape(doc.clone())),
        other => panic!("no replay for {other:?}"),
    };
    let verdict = report.verdict();
    let stamp = Stamp { host: "HOST".into(), fabcheck_version: "VERSION", time: "TIME".into() };
    let command = report.command();
    let mut prom = PromPrinter::new(command, verdict, false);
    let mut junit = JunitPrinter::new(command, false);
    let mut oneline = OnelinePrinter::new(command);
    let sink: &mut dyn Sink = match format {
        "prom" => &mut prom,
        "junit" => &mut junit,
        _ => &mut oneline,
    };
    report.feed(sink).unwrap();
    match format {
        "prom" => prom.finish(0.0),
        "junit" => junit.finish(&stamp),
        _ => oneline.finish(verdict),
    }
}

/// A fabric document's items, as `fabric`'s own document feeds them: its findings, its links.
struct FabricShape(serde_json::Value);

impl fabcheck::report::Document for FabricShape {
    fn command(&self) -> fabcheck::report::Command {
        fabcheck::report::Command::Fabric
    }
    fn verdict(&self) -> Option<fabcheck::outcome::Verdict> {
        serde_json::from_value(self.0["verdict"].clone()).ok()
    }
    fn has_warning(&self) -> bool {
        false
    }
    fn human(&self) -> String {
        String::new()
    }
    fn write_json(&self, _: &mut dyn std::io::Write, _: &fabcheck::report::Stamp, _: Option<fabcheck::outcome::Verdict>) -> std::io::Result<()> {
        Ok(())
    }
    fn feed(&self, sink: &mut dyn fabcheck::report::Sink) -> std::io::Result<()> {
        let findings: Vec<fabcheck::outcome::Finding> = serde_json::from_value(self.0["findings"].clone()).expect("findings");
        findings.iter().for_each(|f| sink.finding(f));
        sink.tally(&fabcheck::outcome::Tally::Links(self.0["links"].as_array().map_or(0, Vec::len)));
        Ok(())
    }
}

/// Documents of runs against fake agents (pair, mesh, their `--rails`, a fabric), recorded once
/// as JSON: their figures come from real time and differ per run. Each is printed again in every
/// machine format and compared with what 0.3 printed of the same document.
#[test]
fn pair_mesh_rails_and_fabric_documents_print_as_they_printed_before() {
    let dir = golden_dir().join("docs");
    if recording_documents() {
        record_documents(&dir);
    }
    let mut mismatches = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".json")).map(str::to_string))
        .filter(|n| !n.starts_with("compare-"))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "recorded documents: {names:?}");
    for name in &names {
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap()).unwrap();
        for (format, ext) in [("prom", "prom"), ("junit", "xml"), ("oneline", "line")] {
            golden(&format!("docs/{name}.{ext}"), &render(&doc, format), &mut mismatches);
        }
    }
    // compare: the same two recorded documents give the same comparison, in every format.
    let (old, new) = (dir.join("pair-pass.json"), dir.join("pair-slow.json"));
    for (format, ext) in [("human", "txt"), ("json", "json"), ("prom", "prom"), ("junit", "xml"), ("oneline", "line")] {
        let args = ["compare", old.to_str().unwrap(), new.to_str().unwrap(), "--format", format];
        golden(&format!("docs/compare-pair.{ext}"), &stdout(&args), &mut mismatches);
    }
    assert!(mismatches.is_empty(), "{} outputs changed:\n{}", mismatches.len(), mismatches.join("\n"));
}

/// Runs the fake agents once and keeps each run's JSON document.
fn record_documents(dir: &Path) {
    use super::fake_cluster::{FakeCluster, Knobs};
    use std::process::Command;
    std::fs::create_dir_all(dir).unwrap();
    let keep = |name: &str, args: &[String]| {
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .args(args)
            .args(["--json"])
            .env_remove("FABCHECK_TOKEN")
            .env_remove("FABCHECK_FORMAT")
            .output()
            .unwrap();
        assert!(matches!(out.status.code(), Some(0 | 1)), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(dir.join(format!("{name}.json")), normalise(&String::from_utf8(out.stdout).unwrap())).unwrap();
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let healthy = FakeCluster::healthy(3);
    let mut knobs = vec![Knobs::default(); 4];
    knobs[2].slow_node = true;
    let slow = FakeCluster::start(knobs, std::time::Duration::ZERO);
    let tests = ["--tests", "write_bw,send_lat", "--iters", "100000"];
    let (h, s) = (&healthy.endpoints, &slow.endpoints);
    keep("pair-pass", &[strings(&["pair", &h[0], &h[1]]), strings(&tests)].concat());
    keep("pair-slow", &[strings(&["pair", &s[0], &s[2]]), strings(&tests)].concat());
    keep("mesh-pass", &[strings(&["mesh"]), strings(&tests), h.clone()].concat());
    keep("mesh-slow-node", &[strings(&["mesh"]), strings(&tests), s.clone()].concat());
    use super::rails::{start, Knobs as RailKnobs};
    let (a, b) = (start("nodeA", RailKnobs { slow: Some("mlx5_3".into()), ..RailKnobs::default() }), start("nodeB", RailKnobs::default()));
    let rail_tests = ["--tests", "write_bw", "--direction", "ab", "--iters", "1000000"];
    keep("pair-rails-slow", &[strings(&["pair", &a, &b, "--rails", "4"]), strings(&rail_tests)].concat());
    let nodes: Vec<String> = (1..=4)
        .map(|i| {
            start(&format!("m{i}"), if i == 2 { RailKnobs { slow: Some("mlx5_1".into()), ..RailKnobs::default() } } else { RailKnobs::default() })
        })
        .collect();
    let both = ["--tests", "write_bw", "--direction", "both", "--iters", "1000000", "--rails", "auto"];
    keep("mesh-rails-slow", &[strings(&["mesh"]), nodes, strings(&both)].concat());
    // A fabric document's shape (the subnet itself runs in the ibsim tier).
    let fabric = serde_json::json!({"schema":"fabcheck.fabric.v1","verdict":"fail","host":"HOST","time":"TIME","fabcheck_version":"VERSION",
        "links":[{"a":{"node":"sw1","port":1},"b":{"node":"n1","port":1}},{"a":{"node":"sw1","port":2},"b":{"node":"n2","port":1}}],
        "findings":[{"id":"fabric.errors","severity":"error","subject":"sw1/1 <-> n1/1","message":"symbol_error rose by 40","remedy":"reseat"},
                    {"id":"fabric.errors","severity":"error","subject":"sw1/1 <-> n1/1","message":"link_downed rose by 2","remedy":"reseat"},
                    {"id":"fabric.link.width","severity":"warning","subject":"sw1/2 <-> n2/1","message":"2X of 4X","remedy":"reseat"}]});
    std::fs::write(dir.join("fabric.json"), serde_json::to_string_pretty(&fabric).unwrap() + "\n").unwrap();
}
