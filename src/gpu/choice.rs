//! Which GPU a test's buffers live on (`--mem cuda:N|cuda:BUSID|cuda:auto`), and why
//! registering them failed, in the words of `check`'s GPU findings. Pure: works on a
//! [`PciTree`] already read and the GPUs CUDA listed (ordinal and PCI address).
//!
//! `cuda:N` is CUDA's ordinal. CUDA numbers GPUs fastest first unless
//! `CUDA_DEVICE_ORDER=PCI_BUS_ID`, and only those `CUDA_VISIBLE_DEVICES` leaves (CUDA C++
//! Programming Guide, "CUDA Environment Variables"), while `nvidia-smi` numbers them in PCI
//! order: the same N can be two GPUs. `cuda:BUSID` names one whatever the numbering.
//!
//! With `--rails` every rail has its own NIC: [`nearest`] takes one NIC and is called once
//! per rail, as NCCL gives each rank the GPU nearest its NIC.

use super::topology::{path, Relation};
use crate::model::{BusId, GpuUse, MemPath};
use crate::outcome::FindingId;
use crate::probe::pci::{Function, PciTree};

/// A GPU as CUDA lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaGpu {
    pub ordinal: u16,
    /// `0000:1b:00.0`, lower case.
    pub pci: String,
}

/// The GPU taken for a NIC.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub ordinal: u16,
    pub pci: String,
    /// `None` when the NIC or the GPU is not in the PCI tree (Soft-RoCE, a hidden device).
    pub relation: Option<Relation>,
    /// Usable bandwidth of the GPU's PCIe link by design (its and its port's maximum), Gb/s.
    pub pcie_gbps: Option<f64>,
    /// The GPU's link trained narrower than both ends support (`gpu::bound`).
    pub link_fault: Option<String>,
    /// The `gpu.affinity` warning, when the GPU is not near the NIC (PHB and beyond) or its
    /// distance is unknown.
    pub affinity: Option<String>,
}

impl Pick {
    /// What the endpoint reports, with the registration path taken.
    pub fn into_use(self, path: MemPath) -> GpuUse {
        GpuUse {
            ordinal: self.ordinal,
            pci: self.pci,
            path,
            relation: self.relation.map(|r| r.name().to_string()),
            pcie_gbps: self.pcie_gbps,
            affinity: self.affinity,
            link_fault: self.link_fault,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("CUDA sees no GPU on this node")]
    NoGpu,
    #[error("there is no CUDA device {ordinal} (CUDA sees {count} GPUs here, numbered from 0: {})", listing(.gpus))]
    NoSuchOrdinal { ordinal: u16, count: usize, gpus: Vec<CudaGpu> },
    #[error("CUDA sees no GPU at {bus} (it sees {})", listing(.gpus))]
    NoSuchBusId { bus: BusId, gpus: Vec<CudaGpu> },
}

/// "cuda:0 0000:1b:00.0, cuda:1 0000:43:00.0", or "none".
fn listing(gpus: &[CudaGpu]) -> String {
    if gpus.is_empty() {
        return "none".into();
    }
    gpus.iter().map(|g| format!("cuda:{} {}", g.ordinal, g.pci)).collect::<Vec<_>>().join(", ")
}

fn nic_function<'a>(tree: &'a PciTree, nic: &str) -> Option<&'a Function> {
    tree.nics.iter().find(|n| n.name == nic).and_then(|n| tree.function(&n.bdf))
}

fn pick(tree: Option<&PciTree>, nic: &str, gpu: &CudaGpu) -> Pick {
    let gpu_f = tree.and_then(|t| t.function(&gpu.pci));
    let nic_f = tree.and_then(|t| nic_function(t, nic));
    let relation = match (tree, gpu_f, nic_f) {
        (Some(t), Some(g), Some(n)) => Some(path(t, g, n).relation),
        _ => None,
    };
    let affinity = match relation {
        Some(Relation::Pix | Relation::Pxb) => None,
        Some(r) => Some(format!(
            "GPU {} (cuda:{}) is {} from {nic} ({}): GPUDirect RDMA goes through the root complex, not a PCIe switch",
            gpu.pci,
            gpu.ordinal,
            r.name(),
            r.meaning()
        )),
        None if nic_f.is_none() => {
            Some(format!("{nic} is not a PCI function of this node (Soft-RoCE?): GPU {} (cuda:{}) taken, its distance unknown", gpu.pci, gpu.ordinal))
        }
        None => Some(format!("GPU {} (cuda:{}) is not in this node's PCI tree: its distance from {nic} is unknown", gpu.pci, gpu.ordinal)),
    };
    // The bound by design (both ends' maximum), not the trained link: an idle GPU downshifts.
    let link = tree.zip(gpu_f).map(|(t, g)| super::bound::gpu_link(t, g));
    let (pcie_gbps, link_fault) = link.map_or((None, None), |l| (l.gbps, l.fault));
    Pick { ordinal: gpu.ordinal, pci: gpu.pci.clone(), relation, pcie_gbps, affinity, link_fault }
}

