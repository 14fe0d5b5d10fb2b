//! Product names from PCI/verbs vendor part ids, so a person sees "ConnectX-6", not "4123",
//! and the kind of adapter a name stands for ([`CaKind`]), so logic never compares the words.

/// IEEE OUI that mlx4/mlx5 report as `vendor_id` in `ibv_query_device`.
pub const MELLANOX_OUI: u32 = 0x02c9;
/// PCI vendor id of Mellanox/NVIDIA networking (sysfs `device/vendor`).
pub const MELLANOX_PCI_VENDOR: u32 = 0x15b3;
/// PCI vendor id of Broadcom (bnxt_re's `vendor_id` is the PCI one).
pub const BROADCOM_PCI_VENDOR: u32 = 0x14e4;
/// PCI vendor id of Amazon (AWS EFA; `ibv_query_device`'s `vendor_id` is the PCI one there).
pub const AMAZON_PCI_VENDOR: u32 = 0x1d0f;
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
    if let (Some(AMAZON_PCI_VENDOR), Some(part @ EFA_PARTS_FIRST..=EFA_PARTS_LAST)) = (vendor_id, part_id) {
        return format!("AWS EFA ({part:#x})");
    }
    let mellanox = matches!(vendor_id, Some(MELLANOX_OUI) | Some(MELLANOX_PCI_VENDOR));
    match (mellanox, part_id) {
        (true, Some(part)) => nvidia_part_name(part).map(str::to_string).unwrap_or_else(|| format!("NVIDIA/Mellanox part {part}")),
        (false, Some(part)) => format!("vendor {:#x} part {part}", vendor_id.unwrap_or(0)),
        (_, None) => "unknown".into(),
    }
}

/// Whether the device's RDMA driver puts RoCE on the DCB APP table's RoCE entry (UDP port 4791,
/// or RoCE v1's ethertype): Broadcom's bnxt_re (`bnxt_re_get_priority_mask`,
/// drivers/infiniband/hw/bnxt_re/main.c; it tags RoCE with that priority, and bnxt_en maps it to
/// the RoCE queue). mlx5 and irdma leave RoCE to its DSCP or VLAN tag.
pub fn roce_on_app_entry(name: &str, vendor_id: Option<u32>, driver: Option<&str>) -> bool {
    matches!(driver, Some("bnxt_en" | "bnxt_re")) || vendor_id == Some(BROADCOM_PCI_VENDOR) || name.starts_with("bnxt_re")
}

/// AWS Elastic Fabric Adapter part ids, the kernel's `efa_pci_tbl` (drivers/infiniband/hw/efa/
/// efa_main.c): `PCI_DEV_ID_EFA0_VF` 0xefa0 to `PCI_DEV_ID_EFA4_VF` 0xefa4 (amzn-drivers r3.3).
const EFA_PARTS_FIRST: u32 = 0xefa0;
const EFA_PARTS_LAST: u32 = 0xefa4;

/// Whether the adapter's driver has per-priority receive buffers to judge: the DCB buffer
/// interface (`dcbnl_getbuffer`), which among RDMA NICs only mlx5 implements
/// (drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c; mlxsw and netdevsim are the kernel's
/// others, no RDMA ports). ConnectX-3 (mlx4), Intel E810 (ice), Broadcom (bnxt_en) and Marvell
/// (qede) size the headroom a PFC priority needs in firmware. By the driver where it is known,
/// else by the adapter's name.
pub fn has_dcb_buffers(ca_type: &str, driver: Option<&str>) -> bool {
    match driver {
        Some(driver) => driver == "mlx5_ib",
        None => CaKind::of(ca_type) == CaKind::Nvidia && !ca_type.starts_with("ConnectX-3"),
    }
}

/// NVIDIA/Mellanox SR-IOV virtual function part ids: those the kernel's `mlx5_core_pci_table`
/// (drivers/net/ethernet/mellanox/mlx5/core/main.c) marks `MLX5_PCI_DEV_IS_VF`, and
/// `mlx4_pci_table`'s ConnectX-2 and ConnectX-3 VFs (`MLX4_PCI_DEV_IS_VF`). ConnectX-6 Dx and
/// later, and BlueField-2 and later, give their VFs the generic `0x101e`.
const NVIDIA_VF_PARTS: [u32; 10] = [0x1002, 0x1004, 0x1012, 0x1014, 0x1016, 0x1018, 0x101a, 0x101c, 0x101e, 0xa2d3];

/// Whether an NVIDIA/Mellanox part id is an SR-IOV virtual function's.
pub fn is_virtual_function(vendor_id: Option<u32>, part_id: Option<u32>) -> bool {
    matches!(vendor_id, Some(MELLANOX_OUI) | Some(MELLANOX_PCI_VENDOR)) && part_id.is_some_and(|p| NVIDIA_VF_PARTS.contains(&p))
}

