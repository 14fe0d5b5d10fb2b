//! GPU node readiness (`gpu.peermem`, `pcie.acs`, `gpu.affinity`, `pcie.link`) through
//! `check --sysfs-root`: the synthesized tests/fixtures/gpu-* trees, each with its exact
//! findings, and a tree of another shape built here at test time.

use super::{fabcheck, fixtures_dir, json};
use serde_json::Value;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// (id, severity, subject) of every finding, sorted.
fn findings(doc: &Value) -> Vec<(String, String, String)> {
    let mut all: Vec<_> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_str().unwrap().to_string(), f["severity"].as_str().unwrap().to_string(), f["subject"].as_str().unwrap().to_string()))
        .collect();
    all.sort();
    all
}

fn expect(list: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    let mut all: Vec<_> = list.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
    all.sort();
    all
}

fn message(doc: &Value, id: &str, subject: &str) -> String {
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == id && f["subject"] == subject);
    let f = f.unwrap_or_else(|| panic!("no {id} finding on {subject}: {}", doc["findings"]));
    format!("{} | {}", f["message"].as_str().unwrap(), f["remedy"].as_str().unwrap())
}

fn check_fixture(name: &str) -> (Output, Value) {
    let dir = fixtures_dir().join(name);
    assert!(dir.join("bus/pci/devices").is_dir(), "{name}: fixture missing; run tests/fixtures/gpu/make-fixtures.py");
    let out = fabcheck(&["check", "--json", "--sysfs-root", dir.to_str().unwrap()]);
    let doc = json(&out);
    (out, doc)
}

fn gpu_checks<'a>(doc: &'a Value, id: &str) -> Vec<&'a Value> {
    doc["checks"].as_array().unwrap().iter().filter(|c| c["id"] == id).collect()
}

#[test]
fn hgx_healthy_pix_layout_raises_nothing() {
    let (out, doc) = check_fixture("gpu-hgx-healthy");
    assert_eq!(findings(&doc), expect(&[]), "{}", doc["findings"]);
    assert_eq!(out.status.code(), Some(0));
    let affinity = gpu_checks(&doc, "gpu.affinity");
    assert_eq!(affinity.len(), 8, "one affinity check per GPU");
    for c in affinity {
        assert!(c["observed"].as_str().unwrap().contains(" PIX"), "{c}");
    }
    assert_eq!(gpu_checks(&doc, "pcie.link").len(), 8);
    assert_eq!(gpu_checks(&doc, "gpu.peermem")[0]["observed"], "nvidia_peermem loaded");
    // ACS is on at every root port and spare switch slot: no GPU<->NIC path crosses them.
    assert_eq!(gpu_checks(&doc, "pcie.acs")[0]["status"], "pass");
}

#[test]
fn hgx_acs_on_names_every_redirecting_switch_port() {
    let (out, doc) = check_fixture("gpu-hgx-acs-on");
    let mut want = Vec::new();
    let ports: Vec<String> = [0x17, 0x3f, 0x4e, 0x5d, 0x99, 0xbf, 0xcd, 0xdb]
        .iter()
        .flat_map(|bus| [format!("0000:{bus:02x}:00.0"), format!("0000:{bus:02x}:03.0")])
        .collect();
    for p in &ports {
        want.push(("pcie.acs", "error", p.as_str()));
    }
    assert_eq!(findings(&doc), expect(&want));
    assert_eq!(out.status.code(), Some(1));
    let text = message(&doc, "pcie.acs", "0000:17:03.0");
    for needle in
        ["GPU 0000:1b:00.0", "mlx5_0 (0000:18:00.0, PIX)", "root complex", "pci=disable_acs_redir=0000:17:03.0", "setpci -s 0000:17:03.0", "BIOS"]
    {
        assert!(text.contains(needle), "missing '{needle}' in: {text}");
    }
}

