//! `link.flap` from the kernel log (issue #55): va taken down and up shows in `check --since
//! 10m` as rxe0's flap with its time (rxe's own words: drivers/infiniband/sw/rxe/rxe_net.c,
//! `rxe_port_down` "set down", `rxe_port_up` "set active").

use super::{fabcheck, json, require_rxe, sh, DEVICE, NETDEV};

struct Up;

impl Drop for Up {
    fn drop(&mut self) {
        let _ = sh(&format!("ip link set {NETDEV} up"));
    }
}

#[test]
fn a_down_and_up_of_the_netdev_is_a_flap_with_its_time() {
    let _serial = require_rxe();
    let _up = Up;
    assert!(sh(&format!("ip link set {NETDEV} down")).status.success());
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(sh(&format!("ip link set {NETDEV} up")).status.success());
    std::thread::sleep(std::time::Duration::from_secs(2));
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--since", "10m"]);
    let doc = json(&out);
    let port = format!("{DEVICE}/1");
    let flap = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "link.flap" && f["subject"] == port.as_str());
    let flap = flap.unwrap_or_else(|| panic!("no link.flap on {port}: {}", doc["findings"]));
    eprintln!("{flap}");
    assert_eq!(flap["severity"], "error", "{flap}");
    assert_eq!(out.status.code(), Some(1));
    let message = flap["message"].as_str().unwrap();
    assert!(message.contains("link down") && message.contains("link up"), "{message}");
    // Each event with its time (RFC 3339, to the second).
    let stamp = message.split(": ").nth(1).and_then(|l| l.split(' ').next()).unwrap_or_default();
    let year = stamp.get(0..4).and_then(|y| y.parse::<u64>().ok()).unwrap_or(0);
    assert!(year >= 2024 && stamp.ends_with('Z'), "{stamp} in {message}");
    // Allowed: said, not failed.
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--since", "10m", "--expect", "flaps=1000"]);
    let doc = json(&out);
    let flap = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "link.flap").unwrap_or_else(|| panic!("{}", doc["findings"]));
    assert_eq!(flap["severity"], "info", "{flap}");
}
