//! The systemd units of the RDMA stack, as `systemctl show UNIT -p
//! LoadState,ActiveState,SubState,UnitFileState` prints them (`key=value` lines).
//!
//! Why the unit file state: a unit that runs now but is disabled is gone after the next
//! reboot (`openibd` of MLNX_OFED loads its modules; `rdma-ndd` writes the node descriptions
//! `fabric --rails` and `mesh --topology` read). Parsing is pure.

use serde::{Deserialize, Serialize};

/// Units looked at: MLNX_OFED's driver loader, the node-description daemon, RHEL 7's `rdma`,
/// and OpenSM (judged only where `--expect sm=local`) under each of its names: `opensm`
/// (rdma-core's, Debian's), `opensmd` (MLNX_OFED's, a SysV script `systemd-sysv-generator`
/// turns into a unit) and the instances of Debian's template `opensm@.service` (one per port,
/// `opensm@0xGUID`), which [`parse_instances`] finds.
pub const UNITS: [&str; 5] = ["openibd", "rdma-ndd", "rdma", "opensm", "opensmd"];

/// The template whose instances run one OpenSM per port.
pub const SM_TEMPLATE: &str = "opensm@";

/// Whether a unit is a subnet manager's: any of them running satisfies `--expect sm=local`.
pub fn is_sm_unit(unit: &str) -> bool {
    unit == "opensm" || unit == "opensmd" || unit.strip_prefix(SM_TEMPLATE).is_some_and(|i| !i.is_empty())
}

/// Whether `name` can be a unit's name to ask about and a bundle's file name: systemd's unit
/// name characters (letters, digits, `:_.-@\`), at most 128 of them, no `..`.
pub fn valid_unit_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && !name.contains("..") && name.bytes().all(|b| b.is_ascii_alphanumeric() || b":_.-@\\".contains(&b))
}

/// The `opensm@` instances in `systemctl list-units --all --plain --no-legend --full
/// 'opensm@*'` (`opensm@0x248a0703002d3a1c.service loaded active running OpenSM ...`), each
/// without its `.service`; the template itself and anything else is left out.
pub fn parse_instances(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .take(256)
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with(SM_TEMPLATE)))
        .filter_map(|w| w.strip_suffix(".service"))
        .filter(|u| is_sm_unit(u) && valid_unit_name(u))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out.truncate(16);
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActiveState {
    Active,
    Reloading,
    Inactive,
    Failed,
    Activating,
    Deactivating,
    Other(String),
}

/// Whether the unit starts at boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitFileState {
    Enabled,
    EnabledRuntime,
    /// No `[Install]` section: started by another unit or by udev (rdma-ndd), which is fine.
    Static,
    Indirect,
    Generated,
    Alias,
    Disabled,
    Masked,
    /// Any other, or empty (`systemctl` printed none).
    Other(String),
}

impl UnitFileState {
    fn parse(text: &str) -> UnitFileState {
        match text {
            "enabled" => UnitFileState::Enabled,
            "enabled-runtime" => UnitFileState::EnabledRuntime,
            "static" => UnitFileState::Static,
            "indirect" => UnitFileState::Indirect,
            "generated" => UnitFileState::Generated,
            "alias" => UnitFileState::Alias,
            "disabled" => UnitFileState::Disabled,
            "masked" | "masked-runtime" => UnitFileState::Masked,
            other => UnitFileState::Other(other.to_string()),
        }
    }

    /// Started at boot, by itself or by what depends on it.
    pub fn starts_at_boot(&self) -> bool {
        matches!(self, UnitFileState::Enabled | UnitFileState::Static | UnitFileState::Indirect | UnitFileState::Generated | UnitFileState::Alias)
    }

    pub fn name(&self) -> &str {
        match self {
            UnitFileState::Enabled => "enabled",
            UnitFileState::EnabledRuntime => "enabled-runtime",
            UnitFileState::Static => "static",
            UnitFileState::Indirect => "indirect",
            UnitFileState::Generated => "generated",
            UnitFileState::Alias => "alias",
            UnitFileState::Disabled => "disabled",
            UnitFileState::Masked => "masked",
            UnitFileState::Other(s) => s,
        }
    }
}

