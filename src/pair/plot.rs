//! `pair --csv` and `pair --svg` (pure): the results as a table, and a sweep as a picture.
//!
//! The CSV has one row per result (a test, a direction, a size), the bandwidth columns filled
//! for bandwidth tests and the latency ones for latency tests. The SVG is written by hand (no
//! plotting crate): message size on a log2 axis, bandwidth in Gb/s on a linear one with the
//! capacity and the pass line drawn across, and, when latency ran, a second panel of p50 and
//! p99 latency on a log10 axis. Series differ by colour (Paul Tol's "muted" palette: nine
//! colours, safe for colour-blind readers, one per series of a full plan: 3 tests x 3
//! directions) and by marker shape, so no reading depends on colour alone. A plot with
//! bidirectional tests also draws their capacity (twice the link: both directions at once), and
//! every reference line's label goes where the data's lines are not.

use super::report::PairDoc;
use crate::outcome::TestResult;
use crate::outcome::Verdict;
use crate::report::csv;
use crate::sanitise::xml as escape;
use crate::units;
use std::fmt::Write;

/// The CSV's columns, in order.
pub const CSV_HEADER: [&str; 14] = [
    "test",
    "direction",
    "size",
    "iterations",
    "qps",
    "bw_gbps",
    "peak_gbps",
    "msg_rate_mpps",
    "lat_min_us",
    "lat_p50_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_max_us",
    "error",
];

/// Every result as a CSV row, after the header.
pub fn csv(results: &[TestResult]) -> String {
    let mut out = csv::row(&CSV_HEADER);
    for r in results {
        let l = r.lat_us.as_ref();
        out.push_str(&csv::row(&[
            r.test.name().to_string(),
            r.direction.name().to_string(),
            r.size.to_string(),
            r.iterations.to_string(),
            r.qps.to_string(),
            csv::number(r.bw_gbps),
            csv::number(r.peak_gbps),
            r.msg_rate_mpps.filter(|v| v.is_finite()).map(|v| units::round(v, 6).to_string()).unwrap_or_default(),
            csv::number(l.map(|l| l.min)),
            csv::number(l.map(|l| l.p50)),
            csv::number(l.map(|l| l.p99)),
            csv::number(l.map(|l| l.p999)),
            csv::number(l.map(|l| l.max)),
            r.error.clone().unwrap_or_default(),
        ]));
    }
    out
}

/// Paul Tol's "muted" scheme: nine colours distinguishable with any of the common colour-vision
/// deficiencies (Okabe-Ito's eight, less a yellow unreadable on white, left two full plans'
/// nine bandwidth series sharing colours).
const COLOURS: [&str; 9] = ["#332288", "#CC6677", "#117733", "#88CCEE", "#882255", "#44AA99", "#999933", "#AA4499", "#DDCC77"];

/// A box on the plot, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rect {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Rect {
    fn holds(&self, (x, y): (f64, f64)) -> bool {
        (self.x0 - 2.0..=self.x1 + 2.0).contains(&x) && (self.y0 - 2.0..=self.y1 + 2.0).contains(&y)
    }

    fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

/// Where a reference line's label goes: at the left or the right end of the line, above or
/// below it, the first spot that no data line crosses and no label placed before covers
/// (left-above, right-above, left-below, right-below); the least crowded when none is free.
/// `lines` are the series in pixels; `panel` is (top, bottom), which a label stays within.
fn label_spot(line_y: f64, width: f64, lines: &[Vec<(f64, f64)>], taken: &[Rect], panel: (f64, f64)) -> (Rect, bool) {
    let mut samples: Vec<(f64, f64)> = Vec::new();
    for line in lines {
        samples.extend(line.iter().copied());
        for w in line.windows(2) {
            let ((xa, ya), (xb, yb)) = (w[0], w[1]);
            samples.extend((1..16).map(|i| {
                let t = f64::from(i) / 16.0;
                (xa + (xb - xa) * t, ya + (yb - ya) * t)
            }));
        }
    }
    let spots = [(true, true), (false, true), (true, false), (false, false)].map(|(left, above)| {
        let (x0, x1) = if left { (LEFT + 4.0, LEFT + 4.0 + width) } else { (LEFT + PLOT_W - 4.0 - width, LEFT + PLOT_W - 4.0) };
        let (y0, y1) = if above { (line_y - 15.0, line_y - 2.0) } else { (line_y + 2.0, line_y + 15.0) };
        let rect = Rect { x0, y0, x1, y1 };
        let outside = usize::from(y0 < panel.0 || y1 > panel.1) * 1000;
        let crowd = samples.iter().filter(|p| rect.holds(**p)).count() + 100 * taken.iter().filter(|t| t.overlaps(&rect)).count() + outside;
        (rect, left, crowd)
    });
    let best = spots.iter().min_by_key(|s| s.2).expect("four spots");
    (best.0, best.1)
}

