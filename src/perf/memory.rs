//! Where a test's buffers come from, how they are registered, and who frees them: the one
//! seam between the memory a test uses (`--mem host|cuda...`) and the loops, which do not
//! change with it. A source returns a [`MemoryRegion`] that owns its memory (host pages, or a
//! GPU buffer freed after its registration); a ROCm or Neuron source would be one more arm.
//!
//! Device memory differs for the loops in two ways only, both decided here and in the verbs
//! layer rather than in the loops: the CPU never inlines from it (the list refuses), and write
//! latency cannot poll its last byte, so it waits on a completion instead
//! ([`polls_completion`], see docs/gpu.md).

use super::PerfError;
use crate::gpu::choice::{self, CudaGpu, Pick};
use crate::model::{GpuUse, MemChoice, MemPath, TestKind};
use crate::probe::pci::PciTree;
use fabcheck_verbs::{self as verbs, Access, DeviceBuffer, Gpu, MemoryRegion, ProtectionDomain, RegPath, VerbsError};
use std::path::Path;

/// A registered buffer and what it is.
pub struct Registered {
    pub region: MemoryRegion,
    /// Whether relaxed ordering was granted (asked for, and the provider took it).
    pub relaxed_ordering: bool,
    /// The GPU it lives on; `None`: host memory.
    pub gpu: Option<GpuUse>,
}

/// Write latency on device memory waits for an RDMA write with immediate's receive completion
/// instead of polling the buffer's last byte, which the CPU cannot read there. Both sides
/// decide this from the same `--mem`, so they run the same protocol.
pub fn polls_completion(test: TestKind, mem: MemChoice) -> bool {
    test == TestKind::WriteLat && !mem.is_host()
}

/// Before any device is opened: `--mem cuda` needs the CUDA driver and, for `cuda:N` or
/// `cuda:BUSID`, that GPU. A node without them fails in a moment, naming the library or what
/// CUDA sees, not after the port checks.
pub fn preflight(mem: MemChoice) -> Result<(), PerfError> {
    if mem.is_host() {
        return Ok(());
    }
    // The choice without a NIC or tree: only whether the GPU exists is asked here.
    choose(None, "", &gpus()?, mem).map(|_| ())
}

fn gpus() -> Result<Vec<CudaGpu>, PerfError> {
    Ok(verbs::cuda_devices()
        .map_err(PerfError::NoCuda)?
        .into_iter()
        .filter_map(|d| Some(CudaGpu { ordinal: u16::try_from(d.ordinal).ok()?, pci: d.pci_bus_id }))
        .collect())
}

/// Allocates and registers `len` bytes for `nic` as `mem` asks, with `access` (and relaxed
/// ordering when `relaxed`, dropped where the provider refuses it).
pub fn register(pd: &ProtectionDomain, nic: &str, len: usize, access: Access, mem: MemChoice, relaxed: bool) -> Result<Registered, PerfError> {
    match mem {
        MemChoice::Host => host(pd, len, access, relaxed, crate::sys::cpu::device_numa_node(Path::new("/sys"), nic)),
        MemChoice::Cuda(_) | MemChoice::CudaBus(_) | MemChoice::CudaAuto => cuda(pd, nic, len, access, mem, relaxed),
    }
}

/// Host memory on the NIC's NUMA node (`numa`: preferred, where the device has one), so it is
/// local whether or not the test's thread could be pinned near the NIC.
fn host(pd: &ProtectionDomain, len: usize, access: Access, relaxed: bool, numa: Option<u32>) -> Result<Registered, PerfError> {
    // Relaxed ordering, as perftest registers by default; a provider that refuses the flag
    // gets the plain registration, and the endpoint says which was used.
    if relaxed {
        if let Ok(region) = MemoryRegion::new_near(pd, len, access | Access::RELAXED_ORDERING, numa) {
            return Ok(Registered { region, relaxed_ordering: true, gpu: None });
        }
    }
    let region = MemoryRegion::new_near(pd, len, access, numa).map_err(PerfError::from_reg)?;
    Ok(Registered { region, relaxed_ordering: false, gpu: None })
}

