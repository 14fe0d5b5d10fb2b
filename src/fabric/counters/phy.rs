//! The physical layer of InfiniBand ports in `fabric`, from PortExtendedSpeedsCounters (FDR
//! and faster): `phy.fec` (blocks the FEC could not correct) and `phy.ber` (a lane that
//! carries most of the corrected errors), and `fabric.congestion` (PortXmitWait over a soak
//! window). Pure. The FEC figures are lifetime ones (since the counters were last cleared):
//! said as such, and at most a warning.

use crate::fabric::discovery::links::{end_name, Index};
use crate::fabric::discovery::model::{Fabric, Tables, TickRead};
use crate::mad::attributes::ExtSpeedsCounters;
use crate::mad::attributes::Guid;
use crate::outcome::FindingId;
use crate::outcome::{Finding, Severity};
use crate::port::Width;

/// The lane rule of `check`'s `phy.ber` (diagnose::phy_rules, docs/checks.md): a lane with
/// more than half of the port's corrected errors, with 1000 or more in all (below that the
/// share is noise), is named, from lane 1.
const LANE_SHARE: f64 = 0.5;
const LANE_MIN_ERRORS: u64 = 1000;

fn busiest_lane(lanes: &[u64]) -> Option<(usize, f64)> {
    let total: u64 = lanes.iter().sum();
    if lanes.len() < 2 || total < LANE_MIN_ERRORS {
        return None;
    }
    let (lane, &most) = lanes.iter().enumerate().max_by_key(|(_, v)| **v)?;
    let share = most as f64 / total as f64;
    (share > LANE_SHARE).then_some((lane + 1, share))
}

/// Ports named in `fabric.congestion`, the most waiting first.
const CONGESTED_LISTED: usize = 20;

const LIFETIME: &str = "a lifetime figure, since the port's counters were last cleared";

fn lanes(width: Width) -> usize {
    match width {
        Width::X1 => 1,
        Width::X2 => 2,
        Width::X4 => 4,
        Width::X8 => 8,
        _ => 12,
    }
}

/// `leaf1[2] <-> hostB[1]` for a cabled port (as `fabric.errors` names links), else the end.
fn subject(fabric: &Fabric, index: &Index, guid: Guid, port: u8) -> String {
    let end = fabric.node(guid).map_or_else(|| format!("{guid}[{port}]"), |n| end_name(n, port));
    index.links.iter().find(|l| l.a.key() == (guid, port) || l.b.key() == (guid, port)).map_or(end, |l| l.name())
}

pub fn judge(fabric: &Fabric, tables: &Tables) -> Vec<Finding> {
    let index = Index::new(fabric);
    let mut findings = Vec::new();
    for (&(guid, number), c) in &tables.phy {
        let Some(node) = fabric.node(guid) else { continue };
        let Some(port) = node.port(number) else { continue };
        let at = end_name(node, number);
        let subject = subject(fabric, &index, guid, number);
        let fec = if c.rs_fec { "RS-FEC" } else { "Firecode FEC" };
        if c.uncorrectable_blocks > 0 {
            findings.push(Finding {
                id: FindingId::PhyFec,
                severity: Severity::Warning,
                subject: subject.clone().into(),
                message: format!("at {at}: {} blocks the {fec} could not correct (frames lost; {LIFETIME})", c.uncorrectable_blocks),
                remedy: "clean and reseat the cable's connectors at both ends, then replace the cable or optic if the count keeps rising; \
                         `perfquery -x -R` clears the counters so the next run shows what is new"
                    .into(),
                about: None,
            });
        }
        if let Some(finding) = lane(c, lanes(port.info.width_active), &at, &subject) {
            findings.push(finding);
        }
    }
    findings
}

