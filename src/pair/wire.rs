//! What a pair's bandwidth is judged against (pure): the slower end's link data rate or its
//! PCIe link, and the share of the wire a payload can fill at the path MTU (framing).

use super::side::Side;

/// What the pair's bandwidth is judged against: the slower end's link data rate, or its PCIe
/// link's usable bandwidth where that is smaller (see `probe::capacity`).
pub fn capacity(a: &Side, b: &Side) -> Option<crate::probe::capacity::Capacity> {
    let end = |s: &Side| s.rate_gbps.map(|r| crate::probe::capacity::capacity(r, s.pcie_gbps));
    match (end(a), end(b)) {
        (Some(x), Some(y)) => Some(if x.gbps <= y.gbps { x } else { y }),
        (x, y) => x.or(y),
    }
}

/// Bytes of framing around every RoCE v2 packet's payload: preamble and SFD (8) and the
/// minimum inter-frame gap (12), the Ethernet header (14) and FCS (4) (IEEE 802.3 clause 3/4),
/// the IP header (IPv4 20; IPv6 40, RFC 8200), UDP (8), the base transport header (12) and the
/// invariant CRC (4) (IBTA Annex A17, RoCE v2).
const ROCE_FRAMING: u32 = 8 + 12 + 14 + 4 + 8 + 12 + 4;
/// Around every InfiniBand packet's payload: LRH (8), BTH (12), ICRC (4), VCRC (2) (IBTA vol. 1
/// ch. 7); line encoding is already out of the data rate.
const IB_FRAMING: u32 = 8 + 12 + 4 + 2;

/// The share of the wire a large transfer's payload can fill at the path MTU (the smaller of
/// the two ends' MTUs), and that MTU: RoCE at MTU 1024 tops out near 92.6%, at 4096 near 98%.
/// `None` where the MTU or the link layer is not known.
pub fn payload_efficiency(a: &Side, b: &Side) -> Option<(f64, u32)> {
    let mtu = a.mtu?.min(b.mtu?);
    let framing = match a.link_layer {
        crate::model::LinkLayer::Ethernet => {
            let v6 = [a.gid, b.gid].iter().flatten().any(|g| g.to_ipv4_mapped().is_none());
            ROCE_FRAMING + if v6 { 40 } else { 20 }
        }
        crate::model::LinkLayer::InfiniBand => IB_FRAMING,
        _ => return None,
    };
    (mtu > 0).then(|| (f64::from(mtu) / f64::from(mtu + framing), mtu))
}