/// `cuda:auto`: the GPU nearest `nic` (closest relation, then fewest bridges, then the lowest
/// ordinal); PIX or PXB without a warning, anything farther with a `gpu.affinity` one.
pub fn nearest(tree: Option<&PciTree>, nic: &str, gpus: &[CudaGpu]) -> Result<Pick, ChoiceError> {
    let rank = |g: &CudaGpu| {
        let f = tree.and_then(|t| Some((t, t.function(&g.pci)?, nic_function(t, nic)?)));
        let (relation, bridges) = f.map_or((u8::MAX, usize::MAX), |(t, g, n)| {
            let p = path(t, g, n);
            (p.relation as u8, p.bridges.len())
        });
        (relation, bridges, g.ordinal)
    };
    let best = gpus.iter().min_by_key(|g| rank(g)).ok_or(ChoiceError::NoGpu)?;
    Ok(pick(tree, nic, best))
}

/// `cuda:N`: that GPU, its distance from `nic` said as for `cuda:auto`.
pub fn by_ordinal(tree: Option<&PciTree>, nic: &str, gpus: &[CudaGpu], ordinal: u16) -> Result<Pick, ChoiceError> {
    let gpu =
        gpus.iter().find(|g| g.ordinal == ordinal).ok_or_else(|| ChoiceError::NoSuchOrdinal { ordinal, count: gpus.len(), gpus: gpus.to_vec() })?;
    Ok(pick(tree, nic, gpu))
}

/// `cuda:BUSID`: the GPU CUDA lists at that PCI address (`cuDeviceGetPCIBusId`, lower-cased),
/// whatever ordinal it has here.
pub fn by_bus_id(tree: Option<&PciTree>, nic: &str, gpus: &[CudaGpu], bus: BusId) -> Result<Pick, ChoiceError> {
    let gpu = gpus.iter().find(|g| BusId::parse(&g.pci) == Some(bus)).ok_or_else(|| ChoiceError::NoSuchBusId { bus, gpus: gpus.to_vec() })?;
    Ok(pick(tree, nic, gpu))
}

/// One GPU finding that explains a failed registration of GPU memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The `check` id it is (`gpu.peermem`, `pcie.acs`, `gpu.affinity`).
    pub id: crate::outcome::FindingId,
    pub text: String,
    pub remedy: &'static str,
}

/// Why registering GPU memory of `gpu` for `nic` failed, from the node's PCI tree: peer memory
/// without `nvidia_peermem`, ACS redirecting on a bridge between them, the GPU at SYS. Empty
/// when the tree shows nothing wrong (the errno is then all there is).
pub fn explain_registration(tree: Option<&PciTree>, nic: &str, gpu: &str, tried: MemPath) -> Vec<Cause> {
    let Some(tree) = tree else { return Vec::new() };
    let mut causes = Vec::new();
    if tried == MemPath::Peermem {
        if let Some(modules) = &tree.modules {
            if !modules.has("nvidia_peermem") && !modules.has("nv_peer_mem") {
                causes.push(Cause {
                    id: FindingId::GpuPeermem,
                    text: "peer memory needs nvidia_peermem, which is not loaded (and no dma-buf registration was possible)".into(),
                    remedy: "`modprobe nvidia_peermem` (and add it to /etc/modules-load.d), or use the open kernel modules with rdma-core >= 34 for dma-buf",
                });
            }
        }
    }
    if let (Some(g), Some(n)) = (tree.function(gpu), nic_function(tree, nic)) {
        let p = path(tree, g, n);
        let acs: Vec<String> = p
            .bridges
            .iter()
            .filter_map(|b| {
                let a = tree.function(b)?.config.parsed()?.acs.as_ref()?;
                (a.redirecting() != 0).then(|| format!("{b} ({})", a.describe_control()))
            })
            .collect();
        if p.relation <= Relation::Pxb && !acs.is_empty() {
            causes.push(Cause {
                id: FindingId::PcieAcs,
                text: format!("ACS redirects peer-to-peer traffic between GPU {gpu} and {nic} at {}", acs.join(", ")),
                remedy: "disable ACS redirection on those bridges (BIOS, or `setpci` at boot) as NVIDIA's GPUDirect RDMA guide describes",
            });
        }
        if p.relation == Relation::Sys {
            causes.push(Cause {
                id: FindingId::GpuAffinity,
                text: format!(
                    "GPU {gpu} is SYS from {nic} ({}): many platforms refuse or cripple peer-to-peer across sockets",
                    Relation::Sys.meaning()
                ),
                remedy: "use --mem cuda:auto (the GPU nearest the NIC) or a NIC on the GPU's socket",
            });
        }
    }
    causes
}

#[cfg(test)]
#[path = "choice_tests.rs"]
mod tests;