/// The lane with more than half of the port's corrected errors (1000 or more in all), named
/// from lane 1; a warning when the FEC also lost blocks, else info.
fn lane(c: &ExtSpeedsCounters, lanes: usize, at: &str, subject: &str) -> Option<Finding> {
    let counted = &c.lane_corrected[..lanes.min(c.lane_corrected.len())];
    let (lane, share) = busiest_lane(counted)?;
    let what = if c.rs_fec { "corrected symbols" } else { "corrected blocks" };
    Some(Finding {
        id: FindingId::PhyBer,
        severity: if c.uncorrectable_blocks > 0 { Severity::Warning } else { Severity::Info },
        subject: subject.into(),
        message: format!(
            "at {at}: lane {lane} carries {:.0}% of the port's {} {what} (per lane: {}; {LIFETIME})",
            share * 100.0,
            counted.iter().sum::<u64>(),
            counted.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
        ),
        remedy: "one lane with most of the errors points at that lane of the cable or optic: clean the connector, reseat, and swap the cable \
                 to see whether the errors follow it"
            .into(),
        about: None,
    })
}

/// A share of the window above this means the device does not count in the ticks its
/// PortSamplesControl gives (ibdiagnet's manual warns that NVIDIA generations differ): ticks
/// are said instead (a little slack for the reads' skew against the window).
const SHARE_PLAUSIBLE: f64 = 1.05;

