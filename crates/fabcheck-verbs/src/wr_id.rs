//! The id fabcheck gives each work request, as one type: which QP of a test it belongs to and
//! which slot of its list it is. Completions of many QPs share one CQ, so a completion must
//! name both; packing and unpacking live here and nowhere else (rdma-core's `rc_pingpong.c`
//! names its ids for the same reason: a mask repeated at each call site is one typo from a
//! wrong completion).

/// A work request's id: the QP's index in its test and the WR's slot in its list.
///
/// On the wire to the adapter it is one `u64`, the QP in the high 32 bits and the slot in the
/// low 32 bits; [`WrId::to_raw`] and [`WrId::from_raw`] are the only places that know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WrId {
    /// The QP's index among the test's QPs (0 for a single-QP test).
    pub qp: u32,
    /// The WR's index in its send or receive list.
    pub slot: u32,
}

impl WrId {
    pub const fn new(qp: u32, slot: u32) -> WrId {
        WrId { qp, slot }
    }

    /// The `wr_id` the adapter carries from the work request to its completion.
    #[inline(always)]
    pub const fn to_raw(self) -> u64 {
        ((self.qp as u64) << 32) | self.slot as u64
    }

    /// The id a completion returns, unpacked.
    #[inline(always)]
    pub const fn from_raw(raw: u64) -> WrId {
        WrId { qp: (raw >> 32) as u32, slot: raw as u32 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_and_slot_survive_the_round_trip() {
        for (qp, slot) in [(0, 0), (0, 511), (63, 0), (63, 8191), (u32::MAX, u32::MAX), (1, u32::MAX)] {
            assert_eq!(WrId::from_raw(WrId::new(qp, slot).to_raw()), WrId::new(qp, slot));
        }
    }

    /// The layout receive lists have always used (`tag << 32 | index`), so ids seen in logs
    /// read the same as before the type.
    #[test]
    fn qp_is_the_high_half() {
        assert_eq!(WrId::new(3, 7).to_raw(), (3u64 << 32) | 7);
        assert_eq!(WrId::from_raw(0x0000_0002_0000_0005), WrId { qp: 2, slot: 5 });
    }
}
