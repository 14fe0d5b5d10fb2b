//! Decoding of the numeric port attributes that verbs and sysfs report.
//!
//! Every enum keeps an `Unknown(n)` arm: a newer kernel or firmware may report a value
//! this build has never heard of, and the inventory must show it rather than panic or
//! silently round it to something familiar.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $value:expr => $text:expr),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)+
            /// A value this build does not know; kept verbatim.
            Unknown(u32),
        }

        impl $name {
            /// Decodes the raw value that verbs (or the number before the colon in sysfs) gives.
            pub fn from_raw(raw: u32) -> Self {
                match raw {
                    $($value => $name::$variant,)+
                    other => $name::Unknown(other),
                }
            }

            /// The raw value, for round trips and comparisons.
            pub fn raw(self) -> u32 {
                match self {
                    $($name::$variant => $value,)+
                    $name::Unknown(other) => other,
                }
            }

            /// The name used in fabcheck's output and JSON.
            pub fn name(self) -> std::borrow::Cow<'static, str> {
                match self {
                    $($name::$variant => std::borrow::Cow::Borrowed($text),)+
                    $name::Unknown(other) => std::borrow::Cow::Owned(format!("UNKNOWN({other})")),
                }
            }

            /// Parses a name as written by [`Self::name`] (case-insensitive).
            pub fn from_name(text: &str) -> Option<Self> {
                let text = text.trim();
                $(if text.eq_ignore_ascii_case($text) { return Some($name::$variant); })+
                let inner = text.strip_prefix("UNKNOWN(")?.strip_suffix(')')?;
                inner.parse().ok().map($name::Unknown)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.name())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::from_name(&text)
                    .ok_or_else(|| serde::de::Error::custom(format!("unknown {} '{}'", stringify!($name), text)))
            }
        }
    };
}

named_enum!(
    /// Logical port state (`enum ibv_port_state`, sysfs `ports/N/state`).
    PortState {
        Nop = 0 => "NOP",
        Down = 1 => "DOWN",
        Init = 2 => "INIT",
        Armed = 3 => "ARMED",
        Active = 4 => "ACTIVE",
        ActiveDefer = 5 => "ACTIVE_DEFER",
    }
);

named_enum!(
    /// Physical port state (IBTA PortPhysicalState, sysfs `ports/N/phys_state`).
    PhysState {
        Sleep = 1 => "SLEEP",
        Polling = 2 => "POLLING",
        Disabled = 3 => "DISABLED",
        Training = 4 => "TRAINING",
        LinkUp = 5 => "LINK_UP",
        ErrorRecovery = 6 => "ERROR_RECOVERY",
        PhyTest = 7 => "PHY_TEST",
    }
);

named_enum!(
    /// Link layer (`IBV_LINK_LAYER_*`). Unspecified (0) is what old drivers report for IB.
    LinkLayer {
        InfiniBand = 1 => "InfiniBand",
        Ethernet = 2 => "Ethernet",
    }
);

named_enum!(
    /// Active link width (`active_width` bit values).
    Width {
        X1 = 1 => "1X",
        X4 = 2 => "4X",
        X8 = 4 => "8X",
        X12 = 8 => "12X",
        X2 = 16 => "2X",
    }
);

named_enum!(
    /// Per-lane signalling speed (`active_speed`, or `active_speed_ex` for XDR and later).
    Speed {
        Sdr = 1 => "SDR",
        Ddr = 2 => "DDR",
        Qdr = 4 => "QDR",
        Fdr10 = 8 => "FDR10",
        Fdr = 16 => "FDR",
        Edr = 32 => "EDR",
        Hdr = 64 => "HDR",
        Ndr = 128 => "NDR",
        Xdr = 256 => "XDR",
    }
);

impl LinkLayer {
    /// Verbs reports 0 ("unspecified") on InfiniBand with some old drivers.
    pub fn from_verbs(raw: u32) -> Self {
        if raw == 0 {
            LinkLayer::InfiniBand
        } else {
            LinkLayer::from_raw(raw)
        }
    }
}

