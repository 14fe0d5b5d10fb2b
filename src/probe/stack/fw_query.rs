//! Where each NVIDIA/Mellanox adapter's firmware configuration comes from: live, a bounded
//! `mlxconfig -d BDF -e query` (or mstflint's `mstconfig`), reused within the boot
//! (`fw_cache`); in a bundle, `tools/mlxconfig/BDF.txt`. Never required: what could not be read
//! is said (`FwSummary`), and `check` reports it as "not read", never as a failure.

use super::fw_cache::FwCache;
use crate::probe::catype;
use crate::probe::firmware::{self, FwConfig};
use crate::probe::model::{Device, Inventory};
use crate::probe::tool::{find_program, valid_bdf};
use crate::probe::Source;
use std::path::Path;
use std::time::Duration;

/// A query runs for seconds; a wedged MST device must not hold `check` for long.
const QUERY_DEADLINE: Duration = Duration::from_secs(30);
/// Largest tool output read from a bundle.
const TOOL_OUTPUT_CAP: u64 = 1 << 20;

/// What could not be read, for `check` to say so.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FwSummary {
    /// Whether the source was looked at: a bundle without `tools/` is not (it predates them).
    pub looked: bool,
    /// Live: the tool that answered (`mlxconfig` or `mstconfig`); `None` when neither is installed.
    pub tool: Option<&'static str>,
    /// Devices whose configuration was not read, and why.
    pub unread: Vec<(String, FwUnread)>,
}

