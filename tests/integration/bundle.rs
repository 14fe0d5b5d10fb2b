//! `fabcheck bundle DIR` (issue #45): a capture of a fake sysfs tree (`--from-root`, for tests)
//! with a FIFO, a huge file and a symlink loop planted in it is bounded, says what it left out,
//! and reads back as the source does; the host a bundle names is the host its documents name;
//! a DIR that holds anything, or is a link, is refused.

use super::{fabcheck, fixtures_dir};
use serde_json::Value;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-bundle-it-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of fixture `name` (its links kept as links).
fn copy_fixture(name: &str, to: &Path) {
    let ok = Command::new("cp").arg("-a").arg(fixtures_dir().join(name)).arg(to).status().unwrap().success();
    assert!(ok, "cp -a {name}");
}

/// `fabcheck ARGS` that must end within 60 s (a capture that opened a FIFO would block for ever).
fn bounded(args: &[&str]) -> Output {
    let out = Command::new("timeout").arg("60").arg(env!("CARGO_BIN_EXE_fabcheck")).args(args).output().unwrap();
    assert_ne!(out.status.code(), Some(124), "fabcheck {args:?} did not end within 60 s");
    out
}

/// A document less what differs between two reads of the same node (when, where from).
fn doc(args: &[&str]) -> Value {
    let out = fabcheck(args);
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    for k in ["time", "host", "source"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("fabcheck-bundle.json")).unwrap()).unwrap()
}

