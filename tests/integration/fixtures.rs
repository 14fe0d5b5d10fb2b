//! Every captured node under tests/fixtures/ must produce its expected inventory, findings
//! and exit code through `--sysfs-root`, exactly as a support bundle would be diagnosed.

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::Ipv6Addr;

fn cases() -> Vec<(String, std::path::PathBuf, Value)> {
    let mut cases: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("case.json").exists())
        .map(|e| {
            let case: Value = serde_json::from_str(&std::fs::read_to_string(e.path().join("case.json")).unwrap()).unwrap();
            (e.file_name().to_string_lossy().into_owned(), e.path(), case)
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    // A fixture directory that silently vanished would make every test below pass vacuously.
    assert!(cases.len() >= 12, "expected at least 12 fixture trees, found {}", cases.len());
    cases
}

/// `(id, severity, subject)` of every finding, in document order.
fn finding_keys(doc: &Value) -> Vec<(String, String, String)> {
    doc["findings"].as_array().expect("findings is an array").iter().map(|f| (str_of(f, "id"), str_of(f, "severity"), str_of(f, "subject"))).collect()
}

fn str_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_else(|| panic!("{key} is not a string in {v}")).to_string()
}

/// Every check and finding has the contract's keys with the contract's values.
fn assert_contract_shape(name: &str, doc: &Value) {
    for c in doc["checks"].as_array().expect("checks is an array") {
        for key in ["id", "subject", "observed"] {
            assert!(c[key].is_string(), "{name}: check without a string {key}: {c}");
        }
        assert!(["pass", "fail", "skip", "warn"].contains(&c["status"].as_str().unwrap_or("")), "{name}: {c}");
        assert!(c.get("expected").is_none_or(Value::is_string), "{name}: expected must be a string when present: {c}");
    }
    for f in doc["findings"].as_array().unwrap() {
        for key in ["id", "subject", "message", "remedy"] {
            assert!(f[key].as_str().is_some_and(|t| !t.is_empty()), "{name}: finding without {key}: {f}");
        }
        assert!(["error", "warning", "info"].contains(&f["severity"].as_str().unwrap_or("")), "{name}: {f}");
        // An error is the explanation of a failed check of the same id and subject, a warning of
        // a `warn` one (0.3: a row's status agrees with its findings).
        if f["severity"] != "info" {
            let want = if f["severity"] == "error" { "fail" } else { "warn" };
            let failed = doc["checks"].as_array().unwrap().iter().any(|c| c["id"] == f["id"] && c["subject"] == f["subject"] && c["status"] == want);
            let note_only = f["id"] == "link.errors";
            assert!(failed || note_only, "{name}: finding {f} has no failed check");
        }
    }
}

