//! Which driver stack actually runs: MLNX_OFED / DOCA-OFED installed (`ofed_info -s`), the
//! module file `modprobe` would load (`modinfo`: under `updates/` or `extra/` for OFED's DKMS
//! build, `kernel/drivers` for the kernel's inbox one; the kernel it was built for), and the
//! module in memory (`/sys/module/NAME/{version,srcversion}`).
//!
//! Why: "I installed OFED and nothing changed" is a kernel update after which DKMS did not
//! rebuild OFED's modules, so the inbox `mlx5_core` loads; or OFED installed but the old
//! module still in memory; or one OFED installed over an older one. Each looks healthy until
//! a feature or a fix that only OFED has is missing. Parsers are pure.

use serde::{Deserialize, Serialize};

/// The modules whose origin is judged.
pub const JUDGED: [&str; 2] = ["mlx5_core", "ib_core"];

/// What `modinfo NAME` says of the module file on disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModInfo {
    pub filename: Option<String>,
    /// OFED's modules carry one (`23.10-1.1.9`); inbox ones usually do not.
    pub version: Option<String>,
    pub srcversion: Option<String>,
    /// The kernel release it was built for (the first word of `vermagic`).
    pub built_for: Option<String>,
}

/// Where a module file comes from, by its place under `/lib/modules/RELEASE/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleOrigin {
    /// `kernel/...`: shipped with the kernel.
    Inbox,
    /// `updates/` (DKMS) or `extra/` (kmod packages): built outside the kernel, as OFED is.
    OutOfTree,
    /// `weak-updates/`: RHEL's link to a module built for another kernel of the same kABI.
    WeakUpdates,
    /// Built into the kernel image (`(builtin)`), or a path not under `/lib/modules`.
    Other,
}

impl ModInfo {
    pub fn origin(&self) -> ModuleOrigin {
        match self.release_and_rest().map(|(_, rest)| rest.split('/').next().unwrap_or("")) {
            Some("kernel") => ModuleOrigin::Inbox,
            Some("updates") | Some("extra") => ModuleOrigin::OutOfTree,
            Some("weak-updates") => ModuleOrigin::WeakUpdates,
            _ => ModuleOrigin::Other,
        }
    }

    /// The kernel release whose module tree holds the file: `modinfo` looks in the running
    /// kernel's tree, so in a bundle this is the running kernel.
    pub fn tree_release(&self) -> Option<&str> {
        self.release_and_rest().map(|(release, _)| release)
    }

    fn release_and_rest(&self) -> Option<(&str, &str)> {
        let file = self.filename.as_deref()?;
        let after = file.split_once("/lib/modules/")?.1;
        let (release, rest) = after.split_once('/')?;
        (!release.is_empty()).then_some((release, rest))
    }
}

/// Reads `modinfo NAME`'s `key: value` lines.
pub fn parse_modinfo(text: &str) -> Option<ModInfo> {
    let mut info = ModInfo::default();
    for line in text.lines().take(4096) {
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if value.is_empty() || value.len() > 512 {
            continue;
        }
        match key.trim() {
            "filename" => info.filename = Some(value.to_string()),
            "version" => info.version = Some(value.to_string()),
            "srcversion" => info.srcversion = Some(value.to_string()),
            "vermagic" => info.built_for = value.split_whitespace().next().map(str::to_string),
            _ => {}
        }
    }
    (info != ModInfo::default()).then_some(info)
}

/// The installed OFED from `ofed_info -s` (`MLNX_OFED_LINUX-23.10-1.1.9.0:`,
/// `OFED-internal-24.07-0.6.1:` for DOCA): the name as printed, without the colon.
pub fn parse_ofed_info_s(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    // `ofed_info` without `-s` starts `MLNX_OFED_LINUX-23.10-1.1.9.0 (OFED-23.10-1.1.9):`.
    let name = line.split_whitespace().next()?.trim_end_matches(':');
    let plausible = name.len() <= 128 && name.contains(|c: char| c.is_ascii_digit()) && name.chars().all(|c| c.is_ascii_graphic());
    plausible.then(|| name.to_string())
}

/// The version part of an OFED name (`MLNX_OFED_LINUX-23.10-1.1.9.0` -> `23.10-1.1.9.0`).
pub fn ofed_number(name: &str) -> &str {
    name.find(|c: char| c.is_ascii_digit()).map_or(name, |i| &name[i..])
}

/// Whether a module's `version` belongs to the installed OFED: OFED writes the release
/// without its last field into its modules (`23.10-1.1.9` for `23.10-1.1.9.0`).
pub fn same_release(ofed: &str, module_version: &str) -> bool {
    let ofed = ofed_number(ofed);
    !module_version.is_empty() && (ofed.starts_with(module_version) || module_version.starts_with(ofed))
}

/// The module in memory, from `/sys/module/NAME/`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadedModule {
    pub version: Option<String>,
    pub srcversion: Option<String>,
}

/// One judged module: on disk and in memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleState {
    pub name: String,
    /// `None` when `modinfo` was not read (not installed, not captured).
    pub on_disk: Option<ModInfo>,
    /// `None` when the module is not loaded.
    pub loaded: Option<LoadedModule>,
}

