//! `--op`: which collective's traffic, as the contract spells it (`allreduce`, `alltoall`,
//! `incast:K`, `bcast`), and each op's bus-bandwidth factor as nccl-tests defines it
//! (NVIDIA/nccl-tests doc/PERFORMANCE.md, "Bus bandwidth").

use crate::model::Unparsed;
use std::fmt;

/// One collective op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Ring all-reduce: 2(n-1) dependent steps (reduce-scatter then all-gather).
    AllReduce,
    /// Every member to every other at once (MoE dispatch).
    AllToAll,
    /// K senders to one receiver, every member the receiver in turn.
    Incast(u16),
    /// Pipelined ring broadcast from the ring's first member.
    Bcast,
}

impl Op {
    pub fn parse(text: &str) -> Result<Op, Unparsed> {
        let text = text.trim();
        match text {
            "allreduce" => Ok(Op::AllReduce),
            "alltoall" => Ok(Op::AllToAll),
            "bcast" => Ok(Op::Bcast),
            _ => match text.strip_prefix("incast:").map(str::parse::<u16>) {
                Some(Ok(k)) if k >= 1 => Ok(Op::Incast(k)),
                Some(_) => Err(format!("'{text}': incast:K needs K, the senders per receiver, a number from 1 (incast:4)").into()),
                None => Err(format!("unknown op '{text}': one of allreduce, alltoall, incast:K, bcast").into()),
            },
        }
    }

    /// nccl-tests' bus-bandwidth factor for `n` ranks (doc/PERFORMANCE.md): all-reduce
    /// 2(n-1)/n, all-to-all (n-1)/n, broadcast 1. Incast (not an nccl-tests op): 1, the
    /// receiver's link carries every byte counted.
    pub fn bus_factor(self, n: usize) -> f64 {
        let n = n.max(1) as f64;
        match self {
            Op::AllReduce => 2.0 * (n - 1.0) / n,
            Op::AllToAll => (n - 1.0) / n,
            Op::Incast(_) | Op::Bcast => 1.0,
        }
    }

    /// Fewest members of one ring this op runs on.
    pub fn min_members(self) -> usize {
        match self {
            Op::Incast(k) => usize::from(k) + 1,
            _ => 2,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::AllReduce => f.write_str("allreduce"),
            Op::AllToAll => f.write_str("alltoall"),
            Op::Incast(k) => write!(f, "incast:{k}"),
            Op::Bcast => f.write_str("bcast"),
        }
    }
}

impl serde::Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        let text = String::deserialize(d)?;
        Op::parse(&text).map_err(|e| serde::de::Error::custom(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_read_as_the_contract_spells_them() {
        for (text, op) in [("allreduce", Op::AllReduce), ("alltoall", Op::AllToAll), ("incast:4", Op::Incast(4)), ("bcast", Op::Bcast)] {
            assert_eq!(Op::parse(text).unwrap(), op);
            assert_eq!(op.to_string(), text);
        }
        for bad in ["incast", "incast:0", "incast:x", "reduce", ""] {
            assert!(Op::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bus_factors_are_nccl_tests() {
        assert!((Op::AllReduce.bus_factor(8) - 1.75).abs() < 1e-12);
        assert!((Op::AllToAll.bus_factor(8) - 0.875).abs() < 1e-12);
        assert_eq!(Op::Bcast.bus_factor(8), 1.0);
        assert_eq!(Op::AllReduce.bus_factor(1), 0.0);
    }
}