/// Why a device's firmware configuration was not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FwUnread {
    #[error("its PCI address is not in the bundle")]
    AddressNotInBundle,
    #[error("its PCI address is unknown")]
    AddressUnknown,
    #[error("tools/mlxconfig/{0} holds no configuration table")]
    NoTable(String),
    #[error("the bundle has no tools/mlxconfig/{0}")]
    NotInBundle(String),
    #[error("{0}")]
    Read(#[from] crate::sys::fs::ReadError),
    #[error("neither mlxconfig nor mstconfig is installed")]
    NoTool,
    #[error("`{tool} -d {bdf} -e query` did not answer within {seconds} s")]
    NoAnswer { tool: &'static str, bdf: String, seconds: u64 },
    #[error("`{tool} -d {bdf} -e query` printed {said} (it needs root)")]
    Refused { tool: &'static str, bdf: String, said: String },
}

/// The adapters a firmware query applies to: NVIDIA/Mellanox physical functions.
pub fn queried(device: &Device) -> bool {
    let mellanox =
        device.vendor_id == Some(catype::MELLANOX_OUI) || device.ca_type.starts_with("ConnectX") || device.ca_type.starts_with("BlueField");
    mellanox && !device.ca_type.ends_with(" VF")
}

/// Fills `fw_config` of every adapter from `source`.
pub fn attach(inventory: &mut Inventory, source: &Source) -> FwSummary {
    match source {
        Source::Live => attach_live(inventory),
        Source::Sysfs(root) => attach_bundle(inventory, root),
    }
}

fn attach_bundle(inventory: &mut Inventory, root: &Path) -> FwSummary {
    if !root.join("tools").is_dir() {
        return FwSummary::default();
    }
    let mut summary = FwSummary { looked: true, tool: None, unread: Vec::new() };
    // Inside the bundle only (`sys::beneath`): a capture that links out of it is refused.
    let bundle = crate::sys::beneath::Tree::new(root.to_path_buf());
    let rel = Path::new("tools/mlxconfig");
    let files: Vec<String> = bundle
        .list_dir(rel)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter(|n| n.strip_suffix(".txt").is_some_and(valid_bdf))
        .collect();
    for device in inventory.devices.iter_mut().filter(|d| queried(d)) {
        let address = device.pci.as_ref().and_then(|p| p.address.clone()).filter(|a| valid_bdf(a));
        // A tree without the PCI links does not say where a device sits: one capture, one card.
        let file = match address {
            // Both functions of a card hold its configuration: a capture of one serves the other.
            Some(bdf) if !files.contains(&format!("{bdf}.txt")) => {
                files.iter().find(|f| f.starts_with(&bdf[..10])).cloned().unwrap_or_else(|| format!("{bdf}.txt"))
            }
            Some(bdf) => format!("{bdf}.txt"),
            None if files.len() == 1 => files[0].clone(),
            None => {
                summary.unread.push((device.name.clone(), FwUnread::AddressNotInBundle));
                continue;
            }
        };
        match bundle.read_text(&rel.join(&file), TOOL_OUTPUT_CAP) {
            Ok(text) => match firmware::parse_query(&text) {
                Some(all) => device.fw_config = Some(firmware::reported(&all)),
                None => summary.unread.push((device.name.clone(), FwUnread::NoTable(file.clone()))),
            },
            Err(e) if e.is_not_found() => summary.unread.push((device.name.clone(), FwUnread::NotInBundle(file.clone()))),
            Err(e) => summary.unread.push((device.name.clone(), FwUnread::Read(e))),
        }
    }
    summary
}

fn attach_live(inventory: &mut Inventory) -> FwSummary {
    let tool = ["mlxconfig", "mstconfig"].into_iter().find_map(|name| find_program(name).map(|path| (name, path)));
    let mut summary = FwSummary { looked: true, tool: tool.as_ref().map(|(name, _)| *name), unread: Vec::new() };
    if !inventory.devices.iter().any(queried) {
        return summary;
    }
    let cache = FwCache::live();
    // Both functions of a dual-port card hold the same configuration: one query per card.
    let mut by_card: Vec<(String, Result<FwConfig, FwUnread>)> = Vec::new();
    for device in inventory.devices.iter_mut().filter(|d| queried(d)) {
        let Some(bdf) = device.pci.as_ref().and_then(|p| p.address.clone()).filter(|a| valid_bdf(a)) else {
            summary.unread.push((device.name.clone(), FwUnread::AddressUnknown));
            continue;
        };
        let card = bdf[..10].to_string();
        let result = match by_card.iter().find(|(c, _)| *c == card) {
            Some((_, known)) => known.clone(),
            None => {
                let found = query(&bdf, tool.as_ref(), cache.as_ref());
                by_card.push((card, found.clone()));
                found
            }
        };
        match result {
            Ok(config) => device.fw_config = Some(firmware::reported(&config)),
            Err(why) => summary.unread.push((device.name.clone(), why)),
        }
    }
    summary
}

/// One card's table: from this boot's cache, else from the tool.
fn query(bdf: &str, tool: Option<&(&'static str, std::path::PathBuf)>, cache: Option<&FwCache>) -> Result<FwConfig, FwUnread> {
    if let Some((_, output)) = cache.and_then(|c| c.get(bdf)) {
        if let Some(config) = firmware::parse_query(&output) {
            return Ok(config);
        }
    }
    let Some((tool, program)) = tool else { return Err(FwUnread::NoTool) };
    let output =
        crate::probe::host::command_output_capped(&program.to_string_lossy(), &["-d", bdf, "-e", "query"], QUERY_DEADLINE, TOOL_OUTPUT_CAP as usize)
            .ok_or_else(|| FwUnread::NoAnswer { tool, bdf: bdf.to_string(), seconds: QUERY_DEADLINE.as_secs() })?;
    let config = firmware::parse_query(&output).ok_or_else(|| {
        let said = output.lines().find(|l| l.contains("-E-")).map(str::trim).unwrap_or("no configuration table");
        FwUnread::Refused { tool, bdf: bdf.to_string(), said: said.to_string() }
    })?;
    if let Some(cache) = cache {
        cache.put(bdf, tool, &output);
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending_fixture() -> (Inventory, std::path::PathBuf) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cx7-link-type-pending");
        (crate::probe::inventory(&Source::Sysfs(root.clone()), None).unwrap(), root)
    }

    #[test]
    fn a_bundle_file_is_found_by_address_by_card_or_as_the_only_one() {
        let (mut inv, root) = pending_fixture();
        assert_eq!(inv.devices[0].pci.as_ref().unwrap().address.as_deref(), Some("0000:17:00.0"));
        let summary = attach_bundle(&mut inv, &root);
        assert_eq!(summary.unread, vec![]);
        assert!(inv.devices[0].fw_config.as_ref().unwrap()["LINK_TYPE_P1"].pending());
        // The other function of the same card.
        let (mut inv, root) = pending_fixture();
        inv.devices[0].pci.as_mut().unwrap().address = Some("0000:17:00.1".into());
        attach_bundle(&mut inv, &root);
        assert!(inv.devices[0].fw_config.is_some());
        // No address, one capture: that one.
        let (mut inv, root) = pending_fixture();
        inv.devices[0].pci.as_mut().unwrap().address = None;
        attach_bundle(&mut inv, &root);
        assert!(inv.devices[0].fw_config.is_some());
        // Another card: not read, and said.
        let (mut inv, root) = pending_fixture();
        inv.devices[0].pci.as_mut().unwrap().address = Some("0000:b1:00.0".into());
        let summary = attach_bundle(&mut inv, &root);
        assert!(inv.devices[0].fw_config.is_none());
        assert_eq!(summary.unread, vec![("mlx5_0".to_string(), FwUnread::NotInBundle("0000:b1:00.0.txt".into()))]);
        assert_eq!(summary.unread[0].1.to_string(), "the bundle has no tools/mlxconfig/0000:b1:00.0.txt");
    }

    #[test]
    fn pci_addresses() {
        assert!(valid_bdf("0000:17:00.0"));
        assert!(valid_bdf("0000:af:00.1"));
        for bad in ["", "0000:17:00", "0000:17:00.8", "../../etc/x.", "0000:17:00.0;rm", "-d 0000:17:0"] {
            assert!(!valid_bdf(bad), "{bad}");
        }
    }
}
