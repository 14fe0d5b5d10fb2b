//! A RoCE port over a bond (mlx5 RoCE LAG) is only as good as its legs. The bond master stays
//! up while one leg has carrier, `ibv_devinfo` shows the first leg's rate, and a QP rides one
//! leg (`probe::bond`): so a dead leg, a slow leg or a leg set up lossy is invisible to every
//! other row, and costs a share of the node's bandwidth, or its lossless service, on the QPs
//! that land on it. `port.bond` judges the legs' links and the physical layer of the legs the
//! port's own `phy.*` rows do not; [`qos_legs`] adds to `roce.qos` a leg set up unlike the
//! others.

use super::qos_issue::{issue, Issue};
use super::{gbps, Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::bond::{Bond, BondLeg};
use crate::probe::qos::PortQos;
use crate::probe::Port;

pub(super) fn run(port: &Port, s: &str, sheet: &mut Sheet) {
    let Some(bond) = &port.bond else { return };
    let expected = Some("every leg up, at one speed, its physical layer clean".to_string());
    if bond.legs.is_empty() {
        sheet.fail(
            FindingId::PortBond,
            s,
            format!("{}: no legs", bond.name),
            expected,
            Severity::Error,
            format!("bond {} carries RoCE but has no legs (its bonding/slaves is empty)", bond.name),
            format!("enslave the card's ports to it (`ip link set LEG master {}`), or give the port its own netdev", bond.name),
        );
        return;
    }
    let mut issues = Vec::new();
    legs_down(bond, &mut issues);
    speeds(bond, &mut issues);
    legs_phy(port, bond, s, &mut issues);
    let mut observed = observed(bond);
    let phy_unread = phy_unread(port, bond);
    if !phy_unread.is_empty() {
        observed.push_str(&format!("; physical layer of {} not read", phy_unread.join(", ")));
    }
    let unread: Vec<&str> = bond.legs.iter().filter(|l| !l.read()).map(BondLeg::name).collect();
    // `Severity` orders Error first: the worst is the least.
    let worst = issues.iter().map(|i| i.severity).min();
    match worst {
        // A leg not read is not a leg up: the row cannot pass on the others.
        None if !unread.is_empty() => sheet.skip(
            FindingId::PortBond,
            s,
            format!("{observed}; the state of {} is not read (a bundle without its class/net folder)", unread.join(", ")),
        ),
        None => sheet.pass(FindingId::PortBond, s, observed, expected),
        Some(severity) => {
            let message = issues.iter().map(|i| i.message.as_str()).collect::<Vec<_>>().join("; ");
            let remedy = issues.iter().map(|i| i.remedy.as_str()).collect::<Vec<_>>().join("; ");
            sheet.fail(FindingId::PortBond, s, observed, expected, severity, message, remedy);
        }
    }
}

/// A leg without carrier: the bond runs on the rest (an error: a share of the bandwidth and
/// the redundancy are gone), or, in active-backup, has no failover left (a warning).
fn legs_down(bond: &Bond, issues: &mut Vec<Issue>) {
    let down: Vec<&BondLeg> = bond.legs.iter().filter(|l| l.read() && !l.up()).collect();
    if down.is_empty() {
        return;
    }
    let names = down.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ");
    let up = bond.legs.iter().filter(|l| l.up()).count();
    let verb = if down.len() == 1 { "is" } else { "are" };
    let (severity, consequence) = if bond.active_backup() {
        (Severity::Warning, "the bond has no failover left".to_string())
    } else {
        let carrying: f64 = bond.legs.iter().filter_map(BondLeg::gbps).sum();
        let whole = bond.legs.iter().filter_map(|l| l.gbps().or(l.supported_gbps)).sum::<f64>().max(carrying);
        let share = if carrying > 0.0 && whole > carrying { format!(" ({} of {} Gb/s)", gbps(carrying), gbps(whole)) } else { String::new() };
        let redundancy = if up <= 1 { ", with no redundancy" } else { "" };
        (Severity::Error, format!("RoCE over {} runs on {up} of {} legs{share}{redundancy}", bond.name, bond.legs.len()))
    };
    let first = down[0].name();
    let lacp = if bond.mode.as_deref() == Some("802.3ad") { "; on 802.3ad also the switch's LACP port-channel (MLAG) for that port" } else { "" };
    issues.push(issue(
        severity,
        format!("{names} of bond {} {verb} down or without carrier: {consequence}", bond.name),
        format!(
            "check {first}'s cable, optic and switch port (`ethtool {first}`, `cat /proc/net/bonding/{}`){lacp}; `ip link set {first} up` if it was set down",
            bond.name
        ),
    ));
}

/// Legs up at different speeds: the QPs that land on the slow leg run at its speed.
fn speeds(bond: &Bond, issues: &mut Vec<Issue>) {
    let up: Vec<(&str, f64)> = bond.legs.iter().filter_map(|l| l.gbps().map(|g| (l.name(), g))).collect();
    let Some(fastest) = up.iter().map(|(_, g)| *g).reduce(f64::max) else { return };
    let slow: Vec<&(&str, f64)> = up.iter().filter(|(_, g)| *g + 0.5 < fastest).collect();
    if slow.is_empty() {
        return;
    }
    let all = up.iter().map(|(n, g)| format!("{n} {} Gb/s", gbps(*g))).collect::<Vec<_>>().join(", ");
    let first = slow[0].0;
    let (severity, what) = if bond.active_backup() {
        (Severity::Warning, "a failover moves RoCE to the slower leg")
    } else {
        (Severity::Error, "the QPs that land on the slower leg run at its speed")
    };
    issues.push(issue(
        severity,
        format!("the legs of bond {} run at different speeds ({all}): {what}", bond.name),
        format!(
            "find why {first} runs slower: a cable or optic not rated for the speed, or a switch port set lower (`ethtool {first}` shows its and the partner's modes)"
        ),
    ));
}

/// The physical layer of each leg but the one that describes the port (the port's own `phy.*`
/// rows judge that one): what `phy.*` says of it (a marginal optic, FEC that cannot keep up, a
/// lane near dark), as issues of the bond, each naming its leg.
fn legs_phy(port: &Port, bond: &Bond, s: &str, issues: &mut Vec<Issue>) {
    for leg in bond.legs.iter().filter(|l| l.phy.is_some()) {
        let view = Port {
            phy: leg.phy.clone(),
            netdev: Some(leg.name().to_string()),
            bond: None,
            soak: None,
            rate_gbps: leg.gbps().or(port.rate_gbps),
            ..port.clone()
        };
        let mut scratch = Sheet::default();
        super::phy_rules::run(&view, s, &mut scratch);
        for f in scratch.findings.into_iter().filter(|f| f.severity != Severity::Info) {
            issues.push(issue(f.severity, format!("{} (a leg of bond {}): {}", leg.name(), bond.name, f.message), f.remedy));
        }
    }
}

/// `roce.qos` of a port over a bond: each leg whose QoS set-up differs from the first leg's
/// read (an error: the QPs that land on it lose the lossless service the others give).
/// Returns, in words, the legs whose set-up was not read (`roce.qos` cannot pass on the others).
pub(super) fn qos_legs(port: &Port, issues: &mut Vec<Issue>) -> Vec<String> {
    let Some(bond) = &port.bond else { return Vec::new() };
    let unread: Vec<String> = bond
        .legs
        .iter()
        .filter(|l| l.qos.as_ref().is_none_or(|q| !q.dcb_read()))
        .map(|l| format!("the set-up of {}, a leg of bond {}", l.name(), bond.name))
        .collect();
    let mut read = bond.legs.iter().filter_map(|l| l.qos.as_ref().filter(|q| q.dcb_read()).map(|q| (l.name(), q)));
    let Some((reference, first)) = read.next() else { return unread };
    for (name, q) in read {
        let differences = qos_differences(q, first);
        if differences.is_empty() {
            continue;
        }
        issues.push(issue(
            Severity::Error,
            format!(
                "{name}, a leg of bond {}, is set up unlike {reference}: {}; the QPs that land on {name} do not get the same lossless service",
                bond.name,
                differences.join(", ")
            ),
            format!(
                "set {name} up as {reference}{}; `mlnx_qos -i {reference}` shows the rest (buffers, ETS): RoCE LAG needs the same QoS on every leg",
                alike_command(name, q, first)
            ),
        ));
    }
    unread
}

/// What differs between two legs' QoS set-ups, in words (`PFC on 3 here, none there`), among
/// the parts both read: lossless RoCE needs every leg alike, as a QP may ride either.
fn qos_differences(leg: &PortQos, reference: &PortQos) -> Vec<String> {
    fn differs<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
        matches!((a, b), (Some(a), Some(b)) if a != b)
    }
    let list = |v: Option<Vec<crate::probe::qos::Priority>>| match v {
        Some(v) if v.is_empty() => "none".to_string(),
        Some(v) => v.iter().map(|p| u8::from(*p).to_string()).collect::<Vec<_>>().join(","),
        None => "?".into(),
    };
    let mut out = Vec::new();
    if differs(&leg.pfc, &reference.pfc) {
        out.push(format!("PFC on {} (not {})", list(leg.pfc_priorities()), list(reference.pfc_priorities())));
    }
    if differs(&leg.trust, &reference.trust) {
        out.push("its trust state".into());
    }
    if differs(&leg.dscp2prio, &reference.dscp2prio) {
        out.push("its DSCP-to-priority map".into());
    }
    if differs(&leg.prio2tc, &reference.prio2tc) {
        out.push("its priority-to-traffic-class map".into());
    }
    if differs(&leg.prio2buffer, &reference.prio2buffer) {
        out.push("its priority-to-buffer map".into());
    }
    if differs(&leg.ecn_np, &reference.ecn_np) || differs(&leg.ecn_rp, &reference.ecn_rp) {
        out.push(format!("ECN on {} (not {})", list(leg.ecn_priorities()), list(reference.ecn_priorities())));
    }
    out
}

