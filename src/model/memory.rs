//! Where a test's buffers live (`--mem`), as typed values on the wire and in documents.
//!
//! Only the choice travels (`host`, `cuda:N`, `cuda:BUSID`, `cuda:auto`); which CUDA library an
//! agent loads is its own environment's business (`FABCHECK_CUDA_LIBRARY`), never the
//! controller's.

use crate::model::Unparsed;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// `--mem`: host memory, or GPU memory of one GPU or the one nearest the NIC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MemChoice {
    #[default]
    Host,
    /// CUDA device ordinal: CUDA's numbering, which `CUDA_DEVICE_ORDER` (default
    /// `FASTEST_FIRST`) and `CUDA_VISIBLE_DEVICES` change, not necessarily `nvidia-smi`'s.
    Cuda(u16),
    /// The GPU at this PCI address, whatever CUDA numbers it.
    CudaBus(BusId),
    /// The GPU nearest the test's NIC (PIX/PXB, else the nearest with a warning).
    CudaAuto,
}

const EXPECTED: &str = "expected host, cuda, cuda:N (a CUDA device ordinal), cuda:BUSID (a PCI address such as 0000:1a:00.0, \
     as nvidia-smi prints it) or cuda:auto";

impl MemChoice {
    pub fn is_host(&self) -> bool {
        *self == MemChoice::Host
    }

    /// Parses `host`, `cuda` (the nearest GPU, as `cuda:auto`), `cuda:N`, `cuda:BUSID`,
    /// `cuda:auto`. A bus id has a colon; an ordinal is digits only.
    pub fn parse(text: &str) -> Result<MemChoice, Unparsed> {
        match text.trim() {
            "host" => Ok(MemChoice::Host),
            "cuda" | "cuda:auto" => Ok(MemChoice::CudaAuto),
            other => {
                let choice = match other.strip_prefix("cuda:") {
                    Some(id) if id.contains(':') => BusId::parse(id).map(MemChoice::CudaBus),
                    Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n.parse::<u16>().ok().map(MemChoice::Cuda),
                    _ => None,
                };
                choice.ok_or_else(|| format!("--mem {other:?}: {EXPECTED}").into())
            }
        }
    }
}

impl fmt::Display for MemChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemChoice::Host => f.write_str("host"),
            MemChoice::Cuda(n) => write!(f, "cuda:{n}"),
            MemChoice::CudaBus(id) => write!(f, "cuda:{id}"),
            MemChoice::CudaAuto => f.write_str("cuda:auto"),
        }
    }
}

/// A PCI address (domain, bus, device, function), as sysfs names a function (`0000:1a:00.0`).
/// Parsed from what people copy: sysfs's and lspci -D's `0000:1a:00.0`, nvidia-smi's
/// `00000000:1A:00.0` (`--query-gpu=pci.bus_id`, `-q`: an 8-digit domain, upper case), CUDA's
/// `0000:1A:00.0` (`cuDeviceGetPCIBusId`), and lspci's `1a:00.0` (domain 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BusId {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl BusId {
    pub fn parse(text: &str) -> Option<BusId> {
        fn hex(t: &str, max: usize) -> Option<&str> {
            (!t.is_empty() && t.len() <= max && t.bytes().all(|b| b.is_ascii_hexdigit())).then_some(t)
        }
        let mut parts: Vec<&str> = text.trim().split(':').collect();
        let (slot, function) = parts.pop()?.split_once('.')?;
        let bus = parts.pop()?;
        let domain = match parts.as_slice() {
            [] => "0",
            [d] => d,
            _ => return None,
        };
        let id = BusId {
            domain: u32::from_str_radix(hex(domain, 8)?, 16).ok()?,
            bus: u8::from_str_radix(hex(bus, 2)?, 16).ok()?,
            device: u8::from_str_radix(hex(slot, 2)?, 16).ok()?,
            function: u8::from_str_radix(hex(function, 1)?, 16).ok()?,
        };
        (id.device < 32 && id.function < 8).then_some(id)
    }
}

impl fmt::Display for BusId {
    /// sysfs's spelling: lower case, the domain in at least 4 digits (`10000:e1:00.0` behind VMD).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
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
        // "cuda:00000000:1a:00.0" is the longest spelling (21).
        if text.len() > 32 {
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
    /// Usable bandwidth of the GPU's PCIe link by design (its and its port's maximum link),
    /// Gb/s, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gbps: Option<f64>,
    /// Why the GPU is not one near the NIC (`gpu.affinity`), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// The GPU's link trained narrower than it and its port support (`pcie.link`), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_fault: Option<String>,
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
        for bad in
            ["gpu", "cuda:", "cuda:-1", "cuda:+3", "cuda:70000", "cuda:/tmp/lib.so", "rocm:0", "cuda:1a:00", "cuda:0000:1a:20.0", "cuda:0000:1a:00.8"]
        {
            assert!(MemChoice::parse(bad).is_err(), "{bad}");
        }
        let wire: MemChoice = serde_json::from_str("\"cuda:auto\"").unwrap();
        assert_eq!(wire, MemChoice::CudaAuto);
        assert!(serde_json::from_str::<MemChoice>("\"/usr/lib/libcuda.so.1\"").is_err(), "no library path on the wire");
        assert_eq!(serde_json::to_string(&MemPath::Peermem).unwrap(), "\"peermem\"");
    }

    /// The contract: `cuda:0000:1a:00.0`, as nvidia-smi prints it, beside `cuda:N`.
    #[test]
    fn a_bus_id_is_taken_as_people_copy_it_and_printed_as_sysfs_names_it() {
        let want = MemChoice::CudaBus(BusId { domain: 0, bus: 0x1a, device: 0, function: 0 });
        for text in ["cuda:0000:1a:00.0", "cuda:00000000:1A:00.0", "cuda:0000:1A:00.0", "cuda:1a:00.0"] {
            assert_eq!(MemChoice::parse(text), Ok(want), "{text}");
        }
        assert_eq!(want.to_string(), "cuda:0000:1a:00.0");
        assert_eq!(BusId::parse("10000:e1:00.0").unwrap().to_string(), "10000:e1:00.0", "VMD domains keep their digits");
        let wire = serde_json::to_string(&MemChoice::parse("cuda:00000000:DF:1f.7").unwrap()).unwrap();
        assert_eq!(wire, "\"cuda:0000:df:1f.7\"");
        assert_eq!(serde_json::from_str::<MemChoice>(&wire).unwrap().to_string(), "cuda:0000:df:1f.7", "round trip on the wire");
        assert_eq!(MemChoice::parse("cuda:7"), Ok(MemChoice::Cuda(7)), "digits alone stay an ordinal");
    }
}
