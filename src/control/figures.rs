//! The figures an agent reports, checked before anything judges them (issue #27 item 14).
//!
//! A broken or hostile agent could report a rate of 1e308 or -5, an MTU of 0, or a latency of
//! ±1e308 (which became `null` in the JSON and a passing verdict). A figure outside what any
//! adapter can produce is a protocol error, so the agent is reported, not its numbers believed.
//! Counts are `u64` on the wire, so serde already refuses negative or fractional ones.

use super::protocol::{Endpoint, Reply, RunResult};

/// Fastest rate believed, Gb/s: above any adapter made (an XDR 4x port is 800).
pub const MAX_RATE_GBPS: f64 = 3200.0;
/// Longest latency believed, microseconds (10 s).
pub const MAX_LATENCY_US: f64 = 1e7;
/// The MTUs InfiniBand and RoCE define, in bytes.
pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// A figure no adapter or link can report: what it was, and the range believed.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum Implausible {
    #[error("an MTU of {0} bytes (one of 256, 512, 1024, 2048, 4096)")]
    Mtu(u32),
    #[error("a {name} of {value} Gb/s (more than 0, at most {MAX_RATE_GBPS})")]
    Rate { name: &'static str, value: f64 },
    #[error("a latency {name} of {value} us (more than 0, at most {MAX_LATENCY_US})")]
    Latency { name: &'static str, value: f64 },
    #[error("a latency stdev of {0} us (0 to {MAX_LATENCY_US})")]
    Stdev(f64),
}

/// `Err` names the first figure out of range.
pub fn check(reply: &Reply) -> Result<(), Implausible> {
    match reply {
        Reply::Ready { endpoint } => check_endpoint(endpoint),
        Reply::Done { result } => check_result(result),
        Reply::Progress { interval } => check_interval(interval),
        Reply::MemberDone { result } => check_member(result),
        _ => Ok(()),
    }
}

/// A `--report-every` interval: a rate of 0 is a stalled interval, not an implausible one.
fn check_interval(i: &crate::model::Interval) -> Result<(), Implausible> {
    if let Some(v) = i.gbps.filter(|v| !(*v >= 0.0 && *v <= MAX_RATE_GBPS)) {
        return Err(Implausible::Rate { name: "interval gbps", value: v });
    }
    if let Some(lat) = &i.lat_us {
        latencies(&[("p50", lat.p50), ("p99", lat.p99), ("max", lat.max)])?;
    }
    Ok(())
}

/// A collective member's figures: each hop's rate and step times.
fn check_member(r: &crate::model::collective::MemberResult) -> Result<(), Implausible> {
    for h in &r.hops {
        if !(h.gbps >= 0.0 && h.gbps <= MAX_RATE_GBPS) {
            return Err(Implausible::Rate { name: "hop gbps", value: h.gbps });
        }
        if let Some(s) = &h.step_us {
            latencies(&[("step p50", s.p50), ("step p99", s.p99), ("step max", s.max)])?;
        }
    }
    Ok(())
}

/// Interval and step figures come from histogram buckets, whose lowest reads 0: 0 is a figure,
/// a negative, NaN or beyond-belief one is not.
fn latencies(figures: &[(&'static str, f64)]) -> Result<(), Implausible> {
    match figures.iter().find(|(_, v)| !(*v >= 0.0 && *v <= MAX_LATENCY_US)) {
        Some(&(name, value)) => Err(Implausible::Latency { name, value }),
        None => Ok(()),
    }
}

fn check_endpoint(e: &Endpoint) -> Result<(), Implausible> {
    if !MTUS.contains(&e.mtu) {
        return Err(Implausible::Mtu(e.mtu));
    }
    rate("rate_gbps", e.rate_gbps)?;
    rate("pcie_gbps", e.pcie_gbps)
}

fn check_result(r: &RunResult) -> Result<(), Implausible> {
    rate("peak_gbps", r.peak_gbps)?;
    if let Some(lat) = &r.lat {
        for (name, v) in
            [("min", lat.min), ("p50", lat.p50), ("p90", lat.p90), ("p99", lat.p99), ("p999", lat.p999), ("max", lat.max), ("mean", lat.mean)]
        {
            if !(v > 0.0 && v <= MAX_LATENCY_US) {
                return Err(Implausible::Latency { name, value: v });
            }
        }
        if !(lat.stdev >= 0.0 && lat.stdev <= MAX_LATENCY_US) {
            return Err(Implausible::Stdev(lat.stdev));
        }
    }
    Ok(())
}

fn rate(name: &'static str, value: Option<f64>) -> Result<(), Implausible> {
    match value {
        Some(v) if !(v > 0.0 && v <= MAX_RATE_GBPS) => Err(Implausible::Rate { name, value: v }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::protocol::decode;
    use crate::model::LatencySummary;

    fn done(peak: f64) -> Reply {
        Reply::Done { result: RunResult { iterations: 10, bytes: 1 << 20, elapsed_ns: 1_000_000, peak_gbps: Some(peak), ..RunResult::default() } }
    }

    fn lat(p50: f64) -> Reply {
        let l = LatencySummary { min: 1.0, p50, p90: 2.0, p99: 2.0, p999: 2.0, max: 3.0, mean: 1.5, stdev: 0.1, preempt: None };
        Reply::Done { result: RunResult { iterations: 10, bytes: 20, elapsed_ns: 20_000, lat: Some(l), ..RunResult::default() } }
    }

    #[test]
    fn a_progress_interval_or_a_member_result_out_of_range_is_refused() {
        let interval = |gbps| Reply::Progress { interval: crate::model::Interval { t_ms: 1000, gbps: Some(gbps), lat_us: None } };
        assert_eq!(check(&interval(0.0)), Ok(()), "a stalled interval is a figure");
        assert!(check(&interval(-1.0)).is_err());
        assert!(check(&interval(f64::NAN)).is_err());
        assert!(check(&interval(1e308)).is_err());
        let member = |gbps| {
            let hop = crate::model::collective::HopResult {
                hop: crate::model::collective::HopId(0),
                chunks: 1,
                bytes: 1,
                step_us: None,
                gbps,
                paths: Vec::new(),
            };
            let result = crate::model::collective::MemberResult {
                member: crate::model::collective::MemberId(0),
                elapsed_ns: 1,
                iterations: 1,
                hops: vec![hop],
                counter_deltas: Vec::new(),
                window: None,
            };
            Reply::MemberDone { result }
        };
        assert_eq!(check(&member(12.5)), Ok(()));
        assert!(check(&member(-3.0)).is_err());
    }

    #[test]
    fn impossible_figures_are_refused() {
        assert_eq!(check(&done(190.0)), Ok(()));
        assert_eq!(check(&lat(1.9)), Ok(()));
        for bad in [1e308, -5.0, 0.0, f64::NAN, 3200.5] {
            assert!(check(&done(bad)).unwrap_err().to_string().contains("peak_gbps"), "{bad}");
        }
        for bad in [1e308, -1e308, 0.0, -1.0, 1.1e7] {
            assert!(check(&lat(bad)).unwrap_err().to_string().contains("p50"), "{bad}");
        }
    }

    #[test]
    fn an_endpoint_needs_a_real_mtu_and_rate() {
        let endpoint = |mtu: u32, rate: &str| {
            let line = format!(
                r#"{{"v":1,"type":"ready","endpoint":{{"host":"n","device":"d","port":1,"lid":0,"gid_index":null,"gid":null,"qpns":[1],"psn":1,"addr":0,"rkey":0,"len":1,"mtu":{mtu},"link_layer":"Ethernet","rate_gbps":{rate},"ca_type":"x","max_rd_atomic":1}}}}"#
            );
            decode::<Reply>(&line).unwrap()
        };
        assert_eq!(check(&endpoint(1024, "100.0")), Ok(()));
        assert_eq!(check(&endpoint(4096, "null")), Ok(()));
        assert!(check(&endpoint(0, "100.0")).unwrap_err().to_string().contains("MTU of 0"));
        assert!(check(&endpoint(1500, "100.0")).is_err());
        assert!(check(&endpoint(1024, "-5")).unwrap_err().to_string().contains("rate_gbps"));
        assert!(check(&endpoint(1024, "1e308")).is_err());
    }

    #[test]
    fn counts_beyond_u64_do_not_decode() {
        for count in ["-5", "1e308", "18446744073709551616", "1.5"] {
            let line = format!(r#"{{"v":1,"type":"done","result":{{"iterations":{count},"bytes":1,"elapsed_ns":1,"peak_gbps":null}}}}"#);
            assert!(decode::<Reply>(&line).is_err(), "{count}");
        }
    }
}
