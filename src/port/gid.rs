//! GIDs and GUIDs: types as verbs and sysfs name them, addresses as `inet_ntop` prints them.

use super::LinkLayer;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

    /// "IB/RoCE v1" is the kernel's one name for `IB_GID_TYPE_IB` (= RoCE v1): RoCE v1 only on
    /// Ethernet; on InfiniBand, or a port of neither (AWS EFA), it is the IB type.
    fn or_ib(self, link_layer: LinkLayer) -> Self {
        if link_layer != LinkLayer::Ethernet && self == GidType::RoceV1 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn gid_types_from_sysfs_follow_link_layer() {
        assert_eq!(GidType::from_sysfs("IB/RoCE v1", LinkLayer::InfiniBand), GidType::Ib);
        assert_eq!(GidType::from_sysfs("IB/RoCE v1", LinkLayer::Ethernet), GidType::RoceV1);
        assert_eq!(GidType::from_sysfs("RoCE v2\n", LinkLayer::Ethernet), GidType::RoceV2);
    }
}
