//! `fabcheck devices`: the inventory, as a person reads it and as the contract's JSON.

use crate::port::LinkLayer;
use crate::probe::{Device, Inventory, Port};
use crate::sanitise::one_line as l;
use crate::units::rate as gbps;
use serde::Serialize;
use std::fmt::Write;

pub const SCHEMA: &str = "fabcheck.devices.v1";

#[derive(Serialize)]
pub struct DevicesDoc<'a> {
    pub schema: &'static str,
    pub source: &'a str,
    pub devices: &'a [Device],
}

pub fn json_doc(inv: &Inventory) -> DevicesDoc<'_> {
    DevicesDoc { schema: SCHEMA, source: &inv.source, devices: &inv.devices }
}

/// The human view: one block per device, one line of essentials per port, then its GIDs.
pub fn human(inv: &Inventory) -> String {
    let mut out = String::new();
    for d in &inv.devices {
        let _ = write!(out, "{}  {}  fw {}", l(&d.name), l(&d.ca_type), if d.fw_ver.is_empty() { "?".into() } else { l(&d.fw_ver) });
        if let Some(hca) = &d.hca_type {
            let _ = write!(out, "  {}", l(hca));
        }
        if let Some(board) = &d.board_id {
            let _ = write!(out, "  board {}", l(board));
        }
        let _ = writeln!(out);
        let _ = write!(out, "  node_guid {}  sys_image_guid {}", l(&d.node_guid), l(&d.sys_image_guid));
        if let Some(driver) = &d.driver {
            let _ = write!(out, "  driver {}", l(driver));
        }
        let _ = writeln!(out);
        if let Some(pci) = &d.pci {
            let _ = writeln!(
                out,
                "  pci {}  link x{} {} (max x{} {})  numa {}",
                l(pci.address.as_deref().unwrap_or("?")),
                pci.current_width.map_or("?".into(), |v| v.to_string()),
                l(pci.current_speed.as_deref().unwrap_or("?")),
                pci.max_width.map_or("?".into(), |v| v.to_string()),
                l(pci.max_speed.as_deref().unwrap_or("?")),
                pci.numa_node.map_or("?".into(), |v| v.to_string()),
            );
        }
        if let Some(config) = &d.fw_config {
            fw_config(&mut out, config);
        }
        for p in &d.ports {
            port(&mut out, p);
        }
        let _ = writeln!(out);
    }
    out
}

/// The firmware configuration on one line: each parameter's current value, and the next
/// boot's where it differs (the change is pending).
fn fw_config(out: &mut String, config: &crate::probe::stack::firmware::FwConfig) {
    let shown: Vec<String> = config
        .iter()
        .map(|(name, p)| {
            let current = p.current.as_ref().map_or("?", |v| v.label());
            match (&p.next_boot, p.pending()) {
                (Some(next), true) => format!("{name} {current} (next boot {next})"),
                (Some(next), false) if p.current.is_none() => format!("{name} {next} (next boot)"),
                _ => format!("{name} {current}"),
            }
        })
        .collect();
    if !shown.is_empty() {
        let _ = writeln!(out, "  fw_config {}", shown.join("  "));
    }
}

