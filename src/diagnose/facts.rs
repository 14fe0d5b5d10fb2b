//! Facts that word other rules' findings, gathered before any rule runs: firmware changes
//! waiting for a cold boot (they explain fewer devices than expected and an ACS finding) and
//! the stack that runs (OFED installed, the kernel's inbox modules loaded). The rules that
//! word `devices.count`, `pcie.acs` and `stack.distribution` read them from the sheet, so each
//! finding is worded right the first time; no rule rewrites another's findings afterwards.

use crate::probe::stack::ofed::{ModuleOrigin, OfedFacts};
use crate::probe::{Device, Inventory};

/// What the rules may add to their words; empty when not known (a bare inventory).
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    /// SR-IOV changes waiting for a cold boot: (the card's PCI address, `mlx5_0: NUM_OF_VFS 0 -> 16`).
    pub(crate) sriov_pending: Vec<(String, String)>,
    /// ATS changes waiting for a cold boot, in the same words.
    pub(crate) ats_pending: Vec<(String, String)>,
    /// The stack that runs where it is not the one installed (`stack.distribution`'s observed).
    pub(crate) running: Option<String>,
}

impl Facts {
    /// The facts of `inventory` (each adapter's firmware configuration) and of the installed stack.
    pub(crate) fn of(inventory: &Inventory, ofed: &OfedFacts) -> Facts {
        Facts {
            sriov_pending: pending_among(inventory, &["SRIOV_EN", "NUM_OF_VFS"]),
            ats_pending: pending_among(inventory, &["ATS_ENABLED"]),
            running: running(ofed),
        }
    }

    /// `devices.count`'s words when SR-IOV waits for a cold boot (the virtual functions are not
    /// there yet): the message with why, and the cold boot as the remedy.
    pub(crate) fn devices_count(&self, message: String, remedy: String) -> (String, String) {
        let Some((pci, _)) = self.sriov_pending.first() else { return (message, remedy) };
        let said: Vec<&str> = self.sriov_pending.iter().map(|(_, s)| s.as_str()).collect();
        (
            format!("{message}; SR-IOV changes wait for a cold boot ({}): the virtual functions appear only then", said.join("; ")),
            cold_boot_remedy(pci),
        )
    }

    /// `pcie.acs`'s message when ATS (which lets translated peer-to-peer requests through) waits
    /// for a cold boot.
    pub(crate) fn pcie_acs(&self, message: String) -> String {
        if self.ats_pending.is_empty() {
            return message;
        }
        let said: Vec<&str> = self.ats_pending.iter().map(|(_, s)| s.as_str()).collect();
        format!("{message}; an ATS change waits for a cold boot ({}): GPUDirect RDMA through an ACS-enabled switch relies on ATS", said.join("; "))
    }
}

pub(crate) fn pci_of(device: &Device) -> String {
    device.pci.as_ref().and_then(|p| p.address.clone()).unwrap_or_else(|| "<pci-address>".into())
}

pub(crate) fn cold_boot_remedy(pci: &str) -> String {
    format!(
        "power cycle the node (a cold reboot: power off, then on) or run `mlxfwreset -d {pci} reset` where the card supports it; \
         a warm reboot does not apply firmware configuration"
    )
}

/// The pending changes among `names` on each adapter, in words (`mlx5_0: NUM_OF_VFS 0 -> 16`).
fn pending_among(inventory: &Inventory, names: &[&str]) -> Vec<(String, String)> {
    inventory
        .devices
        .iter()
        .filter_map(|d| {
            let config = d.fw_config.as_ref()?;
            let changes: Vec<String> = config
                .iter()
                .filter(|(n, p)| names.contains(&n.as_str()) && p.pending())
                .map(|(n, p)| format!("{n} {} -> {}", p.current.as_ref().map_or("?", |v| v.label()), p.next_boot.as_ref().map_or("?", |v| v.label())))
                .collect();
            (!changes.is_empty()).then(|| (pci_of(d), format!("{}: {}", d.name, changes.join(", "))))
        })
        .collect()
}

/// With OFED installed but the kernel's inbox modules loaded, the stack that runs is the inbox
/// one (and `stack.ofed` says why).
fn running(facts: &OfedFacts) -> Option<String> {
    let installed = facts.installed.as_ref()?;
    let inbox: Vec<&str> =
        facts.modules.iter().filter(|m| m.on_disk.as_ref().is_some_and(|d| d.origin() == ModuleOrigin::Inbox)).map(|m| m.name.as_str()).collect();
    (!inbox.is_empty()).then(|| format!("the kernel's inbox {} ({installed} installed, not running)", inbox.join(", ")))
}
