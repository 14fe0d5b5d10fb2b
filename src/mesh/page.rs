//! What the `--html` heat map is given (pure): the run's parameters in words, the scales the
//! colours are judged against, and each measured pair once.

use super::analysis::{self, Criteria, PairMeasure};
use super::doc::{MeshDoc, PatternDoc};
use super::heatmap;
use super::MeshConfig;
use crate::pair::plan::PlannedTest;
use crate::units;
use std::collections::HashMap;

/// The heat map's stamp row: when, by which fabcheck, on which host.
pub(super) fn stamp_row(stamp: &crate::report::document::Stamp) -> (String, String) {
    ("run".into(), format!("{} by fabcheck {} on {}", stamp.time, stamp.fabcheck_version, stamp.host))
}

/// The run's parameters as the heat map shows them.
pub(super) fn params(run: &MeshConfig, pattern: Option<&PatternDoc>) -> Vec<(String, String)> {
    let mut tests: Vec<&PlannedTest> = Vec::new();
    for t in &run.plan {
        if !tests.iter().any(|x| x.spec.test == t.spec.test) {
            tests.push(t);
        }
    }
    // One figure for all tests when they agree, else each test's.
    let per_test = |f: &dyn Fn(&PlannedTest) -> String| -> String {
        let values: Vec<String> = tests.iter().map(|t| f(t)).collect();
        if values.windows(2).all(|w| w[0] == w[1]) {
            values.first().cloned().unwrap_or_default()
        } else {
            tests.iter().zip(&values).map(|(t, v)| format!("{v} ({})", t.spec.test.name())).collect::<Vec<_>>().join(", ")
        }
    };
    let mut directions: Vec<&str> = Vec::new();
    for t in &run.plan {
        if !t.spec.test.is_latency() && !directions.contains(&t.direction.name()) {
            directions.push(t.direction.name());
        }
    }
    let mut out = vec![
        ("tests".to_string(), tests.iter().map(|t| t.spec.test.name()).collect::<Vec<_>>().join(", ")),
        ("size".to_string(), per_test(&|t| format!("{} B", t.spec.size))),
        (
            "iterations".to_string(),
            per_test(&|t| t.spec.duration_ms.map_or_else(|| t.spec.iters.to_string(), |ms| format!("{} s (duration)", ms as f64 / 1000.0))),
        ),
        ("QPs".to_string(), per_test(&|t| t.spec.qps.to_string())),
    ];
    if !directions.is_empty() {
        out.push(("bandwidth directions".into(), directions.join(", ")));
    }
    if let Some(p) = pattern {
        let mut text = format!("{}, {} rounds", p.name, p.rounds);
        if let Some(seed) = p.seed {
            text.push_str(&format!(", seed {seed}"));
        }
        if let Some(l) = p.leaves {
            text.push_str(&format!(", {l} endpoints placed on leaves"));
        }
        out.push(("pattern".into(), text));
    }
    out.push(("threshold".into(), format!("{}% of the expected rate", units::sig3(100.0 * run.pair_criteria.bw_fraction))));
    out
}

/// What the bandwidth colours are measured against: the expected capacity when known, else
/// the median pair (as the analysis judges).
pub(super) fn bw_scale(c: &Criteria, median_bw: Option<f64>) -> Option<heatmap::Scale> {
    let per_pair = c.capacity_gbps.iter().flatten().count() >= 2;
    let (reference, basis, pass_share) = match (c.typical_rate(), median_bw) {
        (Some(e), _) if per_pair => (
            e,
            "the capacity of the full-speed pairs (each pair is judged against its own: the smaller of its two ends' link, or PCIe where smaller; the JSON's judged_against_gbps says which)",
            c.bw_fraction,
        ),
        (Some(e), _) => (e, "the expected rate", c.bw_fraction),
        (None, Some(m)) => (m, "the median pair (no link rate is known: Soft-RoCE, or a port that reports none)", c.outlier_fraction),
        (None, None) => return None,
    };
    Some(heatmap::Scale { reference, basis: basis.into(), pass_share, higher_is_better: true, unit: "Gb/s" })
}