impl Width {
    /// Number of lanes, if known.
    pub fn lanes(self) -> Option<u32> {
        match self {
            Width::X1 => Some(1),
            Width::X2 => Some(2),
            Width::X4 => Some(4),
            Width::X8 => Some(8),
            Width::X12 => Some(12),
            Width::Unknown(_) => None,
        }
    }

    /// From a lane count as sysfs writes it ("4X" -> 4 lanes).
    pub fn from_lanes(lanes: u32) -> Self {
        match lanes {
            1 => Width::X1,
            2 => Width::X2,
            4 => Width::X4,
            8 => Width::X8,
            12 => Width::X12,
            other => Width::Unknown(other << 8),
        }
    }
}

impl Speed {
    /// Per-lane figure that `ibstat` and sysfs print (signalling class, Gb/s).
    pub fn nominal_lane_gbps(self) -> Option<f64> {
        Some(match self {
            Speed::Sdr => 2.5,
            Speed::Ddr => 5.0,
            Speed::Qdr => 10.0,
            Speed::Fdr10 => 10.0,
            Speed::Fdr => 14.0,
            Speed::Edr => 25.0,
            Speed::Hdr => 50.0,
            Speed::Ndr => 100.0,
            Speed::Xdr => 200.0,
            Speed::Unknown(_) => return None,
        })
    }

    /// Per-lane data rate after line encoding, Gb/s: what a transfer can actually carry.
    ///
    /// SDR/DDR/QDR use 8b/10b (80 %); FDR10 and FDR use 64b/66b on 10.3125 and 14.0625 GBd;
    /// EDR's 25.78125 GBd with 64b/66b carries 25; HDR, NDR and XDR are quoted as data rates.
    pub fn data_lane_gbps(self) -> Option<f64> {
        Some(match self {
            Speed::Sdr => 2.0,
            Speed::Ddr => 4.0,
            Speed::Qdr => 8.0,
            Speed::Fdr10 => 10.0,
            Speed::Fdr => 14.0625 * 64.0 / 66.0,
            Speed::Edr => 25.0,
            Speed::Hdr => 50.0,
            Speed::Ndr => 100.0,
            Speed::Xdr => 200.0,
            Speed::Unknown(_) => return None,
        })
    }

    /// Order for "at least this speed" comparisons (FDR10 sits between QDR and FDR).
    pub fn rank(self) -> u32 {
        match self {
            Speed::Unknown(_) => 0,
            known => known.raw(),
        }
    }

    /// Combines `active_speed` and `active_speed_ex` as rdma-core's `ibv_devinfo` does:
    /// the extended field wins when the library filled it in.
    pub fn from_verbs(active_speed: u32, active_speed_ex: u32) -> Self {
        if active_speed_ex != 0 {
            Speed::from_raw(active_speed_ex)
        } else {
            Speed::from_raw(active_speed)
        }
    }
}

/// Link rate of a port: width times per-lane speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Data rate after encoding, Gb/s, rounded to 0.1 (4X FDR: 54.5).
    pub data_gbps: f64,
    /// The figure `ibstat` and sysfs print, Gb/s (4X FDR: 56).
    pub nominal_gbps: f64,
}

/// Rate of `width` lanes at `speed`; `None` if either is unknown.
pub fn link_rate(width: Width, speed: Speed) -> Option<Rate> {
    let lanes = f64::from(width.lanes()?);
    Some(Rate { data_gbps: round1(lanes * speed.data_lane_gbps()?), nominal_gbps: round1(lanes * speed.nominal_lane_gbps()?) })
}

fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// An InfiniBand/RoCE path MTU: the one mapping between `enum ibv_mtu` (1..5, also PortInfo's
/// MTU encoding) and bytes, both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mtu {
    B256 = 1,
    B512 = 2,
    B1024 = 3,
    B2048 = 4,
    B4096 = 5,
}

impl Mtu {
    pub const ALL: [Mtu; 5] = [Mtu::B256, Mtu::B512, Mtu::B1024, Mtu::B2048, Mtu::B4096];

