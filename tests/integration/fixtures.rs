//! Every captured node under tests/fixtures/ must produce its expected inventory, findings
//! and exit code through `--sysfs-root`, exactly as a support bundle would be diagnosed.

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;

fn cases() -> Vec<(String, std::path::PathBuf, Value)> {
    let mut cases: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("case.json").exists())
        .map(|e| {
            let case: Value =
                serde_json::from_str(&std::fs::read_to_string(e.path().join("case.json")).unwrap())
                    .unwrap();
            (e.file_name().to_string_lossy().into_owned(), e.path(), case)
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    // A fixture directory that silently vanished would make every test below pass vacuously.
    assert!(
        cases.len() >= 12,
        "expected at least 12 fixture trees, found {}",
        cases.len()
    );
    cases
}

#[test]
fn check_findings_and_exit_codes() {
    for (name, dir, case) in cases() {
        let mut args = vec![
            "check".to_string(),
            "--json".into(),
            "--sysfs-root".into(),
            dir.display().to_string(),
        ];
        args.extend(
            case["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string()),
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fabcheck(&refs);
        let doc = json(&out);
        assert_eq!(doc["schema"], "fabcheck.check.v1", "{name}");
        let want_exit = case["expect_exit"].as_i64().unwrap() as i32;
        assert_eq!(
            out.status.code(),
            Some(want_exit),
            "{name}: exit code; findings: {}",
            doc["findings"]
        );
        assert_eq!(
            doc["verdict"],
            if want_exit == 0 { "pass" } else { "fail" },
            "{name}"
        );
        let found: Vec<(&str, &str)> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["id"].as_str().unwrap(), f["severity"].as_str().unwrap()))
            .collect();
        for id in case["expect_findings"].as_array().unwrap() {
            let id = id.as_str().unwrap();
            assert!(
                found
                    .iter()
                    .any(|(f, sev)| *f == id && (*sev == "error" || *sev == "warning")),
                "{name}: expected finding {id}, got {found:?}"
            );
        }
        if want_exit == 0 {
            assert!(
                !found.iter().any(|(_, s)| *s == "error"),
                "{name}: unexpected errors {found:?}"
            );
        }
        for f in doc["findings"].as_array().unwrap() {
            assert!(
                !f["remedy"].as_str().unwrap().is_empty(),
                "{name}: finding without a remedy: {f}"
            );
        }
    }
}

#[test]
fn devices_inventory_matches_the_capture() {
    for (name, dir, case) in cases() {
        let out = fabcheck(&["devices", "--json", "--sysfs-root", dir.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(&out);
        assert_eq!(doc["schema"], "fabcheck.devices.v1");
        let devices = doc["devices"].as_array().unwrap();
        for (dev_name, ports) in case["expect_devices"].as_object().unwrap() {
            let dev = devices
                .iter()
                .find(|d| d["name"] == dev_name.as_str())
                .unwrap_or_else(|| panic!("{name}: no {dev_name}"));
            for (port_num, want) in ports.as_object().unwrap() {
                let port = dev["ports"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["port"].as_u64() == port_num.parse().ok())
                    .unwrap_or_else(|| panic!("{name}: {dev_name} has no port {port_num}"));
                for (field, value) in want.as_object().unwrap() {
                    assert_eq!(
                        &port[field], value,
                        "{name} {dev_name}/{port_num} field {field}"
                    );
                }
            }
            // GIDs: only set entries, RFC 5952 text, typed.
            for p in dev["ports"].as_array().unwrap() {
                for g in p["gids"].as_array().unwrap() {
                    let text = g["gid"].as_str().unwrap();
                    assert!(
                        text.parse::<std::net::Ipv6Addr>().is_ok() && text != "::",
                        "{name}: bad gid {text}"
                    );
                    assert!(
                        ["IB", "RoCE v1", "RoCE v2"].contains(&g["type"].as_str().unwrap()),
                        "{name}: {g}"
                    );
                }
            }
        }
    }
}

#[test]
fn infiniband_ports_from_sysfs_have_no_active_mtu() {
    let dir = fixtures_dir().join("hdr-ib-healthy");
    let doc = json(&fabcheck(&[
        "devices",
        "--json",
        "--sysfs-root",
        dir.to_str().unwrap(),
    ]));
    let port = &doc["devices"][0]["ports"][0];
    assert_eq!(
        port["active_mtu"],
        Value::Null,
        "sysfs does not hold an IB port's active MTU"
    );
    assert_eq!(port["link_layer"], "InfiniBand");
    assert_eq!(doc["devices"][0]["ca_type"], "ConnectX-6");
}

#[test]
fn remedies_name_the_fix() {
    let cases = [
        ("ib-init-no-sm", vec![], "port.state", "OpenSM"),
        (
            "cx-ib-mode-want-eth",
            vec!["--expect", "link_layer=ethernet"],
            "port.link_layer",
            "LINK_TYPE_P1=2",
        ),
        (
            "cx-ib-mode-want-eth",
            vec!["--expect", "link_layer=ethernet"],
            "port.link_layer",
            "cold reboot",
        ),
        ("roce-link-local-only", vec![], "roce.gid", "ip addr add"),
        (
            "roce-mtu-mismatch",
            vec!["--expect", "mtu=4096"],
            "roce.mtu",
            "mtu 9000",
        ),
        ("ib-down-polling", vec![], "port.state", "cable"),
    ];
    for (fixture, extra, id, needle) in cases {
        let dir = fixtures_dir().join(fixture);
        let mut args = vec!["check", "--json", "--sysfs-root", dir.to_str().unwrap()];
        args.extend(extra);
        let doc = json(&fabcheck(&args));
        let finding = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("{fixture}: no {id}"));
        assert!(
            finding["remedy"].as_str().unwrap().contains(needle),
            "{fixture}: {id} remedy lacks '{needle}': {}",
            finding["remedy"]
        );
    }
}

#[test]
fn device_and_port_scope() {
    let dir = fixtures_dir().join("roce-mtu-mismatch");
    let root = dir.to_str().unwrap();
    // Only mlx5_0 (mtu 9000) examined: passes.
    let out = fabcheck(&[
        "check",
        "--json",
        "--sysfs-root",
        root,
        "--device",
        "mlx5_0:1",
        "--expect",
        "mtu=4096",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = fabcheck(&["check", "--sysfs-root", root, "--device", "mlx5_9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mlx5_0, mlx5_1"));
    let out = fabcheck(&["check", "--sysfs-root", root, "--device", "mlx5_0:7"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn human_output_puts_failures_first() {
    let dir = fixtures_dir().join("ib-init-no-sm");
    let out = fabcheck(&["check", "--sysfs-root", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("FAIL"), "{text}");
    assert!(text.contains("what to do:"));
    let dev = fabcheck(&[
        "devices",
        "--sysfs-root",
        fixtures_dir().join("hdr-ib-healthy").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&dev.stdout);
    assert!(
        text.contains("ConnectX-6") && text.contains("ACTIVE / LINK_UP") && text.contains("4X HDR"),
        "{text}"
    );
}