/// What kind of adapter a [`ca_type`] name is: what the rules need to know of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaKind {
    /// Soft-RoCE (rxe) or Soft-iWARP (siw): a kernel software device, whose link rate is
    /// synthesised from its netdev and whose speed is CPU-bound.
    Software,
    /// An NVIDIA (Mellanox) adapter: ConnectX, Connect-IB, BlueField, or a part id this table
    /// does not name yet. Its firmware takes `mlxconfig`.
    Nvidia,
    /// An AWS Elastic Fabric Adapter: node type unspecified, SRD and UD queue pairs, no RC, no
    /// subnet manager (the port rules say so instead of judging LIDs).
    Efa,
    /// Another vendor's adapter, or one nothing is known of.
    Other,
}

impl CaKind {
    /// The kind of a name [`ca_type`] made (on this node, or on an agent of any version: the
    /// words have not changed). The one place that reads them.
    pub fn of(ca_type: &str) -> CaKind {
        const NVIDIA: [&str; 4] = ["ConnectX", "Connect-IB", "BlueField", "NVIDIA/Mellanox part "];
        if ca_type.starts_with("Soft-RoCE") || ca_type.starts_with("Soft-iWARP") {
            CaKind::Software
        } else if NVIDIA.iter().any(|prefix| ca_type.starts_with(prefix)) {
            CaKind::Nvidia
        } else if ca_type.starts_with("AWS EFA") {
            CaKind::Efa
        } else {
            CaKind::Other
        }
    }

    pub fn is_software(self) -> bool {
        self == CaKind::Software
    }
}

/// Whether this adapter's InfiniBand ports are normally 4X (so 1X means degraded). Every
/// InfiniBand HCA there is trains 4X (ConnectX, Connect-IB and BlueField; QLogic's qib and
/// Omni-Path's hfi1 too), split ports 2X: so is an adapter this table does not know, or a new
/// part id would silently switch the 1X check off. Only a software device is not judged.
pub fn native_ib_width_is_4x(ca_type: &str) -> bool {
    !CaKind::of(ca_type).is_software()
}

