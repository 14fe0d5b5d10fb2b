//! Product names from PCI/verbs vendor part ids, so a person sees "ConnectX-6", not "4123".

/// IEEE OUI that mlx4/mlx5 report as `vendor_id` in `ibv_query_device`.
pub const MELLANOX_OUI: u32 = 0x02c9;
/// PCI vendor id of Mellanox/NVIDIA networking (sysfs `device/vendor`).
pub const MELLANOX_PCI_VENDOR: u32 = 0x15b3;
/// `vendor_id` that Soft-RoCE reports.
pub const RXE_VENDOR: u32 = 0x00ff_ffff;

/// Names a device from its vendor id, part id and kernel name.
pub fn ca_type(vendor_id: Option<u32>, part_id: Option<u32>, device_name: &str) -> String {
    if device_name.starts_with("rxe") || vendor_id == Some(RXE_VENDOR) {
        return "Soft-RoCE (rxe)".into();
    }
    if device_name.starts_with("siw") {
        return "Soft-iWARP (siw)".into();
    }
    let mellanox = matches!(vendor_id, Some(MELLANOX_OUI) | Some(MELLANOX_PCI_VENDOR));
    match (mellanox, part_id) {
        (true, Some(part)) => nvidia_part_name(part).map(str::to_string).unwrap_or_else(|| format!("NVIDIA/Mellanox part {part}")),
        (false, Some(part)) => format!("vendor {:#x} part {part}", vendor_id.unwrap_or(0)),
        (_, None) => "unknown".into(),
    }
}

/// Whether this adapter family's InfiniBand ports are normally 4X (so 1X means degraded).
pub fn native_ib_width_is_4x(ca_type: &str) -> bool {
    ca_type.starts_with("ConnectX") || ca_type.starts_with("Connect-IB") || ca_type.starts_with("BlueField")
}

fn nvidia_part_name(part: u32) -> Option<&'static str> {
    Some(match part {
        4099 => "ConnectX-3",
        4100 => "ConnectX-3 VF",
        4103 => "ConnectX-3 Pro",
        4113 => "Connect-IB",
        4115 => "ConnectX-4",
        4116 => "ConnectX-4 VF",
        4117 => "ConnectX-4 Lx",
        4118 => "ConnectX-4 Lx VF",
        4119 => "ConnectX-5",
        4120 => "ConnectX-5 VF",
        4121 => "ConnectX-5 Ex",
        4122 => "ConnectX-5 Ex VF",
        4123 => "ConnectX-6",
        4124 => "ConnectX-6 VF",
        4125 => "ConnectX-6 Dx",
        4126 => "ConnectX VF",
        4127 => "ConnectX-6 Lx",
        4129 => "ConnectX-7",
        4131 => "ConnectX-8",
        41682 => "BlueField",
        41683 => "BlueField VF",
        41686 => "BlueField-2",
        41687 => "BlueField-2 VF",
        41692 => "BlueField-3",
        41693 => "BlueField-3 VF",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(ca_type(Some(MELLANOX_OUI), Some(4123), "mlx5_0"), "ConnectX-6");
        assert_eq!(ca_type(Some(MELLANOX_PCI_VENDOR), Some(4129), "mlx5_0"), "ConnectX-7");
        assert_eq!(ca_type(Some(MELLANOX_OUI), Some(41686), "mlx5_2"), "BlueField-2");
        assert_eq!(ca_type(Some(RXE_VENDOR), Some(0), "rxe0"), "Soft-RoCE (rxe)");
        assert_eq!(ca_type(Some(MELLANOX_OUI), Some(9999), "mlx5_0"), "NVIDIA/Mellanox part 9999");
        assert_eq!(ca_type(Some(0x8086), Some(5), "irdma0"), "vendor 0x8086 part 5");
        assert_eq!(ca_type(None, None, "x"), "unknown");
        assert!(native_ib_width_is_4x("ConnectX-6"));
        assert!(!native_ib_width_is_4x("Soft-RoCE (rxe)"));
    }
}
