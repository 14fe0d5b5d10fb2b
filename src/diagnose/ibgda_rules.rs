//! `gpu.ibgda`: GPU-initiated RDMA's preconditions (IBGDA, as NVSHMEM and the MoE
//! all-to-all kernels built on it use), judged over what the NVIDIA driver says of itself (pure).
//!
//! The GPU rings the NIC's doorbell and writes its work queues itself, so the driver must map
//! the NIC's BAR into the GPU (`PeerMappingOverride=1` in the `RegistryDwords` module
//! parameter, or the `gdrdrv` module of GDRCopy) and allow stream memory operations
//! (`NVreg_EnableStreamMemOPs=1`) — NVSHMEM's IBGDA installation guide names both. The
//! driver prints its parameters in `/proc/driver/nvidia/params`, one `Name: value` a line and
//! `RegistryDwords: "KEY=VALUE;..."` (open-gpu-kernel-modules, `kernel-open/nvidia/nv-procfs.c`,
//! `nv_procfs_read_params`).
//!
//! Informational unless the operator says the node is meant for it (`--expect ibgda=on`): most
//! GPU nodes run NCCL over CPU-proxied RDMA and need neither setting.

use super::{Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::pci::{Modules, PciTree};

/// What `/proc/driver/nvidia/params` says, as far as IBGDA asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverParams {
    /// `EnableStreamMemOPs: N`.
    pub stream_memops: Option<u32>,
    /// `PeerMappingOverride=N` inside `RegistryDwords: "..."`.
    pub peer_mapping_override: Option<u32>,
}

