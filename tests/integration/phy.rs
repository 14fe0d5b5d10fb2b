//! The physical layer (issue #30) through the CLI: `devices --json` shows `phy` per port, and
//! `check` names the port and the lane of FEC errors, of a lane with most errors and of a dark
//! optical lane; a bundle's reports are hostile input like every other file.

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;

fn devices(fixture: &str) -> Value {
    json(&fabcheck(&["devices", "--json", "--sysfs-root", fixtures_dir().join(fixture).to_str().unwrap()]))
}

fn check(dir: &std::path::Path) -> Value {
    json(&fabcheck(&["check", "--json", "--sysfs-root", dir.to_str().unwrap()]))
}

fn finding<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no {id}: {}", doc["findings"]))
}

#[test]
fn devices_json_shows_fec_mode_and_module_identity() {
    let doc = devices("roce-cx7-phy-clean");
    let phy = &doc["devices"][0]["ports"][0]["phy"];
    assert_eq!(phy["fec"], "RS-544", "RS at 100G a lane is RS(544,514): {phy:#}");
    let module = &phy["module"];
    assert_eq!((module["type"].as_str(), module["vendor"].as_str(), module["part"].as_str()), (Some("OSFP"), Some("NVIDIA"), Some("MMA4Z00-NS400")));
    assert_eq!(module["temperature_c"].as_f64(), Some(41.5));
    assert_eq!(module["rx_power_dbm"].as_array().map(Vec::len), Some(8));
    // mlx5 counts no received bits: the BER is not readable, said as null, not as 0.
    assert_eq!((phy["ber_raw"].clone(), phy["ber_effective"].clone()), (Value::Null, Value::Null));
    assert_eq!(phy["symbol_errors"].as_u64(), Some(0));
    // bnxt_en counts them: a raw BER.
    let phy = devices("roce-bnxt-clean")["devices"][0]["ports"][0]["phy"].clone();
    assert_eq!(phy["ber_raw"].as_f64(), Some(1e-11), "{phy:#}");
    assert_eq!(phy["fec"], "RS-528");
    // A DAC: copper, no optical figures.
    let module = devices("roce-cx6dx-dac")["devices"][0]["ports"][0]["phy"]["module"].clone();
    assert_eq!((module["media"].as_str(), module["rx_power_dbm"].clone()), (Some("copper"), Value::Null));
    // An InfiniBand port of a bundle: nothing read, `phy` null.
    assert_eq!(devices("hdr-ib-healthy")["devices"][0]["ports"][0]["phy"], Value::Null);
}

#[test]
fn fec_errors_the_busiest_lane_and_a_dark_lane_are_named_with_port_and_lane() {
    let doc = check(&fixtures_dir().join("roce-cx6dx-fec-lane"));
    let fec = finding(&doc, "phy.fec");
    assert_eq!((fec["subject"].as_str(), fec["severity"].as_str()), (Some("mlx5_0/1"), Some("warning")));
    assert!(fec["message"].as_str().unwrap().contains("12 FEC codewords") && fec["message"].as_str().unwrap().contains("lifetime"), "{fec}");
    let ber = finding(&doc, "phy.ber");
    assert!(ber["message"].as_str().unwrap().contains("lane 2 carries 90%"), "{ber}");
    assert!(ber["remedy"].as_str().unwrap().contains("lane 2"), "{ber}");
    let doc = check(&fixtures_dir().join("roce-cx7-dark-lane"));
    let module = finding(&doc, "phy.module");
    assert_eq!((module["subject"].as_str(), module["severity"].as_str()), (Some("mlx5_0/1"), Some("error")));
    let message = module["message"].as_str().unwrap();
    assert!(message.contains("lane 3") && message.contains("no light") && message.contains("low alarm"), "{message}");
    assert!(!message.contains("lane 5"), "CMIS lanes 5-8 of a 4-lane module are unused, not dark: {message}");
}

/// A copy of a fixture to spoil.
fn copy_of(fixture: &str, tag: &str) -> std::path::PathBuf {
    let to = std::env::temp_dir().join(format!("fabcheck-phy-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    let status = std::process::Command::new("cp").arg("-a").arg(fixtures_dir().join(fixture)).arg(&to).status().unwrap();
    assert!(status.success());
    to
}

#[test]
fn hostile_or_missing_reports_are_not_readable_never_a_false_alarm() {
    let dir = copy_of("roce-cx7-phy-clean", "hostile");
    let e = dir.join("ethtool");
    // Over the cap, binary, and gone: each is "not readable".
    std::fs::write(e.join("ens2np0.stats.txt"), "x".repeat(2 << 20)).unwrap();
    std::fs::write(e.join("ens2np0.module.hex.txt"), [0xffu8, 0xfe, 0x00, 0x11]).unwrap();
    std::fs::remove_file(e.join("ens2np0.fec.txt")).unwrap();
    std::fs::write(e.join("ens2np0.module.txt"), "\tIdentifier : 0x19 (OSFP 8X Pluggable Transceiver)\n\tRx power (Channel 1) : N/A\n").unwrap();
    let out = fabcheck(&["check", "--json", "--sysfs-root", dir.to_str().unwrap()]);
    let doc = json(&out);
    std::fs::remove_dir_all(&dir).ok();
    // The oversized and the binary file are said as unreadable files of the bundle (the
    // house's sysfs.unreadable rule), and nothing about the physical layer is made up.
    let unreadable: Vec<&str> =
        doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "sysfs.unreadable").map(|f| f["message"].as_str().unwrap()).collect();
    assert!(
        unreadable.iter().any(|m| m.contains("ens2np0.stats.txt")) && unreadable.iter().any(|m| m.contains("ens2np0.module.hex.txt")),
        "{unreadable:?}"
    );
    assert_eq!(out.status.code(), Some(1), "{}", doc["findings"]);
    let checks = doc["checks"].as_array().unwrap();
    let status = |id: &str| checks.iter().find(|c| c["id"] == id).map(|c| c["status"].as_str().unwrap().to_string());
    assert_eq!(status("phy.fec").as_deref(), Some("skip"));
    assert_eq!(status("phy.ber").as_deref(), Some("skip"));
    assert_eq!(status("phy.module").as_deref(), Some("pass"), "a module that says nothing raises nothing");
    assert!(doc["findings"].as_array().unwrap().iter().all(|f| !f["id"].as_str().unwrap().starts_with("phy.")), "{}", doc["findings"]);
}

#[test]
fn soak_on_a_bundle_is_exit_2_naming_why() {
    let dir = fixtures_dir().join("roce-cx7-phy-clean");
    let out = fabcheck(&["check", "--soak", "10s", "--sysfs-root", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--soak") && stderr.contains("bundle"), "{stderr}");
    let out = fabcheck(&["check", "--soak", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a duration"));
}
