use super::*;
use serde_json::json;

fn side(host: &str, device: &str) -> Value {
    json!({"host": host, "device": device, "port": 1, "gid_index": 3})
}

fn bw(direction: &str, gbps: f64) -> Value {
    json!({"test": "write_bw", "direction": direction, "size": 65536, "iterations": 5000, "qps": 1, "bw_gbps": gbps, "peak_gbps": gbps, "msg_rate_mpps": gbps / 0.524288})
}

fn lat(p50: f64) -> Value {
    json!({"test": "send_lat", "direction": "a->b", "size": 2, "iterations": 1000, "qps": 1, "lat_us": {"p50": p50, "p99": p50 * 2.0}})
}

fn pair(a: Value, b: Value, results: Vec<Value>, time: &str) -> Value {
    json!({"schema": "fabcheck.pair.v1", "verdict": "pass", "a": a, "b": b, "results": results, "findings": [], "time": time})
}

#[test]
fn a_pair_within_the_threshold_is_no_regression() {
    let old = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 190.0), lat(2.0)], "2026-11-01T00:00:00Z");
    let new = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 181.0), lat(2.09)], "2026-12-01T00:00:00Z");
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    assert_eq!(c.differences.len(), 3, "{:?}", c.differences);
    assert!(c.regressions.is_empty(), "{:?}", c.regressions);
}

#[test]
fn slower_bandwidth_and_rate_and_higher_latency_are_regressions_naming_both_figures_and_the_time() {
    let old = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 190.0), lat(2.0)], "2026-11-01T00:00:00Z");
    let new = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 150.0), lat(2.5)], "2026-12-01T00:00:00Z");
    let r = regressions(&old, &new, DEFAULT_PCT).unwrap();
    // In key order: send_lat before write_bw.
    let figures: Vec<Figure> = r.iter().map(|r| r.key.figure).collect();
    assert_eq!(figures, [Figure::LatencyP50, Figure::Bandwidth, Figure::MessageRate]);
    let m = &r[1].message;
    assert!(m.starts_with("n1/mlx5_0:1 <-> n2/mlx5_0:1: write_bw a->b 65536 B: 150"), "{m}");
    assert!(m.contains("21.1% below the baseline's 190") && m.ends_with("of 2026-11-01T00:00:00Z"), "{m}");
    assert!(r[0].message.contains("25.0% above the baseline's 2"), "{}", r[0].message);
    assert_eq!(r[0].baseline_time.as_deref(), Some("2026-11-01T00:00:00Z"));
    // A tighter or looser threshold moves the line.
    assert_eq!(regressions(&old, &new, 30.0).unwrap().len(), 0);
}

#[test]
fn ends_swapped_between_runs_still_match_with_the_direction_turned() {
    let old = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 190.0), bw("b->a", 100.0)], "t");
    let new = pair(side("n2", "mlx5_0"), side("n1", "mlx5_0"), vec![bw("b->a", 190.0), bw("a->b", 100.0)], "t");
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    assert!(c.regressions.is_empty(), "{:?}", c.regressions);
    assert!(c.differences.iter().all(|d| d.change_pct == Some(0.0)), "{:?}", c.differences);
}

#[test]
fn guids_match_ports_where_both_documents_have_them() {
    let mut a_old = side("old-name", "mlx5_0");
    a_old["port_guid"] = json!("0x0c42a10300aa0001");
    let mut a_new = side("new-name", "mlx5_4");
    a_new["port_guid"] = json!("0x0c42a10300aa0001");
    let mut b = side("n2", "mlx5_0");
    b["port_guid"] = json!("0x0c42a10300bb0001");
    let old = pair(a_old, b.clone(), vec![bw("a->b", 190.0)], "t");
    let new = pair(a_new.clone(), b.clone(), vec![bw("a->b", 100.0)], "t");
    let r = regressions(&old, &new, DEFAULT_PCT).unwrap();
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].key.subject().contains("guid:0x0c42a10300aa0001"), "{r:?}");
    // Without a GUID on one side: host/device, which differ here, so nothing matches.
    let old = pair(side("old-name", "mlx5_0"), b, vec![bw("a->b", 190.0)], "t");
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    assert!(c.regressions.is_empty());
    assert!(c.differences.iter().any(|d| d.baseline.is_some() && d.current.is_none()));
}

#[test]
fn failed_results_are_not_figures() {
    let mut broken = bw("a->b", 1.0);
    broken["error"] = json!("timed out");
    let old = pair(side("n1", "d"), side("n2", "d"), vec![bw("a->b", 190.0)], "t");
    let new = pair(side("n1", "d"), side("n2", "d"), vec![broken], "t");
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    assert!(c.regressions.is_empty());
    assert!(c.differences.iter().all(|d| d.current.is_none()));
}

