//! What the other end of a link enables: the ceiling `link.trained` judges against.
//!
//! A 400G NIC cabled to a 200G switch port is a legitimate design; judging it against what the
//! NIC alone supports would fail it on every node and drain the fleet through NHC. So the
//! ceiling is the fastest mode both ends offer. RoCE: `ethtool IFACE`'s "Advertised link modes"
//! and "Link partner advertised link modes" (pure parsing here). InfiniBand: the peer port's
//! PortInfo one directed-route hop out, decoded elsewhere and recorded the same way.

use crate::port::{Speed, Width};
use serde::{Deserialize, Serialize};

/// The best both ends of a link enable, or why it is not known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LinkPartner {
    /// Ethernet: the fastest speed both this port and its partner advertise, Gb/s.
    Common { gbps: f64 },
    /// InfiniBand: the widest width and fastest speed both ends enable.
    Enabled { width: Width, speed: Speed },
    /// The partner's modes could not be read: the ceiling is this port's own.
    Unknown { why: PartnerUnknown },
}

/// Why the partner's modes are not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartnerUnknown {
    /// ethtool prints "Not reported" (autonegotiation off, common at 200/400G, or a driver
    /// that does not pass the partner's page on).
    NotReported,
    /// Autonegotiation is off: no partner page is exchanged.
    AutonegOff,
    /// The report has no "Link partner advertised link modes" line at all.
    NoLine,
    /// Both ends advertise modes but no speed in common (a report that contradicts the link).
    NoCommonMode,
    /// InfiniBand: the peer's PortInfo was not read (a bundle without
    /// `tools/peer_portinfo/`, or the SMP was not answered).
    NoPeerPortInfo,
}

impl PartnerUnknown {
    /// The reason in words, for a finding.
    pub fn words(self) -> &'static str {
        match self {
            PartnerUnknown::NotReported => "ethtool reports the link partner's modes as \"Not reported\"",
            PartnerUnknown::AutonegOff => "autonegotiation is off, so the link partner's modes are not exchanged",
            PartnerUnknown::NoLine => "the ethtool report does not list the link partner's modes",
            PartnerUnknown::NoCommonMode => "this port and its link partner advertise no speed in common",
            PartnerUnknown::NoPeerPortInfo => "the peer port's PortInfo (one directed-route hop out) could not be read",
        }
    }
}

/// The link-mode lists of one `ethtool IFACE` report, as speeds in Mb/s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EthtoolModes {
    pub supported: Vec<u32>,
    pub advertised: Vec<u32>,
    /// `None`: no partner line; `Some(empty)`: "Not reported".
    pub partner: Option<Vec<u32>>,
    pub autoneg: Option<bool>,
    /// Lanes the link runs on: ethtool's own `Lanes: N` line where it prints one (ethtool ≥ 5.10
    /// with a driver that reports lanes), else from the name of a listed mode at the current
    /// speed (`400000baseCR4` → 4), which cannot tell 100G on four lanes from 100G on two.
    pub lanes: Option<u32>,
}

/// Reads the mode lists of an `ethtool IFACE` report. Fields come in any order; a list runs
/// on over continuation lines that hold no `Key:` of their own.
pub fn parse_ethtool_modes(report: &str) -> EthtoolModes {
    #[derive(Clone, Copy, PartialEq)]
    enum List {
        None,
        Supported,
        Advertised,
        Partner,
    }
    let mut out = EthtoolModes::default();
    let mut current = List::None;
    let mut names: Vec<String> = Vec::new();
    let mut speed_mbps: Option<u32> = None;
    let mut lanes_line: Option<u32> = None;
    for line in report.lines().take(4096) {
        let trimmed = line.trim();
        let (list, rest) = if let Some(rest) = trimmed.strip_prefix("Supported link modes:") {
            (List::Supported, rest)
        } else if let Some(rest) = trimmed.strip_prefix("Advertised link modes:") {
            (List::Advertised, rest)
        } else if let Some(rest) = trimmed.strip_prefix("Link partner advertised link modes:") {
            out.partner.get_or_insert_with(Vec::new);
            (List::Partner, rest)
        } else if trimmed.contains(':') {
            current = List::None;
            if let Some(v) = trimmed.strip_prefix("Auto-negotiation:") {
                out.autoneg = match v.trim() {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                };
            } else if let Some(v) = trimmed.strip_prefix("Speed:") {
                speed_mbps = v.trim().strip_suffix("Mb/s").and_then(|n| n.parse().ok());
            } else if let Some(v) = trimmed.strip_prefix("Lanes:") {
                // ethtool netlink/settings.c `linkmodes_reply_cb`: `"\tLanes: %u\n"` when the
                // kernel sends ETHTOOL_A_LINKMODES_LANES; 0 would be the kernel's "unknown".
                lanes_line = v.trim().parse().ok().filter(|&n| n > 0);
            }
            continue;
        } else {
            (current, trimmed)
        };
        current = list;
        let target = match list {
            List::Supported => &mut out.supported,
            List::Advertised => &mut out.advertised,
            List::Partner => out.partner.get_or_insert_with(Vec::new),
            List::None => continue,
        };
        for mode in rest.split_whitespace() {
            if let Some(speed) = mode_speed(mode) {
                target.push(speed);
                names.push(mode.to_string());
            }
        }
    }
    out.lanes = lanes_line.or_else(|| speed_mbps.and_then(|speed| names.iter().filter(|n| mode_speed(n) == Some(speed)).find_map(|n| mode_lanes(n))));
    out
}

/// `200000baseCR4/Full` → 200000; words such as `Not` or `reported` → none.
fn mode_speed(mode: &str) -> Option<u32> {
    mode.split_once("base")?.0.parse().ok()
}