/// How long a port waited, as far as its counter's unit is known.
enum Waited {
    /// Its share of the window: ticks of (Tick + 1) symbol times at the port's speed.
    Share { share: f64, tick: u8, tick_ns: f64 },
    /// Ticks only, and why their length is not known.
    Ticks { why: &'static str },
}

fn waited(wait: u64, seconds: f64, tick: Option<TickRead>, speed: crate::port::Speed) -> Waited {
    let tick = match tick {
        Some(TickRead::Tick(tick)) => tick,
        Some(TickRead::SmBehind) => {
            return Waited::Ticks { why: "an SM runs behind the node's PerfMgt address, so its PortSamplesControl was not asked" };
        }
        Some(TickRead::NoAnswer) | None => {
            return Waited::Ticks { why: "the node's PortSamplesControl did not answer, so the tick's length is not known" };
        }
    };
    let Some(tick_ns) = crate::mad::decode::xmit_wait_tick_ns(tick, speed) else {
        return Waited::Ticks { why: "the port's speed is not known, so the tick's length is not either" };
    };
    let share = wait as f64 * tick_ns * 1e-9 / seconds.max(0.001);
    if share > SHARE_PLAUSIBLE {
        return Waited::Ticks { why: "more than the window holds at the tick PortSamplesControl gives: this device counts in other units" };
    }
    Waited::Share { share: share.min(1.0), tick, tick_ns }
}

/// Over a soak window (the counters already hold what rose in it): each port whose
/// PortXmitWait rose, the longest wait first, as a share of the window where the node's
/// PortSamplesControl Tick says the counter's unit (`ticks`), else in ticks per second.
pub fn congestion(fabric: &Fabric, seconds: f64, ticks: &std::collections::BTreeMap<Guid, TickRead>) -> Vec<Finding> {
    let index = Index::new(fabric);
    let mut waits: Vec<(u64, Guid, u8, Waited)> = fabric
        .nodes
        .iter()
        .flat_map(|n| n.ports.iter().map(move |p| (n.guid, p)))
        .filter_map(|(g, p)| {
            let wait = p.counters.filter(|c| c.xmit_wait > 0)?.xmit_wait;
            Some((wait, g, p.number, waited(wait, seconds, ticks.get(&g).copied(), p.info.speed_active)))
        })
        .collect();
    // Shares first (the largest first), then ticks (the most first).
    let rank = |w: &Waited| match w {
        Waited::Share { share, .. } => *share,
        Waited::Ticks { .. } => -1.0,
    };
    waits.sort_by(|a, b| rank(&b.3).total_cmp(&rank(&a.3)).then(b.0.cmp(&a.0)).then((a.1, a.2).cmp(&(b.1, b.2))));
    waits
        .into_iter()
        .take(CONGESTED_LISTED)
        .map(|(wait, guid, number, waited)| {
            let at = fabric.node(guid).map_or_else(|| format!("{guid}[{number}]"), |n| end_name(n, number));
            let message = match waited {
                Waited::Share { share, tick, tick_ns } => format!(
                    "at {at}: waited for credits {:.1}% of the {seconds:.0} s window (PortXmitWait rose by {wait} ticks of {} symbol times, \
                     {tick_ns:.2} ns each at this speed): the port had data to send and no credits",
                    share * 100.0,
                    u16::from(tick) + 1
                ),
                Waited::Ticks { why } => format!(
                    "at {at}: PortXmitWait rose by {wait} ticks in the {seconds:.0} s window ({:.0} per second; {why}): the port had data to send \
                     and no credits",
                    wait as f64 / seconds.max(0.001)
                ),
            };
            Finding {
                id: FindingId::FabricCongestion,
                severity: Severity::Info,
                subject: (subject(fabric, &index, guid, number)).into(),
                message,
                remedy: "credits withheld downstream: a receiver that cannot keep up, an uplink that routes carry too much of (see fabric.route's \
                         uplink figures), or a many-to-one traffic pattern"
                    .into(),
                about: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::discovery::model::{LocalView, Node, Port};
    use crate::mad::attributes::{Counters, NodeType};
    use crate::port::PortState;

    fn fabric() -> Fabric {
        let mut info = crate::mad::decode::port_info(&[0u8; 64], &[0u8; 64]);
        info.width_active = Width::X4;
        let port = |number, remote, wait| Port {
            number,
            guid: Guid(u64::from(number)),
            lid: 1,
            info: info.clone(),
            remote: Some(remote),
            counters: Some(Counters { xmit_wait: wait, ..Counters::default() }),
        };
        let leaf = Node {
            guid: Guid(0x10),
            node_type: NodeType::Switch,
            description: "leaf1".into(),
            num_ports: 8,
            ports: vec![port(2, (Guid(0x100), 1), 0)],
        };
        let host = Node {
            guid: Guid(0x100),
            node_type: NodeType::Ca,
            description: "hostB".into(),
            num_ports: 1,
            ports: vec![port(1, (Guid(0x10), 2), 5000)],
        };
        Fabric {
            local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 1, sm_lid: 1, state: PortState::Active },
            nodes: vec![leaf, host],
            master: None,
            others: vec![],
            gaps: vec![],
            counters_read: true,
        }
    }

    fn with(c: ExtSpeedsCounters) -> Vec<(String, Severity, String, String)> {
        let mut t = Tables::default();
        t.phy.insert((Guid(0x100), 1), c);
        judge(&fabric(), &t).into_iter().map(|f| (f.id.to_string(), f.severity, f.subject.to_string(), f.message)).collect()
    }

    fn rs(lanes: [u64; 4], uncorrectable: u64) -> ExtSpeedsCounters {
        let mut lane_corrected = vec![0; 12];
        lane_corrected[..4].copy_from_slice(&lanes);
        ExtSpeedsCounters { rs_fec: true, lane_corrected, uncorrectable_blocks: uncorrectable, ..ExtSpeedsCounters::default() }
    }

    #[test]
    fn a_clean_port_has_no_findings() {
        assert!(with(rs([10, 12, 9, 11], 0)).is_empty());
        assert!(with(rs([900, 0, 0, 0], 0)).is_empty(), "below 1000 errors a lane's share is noise");
    }

    #[test]
    fn a_lane_with_most_corrected_errors_is_named_from_lane_one() {
        let f = with(rs([100, 100, 4000, 100], 0));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].0.as_str(), f[0].1, f[0].2.as_str()), ("phy.ber", Severity::Info, "leaf1[2] <-> hostB[1]"));
        assert!(
            f[0].3.starts_with("at hostB[1]: lane 3 carries 93% of the port's 4300 corrected symbols (per lane: 100 100 4000 100;"),
            "{}",
            f[0].3
        );
    }

