//! The synthesized captures of tests/fixtures/ibdiagnet/ (see its README): healthy, then AR off
//! on one switch, a missing aggregation node, unequal CC settings; each named.

use super::*;

fn judged(name: &str) -> Vec<(FindingId, Severity, String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ibdiagnet").join(name);
    let capture = load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(capture.switches.len(), 3, "{name}: {capture:#?}");
    judge(&capture).into_iter().map(|f| (f.id, f.severity, f.subject.to_string(), f.message)).collect()
}

#[test]
fn a_healthy_capture_has_no_finding() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ibdiagnet/healthy");
    let c = load(&dir).unwrap();
    assert_eq!(c.aggregation_nodes.values().filter(|s| s.is_some()).count(), 3, "{c:#?}");
    assert_eq!(c.ar.as_ref().map(|a| a.values().filter(|on| **on).count()), Some(3));
    assert_eq!(c.cc.as_ref().map(|c| c.len()), Some(3));
    assert!(judged("healthy").is_empty());
}

#[test]
fn ar_off_on_one_switch_is_named() {
    let found = judged("ar-off");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0, found[0].1, found[0].2.as_str()), (FindingId::FabricAr, Severity::Error, "leaf2"));
    assert!(found[0].3.contains("adaptive routing is off on leaf2 while 2 other switches route adaptively"), "{}", found[0].3);
}

#[test]
fn a_missing_aggregation_node_is_named() {
    let found = judged("an-missing");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0, found[0].1, found[0].2.as_str()), (FindingId::FabricSharp, Severity::Error, "spine1"));
    assert!(found[0].3.starts_with("spine1 has no SHARP aggregation node"), "{}", found[0].3);
}

#[test]
fn unequal_cc_settings_are_named() {
    let found = judged("cc-unequal");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0, found[0].1, found[0].2.as_str()), (FindingId::FabricCc, Severity::Error, "leaf1"));
    assert_eq!(found[0].3, "leaf1's congestion control settings differ from the other switches': aqs_time 7 (others 4)");
}

#[test]
fn without_ar_info_the_state_is_unknown() {
    let db = "START_NODES\nNodeDesc,NodeType,NodeGUID\n\"leaf1\",2,0x10\nEND_NODES\n";
    let found = judge(&parse(db, None).unwrap());
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].id, found[0].severity), (FindingId::FabricRoute, Severity::Info));
    assert!(found[0].message.starts_with("adaptive routing state unknown"), "{}", found[0].message);
    // A switch missing from AR_INFO is unknown too, and said by name.
    let db = format!("{db}START_AR_INFO\nNodeGUID,e\n0x20,1\nEND_AR_INFO\n");
    let found = judge(&parse(&db, None).unwrap());
    assert!(found.iter().any(|f| f.message == "adaptive routing state unknown on leaf1: not in the capture's AR_INFO section"), "{found:#?}");
}

#[test]
fn malformed_captures_name_the_line() {
    assert_eq!(parse("START_NODES\nNodeDesc,NodeType,NodeGUID\n\"a\",2,zz\nEND_NODES\n", None).unwrap_err().0, 3);
    assert_eq!(parse("START_A\nx\nSTART_B\n", None).unwrap_err().0, 3);
    assert_eq!(parse("END_A\n", None).unwrap_err().0, 1);
    assert!(load(Path::new("/nonexistent-fabcheck-capture")).is_err());
}