/// retests), judged as the analysis judges it.
pub(super) fn cells(measured: &[PairMeasure], c: &Criteria, median_bw: Option<f64>, median_lat: Option<f64>) -> Vec<heatmap::Cell> {
    let mut at: HashMap<(usize, usize), usize> = HashMap::with_capacity(measured.len());
    let mut out: Vec<heatmap::Cell> = Vec::with_capacity(measured.len());
    for m in measured {
        let cell = heatmap::Cell {
            a: m.a,
            b: m.b,
            bw_gbps: m.bw_gbps,
            lat_us: m.lat_us,
            failed: m.failed,
            bad: analysis::is_bad(m, c, median_bw, median_lat),
        };
        match at.get(&(m.a.min(m.b), m.a.max(m.b))) {
            Some(&i) => out[i] = cell,
            None => {
                at.insert((m.a.min(m.b), m.a.max(m.b)), out.len());
                out.push(cell);
            }
        }
    }
    out
}

/// The `--html` page.
pub(super) fn heat_map(
    run: &MeshConfig,
    doc: &MeshDoc,
    nodes: &[String],
    first: &[PairMeasure],
    measured: &[PairMeasure],
    criteria: &Criteria,
) -> String {
    let mut params = params(run, doc.pattern.as_ref());
    // Stamped (issue #57): a page saved and mailed still says when and by what it was made.
    params.push(stamp_row(&crate::report::document::Stamp::now()));
    let (mb, ml) = analysis::medians(first);
    let cells = cells(measured, criteria, mb, ml);
    let bw = cells.iter().any(|c| c.bw_gbps.is_some()).then(|| bw_scale(criteria, mb)).flatten();
    let lat = ml.filter(|_| cells.iter().any(|c| c.lat_us.is_some())).map(|m| heatmap::Scale {
        reference: m,
        basis: "the median pair's latency".into(),
        pass_share: 1.0 / criteria.lat_outlier_factor,
        higher_is_better: false,
        unit: "us",
    });
    let title = match &run.planes {
        Some(p) => format!("fabcheck mesh: {} hosts, {} rails each", p.hosts.len(), p.rails),
        None => format!("fabcheck mesh: {} endpoints", run.names.len()),
    };
    let page = heatmap::Page {
        title: &title,
        verdict: doc.verdict,
        params: &params,
        endpoints: &run.names,
        names: super::names::Names::new(&run.names, &doc.hosts),
        nodes,
        cells: &cells,
        bw,
        lat,
        suspects: &doc.suspects,
    };
    heatmap::html(&page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(a: usize, b: usize, bw: f64) -> PairMeasure {
        PairMeasure { a, b, bw_gbps: Some(bw), lat_us: None, failed: false, preempted: None }
    }

    #[test]
    fn a_retest_stands_for_its_pair_on_the_heat_map() {
        let c = Criteria { expected_bw_gbps: Some(200.0), ..Criteria::default() };
        let cells = cells(&[m(0, 1, 100.0), m(1, 2, 190.0), m(1, 0, 190.0)], &c, None, None);
        assert_eq!(cells.len(), 2);
        assert_eq!((cells[0].a, cells[0].b, cells[0].bw_gbps, cells[0].bad), (1, 0, Some(190.0), false));
        assert!(!cells[1].bad);
        assert!(cells_bad(&c));
        let scale = bw_scale(&c, Some(150.0)).unwrap();
        assert_eq!((scale.reference, scale.pass_share), (200.0, 0.9));
        let scale = bw_scale(&Criteria::default(), Some(150.0)).unwrap();
        assert_eq!((scale.reference, scale.pass_share), (150.0, 0.8));
        assert!(bw_scale(&Criteria::default(), None).is_none());
    }

    fn cells_bad(c: &Criteria) -> bool {
        cells(&[m(0, 1, 170.0)], c, None, None)[0].bad
    }
}
