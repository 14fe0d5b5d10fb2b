//! RoCE over a real Linux bond: Soft-RoCE on a bond of two veth legs, read live. The bonding
//! driver's own files (`bonding/mode`, `bonding/slaves`, each leg's `bonding_slave/state`)
//! and the legs' carriers are the kernel's, not a fixture's; fixture `roce-cx7-lag-bond` and
//! tests/integration/roce_lag.rs hold the ConnectX RoCE LAG shape (`mlx5_bond_0`).

use super::{fabcheck, json, require_rxe, sh, Restore};

const DEVICE: &str = "rxefb";

fn check() -> (Option<i32>, serde_json::Value) {
    let out = fabcheck(&["check", "--json", "--device", DEVICE, "--since", "1s"]);
    (out.status.code(), json(&out))
}

fn bond_row(doc: &serde_json::Value) -> serde_json::Value {
    doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "port.bond").cloned().unwrap_or_else(|| panic!("no port.bond row: {doc}"))
}

#[test]
fn rxe_over_a_bond_is_judged_by_its_legs() {
    let _serial = require_rxe();
    let _restore = Restore(
        "rdma link delete rxefb 2>/dev/null; ip link del fbond0 2>/dev/null; ip link del fbl0 2>/dev/null; ip link del fbl1 2>/dev/null; true",
    );
    // The guest loads bonding at boot with max_bonds=0 (no bond0 of its own: tests/vm/harness.sh).
    let setup = "ip link add fbl0 type veth peer name fbp0 && ip link add fbl1 type veth peer name fbp1 \
        && ip link add fbond0 type bond mode balance-xor miimon 100 \
        && ip link set fbl0 master fbond0 && ip link set fbl1 master fbond0 \
        && ip link set fbp0 up && ip link set fbp1 up && ip link set fbond0 up \
        && ip addr add 198.18.9.1/24 dev fbond0 \
        && rdma link add rxefb type rxe netdev fbond0";
    let out = sh(setup);
    assert!(out.status.success(), "could not build the bond: {}", String::from_utf8_lossy(&out.stderr));
    std::thread::sleep(std::time::Duration::from_millis(1500));

    let (_, doc) = check();
    let row = bond_row(&doc);
    assert_eq!(row["status"], "pass", "{row}");
    let observed = row["observed"].as_str().unwrap();
    assert!(observed.contains("fbond0 balance-xor over fbl0, fbl1: 2 of 2 legs up at 10 Gb/s"), "{observed}");
    assert!(!doc["findings"].as_array().unwrap().iter().any(|f| f["id"] == "port.bond"), "{doc}");
    // The port is rated as one leg (veth: 10000 Mb/s), not the bond's 20000.
    let out = fabcheck(&["devices", "--json", "--device", DEVICE]);
    let port = &json(&out)["devices"][0]["ports"][0];
    assert_eq!(port["netdev"], "fbond0", "{port}");
    assert_eq!(port["rate_gbps"], 10.0, "{port}");
    assert_eq!(port["bond"]["mode"], "balance-xor", "{port}");

    // One leg's peer down: fbl1 loses carrier, the bond stays up on fbl0.
    assert!(sh("ip link set fbp1 down").status.success());
    std::thread::sleep(std::time::Duration::from_millis(800));
    let (code, doc) = check();
    assert_eq!(code, Some(1), "{doc}");
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "port.bond").unwrap_or_else(|| panic!("no port.bond finding: {doc}"));
    assert_eq!(f["severity"], "error", "{f}");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("fbl1 of bond fbond0 is down or without carrier") && message.contains("runs on 1 of 2 legs"), "{message}");
    // The bond itself is up: roce.netdev passes, as it did before port.bond.
    let netdev = doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "roce.netdev").unwrap();
    assert_eq!(netdev["status"], "pass", "{netdev}");
}
