//! `fabcheck devices` against `ibv_devinfo -v` on the same rxe0, field by field.

use super::{fabcheck, json, require_rxe, sh, DEVICE};
use std::collections::BTreeMap;

/// The fields of `ibv_devinfo -v` we compare, per port.
#[derive(Debug, Default)]
struct DevinfoPort {
    fields: BTreeMap<String, String>,
    gids: Vec<(u32, String, String)>,
}

fn ibv_devinfo() -> (BTreeMap<String, String>, BTreeMap<u32, DevinfoPort>) {
    let out = sh(&format!("ibv_devinfo -v -d {DEVICE}"));
    assert!(out.status.success(), "ibv_devinfo failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut device = BTreeMap::new();
    let mut ports: BTreeMap<u32, DevinfoPort> = BTreeMap::new();
    let mut current: Option<u32> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        let Some((key, value)) = trimmed.split_once(':') else { continue };
        let (key, value) = (key.trim(), value.trim());
        if key == "port" {
            current = value.parse().ok();
            ports.entry(current.unwrap()).or_default();
            continue;
        }
        if let Some(index) = key.strip_prefix("GID[").and_then(|k| k.strip_suffix(']')) {
            let (gid, kind) = value.split_once(',').map_or((value, ""), |(g, k)| (g.trim(), k.trim()));
            let port = ports.get_mut(&current.expect("GID before port")).unwrap();
            port.gids.push((index.trim().parse().unwrap(), gid.to_string(), kind.to_string()));
            continue;
        }
        match current {
            Some(p) => {
                ports.get_mut(&p).unwrap().fields.insert(key.to_string(), value.to_string());
            }
            None => {
                device.insert(key.to_string(), value.to_string());
            }
        }
    }
    (device, ports)
}

/// "PORT_ACTIVE (4)" -> 4; "4096 (5)" -> 4096; "0x00" -> 0.
fn number(text: &str) -> u64 {
    let first = text.split_whitespace().next().unwrap_or("");
    if let Some(hex) = first.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).unwrap();
    }
    first.parse().unwrap_or_else(|_| text.rsplit('(').next().unwrap().trim_end_matches(')').parse().unwrap())
}

fn paren(text: &str) -> u64 {
    text.rsplit('(').next().unwrap().trim_end_matches(')').parse().unwrap()
}

