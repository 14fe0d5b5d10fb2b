//! The path MTU: `enum ibv_mtu` and bytes, and the MTU RoCE derives from its netdev's.

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

/// What a RoCE device takes off its netdev's MTU for headers before it picks a path MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoceHeaders {
    /// The kernel's `iboe_get_mtu` (`include/rdma/ib_addr.h`), which mlx5, bnxt_re, irdma and
    /// the other hardware drivers use: GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 =
    /// 96 bytes.
    Kernel,
    /// Soft-RoCE's own allowance: `rxe_set_mtu` -> `eth_mtu_int_to_enum`, `RXE_MAX_HDR_LENGTH`
    /// = 80 bytes (`drivers/infiniband/sw/rxe/rxe_param.h`, `rxe_hdr.h`).
    Rxe,
}

impl RoceHeaders {
    /// The allowance of the device bound to `driver` (`rdma_rxe`, else the kernel's).
    pub fn for_driver(driver: Option<&str>) -> RoceHeaders {
        if driver == Some("rdma_rxe") {
            RoceHeaders::Rxe
        } else {
            RoceHeaders::Kernel
        }
    }

    pub fn bytes(self) -> u32 {
        match self {
            RoceHeaders::Kernel => 96,
            RoceHeaders::Rxe => 80,
        }
    }

    /// The smallest netdev MTU that carries a RoCE path MTU of `roce_mtu` bytes.
    pub fn netdev_mtu_for(self, roce_mtu: u32) -> u32 {
        roce_mtu.saturating_add(self.bytes())
    }

    /// The RoCE active MTU derived from a netdev MTU: the largest IB MTU that fits once the
    /// headers are taken off; `None` below 256.
    pub fn roce_mtu(self, netdev_mtu: u32) -> Option<u32> {
        let room = netdev_mtu.checked_sub(self.bytes())?;
        (room >= Mtu::B256.bytes()).then(|| Mtu::at_most(room).bytes())
    }
}

/// RoCE active MTU a hardware driver derives from a netdev MTU (`iboe_get_mtu`, 96 bytes of
/// headers): 4184 gives 2048, 4192 gives 4096.
pub fn roce_mtu_for_netdev_mtu(netdev_mtu: u32) -> Option<u32> {
    RoceHeaders::Kernel.roce_mtu(netdev_mtu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtus() {
        assert_eq!(mtu_bytes(1), Some(256));
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(1500), Some(1024));
        assert_eq!(roce_mtu_for_netdev_mtu(9000), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(4200), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(4183), Some(2048));
        // iboe_get_mtu takes 96 bytes (GRH, UDP, BTH, XRC, AtomicETH, ICRC): mlx5 gives 2048 here.
        assert_eq!(roce_mtu_for_netdev_mtu(4184), Some(2048));
        assert_eq!(roce_mtu_for_netdev_mtu(4191), Some(2048));
        assert_eq!(roce_mtu_for_netdev_mtu(4192), Some(4096));
        assert_eq!(RoceHeaders::Kernel.netdev_mtu_for(4096), 4192);
        // rxe keeps its own 80 bytes (RXE_MAX_HDR_LENGTH).
        assert_eq!(RoceHeaders::Rxe.roce_mtu(4184), Some(4096));
        assert_eq!(RoceHeaders::Rxe.roce_mtu(4175), Some(2048));
        assert_eq!(RoceHeaders::Rxe.roce_mtu(1500), Some(1024));
        assert_eq!(RoceHeaders::Rxe.netdev_mtu_for(4096), 4176);
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
}