    /// From `enum ibv_mtu`; `None` for anything else.
    pub fn from_verbs(raw: u32) -> Option<Mtu> {
        Mtu::ALL.into_iter().find(|m| *m as u32 == raw)
    }

    /// As `enum ibv_mtu`, for `ibv_modify_qp`.
    pub fn to_verbs(self) -> u32 {
        self as u32
    }

    pub fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// From a size in bytes, if it is one of the five.
    pub fn from_bytes(bytes: u32) -> Option<Mtu> {
        Mtu::ALL.into_iter().find(|m| m.bytes() == bytes)
    }

    /// The largest MTU not above `bytes` (256 for anything smaller).
    pub fn at_most(bytes: u32) -> Mtu {
        Mtu::ALL.into_iter().rev().find(|m| m.bytes() <= bytes).unwrap_or(Mtu::B256)
    }
}

/// `enum ibv_mtu` (1..5) to bytes.
pub fn mtu_bytes(raw: u32) -> Option<u32> {
    Mtu::from_verbs(raw).map(Mtu::bytes)
}

/// RoCE active MTU the kernel derives from a netdev MTU (`iboe_get_mtu`): the largest IB MTU
/// that fits once the RoCE headers (GRH 40, BTH 12, XRC 4, AtomicETH 28, ICRC 4 = 88 bytes)
/// are taken off.
pub fn roce_mtu_for_netdev_mtu(netdev_mtu: u32) -> Option<u32> {
    let room = netdev_mtu.checked_sub(88)?;
    (room >= Mtu::B256.bytes()).then(|| Mtu::at_most(room).bytes())
}

/// GID type (`IBV_GID_TYPE_*`), named as `ibv_devinfo -v` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GidType {
    Ib,
    RoceV1,
    RoceV2,
    Unknown(u32),
    /// The source gave no type at all (an old kernel's sysfs, the legacy verbs query).
    Unreported,
}

impl GidType {
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            0 => GidType::Ib,
            1 => GidType::RoceV1,
            2 => GidType::RoceV2,
            other => GidType::Unknown(other),
        }
    }

    pub fn name(self) -> String {
        match self {
            GidType::Ib => "IB".into(),
            GidType::RoceV1 => "RoCE v1".into(),
            GidType::RoceV2 => "RoCE v2".into(),
            GidType::Unknown(n) => format!("UNKNOWN({n})"),
            GidType::Unreported => "UNKNOWN".into(),
        }
    }

    /// Sysfs writes "IB/RoCE v1" for both IB and RoCE v1; the link layer tells them apart.
    pub fn from_sysfs(text: &str, link_layer: LinkLayer) -> Self {
        match text.trim() {
            "RoCE v2" => GidType::RoceV2,
            "IB/RoCE v1" | "RoCE v1" | "IB" if link_layer == LinkLayer::Ethernet => GidType::RoceV1,
            "IB/RoCE v1" | "RoCE v1" => GidType::RoceV1,
            "IB" => GidType::Ib,
            _ => GidType::Unreported,
        }
        .or_ib(link_layer)
    }

    fn or_ib(self, link_layer: LinkLayer) -> Self {
        if link_layer == LinkLayer::InfiniBand && self == GidType::RoceV1 {
            GidType::Ib
        } else {
            self
        }
    }
}

impl Serialize for GidType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for GidType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "IB" => GidType::Ib,
            "RoCE v1" => GidType::RoceV1,
            "RoCE v2" => GidType::RoceV2,
            other => match other.strip_prefix("UNKNOWN(").and_then(|s| s.strip_suffix(')')).and_then(|s| s.parse().ok()) {
                Some(n) => GidType::Unknown(n),
                None => GidType::Unreported,
            },
        })
    }
}

/// Formats a 16-byte GID the way `inet_ntop(AF_INET6)` does (RFC 5952), which is how
/// `ibv_devinfo` and `rdma` print them: `fe80::ba3f:d2ff:fe01:203`, `::ffff:198.18.0.1`.
pub fn format_gid(raw: &[u8; 16]) -> String {
    std::net::Ipv6Addr::from(*raw).to_string()
}

