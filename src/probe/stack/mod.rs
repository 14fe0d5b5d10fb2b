//! The seed's driver stack as read, live or from a bundle: firmware configuration (attached to
//! the inventory's devices), OFED vs inbox modules, the stack's systemd units, IPoIB. I/O only;
//! the parsers are in `firmware`, `ofed`, `services`, `ipoib`, the judgement in
//! `diagnose::driver_rules`.
//!
//! Live, every tool is a bounded child (deadline, output cap) and optional: a missing tool
//! leaves its part unread, and `check` says so. In a bundle the same outputs are files
//! (`tools/ofed_info.txt`, `tools/modinfo/MODULE.txt`, `tools/systemctl/UNIT.txt`,
//! `tools/mlxconfig/BDF.txt`, what `fabcheck bundle` saves); a bundle without `tools/`
//! predates them and is judged as before.

/// The firmware table's parser, below the inventory that holds its values (kept here by its old path).
pub use super::firmware;
pub mod fw_cache;
pub mod fw_query;
pub mod ipoib;
pub mod ofed;
pub mod services;

use crate::port::{LinkLayer, PortState};
use crate::probe::model::Inventory;
use crate::probe::Source;
use crate::sys::fs::{read_text, SYSFS_CAP};
use fw_query::FwSummary;
use ipoib::{IpoibMode, IpoibState};
use ofed::{LoadedModule, ModuleState, OfedFacts};
use services::UnitStatus;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TOOL_DEADLINE: Duration = Duration::from_secs(5);
const TOOL_OUTPUT_CAP: u64 = 1 << 20;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackFacts {
    /// Whether the tools' outputs were looked at: false for a bundle without `tools/`.
    pub looked: bool,
    pub live: bool,
    pub firmware: FwSummary,
    pub ofed: OfedFacts,
    /// Installed units only.
    pub services: Vec<UnitStatus>,
    /// Whether the units could be read at all (systemd runs, or the bundle holds `tools/systemctl/`).
    pub services_read: bool,
    pub ipoib: Vec<IpoibState>,
}

/// Reads everything, and fills the inventory's `fw_config`.
pub fn gather(inventory: &mut Inventory, source: &Source) -> StackFacts {
    let firmware = fw_query::attach(inventory, source);
    match source {
        Source::Live => {
            let sys = Path::new("/sys");
            let mut facts = StackFacts { looked: true, live: true, firmware, ..StackFacts::default() };
            facts.ofed = OfedFacts {
                installed: run("ofed_info", &["-s"]).as_deref().and_then(ofed::parse_ofed_info_s),
                kernel: read_text(Path::new("/proc/sys/kernel/osrelease"), 4096).ok().map(|s| s.trim().to_string()),
                modules: ofed::JUDGED
                    .iter()
                    .map(|m| ModuleState {
                        name: m.to_string(),
                        on_disk: run("modinfo", &[m]).as_deref().and_then(ofed::parse_modinfo),
                        loaded: loaded(sys, m),
                    })
                    .collect(),
            };
            facts.services_read = Path::new("/run/systemd/system").is_dir() && crate::probe::tool::find_program("systemctl").is_some();
            if facts.services_read {
                // Debian's per-port OpenSM instances (`opensm@0xGUID`) beside the fixed units.
                let instances = run("systemctl", &["list-units", "--all", "--plain", "--no-legend", "--full", "opensm@*"])
                    .map(|out| services::parse_instances(&out))
                    .unwrap_or_default();
                facts.services = services::UNITS
                    .iter()
                    .map(|u| u.to_string())
                    .chain(instances)
                    .filter_map(|u| {
                        let out = run("systemctl", &["show", &u, "-p", "LoadState,ActiveState,SubState,UnitFileState"])?;
                        services::parse_show(&u, &out)
                    })
                    .collect();
            }
            facts.ipoib = ipoib_states(inventory, sys, |netdev| {
                Some(crate::sys::io::interface_addresses(netdev).into_iter().filter(|a| !is_link_local(a)).map(|a| a.to_string()).collect())
            });
            facts
        }
        Source::Sysfs(root) => {
            let tools = root.join("tools");
            if !tools.is_dir() {
                // Before tools/: only what sysfs holds (IPoIB interfaces, their addresses unknown).
                return StackFacts { firmware, ipoib: ipoib_states(inventory, root, |_| None), ..StackFacts::default() };
            }
            // Inside the bundle only (`sys::beneath`): a saved output that links out is not read.
            let bundle = crate::sys::beneath::Tree::new(root.clone());
            let text = |rel: &str| bundle.read_text(&Path::new("tools").join(rel), TOOL_OUTPUT_CAP).ok();
            let modules = ofed::JUDGED
                .iter()
                .map(|m| ModuleState {
                    name: m.to_string(),
                    on_disk: text(&format!("modinfo/{m}.txt")).as_deref().and_then(ofed::parse_modinfo),
                    loaded: loaded(root, m),
                })
                .collect::<Vec<_>>();
            // modinfo looks in the running kernel's tree: its path names that kernel.
            let kernel = text("uname-r.txt")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && s.len() < 128)
                .or_else(|| modules.iter().find_map(|m| m.on_disk.as_ref()?.tree_release().map(str::to_string)));
            let ofed = OfedFacts { installed: text("ofed_info.txt").as_deref().and_then(ofed::parse_ofed_info_s), kernel, modules };
            let services_read = tools.join("systemctl").is_dir();
            // The fixed units, then every saved `opensm@INSTANCE.txt` (Debian's per-port OpenSM).
            let mut instances: Vec<String> = bundle
                .list_dir(Path::new("tools/systemctl"))
                .unwrap_or_default()
                .into_iter()
                .filter_map(|n| n.into_string().ok()?.strip_suffix(".txt").map(str::to_string))
                .filter(|u| services::is_sm_unit(u) && u.starts_with(services::SM_TEMPLATE) && services::valid_unit_name(u))
                .collect();
            instances.sort();
            instances.truncate(16);
            let services = services::UNITS
                .iter()
                .map(|u| u.to_string())
                .chain(instances)
                .filter_map(|u| services::parse_show(&u, &text(&format!("systemctl/{u}.txt"))?))
                .collect();
            let ip = text("ip-addr.txt");
            let ipoib = ipoib_states(inventory, root, |netdev| ip.as_deref().map(|t| ipoib::addresses_in_ip_output(t, netdev)));
            StackFacts { looked: true, live: false, firmware, ofed, services, services_read, ipoib }
        }
    }
}

