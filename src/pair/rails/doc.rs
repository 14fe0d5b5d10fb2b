//! What `pair --rails` adds to `fabcheck.pair.v1` (additive: absent without `--rails`): one
//! record per rail and the node aggregate per bandwidth test, and their human table.

use crate::model::Direction;
use crate::model::TestKind;
use crate::outcome::TestResult;
use crate::outcome::Verdict;
use crate::pair::side::Side;
use crate::units;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A row of the table: rail, test, direction, size (`words::bad_rows` names the marked ones).
pub type Row = (usize, TestKind, Direction, u32);

/// One rail: its two sides and its results, as `pair` gives them for one link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RailRecord {
    pub rail: usize,
    pub a: Side,
    pub b: Side,
    pub results: Vec<TestResult>,
}

/// The node's total for one bandwidth test, direction and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub test: TestKind,
    pub direction: Direction,
    pub size: u32,
    /// How many rails moved data in it.
    pub rails: usize,
    #[serde(serialize_with = "units::serialize_3dp")]
    pub bw_gbps: f64,
    #[serde(serialize_with = "six_places")]
    pub msg_rate_mpps: f64,
    /// The rails' summed capacity, or a shared bound when smaller.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "units::serialize_opt_3dp")]
    pub capacity_gbps: Option<f64>,
}

/// Serde: a message rate with six decimals, as `pair`'s results carry theirs.
fn six_places<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(units::round(*value, 6))
}

/// The human table: per test one line per rail and the node total, a bad rail's bad rows
/// (`bad_rows`, `words::bad_rows`) marked `<-`.
pub fn table(rails: &[RailRecord], aggregate: &[Aggregate], bad_rails: &[usize], bad_rows: &[Row], quiet: bool) -> String {
    let mut out = String::new();
    if !quiet {
        for r in rails {
            let _ = writeln!(
                out,
                "rail {:<2} {} {}/{}  <->  {} {}/{}{}",
                r.rail,
                r.a.host,
                r.a.device,
                r.a.port,
                r.b.host,
                r.b.device,
                r.b.port,
                r.a.rate_gbps.map_or(String::new(), |g| format!("  link {} Gb/s", units::rate(g)))
            );
        }
        let _ = writeln!(out);
    }
    let mut keys: Vec<(TestKind, Direction, u32)> = Vec::new();
    for r in rails {
        for t in &r.results {
            if !keys.contains(&(t.test, t.direction, t.size)) {
                keys.push((t.test, t.direction, t.size));
            }
        }
    }
    let _ = writeln!(out, "{:<10} {:<5} {:>8} {:<8} result", "test", "dir", "size", "rail");
    for (test, direction, size) in keys {
        for r in rails {
            let bad = bad_rails.contains(&r.rail);
            if quiet && !bad {
                continue;
            }
            let Some(t) = r.results.iter().find(|t| (t.test, t.direction, t.size) == (test, direction, size)) else { continue };
            let result = if let Some(e) = &t.error {
                format!("FAILED: {}", crate::sanitise::one_line(e))
            } else if let Some(l) = &t.lat_us {
                format!("p50 {} us  p99 {} us", units::three(l.p50), units::three(l.p99))
            } else {
                format!("{} Gb/s  {}", t.bw_gbps.map_or("?".into(), units::measured_gbps), t.msg_rate_mpps.map_or("?".into(), units::msg_rate))
            };
            let mark = if bad_rows.contains(&(r.rail, test, direction, size)) { "  <- bad rail" } else { "" };
            let _ = writeln!(out, "{:<10} {:<5} {:>8} {:<8} {result}{mark}", test, direction, size, r.rail);
        }
        if let Some(g) = aggregate.iter().find(|g| (g.test, g.direction, g.size) == (test, direction, size)) {
            let cap = g.capacity_gbps.map_or(String::new(), |c| format!("  of {} Gb/s", units::rate(c.round())));
            let _ = writeln!(
                out,
                "{:<10} {:<5} {:>8} {:<8} {} Gb/s  {}{cap}",
                test,
                direction,
                size,
                "node",
                units::measured_gbps(g.bw_gbps),
                units::msg_rate(g.msg_rate_mpps)
            );
        }
    }
    out
}

/// The verdict line's companion: how many rails, and which are bad.
pub fn summary(rails: usize, bad_rails: &[usize], verdict: Verdict) -> String {
    match (verdict, bad_rails) {
        (_, []) => format!("{rails} rails"),
        (_, bad) => format!("{rails} rails, bad: {}", bad.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")),
    }
}