#[test]
fn a_hostile_tree_is_captured_bounded_and_reads_back_as_the_source() {
    let dir = scratch("hostile");
    let src = dir.join("src");
    copy_fixture("pcie-aer-badtlp", &src);
    let port = src.join("class/infiniband/mlx5_0/ports/1");
    std::fs::create_dir_all(port.join("hw_counters")).unwrap();
    // A FIFO where a counter file would be: opening it would block the capture for ever.
    assert!(Command::new("mkfifo").arg(port.join("hw_counters/out_of_buffer")).status().unwrap().success());
    // A file far over the per-file cap.
    std::fs::write(port.join("hw_counters/huge"), vec![b'7'; 3 << 20]).unwrap();
    // A symlink loop in a table folder.
    std::fs::create_dir_all(port.join("counters")).unwrap();
    symlink("loop_b", port.join("counters/loop_a")).unwrap();
    symlink("loop_a", port.join("counters/loop_b")).unwrap();

    let out_dir = dir.join("bundle");
    let out = bounded(&["bundle", out_dir.to_str().unwrap(), "--from-root", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::metadata(&out_dir).unwrap().permissions().mode() & 0o777, 0o700);

    let m = manifest(&out_dir);
    assert_eq!(m["schema"], "fabcheck.bundle.v1");
    assert_eq!(m["fabcheck_version"], env!("CARGO_PKG_VERSION"));
    assert!(m["time"].as_str().unwrap().ends_with('Z'), "{m}");
    assert!(!m["host"].as_str().unwrap().is_empty());
    assert_eq!(m["tools_run"], false);
    let skipped = m["skipped"].as_array().unwrap();
    let why = |tail: &str| {
        let hit = skipped.iter().find(|s| s["path"].as_str().unwrap().ends_with(tail));
        hit.unwrap_or_else(|| panic!("{tail} not in the manifest's skipped: {skipped:?}"))["why"].as_str().unwrap().to_string()
    };
    assert!(why("hw_counters/out_of_buffer").contains("FIFO"));
    assert!(why("hw_counters/huge").contains("larger than 1048576 bytes"));
    assert!(why("counters/loop_a").contains("loop"));
    // The FIFO is not copied; the huge file is cut at the cap; the PCI links are links.
    let bport = out_dir.join("class/infiniband/mlx5_0/ports/1");
    assert!(!bport.join("hw_counters/out_of_buffer").exists());
    assert_eq!(std::fs::metadata(bport.join("hw_counters/huge")).unwrap().len(), 1 << 20);
    assert!(std::fs::symlink_metadata(out_dir.join("bus/pci/devices/0000:3b:00.0")).unwrap().file_type().is_symlink());
    let aer =
        std::fs::read_dir(out_dir.join("bus/pci/devices/0000:3b:00.0")).unwrap().filter_map(|e| e.ok()).any(|e| e.file_name() == "aer_dev_nonfatal");
    assert!(aer, "the AER counters are captured");

    let (s, b) = (src.to_str().unwrap(), out_dir.to_str().unwrap());
    assert_eq!(doc(&["check", "--json", "--sysfs-root", s]), doc(&["check", "--json", "--sysfs-root", b]));
    assert_eq!(doc(&["devices", "--json", "--sysfs-root", s]), doc(&["devices", "--json", "--sysfs-root", b]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_fixture_bundled_reads_back_as_itself() {
    let dir = scratch("fixtures");
    for name in ["rxe-veth", "roce-qos-healthy-cx7", "hdr-ib-mlxlink-ber", "gpu-hgx-healthy", "mstconfig-sriov-pending", "devlink-fw-fatal"] {
        let src = fixtures_dir().join(name);
        let out_dir = dir.join(name);
        let out = bounded(&["bundle", out_dir.to_str().unwrap(), "--from-root", src.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let (s, b) = (src.to_str().unwrap(), out_dir.to_str().unwrap());
        assert_eq!(doc(&["check", "--json", "--sysfs-root", s]), doc(&["check", "--json", "--sysfs-root", b]), "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bundles_host_is_the_host_its_documents_name() {
    let dir = scratch("host");
    let src = dir.join("src");
    copy_fixture("rxe-veth", &src);
    let stamp = r#"{"schema":"fabcheck.bundle.v1","host":"node07.example","time":"2026-12-01T00:00:00Z","fabcheck_version":"0.4.0"}"#;
    std::fs::write(src.join("fabcheck-bundle.json"), stamp).unwrap();
    let root = src.to_str().unwrap();
    for cmd in ["devices", "check"] {
        let out = fabcheck(&[cmd, "--json", "--sysfs-root", root]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["host"], "node07.example", "{cmd}");
    }
    let junit = fabcheck(&["check", "--format", "junit", "--sysfs-root", root]);
    assert!(String::from_utf8_lossy(&junit.stdout).contains("node07.example"), "junit names the bundle's host");
    // A bundle of the bundle keeps the host it was first captured on.
    let again = dir.join("again");
    assert!(fabcheck(&["bundle", again.to_str().unwrap(), "--from-root", root]).status.success());
    assert_eq!(manifest(&again)["host"], "node07.example");
    // A host name that is not one is refused, never printed.
    std::fs::write(src.join("fabcheck-bundle.json"), stamp.replace("node07.example", "evil\\u001b[2J")).unwrap();
    let out = fabcheck(&["check", "--json", "--sysfs-root", root]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}') && !String::from_utf8_lossy(&out.stderr).contains('\u{1b}'));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_dir_that_holds_anything_or_is_a_link_is_refused_and_left_as_it_was() {
    let dir = scratch("refuse");
    let src = fixtures_dir().join("rxe-veth");
    let full = dir.join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("precious"), "keep").unwrap();
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    symlink(&empty, dir.join("link")).unwrap();
    std::fs::write(dir.join("file"), "keep").unwrap();
    for target in ["full", "link", "file"] {
        let out = fabcheck(&["bundle", dir.join(target).to_str().unwrap(), "--from-root", src.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{target}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(std::fs::read_to_string(full.join("precious")).unwrap(), "keep");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "nothing written through the link");
    // No RDMA devices in the source: exit 2, and nothing left behind.
    let none = dir.join("none");
    std::fs::create_dir(&none).unwrap();
    let out = fabcheck(&["bundle", dir.join("out").to_str().unwrap(), "--from-root", none.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.join("out").exists());
    // An empty directory takes the bundle.
    assert!(fabcheck(&["bundle", empty.to_str().unwrap(), "--from-root", src.to_str().unwrap()]).status.success());
    assert!(empty.join("fabcheck-bundle.json").is_file());
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(!names.iter().any(|n| n.starts_with('.')), "no temporary directory left: {names:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn capture_sysfs_sh_is_the_binarys_capture() {
    let dir = scratch("script");
    let out_dir = dir.join("b");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture-sysfs.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(&out_dir)
        .arg(fixtures_dir().join("rxe-veth"))
        .env("FABCHECK", env!("CARGO_BIN_EXE_fabcheck"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(manifest(&out_dir)["schema"], "fabcheck.bundle.v1");
    std::fs::remove_dir_all(&dir).ok();
}

/// An SR-IOV virtual function known only by its `physfn` link (a vendor whose VF part ids
/// fabcheck does not list): the live-shaped tree and its bundle both judge it as a VF beside
/// its physical function, because the capture keeps the link.
#[test]
fn a_virtual_function_s_physfn_link_is_kept_and_read() {
    let dir = scratch("physfn");
    let src = dir.join("src");
    copy_fixture("pcie-aer-badtlp", &src);
    let pf = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";
    let vf = src.join("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.2");
    std::fs::create_dir_all(vf.join("net/ens2v0")).unwrap();
    for (name, value) in [
        ("vendor", "0x14e4"),
        ("device", "0x16dc"),
        ("class", "0x020000"),
        ("numa_node", "0"),
        ("current_link_speed", "Unknown"),
        ("current_link_width", "0"),
        ("max_link_speed", "Unknown"),
        ("max_link_width", "0"),
    ] {
        std::fs::write(vf.join(name), format!("{value}\n")).unwrap();
    }
    std::fs::write(vf.join("net/ens2v0/dev_port"), "0\n").unwrap();
    symlink("../0000:3b:00.0", vf.join("physfn")).unwrap();
    let ib = src.join("class/infiniband");
    let status = Command::new("cp").arg("-a").arg(ib.join("mlx5_0")).arg(ib.join("bnxt_re1")).status().unwrap();
    assert!(status.success());
    std::fs::remove_file(ib.join("bnxt_re1/device")).unwrap();
    symlink("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.2", ib.join("bnxt_re1/device")).unwrap();
    assert!(src.join(pf).is_dir());

    let out_dir = dir.join("bundle");
    let out = bounded(&["bundle", out_dir.to_str().unwrap(), "--from-root", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kept = std::fs::read_link(out_dir.join("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.2/physfn")).unwrap();
    assert_eq!(kept, Path::new("../0000:3b:00.0"));
    let (s, b) = (src.to_str().unwrap(), out_dir.to_str().unwrap());
    let live = doc(&["check", "--json", "--sysfs-root", s]);
    let row = live["checks"].as_array().unwrap().iter().find(|c| c["id"] == "port.state" && c["subject"] == "bnxt_re1/1").cloned();
    let row = row.unwrap_or_else(|| panic!("no port.state row for the VF: {}", live["checks"]));
    assert_eq!(row["status"], "skip", "{row}");
    assert!(row["observed"].as_str().unwrap().starts_with("SR-IOV virtual function"), "{row}");
    assert_eq!(live, doc(&["check", "--json", "--sysfs-root", b]));
    std::fs::remove_dir_all(&dir).ok();
}
