//! RoCE over a bond (NVIDIA's RoCE LAG, `mlx5_bond_0`): fixture `roce-cx7-lag-bond` and the
//! faults the bond master hides. bond0 stays up while one leg has carrier and `ibv_devinfo`
//! shows the first leg's rate, so each of these passed every row before `port.bond`.

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;
use std::path::Path;

/// The fixture, copied, with `edits` (path inside it, new text) applied.
fn lag_node(tag: &str, edits: &[(&str, &str)]) -> std::path::PathBuf {
    let root = super::compare::scratch(tag);
    super::accept::copy_dir(&fixtures_dir().join("roce-cx7-lag-bond"), &root);
    for (path, text) in edits {
        std::fs::write(root.join(path), text).unwrap();
    }
    root
}

fn check(root: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["check", "--json", "--sysfs-root", root.to_str().unwrap(), "--expect", "link_layer=ethernet"];
    args.extend_from_slice(extra);
    let out = fabcheck(&args);
    (out.status.code(), json(&out))
}

fn row<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no {id} row: {doc}"))
}

fn finding<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no {id} finding: {doc}"))
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

/// Healthy: both legs up at 200 Gb/s and set up alike. The port's rate is one leg's (a QP
/// rides one leg), the bond's legs are in `devices --json`, and the QoS is read from the legs
/// (bond0 has no DCB of its own).
#[test]
fn a_healthy_lag_passes_and_is_rated_as_one_leg() {
    let root = lag_node("lag-healthy", &[]);
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, Some(0), "{doc}");
    assert!(text(row(&doc, "port.bond"), "observed").contains("802.3ad over ens1f0np0, ens1f1np1: 2 of 2 legs up at 200 Gb/s"), "{doc}");
    assert_eq!(row(&doc, "roce.qos")["status"], "pass");
    assert_eq!(row(&doc, "link.trained")["status"], "pass");
    let out = fabcheck(&["devices", "--json", "--sysfs-root", root.to_str().unwrap()]);
    let devices = json(&out);
    let port = &devices["devices"][0]["ports"][0];
    assert_eq!(port["rate_gbps"], 200.0, "{port}");
    assert_eq!(port["netdev"], "bond0");
    let legs = port["bond"]["legs"].as_array().expect("the bond's legs");
    assert_eq!(legs.iter().map(|l| l["state"]["name"].as_str().unwrap()).collect::<Vec<_>>(), ["ens1f0np0", "ens1f1np1"]);
    assert!(legs.iter().all(|l| l["qos"]["pfc"].is_array()), "each leg's QoS is read: {port}");
    assert_eq!(legs[1]["phy"]["fec"], "RS-544", "the second leg's physical layer is read: {port}");
    // `--expect rate=` of the legs' sum cannot be met: the remedy says why, and what to give.
    let (code, doc) = check(&root, &["--expect", "rate=400"]);
    assert_eq!(code, Some(1));
    let remedy = text(finding(&doc, "link.rate"), "remedy");
    assert!(remedy.contains("on a bond the rate is one leg's (ens1f0np0") && remedy.contains("give --expect rate= one leg's speed"), "{remedy}");
}

/// A leg without carrier: bond0 is still up (its speed now the one leg's), so the node looked
/// healthy; it runs on half its bandwidth with no redundancy.
#[test]
fn a_leg_without_carrier_fails_port_bond() {
    let root = lag_node(
        "lag-leg-down",
        &[
            ("class/net/ens1f1np1/carrier", "0\n"),
            ("class/net/ens1f1np1/operstate", "down\n"),
            ("class/net/ens1f1np1/speed", "-1\n"),
            ("class/net/ens1f1np1/bonding_slave/mii_status", "down\n"),
            ("class/net/bond0/speed", "200000\n"),
        ],
    );
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, Some(1), "{doc}");
    let f = finding(&doc, "port.bond");
    assert_eq!(f["severity"], "error");
    let message = text(f, "message");
    assert!(message.contains("ens1f1np1 of bond bond0 is down or without carrier"), "{message}");
    assert!(message.contains("runs on 1 of 2 legs (200 of 400 Gb/s), with no redundancy"), "{message}");
    assert!(text(f, "remedy").contains("ethtool ens1f1np1") && text(f, "remedy").contains("/proc/net/bonding/bond0"), "{f}");
    assert_eq!(f["action"], "replace-cable", "{f}");
    // The bond itself is up: the rows that look at it pass, as they did before.
    assert_eq!(row(&doc, "roce.netdev")["status"], "pass");
    assert_eq!(row(&doc, "port.state")["status"], "pass");
}

/// One leg trained at 100 Gb/s: the QPs that land on it run at half.
#[test]
fn legs_at_different_speeds_fail_port_bond() {
    let root = lag_node("lag-slow-leg", &[("class/net/ens1f1np1/speed", "100000\n"), ("class/net/bond0/speed", "300000\n")]);
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, Some(1), "{doc}");
    let message = text(finding(&doc, "port.bond"), "message");
    assert!(message.contains("run at different speeds (ens1f0np0 200 Gb/s, ens1f1np1 100 Gb/s)"), "{message}");
}

