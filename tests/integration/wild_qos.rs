//! RoCE QoS outputs captured on real nodes (public sources, `tests/fixtures/wild-qos/SOURCES.md`)
//! read by the library's parsers in-process, with the values a careful reader takes from each.
//! A `dcb -j` answer is fed as `fabcheck bundle` keeps it: each `dcb -j OBJECT show dev IF`
//! answer a member of `dcb/IF.json`, `null` for the objects not asked.

use fabcheck::probe::capacity::dcb_pfc_priorities;
use fabcheck::probe::qos::pause::{self, GlobalPause, PauseFrom};
use fabcheck::probe::qos::{dcb_json, Dscp, Priority, Trust};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wild-qos")
}

fn wild(name: &str) -> String {
    let path = dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `dcb/IF.json` as `fabcheck bundle` writes it (probe/bundle/tools.rs): the five answers in
/// order, each trimmed, `null` where there is none.
fn bundle_json(answers: &[(&str, &str)]) -> String {
    let members: Vec<String> = ["pfc", "ets", "apptrust", "app", "buffer"]
        .iter()
        .map(|object| {
            let answer = answers.iter().find(|(o, _)| o == object).map_or("null", |(_, text)| text.trim());
            format!("\"{object}\":{answer}")
        })
        .collect();
    format!("{{{}}}\n", members.join(","))
}

fn prio(p: u8) -> Priority {
    Priority::new(p).unwrap()
}

#[test]
fn every_sample_has_its_source() {
    crate::wild_outputs::assert_every_sample_has_its_source("wild-qos");
}

#[test]
fn dcb_json_app_of_a_spectrum_port_two_dscp_rules() {
    // `dcb -j -p app show dev swp1 dscp-prio` after `dcb app add dev swp1 dscp-prio CS1:0 CS2:1`:
    // pretty-printed, each entry with iproute2 6.x's third `" "` element.
    let text = wild("dcb-j-p-app-spectrum-swp1.json");
    let app = dcb_json::answer(&text).expect("one JSON object");
    assert_eq!(app["dscp_prio"].as_array().map(Vec::len), Some(2));
    let q = dcb_json::parse_bundle(&bundle_json(&[("app", &text)])).expect("the bundle's object");
    assert_eq!(q.dscp_priority(Dscp::new(8).unwrap()), Some(prio(0)), "CS1 -> 0");
    assert_eq!(q.dscp_priority(Dscp::new(16).unwrap()), Some(prio(1)), "CS2 -> 1");
    assert_eq!(q.dscp_priority(Dscp::new(26).unwrap()), None, "no rule for 26: unknown, not 0");
    assert_eq!(q.dscp2prio.as_ref().map(|t| t.iter().flatten().count()), Some(2));
    // No apptrust answer: DSCP rules in the APP table mean the port trusts DSCP (mlxsw and mlx5
    // both switch to DSCP trust when the table holds a DSCP rule).
    assert_eq!(q.trust, Some(Trust::Dscp));
    assert_eq!(q.default_prio, None);
    assert_eq!((q.pfc, q.prio2tc, q.tcs, q.prio2buffer), (None, None, None, None), "only APP was asked");
}

#[test]
fn dcb_pfc_text_of_a_connectx3_pro_port_pfc_on_3() {
    // `dcb pfc show dev ens6` on mlx4 (inbox driver), as a 0.3 bundle's `dcb/IF.pfc.txt` holds it.
    assert_eq!(dcb_pfc_priorities(&wild("dcb-pfc-mlx4-ens6.txt")), Some(vec![3]));
}

#[test]
fn ethtool_a_ice_25g_negotiated_symmetric_pause() {
    let g = pause::parse(&wild("ethtool-a-ice-ens6f0-25g.txt")).expect("RX/TX lines");
    assert_eq!(g, GlobalPause { rx: true, tx: true, from: PauseFrom::Ethtool });
    assert!(g.on());
}

#[test]
fn ethtool_include_statistics_a_ice_pause_off() {
    // `ethtool --include-statistics --show-pause`: the `Statistics:` block after the state is
    // not a state line.
    let g = pause::parse(&wild("ethtool-I-a-ice-ens785f0np0.txt")).expect("RX/TX lines");
    assert_eq!(g, GlobalPause { rx: false, tx: false, from: PauseFrom::Ethtool });
    assert!(!g.on());
}