#[test]
fn check_findings_and_exit_codes() {
    for (name, dir, case) in cases() {
        let mut args = vec!["check".to_string(), "--json".into(), "--sysfs-root".into(), dir.display().to_string()];
        args.extend(case["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fabcheck(&refs);
        let doc = json(&out);
        assert_eq!(doc["schema"], "fabcheck.check.v1", "{name}");
        let want_exit = case["expect_exit"].as_i64().unwrap() as i32;
        assert_eq!(out.status.code(), Some(want_exit), "{name}: exit code; findings: {}", doc["findings"]);
        assert_eq!(doc["verdict"], if want_exit == 0 { "pass" } else { "fail" }, "{name}");
        assert_contract_shape(&name, &doc);
        // Exactly the expected findings, each with its severity and the subject it blames:
        // no missing one, no extra one.
        let mut found = finding_keys(&doc);
        let mut want: Vec<(String, String, String)> =
            case["expect_findings"].as_array().unwrap().iter().map(|f| (str_of(f, "id"), str_of(f, "severity"), str_of(f, "subject"))).collect();
        found.sort();
        want.sort();
        assert_eq!(found, want, "{name}: findings (id, severity, subject)");
        // Exactly the expected failed and skipped checks, field for field.
        let not_passed: Vec<&Value> = doc["checks"].as_array().unwrap().iter().filter(|c| c["status"] != "pass").collect();
        let want_checks: Vec<&Value> =
            case["expect_checks"].as_array().unwrap_or_else(|| panic!("{name}: case.json has no expect_checks")).iter().collect();
        assert_eq!(not_passed, want_checks, "{name}: checks that did not pass");
    }
}

#[test]
fn passing_checks_carry_observed_and_expected() {
    // hdr-ib-healthy with every expectation it meets: each check says what it saw and wanted.
    let dir = fixtures_dir().join("hdr-ib-healthy");
    let out = fabcheck(&[
        "check",
        "--json",
        "--sysfs-root",
        dir.to_str().unwrap(),
        "--expect",
        "rate=200",
        "--expect",
        "link_layer=infiniband",
        "--expect",
        "width=4X",
        "--expect",
        "speed=HDR",
        "--expect",
        "devices=2",
        "--expect",
        "fw=20.39.1002",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let doc = json(&out);
    let checks = doc["checks"].as_array().unwrap();
    let get = |id: &str, subject: &str| -> &Value {
        let found: Vec<&Value> = checks.iter().filter(|c| c["id"] == id && c["subject"] == subject).collect();
        assert_eq!(found.len(), 1, "one {id} on {subject}: {checks:#?}");
        found[0]
    };
    let want = [
        ("devices.count", "node", "2", Some("2")),
        ("device.fw", "mlx5_0", "20.39.1002", Some("20.39.1002")),
        ("port.state", "mlx5_0/1", "ACTIVE / LINK_UP", Some("ACTIVE")),
        ("port.lid", "mlx5_1/1", "0x1b", None),
        ("port.sm", "mlx5_1/1", "0x1", None),
        ("port.link_layer", "mlx5_0/1", "InfiniBand", Some("InfiniBand")),
        ("link.width", "mlx5_0/1", "4X", Some("4X")),
        ("link.rate", "mlx5_0/1", "200 Gb/s", Some("200 Gb/s")),
        ("link.speed", "mlx5_1/1", "HDR", Some("HDR")),
        ("pci.link", "mlx5_1", "x16 16.0 GT/s PCIe", Some("x16 16.0 GT/s PCIe")),
    ];
    for (id, subject, observed, expected) in want {
        let c = get(id, subject);
        assert_eq!(c["status"], "pass", "{c}");
        assert_eq!(c["observed"], observed, "{c}");
        assert_eq!(c["expected"].as_str(), expected, "{c}");
    }
}

#[test]
fn devices_inventory_matches_the_capture() {
    for (name, dir, case) in cases() {
        let out = fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let doc = json(&out);
        assert_eq!(doc["schema"], "fabcheck.devices.v1");
        let devices = doc["devices"].as_array().unwrap();
        for (dev_name, ports) in case["expect_devices"].as_object().unwrap() {
            let dev = devices.iter().find(|d| d["name"] == dev_name.as_str()).unwrap_or_else(|| panic!("{name}: no {dev_name}"));
            for (port_num, want) in ports.as_object().unwrap() {
                let port = dev["ports"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["port"].as_u64() == port_num.parse().ok())
                    .unwrap_or_else(|| panic!("{name}: {dev_name} has no port {port_num}"));
                for (field, value) in want.as_object().unwrap() {
                    assert_eq!(&port[field], value, "{name} {dev_name}/{port_num} field {field}");
                }
            }
            // GIDs: only set entries, RFC 5952 text, typed.
            for p in dev["ports"].as_array().unwrap() {
                for g in p["gids"].as_array().unwrap() {
                    let text = g["gid"].as_str().unwrap();
                    assert!(text.parse::<std::net::Ipv6Addr>().is_ok() && text != "::", "{name}: bad gid {text}");
                    assert!(["IB", "RoCE v1", "RoCE v2"].contains(&g["type"].as_str().unwrap()), "{name}: {g}");
                }
            }
        }
    }
}

#[test]
fn infiniband_ports_from_sysfs_have_no_active_mtu() {
    let dir = fixtures_dir().join("hdr-ib-healthy");
    let doc = json(&fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]));
    let port = &doc["devices"][0]["ports"][0];
    assert_eq!(port["active_mtu"], Value::Null, "sysfs does not hold an IB port's active MTU");
    assert_eq!(port["link_layer"], "InfiniBand");
    assert_eq!(doc["devices"][0]["ca_type"], "ConnectX-6");
}

#[test]
fn remedies_name_the_fix() {
    let cases = [
        ("ib-init-no-sm", vec![], "port.state", "OpenSM"),
        ("cx-ib-mode-want-eth", vec!["--expect", "link_layer=ethernet"], "port.link_layer", "LINK_TYPE_P1=2"),
        ("cx-ib-mode-want-eth", vec!["--expect", "link_layer=ethernet"], "port.link_layer", "cold reboot"),
        ("roce-link-local-only", vec![], "roce.gid", "ip addr add"),
        ("roce-mtu-mismatch", vec!["--expect", "mtu=4096"], "roce.mtu", "mtu 9000"),
        ("ib-down-polling", vec![], "port.state", "cable"),
        ("roce-trained-low-400g-partner", vec![], "link.trained", "ethtool <netdev>"),
        ("ndr-ib-pcie-gen4", vec![], "pcie.bound", "Gen5 x16"),
    ];
    for (fixture, extra, id, needle) in cases {
        let dir = fixtures_dir().join(fixture);
        let mut args = vec!["check", "--json", "--sysfs-root", dir.to_str().unwrap()];
        args.extend(extra);
        let doc = json(&fabcheck(&args));
        let finding = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("{fixture}: no {id}"));
        assert!(finding["remedy"].as_str().unwrap().contains(needle), "{fixture}: {id} remedy lacks '{needle}': {}", finding["remedy"]);
    }
}

#[test]
fn device_and_port_scope() {
    let dir = fixtures_dir().join("roce-mtu-mismatch");
    let root = dir.to_str().unwrap();
    // Only mlx5_0 (mtu 9000) examined: passes.
    let out = fabcheck(&["check", "--json", "--sysfs-root", root, "--device", "mlx5_0:1", "--expect", "mtu=4096"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let out = fabcheck(&["check", "--sysfs-root", root, "--device", "mlx5_9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mlx5_0, mlx5_1"));
    let out = fabcheck(&["check", "--sysfs-root", root, "--device", "mlx5_0:7"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Two dual-port ConnectX-6 whose second ports are not cabled (DOWN / Polling, as a port with no
/// cable is): the whole node fails on them, and `--device` naming the cabled ports (a list, or
/// the flag repeated) judges those alone, flaps and MTUs included. A name in the list that is not
/// there, or an empty one, is exit 2.
#[test]
fn a_list_of_ports_leaves_the_uncabled_second_ports_out() {
    let root = super::compare::scratch("uncabled-second-ports");
    super::accept::copy_dir(&fixtures_dir().join("hdr-ib-healthy"), &root);
    for dev in ["mlx5_0", "mlx5_1"] {
        let (one, two) = (root.join(format!("class/infiniband/{dev}/ports/1")), root.join(format!("class/infiniband/{dev}/ports/2")));
        super::accept::copy_dir(&one, &two);
        for (file, text) in [("state", "1: DOWN"), ("phys_state", "2: Polling"), ("lid", "0x0"), ("sm_lid", "0x0"), ("rate", "10 Gb/sec (4X SDR)")] {
            std::fs::write(two.join(file), format!("{text}\n")).unwrap();
        }
    }
    let root = root.to_str().unwrap();
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "--json", "--sysfs-root", root];
        args.extend_from_slice(extra);
        fabcheck(&args)
    };
    let whole = check(&[]);
    assert_eq!(whole.status.code(), Some(1), "the uncabled ports fail the whole node");
    let failed: Vec<String> =
        json(&whole)["checks"].as_array().unwrap().iter().filter(|c| c["status"] == "fail").map(|c| str_of(c, "subject")).collect();
    assert!(failed.contains(&"mlx5_0/2".to_string()) && failed.contains(&"mlx5_1/2".to_string()), "{failed:?}");
    for scoped in [check(&["--device", "mlx5_0:1,mlx5_1:1"]), check(&["--device", "mlx5_0:1", "--device", "mlx5_1:1"])] {
        assert_eq!(scoped.status.code(), Some(0), "{}", String::from_utf8_lossy(&scoped.stdout));
        let doc = json(&scoped);
        let subjects: Vec<String> = doc["checks"].as_array().unwrap().iter().map(|c| str_of(c, "subject")).collect();
        assert!(subjects.iter().all(|s| !s.ends_with("/2")), "no port 2 row: {subjects:?}");
        for dev in ["mlx5_0/1", "mlx5_1/1"] {
            assert!(subjects.iter().any(|s| s == dev), "{dev} is judged: {subjects:?}");
        }
    }
    let missing = check(&["--device", "mlx5_0:1,mlx5_7:1"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("mlx5_0, mlx5_1"), "{}", String::from_utf8_lossy(&missing.stderr));
    assert_eq!(check(&["--device", "mlx5_0:1,mlx5_1:3"]).status.code(), Some(2), "a port that is not there");
    assert_eq!(check(&["--device", "mlx5_0:1,"]).status.code(), Some(2), "an empty name");
}

/// An adapter without per-priority receive buffers (Intel E810: ice has no DCB buffer
/// interface) is judged by PFC on RoCE's priority alone: `roce-e810-irdma-lossless` passes, and
/// the same node with PFC moved to priority 4 fails roce.qos naming priority 3 (and
/// roce.lossless names the same cause), as a ConnectX would.
#[test]
fn an_adapter_without_receive_buffers_is_judged_by_pfc_alone() {
    let root = super::compare::scratch("e810-pfc-on-4");
    super::accept::copy_dir(&fixtures_dir().join("roce-e810-irdma-lossless"), &root);
    let dcb = root.join("dcb/ens801f0.json");
    let text = std::fs::read_to_string(&dcb)
        .unwrap()
        .replace("[false,false,false,true,false,false,false,false]", "[false,false,false,false,true,false,false,false]");
    std::fs::write(&dcb, text).unwrap();
    let out = fabcheck(&["check", "--json", "--sysfs-root", root.to_str().unwrap(), "--expect", "link_layer=ethernet"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let qos = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "roce.qos").expect("a roce.qos finding");
    assert_eq!(qos["severity"], "error");
    let message = str_of(qos, "message");
    assert!(message.contains("priority 3") && message.contains("PFC is on 4"), "{message}");
    let lossless = doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "roce.lossless").unwrap();
    assert_eq!(lossless["status"], "fail", "{lossless}");
    assert!(str_of(lossless, "observed").starts_with("see roce.qos"), "{lossless}");
}

/// Broadcom's bnxt_re puts RoCE on the APP table's RoCE v2 entry (`dgram-port-prio 4791:P`):
/// with no DSCP entry (bnxt_setupcc.sh's priority-VLAN mode) the port trusts PCP and RoCE still
/// rides P, tagged by the driver, so the node passes; with PFC moved off P it fails, naming the
/// entry and how to move it.
#[test]
fn bnxt_re_rides_the_app_tables_roce_entry() {
    let fixture = |edit: &dyn Fn(String) -> String, tag: &str| {
        let root = super::compare::scratch(tag);
        super::accept::copy_dir(&fixtures_dir().join("roce-bnxt-lossless"), &root);
        let dcb = root.join("dcb/ens3f0np0.json");
        std::fs::write(&dcb, edit(std::fs::read_to_string(&dcb).unwrap())).unwrap();
        fabcheck(&["check", "--json", "--sysfs-root", root.to_str().unwrap(), "--expect", "link_layer=ethernet"])
    };
    let pcp = fixture(&|t| t.replace("\"dscp_prio\":[[26,3]]", "\"dscp_prio\":[]"), "bnxt-pcp");
    assert_eq!(pcp.status.code(), Some(0), "{}", String::from_utf8_lossy(&pcp.stdout));
    let doc = json(&pcp);
    let qos = doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "roce.qos").unwrap();
    assert!(str_of(qos, "observed").contains("priority 3 (the APP table's RoCE entry") && str_of(qos, "observed").contains("trust pcp"), "{qos}");
    let moved = fixture(
        &|t| t.replace("[false,false,false,true,false,false,false,false]", "[false,false,false,false,true,false,false,false]"),
        "bnxt-pfc-on-4",
    );
    assert_eq!(moved.status.code(), Some(1));
    let doc = json(&moved);
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "roce.qos").unwrap();
    assert_eq!(f["severity"], "error");
    assert!(str_of(f, "message").contains("the APP table's RoCE entry") && str_of(f, "message").contains("PFC is on 4"), "{f}");
    assert!(str_of(f, "remedy").contains("dgram-port-prio 4791:4"), "{f}");
}

#[test]
fn human_output_puts_failures_first() {
    let dir = fixtures_dir().join("ib-init-no-sm");
    let out = fabcheck(&["check", "--sysfs-root", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("FAIL"), "{text}");
    assert!(text.contains("what to do:"));
    let dev = fabcheck(&["devices", "--sysfs-root", fixtures_dir().join("hdr-ib-healthy").to_str().unwrap()]);
    let text = String::from_utf8_lossy(&dev.stdout);
    assert!(text.contains("ConnectX-6") && text.contains("ACTIVE / LINK_UP") && text.contains("4X HDR"), "{text}");
}

/// One device of a text capture (`ibv_devinfo -v` or `ibstat`): its header fields and, per
/// port, the port's fields and GIDs (index, address, type as printed).
#[derive(Debug, Default)]
struct CapturedDevice {
    fields: BTreeMap<String, String>,
    ports: BTreeMap<u64, CapturedPort>,
}

#[derive(Debug, Default)]
struct CapturedPort {
    fields: BTreeMap<String, String>,
    gids: Vec<(u64, Ipv6Addr, Option<String>)>,
}

/// `ibv_devinfo -v`: `hca_id:` opens a device, `port:` a port, `GID[ i]:` lines are its GIDs.
fn parse_ibv_devinfo(text: &str) -> BTreeMap<String, CapturedDevice> {
    let mut devices: BTreeMap<String, CapturedDevice> = BTreeMap::new();
    let (mut dev, mut port): (Option<String>, Option<u64>) = (None, None);
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "hca_id" {
            dev = Some(value.to_string());
            port = None;
            devices.entry(value.to_string()).or_default();
            continue;
        }
        let d = devices.get_mut(dev.as_ref().expect("a field before hca_id")).unwrap();
        if key == "port" {
            port = Some(value.parse().unwrap());
            d.ports.entry(port.unwrap()).or_default();
        } else if let Some(index) = key.strip_prefix("GID[").and_then(|k| k.strip_suffix(']')) {
            let (addr, kind) = value.split_once(',').map_or((value, None), |(a, k)| (a.trim(), Some(k.trim().to_string())));
            let p = d.ports.get_mut(&port.expect("a GID before port")).unwrap();
            p.gids.push((index.trim().parse().unwrap(), addr.parse().unwrap_or_else(|e| panic!("GID {addr}: {e}")), kind));
        } else if let Some(p) = port {
            d.ports.get_mut(&p).unwrap().fields.insert(key.into(), value.into());
        } else {
            d.fields.insert(key.into(), value.into());
        }
    }
    devices
}

/// `ibstat`: `CA 'name'` opens a device, `Port N:` a port, then `Key: value` lines.
fn parse_ibstat(text: &str) -> BTreeMap<String, CapturedDevice> {
    let mut devices: BTreeMap<String, CapturedDevice> = BTreeMap::new();
    let (mut dev, mut port): (Option<String>, Option<u64>) = (None, None);
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix("CA '").and_then(|n| n.strip_suffix('\'')) {
            dev = Some(name.to_string());
            port = None;
            devices.entry(name.to_string()).or_default();
            continue;
        }
        let d = devices.get_mut(dev.as_ref().expect("a field before CA")).unwrap();
        if let Some(n) = trimmed.strip_prefix("Port ").and_then(|n| n.strip_suffix(':')) {
            port = Some(n.parse().unwrap());
            d.ports.entry(port.unwrap()).or_default();
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim().to_string(), value.trim().to_string());
        match port {
            Some(p) => d.ports.get_mut(&p).unwrap().fields.insert(key, value),
            None => d.fields.insert(key, value),
        };
    }
    devices
}

/// "PORT_ACTIVE (4)" -> 4 (the code in parentheses).
fn code(text: &str) -> u64 {
    text.rsplit_once('(').and_then(|(_, c)| c.trim_end_matches(')').parse().ok()).unwrap_or_else(|| panic!("no (code) in {text}"))
}

/// "4096 (5)" -> 4096, "0x02c9" -> 713, "26" -> 26.
fn leading_number(text: &str) -> u64 {
    let first = text.split_whitespace().next().unwrap_or_else(|| panic!("empty number"));
    match first.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
        None => first.parse().unwrap_or_else(|e| panic!("{text}: {e}")),
    }
}

/// "0xb8cef603009a44e2" (ibstat) -> "b8ce:f603:009a:44e2" (ibv_devinfo, the contract).
fn guid_text(hex: &str) -> String {
    let digits = hex.strip_prefix("0x").unwrap_or_else(|| panic!("guid {hex}"));
    assert_eq!(digits.len(), 16, "{hex}");
    digits.as_bytes().chunks(4).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(":")
}

/// Every fixture's `devices --json` against the fixture's own `ibv_devinfo.txt` and `ibstat.txt`:
/// each field the three express in common must agree.
#[test]
fn devices_json_agrees_with_the_captured_ibv_devinfo_and_ibstat() {
    const STATES: [&str; 6] = ["NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"];
    const PHYS: [&str; 8] = ["", "SLEEP", "POLLING", "DISABLED", "TRAINING", "LINK_UP", "ERROR_RECOVERY", "PHY_TEST"];
    // ibstat's words for the same states.
    let ibstat_state = |s: &str| match s {
        "DOWN" => "Down",
        "INIT" => "Initializing",
        "ARMED" => "Armed",
        "ACTIVE" => "Active",
        other => panic!("state {other}"),
    };
    let ibstat_phys = |s: &str| match s {
        "POLLING" => "Polling",
        "DISABLED" => "Disabled",
        "LINK_UP" => "LinkUp",
        "SLEEP" => "Sleep",
        other => panic!("phys_state {other}"),
    };
    // ibv_devinfo's active_width / active_speed codes (IBV_WIDTH_*, IBV_SPEED_*).
    let width_name = |c: u64| match c {
        1 => "1X",
        2 => "4X",
        4 => "8X",
        8 => "12X",
        16 => "2X",
        other => panic!("width code {other}"),
    };
    let speed_name = |c: u64| match c {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        8 => "FDR10",
        16 => "FDR",
        32 => "EDR",
        64 => "HDR",
        128 => "NDR",
        256 => "XDR",
        other => panic!("speed code {other}"),
    };
    let mut compared = 0;
    for (name, dir, _) in cases() {
        let out = fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let doc = json(&out);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"));
        let devinfo = parse_ibv_devinfo(&read("ibv_devinfo.txt"));
        let ibstat = parse_ibstat(&read("ibstat.txt"));
        let devices = doc["devices"].as_array().unwrap();
        let names: Vec<&str> = devices.iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(names, devinfo.keys().map(String::as_str).collect::<Vec<_>>(), "{name}: devices vs ibv_devinfo");
        // ibstat lists the devices libibumad finds, those with a MAD agent: a port of neither
        // link layer (AWS EFA) has none, so ibstat does not know it.
        let has_mads = |d: &&Value| d["ports"].as_array().unwrap().iter().any(|p| p["link_layer"] != "Unspecified");
        let with_mads: Vec<&str> = devices.iter().filter(has_mads).map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(with_mads, ibstat.keys().map(String::as_str).collect::<Vec<_>>(), "{name}: devices vs ibstat");
        for dev in devices {
            let dn = dev["name"].as_str().unwrap();
            let di = &devinfo[dn];
            let Some(st) = ibstat.get(dn) else {
                compare_without_ibstat(&format!("{name} {dn}"), dev, di);
                compared += dev["ports"].as_array().unwrap().len();
                continue;
            };
            let at = format!("{name} {dn}");
            let s = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{at}: not a string: {v}")).to_string();
            assert_eq!(s(&dev["node_guid"]), di.fields["node_guid"], "{at}: node_guid");
            assert_eq!(s(&dev["sys_image_guid"]), di.fields["sys_image_guid"], "{at}: sys_image_guid");
            assert_eq!(s(&dev["node_guid"]), guid_text(&st.fields["Node GUID"]), "{at}: ibstat Node GUID");
            assert_eq!(s(&dev["sys_image_guid"]), guid_text(&st.fields["System image GUID"]), "{at}: ibstat System image GUID");
            assert_eq!(dev["vendor_id"].as_u64(), Some(leading_number(&di.fields["vendor_id"])), "{at}: vendor_id");
            assert_eq!(dev["vendor_part_id"].as_u64(), Some(leading_number(&di.fields["vendor_part_id"])), "{at}: vendor_part_id");
            // sysfs's fw_ver is what ibstat prints; rxe's sysfs file is empty where verbs says 0.0.0.
            assert_eq!(s(&dev["fw_ver"]), st.fields["Firmware version"], "{at}: fw vs ibstat");
            if !st.fields["Firmware version"].is_empty() {
                assert_eq!(s(&dev["fw_ver"]), di.fields["fw_ver"], "{at}: fw vs ibv_devinfo");
            }
            if let Some(hca) = dev.get("hca_type") {
                assert_eq!(s(hca), st.fields["CA type"], "{at}: hca_type vs ibstat CA type");
            }
            let ports = dev["ports"].as_array().unwrap();
            assert_eq!(ports.len() as u64, leading_number(&di.fields["phys_port_cnt"]), "{at}: phys_port_cnt");
            assert_eq!(ports.len() as u64, leading_number(&st.fields["Number of ports"]), "{at}: ibstat ports");
            for port in ports {
                let pn = port["port"].as_u64().unwrap();
                let at = format!("{at}/{pn}");
                let (dp, sp) = (&di.ports[&pn], &st.ports[&pn]);
                let (df, sf) = (&dp.fields, &sp.fields);
                assert_eq!(port["state"], STATES[code(&df["state"]) as usize], "{at}: state vs {}", df["state"]);
                assert_eq!(port["phys_state"], PHYS[code(&df["phys_state"]) as usize], "{at}: phys_state vs {}", df["phys_state"]);
                assert_eq!(sf["State"], ibstat_state(&s(&port["state"])), "{at}: ibstat State");
                assert_eq!(sf["Physical state"], ibstat_phys(&s(&port["phys_state"])), "{at}: ibstat Physical state");
                assert_eq!(s(&port["link_layer"]), df["link_layer"], "{at}: link_layer");
                assert_eq!(s(&port["link_layer"]), sf["Link layer"], "{at}: ibstat Link layer");
                assert_eq!(port["lid"].as_u64(), Some(leading_number(&df["port_lid"])), "{at}: lid");
                assert_eq!(port["lid"].as_u64(), Some(leading_number(&sf["Base lid"])), "{at}: ibstat Base lid");
                assert_eq!(port["sm_lid"].as_u64(), Some(leading_number(&df["sm_lid"])), "{at}: sm_lid");
                assert_eq!(port["sm_lid"].as_u64(), Some(leading_number(&sf["SM lid"])), "{at}: ibstat SM lid");
                assert_eq!(port["lmc"].as_u64(), Some(leading_number(&df["port_lmc"])), "{at}: lmc");
                assert_eq!(port["lmc"].as_u64(), Some(leading_number(&sf["LMC"])), "{at}: ibstat LMC");
                assert_eq!(s(&port["width"]), width_name(code(&df["active_width"])), "{at}: width vs {}", df["active_width"]);
                assert_eq!(s(&port["speed"]), speed_name(code(&df["active_speed"])), "{at}: speed vs {}", df["active_speed"]);
                assert_eq!(port["nominal_gbps"].as_f64(), Some(leading_number(&sf["Rate"]) as f64), "{at}: nominal vs ibstat Rate {}", sf["Rate"]);
                // MTUs where sysfs holds them: RoCE's active MTU (from the netdev MTU), never IB's.
                for field in ["active_mtu", "max_mtu"] {
                    if !port[field].is_null() {
                        assert_eq!(port[field].as_u64(), Some(leading_number(&df[field])), "{at}: {field}");
                    }
                }
                if port["link_layer"] == "Ethernet" {
                    assert!(!port["active_mtu"].is_null(), "{at}: a RoCE port's active MTU comes from its netdev");
                }
                // The GID table: the same entries, the same addresses, the same types.
                let mut want: Vec<(u64, Ipv6Addr, String)> =
                    dp.gids.iter().map(|(i, a, k)| (*i, *a, k.clone().unwrap_or_else(|| "IB".into()))).collect();
                let mut got: Vec<(u64, Ipv6Addr, String)> = port["gids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|g| (g["index"].as_u64().unwrap(), s(&g["gid"]).parse().unwrap(), s(&g["type"])))
                    .collect();
                want.sort();
                got.sort();
                assert!(!want.is_empty(), "{at}: the capture lists no GID");
                assert_eq!(got, want, "{at}: GIDs vs ibv_devinfo");
                // ibstat's Port GUID is the interface id of GID 0.
                let gid0 = got.iter().find(|g| g.0 == 0).unwrap_or_else(|| panic!("{at}: no GID 0")).1.octets();
                let port_guid = u64::from_str_radix(sf["Port GUID"].trim_start_matches("0x"), 16).unwrap();
                assert_eq!(u64::from_be_bytes(gid0[8..].try_into().unwrap()), port_guid, "{at}: GID 0 vs ibstat Port GUID");
                compared += 1;
            }
        }
    }
    assert!(compared >= 15, "only {compared} ports compared");
}

/// A device ibstat cannot list (no MAD agent: AWS EFA), against `ibv_devinfo -v` alone: ids,
/// states, link layer (rdma-core's "Unspecified"), addresses, rate and GIDs.
fn compare_without_ibstat(at: &str, dev: &Value, di: &CapturedDevice) {
    let s = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{at}: not a string: {v}")).to_string();
    assert_eq!(s(&dev["node_guid"]), di.fields["node_guid"], "{at}: node_guid");
    assert_eq!(dev["vendor_id"].as_u64(), Some(leading_number(&di.fields["vendor_id"])), "{at}: vendor_id");
    assert_eq!(dev["vendor_part_id"].as_u64(), Some(leading_number(&di.fields["vendor_part_id"])), "{at}: vendor_part_id");
    let ports = dev["ports"].as_array().unwrap();
    assert_eq!(ports.len() as u64, leading_number(&di.fields["phys_port_cnt"]), "{at}: phys_port_cnt");
    for port in ports {
        let pn = port["port"].as_u64().unwrap();
        let (dp, at) = (&di.ports[&pn], format!("{at}/{pn}"));
        let df = &dp.fields;
        assert_eq!(port["state"], "ACTIVE", "{at}");
        assert_eq!(code(&df["state"]), 4, "{at}: ibv_devinfo state {}", df["state"]);
        assert_eq!(s(&port["link_layer"]), df["link_layer"], "{at}: link_layer");
        assert_eq!(port["lid"].as_u64(), Some(leading_number(&df["port_lid"])), "{at}: lid");
        assert_eq!(port["sm_lid"].as_u64(), Some(leading_number(&df["sm_lid"])), "{at}: sm_lid");
        assert_eq!(port["lmc"].as_u64(), Some(leading_number(&df["port_lmc"])), "{at}: lmc");
        let got: Vec<(u64, Ipv6Addr, String)> =
            port["gids"].as_array().unwrap().iter().map(|g| (g["index"].as_u64().unwrap(), s(&g["gid"]).parse().unwrap(), s(&g["type"]))).collect();
        let want: Vec<(u64, Ipv6Addr, String)> = dp.gids.iter().map(|(i, a, k)| (*i, *a, k.clone().unwrap_or_else(|| "IB".into()))).collect();
        assert!(!want.is_empty(), "{at}: the capture lists no GID");
        assert_eq!(got, want, "{at}: GIDs vs ibv_devinfo");
    }
}

#[test]
fn capacity_is_what_the_link_carries() {
    // Issue 13: a RoCE port's data rate is its Ethernet speed, not 8b/10b of the IB-style name
    // mlx5 gives it; a cable pulled on RoCE is named as such; a PCIe-bound adapter is named.
    let dev = |fixture: &str| json(&fabcheck(&["devices", "--json", "--sysfs-root", fixtures_dir().join(fixture).to_str().unwrap()]));
    let port = dev("roce-40gbe-as-4x-qdr")["devices"][0]["ports"][0].clone();
    assert_eq!((port["width"].as_str(), port["speed"].as_str()), (Some("4X"), Some("QDR")));
    assert_eq!(port["rate_gbps"].as_f64(), Some(40.0), "40GbE carries 40, not 4X QDR's 32: {port:#}");
    assert_eq!(port["rate_source"], "netdev");
    let port = dev("roce-trained-low")["devices"][0]["ports"][0].clone();
    assert_eq!((port["rate_gbps"].as_f64(), port["supported_gbps"].as_f64()), (Some(200.0), Some(400.0)));
    let port = dev("hdr-ib-healthy")["devices"][0]["ports"][0].clone();
    assert_eq!((port["rate_gbps"].as_f64(), port["rate_source"].as_str()), (Some(200.0), Some("link")));
    let pci = dev("ndr-ib-pcie-gen4")["devices"][0]["pci"].clone();
    assert_eq!(pci["usable_gbps"].as_f64().map(|g| g.round()), Some(230.0), "{pci:#}");
    let doc = json(&fabcheck(&["check", "--json", "--sysfs-root", fixtures_dir().join("roce-no-carrier").to_str().unwrap()]));
    let state = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "port.state").unwrap().clone();
    let message = state["message"].as_str().unwrap();
    assert!(message.contains("no carrier") && message.contains("cable or the link is down"), "{message}");
    assert!(!message.contains("subnet manager"), "{message}");
}

/// Each RoCE QoS trap (issue #42) is named with the priority RoCE rides and the command that
/// fixes it; nothing else on the node is blamed. The healthy ConnectX-7 fails when told RoCE
/// uses DSCP 46 (EF), which its table puts on priority 5, where PFC is off.
#[test]
fn roce_qos_names_the_roce_priority_in_each_trap() {
    let cases: [(&str, &[&str], &str, &str); 5] = [
        ("roce-qos-pcp-untagged", &[], "it rides priority 0, which has no PFC (PFC is on 3)", "mlnx_qos -i ens2np0 --trust dscp"),
        (
            "roce-qos-pfc-on-4",
            &[],
            "DSCP 26 (rdma_cm's default_roce_tos 106) maps to priority 3, which has no PFC (PFC is on 4)",
            "dcb pfc set dev ens2np0 prio-pfc 3:on",
        ),
        ("roce-qos-dscp-remapped", &[], "is mapped by hand to priority 0 (the default is 3, DSCP >> 3)", "mlnx_qos -i ens2np0 --dscp2prio set,26,3"),
        ("roce-qos-pause-storm", &[], "PFC pause storm on ens2np0", "pfc_stall_prevention"),
        ("roce-qos-healthy-cx7", &["--expect", "roce_dscp=46"], "DSCP 46 maps to priority 5, which has no PFC (PFC is on 3)", "prio-pfc 5:on"),
    ];
    for (fixture, extra, message, remedy) in cases {
        let dir = fixtures_dir().join(fixture);
        let mut args = vec!["check", "--json", "--sysfs-root", dir.to_str().unwrap()];
        args.extend(extra);
        let out = fabcheck(&args);
        let doc = json(&out);
        let findings = doc["findings"].as_array().unwrap();
        let qos = findings.iter().find(|f| f["id"] == "roce.qos").unwrap_or_else(|| panic!("{fixture}: no roce.qos: {findings:?}"));
        assert!(qos["message"].as_str().unwrap().contains(message), "{fixture}: {}", qos["message"]);
        assert!(qos["remedy"].as_str().unwrap().contains(remedy), "{fixture}: {}", qos["remedy"]);
        // Nothing else is blamed: every other finding is an info (the firmware table not saved).
        for f in findings.iter().filter(|f| f["id"] != "roce.qos" && f["id"] != "roce.lossless") {
            assert_eq!(f["severity"], "info", "{fixture}: {f}");
        }
        // `--format prom` carries the row as any check's: failed (0) where it errs.
        if fixture == "roce-qos-pfc-on-4" {
            let mut prom = vec!["check", "--format", "prom", "--sysfs-root", dir.to_str().unwrap()];
            prom.extend(extra);
            let page = String::from_utf8_lossy(&fabcheck(&prom).stdout).into_owned();
            assert!(page.contains("fabcheck_check_pass{id=\"roce.qos\",subject=\"mlx5_0/1\"} 0"), "{page}");
        }
        if !extra.is_empty() {
            assert_eq!(out.status.code(), Some(1), "{fixture} {extra:?}");
            let row = doc["checks"].as_array().unwrap().iter().find(|c| c["id"] == "roce.lossless").unwrap();
            // One fault, one error (issue #51): the row fails naming roce.qos's cause, with no finding of its own.
            assert_eq!(row["status"].as_str(), Some("fail"), "{row}");
            assert!(row["observed"].as_str().unwrap().starts_with("see roce.qos: PFC on priorities 3: DSCP 46 maps to priority 5"), "{row}");
            assert!(findings.iter().all(|f| f["id"] != "roce.lossless"), "{findings:?}");
        }
    }
}

#[test]
fn a_switch_uplink_at_x4_fails_naming_both_ends_of_that_link() {
    // HGX: root port 0000:4c:01.0 <-> switch upstream port 0000:4d:00.0 at x4 (issue #51); the
    // NIC's and GPU's own links are x16, so 0.4 passed every check. The switch's inside (upstream
    // to downstream ports) is not a link and is not judged.
    let dir = fixtures_dir().join("pcie-switch-uplink-x4");
    let out = fabcheck(&["check", "--json", "--sysfs-root", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let errors: Vec<&Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == "error").collect();
    assert_eq!(errors.len(), 1, "one fault, one error: {errors:?}");
    let f = errors[0];
    assert_eq!((f["id"].as_str(), f["subject"].as_str()), (Some("pci.link"), Some("0000:4c:01.0 <-> 0000:4d:00.0")));
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("trained at x4 32.0 GT/s, below the x16 32.0 GT/s") && message.contains("mlx5_"), "{message}");
    // The healthy tree it came from adds no row for its (healthy) switch links.
    let healthy = fabcheck(&["check", "--json", "--sysfs-root", fixtures_dir().join("gpu-hgx-healthy").to_str().unwrap()]);
    assert!(json(&healthy)["checks"].as_array().unwrap().iter().all(|c| !c["subject"].as_str().unwrap_or("").contains("<->")));
}
