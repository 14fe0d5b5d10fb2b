//! The words of a suspect's reason: what its bad pairs have in common, with figures (pure).

use super::{laggy, slow, Criteria, PairMeasure};
use crate::units::median;
use crate::units::sig3 as fmt;

/// What the bad pairs of a group (a node's, a link's) have in common, in words.
pub(super) struct Symptoms {
    pub(super) failed: usize,
    pub(super) slow: Vec<f64>,
    /// The rates the slow pairs were judged against (each pair its own ends' capacity).
    pub(super) expected: Vec<f64>,
    pub(super) laggy: Vec<f64>,
    /// The latencies the laggy pairs were judged against (with `--topology`, each pair its own
    /// hop count's median).
    pub(super) lag_against: Vec<f64>,
}

impl Symptoms {
    pub(super) fn of<'m>(ms: impl Iterator<Item = &'m PairMeasure>, c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> Symptoms {
        let mut s = Symptoms { failed: 0, slow: Vec::new(), expected: Vec::new(), laggy: Vec::new(), lag_against: Vec::new() };
        for m in ms {
            if m.failed {
                s.failed += 1;
                continue;
            }
            if slow(m, c, mb) {
                s.slow.extend(m.bw_gbps);
                s.expected.extend(c.expected_for(m.a, m.b));
            }
            if laggy(m, c, ml) {
                s.laggy.extend(m.lat_us);
                s.lag_against.extend(c.hops.as_ref().and_then(|h| h.median_for(m.a, m.b)).or(ml));
            }
        }
        s
    }

    /// "at ~48 Gb/s vs cluster median 196 Gb/s", "failed", ...
    pub(super) fn figure(&self, c: &Criteria, mb: Option<f64>, ml: Option<f64>) -> String {
        let mut parts = Vec::new();
        if self.failed > 0 {
            parts.push(if self.slow.is_empty() && self.laggy.is_empty() { "failed".to_string() } else { format!("{} failed", self.failed) });
        }
        if let Some(typ) = median(self.slow.clone()) {
            let against = match (median(self.expected.clone()), mb) {
                (Some(exp), Some(med)) if med < c.bw_fraction * exp => {
                    format!("expected {} Gb/s (cluster median {} Gb/s)", fmt(exp), fmt(med))
                }
                (Some(exp), _) => format!("expected {} Gb/s", fmt(exp)),
                (None, Some(med)) => format!("cluster median {} Gb/s", fmt(med)),
                (None, None) => "the others".into(),
            };
            parts.push(format!("at ~{} Gb/s vs {against}", fmt(typ)));
        }
        match (median(self.laggy.clone()), c.hops.is_some(), median(self.lag_against.clone()).or(ml)) {
            (Some(typ), true, Some(med)) => {
                parts.push(format!("~{} us latency vs {} us, the median of pairs as many hops apart", fmt(typ), fmt(med)))
            }
            (Some(typ), false, Some(med)) => parts.push(format!("~{} us latency vs cluster median {} us", fmt(typ), fmt(med))),
            _ => {}
        }
        parts.join(", ")
    }

    pub(super) fn only_failed(&self) -> bool {
        self.failed > 0 && self.slow.is_empty() && self.laggy.is_empty()
    }
}
