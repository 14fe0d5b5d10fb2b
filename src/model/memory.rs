//! Where a test's buffers live (`--mem`), as typed values on the wire and in documents.
//!
//! Only the choice travels (`host`, `cuda:N`, `cuda:auto`); which CUDA library an agent loads
//! is its own environment's business (`FABCHECK_CUDA_LIBRARY`), never the controller's.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// `--mem`: host memory, or GPU memory of one GPU or the one nearest the NIC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MemChoice {
    #[default]
    Host,
    /// CUDA device ordinal.
    Cuda(u16),
    /// The GPU nearest the test's NIC (PIX/PXB, else the nearest with a warning).
    CudaAuto,
}

impl MemChoice {
    pub fn is_host(&self) -> bool {
        *self == MemChoice::Host
    }

    /// Parses `host`, `cuda` (the nearest GPU, as `cuda:auto`), `cuda:N`, `cuda:auto`.
    pub fn parse(text: &str) -> Result<MemChoice, String> {
        match text.trim() {
            "host" => Ok(MemChoice::Host),
            "cuda" | "cuda:auto" => Ok(MemChoice::CudaAuto),
            other => match other.strip_prefix("cuda:").map(str::parse::<u16>) {
                Some(Ok(n)) => Ok(MemChoice::Cuda(n)),
                _ => Err(format!("--mem {other:?}: expected host, cuda, cuda:N (a CUDA device ordinal) or cuda:auto")),
            },
        }
    }
}

impl fmt::Display for MemChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemChoice::Host => f.write_str("host"),
            MemChoice::Cuda(n) => write!(f, "cuda:{n}"),
            MemChoice::CudaAuto => f.write_str("cuda:auto"),
        }
    }
}

impl Serialize for MemChoice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() > 16 {
            return Err(serde::de::Error::custom("mem: too long"));
        }
        MemChoice::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// How a side's buffers were registered (`mem_path`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemPath {
    Host,
    /// `ibv_reg_dmabuf_mr` on the GPU buffer's dma-buf.
    Dmabuf,
    /// `ibv_reg_mr` on the GPU address, through `nvidia_peermem`.
    Peermem,
}

impl MemPath {
    pub fn name(self) -> &'static str {
        match self {
            MemPath::Host => "host",
            MemPath::Dmabuf => "dmabuf",
            MemPath::Peermem => "peermem",
        }
    }
}

/// The GPU a side's buffers live on, as the agent set it up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuUse {
    /// CUDA device ordinal.
    pub ordinal: u16,
    /// Its PCI address (`cuDeviceGetPCIBusId`, lower case).
    pub pci: String,
    pub path: MemPath,
    /// PIX, PXB, PHB, NODE or SYS from the NIC, when both are in this node's PCI tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    /// Usable bandwidth of the GPU's PCIe link, Gb/s, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gbps: Option<f64>,
    /// Why the GPU is not one near the NIC (`gpu.affinity`), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_mem_parses_and_prints_back() {
        for (text, want) in
            [("host", MemChoice::Host), ("cuda", MemChoice::CudaAuto), ("cuda:auto", MemChoice::CudaAuto), ("cuda:3", MemChoice::Cuda(3))]
        {
            assert_eq!(MemChoice::parse(text), Ok(want), "{text}");
        }
        assert_eq!(MemChoice::Cuda(3).to_string(), "cuda:3");
        for bad in ["gpu", "cuda:", "cuda:-1", "cuda:70000", "cuda:/tmp/lib.so", "rocm:0"] {
            assert!(MemChoice::parse(bad).is_err(), "{bad}");
        }
        let wire: MemChoice = serde_json::from_str("\"cuda:auto\"").unwrap();
        assert_eq!(wire, MemChoice::CudaAuto);
        assert!(serde_json::from_str::<MemChoice>("\"/usr/lib/libcuda.so.1\"").is_err(), "no library path on the wire");
        assert_eq!(serde_json::to_string(&MemPath::Peermem).unwrap(), "\"peermem\"");
    }
}
