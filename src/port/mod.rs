//! The port's vocabulary: the numeric attributes verbs and sysfs report, decoded (state,
//! physical state, width, speed, link layer, MTU, GIDs), below every module that speaks of
//! ports (`model`'s test endpoints, `probe`'s inventory, `perf`, `diagnose`, `gpu`). By topic
//! in `rate` (lane speeds, link rates), `mtu` (path MTU, RoCE's derived MTU) and `gid` (GID
//! types and addresses, GUIDs); all re-exported so callers name `port::*`.
//!
//! Every enum keeps an `Unknown(n)` arm: a newer kernel or firmware may report a value
//! this build has never heard of, and the inventory must show it rather than panic or
//! silently round it to something familiar.

mod gid;
mod mtu;
mod rate;

pub use gid::{format_gid, format_guid, gid_is_zero, gid_scope, parse_gid, GidScope, GidType};
pub use mtu::{mtu_bytes, roce_mtu_for_netdev_mtu, Mtu, RoceHeaders};
pub use rate::{link_rate, nominal_of_data, parse_sysfs_rate, Rate};

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
    /// Link layer (`IBV_LINK_LAYER_*`). Unspecified (0) is InfiniBand on a channel adapter
    /// ([`LinkLayer::from_verbs`]); on a device of neither (AWS EFA) it is itself, named as
    /// rdma-core's `ibv_devinfo` names it (sysfs prints "Unknown" for it).
    LinkLayer {
        Unspecified = 0 => "Unspecified",
        InfiniBand = 1 => "InfiniBand",
        Ethernet = 2 => "Ethernet",
    }
);

named_enum!(
    /// What kind of RDMA device a node is (`enum rdma_node_type`; sysfs `node_type`, the number
    /// before the colon, as the kernel's `node_type_show` prints it: `1: CA`, `4: RNIC`, ...).
    /// InfiniBand and RoCE adapters are CAs; iWARP adapters (Intel irdma in iWARP mode, Chelsio
    /// cxgb4, Soft-iWARP) are RNICs; AWS EFA is unspecified, Cisco's usNIC its own.
    NodeType {
        Ca = 1 => "CA",
        Switch = 2 => "switch",
        Router = 3 => "router",
        Rnic = 4 => "RNIC",
        Usnic = 5 => "usNIC",
        UsnicUdp = 6 => "usNIC UDP",
        Unspecified = 7 => "unspecified",
    }
);

/// A device whose `node_type` could not be read is taken for a CA, as every reader did before
/// node types were read: InfiniBand and RoCE adapters, the devices fabcheck judges in full.
impl Default for NodeType {
    fn default() -> NodeType {
        NodeType::Ca
    }
}

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
    /// The link layer `ibv_query_port` gives. 0 is `IBV_LINK_LAYER_UNSPECIFIED`: on a channel
    /// adapter it is InfiniBand (drivers before the field existed left it 0; `ibv_devinfo`
    /// prints "InfiniBand" for it), but the kernel also answers it for a device that is neither
    /// InfiniBand nor Ethernet (`rdma_port_get_link_layer` for node type unspecified: AWS EFA),
    /// whose sysfs `link_layer` then reads "Unknown". Such a port is no InfiniBand port: it has
    /// no subnet manager and no LID, and must not be judged for them.
    pub fn from_verbs(raw: u32, node_type: NodeType) -> Self {
        match raw {
            0 if matches!(node_type, NodeType::Ca | NodeType::Unknown(_)) => LinkLayer::InfiniBand,
            raw => LinkLayer::from_raw(raw),
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

/// Parses a sysfs "N: TEXT" state line ("4: ACTIVE", "5: LinkUp") into its number.
pub fn parse_numbered(text: &str) -> Option<u32> {
    text.split(':').next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(LinkLayer::from_verbs(0, NodeType::Ca), LinkLayer::InfiniBand);
        assert_eq!(LinkLayer::from_verbs(2, NodeType::Ca), LinkLayer::Ethernet);
        // AWS EFA: node type unspecified, link layer unspecified (sysfs "Unknown").
        assert_eq!(LinkLayer::from_verbs(0, NodeType::Unspecified), LinkLayer::Unspecified);
        assert_eq!(LinkLayer::from_verbs(1, NodeType::Unspecified), LinkLayer::InfiniBand);
    }

    #[test]
    fn json_names() {
        assert_eq!(serde_json::to_string(&PortState::Active).unwrap(), "\"ACTIVE\"");
        assert_eq!(serde_json::from_str::<Speed>("\"NDR\"").unwrap(), Speed::Ndr);
        assert_eq!(serde_json::to_string(&GidType::RoceV2).unwrap(), "\"RoCE v2\"");
    }

    #[test]
    fn numbered_lines() {
        assert_eq!(parse_numbered("4: ACTIVE"), Some(4));
        assert_eq!(parse_numbered("5: LinkUp\n"), Some(5));
    }
}
