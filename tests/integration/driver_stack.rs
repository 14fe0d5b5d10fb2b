//! The seed's driver stack and firmware configuration through the CLI (issue #31): bundles
//! with `tools/` outputs, `devices --json`'s `fw_config`, and the done-when cases of the issue.

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;

fn check(fixture: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let dir = fixtures_dir().join(fixture);
    let mut args = vec!["check", "--json", "--sysfs-root", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = fabcheck(&args);
    (out.status.code(), json(&out))
}

fn findings<'a>(doc: &'a Value, id: &str) -> Vec<&'a Value> {
    doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == id).collect()
}

#[test]
fn devices_json_shows_fw_config_with_current_next_boot_and_default() {
    let dir = fixtures_dir().join("cx7-link-type-pending");
    let out = fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let doc = json(&out);
    let config = &doc["devices"][0]["fw_config"];
    assert_eq!(config["LINK_TYPE_P1"], serde_json::json!({"current": "IB", "next_boot": "ETH", "default": "IB"}));
    assert_eq!(config["SRIOV_EN"], serde_json::json!({"current": "True", "next_boot": "True", "default": "False"}));
    let names: Vec<&str> = config.as_object().unwrap().keys().map(String::as_str).collect();
    for want in
        ["LINK_TYPE_P1", "LINK_TYPE_P2", "SRIOV_EN", "NUM_OF_VFS", "ATS_ENABLED", "PCI_WR_ORDERING", "ADVANCED_PCI_SETTINGS", "MAX_ACC_OUT_READ"]
    {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // mstconfig's table (no `(N)` numbers) reads the same way.
    let dir = fixtures_dir().join("mstconfig-sriov-pending");
    let doc = json(&fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]));
    assert_eq!(doc["devices"][0]["fw_config"]["NUM_OF_VFS"], serde_json::json!({"current": "0", "next_boot": "16", "default": "0"}));
    // A bundle without tools/: present, and null.
    let dir = fixtures_dir().join("cx-ib-mode-want-eth");
    let doc = json(&fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]));
    let device = doc["devices"][0].as_object().unwrap();
    assert!(device.contains_key("fw_config") && device["fw_config"].is_null(), "{device:?}");
}

#[test]
fn ib_port_with_eth_already_set_for_next_boot_is_told_to_power_cycle() {
    let (code, doc) = check("cx7-link-type-pending", &["--expect", "link_layer=ethernet"]);
    assert_eq!(code, Some(1));
    let f = findings(&doc, "port.link_layer");
    assert_eq!(f.len(), 1);
    let remedy = f[0]["remedy"].as_str().unwrap();
    assert!(remedy.contains("power cycle") && !remedy.contains("set LINK_TYPE_P1"), "{remedy}");
    assert!(f[0]["message"].as_str().unwrap().contains("LINK_TYPE_P1 is already ETH for the next boot"), "{}", f[0]["message"]);
    // The pending parameter is named without an expectation too; alone it is a warning.
    let (code, doc) = check("cx7-link-type-pending", &[]);
    assert_eq!(code, Some(0));
    let pending = findings(&doc, "fw.pending");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["severity"], "warning");
    assert!(pending[0]["message"].as_str().unwrap().contains("LINK_TYPE_P1 IB -> ETH"), "{}", pending[0]["message"]);
}

#[test]
fn ofed_with_inbox_modules_and_openibd_disabled_and_a_consistent_node() {
    let (code, doc) = check("ofed-inbox-loaded", &[]);
    assert_eq!(code, Some(1));
    let ofed = findings(&doc, "stack.ofed");
    assert_eq!(ofed.len(), 2, "{ofed:?}");
    assert!(ofed.iter().all(|f| f["remedy"].as_str().unwrap().contains("dkms autoinstall -k 5.15.0-94-generic")), "{ofed:?}");
    let (code, doc) = check("openibd-disabled", &[]);
    assert_eq!(code, Some(0));
    let service = findings(&doc, "stack.service");
    assert_eq!((service.len(), &service[0]["severity"], &service[0]["subject"]), (1, &Value::from("warning"), &Value::from("openibd")));
    let (code, doc) = check("ofed-consistent", &["--expect", "ipoib_mode=datagram"]);
    assert_eq!(code, Some(0));
    assert_eq!(doc["findings"], serde_json::json!([]), "a consistent node raises none");
    // Its checks were made, not skipped for want of input.
    let checks = doc["checks"].as_array().unwrap();
    for (id, subject) in
        [("stack.ofed", "mlx5_core"), ("stack.ofed", "ib_core"), ("stack.service", "openibd"), ("fw.pending", "mlx5_0"), ("ipoib", "mlx5_0/1")]
    {
        assert!(checks.iter().any(|c| c["id"] == id && c["subject"] == subject && c["status"] == "pass"), "{id} {subject}: {checks:#?}");
    }
}

#[test]
fn a_bundle_without_tools_stays_as_it_was() {
    let (_, doc) = check("hdr-ib-healthy", &[]);
    for id in ["fw.pending", "stack.ofed", "stack.service"] {
        assert!(doc["checks"].as_array().unwrap().iter().all(|c| c["id"] != id), "{id} in a bundle without tools/");
    }
}

#[test]
fn expectation_keys_for_the_stack() {
    let dir = fixtures_dir().join("ofed-consistent");
    let out = fabcheck(&["check", "--json", "--sysfs-root", dir.to_str().unwrap(), "--expect", "ipoib_mode=connected"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(findings(&doc, "ipoib")[0]["severity"], "error");
    let out = fabcheck(&["check", "--sysfs-root", dir.to_str().unwrap(), "--expect", "ipoib_mode=fast"]);
    assert_eq!(out.status.code(), Some(2));
    // sm=local: this bundle has no opensm unit, which is then an error.
    let (code, doc) = check("ofed-consistent", &["--expect", "sm=local"]);
    assert_eq!(code, Some(1));
    assert_eq!(findings(&doc, "stack.service")[0]["subject"], "opensm");
}