    #[test]
    fn uncorrectable_blocks_are_a_lifetime_warning() {
        let f = with(rs([100, 100, 4000, 100], 7));
        let ids: Vec<(&str, Severity)> = f.iter().map(|f| (f.0.as_str(), f.1)).collect();
        assert_eq!(ids, vec![("phy.fec", Severity::Warning), ("phy.ber", Severity::Warning)]);
        assert!(f[0].3.contains("7 blocks the RS-FEC could not correct") && f[0].3.contains("lifetime"), "{}", f[0].3);
        let mut fc = rs([0; 4], 3);
        fc.rs_fec = false;
        assert!(with(fc)[0].3.contains("Firecode FEC"));
    }

    #[test]
    fn lanes_past_the_link_width_are_not_counted() {
        let mut c = rs([0; 4], 0);
        c.lane_corrected[8] = 5000;
        assert!(with(c).is_empty(), "a 4X port has no lane 9");
    }

    #[test]
    fn congestion_says_ticks_over_the_window_when_the_tick_is_not_known() {
        let f = congestion(&fabric(), 10.0, &Default::default());
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(
            (f[0].id.as_str(), f[0].severity, f[0].subject.to_string().as_str()),
            ("fabric.congestion", Severity::Info, "leaf1[2] <-> hostB[1]")
        );
        assert_eq!(
            f[0].message,
            "at hostB[1]: PortXmitWait rose by 5000 ticks in the 10 s window (500 per second; the node's PortSamplesControl did not answer, \
             so the tick's length is not known): the port had data to send and no credits"
        );
    }

    fn at_speed(speed: crate::port::Speed, wait: u64) -> Fabric {
        let mut f = fabric();
        for p in &mut f.nodes[1].ports {
            p.info.speed_active = speed;
            p.counters = Some(Counters { xmit_wait: wait, ..Counters::default() });
        }
        f
    }

    #[test]
    fn congestion_is_a_share_of_the_window_where_the_tick_is_known() {
        use crate::port::Speed;
        let ticks = [(Guid(0x100), TickRead::Tick(7))].into_iter().collect();
        // HDR: 0.16 ns a symbol, Tick 7 = 8 symbols = 1.28 ns; 10 s at 12.5% is 1.25 s waited.
        let f = congestion(&at_speed(Speed::Hdr, 976_562_500), 10.0, &ticks);
        assert_eq!(
            f[0].message,
            "at hostB[1]: waited for credits 12.5% of the 10 s window (PortXmitWait rose by 976562500 ticks of 8 symbol times, 1.28 ns each \
             at this speed): the port had data to send and no credits"
        );
        // SDR: 4 ns a symbol, Tick 0 = 4 ns; a counter past the window is not made a share.
        let ticks = [(Guid(0x100), TickRead::Tick(0))].into_iter().collect();
        let f = congestion(&at_speed(Speed::Sdr, 3_000_000_000), 10.0, &ticks);
        assert!(f[0].message.contains("3000000000 ticks") && f[0].message.contains("this device counts in other units"), "{}", f[0].message);
        // An unknown speed: ticks.
        let f = congestion(&at_speed(Speed::Unknown(0), 10), 10.0, &ticks);
        assert!(f[0].message.contains("the port's speed is not known"), "{}", f[0].message);
        // Not asked where an SM answers: ticks, and why.
        let ticks = [(Guid(0x100), TickRead::SmBehind)].into_iter().collect();
        let f = congestion(&at_speed(Speed::Hdr, 10), 10.0, &ticks);
        assert!(f[0].message.contains("an SM runs behind the node's PerfMgt address"), "{}", f[0].message);
    }

    #[test]
    fn the_longest_wait_comes_first() {
        use crate::port::Speed;
        let mut f = at_speed(Speed::Edr, 1_000_000);
        f.nodes[0].ports[0].counters = Some(Counters { xmit_wait: 5_000_000_000, ..Counters::default() });
        // The host's known share first, then the switch's ticks (no Tick from the leaf).
        let ticks = [(Guid(0x100), TickRead::Tick(0))].into_iter().collect();
        let order: Vec<String> = congestion(&f, 10.0, &ticks).into_iter().map(|f| f.message[..12].to_string()).collect();
        assert_eq!(order, vec!["at hostB[1]:", "at leaf1[2]:"]);
    }
}
