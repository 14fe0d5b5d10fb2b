//! GPU choice and registration explanations on the HGX fixture trees (tests/fixtures/gpu-hgx-*).

use super::*;
use crate::probe::pci;
use std::path::Path;

fn tree(name: &str) -> PciTree {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    pci::read(&dir).unwrap_or_else(|| panic!("{name}: fixture has no bus/pci/devices"))
}

/// The eight GPUs of the HGX fixtures as CUDA would number them (PCI order).
fn cuda_list() -> Vec<CudaGpu> {
    ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]
        .iter()
        .enumerate()
        .map(|(i, pci)| CudaGpu { ordinal: i as u16, pci: pci.to_string() })
        .collect()
}

#[test]
fn auto_takes_the_gpu_on_each_nics_switch_without_a_warning() {
    let t = tree("gpu-hgx-healthy");
    let gpus = cuda_list();
    for (nic, ordinal, pci) in
        [("mlx5_0", 0, "0000:1b:00.0"), ("mlx5_3", 3, "0000:61:00.0"), ("mlx5_4", 4, "0000:9d:00.0"), ("mlx5_7", 7, "0000:df:00.0")]
    {
        let p = nearest(Some(&t), nic, &gpus).unwrap();
        assert_eq!((p.ordinal, p.pci.as_str(), p.relation), (ordinal, pci, Some(Relation::Pix)), "{nic}");
        assert_eq!(p.affinity, None, "{nic}");
        assert!(p.pcie_gbps.is_some_and(|g| g > 200.0), "{nic}: the GPU's Gen5 x16 link is read: {:?}", p.pcie_gbps);
        assert_eq!(p.link_fault, None, "{nic}: trained at its design width");
    }
}

#[test]
fn auto_with_no_gpu_near_takes_the_nearest_and_warns() {
    let t = tree("gpu-hgx-nic-other-socket");
    // Only the socket-0 GPUs are visible to CUDA (CUDA_VISIBLE_DEVICES, say); mlx5_4 is on socket 1.
    let socket0: Vec<CudaGpu> = cuda_list().into_iter().take(4).collect();
    let p = nearest(Some(&t), "mlx5_4", &socket0).unwrap();
    assert_eq!(p.relation, Some(Relation::Sys));
    assert_eq!(p.ordinal, 0, "all equally far: the lowest ordinal");
    let warning = p.affinity.expect("a gpu.affinity warning");
    assert!(warning.contains("SYS") && warning.contains("mlx5_4") && warning.contains("0000:1b:00.0"), "{warning}");
    // With every GPU visible, one on mlx5_4's socket is taken instead.
    let p = nearest(Some(&t), "mlx5_4", &cuda_list()).unwrap();
    assert!(p.relation.is_some_and(|r| r < Relation::Sys) && p.ordinal >= 4, "{p:?}");
}

#[test]
fn an_ordinal_is_that_gpu_and_its_distance_is_said() {
    let t = tree("gpu-hgx-healthy");
    let p = by_ordinal(Some(&t), "mlx5_0", &cuda_list(), 5).unwrap();
    assert_eq!(p.pci, "0000:c3:00.0");
    assert_eq!(p.relation, Some(Relation::Sys));
    assert!(p.affinity.is_some());
    let err = by_ordinal(Some(&t), "mlx5_0", &cuda_list(), 8).unwrap_err();
    assert!(matches!(err, ChoiceError::NoSuchOrdinal { ordinal: 8, count: 8, .. }), "{err:?}");
    assert!(err.to_string().contains("cuda:0 0000:1b:00.0, cuda:1 0000:43:00.0"), "what CUDA sees, to pick from: {err}");
    assert_eq!(nearest(Some(&t), "mlx5_0", &[]), Err(ChoiceError::NoGpu));
}

#[test]
fn a_nic_outside_the_pci_tree_gets_gpu_0_with_a_warning() {
    let p = nearest(None, "rxe0", &[CudaGpu { ordinal: 0, pci: "0000:00:00.0".into() }]).unwrap();
    assert_eq!((p.ordinal, p.relation), (0, None));
    assert!(p.affinity.unwrap().contains("rxe0 is not a PCI function"));
}

#[test]
fn a_failed_registration_is_explained_by_the_gpu_findings() {
    let ids = |name: &str, nic: &str, gpu: &str, tried: MemPath| -> Vec<&'static str> {
        explain_registration(Some(&tree(name)), nic, gpu, tried).iter().map(|c| c.id.as_str()).collect()
    };
    assert_eq!(ids("gpu-hgx-no-peermem", "mlx5_0", "0000:1b:00.0", MemPath::Peermem), ["gpu.peermem"]);
    assert_eq!(ids("gpu-hgx-no-peermem", "mlx5_0", "0000:1b:00.0", MemPath::Dmabuf), Vec::<&str>::new(), "dma-buf does not need peermem");
    let acs = explain_registration(Some(&tree("gpu-hgx-acs-on")), "mlx5_0", "0000:1b:00.0", MemPath::Peermem);
    assert_eq!(acs.iter().map(|c| c.id).collect::<Vec<_>>(), [FindingId::PcieAcs]);
    assert!(acs[0].text.contains("0000:17:00.0") && acs[0].text.contains("0000:17:03.0"), "{}", acs[0].text);
    assert_eq!(ids("gpu-hgx-nic-other-socket", "mlx5_4", "0000:1b:00.0", MemPath::Peermem), ["gpu.affinity"]);
    assert_eq!(ids("gpu-hgx-healthy", "mlx5_0", "0000:1b:00.0", MemPath::Peermem), Vec::<&str>::new(), "nothing wrong: the errno is all there is");
    assert!(explain_registration(None, "rxe0", "0000:00:00.0", MemPath::Peermem).is_empty());
}

/// `cuda:N` is CUDA's numbering (CUDA_DEVICE_ORDER, CUDA_VISIBLE_DEVICES); a bus id is the GPU
/// whatever CUDA calls it.
#[test]
fn a_bus_id_is_that_gpu_whatever_its_ordinal() {
    let t = tree("gpu-hgx-healthy");
    // CUDA_VISIBLE_DEVICES=3,0: 0000:61:00.0 is cuda:0 here.
    let visible = vec![CudaGpu { ordinal: 0, pci: "0000:61:00.0".into() }, CudaGpu { ordinal: 1, pci: "0000:1b:00.0".into() }];
    let bus = |s: &str| crate::model::BusId::parse(s).unwrap();
    let p = by_bus_id(Some(&t), "mlx5_0", &visible, bus("00000000:1B:00.0")).unwrap();
    assert_eq!((p.ordinal, p.pci.as_str(), p.relation), (1, "0000:1b:00.0", Some(Relation::Pix)));
    let err = by_bus_id(Some(&t), "mlx5_0", &visible, bus("0000:9d:00.0")).unwrap_err();
    assert_eq!(err.to_string(), "CUDA sees no GPU at 0000:9d:00.0 (it sees cuda:0 0000:61:00.0, cuda:1 0000:1b:00.0)");
}
