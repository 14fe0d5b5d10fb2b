//! `ipoib`: where an IPoIB interface's address lives on real nodes. A partitioned fabric puts
//! it on a P_Key child (`ib0.8001`), a storage node's IPoIB bonding (active-backup over ib0 and
//! ib1) on the bond: `ib0` itself has none, and is healthy. Before 0.5 both were warned "no IP
//! address".

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;

const NO_ADDRESS_ON_IB0: &str = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n\
4: ib0    inet6 fe80::eaeb:d303:83:1f2a/64 scope link \\       valid_lft forever preferred_lft forever\n";

/// Fixture `ofed-consistent` (ib0 up, datagram) with ib0's address moved to `holder` (none
/// when `holder` is empty), `holder` made a netdev, and `extra` files written.
fn node(tag: &str, holder: &str, extra: &[(&str, &str)]) -> Value {
    let root = super::compare::scratch(tag);
    super::accept::copy_dir(&fixtures_dir().join("ofed-consistent"), &root);
    let mut ip = NO_ADDRESS_ON_IB0.to_string();
    if !holder.is_empty() {
        ip.push_str(&format!(
            "9: {holder}    inet 10.12.4.32/16 brd 10.12.255.255 scope global {holder}\\       valid_lft forever preferred_lft forever\n"
        ));
        let dir = root.join("class/net").join(holder);
        std::fs::create_dir_all(&dir).unwrap();
        for (attr, value) in [("operstate", "up"), ("carrier", "1"), ("mtu", "2044"), ("type", "32")] {
            std::fs::write(dir.join(attr), format!("{value}\n")).unwrap();
        }
    }
    std::fs::write(root.join("tools/ip-addr.txt"), ip).unwrap();
    for (path, text) in extra {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let out = fabcheck(&["check", "--json", "--sysfs-root", root.to_str().unwrap()]);
    let doc = json(&out);
    doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "ipoib").cloned().unwrap_or_else(|| panic!("no ipoib row: {doc}"))
}

#[test]
fn a_p_key_childs_address_serves_its_parent() {
    let row = node("ipoib-child", "ib0.8001", &[]);
    assert_eq!(row["status"], "pass", "{row}");
    assert!(row["observed"].as_str().unwrap().contains("10.12.4.32/16"), "{row}");
}

#[test]
fn a_bond_over_ipoib_holds_the_address() {
    let row = node("ipoib-bond", "bond0", &[("class/net/bond0/bonding/slaves", "ib0\n"), ("class/net/bond0/bonding/mode", "active-backup 1\n")]);
    assert_eq!(row["status"], "pass", "{row}");
}

#[test]
fn an_interface_with_no_address_anywhere_still_warns() {
    let row = node("ipoib-none", "", &[]);
    assert_eq!(row["status"], "warn", "{row}");
    // A netdev named like a child of another interface (ib00 is not ib0's) holds nothing of ib0's.
    let row = node("ipoib-lookalike", "ib00", &[]);
    assert_eq!(row["status"], "warn", "{row}");
}
