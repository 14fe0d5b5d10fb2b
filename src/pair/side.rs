//! One end of a pair as a test used it: host, device and port, link, the GPU memory it used.
//! Pair's document, its verdict and `--rails` share it.

use crate::model::{LinkLayer, MemChoice, MemPath};
use serde::{Deserialize, Serialize};

/// One end of the pair, as the test used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub host: String,
    pub device: String,
    pub port: u8,
    pub gid_index: Option<u8>,
    pub gid: Option<std::net::Ipv6Addr>,
    pub link_layer: LinkLayer,
    pub rate_gbps: Option<f64>,
    pub ca_type: String,
    pub mtu: Option<u32>,
    /// RoCE traffic class the test ran in (`--tclass`, else this end's RoCE DSCP's ToS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tclass: Option<u8>,
    /// Where `tclass` came from when no `--tclass` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tclass_source: Option<crate::model::TclassSource>,
    /// InfiniBand service level (`--sl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl: Option<u8>,
    /// The CPU this end's measured loop was pinned to (`--cpu`, or the agent's choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u16>,
    /// Usable bandwidth of the adapter's PCIe link, Gb/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gbps: Option<f64>,
    /// How this end's link runs below what it supports, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained_low: Option<String>,
    /// Where this end's buffers lived (`--mem`; absent: host memory, as before 0.3).
    #[serde(default, skip_serializing_if = "MemChoice::is_host")]
    pub mem: MemChoice,
    /// How they were registered: `dmabuf`, `peermem` (GPU memory) or `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_path: Option<MemPath>,
    /// The GPU's PCI address, with `--mem cuda`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The GPU's PCIe bound by design, Gb/s, with `--mem cuda` (`gpu::bound`; `pcie_gbps` is
    /// the lower of it and the NIC's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_pcie_gbps: Option<f64>,
}

/// A 200 Gb/s InfiniBand end (mlx5_0 port 1, MTU 4096, nothing optional set), for tests to
/// change the fields they are about.
#[cfg(test)]
pub(crate) fn test_side() -> Side {
    Side {
        host: "n".into(),
        device: "mlx5_0".into(),
        port: 1,
        gid_index: None,
        gid: None,
        link_layer: LinkLayer::InfiniBand,
        rate_gbps: Some(200.0),
        ca_type: "MT4123".into(),
        mtu: Some(4096),
        tclass: None,
        tclass_source: None,
        sl: None,
        cpu: None,
        pcie_gbps: None,
        trained_low: None,
        mem: MemChoice::Host,
        mem_path: None,
        gpu: None,
        gpu_pcie_gbps: None,
    }
}