/// `2`, `512`, `1K`, `64K`, `8M`: a size as an axis label.
pub fn size_label(size: u64) -> String {
    match size {
        s if s >= 1 << 30 && s % (1 << 30) == 0 => format!("{}G", s >> 30),
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{}M", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{}K", s >> 10),
        s => s.to_string(),
    }
}

/// A step for about `ticks` ticks from 0 to `max`: 1, 2 or 5 times a power of ten.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

/// A marker of shape `k` (circle, square, triangle, diamond, triangle down, cross) at (x, y).
fn marker(k: usize, x: f64, y: f64, colour: &str) -> String {
    match k % 6 {
        0 => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#),
        1 => format!(r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="{colour}"/>"#, x - 3.5, y - 3.5),
        2 => format!(r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"/>"#, y - 4.5, x + 4.5, y + 3.5, x - 4.5, y + 3.5),
        3 => format!(r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="{colour}"/>"#, y - 4.5, x + 4.5, y + 4.5, x - 4.5),
        4 => format!(r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"/>"#, y + 4.5, x + 4.5, y - 3.5, x - 4.5, y - 3.5),
        _ => format!(
            r#"<path d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}" stroke="{colour}" stroke-width="2"/>"#,
            x - 4.0,
            y - 4.0,
            x + 4.0,
            y + 4.0,
            x - 4.0,
            y + 4.0,
            x + 4.0,
            y - 4.0
        ),
    }
}

/// One line of a plot: its name and its points (size, value), in size order.
struct Series {
    name: String,
    points: Vec<(u32, f64, String)>,
    dashed: bool,
    /// Index into colours and markers.
    style: usize,
}

/// A panel's vertical axis: linear from `lo` to `hi`, or log10 with `lo`..`hi` in decades.
struct YAxis {
    top: f64,
    height: f64,
    log: bool,
    lo: f64,
    hi: f64,
}

impl YAxis {
    fn y(&self, v: f64) -> f64 {
        let x = if self.log { v.max(f64::MIN_POSITIVE).log10() } else { v };
        self.top + self.height - (x - self.lo) / (self.hi - self.lo) * self.height
    }
}

/// Geometry of one panel.
struct Panel {
    top: f64,
    height: f64,
}

const WIDTH: f64 = 820.0;
const LEFT: f64 = 72.0;
const PLOT_W: f64 = 540.0;
const PANEL_H: f64 = 280.0;

/// The plot of a pair run (meant for `--sweep`; a single size is one point per series).
/// `pass_fraction`: the share of the capacity a bandwidth test must reach (`--threshold`).
pub fn svg(doc: &PairDoc, pass_fraction: f64) -> String {
    let results: Vec<&TestResult> = doc.results.iter().collect();
    let sizes: Vec<u32> = results.iter().map(|r| r.size.max(1)).collect();
    let lo = sizes.iter().copied().min().unwrap_or(2).max(1);
    let hi = sizes.iter().copied().max().unwrap_or(lo).max(lo);
    let (l0, l1) = (f64::from(lo).log2().floor(), f64::from(hi).log2().ceil().max(f64::from(lo).log2().floor() + 1.0));
    let x_of = |size: u32| LEFT + (f64::from(size.max(1)).log2() - l0) / (l1 - l0) * PLOT_W;

    let (bw, lat, failed) = series(&results);

    let capacity = doc.capacity_gbps.filter(|c| c.is_finite() && *c > 0.0);
    let references = references(capacity, bw.iter().any(|s| s.name.ends_with(" bidi")), pass_fraction);
    let title = format!("fabcheck pair {}/{} <-> {}/{}", doc.a.host, doc.a.device, doc.b.host, doc.b.device);
    let mut panels = Vec::new();
    let mut y = 64.0;
    if !bw.is_empty() || lat.is_empty() {
        panels.push(("bw", Panel { top: y, height: PANEL_H }));
        y += PANEL_H + 64.0;
    }
    if !lat.is_empty() {
        panels.push(("lat", Panel { top: y, height: PANEL_H }));
        y += PANEL_H + 64.0;
    }
    let height = y + 8.0 + 16.0 * failed.len().min(8) as f64;

    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = write!(out, "<title>{}</title>", escape(&title));
    let _ = write!(out, r##"<rect width="{WIDTH}" height="{height:.0}" fill="#ffffff"/>"##);
    let verdict = if doc.verdict == Verdict::Pass { "PASS" } else { "FAIL" };
    let _ = write!(out, r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{} — {verdict}</text>"#, escape(&title));
    let cap_text = capacity.map_or("capacity unknown: bandwidth not judged against a link rate".to_string(), |c| {
        format!(
            "capacity {} Gb/s; a bandwidth test passes at {:.0}% ({} Gb/s)",
            units::sig3(c),
            100.0 * pass_fraction,
            units::sig3(c * pass_fraction)
        )
    });
    let _ = write!(out, r##"<text x="{LEFT}" y="42" fill="#333">{}</text>"##, escape(&cap_text));

    for (kind, p) in &panels {
        let bottom = p.top + p.height;
        // Y scale: bandwidth linear from 0, latency log10 over whole decades.
        let (axis, ticks, unit) = if *kind == "bw" {
            let max = bw.iter().flat_map(|s| s.points.iter().map(|p| p.1)).chain(references.iter().map(|r| r.0)).fold(0.0f64, f64::max).max(1e-3);
            let step = nice_step(max * 1.05, 5.0);
            let hi = (max * 1.05 / step).ceil() * step;
            let ticks: Vec<(f64, String)> = (0..=((hi / step).round() as usize)).map(|i| (i as f64 * step, units::sig3(i as f64 * step))).collect();
            (YAxis { top: p.top, height: p.height, log: false, lo: 0.0, hi }, ticks, "bandwidth (Gb/s)")
        } else {
            let vals = lat.iter().flat_map(|s| s.points.iter().map(|p| p.1));
            let (mn, mx) = vals.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
            let d0 = mn.log10().floor();
            let d1 = mx.log10().ceil().max(d0 + 1.0);
            let ticks = (d0 as i32..=d1 as i32).map(|e| (10f64.powi(e), units::sig3(10f64.powi(e)))).collect();
            (YAxis { top: p.top, height: p.height, log: true, lo: d0, hi: d1 }, ticks, "latency (us, log scale)")
        };
        let y_of = |v: f64| axis.y(v);
        // Frame, grid and ticks.
        let _ = write!(out, r##"<rect x="{LEFT}" y="{:.1}" width="{PLOT_W}" height="{:.1}" fill="none" stroke="#444"/>"##, p.top, p.height);
        for (v, label) in &ticks {
            let yy = y_of(*v);
            let _ = write!(out, r##"<line x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/>"##, LEFT + PLOT_W);
            let _ = write!(out, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"#, LEFT - 6.0, yy + 4.0);
        }
        let every = if l1 - l0 > 12.0 { 2 } else { 1 };
        for (i, e) in (l0 as u32..=l1 as u32).enumerate() {
            let x = LEFT + (f64::from(e) - l0) / (l1 - l0) * PLOT_W;
            let _ = write!(out, r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{bottom:.1}" stroke="#eee"/>"##, p.top);
            if i % every == 0 {
                let _ = write!(out, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, bottom + 16.0, size_label(1u64 << e));
            }
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">message size (bytes, log2 scale)</text>"#,
            LEFT + PLOT_W / 2.0,
            bottom + 34.0
        );
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{unit}</text>"#,
            LEFT - 50.0,
            p.top + p.height / 2.0,
            LEFT - 50.0,
            p.top + p.height / 2.0
        );
        let series = if *kind == "bw" { &bw } else { &lat };
        if *kind == "bw" {
            let lines: Vec<Vec<(f64, f64)>> = series.iter().map(|s| s.points.iter().map(|(size, v, _)| (x_of(*size), y_of(*v))).collect()).collect();
            let mut taken: Vec<Rect> = Vec::new();
            for (v, label, dash, class) in &references {
                let yy = y_of(*v);
                let width = 6.8 * label.chars().count() as f64;
                let (spot, left) = label_spot(yy, width, &lines, &taken, (p.top, bottom));
                taken.push(spot);
                let (x, anchor) = if left { (spot.x0, "start") } else { (spot.x1, "end") };
                let _ = write!(
                    out,
                    r##"<line class="{class}" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#222" stroke-dasharray="{dash}"/><text class="label-{class}" x="{x:.1}" y="{:.1}" text-anchor="{anchor}" fill="#222">{label}</text>"##,
                    LEFT + PLOT_W,
                    spot.y1 - 2.0
                );
            }
        }
        // The series, then the legend at the right.
        for (k, s) in series.iter().enumerate() {
            let colour = COLOURS[s.style % COLOURS.len()];
            let points: Vec<String> = s.points.iter().map(|(size, v, _)| format!("{:.1},{:.1}", x_of(*size), y_of(*v))).collect();
            let dash = if s.dashed { r#" stroke-dasharray="5 3""# } else { "" };
            let _ = write!(
                out,
                r#"<g class="series" data-name="{}"><polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
                escape(&s.name),
                points.join(" ")
            );
            for (size, v, label) in &s.points {
                let _ = write!(out, "<g><title>{}</title>{}</g>", escape(label), marker(s.style, x_of(*size), y_of(*v), colour));
            }
            out.push_str("</g>");
            let ly = p.top + 12.0 + 20.0 * k as f64;
            let lx = LEFT + PLOT_W + 18.0;
            let _ = write!(out, r#"<line x1="{lx:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"{dash}/>"#, lx + 26.0);
            out.push_str(&marker(s.style, lx + 13.0, ly, colour));
            let _ = write!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, lx + 32.0, ly + 4.0, escape(&s.name));
        }
    }
    for (i, r) in failed.iter().take(8).enumerate() {
        let text = format!("✕ {} {} {} B failed: {}", r.test.name(), r.direction.name(), r.size, r.error.as_deref().unwrap_or(""));
        let _ = write!(out, r##"<text class="failed" x="{LEFT}" y="{:.1}" fill="#000">{}</text>"##, y + 8.0 + 16.0 * i as f64, escape(&text));
    }
    out.push_str("</svg>\n");
    out
}

/// The series of a run: bandwidth by (test, direction); latency p50 and p99 by test; and the
/// tests that failed.
fn series<'a>(results: &[&'a TestResult]) -> (Vec<Series>, Vec<Series>, Vec<&'a TestResult>) {
    let mut bw: Vec<Series> = Vec::new();
    let mut lat: Vec<Series> = Vec::new();
    let mut failed: Vec<&TestResult> = Vec::new();
    for r in results {
        if r.error.is_some() {
            failed.push(*r);
            continue;
        }
        let label = format!("{} {} {} B", r.test.name(), r.direction.name(), r.size);
        if let Some(v) = r.bw_gbps.filter(|v| v.is_finite()) {
            let name = format!("{} {}", r.test.name(), r.direction.name());
            let k = bw.len();
            let s = match bw.iter_mut().position(|s| s.name == name) {
                Some(i) => &mut bw[i],
                None => {
                    bw.push(Series { name, points: Vec::new(), dashed: false, style: k });
                    bw.last_mut().expect("pushed")
                }
            };
            s.points.push((r.size, v, format!("{label}: {} Gb/s", units::measured_gbps(v))));
        }
        if let Some(l) = &r.lat_us {
            // A test measured in one direction is named by its test alone.
            let both = results.iter().any(|x| x.test == r.test && x.lat_us.is_some() && x.direction != r.direction);
            let base = if both { format!("{} {}", r.test.name(), r.direction.name()) } else { r.test.name().to_string() };
            for (which, v, dashed) in [("p50", l.p50, false), ("p99", l.p99, true)] {
                if !(v.is_finite() && v > 0.0) {
                    continue;
                }
                let name = format!("{base} {which}");
                let style = lat.iter().filter(|s| !s.dashed).count();
                let s = match lat.iter_mut().position(|s| s.name == name) {
                    Some(i) => &mut lat[i],
                    None => {
                        // p99 shares its p50's colour, drawn dashed.
                        let style = lat.iter().find(|s| s.name == format!("{base} p50")).map_or(style, |s| s.style);
                        lat.push(Series { name, points: Vec::new(), dashed, style });
                        lat.last_mut().expect("pushed")
                    }
                };
                s.points.push((r.size, v, format!("{label}: {which} {} us", units::three(v))));
            }
        }
    }
    for s in bw.iter_mut().chain(lat.iter_mut()) {
        s.points.sort_by_key(|p| p.0);
    }

    (bw, lat, failed)
}

/// The lines across the bandwidth panel: (value, label, dash, class).
fn references(capacity: Option<f64>, bidi: bool, pass_fraction: f64) -> Vec<(f64, String, &'static str, &'static str)> {
    // The lines across the bandwidth panel: the capacity and the pass line, and for
    // bidirectional tests (judged against both directions at once) twice the capacity and its
    // pass line.
    let mut references: Vec<(f64, String, &'static str, &'static str)> = Vec::new();
    if let Some(c) = capacity {
        let pct = 100.0 * pass_fraction;
        references.push((c, format!("capacity {}", units::sig3(c)), "8 4", "capacity"));
        references.push((c * pass_fraction, format!("pass {pct:.0}%"), "2 3", "pass"));
        if bidi {
            references.push((2.0 * c, format!("bidi capacity {}", units::sig3(2.0 * c)), "8 4", "capacity-bidi"));
            references.push((2.0 * c * pass_fraction, format!("bidi pass {pct:.0}%"), "2 3", "pass-bidi"));
        }
    }
    references
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Direction;
    use crate::model::TestKind;
    use crate::pair::side::{test_side, Side};
    use crate::perf::summary::LatencySummary;

    fn side(host: &str) -> Side {
        Side { host: host.into(), ..test_side() }
    }

    fn result(test: TestKind, direction: Direction, size: u32, bw: Option<f64>, lat: Option<f64>) -> TestResult {
        TestResult {
            paths: Vec::new(),
            test,
            direction,
            size,
            iterations: 100,
            qps: 1,
            lat_us: lat.map(|p50| LatencySummary {
                min: p50,
                p50,
                p90: p50,
                p99: p50 * 2.0,
                p999: p50 * 3.0,
                max: p50 * 4.0,
                mean: p50,
                stdev: 0.1,
                preempt: None,
            }),
            bw_gbps: bw,
            peak_gbps: bw,
            msg_rate_mpps: bw.map(|b| b / 8.0),
            counters: Default::default(),
            error: None,
            remedy: None,
            under_load: None,
        }
    }

    fn sweep() -> PairDoc {
        let mut results = Vec::new();
        for p in 1..=23u32 {
            let size = 1u32 << p;
            results.push(result(TestKind::WriteBw, Direction::AtoB, size, Some(190.0 * f64::from(p) / 23.0), None));
            results.push(result(TestKind::SendLat, Direction::AtoB, size, None, Some(1.0 + f64::from(size) / 25_000.0)));
        }
        let mut failed = result(TestKind::WriteBw, Direction::BtoA, 2, None, None);
        failed.error = Some("retry <exceeded> & \"gone\"".into());
        results.push(failed);
        PairDoc {
            schema: "fabcheck.pair.v1".into(),
            verdict: Verdict::Fail,
            a: side("n1"),
            b: side("n2"),
            results,
            findings: Vec::new(),
            relaxed_ordering: true,
            capacity_gbps: Some(200.0),
            rails: Vec::new(),
            aggregate: Vec::new(),
        }
    }

    #[test]
    fn csv_has_a_row_per_result() {
        let doc = sweep();
        let text = csv(&doc.results);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(lines.len(), 1 + 47);
        assert!(lines[1].starts_with("write_bw,a->b,2,100,1,"));
        let cols: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(cols.len(), CSV_HEADER.len());
        assert_eq!((cols[0], cols[9], cols[10]), ("send_lat", "1", "2"));
        assert!(lines[47].ends_with("\"retry <exceeded> & \"\"gone\"\"\""), "{}", lines[47]);
    }

    #[test]
    fn svg_is_well_formed_with_both_panels() {
        let text = svg(&sweep(), 0.9);
        let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let series: Vec<&str> =
            doc.descendants().filter(|n| n.attribute("class") == Some("series")).filter_map(|n| n.attribute("data-name")).collect();
        assert_eq!(series, ["write_bw a->b", "send_lat p50", "send_lat p99"]);
        let points = doc.descendants().find(|n| n.has_tag_name("polyline")).and_then(|n| n.attribute("points")).unwrap();
        assert_eq!(points.split(' ').count(), 23, "one point per size");
        // Two bandwidth/latency panels: a series per bandwidth direction and one p50 and one p99.
        assert_eq!(text.matches(r#"<g class="series""#).count(), 3);
        assert!(text.contains(r#"data-name="send_lat p99""#));
        assert_eq!(text.matches(r#"class="capacity""#).count(), 1);
        assert!(text.contains("8M</text>") && text.contains(">2</text>"));
        assert!(text.contains("✕ write_bw b-&gt;a 2 B failed: retry &lt;exceeded&gt; &amp; &quot;gone&quot;"));
        assert!(text.contains("message size (bytes, log2 scale)"));
    }

    /// Issue #35 item 9: on a healthy sweep the data runs just under the capacity at the right,
    /// where the pass label sat; every label now sits where no line crosses it.
    #[test]
    fn reference_labels_sit_where_the_data_is_not() {
        let text = svg(&sweep(), 0.9);
        let doc = roxmltree::Document::parse(&text).unwrap();
        let pass = doc.descendants().find(|n| n.attribute("class") == Some("label-pass")).expect("the pass label");
        assert_eq!(pass.attribute("text-anchor"), Some("start"), "moved to the left end, away from the 190 Gb/s at 8M");
        // A line right across the top-right spot and one across the top-left: the label goes below.
        let lines = vec![vec![(LEFT, 95.0), (LEFT + PLOT_W, 95.0)]];
        let (spot, _) = label_spot(100.0, 60.0, &lines, &[], (64.0, 344.0));
        assert!(spot.y0 > 100.0, "below the line: {spot:?}");
        let (free, left) = label_spot(100.0, 60.0, &[vec![(LEFT, 300.0), (LEFT + PLOT_W, 90.0)]], &[], (64.0, 344.0));
        assert!(left && free.y1 < 100.0, "left-above is free of a line that rises to the right: {free:?}");
        // A spot taken by another label is avoided.
        let (next, next_left) = label_spot(100.0, 60.0, &[], &[free], (64.0, 344.0));
        assert!(!(next_left && next.y1 < 100.0), "{next:?}");
    }

    /// A full plan's nine bandwidth series each get a colour of their own, and bidirectional
    /// tests get their capacity line (twice the link).
    #[test]
    fn nine_series_nine_colours_and_the_bidi_capacity() {
        let mut doc = sweep();
        doc.results.clear();
        for test in [TestKind::WriteBw, TestKind::ReadBw, TestKind::SendBw] {
            for direction in [Direction::AtoB, Direction::BtoA, Direction::Bidi] {
                let scale = if direction == Direction::Bidi { 2.0 } else { 1.0 };
                for p in [10u32, 16, 23] {
                    doc.results.push(result(test, direction, 1 << p, Some(scale * 8.0 * f64::from(p)), None));
                }
            }
        }
        let text = svg(&doc, 0.9);
        let xml = roxmltree::Document::parse(&text).unwrap();
        let colours: std::collections::BTreeSet<&str> = xml
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .filter_map(|g| g.descendants().find(|n| n.has_tag_name("polyline")).and_then(|l| l.attribute("stroke")))
            .collect();
        assert_eq!(colours.len(), 9, "{colours:?}");
        let bidi = xml.descendants().find(|n| n.attribute("class") == Some("capacity-bidi")).expect("a bidi capacity line");
        let cap = xml.descendants().find(|n| n.attribute("class") == Some("capacity")).unwrap();
        let y = |n: roxmltree::Node| n.attribute("y1").unwrap().parse::<f64>().unwrap();
        assert!(y(bidi) < y(cap), "the bidi capacity (400) is drawn above the link's (200)");
        assert!(text.contains(">bidi capacity 400</text>") && text.contains("label-pass-bidi"));
        // Without bidirectional tests, no bidi line.
        assert!(!svg(&sweep(), 0.9).contains("capacity-bidi"));
    }

    #[test]
    fn labels_and_steps() {
        assert_eq!(size_label(2), "2");
        assert_eq!(size_label(65536), "64K");
        assert_eq!(size_label(8 << 20), "8M");
        assert_eq!(nice_step(210.0, 5.0), 50.0);
        assert_eq!(nice_step(9.0, 5.0), 2.0);
    }
}
