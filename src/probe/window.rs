//! What a soak window saw on one port: each counter read at the window's start and its end,
//! and what it did (rose, stayed, was reset, saturated). The types the inventory carries
//! (`Port::soak`) and the rules read; the diff of two inventories is `probe::soak`.
//!
//! A counter that went down (reset, or a wrapped 64-bit counter) or that sits at its maximum
//! (PortCounters saturate: SymbolErrorCounter is 16 bits, LinkDownedCounter 8) says nothing
//! reliable about the window: it is said, not judged.
use serde::{Deserialize, Serialize};

/// What the window saw on one port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortWindow {
    /// How long the window lasted, seconds (shorter than asked when it was interrupted).
    pub seconds: f64,
    pub interrupted: bool,
    pub counters: Vec<CounterChange>,
}

/// One counter over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterChange {
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "by")]
pub enum Change {
    Same,
    Rose(u64),
    /// Lower at the end than at the start: cleared (or wrapped) during the window.
    Reset,
    /// At the counter's maximum at the end: it stopped counting.
    Saturated,
}

/// The physical-layer counters of `ethtool -S` as they are named in a window.
pub const CORRECTED_BITS: &str = "corrected_bits";
pub const SYMBOL_ERRORS: &str = "symbol_errors";
pub const LINK_DOWN_EVENTS: &str = "link_down_events";
pub const FEC_UNCORRECTABLE: &str = "fec_uncorrectable_blocks";

/// The `hw_counters/` that count packets gone missing: a receiver saw a PSN out of sequence (and
/// NAKed it), or a sender got such a NAK (none is expected on a lossless fabric).
/// mlx5 (drivers/infiniband/hw/mlx5/counters.c, `out_of_seq_q_cnts` and `retrans_q_cnts`;
/// NVIDIA's "Understanding mlx5 Linux Counters"): `out_of_sequence` (the responder received a
/// packet out of sequence), `packet_seq_err` (the requester received a sequence-error NAK),
/// `implied_nak_seq_err` (an ACK or read response implied one). rxe
/// (drivers/infiniband/sw/rxe/rxe_hw_counters.c, `rxe_counter_descs`): `out_of_seq_request`
/// (its responder's), `rcvd_seq_err` (its requester's). As `pair.rail` counts loss: not the
/// timeout retries (`local_ack_timeout_err`, rxe's `completer_retry_err`), which a starved CPU
/// raises without loss, nor `duplicate_request`, which counts a whole resent window.
pub const OUT_OF_SEQUENCE: [&str; 5] = ["out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "out_of_seq_request", "rcvd_seq_err"];

/// DCQCN's congestion notification counters of a RoCE port (mlx5 counters.c `cong_cnts`; rxe
/// has none): `np_cnp_sent` (CNPs this port sent, as the notification point, for ECN-marked
/// packets it received), `rp_cnp_handled` (CNPs it received and slowed down for, as the
/// reaction point), `np_ecn_marked_roce_packets` (the CE-marked RoCE packets it received).
/// The rate judged is the larger of the first two.
pub const CNP: [&str; 3] = ["np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets"];

/// The width of an InfiniBand PortCounters field the kernel exposes in `counters/` (IBTA vol. 1
/// 16.1.3.5); the extended (64-bit) ones and ethtool's counters never saturate.
pub fn saturates_at(name: &str) -> Option<u64> {
    match name {
        "symbol_error" | "port_rcv_errors" | "port_xmit_discards" | "port_rcv_remote_physical_errors" => Some(0xffff),
        "link_error_recovery" | "link_downed" => Some(0xff),
        "local_link_integrity_errors" | "excessive_buffer_overrun_errors" => Some(0xf),
        _ => None,
    }
}

/// What one counter did.
pub fn change(name: &str, start: u64, end: u64) -> Change {
    if saturates_at(name).is_some_and(|max| end >= max) {
        Change::Saturated
    } else if end < start {
        Change::Reset
    } else if end == start {
        Change::Same
    } else {
        Change::Rose(end - start)
    }
}

impl PortWindow {
    /// The counter's change over the window, if it was read at both ends.
    pub fn of(&self, name: &str) -> Option<Change> {
        self.counters.iter().find(|c| c.name == name).map(|c| c.change)
    }

    /// The window in words: `10 s`, `5 min`.
    pub fn words(&self) -> String {
        let s = self.seconds;
        let text = if s >= 3600.0 && (s % 3600.0).abs() < 1.0 {
            format!("{:.0} h", s / 3600.0)
        } else if s >= 60.0 && (s % 60.0).abs() < 1.0 {
            format!("{:.0} min", s / 60.0)
        } else {
            format!("{s:.0} s")
        };
        if self.interrupted {
            format!("{text} (interrupted)")
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_said_not_judged_when_reset_or_saturated() {
        assert_eq!(change("symbol_error", 10, 15), Change::Rose(5));
        assert_eq!(change("symbol_error", 10, 10), Change::Same);
        assert_eq!(change("symbol_error", 10, 3), Change::Reset);
        assert_eq!(change("symbol_error", 65000, 65535), Change::Saturated);
        assert_eq!(change("link_downed", 254, 255), Change::Saturated);
        assert_eq!(change(CORRECTED_BITS, 1 << 40, (1 << 40) + 7), Change::Rose(7), "64-bit counters never saturate");
    }
}