/// `mlnx_qos` flags that set `leg`'s trust and PFC as `reference`'s, where those differ.
fn alike_command(leg: &str, q: &PortQos, reference: &PortQos) -> String {
    let mut flags = Vec::new();
    if let (Some(want), true) = (reference.trust, q.trust != reference.trust) {
        flags.push(format!("--trust {want}"));
    }
    if let (Some(want), true) = (reference.pfc, q.pfc != reference.pfc) {
        flags.push(format!("--pfc {}", want.iter().map(|on| if *on { "1" } else { "0" }).collect::<Vec<_>>().join(",")));
    }
    if flags.is_empty() {
        String::new()
    } else {
        format!(": `mlnx_qos -i {leg} {}`", flags.join(" "))
    }
}

fn observed(bond: &Bond) -> String {
    let mode = bond.mode.as_deref().unwrap_or("mode unknown");
    let legs = bond.legs.iter().map(BondLeg::name).collect::<Vec<_>>().join(", ");
    let up = bond.legs.iter().filter(|l| l.up()).count();
    let mut speeds: Vec<String> = bond.legs.iter().filter_map(BondLeg::gbps).map(gbps).collect();
    speeds.dedup();
    let at = if speeds.is_empty() { String::new() } else { format!(" at {} Gb/s", speeds.join("/")) };
    format!("{} {mode} over {legs}: {up} of {} legs up{at}", bond.name, bond.legs.len())
}

/// The legs the port's own `phy.*` rows do not judge and whose physical layer was not read.
fn phy_unread(port: &Port, bond: &Bond) -> Vec<String> {
    let own = port.tool_netdev();
    bond.legs.iter().filter(|l| l.phy.is_none() && Some(l.name()) != own).map(|l| l.name().to_string()).collect()
}