/// The driver stack's facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OfedFacts {
    /// `ofed_info -s`; `None` when OFED/DOCA is not installed.
    pub installed: Option<String>,
    /// The running kernel's release, when known.
    pub kernel: Option<String>,
    pub modules: Vec<ModuleState>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFED_DKMS: &str = "filename:       /lib/modules/5.15.0-91-generic/updates/dkms/mlx5_core.ko\n\
alias:          auxiliary:mlx5_core.eth\nversion:        23.10-1.1.9\nlicense:        Dual BSD/GPL\n\
description:    Mellanox 5th generation network adapters (ConnectX series) core driver\n\
srcversion:     8D5A3A8E1E2C3B4A5F60718\ndepends:        mlx_compat,mlxfw,mlxdevm,psample,tls,pci-hyperv-intf\n\
retpoline:      Y\nname:           mlx5_core\nvermagic:       5.15.0-91-generic SMP mod_unload modversions \n\
parm:           guids:charp\n";

    const INBOX_UBUNTU: &str = "filename:       /lib/modules/5.15.0-94-generic/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko\n\
license:        Dual BSD/GPL\ndescription:    Mellanox 5th generation network adapters (ConnectX series) core driver\n\
author:         Eli Cohen <eli@mellanox.com>\nsrcversion:     3F0C54BFD1A0E39B8B8D2B1\nalias:          pci:v000015B3d0000A2DCsv*sd*bc*sc*i*\n\
depends:        mlxfw,pci-hyperv-intf,psample,tls\nretpoline:      Y\nintree:         Y\nname:           mlx5_core\n\
vermagic:       5.15.0-94-generic SMP mod_unload modversions \nsig_id:         PKCS#7\nsigner:         Build time autogenerated kernel key\n";

    const INBOX_RHEL: &str = "filename:       /lib/modules/4.18.0-513.5.1.el8_9.x86_64/kernel/drivers/infiniband/core/ib_core.ko.xz\n\
license:        Dual BSD/GPL\nrhelversion:    8.9\nsrcversion:     0A1B2C3D4E5F60718293A4B\nintree:         Y\nname:           ib_core\n\
vermagic:       4.18.0-513.5.1.el8_9.x86_64 SMP mod_unload modversions \n";

    const WEAK_UPDATES: &str =
        "filename:       /lib/modules/4.18.0-553.el8_10.x86_64/weak-updates/mlnx-ofa_kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko\n\
version:        5.8-3.0.7\nsrcversion:     AAAAAAAAAAAAAAAAAAAAAAA\nvermagic:       4.18.0-513.5.1.el8_9.x86_64 SMP mod_unload modversions \n";

    #[test]
    fn an_ofed_dkms_module() {
        let m = parse_modinfo(OFED_DKMS).unwrap();
        assert_eq!(m.origin(), ModuleOrigin::OutOfTree);
        assert_eq!(m.version.as_deref(), Some("23.10-1.1.9"));
        assert_eq!(m.srcversion.as_deref(), Some("8D5A3A8E1E2C3B4A5F60718"));
        assert_eq!(m.built_for.as_deref(), Some("5.15.0-91-generic"));
        assert_eq!(m.tree_release(), Some("5.15.0-91-generic"));
    }

    #[test]
    fn inbox_modules_of_two_distributions() {
        let u = parse_modinfo(INBOX_UBUNTU).unwrap();
        assert_eq!((u.origin(), u.version.as_deref()), (ModuleOrigin::Inbox, None));
        let r = parse_modinfo(INBOX_RHEL).unwrap();
        assert_eq!(r.origin(), ModuleOrigin::Inbox);
        assert_eq!(r.built_for.as_deref(), Some("4.18.0-513.5.1.el8_9.x86_64"));
        let extra = parse_modinfo("filename: /lib/modules/6.1.0/extra/mlnx-ofa_kernel/mlx5_core.ko\n").unwrap();
        assert_eq!(extra.origin(), ModuleOrigin::OutOfTree);
    }

    #[test]
    fn weak_updates_built_for_another_kernel() {
        let w = parse_modinfo(WEAK_UPDATES).unwrap();
        assert_eq!(w.origin(), ModuleOrigin::WeakUpdates);
        assert_ne!(w.built_for.as_deref(), w.tree_release());
    }

    #[test]
    fn builtin_and_empty() {
        assert_eq!(parse_modinfo("filename:       (builtin)\nname: ib_core\n").unwrap().origin(), ModuleOrigin::Other);
        assert_eq!(parse_modinfo(""), None);
        assert_eq!(parse_modinfo("modinfo: ERROR: Module mlx5_core not found.\n"), None);
    }

    #[test]
    fn ofed_info_short() {
        assert_eq!(parse_ofed_info_s("MLNX_OFED_LINUX-23.10-1.1.9.0:\n").as_deref(), Some("MLNX_OFED_LINUX-23.10-1.1.9.0"));
        assert_eq!(parse_ofed_info_s("OFED-internal-24.07-0.6.1:\n").as_deref(), Some("OFED-internal-24.07-0.6.1"));
        assert_eq!(parse_ofed_info_s("MLNX_OFED_LINUX-5.8-3.0.7.0:"), Some("MLNX_OFED_LINUX-5.8-3.0.7.0".into()));
        assert_eq!(
            parse_ofed_info_s("MLNX_OFED_LINUX-23.10-1.1.9.0 (OFED-23.10-1.1.9):\n\nofed-scripts:\n").as_deref(),
            Some("MLNX_OFED_LINUX-23.10-1.1.9.0")
        );
        assert_eq!(parse_ofed_info_s(""), None);
        assert_eq!(parse_ofed_info_s("bash: ofed_info: command not found\n"), None);
    }

    #[test]
    fn releases_match_without_the_last_field() {
        assert!(same_release("MLNX_OFED_LINUX-23.10-1.1.9.0", "23.10-1.1.9"));
        assert!(same_release("OFED-internal-24.07-0.6.1", "24.07-0.6.1"));
        assert!(!same_release("MLNX_OFED_LINUX-23.10-1.1.9.0", "5.8-3.0.7"));
        assert!(!same_release("MLNX_OFED_LINUX-23.10-1.1.9.0", ""));
    }
}