fn cuda(pd: &ProtectionDomain, nic: &str, len: usize, access: Access, mem: MemChoice, relaxed: bool) -> Result<Registered, PerfError> {
    let gpus = gpus()?;
    let tree = crate::probe::pci::read(Path::new("/sys"));
    let pick = choose(tree.as_ref(), nic, &gpus, mem)?;
    let gpu = Gpu::open(u32::from(pick.ordinal)).map_err(PerfError::NoCuda)?;
    let attempt = |access: Access| -> Result<(MemoryRegion, RegPath), VerbsError> {
        let buffer = DeviceBuffer::new(&gpu, len)?;
        MemoryRegion::on_device(pd, buffer, len, access)
    };
    let (region, path, relaxed_ordering) = match relaxed.then(|| attempt(access | Access::RELAXED_ORDERING)) {
        Some(Ok((region, path))) => (region, path, true),
        _ => match attempt(access) {
            Ok((region, path)) => (region, path, false),
            Err(e) => return Err(registration_failed(e, tree.as_ref(), nic, &pick)),
        },
    };
    let path = match path {
        RegPath::Dmabuf => MemPath::Dmabuf,
        RegPath::Peermem => MemPath::Peermem,
        RegPath::Host => MemPath::Host,
    };
    Ok(Registered { region, relaxed_ordering, gpu: Some(pick.into_use(path)) })
}

/// The GPU `mem` names for `nic`.
pub fn choose(tree: Option<&PciTree>, nic: &str, gpus: &[CudaGpu], mem: MemChoice) -> Result<Pick, PerfError> {
    match mem {
        MemChoice::Cuda(n) => choice::by_ordinal(tree, nic, gpus, n),
        MemChoice::CudaBus(bus) => choice::by_bus_id(tree, nic, gpus, bus),
        MemChoice::Host | MemChoice::CudaAuto => choice::nearest(tree, nic, gpus),
    }
    .map_err(PerfError::GpuChoice)
}

/// A CUDA error stays a CUDA error (allocation, export); a refused registration is explained
/// with the node's GPU findings.
fn registration_failed(e: VerbsError, tree: Option<&PciTree>, nic: &str, pick: &Pick) -> PerfError {
    let tried = match e {
        VerbsError::RegDmabufMr { .. } => MemPath::Dmabuf,
        VerbsError::RegMr { .. } => MemPath::Peermem,
        other => return PerfError::NoCuda(other),
    };
    let causes = choice::explain_registration(tree, nic, &pick.pci, tried);
    PerfError::GpuRegistration { source: e, gpu: format!("{} (cuda:{})", pick.pci, pick.ordinal), causes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::choice::Cause;

    #[test]
    fn only_write_latency_on_device_memory_polls_a_completion() {
        assert!(polls_completion(TestKind::WriteLat, MemChoice::Cuda(0)));
        assert!(polls_completion(TestKind::WriteLat, MemChoice::CudaAuto));
        assert!(!polls_completion(TestKind::WriteLat, MemChoice::Host), "host memory keeps last-byte polling");
        for t in [TestKind::SendLat, TestKind::ReadLat, TestKind::WriteBw, TestKind::ReadBw, TestKind::SendBw] {
            assert!(!polls_completion(t, MemChoice::Cuda(0)), "{t:?}");
        }
    }

    #[test]
    fn a_refused_registration_names_the_gpu_finding_not_just_the_errno() {
        let pick = Pick { ordinal: 2, pci: "0000:52:00.0".into(), relation: None, pcie_gbps: None, affinity: None, link_fault: None };
        let e = VerbsError::RegMr { len: 65536, source: std::io::Error::from_raw_os_error(libc::EINVAL) };
        let tree = PciTree {
            modules: Some(crate::probe::pci::Modules {
                present: vec!["nvidia".into()],
                nvidia_taint: Some("PO".into()),
                nvidia_params: None,
                kernel: None,
            }),
            ..PciTree::default()
        };
        let err = registration_failed(e, Some(&tree), "mlx5_2", &pick);
        let PerfError::GpuRegistration { causes, .. } = &err else { panic!("{err:?}") };
        assert_eq!(causes.iter().map(|c: &Cause| c.id.as_str()).collect::<Vec<_>>(), ["gpu.peermem"]);
        assert!(err.cause().contains("gpu.peermem") && err.cause().contains("0000:52:00.0 (cuda:2)"), "{}", err.cause());
        assert!(err.remedy().contains("modprobe nvidia_peermem"), "{}", err.remedy());
        let alloc = VerbsError::Cuda { call: "cuMemAlloc", code: 2, name: "CUDA_ERROR_OUT_OF_MEMORY".into() };
        assert!(matches!(registration_failed(alloc, None, "mlx5_2", &pick), PerfError::NoCuda(_)));
    }
}
