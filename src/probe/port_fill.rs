//! What each port of the inventory gains beyond sysfs and verbs, from the readers below it
//! (which know no inventory): the physical layer as `ethtool` says it (run live, or a bundle's
//! saved reports: link partner, FEC, error counters, the module; pure assembly in
//! [`crate::probe::phy::assemble`]), the QoS set-up of an Ethernet port's netdev (`qos::read`),
//! and what `mlxlink` adds where ethtool or the MADs left a BER unknown.

use super::model::{Inventory, Port};
use super::phy::ethtool_stats::parse_ethtool_stats;
use super::phy::fec::parse_show_fec;
use super::phy::mlxlink::{self, fill, parse_json};
use super::phy::module::parse_module_text;
use super::phy::module_hex;
use super::phy::partner::{ethernet_partner, parse_ethtool_modes};
use super::phy::{assemble, BerFigure, Phy};
use super::qos;
use super::stack::fw_query::queried;
use super::tool::{self, ToolError};
use super::tool::{find_program, valid_bdf};
use super::tree::{SysfsRoot, REPORT_CAP};
use super::Source;
use crate::port::LinkLayer;
use std::path::Path;
use std::time::Duration;

/// Time limit of one `ethtool` child (a module read goes over I2C: up to a second).
const TOOL_LIMIT: Duration = Duration::from_secs(3);

/// Where the reports come from: run the tool, or a bundle's saved file.
fn report(tree: &SysfsRoot, netdev: &str, file: &str, program_args: &[&[&str]]) -> Result<String, ToolError> {
    if !tree.is_live() {
        return tree.bundle_report(&format!("{netdev}.{file}")).ok_or(ToolError::Failed("not in the bundle".into()));
    }
    let mut last = Err(ToolError::NotInstalled);
    for args in program_args {
        last = tool::run("ethtool", args, TOOL_LIMIT, REPORT_CAP);
        if last.is_ok() || matches!(last, Err(ToolError::NotInstalled | ToolError::NotPermitted)) {
            break;
        }
    }
    last
}

/// Fills `partner` and `phy` of an Ethernet port from what `ethtool` says (live or saved), and
/// returns the `ethtool -S` report (the QoS reader takes its per-priority counters from it).
/// Over a bond, the leg a flow rides describes the port, and each other leg's physical layer
/// is read into the leg (`port.bond` judges it).
pub fn complete(tree: &SysfsRoot, port: &mut Port) -> Option<String> {
    if port.link_layer != LinkLayer::Ethernet {
        return None;
    }
    let usable = |n: &str| crate::model::valid_device_name(n) && (!tree.is_live() || crate::probe::tree::valid_tool_netdev(n));
    let netdev = port.tool_netdev().map(str::to_string).filter(|n| usable(n))?;
    let modes = tree.ethtool_report(&netdev).map(|r| parse_ethtool_modes(&r));
    if let Some(modes) = &modes {
        port.partner = Some(ethernet_partner(modes));
    }
    let (phy, stats_text) = read_phy(tree, &netdev, modes.as_ref().and_then(|m| m.lanes).or_else(|| port.width.lanes()), port.rate_gbps);
    if phy.is_some() {
        port.phy = phy;
    }
    let width_lanes = port.width.lanes();
    if let Some(bond) = port.bond.as_mut() {
        for leg in bond.legs.iter_mut().filter(|l| l.name() != netdev && usable(l.name())) {
            let lanes = tree.ethtool_report(leg.name()).and_then(|r| parse_ethtool_modes(&r).lanes).or(width_lanes);
            let rate = leg.gbps();
            leg.phy = read_phy(tree, leg.name(), lanes, rate).0;
        }
    }
    stats_text
}

/// One netdev's physical layer from `ethtool -S`, `--show-fec` and `-m` (live or saved), and
/// its `ethtool -S` report; `None` where none of them said anything.
fn read_phy(tree: &SysfsRoot, n: &str, lanes: Option<u32>, rate_gbps: Option<f64>) -> (Option<Phy>, Option<String>) {
    let stats_text = report(tree, n, "stats.txt", &[&["-S", n]]).ok();
    let stats = stats_text.as_deref().map(parse_ethtool_stats).unwrap_or_default();
    let fec = report(tree, n, "fec.txt", &[&["-I", "--show-fec", n], &["--show-fec", n]]).ok().map(|r| parse_show_fec(&r));
    let text = report(tree, n, "module.txt", &[&["-m", n]]);
    // A refusal (not root) or a timeout would only repeat itself.
    let hex = match &text {
        Err(e @ (ToolError::NotPermitted | ToolError::TimedOut)) if tree.is_live() => Err(e.clone()),
        _ => report(tree, n, "module.hex.txt", &[&["-m", n, "hex", "on"]]),
    };
    let module_unreadable = match (&text, &hex) {
        (Err(e @ (ToolError::NotPermitted | ToolError::TimedOut)), _) if tree.is_live() => Some(e.words("ethtool -m")),
        _ => None,
    };
    let bytes = hex.as_ref().ok().and_then(|h| module_hex::decode(&module_hex::parse_hex_dump(h)));
    let module = module_hex::merge(bytes, text.as_ref().ok().and_then(|t| parse_module_text(t)));
    if stats.is_empty() && fec.is_none() && module.is_none() && module_unreadable.is_none() {
        return (None, stats_text);
    }
    let lane_gbps = match (rate_gbps, lanes) {
        (Some(rate), Some(l)) if l > 0 => Some(rate / f64::from(l)),
        _ => None,
    };
    (Some(assemble(stats, fec, module, lanes, lane_gbps, module_unreadable)), stats_text)
}

