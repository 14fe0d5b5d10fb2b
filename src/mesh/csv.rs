//! `mesh --csv FILE` (pure rows): every measured pair in a tidy long format, one row per pair
//! and test result (a pair that could not run is one row with its error):
//!
//! `a,b,test,direction,size,value,unit,verdict,pass,error`
//!
//! `value` is the bandwidth in Gb/s (`unit` `Gb/s`) for bandwidth tests and the p50 latency in
//! microseconds (`unit` `us`) for latency tests; `verdict` is the pair's (`pass`/`fail`);
//! `pass` says which pass measured it (`first`, `retest`, `zoom`): a retest stands for the pair.

use super::doc::PairRecord;
use crate::outcome::Verdict;
use crate::report::csv;

/// The CSV's columns, in order.
pub const HEADER: [&str; 10] = ["a", "b", "test", "direction", "size", "value", "unit", "verdict", "pass", "error"];

/// The header line.
pub fn header() -> String {
    csv::row(&HEADER)
}

/// The header line of a `--rails` mesh or not: with `--rails`, a `rail` column after `b`.
pub fn header_for(rails: bool) -> String {
    if !rails {
        return header();
    }
    let mut columns = HEADER.to_vec();
    columns.insert(2, "rail");
    csv::row(&columns)
}

/// A pair record's rows (with its `rail` after `b` when it has one: `mesh --rails`).
pub fn rows(r: &PairRecord) -> String {
    let rail = r.rail.map(|k| k.to_string());
    let row = |mut cells: Vec<String>| {
        if let Some(k) = &rail {
            cells.insert(2, k.clone());
        }
        csv::row(&cells)
    };
    let verdict = if r.verdict == Verdict::Pass { "pass" } else { "fail" };
    let pass = if r.retest {
        "retest"
    } else if r.zoom {
        "zoom"
    } else {
        "first"
    };
    if r.results.is_empty() {
        return row([r.a.as_str(), &r.b, "", "", "", "", "", verdict, pass, r.error.as_deref().unwrap_or("")].map(String::from).to_vec());
    }
    let mut out = String::new();
    for t in &r.results {
        let (value, unit) = match (t.bw_gbps, &t.lat_us) {
            (Some(bw), _) => (csv::number(Some(bw)), "Gb/s"),
            (None, Some(l)) => (csv::number(Some(l.p50)), "us"),
            (None, None) => (String::new(), ""),
        };
        let error = t.error.as_deref().or(r.error.as_deref()).unwrap_or("");
        let size = t.size.to_string();
        out.push_str(&row([r.a.as_str(), &r.b, t.test.name(), t.direction.name(), &size, &value, unit, verdict, pass, error]
            .map(String::from)
            .to_vec()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Direction;
    use crate::model::TestKind;
    use crate::outcome::TestResult;

    #[test]
    fn a_row_per_result_and_one_for_a_pair_that_could_not_run() {
        let result = |test, bw: Option<f64>| TestResult {
            paths: Vec::new(),
            test,
            direction: Direction::AtoB,
            size: 65536,
            iterations: 10,
            qps: 1,
            lat_us: None,
            bw_gbps: bw,
            peak_gbps: None,
            msg_rate_mpps: None,
            counters: Default::default(),
            error: None,
            remedy: None,
            under_load: None,
        };
        let ok = PairRecord {
            a: "n1".into(),
            b: "n2,x".into(),
            verdict: Verdict::Pass,
            results: vec![result(TestKind::WriteBw, Some(190.0004)), result(TestKind::ReadBw, None)],
            error: None,
            retest: true,
            zoom: false,
            rail: None,
            judged_against_gbps: None,
        };
        assert_eq!(rows(&ok), "n1,\"n2,x\",write_bw,a->b,65536,190,Gb/s,pass,retest,\nn1,\"n2,x\",read_bw,a->b,65536,,,pass,retest,\n");
        let lost = PairRecord { results: Vec::new(), error: Some("cannot reach n2".into()), verdict: Verdict::Fail, retest: false, zoom: true, ..ok };
        assert_eq!(rows(&lost), "n1,\"n2,x\",,,,,,fail,zoom,cannot reach n2\n");
        assert_eq!(header(), "a,b,test,direction,size,value,unit,verdict,pass,error\n");
        assert_eq!(header_for(false), header());
    }

    #[test]
    fn with_rails_a_rail_column_after_b() {
        assert_eq!(header_for(true), "a,b,rail,test,direction,size,value,unit,verdict,pass,error\n");
        let lost = PairRecord {
            a: "n1/mlx5_3".into(),
            b: "n2/mlx5_3".into(),
            verdict: Verdict::Fail,
            results: Vec::new(),
            error: Some("x".into()),
            retest: false,
            zoom: false,
            rail: Some(3),
            judged_against_gbps: None,
        };
        assert_eq!(rows(&lost), "n1/mlx5_3,n2/mlx5_3,3,,,,,,fail,first,x\n");
    }
}