#[test]
fn hgx_without_peermem_is_an_error() {
    let (out, doc) = check_fixture("gpu-hgx-no-peermem");
    assert_eq!(findings(&doc), expect(&[("gpu.peermem", "error", "node")]));
    assert_eq!(out.status.code(), Some(1));
    let text = message(&doc, "gpu.peermem", "node");
    assert!(text.contains("modprobe nvidia-peermem") && text.contains("/etc/modules-load.d/"), "{text}");
    // Four NICs for eight GPUs: the GPUs without a NIC on their switch use one of the same socket.
    let relations: Vec<&str> = gpu_checks(&doc, "gpu.affinity").iter().map(|c| c["observed"].as_str().unwrap()).collect();
    assert_eq!(relations.iter().filter(|o| o.contains(" PIX")).count(), 4, "{relations:?}");
    assert_eq!(relations.iter().filter(|o| o.contains(" NODE")).count(), 4, "{relations:?}");
}

#[test]
fn hgx_dmabuf_with_the_open_module_is_info() {
    let (out, doc) = check_fixture("gpu-hgx-dmabuf");
    assert_eq!(findings(&doc), expect(&[("gpu.ibgda", "info", "node"), ("gpu.peermem", "info", "node")]));
    assert_eq!(out.status.code(), Some(0));
    assert!(message(&doc, "gpu.peermem", "node").contains("dma-buf"));
}