/// Fills what ethtool or the MADs left unknown in each NVIDIA port's `phy` (raw and effective
/// BER, effective errors, errors per lane, FEC mode) from `mlxlink` (live) or the bundle's
/// reports. Ports of other vendors, ports whose BERs are known already, and everything already
/// known are left as they are. Live, the functions are asked at once, each a bounded child
/// (an 8-rail node waits about one `mlxlink`, not eight: `check` runs under NHC's timeout).
pub fn attach_mlxlink(inventory: &mut Inventory, source: &Source) {
    let tool = match source {
        Source::Live => ["mlxlink", "mstlink"].into_iter().find_map(find_program).and_then(|p| p.to_str().map(String::from)),
        Source::Sysfs(_) => None,
    };
    if matches!(source, Source::Live) && tool.is_none() {
        return;
    }
    // (device index, PCI function) of every port still missing a BER.
    let wanted: Vec<(usize, String)> = inventory
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| queried(d))
        .filter(|(_, d)| {
            d.ports.iter().find(|p| p.port == 1).is_some_and(|p| p.phy.as_ref().is_none_or(|f| f.ber_raw.is_none() || f.ber_effective.is_none()))
        })
        .filter_map(|(i, d)| d.pci.as_ref().and_then(|p| p.address.clone()).filter(|a| valid_bdf(a)).map(|bdf| (i, bdf)))
        .collect();
    let reports: Vec<Option<String>> = match (source, tool.as_deref()) {
        (Source::Live, Some(tool)) => std::thread::scope(|scope| {
            let asked: Vec<_> = wanted
                .iter()
                .map(|(_, bdf)| {
                    scope.spawn(move || crate::probe::tool::run(tool, &["-d", bdf, "-c", "--json"], mlxlink::TOOL_LIMIT, mlxlink::REPORT_CAP).ok())
                })
                .collect();
            asked.into_iter().map(|h| h.join().ok().flatten()).collect()
        }),
        (Source::Sysfs(root), _) => wanted.iter().map(|(_, bdf)| bundle_report(root, bdf)).collect(),
        _ => Vec::new(),
    };
    for ((i, _), text) in wanted.iter().zip(reports) {
        let Some(ber) = text.as_deref().and_then(parse_json) else { continue };
        // One PCI function is one port of the card: its first port is the one mlxlink reads.
        if let Some(port) = inventory.devices[*i].ports.iter_mut().find(|p| p.port == 1) {
            let applies = BerFigure::for_port(port.link_layer, port.speed);
            fill(port.phy.get_or_insert_with(Phy::default), &ber, applies);
        }
    }
}

fn bundle_report(root: &Path, bdf: &str) -> Option<String> {
    // Inside the bundle only (`sys::beneath`), bounded like every bundle read.
    let bundle = crate::sys::beneath::Tree::new(root.to_path_buf());
    bundle.read_text(&Path::new("tools/mlxlink").join(format!("{bdf}.json")), mlxlink::REPORT_CAP).ok()
}

/// Reads the set-up of an Ethernet port's netdev into `port.qos`, and the PFC and ECN
/// priorities into `netdev_state` (the 0.2 fields `devices --json` keeps).
pub fn attach_qos(tree: &SysfsRoot, device: &str, port: &mut Port, stats: Option<&str>) {
    if port.link_layer != crate::port::LinkLayer::Ethernet || !crate::model::valid_device_name(device) {
        return;
    }
    // Live, a netdev that looks like an option is never put on dcb's or mlnx_qos's command line.
    let usable = |n: &String| crate::probe::tree::valid_netdev_name(n) && (!tree.is_live() || crate::probe::tree::valid_tool_netdev(n));
    let Some(netdev) = port.tool_netdev().map(str::to_string).filter(usable) else { return };
    let q = qos::read::port(tree, device, port.port, &netdev, stats);
    // Over a bond each leg carries lossless traffic: each leg's set-up is read (the rules
    // compare them); the port's is the leg's whose tools describe it.
    if let Some(bond) = port.bond.as_mut() {
        for leg in bond.legs.iter_mut().filter(|l| usable(&l.state.name)) {
            leg.qos = Some(if leg.state.name == netdev { q.clone() } else { qos::read::port(tree, device, port.port, &leg.state.name, None) });
        }
    }
    if let Some(state) = port.netdev_state.as_mut() {
        let bytes = |v: Option<Vec<qos::Priority>>| v.map(|v| v.into_iter().map(u8::from).collect());
        state.pfc_priorities = bytes(q.pfc_priorities());
        state.ecn_priorities = bytes(q.ecn_priorities());
    }
    port.qos = Some(q);
}
