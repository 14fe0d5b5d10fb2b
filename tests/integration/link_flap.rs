//! `link.flap` from the kernel log (issue #55): `check --since` over a bundle's
//! tools/dmesg.txt (tests/fixtures/roce-cx7-link-flaps), the window and `--expect flaps=N`.
//! fixtures.rs judges the fixture at the defaults (24 h, flaps=0).

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;

fn flap(args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let dir = fixtures_dir().join("roce-cx7-link-flaps");
    let mut all = vec!["check", "--json", "--sysfs-root", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = fabcheck(&all);
    let doc = json(&out);
    let rows = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "link.flap").cloned().collect();
    (out.status.code(), rows)
}

/// The window ends at the log's last line (07:30): 2 h holds the 05:51 flap only.
#[test]
fn since_bounds_the_window_and_names_each_time() {
    let (code, rows) = flap(&["--since", "2h"]);
    assert_eq!(code, Some(1));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let message = rows[0]["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("1 link down in the kernel log's last 2 h (2 events in all): 2026-12-04T05:51:18Z link down, 2026-12-04T05:51:24Z link up"),
        "{message}"
    );
    assert_eq!(rows[0]["subject"], "mlx5_0/1");
    // Ten minutes before the last line: nothing of the RDMA port.
    let (code, rows) = flap(&["--since", "10m"]);
    assert!(rows.is_empty(), "{rows:?}");
    assert_eq!(code, Some(0));
}

#[test]
fn expected_flaps_are_said_not_failed() {
    let (code, rows) = flap(&["--expect", "flaps=3"]);
    assert_eq!(code, Some(0));
    assert_eq!(rows[0]["severity"], "info", "{rows:?}");
    let (code, rows) = flap(&["--expect", "flaps=2"]);
    assert_eq!((code, rows[0]["severity"].as_str()), (Some(1), Some("error")));
}
