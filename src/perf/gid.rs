//! Choosing the GID both ends use when the user names none (pure, identical on both sides).

use crate::port::{self, GidScope, GidType, LinkLayer};
use crate::probe::Gid;
use std::net::{IpAddr, Ipv6Addr};

/// RoCE: v2 before v1, IPv4 before global IPv6, never link-local (it does not route and is
/// the classic "wrong GID" trap). InfiniBand: index 0, the port GID.
pub fn choose(gids: &[Gid], link_layer: LinkLayer) -> Option<&Gid> {
    if link_layer == LinkLayer::InfiniBand {
        return gids.iter().find(|g| g.index == 0).or_else(|| gids.first());
    }
    let rank = |g: &Gid| -> Option<u32> {
        let scope = port::gid_scope(&g.gid.octets());
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

/// The IP address rdma_cm binds to, for the port whose chosen GID is `gid`. RoCE: the address
/// inside the GID (IPv4-mapped, or a global IPv6 GID). InfiniBand: the port's IPoIB interface's
/// address (IPv4 first, then global IPv6), as rdma_cm over InfiniBand (NVMe-oF, Lustre o2ib,
/// MPI) uses it. `Err` says why there is none.
pub fn cm_address(link_layer: LinkLayer, gid: Option<Ipv6Addr>, ipoib: Option<(&str, &[IpAddr])>) -> Result<IpAddr, NoCmAddress> {
    if link_layer == LinkLayer::InfiniBand {
        let Some((netdev, addrs)) = ipoib else { return Err(NoCmAddress::NoIpoib) };
        let global_v6 = |a: &&IpAddr| matches!(a, IpAddr::V6(v6) if port::gid_scope(&v6.octets()) == GidScope::Ipv6Global);
        return addrs
            .iter()
            .find(|a| matches!(a, IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_link_local()))
            .or_else(|| addrs.iter().find(global_v6))
            .copied()
            .ok_or_else(|| NoCmAddress::IpoibWithoutAddress(netdev.to_string()));
    }
    let v6 = gid.ok_or(NoCmAddress::NoGid)?;
    let raw = v6.octets();
    match (v6.to_ipv4_mapped(), port::gid_scope(&raw)) {
        (Some(v4), _) => Ok(IpAddr::V4(v4)),
        (None, GidScope::Ipv6Global) => Ok(IpAddr::V6(v6)),
        _ => Err(NoCmAddress::LinkLocalGid),
    }
}

/// Why a port has no address rdma_cm can bind to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoCmAddress {
    #[error(
        "--cm on InfiniBand addresses the port through its IPoIB interface, and this port has none (load ib_ipoib; the interface is ibN or ibpXsY)"
    )]
    NoIpoib,
    #[error("--cm on InfiniBand needs an IP address on the port's IPoIB interface {0}, which has none")]
    IpoibWithoutAddress(String),
    #[error("no GID to take an address from")]
    NoGid,
    #[error("--cm needs a routable address on the port, and its GID is link-local")]
    LinkLocalGid,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(index: u32, text: &str, t: GidType) -> Gid {
        Gid { index, gid: text.parse().unwrap(), gid_type: t, netdev: Some("eth0".into()) }
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
    fn roce_precedence_v2_ipv6_beats_v1_ipv4() {
        // The version outranks the address family: a global IPv6 RoCE v2 GID over an IPv4 RoCE v1 one.
        let gids = vec![gid(2, "::ffff:198.18.0.1", GidType::RoceV1), gid(3, "2001:db8::5", GidType::RoceV2)];
        assert_eq!(choose(&gids, LinkLayer::Ethernet).unwrap().index, 3);
        // Among RoCE v1 only: IPv4 before global IPv6.
        let gids = vec![gid(2, "2001:db8::5", GidType::RoceV1), gid(4, "::ffff:198.18.0.1", GidType::RoceV1)];
        assert_eq!(choose(&gids, LinkLayer::Ethernet).unwrap().index, 4);
        // IB-typed or unknown GIDs on an Ethernet port are never chosen.
        let gids = vec![gid(0, "::ffff:198.18.0.1", GidType::Ib)];
        assert!(choose(&gids, LinkLayer::Ethernet).is_none());
    }

    #[test]
    fn roce_tie_break_is_the_lowest_index_whatever_the_order() {
        let gids = vec![
            gid(7, "::ffff:198.18.0.7", GidType::RoceV2),
            gid(3, "::ffff:198.18.0.3", GidType::RoceV2),
            gid(5, "::ffff:198.18.0.5", GidType::RoceV2),
        ];
        assert_eq!(choose(&gids, LinkLayer::Ethernet).unwrap().index, 3);
        let mut reversed = gids.clone();
        reversed.reverse();
        assert_eq!(choose(&reversed, LinkLayer::Ethernet).unwrap().index, 3);
    }

    #[test]
    fn infiniband_without_index_zero_takes_the_first_listed() {
        let gids = vec![gid(2, "fe80::2", GidType::Ib), gid(1, "fe80::1", GidType::Ib)];
        assert_eq!(choose(&gids, LinkLayer::InfiniBand).unwrap().index, 2);
        let gids = vec![gid(2, "fe80::2", GidType::Ib), gid(0, "fe80::1", GidType::Ib)];
        assert_eq!(choose(&gids, LinkLayer::InfiniBand).unwrap().index, 0);
    }

    #[test]
    fn infiniband_uses_index_zero() {
        let gids = vec![gid(0, "fe80::b83f:d203:a1:2b3c", GidType::Ib)];
        assert_eq!(choose(&gids, LinkLayer::InfiniBand).unwrap().index, 0);
    }

    #[test]
    fn cm_address_from_the_gid_on_roce_and_from_ipoib_on_infiniband() {
        let eth = LinkLayer::Ethernet;
        assert_eq!(cm_address(eth, Some("::ffff:198.18.0.1".parse().unwrap()), None), Ok(IpAddr::from([198, 18, 0, 1])));
        assert_eq!(cm_address(eth, Some("2001:db8::5".parse().unwrap()), None), Ok("2001:db8::5".parse().unwrap()));
        assert!(cm_address(eth, Some("fe80::1".parse().unwrap()), None).is_err());
        assert!(cm_address(eth, None, None).is_err());
        let ib = LinkLayer::InfiniBand;
        let port_gid = Some("fe80::248a:703:49:d4f0".parse().unwrap());
        let addrs: Vec<IpAddr> = vec!["fe80::248a:703:49:d4f0".parse().unwrap(), "2001:db8::7".parse().unwrap(), IpAddr::from([10, 12, 0, 7])];
        assert_eq!(cm_address(ib, port_gid, Some(("ib0", &addrs))), Ok(IpAddr::from([10, 12, 0, 7])), "IPv4 first");
        assert_eq!(cm_address(ib, port_gid, Some(("ib0", &addrs[..2]))), Ok("2001:db8::7".parse().unwrap()), "then global IPv6");
        let err = cm_address(ib, port_gid, Some(("ib0", &addrs[..1]))).unwrap_err();
        assert!(err.to_string().contains("IPoIB interface ib0"), "{err}");
        assert!(cm_address(ib, port_gid, None).unwrap_err().to_string().contains("ib_ipoib"));
    }
}