/// `gpu.ibgda` (issue #55): the healthy HGX's driver has PeerMappingOverride=1 and
/// EnableStreamMemOPs=1 (pass, nothing said); the dma-buf one runs the driver's defaults: info,
/// an error with `--expect ibgda=on`, naming both settings and the modprobe line.
#[test]
fn ibgda_settings_pass_and_their_absence_fails_only_when_expected() {
    let (_, doc) = check_fixture("gpu-hgx-healthy");
    let ibgda = gpu_checks(&doc, "gpu.ibgda");
    assert_eq!(ibgda.len(), 1, "{}", doc["checks"]);
    assert_eq!(ibgda[0]["status"], "pass", "{}", ibgda[0]);
    assert!(ibgda[0]["observed"].as_str().unwrap().contains("PeerMappingOverride=1"), "{}", ibgda[0]);
    let dir = fixtures_dir().join("gpu-hgx-dmabuf");
    let out = fabcheck(&["check", "--json", "--sysfs-root", dir.to_str().unwrap(), "--expect", "ibgda=on"]);
    let doc = json(&out);
    assert_eq!(findings(&doc), expect(&[("gpu.ibgda", "error", "node"), ("gpu.peermem", "info", "node")]));
    assert_eq!(out.status.code(), Some(1));
    let text = message(&doc, "gpu.ibgda", "node");
    for needle in ["doorbells", "EnableStreamMemOPs", "NVreg_RegistryDwords=\"PeerMappingOverride=1;\""] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

#[test]
fn hgx_nic_on_the_other_socket_is_named_per_gpu() {
    let (out, doc) = check_fixture("gpu-hgx-nic-other-socket");
    let want: Vec<(&str, &str, &str)> =
        ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0"].iter().map(|g| ("gpu.affinity", "warning", *g)).collect();
    assert_eq!(findings(&doc), expect(&want));
    assert_eq!(out.status.code(), Some(0), "warnings only");
    let text = message(&doc, "gpu.affinity", "0000:1b:00.0");
    assert!(text.contains("mlx5_4 (0000:e4:00.0)") && text.contains("SYS"), "{text}");
}

#[test]
fn consumer_phb_layout() {
    let (out, doc) = check_fixture("gpu-consumer-phb");
    // Narrower than both the card and the slot (0.4): a seating or lane fault, an error.
    assert_eq!(findings(&doc), expect(&[("pcie.link", "error", "0000:02:00.0")]));
    assert_eq!(out.status.code(), Some(1));
    let link = message(&doc, "pcie.link", "0000:02:00.0");
    assert!(link.contains("x8") && link.contains("both the card and the slot"), "{link}");
    for c in gpu_checks(&doc, "gpu.affinity") {
        assert!(c["observed"].as_str().unwrap().contains("mlx5_0 (0000:03:00.0) PHB"), "{c}");
    }
}

#[test]
fn malformed_configs_and_symlink_loops_are_named_not_misread() {
    let (out, doc) = check_fixture("gpu-config-malformed");
    assert_eq!(
        findings(&doc),
        expect(&[
            ("gpu.affinity", "warning", "0000:ff:00.0"),
            ("pcie.acs", "warning", "0000:17:00.0"),
            ("pcie.acs", "warning", "0000:3f:03.0"),
            ("pcie.link", "warning", "0000:52:00.0"),
        ])
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(message(&doc, "gpu.affinity", "0000:ff:00.0").contains("symlink loop"));
    assert!(message(&doc, "pcie.acs", "0000:17:00.0").contains("0000:17:00.0/config: only 40 bytes"));
    assert!(message(&doc, "pcie.acs", "0000:3f:03.0").contains("loops back to 0x100"));
    assert!(message(&doc, "pcie.link", "0000:52:00.0").contains("loops back to 0x40"));
}

#[test]
fn trees_without_a_pci_bus_get_no_gpu_checks() {
    for name in ["hdr-ib-healthy", "roce-healthy-cx7", "rxe-veth"] {
        let doc = json(&fabcheck(&["check", "--json", "--sysfs-root", fixtures_dir().join(name).to_str().unwrap()]));
        for c in doc["checks"].as_array().unwrap() {
            let id = c["id"].as_str().unwrap();
            assert!(!id.starts_with("gpu.") && !id.starts_with("pcie."), "{name}: {c}");
        }
    }
}

// --- A tree of another shape, written at test time ---------------------------------------

/// One PCI function to write: where it hangs, what it is.
struct Pf {
    path: &'static str,
    ids: (u16, u16),
    class: u32,
    /// PCIe Device/Port Type: 0 endpoint, 4 root port, 5 upstream, 6 downstream.
    port_type: u8,
    numa: i32,
    cap: (u8, u8),
    sta: (u8, u8),
    acs: Option<u16>,
}

fn config(pf: &Pf) -> Vec<u8> {
    let mut b = vec![0u8; 4096];
    b[0..2].copy_from_slice(&pf.ids.0.to_le_bytes());
    b[2..4].copy_from_slice(&pf.ids.1.to_le_bytes());
    b[6] = 0x10;
    b[8..12].copy_from_slice(&(pf.class << 8).to_le_bytes());
    b[0x0e] = u8::from(pf.port_type != 0);
    b[0x34] = 0x80; // straight to the PCIe capability, at another offset than the fixtures
    b[0x80] = 0x10;
    b[0x82..0x84].copy_from_slice(&((u16::from(pf.port_type) << 4) | 2).to_le_bytes());
    b[0x8c..0x90].copy_from_slice(&(u32::from(pf.cap.0) | (u32::from(pf.cap.1) << 4)).to_le_bytes());
    b[0x92..0x94].copy_from_slice(&(u16::from(pf.sta.0) | (u16::from(pf.sta.1) << 4)).to_le_bytes());
    // 0x100 AER -> 0x1c0 ACS.
    let next: u32 = if pf.acs.is_some() { 0x1c0 } else { 0 };
    b[0x100..0x104].copy_from_slice(&(1u32 | (2 << 16) | (next << 20)).to_le_bytes());
    if let Some(control) = pf.acs {
        b[0x1c0..0x1c4].copy_from_slice(&(0x000du32 | (1 << 16)).to_le_bytes());
        b[0x1c4..0x1c6].copy_from_slice(&0x007fu16.to_le_bytes());
        b[0x1c6..0x1c8].copy_from_slice(&control.to_le_bytes());
    }
    b
}

fn speed(code: u8) -> &'static str {
    ["", "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe"][usize::from(code)]
}

fn write(path: &Path, data: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

struct TempTree(PathBuf);

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const BRIDGE: u32 = 0x060400;
const SWITCH: (u16, u16) = (0x1000, 0xc010);
const ACS_LINUX: u16 = 0x1d; // SV RR CR UF

/// Domain 0002; a two-level switch chain on socket 0 holding two GPUs and a NIC, ACS on only the
/// NIC's slot of the lower switch; a second NIC one switch up; with `remote_gpu`, a GPU alone on
/// socket 1 (which then takes the second NIC, across the sockets).
fn other_shape(tag: &str, remote_gpu: bool) -> TempTree {
    let root = std::env::temp_dir().join(format!("fabcheck-gpu-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let tree = TempTree(root.clone());
    let fns = other_shape_functions(remote_gpu);
    for pf in &fns {
        let dir = root.join("devices").join(pf.path);
        write(&dir.join("vendor"), format!("0x{:04x}\n", pf.ids.0));
        write(&dir.join("device"), format!("0x{:04x}\n", pf.ids.1));
        write(&dir.join("class"), format!("0x{:06x}\n", pf.class));
        write(&dir.join("numa_node"), format!("{}\n", pf.numa));
        write(&dir.join("max_link_speed"), format!("{}\n", speed(pf.cap.0)));
        write(&dir.join("max_link_width"), format!("{}\n", pf.cap.1));
        write(&dir.join("current_link_speed"), format!("{}\n", speed(pf.sta.0)));
        write(&dir.join("current_link_width"), format!("{}\n", pf.sta.1));
        write(&dir.join("config"), config(pf));
        let bdf = pf.path.rsplit('/').next().unwrap();
        std::fs::create_dir_all(root.join("bus/pci/devices")).unwrap();
        symlink(Path::new("../../../devices").join(pf.path), root.join("bus/pci/devices").join(bdf)).unwrap();
    }
    for (name, bdf_path) in [
        ("mlx5_0", "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:02.0/0002:47:00.0"),
        ("mlx5_1", "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:09.0/0002:48:00.0"),
    ] {
        let dev = root.join("class/infiniband").join(name);
        write(&dev.join("fw_ver"), "20.39.1002\n");
        write(&dev.join("node_guid"), "b8ce:f603:00a1:0001\n");
        write(&dev.join("ports/1/state"), "4: ACTIVE\n");
        write(&dev.join("ports/1/phys_state"), "5: LinkUp\n");
        write(&dev.join("ports/1/rate"), "200 Gb/sec (4X HDR)\n");
        write(&dev.join("ports/1/link_layer"), "InfiniBand\n");
        write(&dev.join("ports/1/lid"), "0x12\n");
        write(&dev.join("ports/1/sm_lid"), "0x1\n");
        symlink(Path::new("../../../devices").join(bdf_path), dev.join("device")).unwrap();
    }
    for m in ["ib_core", "ib_uverbs", "rdma_ucm", "mlx5_core", "mlx5_ib", "nvidia"] {
        std::fs::create_dir_all(root.join("module").join(m)).unwrap();
    }
    write(&root.join("module/nvidia/taint"), "POE\n");
    tree
}

/// The PCI functions of [`other_shape`].
fn other_shape_functions(remote_gpu: bool) -> Vec<Pf> {
    let gen4 = (4, 16);
    let mut fns = vec![
        Pf {
            path: "pci0002:40/0002:40:03.0",
            ids: (0x8086, 0x347a),
            class: BRIDGE,
            port_type: 4,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: Some(ACS_LINUX),
        },
        Pf { path: "pci0002:40/0002:40:03.0/0002:41:00.0", ids: SWITCH, class: BRIDGE, port_type: 5, numa: 0, cap: gen4, sta: gen4, acs: None },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0",
            ids: SWITCH,
            class: BRIDGE,
            port_type: 6,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: Some(0),
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:09.0",
            ids: SWITCH,
            class: BRIDGE,
            port_type: 6,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: Some(ACS_LINUX),
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:09.0/0002:48:00.0",
            ids: (0x15b3, 0x101b),
            class: 0x020700,
            port_type: 0,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: None,
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0",
            ids: SWITCH,
            class: BRIDGE,
            port_type: 5,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: None,
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:00.0",
            ids: SWITCH,
            class: BRIDGE,
            port_type: 6,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: Some(0),
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:01.0",
            ids: SWITCH,
            class: BRIDGE,
            port_type: 6,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: Some(0),
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:02.0",
            ids: SWITCH,
            class: BRIDGE,
            port_type: 6,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: Some(0x04),
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:00.0/0002:45:00.0",
            ids: (0x10de, 0x20b5),
            class: 0x030200,
            port_type: 0,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: None,
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:01.0/0002:46:00.0",
            ids: (0x10de, 0x20b5),
            class: 0x030200,
            port_type: 0,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: None,
        },
        Pf {
            path: "pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:02.0/0002:47:00.0",
            ids: (0x15b3, 0x101b),
            class: 0x020700,
            port_type: 0,
            numa: 0,
            cap: gen4,
            sta: gen4,
            acs: None,
        },
    ];
    let remote = [
        Pf {
            path: "pci0002:c0/0002:c0:01.0",
            ids: (0x8086, 0x347a),
            class: BRIDGE,
            port_type: 4,
            numa: 1,
            cap: gen4,
            sta: gen4,
            acs: Some(ACS_LINUX),
        },
        Pf {
            path: "pci0002:c0/0002:c0:01.0/0002:c1:00.0",
            ids: (0x10de, 0x20b5),
            class: 0x030200,
            port_type: 0,
            numa: 1,
            cap: gen4,
            sta: (4, 8),
            acs: None,
        },
    ];
    if remote_gpu {
        fns.extend(remote);
    }
    fns
}

/// Runs fabcheck with a deadline: a FIFO in the tree must not make it hang.
fn fabcheck_bounded(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("fabcheck hung on {args:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn unseen_shape_names_blocking_bridge_missing_module_and_distant_nic() {
    let tree = other_shape("shape", true);
    let out = fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.0.to_str().unwrap()]);
    let doc = json(&out);
    assert_eq!(
        findings(&doc),
        expect(&[
            ("gpu.peermem", "error", "node"),
            ("pcie.acs", "error", "0002:44:02.0"),
            ("gpu.affinity", "warning", "0002:c1:00.0"),
            ("pcie.link", "error", "0002:c1:00.0"),
        ])
    );
    assert_eq!(out.status.code(), Some(1));
    let acs = message(&doc, "pcie.acs", "0002:44:02.0");
    assert!(acs.contains("GPU 0002:45:00.0 <-> mlx5_0 (0002:47:00.0, PIX)") && acs.contains("GPU 0002:46:00.0"), "{acs}");
    assert!(message(&doc, "gpu.affinity", "0002:c1:00.0").contains("mlx5_1 (0002:48:00.0), SYS"));
    assert!(message(&doc, "gpu.peermem", "node").contains("modprobe nvidia-peermem"));
}

#[test]
fn two_gpus_on_one_nic_while_a_near_nic_idles() {
    let tree = other_shape("sharing", false);
    let doc = json(&fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.0.to_str().unwrap()]));
    assert_eq!(
        findings(&doc),
        expect(&[("gpu.peermem", "error", "node"), ("pcie.acs", "error", "0002:44:02.0"), ("gpu.affinity", "warning", "0002:45:00.0,0002:46:00.0"),])
    );
    assert!(message(&doc, "gpu.affinity", "0002:45:00.0,0002:46:00.0").contains("mlx5_1 (0002:48:00.0) serves no GPU and is PXB"));
}