#[test]
fn inventory_matches_ibv_devinfo_field_by_field() {
    let _serial = require_rxe();
    let out = fabcheck(&["devices", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["schema"], "fabcheck.devices.v1");
    let dev = doc["devices"].as_array().unwrap().iter().find(|d| d["name"] == DEVICE).expect("rxe0 missing from fabcheck devices");
    let (info, ports) = ibv_devinfo();
    assert_eq!(dev["fw_ver"].as_str().unwrap(), info["fw_ver"]);
    assert_eq!(dev["node_guid"].as_str().unwrap(), info["node_guid"]);
    assert_eq!(dev["sys_image_guid"].as_str().unwrap(), info["sys_image_guid"]);
    assert_eq!(dev["vendor_id"].as_u64().unwrap(), number(&info["vendor_id"]));
    assert_eq!(dev["vendor_part_id"].as_u64().unwrap(), number(&info["vendor_part_id"]));
    assert_eq!(dev["ca_type"], "Soft-RoCE (rxe)");
    assert_eq!(dev["ports"].as_array().unwrap().len(), ports.len());
    for (num, want) in &ports {
        let port = dev["ports"].as_array().unwrap().iter().find(|p| p["port"].as_u64() == Some(u64::from(*num))).unwrap();
        let f = &want.fields;
        let state_names = ["NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"];
        assert_eq!(port["state"], state_names[paren(&f["state"]) as usize], "state: devinfo {}", f["state"]);
        let phys_names = ["", "SLEEP", "POLLING", "DISABLED", "TRAINING", "LINK_UP", "ERROR_RECOVERY", "PHY_TEST"];
        assert_eq!(port["phys_state"], phys_names[paren(&f["phys_state"]) as usize], "phys_state: devinfo {}", f["phys_state"]);
        assert_eq!(port["max_mtu"].as_u64().unwrap(), number(&f["max_mtu"]), "max_mtu");
        assert_eq!(port["active_mtu"].as_u64().unwrap(), number(&f["active_mtu"]), "active_mtu");
        assert_eq!(port["lid"].as_u64().unwrap(), number(&f["port_lid"]), "lid");
        assert_eq!(port["sm_lid"].as_u64().unwrap(), number(&f["sm_lid"]), "sm_lid");
        assert_eq!(port["lmc"].as_u64().unwrap(), number(&f["port_lmc"]), "lmc");
        assert_eq!(port["link_layer"].as_str().unwrap(), f["link_layer"], "link_layer");
        // Every GID ibv_devinfo lists, with its type, and no other.
        let gids = port["gids"].as_array().unwrap();
        assert!(!want.gids.is_empty(), "ibv_devinfo lists no GID for rxe0: is va up with an address?");
        assert_eq!(gids.len(), want.gids.len(), "GID count: fabcheck {gids:?} vs ibv_devinfo {:?}", want.gids);
        for (index, gid, kind) in &want.gids {
            let g = gids.iter().find(|g| g["index"].as_u64() == Some(u64::from(*index))).unwrap_or_else(|| panic!("GID {index} missing"));
            assert_eq!(g["gid"].as_str().unwrap(), gid, "GID {index}");
            if !kind.is_empty() {
                assert_eq!(g["type"].as_str().unwrap(), kind, "GID {index} type");
            }
        }
    }
}

#[test]
fn rate_is_decoded_from_width_and_speed() {
    let _serial = require_rxe();
    let doc = json(&fabcheck(&["devices", "--json", "--device", DEVICE]));
    let port = &doc["devices"][0]["ports"][0];
    // sysfs prints the kernel's own reading of the same attributes.
    let sysfs = std::fs::read_to_string(format!("/sys/class/infiniband/{DEVICE}/ports/1/rate")).unwrap();
    let (nominal, rest) = sysfs.trim().split_once(' ').unwrap();
    assert_eq!(port["nominal_gbps"].as_f64().unwrap(), nominal.parse::<f64>().unwrap(), "sysfs says {sysfs}");
    let inner = rest.split_once('(').unwrap().1.trim_end_matches(')');
    let mut parts = inner.split_whitespace();
    assert_eq!(port["width"].as_str().unwrap(), parts.next().unwrap());
    if let Some(speed) = parts.next() {
        assert_eq!(port["speed"].as_str().unwrap(), speed);
    }
    assert_eq!(port["netdev"], super::NETDEV);
}

#[test]
fn live_and_sysfs_inventories_agree() {
    let _serial = require_rxe();
    let live = json(&fabcheck(&["devices", "--json", "--device", DEVICE]));
    let tree = json(&fabcheck(&["devices", "--json", "--device", DEVICE, "--sysfs-root", "/sys"]));
    let (l, t) = (&live["devices"][0]["ports"][0], &tree["devices"][0]["ports"][0]);
    for field in ["state", "phys_state", "link_layer", "width", "speed", "rate_gbps", "nominal_gbps", "lid", "sm_lid", "netdev", "gids", "active_mtu"]
    {
        assert_eq!(l[field], t[field], "field {field}");
    }
}

#[test]
fn unknown_device_is_exit_2_with_the_list() {
    let _serial = require_rxe();
    let out = fabcheck(&["devices", "--device", "mlx5_9"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mlx5_9") && err.contains(DEVICE), "{err}");
}

#[test]
fn the_extended_query_port_answers_and_the_rate_is_the_netdevs() {
    // Issue 13: on 64-bit hosts the extended query_port (which fills active_speed_ex, what XDR
    // needs) was never called; the inventory says which answered. On RoCE the rate is the
    // netdev's Ethernet speed.
    let _serial = require_rxe();
    let doc = json(&fabcheck(&["devices", "--json", "--device", DEVICE]));
    let port = &doc["devices"][0]["ports"][0];
    assert_eq!(port["query_port"], "extended", "{port}");
    let speed: f64 = std::fs::read_to_string(format!("/sys/class/net/{}/speed", super::NETDEV)).unwrap().trim().parse().unwrap();
    assert_eq!(port["rate_gbps"].as_f64(), Some(speed / 1000.0), "{port}");
    assert_eq!(port["rate_source"], "netdev", "{port}");
}
