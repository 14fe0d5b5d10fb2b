//! The heat map's tests: well-formed XHTML, colours, hatching, the per-node view.

use super::*;

/// No agent said its host: the endpoints are named as given.
static NO_HOSTS: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

fn bw_scale() -> Scale {
    Scale { reference: 200.0, basis: "the expected capacity".into(), pass_share: 0.9, higher_is_better: true, unit: "Gb/s" }
}

fn lat_scale() -> Scale {
    Scale { reference: 2.0, basis: "the median pair".into(), pass_share: 1.0 / 1.5, higher_is_better: false, unit: "us" }
}

/// Every pair of `n` endpoints, `f` giving (bw, lat, failed, bad).
fn cells(n: usize, f: impl Fn(usize, usize) -> (Option<f64>, Option<f64>, bool, bool)) -> Vec<Cell> {
    let mut out = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (bw_gbps, lat_us, failed, bad) = f(a, b);
            out.push(Cell { a, b, bw_gbps, lat_us, failed, bad });
        }
    }
    out
}

fn page<'a>(endpoints: &'a [String], cells: &'a [Cell], suspects: &'a [Suspect], params: &'a [(String, String)]) -> Page<'a> {
    Page {
        title: "mesh <rail 0> & co",
        verdict: Verdict::Fail,
        params,
        endpoints,
        names: crate::mesh::names::Names::new(endpoints, &NO_HOSTS),
        nodes: endpoints,
        cells,
        bw: Some(bw_scale()),
        lat: Some(lat_scale()),
        suspects,
    }
}

fn parse(text: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(text, options).unwrap_or_else(|e| panic!("not well-formed: {e}"))
}

