//! Rail order on the HGX fixtures and on a DGX H100-like layout built from them.

use super::*;
use crate::probe::tree::SysfsRoot;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The rails of `spec` on the tree at `root`, as `device:port`.
fn rails(root: &Path, spec: &RailSpec) -> Vec<String> {
    let ports = candidates(&SysfsRoot::at(root).inventory());
    let tree = crate::probe::pci::read(root);
    resolve(spec, &ports, tree.as_ref(), None).unwrap().iter().map(|r| format!("{}:{}", r.device, r.port)).collect()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|d| format!("{d}:1")).collect()
}

/// Copies a tree, symlinks as symlinks (the fixtures' relative links stay inside the copy).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Copies the files (not the folders) of one PCI function's folder: a new function of the
/// same kind.
fn copy_function(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `gpu-hgx-healthy` with its 8 compute NICs renamed (`compute[k]` is the name of the NIC on
/// GPU k's switch) and, when `storage` is set, a dual-port storage card on its own root port
/// of each socket (`mlx5_1`/`mlx5_2` on socket 0, `mlx5_7`/`mlx5_8` on socket 1): named
/// between the compute NICs, as on DGX H100.
fn renamed(tag: &str, compute: [&str; 8], storage: bool) -> Scratch {
    let root = std::env::temp_dir().join(format!("fabcheck-rails-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    copy_tree(&fixture("gpu-hgx-healthy"), &root);
    let ib = root.join("class/infiniband");
    let staged = root.join("staged");
    fs::rename(&ib, &staged).unwrap();
    fs::create_dir_all(&ib).unwrap();
    for (k, name) in compute.iter().enumerate() {
        fs::rename(staged.join(format!("mlx5_{k}")), ib.join(name)).unwrap();
    }
    if storage {
        let nic = "devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0";
        for (bridge, port, bus, devs) in
            [("pci0000:15", "0000:15:02.0", "0000:1a:00", ["mlx5_1", "mlx5_2"]), ("pci0000:97", "0000:97:02.0", "0000:9b:00", ["mlx5_7", "mlx5_8"])]
        {
            let rp = format!("devices/{bridge}/{port}");
            copy_function(&root.join("devices/pci0000:15/0000:15:01.0"), &root.join(&rp));
            symlink(format!("../../../{rp}"), root.join("bus/pci/devices").join(port)).unwrap();
            for (f, dev) in devs.iter().enumerate() {
                let func = format!("{rp}/{bus}.{f}");
                copy_function(&root.join(nic), &root.join(&func));
                symlink(format!("../../../{func}"), root.join("bus/pci/devices").join(format!("{bus}.{f}"))).unwrap();
                copy_tree(&ib.join(compute[0]), &ib.join(dev));
                fs::remove_file(ib.join(dev).join("device")).unwrap();
                symlink(format!("../../../{func}"), ib.join(dev).join("device")).unwrap();
            }
        }
    }
    fs::remove_dir_all(&staged).unwrap();
    Scratch(root)
}

#[test]
fn hgx_auto_is_gpu_order() {
    let root = fixture("gpu-hgx-healthy");
    let want = names(&["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]);
    assert_eq!(rails(&root, &RailSpec::Auto), want);
    let ports = candidates(&SysfsRoot::at(&root).inventory());
    let tree = crate::probe::pci::read(&root).unwrap();
    let got = resolve(&RailSpec::Auto, &ports, Some(&tree), None).unwrap();
    // Each rail names the GPU it serves, in ascending GPU PCI order.
    let gpus: Vec<&str> = got.iter().map(|r| r.gpu.as_deref().expect("a GPU per rail")).collect();
    let mut sorted = gpus.clone();
    sorted.sort();
    assert_eq!(gpus, sorted);
    assert!(got.iter().all(|r| r.active));
    assert_eq!(rails(&root, &RailSpec::Count(3)), want[..3]);
    assert_eq!(resolve(&RailSpec::Count(9), &ports, Some(&tree), None), Err(RailError::TooFew { asked: 9, have: 8 }));
}

#[test]
fn gpu_order_not_name_order() {
    // GPU k's NIC is named mlx5_(7-k): the rails follow the GPUs, so rail 0 is mlx5_7.
    let scratch = renamed("reversed", ["mlx5_7", "mlx5_6", "mlx5_5", "mlx5_4", "mlx5_3", "mlx5_2", "mlx5_1", "mlx5_0"], false);
    assert_eq!(rails(&scratch.0, &RailSpec::Auto), names(&["mlx5_7", "mlx5_6", "mlx5_5", "mlx5_4", "mlx5_3", "mlx5_2", "mlx5_1", "mlx5_0"]));
    // `all` is PCI address order: the same NICs, here the same order (one NIC per switch).
    assert_eq!(rails(&scratch.0, &RailSpec::All), rails(&scratch.0, &RailSpec::Auto));
}

#[test]
fn dgx_h100_storage_nics_between_compute_nics() {
    let compute = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"];
    let scratch = renamed("dgx", compute, true);
    // auto: the 8 compute NICs, one per GPU, in GPU order; the storage NICs are no GPU's.
    assert_eq!(rails(&scratch.0, &RailSpec::Auto), names(&compute));
    assert_eq!(rails(&scratch.0, &RailSpec::Count(2)), names(&["mlx5_0", "mlx5_3"]), "not mlx5_0, mlx5_1");
    // all: every port, by PCI address (the storage card 1a:00 after the compute NIC 18:00).
    let all = rails(&scratch.0, &RailSpec::All);
    assert_eq!(all.len(), 12);
    assert_eq!(all[..3], names(&["mlx5_0", "mlx5_1", "mlx5_2"]));
    // A list is taken as written.
    let list = RailSpec::parse("mlx5_9,mlx5_0:1").unwrap();
    assert_eq!(rails(&scratch.0, &list), names(&["mlx5_9", "mlx5_0"]));
    let ports = candidates(&SysfsRoot::at(&scratch.0).inventory());
    let bad = RailSpec::parse("mlx5_12").unwrap();
    assert_eq!(resolve(&bad, &ports, None, None), Err(RailError::Unknown("mlx5_12".into())));
}

#[test]
fn a_nic_on_the_other_socket_is_no_gpus_rail() {
    // 4 NICs on socket 1 and one in a socket-1 slot: the socket-0 GPUs have no PIX/PXB NIC.
    let root = fixture("gpu-hgx-nic-other-socket");
    let auto = rails(&root, &RailSpec::Auto);
    let all = rails(&root, &RailSpec::All);
    assert!(!auto.is_empty() && auto.len() < all.len(), "auto {auto:?} all {all:?}");
}

fn port(device: &str, port: u32, layer: LinkLayer, active: bool, bdf: Option<&str>) -> Candidate {
    Candidate { device: device.into(), port, link_layer: layer, active, bdf: bdf.map(str::to_string), virtual_function: false }
}

#[test]
fn without_gpus_pci_address_then_natural_name() {
    use LinkLayer::{Ethernet, InfiniBand};
    // rxe has no PCI device: after every PCI NIC, rxe2 before rxe10.
    let ports = vec![
        port("rxe10", 1, Ethernet, true, None),
        port("rxe2", 1, Ethernet, true, None),
        port("mlx5_1", 1, Ethernet, true, Some("0000:3b:00.1")),
        port("mlx5_0", 1, Ethernet, false, Some("0000:3b:00.0")),
        port("mlx5_9", 1, InfiniBand, true, Some("0000:01:00.0")),
    ];
    let got = resolve(&RailSpec::Auto, &ports, None, None).unwrap();
    let order: Vec<&str> = got.iter().map(|r| r.device.as_str()).collect();
    assert_eq!(order, ["mlx5_0", "mlx5_1", "rxe2", "rxe10"], "Ethernet has the most ACTIVE ports");
    // A port that is not ACTIVE keeps its rail number.
    assert_eq!((got[0].rail, got[0].active), (0, false));
    assert_eq!(got[3].rail, 3);
    let ib = resolve(&RailSpec::All, &ports, None, Some(InfiniBand)).unwrap();
    assert_eq!(ib.len(), 1);
    assert_eq!(resolve(&RailSpec::Auto, &[], None, None), Err(RailError::NoPorts(None)));
    assert!(matches!(resolve(&RailSpec::All, &ports[..1], None, Some(InfiniBand)), Err(RailError::NoPorts(Some(_)))));
    // A device named without its port: its port of the layer in use.
    let dual = vec![port("mlx5_0", 1, InfiniBand, true, None), port("mlx5_0", 2, Ethernet, true, None), port("mlx5_1", 1, Ethernet, true, None)];
    let got = resolve(&RailSpec::parse("mlx5_0").unwrap(), &dual, None, None).unwrap();
    assert_eq!(got[0].port, 2);
}

#[test]
fn nics_behind_one_switch_share_its_uplink() {
    use crate::probe::pci::{ConfigRead, Function, Nic, SysfsLink};
    let function = |bdf: &str, chain: &[&str], speed: &str, width: u32| Function {
        bdf: bdf.into(),
        host_bridge: "pci0000:00".into(),
        chain: chain.iter().map(|s| s.to_string()).collect(),
        vendor: Some(0x15b3),
        device: None,
        class: Some(0x020700),
        numa_node: Some(0),
        link: SysfsLink { current_speed: Some(speed.into()), current_width: Some(width), max_speed: None, max_width: None },
        config: ConfigRead::Missing,
        config_file: String::new(),
    };
    // Root port 00:01.0 -> switch (upstream 01:00.0, Gen4 x16) -> downstream 02:00.0 and
    // 02:01.0 -> NICs 03:00.0 and 04:00.0; a third NIC on its own root port.
    let g5 = "32.0 GT/s PCIe";
    let functions = [
        function("0000:00:01.0", &[], g5, 16),
        function("0000:01:00.0", &["0000:00:01.0"], "16.0 GT/s PCIe", 16),
        function("0000:02:00.0", &["0000:00:01.0", "0000:01:00.0"], g5, 16),
        function("0000:02:01.0", &["0000:00:01.0", "0000:01:00.0"], g5, 16),
        function("0000:03:00.0", &["0000:00:01.0", "0000:01:00.0", "0000:02:00.0"], g5, 16),
        function("0000:04:00.0", &["0000:00:01.0", "0000:01:00.0", "0000:02:01.0"], g5, 16),
        function("0000:05:00.0", &["0000:00:02.0"], g5, 16),
    ];
    let tree = PciTree {
        functions: functions.into_iter().map(|f| (f.bdf.clone(), f)).collect(),
        nics: ["0000:03:00.0", "0000:04:00.0", "0000:05:00.0"]
            .iter()
            .enumerate()
            .map(|(i, b)| Nic { name: format!("mlx5_{i}"), bdf: b.to_string() })
            .collect(),
        ..PciTree::default()
    };
    let rails: Vec<Rail> = tree
        .nics
        .iter()
        .enumerate()
        .map(|(rail, n)| Rail { rail, device: n.name.clone(), port: 1, active: true, bdf: Some(n.bdf.clone()), gpu: None })
        .collect();
    let shared = shared_uplinks(&tree, &rails);
    assert_eq!(shared.len(), 1, "{shared:?}");
    assert_eq!(shared[0].uplink, "0000:01:00.0");
    assert_eq!(shared[0].rails, [0, 1]);
    // Gen4 x16: about 230 Gb/s usable (256-byte payloads), less than two 400G NICs.
    assert!((220.0..240.0).contains(&shared[0].gbps), "{}", shared[0].gbps);
    // HGX: one NIC per switch.
    let root = fixture("gpu-hgx-healthy");
    let ports = candidates(&SysfsRoot::at(&root).inventory());
    let hgx = crate::probe::pci::read(&root).unwrap();
    let rails = resolve(&RailSpec::Auto, &ports, Some(&hgx), None).unwrap();
    assert!(shared_uplinks(&hgx, &rails).is_empty());
}

/// SR-IOV: a node's virtual functions are no rails beside their physical functions (one link
/// each), but a pod that holds only VFs has them as its rails; a list may still name a VF.
#[test]
fn virtual_functions_are_rails_only_where_they_are_all_there_is() {
    let vf = |device: &str, bdf: &str| Candidate { virtual_function: true, ..port(device, 1, LinkLayer::Ethernet, true, Some(bdf)) };
    let node = [
        port("mlx5_0", 1, LinkLayer::Ethernet, true, Some("0000:17:00.0")),
        vf("mlx5_2", "0000:17:00.2"),
        port("mlx5_1", 1, LinkLayer::Ethernet, true, Some("0000:31:00.0")),
        vf("mlx5_3", "0000:17:00.3"),
    ];
    let names = |rails: Vec<Rail>| rails.into_iter().map(|r| r.device).collect::<Vec<_>>();
    assert_eq!(names(resolve(&RailSpec::All, &node, None, None).unwrap()), ["mlx5_0", "mlx5_1"]);
    assert_eq!(names(resolve(&RailSpec::Auto, &node, None, None).unwrap()), ["mlx5_0", "mlx5_1"]);
    let list = RailSpec::parse("mlx5_2").unwrap();
    assert_eq!(names(resolve(&list, &node, None, None).unwrap()), ["mlx5_2"]);
    let pod = [vf("mlx5_2", "0000:17:00.2"), vf("mlx5_3", "0000:17:00.3")];
    assert_eq!(names(resolve(&RailSpec::All, &pod, None, None).unwrap()), ["mlx5_2", "mlx5_3"]);
}