impl ActiveState {
    fn parse(text: &str) -> ActiveState {
        match text {
            "active" => ActiveState::Active,
            "reloading" => ActiveState::Reloading,
            "inactive" => ActiveState::Inactive,
            "failed" => ActiveState::Failed,
            "activating" => ActiveState::Activating,
            "deactivating" => ActiveState::Deactivating,
            other => ActiveState::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ActiveState::Active => "active",
            ActiveState::Reloading => "reloading",
            ActiveState::Inactive => "inactive",
            ActiveState::Failed => "failed",
            ActiveState::Activating => "activating",
            ActiveState::Deactivating => "deactivating",
            ActiveState::Other(s) => s,
        }
    }
}

/// One installed unit's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitStatus {
    pub unit: String,
    pub active: ActiveState,
    /// `running`, `exited`, `dead`, `failed`, ... as systemd says.
    pub sub: String,
    pub file: UnitFileState,
}

/// Reads `systemctl show`'s `key=value` lines; `None` for a unit that is not installed
/// (`LoadState=not-found`) or text that holds no state.
pub fn parse_show(unit: &str, text: &str) -> Option<UnitStatus> {
    let mut load = None;
    let mut active = None;
    let mut sub = String::new();
    let mut file = String::new();
    for line in text.lines().take(256) {
        let Some((key, value)) = line.trim().split_once('=') else { continue };
        let value = value.trim();
        if value.len() > 64 {
            continue;
        }
        match key {
            "LoadState" => load = Some(value.to_string()),
            "ActiveState" => active = Some(ActiveState::parse(value)),
            "SubState" => sub = value.to_string(),
            "UnitFileState" => file = value.to_string(),
            _ => {}
        }
    }
    if load.as_deref() == Some("not-found") {
        return None;
    }
    // Without LoadState (an older capture asked only for the three): an empty UnitFileState
    // and an inactive/dead unit is how systemd shows one it does not know.
    if load.is_none() && file.is_empty() && matches!(active, Some(ActiveState::Inactive)) && sub == "dead" {
        return None;
    }
    Some(UnitStatus { unit: unit.to_string(), active: active?, sub, file: UnitFileState::parse(&file) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_and_enabled() {
        let s = parse_show("openibd", "LoadState=loaded\nActiveState=active\nSubState=exited\nUnitFileState=enabled\n").unwrap();
        assert_eq!((s.active, s.sub.as_str(), s.file.clone()), (ActiveState::Active, "exited", UnitFileState::Enabled));
        assert!(s.file.starts_at_boot());
    }

    #[test]
    fn disabled_static_failed() {
        let d = parse_show("openibd", "ActiveState=active\nSubState=exited\nUnitFileState=disabled\nLoadState=loaded\n").unwrap();
        assert!(!d.file.starts_at_boot());
        let st = parse_show("rdma-ndd", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=static\n").unwrap();
        assert!(st.file.starts_at_boot());
        let f = parse_show("opensm", "LoadState=loaded\nActiveState=failed\nSubState=failed\nUnitFileState=enabled\n").unwrap();
        assert_eq!(f.active, ActiveState::Failed);
    }

    #[test]
    fn opensm_under_every_name() {
        for unit in ["opensm", "opensmd", "opensm@0x248a0703002d3a1c"] {
            assert!(is_sm_unit(unit), "{unit}");
        }
        for unit in ["opensm@", "openibd", "opensmd2"] {
            assert!(!is_sm_unit(unit), "{unit}");
        }
        // `systemctl list-units --all --plain --no-legend --full 'opensm@*'` on Debian 12.
        let listing = "opensm@0x248a0703002d3a1c.service loaded active   running OpenSM for port 0x248a0703002d3a1c\n\
                       opensm@0x248a0703002d3a1d.service loaded inactive dead    OpenSM for port 0x248a0703002d3a1d\n";
        assert_eq!(parse_instances(listing), vec!["opensm@0x248a0703002d3a1c", "opensm@0x248a0703002d3a1d"]);
        // A leading marker column (`●` of a failed unit) and junk are tolerated.
        assert_eq!(parse_instances("● opensm@0xab.service loaded failed failed OpenSM\nopensm@../../etc.service x\n"), vec!["opensm@0xab"]);
        assert_eq!(parse_instances("0 loaded units listed.\n"), Vec::<String>::new());
        assert!(!valid_unit_name("opensm@a/b") && valid_unit_name("opensm@0x1"));
    }

    #[test]
    fn not_installed_is_none() {
        assert_eq!(parse_show("rdma", "LoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\n"), None);
        assert_eq!(parse_show("rdma", "ActiveState=inactive\nSubState=dead\nUnitFileState=\n"), None);
        assert_eq!(parse_show("rdma", ""), None);
        assert_eq!(parse_show("rdma", "Failed to connect to bus: No such file or directory\n"), None);
    }
}
