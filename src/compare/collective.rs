//! A `fabcheck.collective.v1` document's figures as `compare` keys them (0.5): each ring's
//! busbw (`rail K`, or `ring`), the whole run's (`total`), and each hop's achieved rate
//! between its two members (`HOST/DEV`, the documents' label). The test is the op
//! (`allreduce`, `incast:2`), the size `--size`. A ring or the total has no second end: its
//! key's `b` is empty and it is named by `a` alone.
//!
//! What is matched is what the two runs share: the same op and size, the same members in the
//! same rails. A hop of one ring order that the other run did not have (another `--topology`,
//! a member more) is listed as only in one document, never compared with another hop.

use super::figures::{Entry, Figures};
use super::Figure;
use serde_json::Value;

/// The direction word of a ring's and of the total's busbw.
pub const RING: &str = "ring";
pub const TOTAL: &str = "all rings";

/// The parts of a collective document compare reads (each `Null` where absent).
#[derive(Debug, Default)]
pub struct Parts<'a> {
    pub op: &'a Value,
    pub size: &'a Value,
    pub members: &'a Value,
    pub rings: &'a Value,
    pub total: &'a Value,
}

/// Every figure of a collective document, keyed and in key order.
pub fn figures(parts: &Parts<'_>) -> Figures {
    let mut out = Figures::default();
    let Some(op) = parts.op.as_str() else { return out };
    let size = parts.size.as_u64().unwrap_or(0);
    let test = out.names.id(op);
    let empty = out.names.id("");
    let members: Vec<String> = parts
        .members
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| format!("{}/{}", m["host"].as_str().unwrap_or("?"), m["device"].as_str().unwrap_or("?")))
        .collect();
    let rings = parts.rings.as_array().map_or(&[][..], Vec::as_slice);
    // Rings without a rail are told apart by their place where there are several.
    let unnamed = rings.iter().filter(|r| r["rail"].as_u64().is_none()).count();
    let positive = |v: &Value| v.as_f64().filter(|g| g.is_finite());
    for (index, ring) in rings.iter().enumerate() {
        let name = match ring["rail"].as_u64() {
            Some(rail) => format!("rail {rail}"),
            None if unnamed > 1 => format!("ring {index}"),
            None => "ring".to_string(),
        };
        if let Some(busbw) = positive(&ring["busbw_gbps"]) {
            let (a, direction) = (out.names.id(&name), out.names.id(RING));
            out.entries.push(Entry { a, b: empty, test, direction, size, figure: Figure::BusBandwidth, value: busbw });
        }
        for hop in ring["hops"].as_array().into_iter().flatten() {
            let end = |key: &str| hop[key].as_u64().and_then(|i| members.get(usize::try_from(i).ok()?));
            let (Some(from), Some(to), Some(gbps)) = (end("from"), end("to"), positive(&hop["gbps"])) else { continue };
            // One order for the two ends, as `pair`'s keys: the direction says which way.
            let (first, second, direction) = if from <= to { (from, to, "a->b") } else { (to, from, "b->a") };
            let (a, b, direction) = (out.names.id(first), out.names.id(second), out.names.id(direction));
            out.entries.push(Entry { a, b, test, direction, size, figure: Figure::Bandwidth, value: gbps });
        }
    }
    if let Some(busbw) = positive(&parts.total["busbw_gbps"]) {
        let (a, direction) = (out.names.id("total"), out.names.id(TOTAL));
        out.entries.push(Entry { a, b: empty, test, direction, size, figure: Figure::BusBandwidth, value: busbw });
    }
    out.finish()
}