/// Whether a GID is all zeros (an unused table slot).
pub fn gid_is_zero(raw: &[u8; 16]) -> bool {
    raw.iter().all(|&b| b == 0)
}

/// What a GID's address is, for choosing one and judging RoCE readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GidScope {
    /// `::ffff:a.b.c.d`: an IPv4 address.
    Ipv4,
    /// `fe80::/10`: link-local (the IB default GID, or RoCE's MAC-derived one).
    LinkLocal,
    /// Any other IPv6 address.
    Ipv6Global,
}

pub fn gid_scope(raw: &[u8; 16]) -> GidScope {
    let addr = std::net::Ipv6Addr::from(*raw);
    if addr.to_ipv4_mapped().is_some() {
        GidScope::Ipv4
    } else if raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80 {
        GidScope::LinkLocal
    } else {
        GidScope::Ipv6Global
    }
}

/// Parses a GID as sysfs writes it (eight groups of four hex digits) or as RFC 5952 text.
pub fn parse_gid(text: &str) -> Option<[u8; 16]> {
    text.trim().parse::<std::net::Ipv6Addr>().ok().map(|a| a.octets())
}

/// Formats a 64-bit GUID (given in host order of its big-endian bytes) as `ibv_devinfo` does:
/// four groups of four hex digits, `7849:6cff:fecc:dc3e`.
pub fn format_guid(guid: u64) -> String {
    format!("{:04x}:{:04x}:{:04x}:{:04x}", (guid >> 48) & 0xffff, (guid >> 32) & 0xffff, (guid >> 16) & 0xffff, guid & 0xffff)
}

/// Parses a sysfs "N: TEXT" state line ("4: ACTIVE", "5: LinkUp") into its number.
pub fn parse_numbered(text: &str) -> Option<u32> {
    text.split(':').next()?.trim().parse().ok()
}