/// One leg left without PFC (set up by hand on one port, as the guide shows one port): RoCE on
/// it is lossy. Each leg's QoS is read from its own tools' reports.
#[test]
fn a_leg_set_up_lossy_fails_roce_qos() {
    let root = lag_node("lag-leg-lossy", &[]);
    for (path, from, to) in [
        ("dcb/ens1f1np1.json", "[false,false,false,true,false,false,false,false]", "[false,false,false,false,false,false,false,false]"),
        ("tools/mlnx_qos/ens1f1np1.txt", "enabled     0   0   0   1   0", "enabled     0   0   0   0   0"),
    ] {
        let file = root.join(path);
        let before = std::fs::read_to_string(&file).unwrap();
        assert!(before.contains(from), "{path}");
        std::fs::write(&file, before.replace(from, to)).unwrap();
    }
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, Some(1), "{doc}");
    let f = finding(&doc, "roce.qos");
    assert_eq!(f["severity"], "error");
    let message = text(f, "message");
    assert!(message.contains("ens1f1np1, a leg of bond bond0, is set up unlike ens1f0np0: PFC on none (not 3)"), "{message}");
    assert!(text(f, "remedy").contains("`mlnx_qos -i ens1f1np1 --pfc 0,0,0,1,0,0,0,0`"), "{f}");
    assert_eq!(row(&doc, "port.bond")["status"], "pass", "the links are fine");
}

/// The second leg's physical layer: the port's `phy.*` rows judge the leg that describes the
/// port, `port.bond` the others (here FEC left off on 50G PAM4 lanes), naming the leg.
#[test]
fn a_second_legs_physical_layer_is_judged_under_port_bond() {
    let root = lag_node("lag-leg-fec", &[]);
    let fec = root.join("ethtool/ens1f1np1.fec.txt");
    let report = std::fs::read_to_string(&fec).unwrap();
    assert!(report.contains("Active FEC encoding: RS"));
    std::fs::write(&fec, report.replace("Active FEC encoding: RS", "Active FEC encoding: Off")).unwrap();
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, Some(1), "{doc}");
    let f = finding(&doc, "port.bond");
    assert!(text(f, "message").starts_with("ens1f1np1 (a leg of bond bond0): FEC is off"), "{f}");
    assert!(text(f, "remedy").contains("ethtool --set-fec ens1f1np1"), "{f}");
    assert_eq!(row(&doc, "phy.fec")["status"], "pass", "the port's own leg is clean: {doc}");
}

/// active-backup: the backup leg carries nothing by design (bond0's speed is one leg's); a
/// backup leg without carrier leaves no failover: a warning, not an error.
#[test]
fn an_active_backup_bond_warns_for_its_lost_failover() {
    let backup = [
        ("class/net/bond0/bonding/mode", "active-backup 1\n"),
        ("class/net/bond0/speed", "200000\n"),
        ("class/net/ens1f1np1/bonding_slave/state", "backup\n"),
    ];
    let (code, doc) = check(&lag_node("lag-ab", &backup), &[]);
    assert_eq!(code, Some(0), "{doc}");
    assert!(text(row(&doc, "port.bond"), "observed").contains("active-backup"), "{doc}");
    let mut down = backup.to_vec();
    down.extend([("class/net/ens1f1np1/carrier", "0\n"), ("class/net/ens1f1np1/operstate", "down\n")]);
    let (code, doc) = check(&lag_node("lag-ab-down", &down), &[]);
    assert_eq!(code, Some(0), "a warning: {doc}");
    let f = finding(&doc, "port.bond");
    assert_eq!(f["severity"], "warning");
    assert!(text(f, "message").contains("the bond has no failover left"), "{f}");
    let (code, _) = check(&lag_node("lag-ab-down-strict", &down), &["--fail-on", "warning"]);
    assert_eq!(code, Some(1));
}

/// The leg whose tools describe the port is the RDMA device's own PCI function's (mlx5's PF0,
/// in `device/net`), whatever order bonding lists its legs in: its FEC and QoS are the port's.
#[test]
fn the_devices_own_leg_describes_the_port() {
    let root = lag_node("lag-order", &[("class/net/bond0/bonding/slaves", "ens1f1np1 ens1f0np0\n")]);
    let out = fabcheck(&["devices", "--json", "--sysfs-root", root.to_str().unwrap()]);
    let port = &json(&out)["devices"][0]["ports"][0];
    assert_eq!(port["bond"]["legs"][0]["state"]["name"], "ens1f0np0", "{port}");
    assert_eq!(port["phy"]["fec_corrected_blocks"], 120345, "ens1f0np0's FEC report: {port}");
}

/// A bundle that lists a leg it does not hold (no `class/net/LEG`, no leg's QoS reports): the
/// rows that need that leg say `skip`, naming it, never `pass` on the other leg alone.
#[test]
fn a_leg_the_bundle_does_not_hold_is_a_skip_not_a_pass() {
    let root = lag_node("lag-leg-missing", &[]);
    std::fs::remove_dir_all(root.join("class/net/ens1f1np1")).unwrap();
    let (code, doc) = check(&root, &[]);
    assert_eq!(code, Some(0), "{doc}");
    let bond = row(&doc, "port.bond");
    assert_eq!(bond["status"], "skip", "{bond}");
    assert!(text(bond, "observed").contains("the state of ens1f1np1 is not read"), "{bond}");
    for file in ["dcb/ens1f1np1.json", "tools/mlnx_qos/ens1f1np1.txt"] {
        std::fs::remove_file(root.join(file)).unwrap();
    }
    let (_, doc) = check(&root, &[]);
    let qos = row(&doc, "roce.qos");
    assert_eq!(qos["status"], "skip", "{qos}");
    assert!(text(qos, "observed").contains("the set-up of ens1f1np1, a leg of bond bond0"), "{qos}");
}
