//! Choosing the GID both ends use when the user names none (pure, identical on both sides).

use crate::probe::decode::{self, GidScope, GidType, LinkLayer};
use crate::probe::Gid;

/// RoCE: v2 before v1, IPv4 before global IPv6, never link-local (it does not route and is
/// the classic "wrong GID" trap). InfiniBand: index 0, the port GID.
pub fn choose(gids: &[Gid], link_layer: LinkLayer) -> Option<&Gid> {
    if link_layer == LinkLayer::InfiniBand {
        return gids.iter().find(|g| g.index == 0).or_else(|| gids.first());
    }
    let rank = |g: &Gid| -> Option<u32> {
        let scope = decode::gid_scope(&decode::parse_gid(&g.gid)?);
        let version = match g.gid_type {
            GidType::RoceV2 => 0,
            GidType::RoceV1 => 2,
            _ => return None,
        };
        match scope {
            GidScope::Ipv4 => Some(version),
            GidScope::Ipv6Global => Some(version + 1),
            GidScope::LinkLocal => None,
        }
    };
    gids.iter().filter_map(|g| rank(g).map(|r| (r, g.index, g))).min_by_key(|(r, i, _)| (*r, *i)).map(|(_, _, g)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(index: u32, text: &str, t: GidType) -> Gid {
        Gid { index, gid: text.into(), gid_type: t, netdev: Some("eth0".into()) }
    }

    #[test]
    fn roce_prefers_v2_ipv4_and_never_link_local() {
        let gids = vec![
            gid(0, "fe80::1", GidType::RoceV1),
            gid(1, "fe80::1", GidType::RoceV2),
            gid(2, "2001:db8::5", GidType::RoceV1),
            gid(3, "2001:db8::5", GidType::RoceV2),
            gid(4, "::ffff:198.18.0.1", GidType::RoceV1),
            gid(5, "::ffff:198.18.0.1", GidType::RoceV2),
        ];
        assert_eq!(choose(&gids, LinkLayer::Ethernet).unwrap().index, 5);
        assert_eq!(choose(&gids[..4], LinkLayer::Ethernet).unwrap().index, 3);
        assert_eq!(choose(&gids[..3], LinkLayer::Ethernet).unwrap().index, 2);
        assert!(choose(&gids[..2], LinkLayer::Ethernet).is_none());
    }

    #[test]
    fn infiniband_uses_index_zero() {
        let gids = vec![gid(0, "fe80::b83f:d203:a1:2b3c", GidType::Ib)];
        assert_eq!(choose(&gids, LinkLayer::InfiniBand).unwrap().index, 0);
    }
}