#[test]
fn fifo_and_unreadable_files_are_named_without_hanging() {
    let tree = other_shape("fifo", true);
    let ds = tree.0.join("devices/pci0002:40/0002:40:03.0/0002:41:00.0/0002:42:08.0/0002:43:00.0/0002:44:01.0");
    std::fs::remove_file(ds.join("config")).unwrap();
    let made = Command::new("mkfifo").arg(ds.join("config")).status().unwrap();
    assert!(made.success());
    let gpu = tree.0.join("devices/pci0002:c0/0002:c0:01.0/0002:c1:00.0");
    let width = gpu.join("current_link_width");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&width, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads a mode-000 file anyway; only an ordinary user sees EACCES.
    let unreadable = std::fs::read(&width).is_err();

    let out = fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.0.to_str().unwrap()]);
    let doc = json(&out);
    let acs = message(&doc, "pcie.acs", "0002:44:01.0");
    assert!(acs.contains("0002:44:01.0/config: not a regular file (a FIFO)"), "{acs}");
    assert!(findings(&doc).contains(&("pcie.acs".into(), "error".into(), "0002:44:02.0".into())), "the blocking bridge is still named");
    if unreadable {
        let link = message(&doc, "pcie.link", "0002:c1:00.0");
        assert!(doc["findings"].to_string().contains("current_link_width: permission denied"), "{link}");
    }
}

