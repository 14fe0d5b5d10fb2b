//! `mesh`'s human view (pure): the bandwidth matrix up to [`MATRIX_MAX`] endpoints, above it
//! per-endpoint summaries and the worst pairs; then the unreachable endpoints, the suspects and
//! the verdict line.

use super::analysis::{self, Criteria, PairMeasure};
use super::doc::MeshDoc;
#[cfg(test)]
use super::names::display_name;
use super::names::Names;
use super::MATRIX_MAX;
use crate::outcome::Verdict;
use std::collections::HashMap;

/// Lines of per-endpoint summaries and of worst pairs in the human output of a large mesh.
const SUMMARY_LINES: usize = 20;

/// Pair records by pass.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub first: usize,
    pub zoom: usize,
    pub retest: usize,
    /// `mesh --rails`: pairs across rails are never run, and their cells say so (`.`), not `fail`.
    pub rails: bool,
}

fn bw_matrix(n: usize, measured: &[PairMeasure]) -> Vec<Vec<Option<f64>>> {
    let mut m = vec![vec![None; n]; n];
    for meas in measured {
        m[meas.a][meas.b] = meas.bw_gbps;
        m[meas.b][meas.a] = meas.bw_gbps;
    }
    m
}

/// The human report: the matrix up to [`MATRIX_MAX`] endpoints, above it per-endpoint
/// summaries and the worst pairs (the JSON stays complete). `measured`: first pass, zoom-in,
/// then retests (a later measure of a pair stands for it).
pub fn human(doc: &MeshDoc, counts: Counts, measured: &[PairMeasure], c: &Criteria, quiet: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let names = Names::of_doc(doc);
    // What to act on first: the suspects and the endpoints that could not be reached, then the
    // figures.
    for s in &doc.suspects {
        let _ = writeln!(out, "SUSPECT {:<6} {}  {}", format!("{:?}", s.kind).to_lowercase(), names.subject(&s.subject), s.reason);
    }
    for u in &doc.unreachable {
        let _ = writeln!(out, "UNREACHABLE {}: {}", names.of(&u.endpoint), u.error);
    }
    // A pair whose latency loop lost its CPU: said, and blamed on no link.
    let mut said: Vec<(usize, usize)> = Vec::new();
    for m in measured {
        let Some(p) = m.preempted else { continue };
        if said.contains(&(m.a.min(m.b), m.a.max(m.b))) {
            continue;
        }
        said.push((m.a.min(m.b), m.a.max(m.b)));
        let _ = writeln!(
            out,
            "PREEMPTED {} <-> {}: latency not judged: preempted ({}), no link blamed for it",
            names.at(m.a),
            names.at(m.b),
            p.describe()
        );
    }
    if !quiet && !out.is_empty() {
        let _ = writeln!(out);
    }
    if quiet {
        // Only problems and the verdict.
    } else if doc.endpoints.len() <= MATRIX_MAX {
        let mut matrix = bw_matrix(doc.endpoints.len(), measured);
        if counts.rails {
            unmeasured_apart(&mut matrix, measured);
        }
        matrix_text(&mut out, &names, &matrix);
    } else {
        summary_text(&mut out, &names, measured, counts.first, c);
    }
    let (retests, zoomed) = (counts.retest, counts.zoom);
    let pattern = match &doc.pattern {
        Some(p) if p.name != "all-pairs" || doc.endpoints.len() > MATRIX_MAX => {
            format!(" ({}, {} rounds{})", p.name, p.rounds, p.seed.map(|s| format!(", --seed {s}")).unwrap_or_default())
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "\n{}: {} endpoints, {} pairs{pattern}{}{}",
        if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" },
        doc.endpoints.len(),
        counts.first,
        if zoomed > 0 { format!(", {zoomed} zoom-in") } else { String::new() },
        if retests > 0 { format!(", {retests} re-tested") } else { String::new() }
    );
    out
}

/// `mesh --rails`: a cell no pair measured (rail k never meets rail j) as NaN, which the matrix
/// prints `.`; a pair measured without a figure stays `fail`.
fn unmeasured_apart(matrix: &mut [Vec<Option<f64>>], measured: &[PairMeasure]) {
    let mut seen = vec![vec![false; matrix.len()]; matrix.len()];
    for m in measured {
        seen[m.a][m.b] = true;
        seen[m.b][m.a] = true;
    }
    for (row, seen) in matrix.iter_mut().zip(seen) {
        for (cell, seen) in row.iter_mut().zip(seen) {
            if !seen {
                *cell = Some(f64::NAN);
            }
        }
    }
}

fn matrix_text(out: &mut String, names: &Names<'_>, matrix: &[Vec<Option<f64>>]) {
    use std::fmt::Write;
    let labels: Vec<String> = (0..names.len()).map(|i| names.at(i)).collect();
    let width = labels.iter().map(|e| e.chars().count()).max().unwrap_or(4).max(4);
    let _ = writeln!(out, "bandwidth (Gb/s), slowest direction, largest size");
    let _ = write!(out, "{:width$}", "");
    for j in 0..names.len() {
        let _ = write!(out, " {:>8}", format!("[{j}]"));
    }
    let _ = writeln!(out);
    for (i, name) in labels.iter().enumerate() {
        let _ = write!(out, "{name:width$}");
        for (j, cell) in matrix[i].iter().enumerate() {
            let text = match cell {
                _ if i == j => "-".to_string(),
                Some(v) if v.is_nan() => ".".to_string(),
                Some(v) => format!("{v:.3}"),
                None => "fail".to_string(),
            };
            let _ = write!(out, " {text:>8}");
        }
        let _ = writeln!(out, "  [{i}]");
    }
}

/// Per-endpoint summaries (the endpoints with the most bad pairs) and the worst pairs.
fn summary_text(out: &mut String, names: &Names<'_>, measured: &[PairMeasure], first_pass: usize, c: &Criteria) {
    use std::fmt::Write;
    let n = names.len();
    // The cluster's figures are the first pass's, every pair once: the retest and the zoom-in
    // measure mostly bad pairs again and would drag the median down. Pairs are judged against
    // them, as the analysis judged them.
    let (mb, ml) = analysis::medians(&measured[..first_pass.min(measured.len())]);
    let mut latest: HashMap<(usize, usize), &PairMeasure> = HashMap::with_capacity(measured.len());
    for m in measured {
        latest.insert((m.a.min(m.b), m.a.max(m.b)), m);
    }
    // Per endpoint: pairs, bad pairs, slowest bandwidth.
    let mut per = vec![(0usize, 0usize, f64::INFINITY); n];
    let mut worst: Vec<&PairMeasure> = Vec::new();
    for m in latest.values() {
        let bad = analysis::is_bad(m, c, mb, ml);
        for e in [m.a, m.b] {
            if let Some(p) = per.get_mut(e) {
                p.0 += 1;
                p.1 += usize::from(bad);
                p.2 = p.2.min(m.bw_gbps.unwrap_or(f64::INFINITY));
            }
        }
        if bad {
            worst.push(m);
        }
    }
    let clean = per.iter().filter(|p| p.0 > 0 && p.1 == 0).count();
    let _ = writeln!(
        out,
        "{n} endpoints: {clean} with every pair good; first pass median {} Gb/s, {} us",
        mb.map_or("-".into(), |v| format!("{v:.1}")),
        ml.map_or("-".into(), |v| format!("{v:.2}"))
    );
    let mut order: Vec<usize> = (0..n).filter(|&e| per[e].1 > 0).collect();
    order.sort_by(|&x, &y| per[y].1.cmp(&per[x].1).then(per[x].2.total_cmp(&per[y].2)).then(x.cmp(&y)));
    if !order.is_empty() {
        let _ = writeln!(out, "\nendpoints with bad pairs ({}, worst {} shown; --json has all):", order.len(), order.len().min(SUMMARY_LINES));
    }
    let width = order.iter().take(SUMMARY_LINES).map(|&e| names.at(e).chars().count()).max().unwrap_or(4);
    for &e in order.iter().take(SUMMARY_LINES) {
        let (pairs, bad, slowest) = per[e];
        let slowest = if slowest.is_finite() { format!("{slowest:.1} Gb/s") } else { "-".into() };
        let _ = writeln!(out, "  {:width$}  {bad:>4} of {pairs:>4} pairs bad, slowest {slowest}", names.at(e));
    }
    worst.sort_by(|x, y| {
        y.failed.cmp(&x.failed).then(x.bw_gbps.unwrap_or(0.0).total_cmp(&y.bw_gbps.unwrap_or(0.0))).then((x.a, x.b).cmp(&(y.a, y.b)))
    });
    if !worst.is_empty() {
        let _ = writeln!(out, "\nworst pairs ({} bad, {} shown):", worst.len(), worst.len().min(SUMMARY_LINES));
    }
    for m in worst.iter().take(SUMMARY_LINES) {
        let what = if m.failed {
            "failed".to_string()
        } else {
            format!("{} Gb/s, {} us", m.bw_gbps.map_or("-".into(), |v| format!("{v:.1}")), m.lat_us.map_or("-".into(), |v| format!("{v:.2}")))
        };
        let _ = writeln!(out, "  {} <-> {}  {what}", names.at(m.a), names.at(m.b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_named_by_the_agents_host_and_device_then_the_address() {
        assert_eq!(display_name("tcp://10.0.3.7:18515", Some("n07")), "n07 (tcp://10.0.3.7:18515)");
        assert_eq!(display_name("tcp://10.0.3.7:18515/mlx5_3", Some("n07")), "n07/mlx5_3 (tcp://10.0.3.7:18515/mlx5_3)");
        assert_eq!(display_name("n07/mlx5_3", Some("n07")), "n07/mlx5_3", "the same: said once");
        assert_eq!(display_name("localhost/rxe0#2", Some("vm1")), "vm1/rxe0#2 (localhost/rxe0#2)", "two agents on one host stay apart");
        assert_eq!(display_name("tcp://10.0.3.7:18515", None), "tcp://10.0.3.7:18515", "no host reported");
    }

    #[test]
    fn suspects_come_first_named_by_host() {
        let mut doc = MeshDoc {
            schema: "fabcheck.mesh.v1".into(),
            verdict: Verdict::Fail,
            endpoints: vec!["tcp://10.0.0.1:1".into(), "tcp://10.0.0.2:1".into()],
            hosts: [("tcp://10.0.0.1:1".to_string(), "n01".to_string()), ("tcp://10.0.0.2:1".to_string(), "n02".to_string())].into(),
            pairs: Vec::new(),
            suspects: vec![analysis::Suspect::new(analysis::SuspectKind::Link, "tcp://10.0.0.1:1<->tcp://10.0.0.2:1", "slow")],
            unreachable: Vec::new(),
            pattern: None,
            timing: None,
        };
        let measured = [PairMeasure { a: 0, b: 1, bw_gbps: Some(50.0), lat_us: None, failed: false, preempted: None }];
        let text = human(&doc, Counts { first: 1, ..Counts::default() }, &measured, &Criteria::default(), false);
        let first = text.lines().next().unwrap();
        assert_eq!(first, "SUSPECT link   n01 (tcp://10.0.0.1:1) <-> n02 (tcp://10.0.0.2:1)  slow", "{text}");
        assert!(text.contains("\nn01 (tcp://10.0.0.1:1) "), "the matrix rows by host: {text}");
        doc.suspects.clear();
        let text = human(&doc, Counts { first: 1, ..Counts::default() }, &measured, &Criteria::default(), false);
        assert!(text.starts_with("bandwidth (Gb/s)"), "{text}");
        let gaps = crate::perf::preempt::Preempt { gaps: 3, gap_ns: 24_000_000, elapsed_ns: 100_000_000 };
        let measured =
            [PairMeasure { preempted: Some(gaps), ..measured[0].clone() }, PairMeasure { a: 1, b: 0, preempted: Some(gaps), ..measured[0].clone() }];
        let text = human(&doc, Counts { first: 1, ..Counts::default() }, &measured, &Criteria::default(), false);
        let said: Vec<&str> = text.lines().filter(|l| l.starts_with("PREEMPTED")).collect();
        assert_eq!(
            said,
            ["PREEMPTED n01 (tcp://10.0.0.1:1) <-> n02 (tcp://10.0.0.2:1): latency not judged: preempted (3 gaps, 24 ms), no link blamed for it"],
            "once per pair, either way round: {text}"
        );
    }
}
