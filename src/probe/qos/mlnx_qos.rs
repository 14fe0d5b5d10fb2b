//! `mlnx_qos -i IF` (NVIDIA mlnx-tools, `python/mlnx_qos`, `pretty_print`), in every shape it has
//! printed, read by the words of each line:
//!
//! * MLNX_OFED 4.0 (2017): `PFC configuration:` with the `enabled` row, then `tc: N ratelimit:
//!   R, tsa: T[, bw: B%]` lines each followed by `\t priority:  P` lines (no trust line).
//! * A 2017 interim: `Priority trust mode: pcp|dscp|both|none`.
//! * 4.2 on: `DCBX mode: ...`, `Priority trust state: pcp|dscp`, with `dscp` the table as
//!   `\tprio:P dscp:DD,DD,...,` lines (eight DSCPs a line, the line repeated for more), and
//!   `Cable len: N`.
//! * 4.6 on: `Receive buffer size (bytes): S,S,S,S,S,S,S,S,` and a `buffer` row under `enabled`
//!   (priority to receive buffer); absent where "Buffers commands are not supported".
//! * 2022-12 to 2024-11: `default priority:` and `\tprio:P` lines; the buffer sizes end with
//!   `total_size=N`, from 2023-05 `max_buffer_size=N`.
//!
//! TCs are printed only when a priority maps to them (without `-a`), in dict order before
//! 2022-05 and sorted after: both read alike.

use super::{Dscp, PortQos, Priority, TcSched, Trust, Tsa};

/// Lines read at most (the real report is ~40).
const MAX_LINES: usize = 4096;

/// What the report says; `None` where it does not (an older version, a part "not supported").
pub fn parse(report: &str) -> Option<PortQos> {
    let mut q = PortQos::default();
    let mut dscp: Vec<Option<Priority>> = vec![None; 64];
    let mut dscp_seen = false;
    let mut prio2tc: [Option<u8>; 8] = [None; 8];
    let mut tcs: [Option<TcSched>; 8] = [None; 8];
    let mut current_tc: Option<u8> = None;
    let mut in_default = false;
    let mut recognised = false;
    for raw in report.lines().take(MAX_LINES) {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("priority trust state:").or_else(|| lower.strip_prefix("priority trust mode:")) {
            q.trust = match rest.trim() {
                "pcp" => Some(Trust::Pcp),
                "dscp" => Some(Trust::Dscp),
                // "both" and "none" (the 2017 interim) say no single rule: unknown.
                _ => None,
            };
            recognised = true;
            continue;
        }
        if lower.starts_with("default priority:") {
            in_default = true;
            continue;
        }
        if let Some(rest) = lower.strip_prefix("prio:") {
            // `prio:3 dscp:31,30,...,` (the table) or `prio:3` (the default priority).
            let (prio_text, dscps) = match rest.split_once("dscp:") {
                Some((p, d)) => (p.trim(), Some(d)),
                None => (rest.trim(), None),
            };
            let Some(p) = prio_text.parse::<u8>().ok().and_then(Priority::new) else { continue };
            match dscps {
                Some(list) => {
                    dscp_seen = true;
                    for d in list.split(',').filter_map(|d| d.trim().parse::<u8>().ok()).filter_map(Dscp::new) {
                        dscp[d.index()] = Some(p);
                    }
                }
                None if in_default => q.default_prio = Some(p),
                None => {}
            }
            continue;
        }
        in_default = false;
        if let Some(rest) = lower.strip_prefix("receive buffer size (bytes):") {
            let sizes: Vec<u32> =
                rest.split(',').map(str::trim).filter(|s| !s.is_empty() && !s.contains('=')).filter_map(|s| s.parse().ok()).collect();
            q.buffer_size = <[u32; 8]>::try_from(sizes.get(..8).unwrap_or(&[])).ok();
            recognised = true;
            continue;
        }
        if let Some(rest) = lower.strip_prefix("enabled") {
            q.pfc = row(rest).map(|r| r.map(|v| v != 0));
            recognised = true;
            continue;
        }
        if let Some(rest) = lower.strip_prefix("buffer ") {
            q.prio2buffer = row(rest).filter(|r| r.iter().all(|&b| b < 8));
            continue;
        }
        if let Some(rest) = lower.strip_prefix("tc:") {
            // `tc: 3 ratelimit: unlimited, tsa: ets, bw: 40%`
            let tc = rest.split_whitespace().next().and_then(|t| t.parse::<u8>().ok()).filter(|&t| t < 8);
            current_tc = tc;
            if let Some(tc) = tc {
                let tsa = rest.split_once("tsa:").and_then(|(_, t)| Tsa::parse(t.split(',').next().unwrap_or("")));
                let bw = rest.split_once("bw:").and_then(|(_, b)| b.trim().trim_end_matches('%').trim().parse::<u8>().ok()).filter(|&b| b <= 100);
                tcs[usize::from(tc)] = tsa.map(|tsa| TcSched { tsa, bw });
                recognised = true;
            }
            continue;
        }
        if let Some(rest) = lower.strip_prefix("priority:") {
            // `\t priority:  1` under the current TC (the header row is `priority    0   1 ...`).
            if let (Some(tc), Some(p)) = (current_tc, rest.trim().parse::<u8>().ok().and_then(Priority::new)) {
                prio2tc[p.index()] = Some(tc);
            }
            continue;
        }
        if lower.starts_with("dcbx mode:") || lower.starts_with("cable len:") || lower.starts_with("pfc configuration:") {
            recognised = true;
        }
    }
    if !recognised {
        return None;
    }
    if dscp_seen {
        q.dscp2prio = Some(dscp);
    }
    if prio2tc.iter().all(Option::is_some) {
        q.prio2tc = Some(prio2tc.map(|t| t.unwrap_or(0)));
    }
    if tcs.iter().any(Option::is_some) {
        q.tcs = Some(tcs);
    }
    Some(q)
}