/// Parses the driver's parameter listing; lines it does not know are ignored.
pub fn parse(text: &str) -> DriverParams {
    let mut out = DriverParams::default();
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match name.trim() {
            "EnableStreamMemOPs" => out.stream_memops = value.parse().ok(),
            "RegistryDwords" => {
                for entry in value.trim_matches('"').split(';') {
                    if let Some((key, v)) = entry.split_once('=') {
                        if key.trim().eq_ignore_ascii_case("PeerMappingOverride") {
                            out.peer_mapping_override = parse_dword(v.trim());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A registry DWORD: decimal or 0x hex, as the driver takes them.
fn parse_dword(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `gpu.ibgda` for a node with NVIDIA GPUs; `required`: `--expect ibgda=on`.
pub(super) fn run(tree: Option<&PciTree>, required: bool, sheet: &mut Sheet) {
    let Some(tree) = tree.filter(|t| !t.gpus().is_empty()) else { return };
    judge(tree.modules.as_ref(), required, sheet);
}

const EXPECTED: &str = "PeerMappingOverride=1 or gdrdrv; EnableStreamMemOPs=1";

fn judge(modules: Option<&Modules>, required: bool, sheet: &mut Sheet) {
    let id = FindingId::GpuIbgda;
    let severity = if required { Severity::Error } else { Severity::Info };
    let Some(modules) = modules else {
        sheet.skip(id, "node", "no module/ in the tree");
        return;
    };
    let Some(text) = modules.nvidia_params.as_deref() else {
        let (observed, why) = if modules.has("nvidia") {
            (
                "the nvidia driver's parameters are not readable",
                "/proc/driver/nvidia/params was not read (a bundle without proc/driver/nvidia/params)",
            )
        } else {
            ("no nvidia driver loaded", "the nvidia driver is not loaded")
        };
        if required {
            sheet.fail(
                id,
                "node",
                observed,
                Some(EXPECTED.into()),
                severity,
                format!("GPU-initiated RDMA (IBGDA) cannot be judged: {why}"),
                "load the NVIDIA driver; re-capture the bundle with this fabcheck (`fabcheck bundle DIR`) so it keeps proc/driver/nvidia/params",
            );
        } else {
            sheet.skip(id, "node", observed);
        }
        return;
    };
    let params = parse(text);
    let gdrdrv = modules.has("gdrdrv");
    let peer_mapping = params.peer_mapping_override == Some(1) || gdrdrv;
    let memops = params.stream_memops == Some(1);
    let observed = format!(
        "PeerMappingOverride={}, gdrdrv {}, EnableStreamMemOPs={}",
        params.peer_mapping_override.map_or("unset".to_string(), |v| v.to_string()),
        if gdrdrv { "loaded" } else { "not loaded" },
        params.stream_memops.map_or("unset".to_string(), |v| v.to_string()),
    );
    if peer_mapping && memops {
        sheet.pass(id, "node", observed, Some(EXPECTED.into()));
        return;
    }
    let mut missing = Vec::new();
    if !peer_mapping {
        missing.push("the GPU cannot map the NIC's doorbells (neither RegistryDwords PeerMappingOverride=1 nor the gdrdrv module)");
    }
    if !memops {
        missing.push("stream memory operations are off (EnableStreamMemOPs is not 1)");
    }
    let message = format!(
        "GPU-initiated RDMA (IBGDA: NVSHMEM, DeepEP-style MoE all-to-all) will not start: {}{}",
        missing.join("; "),
        if required { "" } else { " (informational: --expect ibgda=on makes it an error on nodes meant for it)" }
    );
    sheet.fail(
        id,
        "node",
        observed,
        Some(EXPECTED.into()),
        severity,
        message,
        "add `options nvidia NVreg_EnableStreamMemOPs=1 NVreg_RegistryDwords=\"PeerMappingOverride=1;\"` to \
         /etc/modprobe.d/nvidia.conf, run `update-initramfs -u` (or dracut -f) and reboot (or reload the driver); \
         NVSHMEM's IBGDA guide describes it",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As `nv_procfs_read_params` prints it (open-gpu-kernel-modules 550, trimmed).
    const READY: &str = "ResmanDebugLevel: 4294967295\nEnableStreamMemOPs: 1\nEnableMSI: 1\n\
                         RegistryDwords: \"PeerMappingOverride=1;\"\nRegistryDwordsPerDevice: \"\"\nRmMsg: \"\"\n";
    const DEFAULTS: &str = "ResmanDebugLevel: 4294967295\nEnableStreamMemOPs: 0\nRegistryDwords: \"\"\nRmMsg: \"\"\n";

    fn modules(present: &[&str], params: Option<&str>) -> Modules {
        Modules {
            present: present.iter().map(|m| m.to_string()).collect(),
            nvidia_taint: Some("O".into()),
            nvidia_params: params.map(String::from),
            kernel: None,
        }
    }

    type Rows = (Vec<(crate::outcome::Status, String)>, Vec<(Severity, String)>);

    fn judged(m: Option<&Modules>, required: bool) -> Rows {
        let mut sheet = Sheet::default();
        judge(m, required, &mut sheet);
        (
            sheet.checks.iter().map(|c| (c.status, c.observed.clone())).collect(),
            sheet.findings.iter().map(|f| (f.severity, f.message.clone())).collect(),
        )
    }

    #[test]
    fn parses_the_driver_listing() {
        assert_eq!(parse(READY), DriverParams { stream_memops: Some(1), peer_mapping_override: Some(1) });
        assert_eq!(parse(DEFAULTS), DriverParams { stream_memops: Some(0), peer_mapping_override: None });
        let many = "RegistryDwords: \"RMForceStaticBar1=1; PeerMappingOverride=0x1;\"";
        assert_eq!(parse(many).peer_mapping_override, Some(1));
    }

    #[test]
    fn ready_passes_and_defaults_are_info_unless_expected() {
        let (checks, findings) = judged(Some(&modules(&["nvidia"], Some(READY))), true);
        assert_eq!(checks[0].0, crate::outcome::Status::Pass, "{checks:?}");
        assert!(findings.is_empty());
        let (_, findings) = judged(Some(&modules(&["nvidia"], Some(DEFAULTS))), false);
        assert_eq!(findings[0].0, Severity::Info);
        assert!(findings[0].1.contains("doorbells") && findings[0].1.contains("EnableStreamMemOPs"), "{findings:?}");
        let (_, findings) = judged(Some(&modules(&["nvidia"], Some(DEFAULTS))), true);
        assert_eq!(findings[0].0, Severity::Error);
    }

    /// GDRCopy's module maps the BAR instead of the registry key.
    #[test]
    fn gdrdrv_stands_for_peer_mapping_override() {
        let memops_only = "EnableStreamMemOPs: 1\nRegistryDwords: \"\"\n";
        let (checks, _) = judged(Some(&modules(&["nvidia", "gdrdrv"], Some(memops_only))), true);
        assert_eq!(checks[0].0, crate::outcome::Status::Pass, "{checks:?}");
        let (_, findings) = judged(Some(&modules(&["nvidia"], Some(memops_only))), true);
        assert!(findings[0].1.contains("doorbells") && !findings[0].1.contains("EnableStreamMemOPs"), "{findings:?}");
    }

    #[test]
    fn unreadable_params_skip_unless_expected() {
        let (checks, findings) = judged(Some(&modules(&["nvidia"], None)), false);
        assert_eq!(checks[0].0, crate::outcome::Status::Skip);
        assert!(findings.is_empty());
        let (_, findings) = judged(Some(&modules(&[], None)), true);
        assert_eq!(findings[0].0, Severity::Error);
        assert!(findings[0].1.contains("not loaded"), "{findings:?}");
    }
}