fn mesh(records: Vec<Value>, hosts: Option<Value>) -> Value {
    let mut doc = json!({"schema": "fabcheck.mesh.v1", "verdict": "pass", "endpoints": [], "pairs": records, "suspects": []});
    if let Some(h) = hosts {
        doc["hosts"] = h;
    }
    doc
}

fn record(a: &str, b: &str, gbps: f64) -> Value {
    json!({"a": a, "b": b, "verdict": "pass", "results": [bw("a->b", gbps)]})
}

/// A mesh of n agents on `tcp://127.0.0.1:BASE+i`, host `nI`; node `slow` at 60 Gb/s.
fn sim_mesh(n: usize, base: u16, slow: Option<usize>, with_hosts: bool) -> Value {
    let ep = |i: usize| format!("tcp://127.0.0.1:{}", base + i as u16);
    let mut records = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let gbps = if slow == Some(i) || slow == Some(j) { 60.0 } else { 190.0 };
            records.push(record(&ep(i), &ep(j), gbps));
        }
    }
    let hosts = with_hosts.then(|| Value::Object((0..n).map(|i| (ep(i), json!(format!("n{i}")))).collect()));
    mesh(records, hosts)
}

#[test]
fn a_node_slowed_since_the_baseline_is_named_though_its_agents_moved_ports() {
    let old = sim_mesh(6, 40000, None, true);
    let new = sim_mesh(6, 50000, Some(3), true);
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    assert_eq!(c.slowed, [SlowedNode { endpoint: "n3".into(), regressed_pairs: 5, pairs: 5 }]);
    assert_eq!(c.regressions.len(), 10, "5 pairs, bandwidth and rate each");
    assert!(c.regressions.iter().all(|r| r.key.subject().contains("n3")));
}

#[test]
fn without_reported_hosts_mesh_endpoints_match_as_given() {
    let same_ports = compare(&sim_mesh(4, 40000, None, false), &sim_mesh(4, 40000, Some(0), false), DEFAULT_PCT).unwrap();
    assert_eq!(same_ports.slowed.len(), 1);
    assert_eq!(same_ports.slowed[0].endpoint, "tcp://127.0.0.1:40000");
    // New ports and no hosts: nothing to match, nothing claimed.
    let moved = compare(&sim_mesh(4, 40000, None, false), &sim_mesh(4, 50000, Some(0), false), DEFAULT_PCT).unwrap();
    assert!(moved.regressions.is_empty() && moved.differences.iter().all(|d| d.change_pct.is_none()));
}

#[test]
fn a_retest_record_replaces_the_first_and_a_host_on_the_record_is_used() {
    let mut first = record("n1/mlx5_0", "n2/mlx5_0", 60.0);
    first["a_host"] = json!("node1");
    first["b_host"] = json!("node2");
    let mut retest = first.clone();
    retest["results"] = json!([bw("a->b", 189.0)]);
    retest["retest"] = json!(true);
    let new = mesh(vec![first, retest], None);
    let old = mesh(vec![json!({"a": "n1/mlx5_0", "b": "n2/mlx5_0", "a_host": "node1", "b_host": "node2", "results": [bw("a->b", 190.0)]})], None);
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    assert!(c.regressions.is_empty(), "{:?}", c.regressions);
    assert_eq!(c.differences[0].key.a, "node1/mlx5_0");
}

#[test]
fn documents_that_cannot_be_compared_are_named() {
    let p = pair(side("a", "d"), side("b", "d"), vec![], "t");
    let m = mesh(vec![], None);
    assert!(matches!(command_of(&p, &m), Err(CompareError::Mismatch { .. })));
    let check = json!({"schema": "fabcheck.check.v1"});
    let e = command_of(&check, &p).unwrap_err();
    assert_eq!(e, CompareError::OtherSchema { which: "baseline", schema: "fabcheck.check.v1".into() });
    assert!(e.to_string().contains("fabcheck.check.v1"), "{e}");
    let v2 = json!({"schema": "fabcheck.pair.v2"});
    let e = command_of(&p, &v2).unwrap_err();
    assert!(matches!(e, CompareError::UnknownVersion { which: "new", .. }), "{e:?}");
    assert!(e.to_string().contains("fabcheck.pair.v2") && e.to_string().contains("fabcheck.pair.v1"), "{e}");
    assert_eq!(command_of(&json!([1]), &p), Err(CompareError::NoSchema { which: "baseline" }));
}

