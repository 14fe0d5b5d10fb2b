//! Which atomic operation `atomic_lat` and `atomic_bw` carry (`--atomic`, perftest's `-A`).

use serde::{Deserialize, Serialize};

/// Size of an atomic operation's operand: RDMA atomics are 64-bit (IBTA 9.4.5), the size
/// perftest's ib_atomic_lat and ib_atomic_bw use and report.
pub const ATOMIC_SIZE: u32 = 8;

/// What an atomic work request does at the target. The operands are perftest's
/// (`perftest_resources.c`, `ctx_set_send_wqes`): fetch-and-add adds `ATOMIC_ADD_VALUE` (1),
/// compare-and-swap writes `ATOMIC_SWAP_VALUE` (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomicOp {
    #[default]
    FetchAdd,
    CmpSwap,
}

impl AtomicOp {
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::FetchAdd => "fetch_add",
            AtomicOp::CmpSwap => "cmp_swap",
        }
    }

    /// Parses `--atomic`: `fetch_add` or `cmp_swap` (perftest's `FETCH_AND_ADD` and `CMP_AND_SWAP` too).
    pub fn parse(text: &str) -> Result<AtomicOp, String> {
        match text.trim() {
            "fetch_add" | "FETCH_AND_ADD" => Ok(AtomicOp::FetchAdd),
            "cmp_swap" | "CMP_AND_SWAP" => Ok(AtomicOp::CmpSwap),
            other => Err(format!("--atomic {other}: give fetch_add or cmp_swap")),
        }
    }

    pub fn is_default(&self) -> bool {
        *self == AtomicOp::FetchAdd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_perftest_spellings_are_taken() {
        for op in [AtomicOp::FetchAdd, AtomicOp::CmpSwap] {
            assert_eq!(AtomicOp::parse(op.name()), Ok(op));
        }
        assert_eq!(AtomicOp::parse("CMP_AND_SWAP"), Ok(AtomicOp::CmpSwap));
        assert!(AtomicOp::parse("swap").unwrap_err().contains("fetch_add or cmp_swap"));
    }
}