/// Eight whole numbers (`0   0   0   1   0   0   0   0`).
fn row(text: &str) -> Option<[u8; 8]> {
    let values: Vec<u8> = text.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    <[u8; 8]>::try_from(values.as_slice()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mlnx-tools after 2023-05 (b8c08c5, "Print max_buffer_size"): trust dscp, DSCP 26 in
    /// priority 3's block, PFC and a lossless buffer on 3, the mlx5 default prio2tc (0 and 1
    /// swapped), every TC `vendor`.
    pub(crate) const CURRENT: &str = "DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n\tprio:0 dscp:07,06,05,04,03,02,01,00,\n\tprio:1 dscp:15,14,13,12,11,10,09,08,\n\tprio:2 dscp:23,22,21,20,19,18,17,16,\n\tprio:3 dscp:31,30,29,28,27,26,25,24,\n\tprio:4 dscp:39,38,37,36,35,34,33,32,\n\tprio:5 dscp:47,46,45,44,43,42,41,40,\n\tprio:6 dscp:55,54,53,52,51,50,49,48,\n\tprio:7 dscp:63,62,61,60,59,58,57,56,\nReceive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=1048448\nCable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \ntc: 0 ratelimit: unlimited, tsa: vendor\n\t priority:  1\ntc: 1 ratelimit: unlimited, tsa: vendor\n\t priority:  0\ntc: 2 ratelimit: unlimited, tsa: vendor\n\t priority:  2\ntc: 3 ratelimit: unlimited, tsa: vendor\n\t priority:  3\ntc: 4 ratelimit: unlimited, tsa: vendor\n\t priority:  4\ntc: 5 ratelimit: unlimited, tsa: vendor\n\t priority:  5\ntc: 6 ratelimit: unlimited, tsa: vendor\n\t priority:  6\ntc: 7 ratelimit: unlimited, tsa: vendor\n\t priority:  7\n";

    #[test]
    fn current_version() {
        let q = parse(CURRENT).unwrap();
        assert_eq!(q.trust, Some(Trust::Dscp));
        assert_eq!(q.dscp_priority(Dscp::new(26).unwrap()), Priority::new(3));
        assert_eq!(q.dscp_priority(Dscp::new(48).unwrap()), Priority::new(6));
        assert!(q.dscp2prio.as_ref().unwrap().iter().all(Option::is_some));
        assert_eq!(q.pfc_priorities(), Some(vec![Priority::new(3).unwrap()]));
        assert_eq!(q.prio2buffer, Some([0, 0, 0, 1, 0, 0, 0, 0]));
        assert_eq!(q.buffer_size, Some([130_944, 130_944, 0, 0, 0, 0, 0, 0]));
        assert_eq!(q.prio2tc, Some([1, 0, 2, 3, 4, 5, 6, 7]));
        assert_eq!(q.class_of(Priority::new(3).unwrap()), Some((3, Some(TcSched { tsa: Tsa::Vendor, bw: None }))));
        assert_eq!(q.buffer_lossless(Priority::new(3).unwrap()), Some(true));
    }

    /// MLNX_OFED 4.2 (d1b0709): no buffer rows; the NVIDIA community page's example (ETS
    /// shares, a strict TC 6, PFC on 0, 2, 6, 7), TCs in dict order.
    #[test]
    fn ofed_4_2_without_buffer_rows_and_with_ets_shares() {
        let report = "DCBX mode: OS controlled\nPriority trust state: pcp\nCable len: 10\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     1   0   1   0   0   0   1   1   \ntc: 0 ratelimit: unlimited, tsa: ets, bw: 10%\n\t priority:  1\ntc: 1 ratelimit: unlimited, tsa: ets, bw: 10%\n\t priority:  0\ntc: 2 ratelimit: unlimited, tsa: ets, bw: 10%\n\t priority:  2\ntc: 3 ratelimit: unlimited, tsa: ets, bw: 0%\n\t priority:  3\ntc: 4 ratelimit: unlimited, tsa: ets, bw: 10%\n\t priority:  4\ntc: 5 ratelimit: 25.0 Gbps, tsa: ets, bw: 20%\n\t priority:  5\ntc: 6 ratelimit: unlimited, tsa: strict\n\t priority:  6\ntc: 7 ratelimit: unlimited, tsa: ets, bw: 40%\n\t priority:  7\n";
        let q = parse(report).unwrap();
        assert_eq!(q.trust, Some(Trust::Pcp));
        assert_eq!(q.dscp2prio, None);
        assert_eq!((q.prio2buffer, q.buffer_size), (None, None), "no buffer rows: unknown, not zero");
        assert_eq!(q.pfc.map(|p| p.iter().filter(|&&on| on).count()), Some(4));
        let p3 = Priority::new(3).unwrap();
        assert_eq!(q.class_of(p3), Some((3, Some(TcSched { tsa: Tsa::Ets, bw: Some(0) }))));
        assert_eq!(q.class_of(Priority::new(6).unwrap()).and_then(|c| c.1).map(|s| s.tsa), Some(Tsa::Strict));
        assert_eq!(q.buffer_lossless(p3), None);
    }

    /// MLNX_OFED 4.0 (the first mlnx-tools commit): no trust line at all, python 2 prints.
    #[test]
    fn ofed_4_0_without_trust() {
        let report = "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0   \n\ntc: 0 ratelimit: unlimited, tsa: vendor\n\t priority:  1\ntc: 1 ratelimit: unlimited, tsa: vendor\n\t priority:  0\ntc: 2 ratelimit: unlimited, tsa: vendor\n\t priority:  2\ntc: 3 ratelimit: unlimited, tsa: vendor\n\t priority:  3\ntc: 4 ratelimit: unlimited, tsa: vendor\n\t priority:  4\ntc: 5 ratelimit: unlimited, tsa: vendor\n\t priority:  5\ntc: 6 ratelimit: unlimited, tsa: vendor\n\t priority:  6\ntc: 7 ratelimit: unlimited, tsa: vendor\n\t priority:  7\n";
        let q = parse(report).unwrap();
        assert_eq!(q.trust, None, "the version does not say: unknown");
        assert_eq!(q.pfc_priorities(), Some(vec![Priority::new(3).unwrap()]));
        assert_eq!(q.prio2tc, Some([1, 0, 2, 3, 4, 5, 6, 7]));
        let interim = parse("Priority trust mode: dscp\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0\n").unwrap();
        assert_eq!(interim.trust, Some(Trust::Dscp));
        assert_eq!(parse("Priority trust mode: both\nPFC configuration:\n").unwrap().trust, None);
    }

    /// 2022-12 (af4851e): `default priority:` lines and `total_size=`; a remapped DSCP 26 makes
    /// priority 0's list nine long, printed over two lines.
    #[test]
    fn default_priority_total_size_and_a_wrapped_table() {
        let report = "DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n\tprio:0 dscp:26,07,06,05,04,03,02,01,\n\tprio:0 dscp:00,\n\tprio:1 dscp:15,14,13,12,11,10,09,08,\n\tprio:3 dscp:31,30,29,28,27,25,24,\ndefault priority:\n\tprio:2\nReceive buffer size (bytes): 20016,156096,0,0,0,0,0,0,total_size=1048448\nCable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \n";
        let q = parse(report).unwrap();
        assert_eq!(q.dscp_priority(Dscp::new(26).unwrap()), Priority::new(0));
        assert_eq!(q.dscp_priority(Dscp::new(0).unwrap()), Priority::new(0));
        assert_eq!(q.dscp_priority(Dscp::new(40).unwrap()), None, "not listed: unknown");
        assert_eq!(q.default_prio, Priority::new(2));
        assert_eq!(q.buffer_size, Some([20016, 156_096, 0, 0, 0, 0, 0, 0]));
        assert_eq!(q.prio2tc, None, "no TC lines");
    }

    #[test]
    fn unsupported_parts_and_junk() {
        let report = "Priority trust state is not supported on your system\nBuffers commands are not supported on your system\nCable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0   \n";
        let q = parse(report).unwrap();
        assert_eq!(q.trust, None);
        assert_eq!(q.pfc_priorities(), Some(vec![]));
        assert_eq!(q.buffer_size, None);
        assert_eq!(parse("Traceback (most recent call last):\n  File \"/usr/bin/mlnx_qos\"\nOSError: [Errno 19] No such device\n"), None);
        assert_eq!(parse(""), None);
        let q = parse("PFC configuration:\n\tenabled 0 0 1\n\tbuffer 9 9 9 9 9 9 9 9\ntc: 12 ratelimit: unlimited, tsa: ets, bw: 500%\n").unwrap();
        assert_eq!((q.pfc, q.prio2buffer, q.tcs), (None, None, None), "short rows, buffers past 7 and TC 12 are not read");
    }
}