#[test]
fn the_table_and_the_document_say_the_same() {
    let old = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 190.0)], "2026-11-01T00:00:00Z");
    let new = pair(side("n1", "mlx5_0"), side("n2", "mlx5_0"), vec![bw("a->b", 150.0), lat(2.0)], "t2");
    let c = compare(&old, &new, DEFAULT_PCT).unwrap();
    let (s_old, s_new) = (render::Source::of("old.json", &old), render::Source::of("new.json", &new));
    let table = render::human(&s_old, &s_new, &c);
    assert!(table.contains("REGRESSION") && table.contains("new") && table.contains("FAIL: 2 figures"), "{table}");
    let doc = serde_json::to_value(render::doc(&s_old, &s_new, &c)).unwrap();
    assert_eq!(doc["schema"], "fabcheck.compare.v1");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["baseline"]["time"], "2026-11-01T00:00:00Z");
    assert_eq!(doc["command"], "pair");
    let d = &doc["differences"][0];
    assert_eq!((d["test"].as_str(), d["figure"].as_str(), d["regression"].as_bool()), (Some("send_lat"), Some("lat_p50_us"), Some(false)));
    assert_eq!(doc["regressions"].as_array().unwrap().len(), 2);
    assert!(doc["regressions"][0]["message"].as_str().unwrap().contains("below the baseline's"));
}

#[test]
fn a_document_read_from_a_stream_is_the_document_in_memory() {
    // Issue #46 item 5: read typed from a stream, with the host map after the records (a
    // reader cannot rely on the order of keys), skipping what compare does not use.
    let old = sim_mesh(5, 40000, None, true);
    let mut new = sim_mesh(5, 50000, Some(2), true);
    new["suspects"] = json!([{"kind": "node", "subject": "n2", "reason": "slow", "huge": vec![0u8; 10_000]}]);
    let text = |doc: &Value| {
        let mut t = serde_json::to_string(doc).unwrap();
        // The hosts last: move them after "pairs" by writing them again at the end.
        if let Some(hosts) = doc.get("hosts") {
            let mut without = doc.clone();
            without.as_object_mut().unwrap().remove("hosts");
            t = serde_json::to_string(&without).unwrap();
            t.pop();
            t.push_str(&format!(",\"hosts\":{hosts}}}"));
        }
        t
    };
    let (a, b) = (read::Doc::read(text(&old).as_bytes()).unwrap(), read::Doc::read(text(&new).as_bytes()).unwrap());
    assert_eq!(a.meta.schema.as_deref(), Some("fabcheck.mesh.v1"));
    let streamed = compare_docs(&a, &b, DEFAULT_PCT).unwrap();
    assert_eq!(streamed, compare(&old, &new, DEFAULT_PCT).unwrap());
    assert_eq!(streamed.slowed[0].endpoint, "n2");
}

#[test]
fn what_is_kept_of_a_figure_is_small_and_shapes_compare_does_not_know_are_no_figures() {
    assert!(std::mem::size_of::<read::Entry>() <= 40, "{} bytes a figure", std::mem::size_of::<read::Entry>());
    for odd in [r#"{"schema":"fabcheck.mesh.v1","pairs":{"x":1}}"#, r#"{"schema":"fabcheck.mesh.v1","pairs":7,"results":"no"}"#] {
        let doc = read::Doc::read(odd.as_bytes()).unwrap();
        assert!(doc.mesh_figures().entries.is_empty(), "{odd}");
    }
    // A pair document's results and rails stream the same way (issue #58): odd shapes are none.
    for odd in [
        r#"{"schema":"fabcheck.pair.v1","results":{"x":1},"rails":"no"}"#,
        r#"{"schema":"fabcheck.pair.v1","results":7,"rails":[5,{"a":{},"results":"no"}]}"#,
        r#"{"schema":"fabcheck.pair.v1","results":[5,"x",{"test":"write_bw"}],"rails":{}}"#,
    ] {
        let doc = read::Doc::read(odd.as_bytes()).unwrap();
        assert!(doc.pair_figures(false).entries.is_empty(), "{odd}");
    }
    let pair = r#"{"schema":"fabcheck.pair.v1","a":{"host":"n2","device":"d"},"b":{"host":"n1","device":"d"},
        "results":[{"test":"write_bw","direction":"a->b","size":8,"bw_gbps":1.5}],
        "rails":[{"a":{"host":"n1","device":"e"},"b":{"host":"n2","device":"e"},"results":[{"test":"send_lat","direction":"a->b","size":2,"lat_us":{"p50":2.0}}]}]}"#;
    let figures = read::Doc::read(pair.as_bytes()).unwrap().pair_figures(false);
    let keys: Vec<_> =
        figures.entries.iter().map(|e| (figures.names.get(e.a), figures.names.get(e.b), figures.names.get(e.direction), e.value)).collect();
    assert_eq!(keys, [("n1/d", "n2/d", "b->a", 1.5), ("n1/e", "n2/e", "a->b", 2.0)], "the ends in one order, the direction swapped with them");
    assert!(read::Doc::read(&b"{not json"[..]).unwrap_err().is_syntax());
    assert!(read::Doc::read(&b"{\"schema\":\"fabcheck.mesh.v1\"} trailing"[..]).is_err(), "one document, nothing after it");
}
