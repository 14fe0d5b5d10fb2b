//! `fabcheck bundle DIR` on a live Soft-RoCE guest (issue #45): the capture of the guest, read
//! back with `check --sysfs-root`, gives the guest's own verdict and names the guest as its host;
//! with the netdev down it fails as the guest does.

use super::{fabcheck, json, require_rxe, sh, Restore, DEVICE, NETDEV};
use std::path::PathBuf;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-rxe-bundle-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The status of each check the bundle's checklist and the live one both ran, by id.
fn statuses(doc: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (format!("{} {}", c["id"].as_str().unwrap(), c["subject"].as_str().unwrap_or("")), c["status"].as_str().unwrap().to_string()))
        .collect()
}

/// Captures the guest and judges the capture beside the guest itself.
fn round_trip(tag: &str) -> (serde_json::Value, serde_json::Value) {
    let dir = scratch(tag);
    let out = fabcheck(&["bundle", dir.to_str().unwrap()]);
    assert!(out.status.success(), "bundle: {}", String::from_utf8_lossy(&out.stderr));
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("fabcheck-bundle.json")).unwrap()).unwrap();
    let guest = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    // What each tool gave, in the log: a tool that ran to its limit shows here.
    eprintln!("bundle {tag}: {} s; tools: {}", manifest["seconds"], manifest["tools"]);
    assert_eq!(manifest["host"], guest.as_str());
    assert_eq!(manifest["tools_run"], true, "{manifest}");
    assert!(manifest["tools"].as_array().unwrap().iter().any(|t| t["file"] == "tools/uname-r.txt" && t["saved"] == true), "{manifest}");
    assert!(dir.join(format!("class/infiniband/{DEVICE}/ports/1/state")).is_file());
    // --since 1s: other tests of the tier flap va, which the kernel log (and the bundle's
    // tools/dmesg.txt) keeps; link.flap has its own test (tests/rxe/flap.rs).
    let live = json(&fabcheck(&["check", "--json", "--device", DEVICE, "--since", "1s"]));
    let read = json(&fabcheck(&["check", "--json", "--device", DEVICE, "--since", "1s", "--sysfs-root", dir.to_str().unwrap()]));
    assert_eq!(read["host"], guest.as_str(), "the bundle's document names the guest");
    std::fs::remove_dir_all(&dir).ok();
    (live, read)
}

fn assert_same_judgment(live: &serde_json::Value, read: &serde_json::Value) {
    assert_eq!(live["verdict"], read["verdict"], "live: {}\nbundle: {}", live["findings"], read["findings"]);
    let (l, r) = (statuses(live), statuses(read));
    for id in ["port.state", "roce.gid", "roce.netdev"] {
        let key = |m: &std::collections::BTreeMap<String, String>| {
            m.iter().filter(|(k, _)| k.starts_with(id)).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>()
        };
        assert!(!key(&l).is_empty(), "{id} did not run live: {l:?}");
        assert_eq!(key(&l), key(&r), "{id}");
    }
}

#[test]
fn a_bundle_of_the_guest_gives_the_guests_own_verdict() {
    let _serial = require_rxe();
    let (live, read) = round_trip("healthy");
    assert_eq!(live["verdict"], "pass", "{}", live["findings"]);
    assert_same_judgment(&live, &read);
}

#[test]
fn a_bundle_of_the_guest_with_its_netdev_down_fails_as_the_guest_does() {
    let _serial = require_rxe();
    let _restore = Restore("ip link set va up");
    assert!(sh(&format!("ip link set {NETDEV} down")).status.success());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (live, read) = round_trip("down");
    assert_eq!(live["verdict"], "fail");
    assert_same_judgment(&live, &read);
}