#[test]
fn small_page_parses_with_both_maps_verdict_parameters_and_words() {
    let names: Vec<String> = vec!["n1/mlx5_0".into(), "<b>&evil".into(), "n3\"x'".into(), "n4".into()];
    // Endpoint 1 is slow with everyone; 2<->3 failed.
    let cs = cells(4, |a, b| match (a, b) {
        (2, 3) => (None, None, true, true),
        (1, _) | (_, 1) => (Some(96.0), Some(2.1), false, true),
        _ => (Some(190.0), Some(2.0), false, false),
    });
    let sus = vec![
        Suspect::new(SuspectKind::Node, "<b>&evil", "3 of 3 pairs at ~96 Gb/s <slow>"),
        Suspect::new(SuspectKind::Link, "n3\"x'<->n4", "failed twice"),
    ];
    let params = vec![("tests".to_string(), "write_bw, send_lat".to_string()), ("size".into(), "65536 B".into())];
    let text = html(&page(&names, &cs, &sus, &params));
    let doc = parse(&text);
    let by_id = |id: &str| doc.descendants().find(|n| n.attribute("id") == Some(id)).unwrap_or_else(|| panic!("no #{id}"));
    assert_eq!(by_id("verdict").text(), Some("✕ FAIL"));
    let params: Vec<String> = by_id("params").descendants().filter(|n| n.has_tag_name("th")).filter_map(|n| n.text()).map(String::from).collect();
    assert_eq!(params, ["tests", "size", "endpoints", "pairs measured"]);
    let expected: String = by_id("expected").descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
    assert!(expected.contains("the expected capacity: 200 Gb/s") && expected.contains("from 90% of it (180 Gb/s)"), "{expected}");
    for kind in ["bw", "lat"] {
        let map = by_id(&format!("map-{kind}"));
        let rects: Vec<_> = map.descendants().filter(|n| n.has_tag_name("rect")).collect();
        let class = |c: &str| rects.iter().filter(|n| n.attribute("class") == Some(c)).count();
        assert_eq!(class("cell") + class("cell bad") + class("cell failed"), 12, "{kind}");
        assert_eq!(class("cell bad"), if kind == "bw" { 6 } else { 0 }, "{kind}: endpoint 1's six cells are slow, not laggy");
        assert_eq!(class("cell failed"), 2, "{kind}");
        assert_eq!(class("diag"), 4);
        assert_eq!(class("outline"), 2, "the suspect link's cells");
    }
    // Colour against the capacity: 190 of 200 is near the bright end, 96 is at the dark end.
    assert!(text.contains(&format!(r#"fill="{}""#, colour(on_scale(0.95)))));
    assert!(text.contains("96 Gb/s (48% of the reference), BAD"));
    // The suspect node is marked on both axes, with a glyph; kinds in words.
    let marked = doc.descendants().filter(|n| n.attribute("class") == Some("lbl suspect")).count();
    assert_eq!(marked, 4, "both axes of both maps");
    let kinds: Vec<&str> =
        by_id("suspects").descendants().filter(|n| n.has_tag_name("td") && n.attribute("title").is_some()).filter_map(|n| n.text()).collect();
    assert_eq!(kinds, ["node", "link"]);
    assert!(text.contains("&lt;b&gt;&amp;evil") && !text.contains("<b>&evil"));
    assert!(!text.contains("<script") && !text.contains("href="));
}

#[test]
fn no_latency_no_latency_map_and_unmeasured_cells() {
    let names: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
    let cs = vec![Cell { a: 0, b: 1, bw_gbps: Some(190.0), lat_us: None, failed: false, bad: false }];
    let params = Vec::new();
    let mut p = page(&names, &cs, &[], &params);
    p.lat = None;
    p.verdict = Verdict::Pass;
    let text = html(&p);
    let doc = parse(&text);
    assert!(doc.descendants().any(|n| n.attribute("id") == Some("map-bw")));
    assert!(!doc.descendants().any(|n| n.attribute("id") == Some("map-lat")));
    assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("cell none")).count(), 4);
    assert!(text.contains("✓ PASS") && text.contains("None: every pair"));
}

#[test]
fn a_thousand_endpoints_are_per_node_and_a_few_hundred_kilobytes() {
    let n = 1000;
    let names: Vec<String> = (0..n).map(|i| format!("n{i:04}/mlx5_0")).collect();
    // 125 nodes of 8 rails, given out of order.
    let nodes: Vec<String> = (0..n).map(|i| format!("n{}", (i * 7) % 125)).collect();
    // A shift pattern's 16 rounds: i with i+r.
    let mut cs = Vec::new();
    for r in [1, 250, 125, 375, 62, 187, 312, 437] {
        for a in 0..n {
            let b = (a + r) % n;
            let slow = a == 17 || b == 17;
            cs.push(Cell { a, b, bw_gbps: Some(if slow { 57.0 } else { 190.0 }), lat_us: Some(1.9), failed: false, bad: slow });
        }
    }
    let sus = vec![Suspect::new(SuspectKind::Node, names[17].clone(), "slow")];
    let params = Vec::new();
    let mut p = page(&names, &cs, &sus, &params);
    p.nodes = &nodes;
    let text = html(&p);
    assert!(text.len() < 1 << 20, "{} bytes", text.len());
    let doc = parse(&text);
    let rows: Vec<_> = doc.descendants().find(|n| n.attribute("id") == Some("nodes")).unwrap().children().filter(|n| n.has_tag_name("tr")).collect();
    assert_eq!(rows.len(), 1 + 125);
    let node = |r: &roxmltree::Node| r.first_element_child().unwrap().text().unwrap().to_string();
    // Worst first (0.3): the suspect's node, then the nodes with bad pairs, then by host, naturally.
    assert_eq!(node(&rows[1]), "n119", "the suspect's node first");
    let clean_from = rows[1..].iter().position(|r| node(r) == "n0").expect("n0's row") + 1;
    let clean: Vec<String> = rows[clean_from..].iter().map(node).collect();
    assert!(clean.len() > 100 && clean.windows(2).all(|w| natural_cmp(&w[0], &w[1]) == Ordering::Less), "then by host, naturally: {clean:?}");
    assert!(clean_from <= 1 + 17, "only nodes with bad pairs come before the clean ones");
    assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("tile")).count(), 2 * 125);
    assert!(!text.contains("class=\"cell"), "no endpoint matrix above {MATRIX_MAX}");
    assert!(text.contains("Worst pairs (16 bad, 16 shown)"));
}

#[test]
fn palette_and_order() {
    assert_eq!(colour(0.0), "#440154");
    assert_eq!(colour(1.0), "#fde725");
    assert_eq!(on_scale(1.2), 1.0);
    assert_eq!(on_scale(0.4), 0.0);
    assert_eq!(on_scale(0.75), 0.5);
    assert_eq!(lat_scale().share(4.0), 0.5);
    assert_eq!(natural_cmp("n2", "n10"), Ordering::Less);
    assert_eq!(natural_cmp("n010", "n9"), Ordering::Greater);
    assert_eq!(natural_cmp("a", "a1"), Ordering::Less);
    assert_eq!(escape("a\u{1b}b<"), "a\\u{1b}b&lt;");
}
