//! `--paths N` (RoCE ECMP): which flow label each of a test's QPs carries, the UDP source port
//! that label puts on the wire, and what one QP (one path) of a bandwidth test moved. Pure.
//!
//! How the port follows the label (Linux, include/rdma/ib_verbs.h):
//! - `rdma_flow_label_to_udp_sport(fl)`: `fl_low = fl & 0x3fff; fl_low ^= (fl & 0xfc000) >> 14;
//!   return fl_low | IB_ROCE_UDP_ENCAP_VALID_PORT_MIN` (0xC000);
//! - `rdma_calc_flow_label(lqpn, rqpn)`: `v = (u64)lqpn * rqpn; v ^= v >> 20; v ^= v >> 40;
//!   return v & IB_GRH_FLOWLABEL_MASK` (0xFFFFF);
//! - `rdma_get_udp_sport(fl, lqpn, rqpn)`: the first of `fl`, or of the QPNs' label when `fl`
//!   is 0.
//!
//! mlx5 calls it for RC/UC QPs at RTR (`mlx5_set_path_udp_sport`, drivers/infiniband/hw/mlx5/qp.c);
//! rxe calls it in `rxe_modify_qp` when the address vector has a GRH
//! (drivers/infiniband/sw/rxe/rxe_verbs.c, since Linux 5.15; before that and for a QP never
//! given a GRH, rxe_qp.c's `rxe_qp_init_req` keeps `0xC000 + hash_32(qpn, 14)`). So a non-zero
//! flow label per QP picks the port on both, and both ends of a path set the same label: the
//! data and its ACKs leave with the same source port. The rxe tier checks the computed port
//! against what tcpdump sees (tests/rxe/paths.rs).

use serde::{Deserialize, Serialize};

/// `IB_ROCE_UDP_ENCAP_VALID_PORT_MIN` (include/rdma/ib_verbs.h).
pub const UDP_SPORT_MIN: u16 = 0xC000;
/// `IB_GRH_FLOWLABEL_MASK`.
pub const FLOW_LABEL_MASK: u32 = 0x000F_FFFF;

/// `rdma_flow_label_to_udp_sport()`.
pub fn flow_label_to_udp_sport(fl: u32) -> u16 {
    let mut low = fl & 0x3fff;
    let high = fl & 0xFC000;
    low ^= high >> 14;
    (low as u16) | UDP_SPORT_MIN
}

/// `rdma_calc_flow_label()`: the label a QP without one gets from its and its peer's QPN.
pub fn calc_flow_label(lqpn: u32, rqpn: u32) -> u32 {
    let mut v = u64::from(lqpn) * u64::from(rqpn);
    v ^= v >> 20;
    v ^= v >> 40;
    (v as u32) & FLOW_LABEL_MASK
}

/// `rdma_get_udp_sport()`.
pub fn udp_sport(fl: u32, lqpn: u32, rqpn: u32) -> u16 {
    flow_label_to_udp_sport(if fl == 0 { calc_flow_label(lqpn, rqpn) } else { fl })
}

/// The flow label of path `k` (0-based) of a `--paths` test: non-zero, below 0x4000 (so the
/// port is `0xC000 | label`), and spread over the port range by an odd multiplier (a bijection
/// modulo 2^14: `MAX_QPS` paths never share a port). Both ends compute it, nothing is exchanged,
/// and the same `k` gives the same port on every run (the network team's hash trace can be
/// repeated).
pub fn flow_label(k: u32) -> u32 {
    (k + 1).wrapping_mul(0x2F1B) & 0x3FFF
}

/// What one QP (one path) of a bandwidth test moved, as the agent measured it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PathRun {
    /// The GRH flow label the QP carried.
    pub flow_label: u32,
    /// Bytes completed on this QP in the measured phase.
    pub bytes: u64,
    /// From the first measured post to this QP's last completion.
    pub elapsed_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_the_kernels_rule() {
        // Worked by hand from ib_verbs.h: 0x12345: low 0x2345 ^ (0x10000 >> 14 = 4) = 0x2341.
        assert_eq!(flow_label_to_udp_sport(0x12345), 0xC000 | 0x2341);
        assert_eq!(flow_label_to_udp_sport(0x1), 0xC001);
        assert_eq!(flow_label_to_udp_sport(0x3FFF), 0xFFFF);
        assert_eq!(flow_label_to_udp_sport(0xFFFFF), 0xC000 | (0x3FFF ^ 0x3F));
        // A zero label: the QPNs' (17 * 19 = 323, no bits above 20).
        assert_eq!(calc_flow_label(17, 19), 323);
        assert_eq!(udp_sport(0, 17, 19), 0xC000 | 323);
        assert_eq!(udp_sport(5, 17, 19), 0xC005, "a label wins over the QPNs");
        let v: u64 = 0xABCDE * 0x12345;
        let v = v ^ (v >> 20);
        let v = v ^ (v >> 40);
        assert_eq!(calc_flow_label(0xABCDE, 0x12345), (v as u32) & FLOW_LABEL_MASK);
    }

    #[test]
    fn every_path_of_a_test_has_its_own_non_zero_label_and_port() {
        let labels: Vec<u32> = (0..crate::model::MAX_QPS).map(flow_label).collect();
        let mut ports: Vec<u16> = labels.iter().map(|&l| flow_label_to_udp_sport(l)).collect();
        assert!(labels.iter().all(|&l| l != 0 && l < 0x4000));
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), crate::model::MAX_QPS as usize);
        assert_eq!(flow_label(0), flow_label(0), "the same on both ends and every run");
    }
}