#[test]
fn check_json_lists_each_gpu_and_its_nic() {
    let (_, doc) = check_fixture("gpu-hgx-no-peermem");
    let gpus = doc["gpus"].as_array().expect("gpus array on a GPU node");
    assert_eq!(gpus.len(), 8);
    // Four NICs for eight GPUs: each serves two, its own switch's GPU first.
    let mut per_nic = std::collections::BTreeMap::new();
    for g in gpus {
        *per_nic.entry(g["nic"]["name"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    assert!(per_nic.values().all(|n| *n == 2), "{per_nic:?}");
    assert_eq!(gpus[0]["gpu"], "0000:1b:00.0");
    assert_eq!(gpus[0]["nic"]["relation"], "PIX");
    let plain = json(&fabcheck(&["check", "--json", "--sysfs-root", fixtures_dir().join("hdr-ib-healthy").to_str().unwrap()]));
    assert!(plain.get("gpus").is_none(), "no gpus key without GPUs");
}

#[test]
fn devices_shows_the_affinity_table_only_with_gpus() {
    let dir = fixtures_dir().join("gpu-hgx-nic-other-socket");
    let text = String::from_utf8(fabcheck(&["devices", "--sysfs-root", dir.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("GPU affinity"), "{text}");
    let row = text.lines().find(|l| l.trim_start().starts_with("0000:1b:00.0")).unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("mlx5_4 (0000:e4:00.0)") && row.contains("SYS"), "{row}");
    let row = text.lines().find(|l| l.trim_start().starts_with("0000:9d:00.0")).unwrap();
    assert!(row.contains("PIX"), "{row}");
    let plain = String::from_utf8(fabcheck(&["devices", "--sysfs-root", fixtures_dir().join("hdr-ib-healthy").to_str().unwrap()]).stdout).unwrap();
    assert!(!plain.contains("GPU affinity"));
}

#[test]
fn a_bundle_with_module_gets_the_stack_module_check() {
    let tree = other_shape("modules", false);
    std::fs::remove_dir_all(tree.0.join("module/mlx5_ib")).unwrap();
    let doc = json(&fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.0.to_str().unwrap()]));
    assert!(findings(&doc).contains(&("stack.modules".into(), "error".into(), "node".into())), "{}", doc["findings"]);
    assert!(message(&doc, "stack.modules", "node").contains("mlx5_ib"));
}

#[test]
fn a_non_root_read_of_64_bytes_is_reported_once_not_misread() {
    let tree = other_shape("partial", false);
    let listing = tree.0.join("bus/pci/devices");
    for entry in std::fs::read_dir(&listing).unwrap() {
        let config = entry.unwrap().path().join("config");
        let bytes = std::fs::read(&config).unwrap();
        std::fs::write(&config, &bytes[..64]).unwrap();
    }
    let doc = json(&fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.0.to_str().unwrap()]));
    let bridges = "0002:43:00.0,0002:44:00.0,0002:44:01.0,0002:44:02.0";
    assert_eq!(
        findings(&doc),
        expect(&[("gpu.peermem", "error", "node"), ("pcie.acs", "warning", bridges), ("gpu.affinity", "warning", "0002:45:00.0,0002:46:00.0"),])
    );
    let text = message(&doc, "pcie.acs", bridges);
    assert!(text.contains("only 64 bytes") && text.contains("as root"), "{text}");
    // Port types unreadable: the relation still comes out right from the depth of each bridge.
    assert!(gpu_checks(&doc, "gpu.affinity").iter().all(|c| c["observed"].as_str().unwrap().contains(" PIX")));
}

#[test]
fn nics_copied_as_plain_folders_are_found_by_class() {
    // Older captures copy class/infiniband/<dev>/device as a folder: no link to the function.
    let tree = other_shape("plain", true);
    for name in ["mlx5_0", "mlx5_1"] {
        let device = tree.0.join("class/infiniband").join(name).join("device");
        std::fs::remove_file(&device).unwrap();
        write(&device.join("vendor"), "0x15b3\n");
    }
    let doc = json(&fabcheck_bounded(&["check", "--json", "--sysfs-root", tree.0.to_str().unwrap()]));
    assert!(findings(&doc).contains(&("pcie.acs".into(), "error".into(), "0002:44:02.0".into())), "{}", doc["findings"]);
    assert!(message(&doc, "pcie.acs", "0002:44:02.0").contains("GPU 0002:45:00.0 <-> 0002:47:00.0 (PIX)"));
    assert!(message(&doc, "gpu.affinity", "0002:c1:00.0").contains("nearest RDMA NIC is 0002:48:00.0, SYS"));
}
