//! What `mesh` and `pair` write beside their document against fake agents (`fake_cluster`):
//! progress on stderr, `--quiet`, the sweep's CSV and SVG, the mesh's CSV and heat map, and a
//! heat map that cannot be written.

use super::fake_cluster::*;
use super::mesh_scale::run_mesh;
use super::pair_fake::run_pair;
use std::collections::BTreeMap;

use std::time::Duration;

#[test]
fn an_unwritable_heat_map_keeps_the_results() {
    // Regression (issue 14): `--html` to a path that cannot be written threw the whole run away.
    let cluster = FakeCluster::healthy(4);
    let run = run_mesh(&cluster.endpoints, &["--html", "/nonexistent/fabcheck/mesh.html"]);
    // The mesh passed but could not do all it was asked: exit 2, after the results.
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("heat map could not be written to /nonexistent/fabcheck/mesh.html"), "{}", run.stderr());
    let doc = run.doc();
    assert_eq!(doc["verdict"], "pass", "{doc:#}");
    assert_eq!(doc["pairs"].as_array().map(Vec::len), Some(6), "every pair's results are on stdout");
}

/// A fresh temporary directory for one test's side files.
fn side_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-side-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A page of ours as XML: the heat map is XHTML with an HTML5 doctype.
fn parse_page(text: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(text, options).unwrap_or_else(|e| panic!("the page is not well-formed XML: {e}"))
}

#[test]
fn mesh_progress_is_round_lines_on_stderr_and_stdout_stays_one_document() {
    let mut knobs = vec![Knobs::default(); 6];
    knobs[2].slow_node = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let run = run_mesh(&cluster.endpoints, &["--progress"]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    // stdout: exactly the document (it parses whole), nothing else.
    let doc = run.doc();
    assert_eq!(doc["schema"], "fabcheck.mesh.v1");
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.first().copied(), Some("reached 6 agents"), "{stderr}");
    // All-pairs of 6: 5 rounds, then the slow node's 5 pairs re-tested in rounds of their own.
    for r in 1..=5 {
        assert!(lines.iter().any(|l| l.starts_with(&format!("round {r}/5, ")) && l.ends_with(" bad so far")), "round {r}: {stderr}");
    }
    assert!(lines.contains(&"round 5/5, 5 bad so far"), "the slow node's 5 pairs failed: {stderr}");
    assert!(lines.iter().any(|l| l.starts_with("retest round 1/")), "{stderr}");
    assert!(!stderr.contains('\r'), "not a terminal: plain lines, no status line rewritten");
    // Not a terminal and no --progress: silent.
    let run = run_mesh(&cluster.endpoints, &[]);
    assert!(!run.stderr().contains("round"), "{}", run.stderr());
    // --progress wins over --quiet; --no-progress after it silences.
    let run = run_mesh(&cluster.endpoints, &["--quiet", "--progress"]);
    assert!(run.stderr().contains("round 1/5"), "{}", run.stderr());
    let run = run_mesh(&cluster.endpoints, &["--progress", "--no-progress"]);
    assert!(!run.stderr().contains("round"), "{}", run.stderr());
}

