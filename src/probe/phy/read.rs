//! The physical layer of an Ethernet port as `ethtool` says it (run live, or a bundle's saved
//! reports): link partner, FEC, error counters, the module. Pure assembly in [`super::assemble`].

use super::assemble;
use super::ethtool_stats::parse_ethtool_stats;
use super::fec::parse_show_fec;
use super::module::parse_module_text;
use super::module_hex;
use super::partner::{ethernet_partner, parse_ethtool_modes};
use crate::port::LinkLayer;
use crate::probe::model::Port;
use crate::probe::tool::{self, ToolError};
use crate::probe::tree::{SysfsRoot, REPORT_CAP};
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
pub fn complete(tree: &SysfsRoot, port: &mut Port) -> Option<String> {
    if port.link_layer != LinkLayer::Ethernet {
        return None;
    }
    let netdev =
        port.netdev.clone().filter(|n| crate::model::valid_device_name(n) && (!tree.is_live() || crate::probe::tree::valid_tool_netdev(n)))?;
    let modes = tree.ethtool_report(&netdev).map(|r| parse_ethtool_modes(&r));
    if let Some(modes) = &modes {
        port.partner = Some(ethernet_partner(modes));
    }
    let n = netdev.as_str();
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
        return stats_text;
    }
    let lanes = modes.as_ref().and_then(|m| m.lanes).or_else(|| port.width.lanes());
    let lane_gbps = match (port.rate_gbps, lanes) {
        (Some(rate), Some(l)) if l > 0 => Some(rate / f64::from(l)),
        _ => None,
    };
    port.phy = Some(assemble(stats, fec, module, lanes, lane_gbps, module_unreadable));
    stats_text
}