/// Runs a tool of the stack (no shell, a deadline, 64 KiB of output); `None` when it is not
/// installed or does not answer.
fn run(program: &str, args: &[&str]) -> Option<String> {
    let path: PathBuf = crate::probe::tool::find_program(program)?;
    crate::probe::host::command_output(&path.to_string_lossy(), args, TOOL_DEADLINE)
}

/// `ROOT/module/NAME/{version,srcversion}` of a loaded module; `None` when it is not loaded.
/// Read inside the tree only (`sys::beneath`): a bundle's attribute that links out is not read.
fn loaded(sys: &Path, module: &str) -> Option<LoadedModule> {
    let tree = crate::sys::beneath::Tree::new(sys);
    let dir = Path::new("module").join(module);
    if !tree.is_dir(&dir) {
        return None;
    }
    let attr = |name: &str| tree.read_text(&dir.join(name), SYSFS_CAP).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    Some(LoadedModule { version: attr("version"), srcversion: attr("srcversion") })
}

fn is_link_local(address: &std::net::IpAddr) -> bool {
    match address {
        std::net::IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
        std::net::IpAddr::V4(_) => false,
    }
}

/// The IPoIB interface of every ACTIVE InfiniBand port (a port that is not ACTIVE has its
/// own finding, and its interface is down because of it).
fn ipoib_states(inventory: &Inventory, sys: &Path, addresses: impl Fn(&str) -> Option<Vec<String>>) -> Vec<IpoibState> {
    // Inside the tree only (`sys::beneath`): a bundle's `class/net/ib0/mode` that links out of it
    // is not read (issue #58).
    let tree = crate::sys::beneath::Tree::new(sys.to_path_buf());
    inventory
        .ports()
        .filter(|(_, p)| p.link_layer == LinkLayer::InfiniBand && p.state == PortState::Active)
        .filter_map(|(d, p)| {
            let port = format!("{}/{}", d.name, p.port);
            let Some(state) = p.netdev_state.as_ref() else {
                // No IPoIB interface (ib_ipoib not loaded, or not created).
                return Some(IpoibState { port, netdev: String::new(), up: false, operstate: "absent".into(), mode: None, addresses: None });
            };
            if !crate::model::valid_device_name(&state.name) {
                return None;
            }
            let operstate = state.operstate.clone().unwrap_or_else(|| "unknown".into());
            let mode = tree.read_text(&Path::new("class/net").join(&state.name).join("mode"), SYSFS_CAP).ok().and_then(|m| IpoibMode::parse(&m));
            // "unknown" is what a driver that does not track the state shows; the carrier decides.
            let up = match operstate.as_str() {
                "up" => state.carrier != Some(false),
                "unknown" => state.carrier == Some(true),
                _ => false,
            };
            // The addresses of the interface, of its P_Key children and of a bond over it.
            let held: Option<Vec<Vec<String>>> = address_holders(&tree, &state.name).iter().map(|h| addresses(h)).collect();
            Some(IpoibState { port, netdev: state.name.clone(), up, operstate, mode, addresses: held.map(|v| v.concat()) })
        })
        .collect()
}

/// The interfaces whose addresses serve IPoIB interface `name`: itself, its P_Key children
/// (`ib0.8001`, as ipoib's `create_child` and the distributions' tools name them), and a bond
/// that it or a child is a leg of (IPoIB bonding is active-backup: the address is the bond's).
fn address_holders(tree: &crate::sys::beneath::Tree, name: &str) -> Vec<String> {
    let net = Path::new("class/net");
    let names: Vec<String> = tree.list_dir(net).unwrap_or_default().into_iter().take(4096).filter_map(|n| n.into_string().ok()).collect();
    let mut own: Vec<String> = vec![name.to_string()];
    own.extend(names.iter().filter(|n| n.strip_prefix(name).is_some_and(|rest| rest.starts_with('.'))).cloned());
    let bonds = crate::probe::bond::masters(tree).into_iter().filter(|(_, legs)| legs.iter().any(|leg| own.contains(leg)));
    let bonds: Vec<String> = bonds.map(|(bond, _)| bond).collect();
    own.extend(bonds);
    own
}