#[test]
fn mesh_quiet_keeps_the_problems_and_the_verdict_only() {
    let mut knobs = vec![Knobs::default(); 4];
    knobs[3].slow_node = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let mut args = vec!["mesh"];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let full = run_fabcheck(&args);
    let full = String::from_utf8_lossy(&full.stdout).into_owned();
    assert!(full.contains("bandwidth (Gb/s), slowest direction"), "{full}");
    args.push("--quiet");
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("bandwidth (Gb/s)") && !text.contains("190.000"), "no matrix of ok rows with --quiet:\n{text}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{text}");
    // 0.3: named by the agent's host, the address as given after it.
    assert!(lines[0].starts_with(&format!("SUSPECT node   {} ({})", host(3), cluster.endpoints[3])), "{text}");
    assert!(lines[1].starts_with("FAIL: 4 endpoints, 6 pairs"), "{text}");
    assert!(out.stderr.is_empty(), "quiet: nothing on stderr: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn pair_progress_and_quiet() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw,send_lat", "--direction", "both", "--progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    assert_eq!(doc["results"].as_array().map(Vec::len), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let want = ["[1/2] write_bw 65536 B: a->b 190.0 Gb/s, b->a 190.0 Gb/s", "[2/2] send_lat 2 B: a->b p50 1.9 us, b->a p50 1.9 us"];
    assert_eq!(lines, want, "{stderr}");

    // --quiet, human: a passing run is its verdict.
    let mut args = vec!["pair", ep[0].as_str(), ep[1].as_str(), "--tests", "write_bw", "--direction", "ab"];
    let out = run_fabcheck(&args);
    assert!(String::from_utf8_lossy(&out.stdout).contains("write_bw   a->b"));
    args.push("--quiet");
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "PASS\n");
    // A failing one keeps its error finding and verdict, not the ok rows.
    args.extend(["--threshold", "96"]);
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("ERROR   pair.bw") && text.ends_with("\nFAIL\n") && !text.contains("write_bw   a->b"), "{text}");
}

