//! `fabcheck check` on a live rxe0: healthy passes; each injected fault fails with the
//! right finding and exit code 1.

use super::{fabcheck, json, require_rxe, sh, Restore, DEVICE, NETDEV};

/// `(id, severity)` of every finding; each must blame rxe0, its port, or the node.
fn findings(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let subject = f["subject"].as_str().unwrap();
            assert!(subject == format!("{DEVICE}/1") || subject == DEVICE || subject == "node", "finding on an unexpected subject: {f}");
            (f["id"].as_str().unwrap().to_string(), f["severity"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn healthy_rxe_passes() {
    let _serial = require_rxe();
    // Over the last second only: other tests of this tier take va down and up, which the
    // kernel log keeps (link.flap, tests/rxe/flap.rs).
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--since", "1s"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}", serde_json::to_string_pretty(&doc["findings"]).unwrap());
    assert_eq!(doc["verdict"], "pass");
    let ids: Vec<&str> = doc["checks"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    for id in ["stack.modules", "stack.uverbs", "stack.memlock", "port.state", "roce.gid", "roce.netdev", "roce.mtu"] {
        assert!(ids.contains(&id), "check {id} did not run: {ids:?}");
    }
}

#[test]
fn netdev_down_fails_port_state_and_netdev() {
    let _serial = require_rxe();
    let _restore = Restore("ip link set va up");
    assert!(sh(&format!("ip link set {NETDEV} down")).status.success());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = fabcheck(&["check", "--json", "--device", DEVICE]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1));
    let f = findings(&doc);
    assert!(f.iter().any(|(id, s)| id == "port.state" && s == "error"), "{f:?}");
    assert!(f.iter().any(|(id, s)| id == "roce.netdev" && s == "error"), "{f:?}");
}

#[test]
fn ipv4_address_removed_fails_roce_gid() {
    let _serial = require_rxe();
    let _restore = Restore("ip addr add 198.18.0.1/24 dev va 2>/dev/null; true");
    assert!(sh(&format!("ip addr del 198.18.0.1/24 dev {NETDEV}")).status.success());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = fabcheck(&["check", "--json", "--device", DEVICE]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", doc["findings"]);
    let f = findings(&doc);
    assert!(f.iter().any(|(id, s)| id == "roce.gid" && s == "error"), "{f:?}");
    let remedy = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "roce.gid").unwrap()["remedy"].as_str().unwrap().to_string();
    assert!(remedy.contains("ip addr add"), "{remedy}");
}

#[test]
fn expecting_infiniband_on_rxe_fails_link_layer() {
    let _serial = require_rxe();
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--expect", "link_layer=infiniband"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(findings(&doc).iter().any(|(id, s)| id == "port.link_layer" && s == "error"));
}

#[test]
fn expectations_that_hold_pass() {
    let _serial = require_rxe();
    let out = fabcheck(&[
        "check",
        "--device",
        DEVICE,
        "--since",
        "1s",
        "--expect",
        "link_layer=ethernet",
        "--expect",
        "devices=1",
        "--expect",
        "state=ACTIVE",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

/// The live driver-stack path on a node without MFT or mstflint: the firmware configuration is
/// said to be "not read" (info, on the node), never a failure; with either tool installed there
/// is nothing to query on rxe (not an NVIDIA adapter), so nothing is said.
#[test]
fn firmware_configuration_not_read_is_said_as_info() {
    let _serial = require_rxe();
    let have_tool = sh("command -v mlxconfig || command -v mstconfig || ls /usr/sbin/mlxconfig /usr/sbin/mstconfig").status.success();
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--since", "1s"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}", doc["findings"]);
    let fw: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "fw.pending").collect();
    if have_tool {
        assert!(fw.is_empty(), "rxe has no firmware configuration to read: {fw:?}");
    } else {
        assert_eq!(fw.len(), 1, "{}", doc["findings"]);
        assert_eq!((fw[0]["severity"].as_str(), fw[0]["subject"].as_str()), (Some("info"), Some("node")));
        assert!(fw[0]["message"].as_str().unwrap().contains("not read"), "{}", fw[0]["message"]);
    }
    // The devices document carries the field, null for rxe.
    let devices = json(&fabcheck(&["devices", "--json", "--device", DEVICE]));
    assert!(devices["devices"][0].as_object().unwrap().get("fw_config").is_some_and(serde_json::Value::is_null), "{devices}");
}

/// `check --soak`: the netdev set down and up during the window raises rxe0's `link_downed`
/// (hw_counters; rxe counts each port-down event), so `link.flap` names the port as an error,
/// judged over the window, while the port is ACTIVE again when the window ends.
#[test]
fn a_link_flap_during_a_soak_window_is_named() {
    let _serial = require_rxe();
    let _restore = Restore("ip link set va up");
    let check = std::process::Command::new(super::bin())
        .args(["check", "--json", "--device", DEVICE, "--soak", "6s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start fabcheck check --soak");
    // Inside the window: after the first read, well before the second.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(sh(&format!("ip link set {NETDEV} down")).status.success());
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(sh(&format!("ip link set {NETDEV} up")).status.success());
    let out = check.wait_with_output().expect("check --soak ends");
    let doc = json(&out);
    let flap: Vec<&serde_json::Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "link.flap").collect();
    assert!(
        flap.iter().any(|f| f["severity"] == "error" && f["subject"] == format!("{DEVICE}/1")),
        "no link.flap error on {DEVICE}/1: {}\n{}",
        doc["findings"],
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{}", doc["findings"]);
    let window = doc["findings"].as_array().unwrap().iter().any(|f| f["message"].as_str().is_some_and(|m| m.contains("soak window")));
    assert!(window, "the window is said: {}", doc["findings"]);
}

/// `check --soak` with nothing happening in the window: `link.flap` passes over the window.
#[test]
fn a_quiet_soak_window_passes_link_flap() {
    let _serial = require_rxe();
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--soak", "2s", "--since", "1s"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}", doc["findings"]);
    let flap =
        doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "link.flap").unwrap_or_else(|| panic!("no link.flap check: {}", doc["checks"]));
    assert_eq!(flap["status"], "pass", "{flap}");
}