fn port(out: &mut String, p: &Port) {
    let rate = match (p.rate_gbps, p.nominal_gbps) {
        (Some(data), Some(nominal)) if data != nominal => format!("{} Gb/s data ({} nominal)", gbps(data), gbps(nominal)),
        (Some(data), _) => format!("{} Gb/s", gbps(data)),
        (None, Some(nominal)) => format!("{} Gb/s nominal", gbps(nominal)),
        (None, None) => "rate ?".into(),
    };
    let mtu = match (p.active_mtu, p.max_mtu) {
        (Some(a), Some(m)) => format!("mtu {a} (max {m})"),
        (Some(a), None) => format!("mtu {a}"),
        (None, _) => "mtu ?".into(),
    };
    let _ = writeln!(out, "  port {}  {} / {}  {}  {} {}  {}  {}", p.port, p.state, p.phys_state, p.link_layer, p.width, p.speed, rate, mtu);
    if p.link_layer == LinkLayer::InfiniBand {
        let _ = writeln!(
            out,
            "    lid {:#x}  sm_lid {:#x}  lmc {}{}",
            p.lid,
            p.sm_lid,
            p.lmc,
            p.netdev.as_ref().map_or(String::new(), |n| format!("  ipoib {}", l(n)))
        );
    } else if let Some(name) = &p.netdev {
        let state = p.netdev_state.as_ref().map_or(String::new(), |n| {
            format!(
                " ({}, {}, mtu {})",
                l(n.operstate.as_deref().unwrap_or("?")),
                n.speed_mbps.map_or("speed ?".into(), |s| format!("{s} Mb/s")),
                n.mtu.map_or("?".into(), |m| m.to_string())
            )
        });
        let _ = writeln!(out, "    netdev {}{state}", l(name));
        if let Some(bond) = &p.bond {
            let legs = bond.legs.iter().map(|leg| {
                let speed = leg.gbps().map_or(String::new(), |g| format!(" {} Gb/s", crate::units::sig3(g)));
                let role = leg.role.map_or(String::new(), |r| format!(" {}", r.name()));
                let state = match (leg.read(), leg.up()) {
                    (false, _) => "not read",
                    (true, true) => "up",
                    (true, false) => "down",
                };
                format!("{} {state}{speed}{role}", l(leg.name()))
            });
            let _ = writeln!(out, "    bond {} over {}", l(bond.mode.as_deref().unwrap_or("?")), legs.collect::<Vec<_>>().join(", "));
        }
    }
    if p.gids.is_empty() {
        let _ = writeln!(out, "    no GIDs");
    }
    let width = p.gids.iter().map(|g| g.gid.to_string().len()).max().unwrap_or(0);
    for g in &p.gids {
        let _ = writeln!(
            out,
            "    gid {:<3} {:<width$}  {:<8} {}",
            g.index,
            g.gid,
            g.gid_type.name(),
            l(g.netdev.as_deref().unwrap_or("")),
            width = width
        );
    }
}

/// `devices`' result: the document, and for the human view the GPU affinity table where the
/// node (or bundle) has NVIDIA GPUs.
pub struct DevicesReport<'a> {
    pub doc: DevicesDoc<'a>,
    pub inventory: &'a Inventory,
    pub gpu_table: Option<String>,
    /// The bundle read, when its manifest names its host.
    pub origin: Option<crate::probe::bundle::Origin>,
}

impl crate::report::Document for DevicesReport<'_> {
    fn origin(&self) -> Option<&str> {
        self.origin.as_ref().map(|o| o.host.as_str())
    }

    fn command(&self) -> crate::report::Command {
        crate::report::Command::Devices
    }

    /// `devices` reports, it does not judge: no verdict, exit 0.
    fn verdict(&self) -> Option<crate::outcome::Verdict> {
        None
    }

    fn has_warning(&self) -> bool {
        false
    }

    fn human(&self) -> String {
        let mut text = human(self.inventory);
        // Two writes in 0.2 (the table escaped on its own); one text now, the same bytes.
        text.push_str(self.gpu_table.as_deref().unwrap_or(""));
        text
    }

    fn write_json(
        &self,
        out: &mut dyn std::io::Write,
        stamp: &crate::report::Stamp,
        verdict: Option<crate::outcome::Verdict>,
    ) -> std::io::Result<()> {
        crate::report::json::write_sorted(out, &self.doc, stamp, verdict)
    }

    fn feed(&self, sink: &mut dyn crate::report::Sink) -> std::io::Result<()> {
        use crate::outcome::{Measure, Subject};
        use crate::port::{PhysState, PortState};
        for d in self.doc.devices {
            for p in &d.ports {
                sink.measure(&Measure::Port {
                    subject: &Subject::port(d.name.as_str(), p.port),
                    active: p.state == PortState::Active,
                    link_up: p.phys_state == PhysState::LinkUp,
                    rate_gbps: p.rate_gbps,
                    supported_gbps: p.supported_gbps,
                });
            }
            if let Some(usable) = d.pci.as_ref().and_then(|p| p.usable_gbps) {
                sink.measure(&Measure::PcieUsable { subject: &Subject::device(d.name.as_str()), gbps: usable });
            }
        }
        Ok(())
    }
}
