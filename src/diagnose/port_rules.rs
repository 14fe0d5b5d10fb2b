//! Per-port rules: state, addressing, link quality, link layer, RoCE readiness, MTU (RoCE's
//! lossless set-up: `qos_rules`).

use super::unreadable::{why, Unread};
use super::{gbps, Expectations, Severity, Sheet};
use crate::outcome::FindingId;
use crate::port::{self, GidScope, GidType, LinkLayer, NodeType, PhysState, PortState, RoceHeaders, Width};
use crate::probe::catype;
use crate::probe::{Device, Port};

/// The rules of one port. A rule whose input file could not be read (`unread`) is skipped: its
/// row says which file, and the `sysfs.unreadable` finding says why. `sibling_up`: another port
/// of the same card that is up (`DEV:PORT`), which an uncabled port's remedy names.
pub(super) fn run(device: &Device, port: &Port, sibling_up: Option<&str>, expect: &Expectations, unread: &Unread, sheet: &mut Sheet) {
    let subject = format!("{}/{}", device.name, port.port);
    let s = subject.as_str();
    let unreadable = |files: &[&'static str]| unread.port(&device.name, port.port, files);
    match unreadable(&["state", "phys_state"]) {
        Some(file) => sheet.skip(FindingId::PortState, s, why(file)),
        None => state(device, port, sibling_up, expect, s, sheet),
    }
    let ib = port.link_layer == LinkLayer::InfiniBand;
    let up = port.phys_state == PhysState::LinkUp;
    if ib {
        match unreadable(&["lid", "sm_lid"]) {
            Some(file) => {
                sheet.skip(FindingId::PortLid, s, why(file));
                sheet.skip(FindingId::PortSm, s, why(file));
            }
            None => addressing(port, s, sheet),
        }
    } else if port.link_layer != LinkLayer::Ethernet {
        let why = neither_ib_nor_ethernet(device);
        sheet.skip(FindingId::PortLid, s, why.clone());
        sheet.skip(FindingId::PortSm, s, why);
    }
    match (unreadable(&["link_layer"]), expect.link_layer) {
        (Some(file), Some(_)) => sheet.skip(FindingId::PortLinkLayer, s, why(file)),
        _ => link_layer(device, port, expect, s, sheet),
    }
    if let (true, Some(file)) = (up, unreadable(&["rate"])) {
        for id in [FindingId::LinkWidth, FindingId::LinkRate] {
            sheet.skip(id, s, why(file));
        }
    } else if up {
        link_quality(device, port, expect, s, sheet);
    } else {
        for id in [FindingId::LinkWidth, FindingId::LinkRate] {
            sheet.skip(id, s, format!("physical link is {}", port.phys_state));
        }
    }
    if port.link_layer == LinkLayer::Ethernet && device.node_type == NodeType::Rnic {
        iwarp(port, unread, s, sheet);
    } else if port.link_layer == LinkLayer::Ethernet {
        roce(device, port, expect, unread, s, sheet);
        super::bond_rules::run(port, s, sheet);
        super::qos_rules::run(device, port, expect, s, sheet);
    } else if let Some(want) = expect.mtu {
        match port.active_mtu {
            Some(mtu) if expect.mtu_miss(mtu).is_some() => sheet.fail(
                FindingId::PortMtu,
                s,
                mtu.to_string(),
                Some(want.to_string()),
                Severity::Error,
                format!("active MTU {mtu}, {want} expected"),
                "the SM sets the MTU from the partition (OpenSM partitions.conf: mtu=5 for 4096) and the switch limits; \
                 check both ends and the partition definition",
            ),
            Some(mtu) => sheet.pass(FindingId::PortMtu, s, mtu.to_string(), Some(want.to_string())),
            None => sheet.skip(FindingId::PortMtu, s, "active MTU not available from sysfs"),
        }
    }
    counters(port, s, sheet);
}

/// Why a port of neither link layer (sysfs `link_layer` "Unknown": an AWS EFA, whose node type
/// is unspecified) is not judged for a LID or a subnet manager: it has neither. The kernel's
/// `efa_query_port` reports it ACTIVE with LID 0 and SM LID 0 always, so judging them as
/// InfiniBand's would fail every healthy EFA for "no subnet manager".
fn neither_ib_nor_ethernet(device: &Device) -> String {
    let what = if catype::CaKind::of(&device.ca_type) == catype::CaKind::Efa {
        format!("{}, node type {}: its SRD and UD traffic is routed by AWS's network", device.ca_type, device.node_type)
    } else {
        format!("node type {}", device.node_type)
    };
    format!("link layer neither InfiniBand nor Ethernet ({what}): no subnet manager or LID to judge")
}

fn state(device: &Device, port: &Port, sibling_up: Option<&str>, expect: &Expectations, s: &str, sheet: &mut Sheet) {
    let observed = format!("{} / {}", port.state, port.phys_state);
    let want = expect.state.unwrap_or(PortState::Active);
    let expected = Some(format!("{want}"));
    let ib = port.link_layer == LinkLayer::InfiniBand;
    let netdev = port.netdev.as_deref().unwrap_or("<netdev>");
    if port.state == want && (want != PortState::Active || port.phys_state == PhysState::LinkUp) {
        sheet.pass(FindingId::PortState, s, observed, expected);
        return;
    }
    // `carrier` reads EINVAL while the interface is administratively down: then operstate says.
    let no_carrier = !ib && port.netdev_state.as_ref().is_some_and(|n| n.carrier == Some(false) || n.operstate.as_deref() == Some("down"));
    let (message, remedy): (String, String) = match (port.state, port.phys_state) {
        // A RoCE port follows its netdev: no carrier is a cable or link down, whatever the
        // physical state says (mlx5 reports DISABLED for it).
        (PortState::Down, _) if no_carrier => (
            format!("RoCE port DOWN: netdev {netdev} has no carrier: the cable or the link is down"),
            format!(
                "check the cable and optic at both ends and the switch port; `ethtool {netdev}` shows the link, `ip link set {netdev} up` if it is \
                 administratively down{}",
                uncabled_hint(sibling_up)
            ),
        ),
        (PortState::Down, PhysState::Polling) => (
            "port DOWN, physical state POLLING: the port is looking for a peer and sees none — no cable, a bad cable \
             or optic, or the switch/peer port is down"
                .into(),
            format!(
                "check the cable is seated at both ends and the link LEDs; check the switch port is enabled and up; try a \
                 known-good cable{}",
                uncabled_hint(sibling_up)
            ),
        ),
        (PortState::Down, PhysState::Disabled) => (
            "port DOWN, physical state DISABLED: the port has been disabled, locally or by the subnet manager / switch".into(),
            if ib {
                format!(
                    "enable it: `ibportstate -C {} -P {} <lid> {} enable` or on the switch/SM; a port disabled by the SM \
                     for errors stays so until re-enabled",
                    device.name, port.port, port.port
                )
            } else {
                format!("`ip link set {netdev} up`; check the switch port is not shut down")
            },
        ),
        (PortState::Down, PhysState::Sleep) => (
            "port DOWN, physical state SLEEP: the port is powered down".into(),
            format!("bring it up (`ip link set {netdev} up` for RoCE); check the module is not in low-power mode (mlxlink)"),
        ),
        (PortState::Down, _) if !ib => {
            (format!("RoCE port DOWN: netdev {netdev} has no link"), format!("`ip link set {netdev} up`; check cable, optic and the switch port"))
        }
        (PortState::Init, PhysState::LinkUp) if ib => (
            "port INIT: the physical link is up but no subnet manager has configured it (no LID, not ACTIVE)".into(),
            "start a subnet manager: OpenSM on a switch or management node (`systemctl enable --now opensm`), two for \
             HA; `sminfo` shows whether one answers"
                .into(),
        ),
        (PortState::Armed, _) => (
            "port ARMED: the subnet manager configured it but has not activated it yet".into(),
            "wait for the next SM sweep (seconds); if it stays ARMED, check the OpenSM log (/var/log/opensm.log) for errors".into(),
        ),
        (_, PhysState::Training) => (
            "link is training and has not settled; a link that keeps retraining is flapping".into(),
            "watch `symbol_error` / `link_downed` counters; reseat or replace the cable or optic".into(),
        ),
        (_, PhysState::ErrorRecovery) => (
            "link is in error recovery: the physical layer is seeing errors".into(),
            "check cable and optics (`mlxlink -d <pci> -m`), and the error counters".into(),
        ),
        (PortState::Active, _) if want != PortState::Active => {
            (format!("port is {} but {} was expected", port.state, want), "check the expectation; the port itself is working".into())
        }
        _ => (
            format!("port is {} / {}, not ACTIVE / LINK_UP", port.state, port.phys_state),
            "check cabling, the peer port and, on InfiniBand, the subnet manager".into(),
        ),
    };
    sheet.fail(FindingId::PortState, s, observed, expected, Severity::Error, message, remedy);
}

/// Where another port of the same card is up, how to leave this one out if it is meant to stay
/// uncabled (the second port of a dual-port card): name only the ports to judge.
fn uncabled_hint(sibling_up: Option<&str>) -> String {
    sibling_up.map_or_else(String::new, |up| {
        format!("; if it is meant to stay uncabled (a dual-port card's second port, beside {up}, which is up), name only the ports to judge: `fabcheck check --device {up},...`")
    })
}

fn addressing(port: &Port, s: &str, sheet: &mut Sheet) {
    let no_sm = "no subnet manager has assigned addresses: start OpenSM on a switch or management node (two for HA); \
                 `sminfo` and `ibstat` show whether one answers";
    if port.phys_state != PhysState::LinkUp {
        sheet.skip(FindingId::PortLid, s, "link is not up");
        sheet.skip(FindingId::PortSm, s, "link is not up");
        return;
    }
    if port.lid == 0 || port.lid >= 0xc000 {
        sheet.fail(FindingId::PortLid, s, format!("{:#x}", port.lid), Some("unicast LID".into()), Severity::Error, "port has no LID", no_sm);
    } else {
        sheet.pass(FindingId::PortLid, s, format!("{:#x}", port.lid), None);
    }
    if port.sm_lid == 0 {
        sheet.fail(FindingId::PortSm, s, "0x0", Some("SM LID".into()), Severity::Error, "no subnet manager is known to this port (SM LID 0)", no_sm);
    } else {
        match port.sm_state.as_deref() {
            None | Some("MASTER") => {
                let observed = match &port.sm_state {
                    Some(state) => format!("{:#x} {state}", port.sm_lid),
                    None => format!("{:#x}", port.sm_lid),
                };
                sheet.pass(FindingId::PortSm, s, observed, None)
            }
            Some(state) => sheet.fail(
                FindingId::PortSm,
                s,
                format!("{:#x} {state}", port.sm_lid),
                Some("MASTER".into()),
                Severity::Error,
                format!("the subnet manager this port names (LID {:#x}) is {state}: no master SM answers for it", port.sm_lid),
                "check OpenSM on that node (`systemctl status opensm`, /var/log/opensm.log); `sminfo` shows who answers; \
                 a fabric needs one master (and a standby for HA)",
            ),
        }
    }
}

fn link_layer(device: &Device, port: &Port, expect: &Expectations, s: &str, sheet: &mut Sheet) {
    let Some(want) = expect.link_layer else { return };
    if expect.link_layer_miss(port.link_layer).is_none() {
        sheet.pass(FindingId::PortLinkLayer, s, port.link_layer.to_string(), Some(want.to_string()));
        return;
    }
    let value = if want == LinkLayer::Ethernet { 2 } else { 1 };
    let pci = device.pci.as_ref().and_then(|p| p.address.clone()).unwrap_or_else(|| "<pci-address>".into());
    let remedy = if device.ca_type.starts_with("ConnectX") || device.ca_type.starts_with("BlueField") {
        format!(
            "set the port type in firmware: `mlxconfig -d {pci} set LINK_TYPE_P{}={value}` ({value} = {}), then a cold \
             reboot (power cycle) or `mlxfwreset -d {pci} reset`: a warm reboot does not apply it",
            port.port,
            if value == 2 { "ETH" } else { "IB" }
        )
    } else {
        "this adapter's link layer is fixed by its type or driver; use a VPI adapter or the right fabric".into()
    };
    let mut message = format!("port runs {} but {} was expected", port.link_layer, want);
    // What the firmware holds for the next boot, when it was read (`driver_rules`).
    let remedy = match super::driver_rules::link_type_advice(device, port.port, want) {
        Some((state, advice)) => {
            message = format!("{message}: {state}");
            advice.unwrap_or(remedy)
        }
        None => remedy,
    };
    sheet.fail(FindingId::PortLinkLayer, s, port.link_layer.to_string(), Some(want.to_string()), Severity::Error, message, remedy);
}

fn link_quality(device: &Device, port: &Port, expect: &Expectations, s: &str, sheet: &mut Sheet) {
    let ib = port.link_layer == LinkLayer::InfiniBand;
    // Width: against the expectation, else against the adapter family's native 4X on IB.
    let native_4x = ib && catype::native_ib_width_is_4x(&device.ca_type);
    let width_want = expect.width.or(if native_4x { Some(Width::X4) } else { None });
    match (width_want, port.width.lanes()) {
        (Some(want), Some(lanes)) => {
            let want_lanes = want.lanes().unwrap_or(0);
            // HDR100 / NDR200 split ports legitimately run 2X; only 1X is a sure degradation.
            let degraded = if expect.width.is_some() { lanes < want_lanes } else { lanes == 1 };
            if degraded {
                sheet.fail(
                    FindingId::LinkWidth,
                    s,
                    port.width.to_string(),
                    Some(want.to_string()),
                    Severity::Error,
                    format!("link trained at {} instead of {}: it runs at {} of its lanes", port.width, want, fraction(lanes, want_lanes)),
                    "a lane is failing: reseat or replace the cable/optic, check the switch port; `mlxlink -d <pci>` shows \
                     per-lane status and the reason",
                );
            } else {
                sheet.pass(FindingId::LinkWidth, s, port.width.to_string(), Some(want.to_string()));
            }
        }
        (_, None) => sheet.skip(FindingId::LinkWidth, s, format!("width {} unknown", port.width)),
        (None, Some(_)) => sheet.pass(FindingId::LinkWidth, s, port.width.to_string(), None),
    }
    let observed_rate = match (port.rate_gbps, port.nominal_gbps) {
        (Some(data), Some(nominal)) if data != nominal => format!("{} Gb/s ({} nominal)", gbps(data), gbps(nominal)),
        (Some(data), _) => format!("{} Gb/s", gbps(data)),
        (None, Some(nominal)) => format!("{} Gb/s nominal", gbps(nominal)),
        (None, None) => "unknown".into(),
    };
    // On Ethernet the netdev's speed is the rate (a RoCE driver's width x speed is a label);
    // on InfiniBand the nominal rate. The one judge of `--expect rate=N` (pair's too).
    let judged = super::expect::rate_judged(ib, port.rate_gbps, port.nominal_gbps);
    match (expect.rate, judged) {
        (Some(want), Some(nominal)) if expect.rate_miss(ib, port.rate_gbps, port.nominal_gbps).is_some() => sheet.fail(
            FindingId::LinkRate,
            s,
            format!("{observed_rate}, {} {}", port.width, port.speed),
            Some(format!("{} Gb/s", gbps(want))),
            Severity::Error,
            format!("link rate {} Gb/s ({} {}) is below the expected {} Gb/s", gbps(nominal), port.width, port.speed, gbps(want)),
            match (&port.bond, port.tool_netdev()) {
                // A bond's rate is one leg's: `--expect rate=` of the legs' sum cannot be met.
                (Some(bond), Some(leg)) => format!(
                    "on a bond the rate is one leg's ({leg}: a QP rides one leg; {} sums its legs): give --expect rate= \
                     one leg's speed; port.bond judges every leg; if {leg} itself negotiated down, check its cable/optic \
                     rating and `ethtool {leg}`",
                    bond.name
                ),
                _ if ib => "the link negotiated down: check the cable is rated for the speed (HDR needs HDR cables), the switch \
                            port's configured speed, and the width finding above"
                    .to_string(),
                _ => "the Ethernet link negotiated down: check the cable/optic rating, `ethtool <netdev>` advertised modes, \
                      and the switch port's speed setting"
                    .to_string(),
            },
        ),
        (Some(want), Some(_)) => sheet.pass(FindingId::LinkRate, s, observed_rate, Some(format!("{} Gb/s", gbps(want)))),
        (Some(_), None) => sheet.skip(FindingId::LinkRate, s, "rate unknown"),
        (None, None) if port.rate_gbps.is_none() && port.nominal_gbps.is_none() => sheet.skip(FindingId::LinkRate, s, "rate not readable"),
        (None, _) => sheet.pass(FindingId::LinkRate, s, observed_rate, None),
    }
    if let Some(want) = expect.speed {
        if port.speed.rank() < want.rank() {
            sheet.fail(
                FindingId::LinkSpeed,
                s,
                port.speed.to_string(),
                Some(want.to_string()),
                Severity::Error,
                format!("lanes run at {} instead of {}", port.speed, want),
                "check the cable and optic are rated for the speed and the switch port's speed configuration",
            );
        } else {
            sheet.pass(FindingId::LinkSpeed, s, port.speed.to_string(), Some(want.to_string()));
        }
    }
    trained(port, s, sheet);
}

fn fraction(lanes: u32, want: u32) -> String {
    if want == 0 {
        "an unknown share".into()
    } else {
        format!("{lanes}/{want}")
    }
}

/// A virtual function's port on a node that has its physical functions (SR-IOV: a pod's or a
/// VM's NIC): its address, netdev, MTU and QoS are set by whoever it is given to, and an idle one
/// has none; its link is its physical function's, judged there. One row says so rather than
/// failing a healthy node on its idle VFs (no routable GID, a netdev left down, MTU 1500 beside
/// the PF's 9000). Where VFs are all there is (inside the pod or VM), they are judged in full.
pub(super) fn virtual_function(port: &Port, s: &str, sheet: &mut Sheet) {
    let why = format!(
        "SR-IOV virtual function ({} / {}): its address, MTU and QoS are its user's (a pod, a VM), its link its physical function's, judged there",
        port.state, port.phys_state
    );
    sheet.skip(FindingId::PortState, s, why);
}

/// An iWARP port (an RNIC: Intel irdma in iWARP mode, Chelsio cxgb4, Soft-iWARP): RDMA over
/// TCP, whose GID is the netdev's MAC (`irdma_iw_query_gid`) and whose loss TCP recovers. Its
/// netdev must be up, as a RoCE port's; RoCE's GID, MTU and lossless rules do not apply, and
/// each says so rather than judging an iWARP node by RoCE's set-up.
fn iwarp(port: &Port, unread: &Unread, s: &str, sheet: &mut Sheet) {
    const WHY: &str = "iWARP port (node type RNIC): RDMA over TCP, so RoCE's GID, MTU and lossless set-up do not apply";
    sheet.skip(FindingId::RoceGid, s, WHY);
    netdev_up(port, unread, s, sheet);
    for id in [FindingId::RoceMtu, FindingId::RoceQos, FindingId::RoceLossless] {
        sheet.skip(id, s, WHY);
    }
}

/// An Ethernet RDMA port's netdev: up, with carrier, full duplex.
fn netdev_up(port: &Port, unread: &Unread, s: &str, sheet: &mut Sheet) {
    let netdev = port.netdev.clone().unwrap_or_else(|| "<netdev>".into());
    let netdev_unread = |files: &[&'static str]| unread.netdev(port.netdev.as_deref(), files);
    match &port.netdev_state {
        None => sheet.skip(FindingId::RoceNetdev, s, format!("netdev {netdev} not found")),
        Some(_) if netdev_unread(&["operstate", "carrier", "duplex"]).is_some() => sheet.skip(
            FindingId::RoceNetdev,
            s,
            why(&format!("netdev {netdev}'s {}", netdev_unread(&["operstate", "carrier", "duplex"]).unwrap_or("state"))),
        ),
        Some(n) => {
            let up = n.operstate.as_deref() == Some("up") || (n.operstate.as_deref() == Some("unknown") && n.carrier == Some(true));
            let observed = format!(
                "{} carrier={} {} {} mtu {}",
                n.operstate.clone().unwrap_or_else(|| "?".into()),
                n.carrier.map_or("?".into(), |c| u8::from(c).to_string()),
                n.speed_mbps.map_or("speed ?".into(), |m| format!("{m} Mb/s")),
                n.duplex.clone().unwrap_or_else(|| "?".into()),
                n.mtu.map_or("?".into(), |m| m.to_string())
            );
            // A passing row says only what was read (unknown is not printed as a value there).
            let read = [
                n.operstate.clone(),
                n.carrier.map(|c| format!("carrier={}", u8::from(c))),
                n.speed_mbps.map(|m| format!("{m} Mb/s")),
                n.duplex.clone(),
                n.mtu.map(|m| format!("mtu {m}")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
            if !up || n.carrier == Some(false) {
                sheet.fail(
                    FindingId::RoceNetdev,
                    s,
                    observed,
                    Some("up, carrier".into()),
                    Severity::Error,
                    format!("netdev {} is down or has no carrier", n.name),
                    format!("`ip link set {} up`; check cable and switch port (`ethtool {}` shows link detection)", n.name, n.name),
                );
            } else if n.duplex.as_deref().is_some_and(|d| d != "full" && d != "unknown") {
                sheet.fail(
                    FindingId::RoceNetdev,
                    s,
                    observed,
                    Some("full duplex".into()),
                    Severity::Warning,
                    format!("netdev {} runs {} duplex", n.name, n.duplex.clone().unwrap_or_default()),
                    "autonegotiation failed: check the switch port settings and the cable",
                );
            } else {
                sheet.pass(FindingId::RoceNetdev, s, read, Some("up, carrier".into()));
            }
        }
    }
}

fn roce(device: &Device, port: &Port, expect: &Expectations, unread: &Unread, s: &str, sheet: &mut Sheet) {
    let netdev = port.netdev.clone().unwrap_or_else(|| "<netdev>".into());
    // A routable RoCE v2 GID: what RoCE v2 traffic (and fabcheck pair) uses.
    let routable_v2: Vec<_> = port.gids_of_type(GidType::RoceV2).filter(|g| port::gid_scope(&g.gid.octets()) != GidScope::LinkLocal).collect();
    let routable_any = port.gids.iter().any(|g| port::gid_scope(&g.gid.octets()) != GidScope::LinkLocal);
    let gids_unread = ["gids/", "gid_attrs/"].iter().any(|dir| unread.port_under(&device.name, port.port, dir));
    let netdev_unread = |files: &[&'static str]| unread.netdev(port.netdev.as_deref(), files);
    if let Some(g) = routable_v2.first() {
        sheet.pass(FindingId::RoceGid, s, format!("index {} {} RoCE v2", g.index, g.gid), Some("routable RoCE v2 GID".into()));
    } else if gids_unread {
        sheet.skip(FindingId::RoceGid, s, why("part of the GID table"));
    } else if routable_any {
        sheet.fail(
            FindingId::RoceGid,
            s,
            "routable GIDs are RoCE v1 only",
            Some("routable RoCE v2 GID".into()),
            Severity::Warning,
            "no RoCE v2 GID: only RoCE v1, which is not routable across L3 and lacks ECN-based congestion control",
            "enable RoCE v2: `cma_roce_mode -d <dev> -p <port> -m 2` for rdma_cm, and check the driver exposes v2 GIDs",
        );
    } else {
        sheet.fail(
            FindingId::RoceGid,
            s,
            if port.gids.is_empty() { "no GIDs".into() } else { "only link-local (fe80::) GIDs".to_string() },
            Some("routable RoCE v2 GID".into()),
            Severity::Error,
            format!("no routable GID: {netdev} has no IPv4 or global IPv6 address, so RoCE v2 has nothing to route by"),
            format!("assign an address to {netdev} (`ip addr add <addr>/<len> dev {netdev}` or the node's network config); the GID appears at once"),
        );
    }

    netdev_up(port, unread, s, sheet);

    // MTU: RoCE's active MTU follows the netdev MTU (minus headers: 96 bytes, rxe 80); jumbo
    // frames give 4096.
    let headers = RoceHeaders::for_driver(device.driver.as_deref());
    let netdev_mtu = port.netdev_state.as_ref().and_then(|n| n.mtu);
    let derived = netdev_mtu.and_then(|m| headers.roce_mtu(m));
    let active = port.active_mtu.or(derived);
    let Some(active) = active else {
        match netdev_unread(&["mtu"]) {
            Some(_) => sheet.skip(FindingId::RoceMtu, s, why(&format!("netdev {netdev}'s mtu"))),
            None => sheet.skip(FindingId::RoceMtu, s, "neither active nor netdev MTU known"),
        }
        return;
    };
    let netdev_text = netdev_mtu.map_or(String::new(), |m| format!(" (netdev {netdev} mtu {m})"));
    if let Some(want) = expect.mtu {
        if expect.mtu_miss(active).is_some() {
            let need = headers.netdev_mtu_for(want);
            sheet.fail(
                FindingId::RoceMtu,
                s,
                format!("{active}{netdev_text}"),
                Some(want.to_string()),
                Severity::Error,
                format!("RoCE active MTU is {active}{netdev_text}, {want} expected"),
                format!(
                    "raise the netdev MTU to at least {need} (4200 or, usually, 9000: `ip link set {netdev} mtu 9000` and in \
                     the node's network config), and the switch ports to match"
                ),
            );
            return;
        }
        sheet.pass(FindingId::RoceMtu, s, format!("{active}{netdev_text}"), Some(want.to_string()));
    } else if let (Some(port_mtu), Some(d)) = (port.active_mtu, derived) {
        if port_mtu > d {
            sheet.fail(
                FindingId::RoceMtu,
                s,
                format!("{port_mtu}{netdev_text}"),
                Some(format!("<= {d}")),
                Severity::Warning,
                format!("RoCE active MTU {port_mtu} exceeds what netdev MTU {} carries", netdev_mtu.unwrap_or(0)),
                format!("set the netdev MTU of {netdev} consistently (9000 for 4096-byte RoCE frames)"),
            );
        } else {
            sheet.pass(FindingId::RoceMtu, s, format!("{port_mtu}{netdev_text}"), None);
        }
    } else {
        sheet.pass(FindingId::RoceMtu, s, format!("{active}{netdev_text}"), None);
    }
}

fn counters(port: &Port, s: &str, sheet: &mut Sheet) {
    let bad: Vec<String> = port
        .counters
        .iter()
        // One link_downed is the normal trace of the link coming up after boot.
        .filter(|c| match c.name.as_str() {
            "symbol_error" | "link_error_recovery" | "local_link_integrity_errors" => c.value > 0,
            "link_downed" => c.value > 1,
            _ => false,
        })
        .map(|c| format!("{}={}", c.name, c.value))
        .collect();
    if !bad.is_empty() {
        sheet.note(
            FindingId::LinkErrors,
            s,
            Severity::Warning,
            format!(
                "physical-layer error counters are non-zero: {} (lifetime figures, since the driver loaded or the counters were last \
                 cleared; `check --soak 10m` judges what rises)",
                bad.join(" ")
            ),
            "errors that keep rising point at a marginal cable or optic; clear with `perfquery -x -R` and watch",
        );
    }
}

/// A link running below what both ends enable: a lane, cable or connector fault, or a cable
/// not rated for the speed. The ceiling is the port's own (InfiniBand HDR and later through
/// `port_cap_flags2` or PortInfo, Ethernet through the netdev's link modes) lowered to what the
/// link partner enables (ethtool's link partner modes; the peer's PortInfo): a 400G NIC on a
/// 200G switch port, or a 2X split cable, is a design, not a fault. When the partner cannot be
/// read, a port below its own best is a warning that points at `--expect rate=` (which
/// `link.rate` judges), never an error: `fabcheck fabric` judges every link from both ends.
fn trained(port: &Port, s: &str, sheet: &mut Sheet) {
    use crate::probe::phy::partner::{LinkPartner, PartnerUnknown};
    let ib = port.link_layer == LinkLayer::InfiniBand;
    let best = if ib {
        match (port.width_supported, port.speed_supported) {
            (None, None) => return,
            (w, sp) => format!("{} {}", w.map_or(port.width.to_string(), |w| w.to_string()), sp.map_or(port.speed.to_string(), |sp| sp.to_string())),
        }
    } else {
        match port.supported_gbps {
            Some(g) => format!("{} Gb/s", gbps(g)),
            None => return,
        }
    };
    let observed = match (ib, port.rate_gbps) {
        (true, _) => format!("{} {}", port.width, port.speed),
        (false, Some(r)) => format!("{} Gb/s", gbps(r)),
        (false, None) => {
            sheet.skip(FindingId::LinkTrained, s, "the link's rate is not readable (no netdev speed)");
            return;
        }
    };
    let Some(what) = port.trained_low() else {
        sheet.pass(FindingId::LinkTrained, s, observed, Some(best));
        return;
    };
    let partner = match &port.partner {
        Some(p) => p.clone(),
        None => LinkPartner::Unknown { why: if ib { PartnerUnknown::NoPeerPortInfo } else { PartnerUnknown::NoLine } },
    };
    // The ceiling both ends share, and whether the link reaches it.
    let shared = match partner {
        LinkPartner::Common { gbps: common } if !ib => {
            let ceiling = port.supported_gbps.map_or(common, |own| own.min(common));
            let low = port.rate_gbps.is_some_and(|rate| rate + 0.5 < ceiling);
            Ok((
                format!("{} Gb/s", gbps(ceiling)),
                low.then(|| format!("{} of {} Gb/s both ends advertise", gbps(port.rate_gbps.unwrap_or(0.0)), gbps(ceiling))),
            ))
        }
        LinkPartner::Enabled { width, speed } if ib => {
            let w = match port.width_supported {
                Some(own) if own.lanes() < width.lanes() => own,
                _ => width,
            };
            let sp = match port.speed_supported {
                Some(own) if own.rank() < speed.rank() => own,
                _ => speed,
            };
            let low = crate::probe::capacity::trained_low(port.width, port.speed, Some(w), Some(sp));
            Ok((format!("{w} {sp}"), low.map(|l| format!("{l} both ends enable"))))
        }
        LinkPartner::Unknown { why } => Err(why),
        // A partner of the other link layer's kind: not comparable.
        _ => Err(PartnerUnknown::NoCommonMode),
    };
    let remedy_fault = if ib {
        "a cable, connector or lane fault, or a cable not rated for the speed (HDR/NDR need their cables); `mlxlink -d <pci>` \
         shows why it trained low; `fabcheck fabric` names both ends"
    } else {
        "a cable or optic not rated for the speed, a lane fault, or a dirty connector: both ends offer more than the link \
         runs at; reseat or replace the cable/optic; `ethtool <netdev>` shows the advertised and link partner modes"
    };
    match shared {
        Ok((ceiling, None)) => sheet.pass(FindingId::LinkTrained, s, observed, Some(ceiling)),
        Ok((ceiling, Some(low))) => sheet.fail(
            FindingId::LinkTrained,
            s,
            observed,
            Some(ceiling),
            Severity::Error,
            format!("the link trained below what both ends enable: {low}"),
            remedy_fault,
        ),
        Err(why) => sheet.fail(
            FindingId::LinkTrained,
            s,
            observed,
            Some(best),
            Severity::Warning,
            format!("the link trained below what this port supports ({what}), and what the link partner enables is not known: {}", why.words()),
            if ib {
                "if the switch port enables less (a 2X split cable, a slower switch) this is the design; otherwise check \
                 the cable and the switch port. Say the rate the link must reach with `--expect rate=GBPS`: `link.rate` \
                 then fails a slower link; `fabcheck fabric` reads both ends"
            } else {
                "if the switch port is configured slower this is the design; otherwise check the cable/optic rating and \
                 the switch port's speed. Say the rate the link must reach with `--expect rate=GBPS`: `link.rate` then \
                 fails a slower link"
            },
        ),
    }
}