/// Parses sysfs `rate` ("200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (1X)").
/// Returns the nominal Gb/s, the width and the speed (speed is absent on some kernels for SDR).
pub fn parse_sysfs_rate(text: &str) -> Option<(f64, Width, Option<Speed>)> {
    let text = text.trim();
    let (number, rest) = text.split_once(' ')?;
    let nominal: f64 = number.parse().ok()?;
    let inner = rest.split_once('(')?.1.split_once(')')?.0.trim();
    let mut parts = inner.split_whitespace();
    let width_text = parts.next()?;
    let lanes: u32 = width_text.strip_suffix('X')?.parse().ok()?;
    let speed = parts.next().map(|s| Speed::from_name(s).unwrap_or(Speed::Unknown(0)));
    Some((nominal, Width::from_lanes(lanes), speed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_SPEEDS: [(u32, &str, f64, f64); 9] = [
        (1, "SDR", 2.0, 2.5),
        (2, "DDR", 4.0, 5.0),
        (4, "QDR", 8.0, 10.0),
        (8, "FDR10", 10.0, 10.0),
        (16, "FDR", 13.636, 14.0),
        (32, "EDR", 25.0, 25.0),
        (64, "HDR", 50.0, 50.0),
        (128, "NDR", 100.0, 100.0),
        (256, "XDR", 200.0, 200.0),
    ];

    #[test]
    fn every_speed_decodes_and_round_trips() {
        for (raw, name, data, nominal) in ALL_SPEEDS {
            let speed = Speed::from_raw(raw);
            assert_eq!(speed.name(), name);
            assert_eq!(Speed::from_name(name), Some(speed));
            assert_eq!(speed.raw(), raw);
            assert!((speed.data_lane_gbps().unwrap() - data).abs() < 0.001, "{name}");
            assert_eq!(speed.nominal_lane_gbps(), Some(nominal));
        }
    }

    #[test]
    fn every_width_decodes() {
        for (raw, name, lanes) in [(1, "1X", 1), (2, "4X", 4), (4, "8X", 8), (8, "12X", 12), (16, "2X", 2)] {
            let width = Width::from_raw(raw);
            assert_eq!(width.name(), name);
            assert_eq!(width.lanes(), Some(lanes));
            assert_eq!(Width::from_lanes(lanes), width);
            assert_eq!(Width::from_name(name), Some(width));
        }
    }

    #[test]
    fn rate_table_matches_the_contract() {
        let cases = [
            (Width::X4, Speed::Hdr, 200.0, 200.0),
            (Width::X4, Speed::Ndr, 400.0, 400.0),
            (Width::X2, Speed::Ndr, 200.0, 200.0),
            (Width::X4, Speed::Qdr, 32.0, 40.0),
            (Width::X4, Speed::Fdr, 54.5, 56.0),
            (Width::X4, Speed::Fdr10, 40.0, 40.0),
            (Width::X4, Speed::Edr, 100.0, 100.0),
            (Width::X1, Speed::Hdr, 50.0, 50.0),
            (Width::X2, Speed::Hdr, 100.0, 100.0),
            (Width::X4, Speed::Xdr, 800.0, 800.0),
            (Width::X1, Speed::Sdr, 2.0, 2.5),
            (Width::X12, Speed::Qdr, 96.0, 120.0),
            (Width::X8, Speed::Ndr, 800.0, 800.0),
            (Width::X4, Speed::Ddr, 16.0, 20.0),
            (Width::X1, Speed::Fdr10, 10.0, 10.0),
        ];
        for (width, speed, data, nominal) in cases {
            let rate = link_rate(width, speed).unwrap();
            assert_eq!(rate.data_gbps, data, "{width} {speed}");
            assert_eq!(rate.nominal_gbps, nominal, "{width} {speed}");
        }
    }

    #[test]
    fn unknown_values_are_kept_not_panicked_on() {
        assert_eq!(Speed::from_raw(512).name(), "UNKNOWN(512)");
        assert_eq!(Speed::from_name("UNKNOWN(512)"), Some(Speed::Unknown(512)));
        assert_eq!(Width::from_raw(3).name(), "UNKNOWN(3)");
        assert_eq!(PortState::from_raw(9).name(), "UNKNOWN(9)");
        assert_eq!(PhysState::from_raw(0).name(), "UNKNOWN(0)");
        assert_eq!(LinkLayer::from_raw(7).name(), "UNKNOWN(7)");
        assert!(link_rate(Width::Unknown(3), Speed::Hdr).is_none());
        assert!(link_rate(Width::X4, Speed::Unknown(512)).is_none());
        assert_eq!(GidType::from_raw(9).name(), "UNKNOWN(9)");
        assert_eq!(mtu_bytes(0), None);
        assert_eq!(mtu_bytes(6), None);
    }

    #[test]
    fn states_decode() {
        let states = [(1, "DOWN"), (2, "INIT"), (3, "ARMED"), (4, "ACTIVE"), (5, "ACTIVE_DEFER")];
        for (raw, name) in states {
            assert_eq!(PortState::from_raw(raw).name(), name);
        }
        let phys = [(1, "SLEEP"), (2, "POLLING"), (3, "DISABLED"), (4, "TRAINING"), (5, "LINK_UP"), (6, "ERROR_RECOVERY"), (7, "PHY_TEST")];
        for (raw, name) in phys {
            assert_eq!(PhysState::from_raw(raw).name(), name);
        }
        assert_eq!(LinkLayer::from_verbs(0), LinkLayer::InfiniBand);
        assert_eq!(LinkLayer::from_verbs(2), LinkLayer::Ethernet);
    }

    #[test]
    fn extended_speed_wins_when_present() {
        assert_eq!(Speed::from_verbs(0, 256), Speed::Xdr);
        assert_eq!(Speed::from_verbs(128, 0), Speed::Ndr);
        assert_eq!(Speed::from_verbs(64, 64), Speed::Hdr);
    }

    #[test]
    fn mtus() {
        assert_eq!(mtu_bytes(1), Some(256));
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(1500), Some(1024));
        assert_eq!(roce_mtu_for_netdev_mtu(9000), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(4200), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(4183), Some(2048));
        assert_eq!(roce_mtu_for_netdev_mtu(60), None);
        assert_eq!(roce_mtu_for_netdev_mtu(300), None);
        for m in Mtu::ALL {
            assert_eq!(Mtu::from_verbs(m.to_verbs()), Some(m));
            assert_eq!(Mtu::from_bytes(m.bytes()), Some(m));
            assert_eq!(Mtu::at_most(m.bytes()), m);
            assert_eq!(Mtu::at_most(m.bytes() + 1), m);
        }
        assert_eq!(Mtu::from_verbs(0), None);
        assert_eq!(Mtu::from_verbs(6), None);
        assert_eq!(Mtu::at_most(100), Mtu::B256);
        assert_eq!(Mtu::at_most(1_000_000), Mtu::B4096);
    }

    #[test]
    fn gids_format_like_inet_ntop() {
        let v4 = parse_gid("0000:0000:0000:0000:0000:ffff:c612:0001").unwrap();
        assert_eq!(format_gid(&v4), "::ffff:198.18.0.1");
        assert_eq!(gid_scope(&v4), GidScope::Ipv4);
        let ll = parse_gid("fe80:0000:0000:0000:b83f:d203:00a1:2b3c").unwrap();
        assert_eq!(format_gid(&ll), "fe80::b83f:d203:a1:2b3c");
        assert_eq!(gid_scope(&ll), GidScope::LinkLocal);
        let global = parse_gid("2001:0db8:0000:0000:0000:0000:0000:0001").unwrap();
        assert_eq!(format_gid(&global), "2001:db8::1");
        assert_eq!(gid_scope(&global), GidScope::Ipv6Global);
        assert!(gid_is_zero(&[0; 16]));
        assert!(!gid_is_zero(&v4));
        assert_eq!(parse_gid("not a gid"), None);
    }

    #[test]
    fn guid_format() {
        assert_eq!(format_guid(0x7849_6cff_fecc_dc3e), "7849:6cff:fecc:dc3e");
        assert_eq!(format_guid(0x0002_c903_0000_0001), "0002:c903:0000:0001");
    }

    #[test]
    fn sysfs_rate_lines() {
        assert_eq!(parse_sysfs_rate("200 Gb/sec (4X HDR)\n"), Some((200.0, Width::X4, Some(Speed::Hdr))));
        assert_eq!(parse_sysfs_rate("2.5 Gb/sec (1X SDR)"), Some((2.5, Width::X1, Some(Speed::Sdr))));
        assert_eq!(parse_sysfs_rate("56 Gb/sec (4X FDR)"), Some((56.0, Width::X4, Some(Speed::Fdr))));
        assert_eq!(parse_sysfs_rate("200 Gb/sec (2X NDR)"), Some((200.0, Width::X2, Some(Speed::Ndr))));
        assert_eq!(parse_sysfs_rate("10 Gb/sec (1X FDR10)"), Some((10.0, Width::X1, Some(Speed::Fdr10))));
        assert_eq!(parse_sysfs_rate("garbage"), None);
        assert_eq!(parse_numbered("4: ACTIVE"), Some(4));
        assert_eq!(parse_numbered("5: LinkUp\n"), Some(5));
    }

    #[test]
    fn gid_types_from_sysfs_follow_link_layer() {
        assert_eq!(GidType::from_sysfs("IB/RoCE v1", LinkLayer::InfiniBand), GidType::Ib);
        assert_eq!(GidType::from_sysfs("IB/RoCE v1", LinkLayer::Ethernet), GidType::RoceV1);
        assert_eq!(GidType::from_sysfs("RoCE v2\n", LinkLayer::Ethernet), GidType::RoceV2);
    }

    #[test]
    fn json_names() {
        assert_eq!(serde_json::to_string(&PortState::Active).unwrap(), "\"ACTIVE\"");
        assert_eq!(serde_json::from_str::<Speed>("\"NDR\"").unwrap(), Speed::Ndr);
        assert_eq!(serde_json::to_string(&GidType::RoceV2).unwrap(), "\"RoCE v2\"");
    }
}
