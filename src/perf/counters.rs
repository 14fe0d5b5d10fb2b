//! Port counters that reveal retransmission and link trouble during a test.

use std::path::PathBuf;

/// Counters (from `counters/` and `hw_counters/`) whose movement during a test means
/// packets were lost, retried or refused. Names from mlx5 (drivers/infiniband/hw/mlx5/counters.c)
/// and rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c: its out-of-sequence counter is
/// `out_of_seq_request`).
pub const TROUBLE: [&str; 31] = [
    "local_ack_timeout_err",
    "out_of_sequence",
    "out_of_seq_request",
    "packet_seq_err",
    "implied_nak_seq_err",
    "duplicate_request",
    "rnr_nak_retry_err",
    "req_cqe_error",
    "resp_cqe_error",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "rcvd_seq_err",
    "completer_retry_err",
    "send_rnr_err",
    "rcvd_rnr_err",
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "port_xmit_discards",
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "out_of_buffer",
    "req_transport_retries_exceeded",
    "roce_adp_retrans",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "port_xmit_wait",
    "port_rcv_remote_physical_errors",
];

/// A snapshot of a port's trouble counters.
#[derive(Debug, Clone, Default)]
pub struct Snapshot(Vec<(&'static str, u64)>);

/// Reads the counters of `device`/`port` under `sysfs_root` (live: "/sys").
pub fn snapshot(sysfs_root: &std::path::Path, device: &str, port: u8) -> Snapshot {
    let base: PathBuf = sysfs_root.join("class/infiniband").join(device).join("ports").join(port.to_string());
    let mut values = Vec::new();
    for name in TROUBLE {
        for dir in ["hw_counters", "counters"] {
            if let Some(v) = crate::sys::fs::read_text(&base.join(dir).join(name), crate::sys::fs::SYSFS_CAP).ok().and_then(|s| s.trim().parse().ok())
            {
                values.push((name, v));
                break;
            }
        }
    }
    Snapshot(values)
}

impl Snapshot {
    /// Each counter read, by name.
    pub fn values(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().copied()
    }
}

/// Counters that rose between two snapshots.
pub fn deltas(before: &Snapshot, after: &Snapshot) -> Vec<(String, u64)> {
    after
        .0
        .iter()
        .filter_map(|(name, v)| {
            let old = before.0.iter().find(|(n, _)| n == name).map_or(0, |(_, o)| *o);
            (*v > old).then(|| (name.to_string(), v - old))
        })
        .collect()
}

/// What a counter's movement means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Packets lost and retransmitted, or errors on the link: trouble.
    Loss,
    /// The receiver had no receive posted (RNR NAKs) or no buffer: flow control, not loss.
    ReceiverNotReady,
    /// Congestion control acting (CNPs, ECN marks, slow restarts, time waiting to send).
    Congestion,
}

/// The kind of a trouble counter.
pub fn kind(name: &str) -> Kind {
    match name {
        "rnr_nak_retry_err" | "send_rnr_err" | "rcvd_rnr_err" | "out_of_buffer" => Kind::ReceiverNotReady,
        "np_cnp_sent"
        | "rp_cnp_handled"
        | "np_ecn_marked_roce_packets"
        | "roce_slow_restart"
        | "roce_slow_restart_cnps"
        | "roce_slow_restart_trans"
        | "port_xmit_wait" => Kind::Congestion,
        _ => Kind::Loss,
    }
}

/// Whether a counter means retransmission or link errors (as opposed to flow control or
/// congestion notification).
pub fn is_retransmission(name: &str) -> bool {
    kind(name) == Kind::Loss
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_only_for_risen_counters() {
        let before = Snapshot(vec![("out_of_sequence", 5), ("duplicate_request", 1)]);
        let after = Snapshot(vec![("out_of_sequence", 9), ("duplicate_request", 1), ("rcvd_seq_err", 2)]);
        assert_eq!(deltas(&before, &after), vec![("out_of_sequence".to_string(), 4), ("rcvd_seq_err".to_string(), 2)]);
    }
}