/// `400000baseCR4/Full` → 4, `25000baseSR/Full` → 1, `400000baseDR4_2/Full` → 4.
fn mode_lanes(mode: &str) -> Option<u32> {
    let media = mode.split_once("base")?.1.split('/').next()?;
    let media = media.split('_').next()?;
    let digits: String = media.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        media.chars().all(|c| c.is_ascii_alphabetic()).then_some(1)
    } else {
        digits.parse().ok()
    }
}

/// The best both ends of an Ethernet link offer: the fastest speed in this port's advertised
/// list (its supported list when it advertises none) that the partner also advertises.
pub fn ethernet_partner(modes: &EthtoolModes) -> LinkPartner {
    let Some(partner) = &modes.partner else {
        let why = if modes.autoneg == Some(false) { PartnerUnknown::AutonegOff } else { PartnerUnknown::NoLine };
        return LinkPartner::Unknown { why };
    };
    if partner.is_empty() {
        let why = if modes.autoneg == Some(false) { PartnerUnknown::AutonegOff } else { PartnerUnknown::NotReported };
        return LinkPartner::Unknown { why };
    }
    let ours = if modes.advertised.is_empty() { &modes.supported } else { &modes.advertised };
    let common = if ours.is_empty() { partner.iter().max() } else { ours.iter().filter(|s| partner.contains(s)).max() };
    match common {
        Some(&mbps) => LinkPartner::Common { gbps: f64::from(mbps) / 1000.0 },
        None => LinkPartner::Unknown { why: PartnerUnknown::NoCommonMode },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CX7_AT_200_PARTNER: &str = "Settings for ens2np0:\n\tSupported ports: [ Backplane ]\n\tSupported link modes:   100000baseKR2/Full\n\t                        200000baseKR4/Full\n\t                        400000baseCR4/Full\n\tSupported pause frame use: Symmetric\n\tSupports auto-negotiation: Yes\n\tAdvertised link modes:  200000baseKR4/Full\n\t                        400000baseCR4/Full\n\tAdvertised auto-negotiation: Yes\n\tLink partner advertised link modes:  200000baseCR4/Full\n\tSpeed: 200000Mb/s\n\tAuto-negotiation: on\n";

    #[test]
    fn a_200g_partner_caps_a_400g_port() {
        let modes = parse_ethtool_modes(CX7_AT_200_PARTNER);
        assert_eq!(modes.supported, vec![100_000, 200_000, 400_000]);
        assert_eq!(modes.advertised, vec![200_000, 400_000]);
        assert_eq!(modes.partner, Some(vec![200_000]));
        assert_eq!(modes.lanes, Some(4));
        assert_eq!(ethernet_partner(&modes), LinkPartner::Common { gbps: 200.0 });
    }

    #[test]
    fn a_400g_partner_over_several_lines() {
        let report = CX7_AT_200_PARTNER.replace(
            "Link partner advertised link modes:  200000baseCR4/Full",
            "Link partner advertised link modes:  200000baseCR4/Full\n\t                                     400000baseCR4/Full",
        );
        assert_eq!(ethernet_partner(&parse_ethtool_modes(&report)), LinkPartner::Common { gbps: 400.0 });
    }

    #[test]
    fn not_reported_and_autoneg_off_are_unknown_not_a_ceiling() {
        let report = CX7_AT_200_PARTNER
            .replace("Link partner advertised link modes:  200000baseCR4/Full", "Link partner advertised link modes:  Not reported");
        assert_eq!(ethernet_partner(&parse_ethtool_modes(&report)), LinkPartner::Unknown { why: PartnerUnknown::NotReported });
        let off = report.replace("Auto-negotiation: on", "Auto-negotiation: off");
        assert_eq!(ethernet_partner(&parse_ethtool_modes(&off)), LinkPartner::Unknown { why: PartnerUnknown::AutonegOff });
        let none = CX7_AT_200_PARTNER.replace("\tLink partner advertised link modes:  200000baseCR4/Full\n", "");
        assert_eq!(ethernet_partner(&parse_ethtool_modes(&none)), LinkPartner::Unknown { why: PartnerUnknown::NoLine });
    }

    #[test]
    fn ethtools_lanes_line_wins_over_the_mode_names() {
        // 100G on two 50G PAM4 lanes: the first 100G mode listed is 100000baseKR4, but ethtool
        // prints the lanes in use (tests/fixtures/wild/ethtool-spectrum-100g-lanes-2-excerpt.txt).
        let report = CX7_AT_200_PARTNER
            .replace("100000baseKR2/Full", "100000baseKR4/Full\n\t                        100000baseKR2/Full")
            .replace("Speed: 200000Mb/s", "Speed: 100000Mb/s\n\tLanes: 2");
        let modes = parse_ethtool_modes(&report);
        assert_eq!(modes.lanes, Some(2));
        assert_eq!(parse_ethtool_modes(&report.replace("\tLanes: 2\n", "")).lanes, Some(4), "without the line: the first name");
        assert_eq!(parse_ethtool_modes(&report.replace("Lanes: 2", "Lanes: 0")).lanes, Some(4), "0 is not a lane count");
        assert_eq!(parse_ethtool_modes("\tSpeed: 100000Mb/s\n\tLanes: 2\n").lanes, Some(2), "no mode list at all");
    }

    #[test]
    fn lanes_from_mode_names() {
        assert_eq!(mode_lanes("400000baseCR4/Full"), Some(4));
        assert_eq!(mode_lanes("25000baseSR/Full"), Some(1));
        assert_eq!(mode_lanes("400000baseDR4_2/Full"), Some(4));
        assert_eq!(mode_lanes("100000baseKR2/Full"), Some(2));
        assert_eq!(mode_speed("Not"), None);
    }
}
