//! Numbers as people and JSON documents read them. Figures are kept at full precision while
//! they are computed, summed and compared; they are rounded only here, when printed or
//! serialised, so a sum of two directions adds exact figures, not rounded ones.

use serde::Serializer;

/// `value` rounded to `decimals` places.
pub fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Three decimals, without trailing zeros: microseconds to the nanosecond, Gb/s to the Mb/s.
pub fn three(value: f64) -> String {
    round(value, 3).to_string()
}

/// A link rate in Gb/s without trailing zeros: 200, 54.5, 2.5.
pub fn rate(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// A measured bandwidth in Gb/s: one decimal from 10 Gb/s, three below.
pub fn measured_gbps(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

/// A message rate: Mpps from 0.1 Mpps, messages a second below.
pub fn msg_rate(mpps: f64) -> String {
    if mpps >= 0.1 {
        format!("{mpps:.2} Mpps")
    } else {
        format!("{:.0} msg/s", mpps * 1e6)
    }
}

/// Gb/s and us in a sentence: three significant figures at most (196, 48.5, 2.25).
pub fn sig3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}").trim_end_matches(".0").to_string()
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A count and its noun, singular for one: `1 error`, `0 errors`, `2 warnings`, `3 switches`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if ["s", "sh", "ch", "x"].iter().any(|end| noun.ends_with(end)) {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// Serde: a figure with three decimals (latency in us, bandwidth in Gb/s).
pub fn serialize_3dp<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round(*value, 3))
}

/// Serde: an optional figure with three decimals.
pub fn serialize_opt_3dp<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_some(&round(*v, 3)),
        None => s.serialize_none(),
    }
}

/// Serde: an optional message rate in Mpps with six decimals (Soft-RoCE under emulation moves a
/// few hundred messages a second).
pub fn serialize_opt_6dp<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_some(&round(*v, 6)),
        None => s.serialize_none(),
    }
}

/// The median of the finite figures in `v` (the mean of the middle two when their count is
/// even), `None` when there is none: the one median the mesh's analysis, its heat map and the
/// rails' sibling comparison use.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_finite_figures() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, f64::NAN, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![f64::INFINITY]), None);
    }

    #[test]
    fn rounding_happens_at_the_edge() {
        assert_eq!(three(0.1194999), "0.119");
        assert_eq!(three(216.96), "216.96");
        assert_eq!(rate(200.0), "200");
        assert_eq!(rate(54.54), "54.5");
        assert_eq!(measured_gbps(97.04), "97.0");
        assert_eq!(measured_gbps(0.1194), "0.119");
        assert_eq!(msg_rate(0.000227), "227 msg/s");
        assert_eq!(msg_rate(12.3456), "12.35 Mpps");
        assert_eq!(sig3(196.4), "196");
        assert_eq!(sig3(48.0), "48");
        assert_eq!(sig3(2.250), "2.25");
        // Two directions each 0.0004 Gb/s sum to 0.001, where rounded halves would give 0.
        assert_eq!(three(0.0004 + 0.0006), "0.001");
        assert_eq!(count(1, "error"), "1 error");
        assert_eq!(count(0, "error"), "0 errors");
        assert_eq!(count(2, "warning"), "2 warnings");
        assert_eq!((count(3, "switch"), count(1, "switch")), ("3 switches".to_string(), "1 switch".to_string()));
    }

    #[test]
    fn json_figures_are_rounded() {
        #[derive(serde::Serialize)]
        struct Doc {
            #[serde(serialize_with = "serialize_3dp")]
            lat: f64,
            #[serde(serialize_with = "serialize_opt_3dp")]
            bw: Option<f64>,
            #[serde(serialize_with = "serialize_opt_6dp")]
            rate: Option<f64>,
        }
        let text = serde_json::to_string(&Doc { lat: 1.23456, bw: Some(97.00049), rate: Some(0.0002271) }).unwrap();
        assert_eq!(text, r#"{"lat":1.235,"bw":97.0,"rate":0.000227}"#);
    }
}
