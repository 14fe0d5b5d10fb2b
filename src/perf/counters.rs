//! Port counters that reveal retransmission and link trouble during a test.

use std::path::PathBuf;

/// Counters (from `counters/` and `hw_counters/`) whose movement during a test means
/// packets were lost, retried or refused. Names from mlx5 and rxe.
pub const TROUBLE: [&str; 20] = [
    "local_ack_timeout_err",
    "out_of_sequence",
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

/// Whether a counter means retransmission (as opposed to congestion notification).
pub fn is_retransmission(name: &str) -> bool {
    !matches!(name, "np_cnp_sent")
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