#[test]
fn pair_sweep_writes_csv_and_an_svg_plot() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let dir = side_dir("sweep");
    let (csv, svg) = (dir.join("sweep.csv"), dir.join("sweep.svg"));
    let args = [
        "--tests",
        "write_bw,send_lat",
        "--direction",
        "ab",
        "--sweep",
        "--iters",
        "20",
        "--csv",
        csv.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ];
    let out = run_pair([&ep[0], &ep[1]], &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    assert_eq!(doc["results"].as_array().map(Vec::len), Some(46));

    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(&header[..3], ["test", "direction", "size"]);
    assert_eq!(lines.len(), 1 + 46);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let bw: Vec<(u32, f64)> =
        rows.iter().filter(|r| r[0] == "write_bw").map(|r| (r[col("size")].parse().unwrap(), r[col("bw_gbps")].parse().unwrap())).collect();
    assert_eq!(bw.len(), 23);
    assert_eq!(bw.first().map(|b| b.0), Some(2));
    assert_eq!(bw.last().map(|b| b.0), Some(8 << 20));
    // (The fakes' tiny messages take a nanosecond or two, so only the large sizes are exact.)
    assert!(bw.iter().filter(|b| b.0 >= 65536).all(|&(_, g)| (g - NORMAL_GBPS).abs() < 0.5), "{bw:?}");
    assert!(rows.iter().filter(|r| r[0] == "send_lat").all(|r| r[col("lat_p50_us")] == "1.9" && r[col("bw_gbps")].is_empty()));

    let text = std::fs::read_to_string(&svg).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(xml.root_element().tag_name().name(), "svg");
    let series: Vec<_> = xml.descendants().filter(|n| n.attribute("class") == Some("series")).collect();
    let names: Vec<&str> = series.iter().filter_map(|n| n.attribute("data-name")).collect();
    assert_eq!(names, ["write_bw a->b", "send_lat p50", "send_lat p99"]);
    for s in &series {
        let points = s.children().find(|n| n.has_tag_name("polyline")).and_then(|n| n.attribute("points")).unwrap();
        let xs: Vec<f64> = points.split(' ').map(|p| p.split(',').next().unwrap().parse().unwrap()).collect();
        assert_eq!(xs.len(), 23, "a point per size");
        // log2 axis: every doubling the same step to the right.
        let steps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(steps.iter().all(|s| (s - steps[0]).abs() < 0.2), "{steps:?}");
    }
    assert_eq!(xml.descendants().filter(|n| n.attribute("class") == Some("capacity")).count(), 1, "the 200 Gb/s capacity line");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mesh_csv_and_heat_map_parse_and_hold_every_pair() {
    let mut knobs = vec![Knobs::default(); 6];
    knobs[4].slow_node = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let dir = side_dir("mesh");
    let (csv, html) = (dir.join("mesh.csv"), dir.join("mesh.html"));
    let run = run_mesh(&cluster.endpoints, &["--csv", csv.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let doc = run.doc();
    let pairs = doc["pairs"].as_array().unwrap();

    // CSV: a row per pair and test, first pass and re-tests.
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "a,b,test,direction,size,value,unit,verdict,pass,error");
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), pairs.len() * 2, "write_bw and send_lat of every record");
    assert_eq!(rows.iter().filter(|r| r[8] == "first").count(), 15 * 2);
    assert_eq!(rows.iter().filter(|r| r[8] == "retest").count(), 5 * 2);
    let slow = &cluster.endpoints[4];
    for r in &rows {
        assert_eq!(r.len(), 10);
        let involves = r[0] == slow || r[1] == slow;
        if r[2] == "write_bw" {
            let v: f64 = r[5].parse().unwrap();
            let want = if involves { NORMAL_GBPS * SLOW_SHARE } else { NORMAL_GBPS };
            assert!((v - want).abs() < 0.5 && r[6] == "Gb/s", "{r:?}");
            assert_eq!(r[7], if involves { "fail" } else { "pass" }, "{r:?}");
        } else {
            assert_eq!((r[2], r[5], r[6]), ("send_lat", "1.9", "us"));
        }
    }
    assert!(!dir.read_dir().unwrap().any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp")), "no temporary file left");

    // The page: verdict, parameters, the expected rate, both maps, the suspect in words.
    let text = std::fs::read_to_string(&html).unwrap();
    let page = parse_page(&text);
    let by_id = |id: &str| page.descendants().find(|n| n.attribute("id") == Some(id)).unwrap_or_else(|| panic!("no #{id}"));
    assert_eq!(by_id("verdict").text(), Some("✕ FAIL"));
    let params: BTreeMap<String, String> = by_id("params")
        .children()
        .filter(|n| n.has_tag_name("tr"))
        .map(|tr| {
            let cells: Vec<String> = tr.children().filter(|n| n.is_element()).map(|n| n.text().unwrap_or_default().to_string()).collect();
            (cells[0].clone(), cells[1].clone())
        })
        .collect();
    assert_eq!(params["tests"], "write_bw, send_lat");
    assert_eq!(params["size"], "65536 B (write_bw), 2 B (send_lat)");
    assert_eq!(params["iterations"], "5000 (write_bw), 1000 (send_lat)");
    assert_eq!(params["QPs"], "1");
    assert!(params["pattern"].starts_with("all-pairs, 5 rounds"), "{params:?}");
    let expected: String = by_id("expected").descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
    // 0.3: each pair against its own two ends' capacity (issue #28 item 2), said in the legend.
    assert!(expected.contains("the capacity of the full-speed pairs (each pair is judged against its own: the smaller of its two ends' link, or PCIe where smaller; the JSON's judged_against_gbps says which): 200 Gb/s"), "{expected}");
    for map in ["map-bw", "map-lat"] {
        let rects: Vec<_> = by_id(map).descendants().filter(|n| n.has_tag_name("rect")).collect();
        let count = |class: &str| rects.iter().filter(|n| n.attribute("class") == Some(class)).count();
        assert_eq!(count("cell") + count("cell bad"), 30, "{map}");
        assert_eq!(count("cell bad"), if map == "map-bw" { 10 } else { 0 }, "{map}: the slow node's row and column");
    }
    let suspects = by_id("suspects");
    let row: Vec<String> = suspects.descendants().filter(|n| n.has_tag_name("td")).filter_map(|n| n.text()).map(String::from).collect();
    assert_eq!(&row[..2], ["node".to_string(), format!("fake04 ({slow})")], "named by the host its agent said");
    std::fs::remove_dir_all(&dir).ok();
}
