//! Rules over the node as a whole: device count, firmware, PCIe placement.

use super::unreadable::{why, Unread};
use super::{Input, Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::catype;
use std::collections::BTreeMap;

use super::pci_link_rules::PCI_FILES;

pub(super) fn run(input: &Input<'_>, unread: &Unread, sheet: &mut Sheet) {
    let inv = input.inventory;
    pcie_bound(input, unread, sheet);
    mtu_consistency(input, sheet);
    // Files that exist but could not be read: said first, so nothing read from them is misread.
    for u in &inv.unreadable {
        sheet.note(
            FindingId::SysfsUnreadable,
            unreadable_subject(&u.path),
            Severity::Error,
            format!("{}: what it holds is unknown, and checks that need it cannot be trusted", u.error),
            "run fabcheck as root, or fix the file's permissions; for a captured bundle, capture it again as root \
             (`fabcheck bundle DIR`), copying files rather than links",
        );
    }
    devices_count(input, sheet);

    // Firmware: as the user expects, and the same across devices of one type.
    let mut by_type: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for d in &inv.devices {
        if !input.scope.device(&d.name) {
            continue;
        }
        // An unreadable fw_ver is not a version: not judged, not compared.
        if let Some(file) = unread.device(&d.name, &["fw_ver"]) {
            sheet.skip(FindingId::DeviceFw, &d.name, why(file));
            continue;
        }
        // An empty fw_ver (Soft-RoCE has no firmware) is no version to compare or pass.
        if d.fw_ver.trim().is_empty() {
            // A software device has no firmware; an AWS EFA's driver gives the kernel no
            // firmware string (efa_dev_ops has no get_dev_fw_str), so its sysfs fw_ver is empty.
            let who = if catype::CaKind::of(&d.ca_type).is_software() { "a software device has none" } else { "its driver gives none" };
            sheet.skip(FindingId::DeviceFw, &d.name, format!("{} reports no firmware version (fw_ver is empty: {who})", d.name));
            continue;
        }
        by_type.entry(d.ca_type.as_str()).or_default().push((d.name.as_str(), d.fw_ver.as_str()));
        if let Some(want) = &input.expect.fw {
            if &d.fw_ver != want {
                sheet.fail(
                    FindingId::DeviceFw,
                    &d.name,
                    d.fw_ver.clone(),
                    Some(want.clone()),
                    Severity::Error,
                    format!("{} runs firmware {}, {} expected", d.name, d.fw_ver, want),
                    "update with mlxfwmanager --online -u (or flint -d <pci> -i <image> burn), then mlxfwreset or a cold reboot",
                );
            } else {
                sheet.pass(FindingId::DeviceFw, &d.name, d.fw_ver.clone(), Some(want.clone()));
            }
        }
    }
    if input.expect.fw.is_none() {
        for (ca_type, devices) in &by_type {
            let mut versions: Vec<&str> = devices.iter().map(|(_, fw)| *fw).collect();
            versions.sort_unstable();
            versions.dedup();
            let subject = devices.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(",");
            if versions.len() > 1 {
                let listing = devices.iter().map(|(n, fw)| format!("{n}={fw}")).collect::<Vec<_>>().join(" ");
                sheet.fail(
                    FindingId::DeviceFw,
                    &subject,
                    listing.clone(),
                    Some("one version per adapter type".into()),
                    Severity::Error,
                    format!("{ca_type} adapters on this node run different firmware: {listing}"),
                    "bring them to one version with mlxfwmanager --online -u, then a cold reboot; mixed firmware \
                     causes subtle interop and performance differences",
                );
            } else {
                sheet.pass(FindingId::DeviceFw, &subject, versions.first().copied().unwrap_or("").to_string(), None);
            }
        }
    }

    // PCIe: a x16 card trained at x8 (or Gen3 instead of Gen4) caps bandwidth below line rate.
    super::pci_link_rules::run(input, unread, sheet);
}

/// How many RDMA devices the node has, against `--expect devices=N`; and a node that cannot say
/// (a live node where none can be listed, a device directory that cannot be listed, a device
/// with no port that can be read) fails here rather than passing with "0".
fn devices_count(input: &Input<'_>, sheet: &mut Sheet) {
    let inv = input.inventory;
    let count = inv.devices.len();
    let observed = count.to_string();
    let expected = input.expect.devices.map(|n| n.to_string());
    let unlistable = inv.unreadable.iter().find(|u| u.path.ends_with("class/infiniband"));
    let portless: Vec<&str> = inv.devices.iter().filter(|d| d.ports.is_empty()).map(|d| d.name.as_str()).collect();
    let (message, remedy) = if let Some(u) = unlistable {
        (
            format!("the RDMA devices cannot be listed: {}", u.error),
            "run fabcheck as root, or fix the permissions of class/infiniband; for a bundle, capture it again as root \
             (`fabcheck bundle DIR`)"
                .to_string(),
        )
    } else if count == 0 && input.host.is_some() {
        let no_rdma_core = input.host.is_some_and(|h| matches!(h.libibverbs, crate::probe::host::LibraryState::Missing(_)));
        if no_rdma_core {
            ("no RDMA devices can be listed: rdma-core (libibverbs) is not installed".to_string(), fabcheck_verbs::INSTALL_HINT.to_string())
        } else {
            ("no RDMA devices found".to_string(), crate::probe::ProbeError::NoDevices.remedy())
        }
    } else if !portless.is_empty() {
        (
            format!("{} has no port that can be read: the device is there but nothing about it can be checked", portless.join(", ")),
            "see the sysfs.unreadable findings; check dmesg for the driver's errors (mlx5_core) and reload it, or capture the \
             bundle again as root"
                .to_string(),
        )
    } else {
        match input.expect.devices {
            Some(want) if count != want => (
                format!("{count} RDMA devices present, {want} expected"),
                "a missing adapter: check `lspci -d 15b3:`, dmesg for mlx5_core errors, and that SR-IOV or a firmware \
                 update did not rename or hide functions"
                    .to_string(),
            ),
            _ => return sheet.pass(FindingId::DevicesCount, "node", observed, expected),
        }
    };
    // SR-IOV waiting for a cold boot explains fewer devices: the virtual functions appear then.
    let (message, remedy) = sheet.facts.devices_count(message, remedy);
    sheet.fail(FindingId::DevicesCount, "node", observed, expected, Severity::Error, message, remedy);
}

/// The device (and port) an unreadable sysfs path belongs to, else `node`.
fn unreadable_subject(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    let Some(i) = parts.iter().position(|p| *p == "infiniband") else { return "node".into() };
    match (parts.get(i + 1), parts.get(i + 2), parts.get(i + 3)) {
        (Some(dev), Some(&"ports"), Some(port)) if port.parse::<u32>().is_ok() => format!("{dev}/{port}"),
        (Some(dev), _, _) if !dev.is_empty() => dev.to_string(),
        _ => "node".into(),
    }
}

/// The PCIe link behind an adapter cannot carry what its fastest port runs at: bandwidth tops
/// out at the PCIe figure (see `probe::capacity`).
fn pcie_bound(input: &Input<'_>, unread: &Unread, sheet: &mut Sheet) {
    for d in &input.inventory.devices {
        if !input.scope.device(&d.name) || unread.device(&d.name, &PCI_FILES).is_some() {
            continue;
        }
        let Some(pci) = &d.pci else { continue };
        // A link trained below what both its ends can do is `pci.link`'s error, the cause.
        if super::pci_link_rules::fault(pci) {
            continue;
        }
        let Some(usable) = pci.usable_gbps else { continue };
        let Some((port, rate)) = d.ports.iter().filter_map(|p| p.rate_gbps.map(|r| (p.port, r))).max_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        if usable < rate {
            sheet.fail(
                FindingId::PcieBound,
                &d.name,
                format!("{} Gb/s over PCIe", crate::units::rate(crate::units::round(usable, 0))),
                Some(format!(">= {} Gb/s (port {port})", crate::units::rate(rate))),
                Severity::Warning,
                format!(
                    "port {port} runs at {} Gb/s but the PCIe link ({} x{}) carries about {} Gb/s: bandwidth tops out there, \
                     and `pair` judges against the PCIe figure",
                    crate::units::rate(rate),
                    pci.current_speed.as_deref().unwrap_or("?"),
                    pci.current_width.unwrap_or(0),
                    crate::units::rate(crate::units::round(usable, 0)),
                ),
                "seat the adapter in a slot that can feed it (NDR 400 needs PCIe Gen5 x16); if the slot is capable, see \
                 `pci.link` for a link trained below it",
            );
        }
    }
}

/// Ports of one node at different active MTUs (unless `--expect mtu` judges each): jobs that
/// span them run at the smaller, and a mismatch is usually one port left at the default.
fn mtu_consistency(input: &Input<'_>, sheet: &mut Sheet) {
    if input.expect.mtu.is_some() {
        return;
    }
    let physical = input.inventory.has_physical_function();
    let mtus: Vec<(String, u32)> = input
        .inventory
        .ports()
        .filter(|(d, p)| input.scope.port(&d.name, p.port))
        // A virtual function's MTU beside its physical functions is its user's (a pod's, a VM's).
        .filter(|(d, _)| !(d.virtual_function && physical))
        .filter(|(_, p)| p.state == crate::port::PortState::Active)
        .filter_map(|(d, p)| p.active_mtu.map(|m| (format!("{}/{}", d.name, p.port), m)))
        .collect();
    let Some(&top) = mtus.iter().map(|(_, m)| m).max() else { return };
    let largest: Vec<&str> = mtus.iter().filter(|(_, m)| *m == top).map(|(s, _)| s.as_str()).collect();
    for (subject, mtu) in mtus.iter().filter(|(_, m)| *m < top) {
        sheet.fail(
            FindingId::PortMtu,
            subject,
            mtu.to_string(),
            Some(top.to_string()),
            Severity::Warning,
            format!("active MTU {mtu}, while {} runs {top}: jobs across these ports run at the smaller", largest.join(", ")),
            "set the same MTU on every port (RoCE: netdev MTU 9000 for an active MTU of 4096; InfiniBand: the partition's MTU in the SM)",
        );
    }
}

#[cfg(test)]
mod unreadable_tests {
    use super::unreadable_subject;

    #[test]
    fn subjects_of_unreadable_paths() {
        assert_eq!(unreadable_subject("/sys/class/infiniband/mlx5_0/ports/1/state"), "mlx5_0/1");
        assert_eq!(unreadable_subject("/b/class/infiniband/mlx5_3/fw_ver"), "mlx5_3");
        assert_eq!(unreadable_subject("/b/class/infiniband"), "node");
        assert_eq!(unreadable_subject("/b/class/net/eth0/speed"), "node");
    }
}