/// PCI device ids (= verbs `vendor_part_id`) of mlx4 and mlx5 adapters. The mlx5 ids are the
/// kernel's `mlx5_core_pci_table` (drivers/net/ethernet/mellanox/mlx5/core/main.c), checked
/// one by one; virtual functions of ConnectX-6 Dx and later, and of every BlueField, show the
/// generic `0x101e`. The mlx4 ids are `mlx4_pci_table`'s (ConnectX-3).
fn nvidia_part_name(part: u32) -> Option<&'static str> {
    Some(match part {
        0x1003 => "ConnectX-3",
        0x1004 => "ConnectX-3 VF",
        0x1007 => "ConnectX-3 Pro",
        0x1011 => "Connect-IB",
        0x1012 => "Connect-IB VF",
        0x1013 => "ConnectX-4",
        0x1014 => "ConnectX-4 VF",
        0x1015 => "ConnectX-4 Lx",
        0x1016 => "ConnectX-4 Lx VF",
        0x1017 => "ConnectX-5",
        0x1018 => "ConnectX-5 VF",
        0x1019 => "ConnectX-5 Ex",
        0x101a => "ConnectX-5 Ex VF",
        0x101b => "ConnectX-6",
        0x101c => "ConnectX-6 VF",
        0x101d => "ConnectX-6 Dx",
        0x101e => "ConnectX VF",
        0x101f => "ConnectX-6 Lx",
        0x1021 => "ConnectX-7",
        0x1023 => "ConnectX-8",
        0x1025 => "ConnectX-9",
        0x1027 => "ConnectX-10",
        0xa2d2 => "BlueField",
        0xa2d3 => "BlueField VF",
        0xa2d6 => "BlueField-2",
        0xa2dc => "BlueField-3",
        0xa2df => "BlueField-4",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVIDIA's VF part ids, as mlx5's PCI table marks them; a PF, another vendor or no id is not.
    #[test]
    fn virtual_functions_by_part_id() {
        for part in [0x1004, 0x1012, 0x1014, 0x1016, 0x1018, 0x101a, 0x101c, 0x101e, 0xa2d3] {
            assert!(is_virtual_function(Some(MELLANOX_PCI_VENDOR), Some(part)), "{part:#x}");
            assert!(nvidia_part_name(part).is_some_and(|n| n.ends_with(" VF")), "{part:#x} is named as a VF");
        }
        for part in [0x1021, 0x101d, 0xa2dc] {
            assert!(!is_virtual_function(Some(MELLANOX_OUI), Some(part)), "{part:#x}");
        }
        assert!(!is_virtual_function(Some(0x14e4), Some(0x101e)));
        assert!(!is_virtual_function(Some(MELLANOX_PCI_VENDOR), None));
    }

    #[test]
    fn names() {
        assert_eq!(ca_type(Some(MELLANOX_OUI), Some(4123), "mlx5_0"), "ConnectX-6");
        assert_eq!(ca_type(Some(MELLANOX_PCI_VENDOR), Some(4129), "mlx5_0"), "ConnectX-7");
        assert_eq!(ca_type(Some(MELLANOX_OUI), Some(41686), "mlx5_2"), "BlueField-2");
        assert_eq!(ca_type(Some(RXE_VENDOR), Some(0), "rxe0"), "Soft-RoCE (rxe)");
        assert_eq!(ca_type(Some(MELLANOX_OUI), Some(9999), "mlx5_0"), "NVIDIA/Mellanox part 9999");
        assert_eq!(ca_type(Some(0x8086), Some(5), "irdma0"), "vendor 0x8086 part 5");
        assert_eq!(ca_type(None, None, "x"), "unknown");
        // A p4d's EFA (efa_query_device: vendor_id and vendor_part_id are the PCI ids).
        assert_eq!(ca_type(Some(AMAZON_PCI_VENDOR), Some(0xefa1), "rdmap16s27"), "AWS EFA (0xefa1)");
        assert_eq!(CaKind::of(&ca_type(Some(AMAZON_PCI_VENDOR), Some(0xefa0), "efa_0")), CaKind::Efa);
        assert!(has_dcb_buffers("ConnectX-7", None) && has_dcb_buffers("vendor 0x8086 part 5522", Some("mlx5_ib")));
        assert!(
            !has_dcb_buffers("ConnectX-3 Pro", None)
                && !has_dcb_buffers("ConnectX-7", Some("ice"))
                && !has_dcb_buffers("vendor 0x14e4 part 5968", None)
        );
        assert_eq!(ca_type(Some(AMAZON_PCI_VENDOR), Some(0xec20), "x"), "vendor 0x1d0f part 60448", "ENA is no RDMA device");
        assert!(native_ib_width_is_4x("ConnectX-6"));
        assert!(!native_ib_width_is_4x("Soft-RoCE (rxe)"));
    }

    /// The names of `mlx5_core_pci_table`'s ids, the newest included; ids that table does not
    /// have (0xa2d7, 0xa2dd were once listed here as BlueField VFs) are no product.
    #[test]
    fn mlx5_core_ids() {
        let name = |part| ca_type(Some(MELLANOX_PCI_VENDOR), Some(part), "mlx5_0");
        for (part, want) in [
            (0x1012, "Connect-IB VF"),
            (0x101c, "ConnectX-6 VF"),
            (0x101e, "ConnectX VF"),
            (0x1023, "ConnectX-8"),
            (0x1025, "ConnectX-9"),
            (0x1027, "ConnectX-10"),
            (0xa2dc, "BlueField-3"),
            (0xa2df, "BlueField-4"),
        ] {
            assert_eq!(name(part), want, "{part:#x}");
        }
        assert_eq!(name(0xa2d7), "NVIDIA/Mellanox part 41687");
        assert_eq!(name(0xa2dd), "NVIDIA/Mellanox part 41693");
    }

    /// An adapter the table does not name is still judged at 1X on InfiniBand: a new part id
    /// must not silently switch the lane check off.
    #[test]
    fn an_unknown_adapter_keeps_the_1x_check() {
        for name in [ca_type(Some(MELLANOX_OUI), Some(0x1029), "mlx5_0"), ca_type(Some(0x1077), Some(7), "qib0"), "unknown".to_string()] {
            assert!(native_ib_width_is_4x(&name), "{name}");
        }
        assert!(!native_ib_width_is_4x("Soft-iWARP (siw)"));
    }

    #[test]
    fn kinds() {
        assert_eq!(CaKind::of("Soft-RoCE (rxe)"), CaKind::Software);
        assert_eq!(CaKind::of("Soft-iWARP (siw)"), CaKind::Software);
        for nvidia in ["ConnectX-7", "Connect-IB", "BlueField-3", "NVIDIA/Mellanox part 4137"] {
            assert_eq!(CaKind::of(nvidia), CaKind::Nvidia, "{nvidia}");
        }
        assert_eq!(CaKind::of("vendor 0x8086 part 5"), CaKind::Other);
        assert_eq!(CaKind::of("MT4123"), CaKind::Other);
    }
}
