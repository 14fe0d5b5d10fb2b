//! The mesh for operators, as one self-contained HTML page (pure): the verdict, what ran, the
//! expected rate, the bandwidth map with a latency map beside it, and the suspects in words. No
//! scripts, fonts or images from anywhere: it opens offline and can be attached to a ticket. The
//! page is well-formed XML (XHTML syntax), so tools (and the tests) can parse it.
//!
//! Colour: each cell's share of what the verdict expects of it. Bandwidth against the expected
//! capacity (the slowest endpoint's link or PCIe rate, as pairs are judged), or against the median
//! pair when no rate is known (Soft-RoCE, or a port that reports none); latency as the median
//! pair's latency over the cell's. A sequential, colour-blind-safe scale (viridis): dark at half
//! the reference or less, bright at the reference. A bad pair (failed, short of the pass line, or
//! a latency outlier) is also hatched, and a pair without a result carries a cross: no reading
//! depends on colour alone. Up to [`MATRIX_MAX`] endpoints the maps are the full matrices; above,
//! per-node figures sorted by host name (a tile and a table row per node, and the worst pairs),
//! so a thousand endpoints stay a few hundred kilobytes.

use super::analysis::{Suspect, SuspectKind, CLUSTER};
use crate::diagnose::Verdict;
use crate::units::sig3 as fmt;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write;

/// Above this many endpoints the page shows per-node figures instead of the matrices.
pub const MATRIX_MAX: usize = 64;
/// Nodes per row of the overview tiles.
const TILES_PER_ROW: usize = 40;
/// Rows of the worst-pairs table.
const WORST_ROWS: usize = 50;

/// Escapes text for HTML and SVG, in content and in attribute values.
pub use crate::report::escape_xml as escape;

/// One measured pair, as the map shows it: its latest measure (a retest stands for the pair).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub a: usize,
    pub b: usize,
    /// Gb/s, the slowest direction at the largest size.
    pub bw_gbps: Option<f64>,
    /// p50 of the first latency test, microseconds.
    pub lat_us: Option<f64>,
    /// Could not run, or a test errored.
    pub failed: bool,
    /// Bad as the analysis judges it: failed, bandwidth short, or latency an outlier (each map
    /// hatches the cells bad on its own figure; this counts and lists the bad pairs).
    pub bad: bool,
}

/// What a map's colours are measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// Gb/s for bandwidth, microseconds for latency.
    pub reference: f64,
    /// What the reference is, in words ("the expected capacity", "the median pair").
    pub basis: String,
    /// The share of the reference at which a pair is still good (bandwidth: 0.9 of capacity;
    /// latency: 1/1.5 of the median, i.e. 1.5 times the median latency).
    pub pass_share: f64,
    /// Bandwidth: the value over the reference; latency: the reference over the value.
    pub higher_is_better: bool,
    pub unit: &'static str,
}

impl Scale {
    /// A value's share of the reference (1 is as good as expected).
    pub fn share(&self, v: f64) -> f64 {
        if self.reference <= 0.0 || !v.is_finite() {
            return 1.0;
        }
        if self.higher_is_better {
            v / self.reference
        } else if v > 0.0 {
            self.reference / v
        } else {
            1.0
        }
    }
}

/// Everything the page shows.
#[derive(Debug, Clone)]
pub struct Page<'a> {
    pub title: &'a str,
    pub verdict: Verdict,
    /// What ran, as (name, value): tests, size, iterations, QPs, directions, pattern...
    pub params: &'a [(String, String)],
    pub endpoints: &'a [String],
    /// The node (host) of each endpoint: a large mesh is shown per node, sorted by it.
    pub nodes: &'a [String],
    pub cells: &'a [Cell],
    /// `None` when no pair has a bandwidth figure.
    pub bw: Option<Scale>,
    /// `None` when no latency test ran.
    pub lat: Option<Scale>,
    pub suspects: &'a [Suspect],
}

/// Viridis, sampled at nine points (matplotlib's): perceptually uniform, readable with the
/// common colour-vision deficiencies and in greyscale.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (0x44, 0x01, 0x54),
    (0x47, 0x2c, 0x7a),
    (0x3b, 0x51, 0x8b),
    (0x2c, 0x71, 0x8e),
    (0x21, 0x90, 0x8d),
    (0x27, 0xad, 0x81),
    (0x5c, 0xc8, 0x63),
    (0xaa, 0xdc, 0x32),
    (0xfd, 0xe7, 0x25),
];

/// Position on the colour scale of a share of the reference: 0 at half or less, 1 at the
/// reference or better.
pub fn position(share: f64) -> f64 {
    if share.is_nan() {
        return 0.0;
    }
    ((share - 0.5) / 0.5).clamp(0.0, 1.0)
}

/// The colour at position `t` (0..1), as `#rrggbb`.
pub fn colour(t: f64) -> String {
    let t = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Text on a cell of position `t`: white on the dark half of the scale, black on the bright.
fn ink(t: f64) -> &'static str {
    if t < 0.55 {
        "#ffffff"
    } else {
        "#000000"
    }
}

/// A suspect's kind in words, and what it means.
pub fn kind_words(s: &Suspect) -> (&'static str, &'static str) {
    match s.kind {
        SuspectKind::Node => ("node", "an endpoint bad with (nearly) every partner: its NIC, PCIe slot, firmware or host"),
        SuspectKind::Link if s.is_flaky() => ("flaky link", "a pair bad once and good on retest: error counters, a marginal cable, other traffic"),
        SuspectKind::Link => ("link", "one pair bad twice while both ends are fine with others: the cable, switch ports or route"),
        SuspectKind::Switch => ("leaf switch", "its endpoints are bad with everyone, inside the leaf too"),
        SuspectKind::Uplink => ("leaf uplinks", "its endpoints are bad with other leaves only: the uplinks to the spines"),
        SuspectKind::Config if s.subject == CLUSTER => ("cluster-wide", "nearly every pair is bad and nothing stands out: a cluster-wide cause"),
        SuspectKind::Config => ("configuration", "a setting differs from the majority of endpoints"),
    }
}

/// Orders host names as people do: `n2` before `n10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (trim_zeros(&x[..dx]), trim_zeros(&y[..dy]));
                let o = nx.len().cmp(&ny.len()).then_with(|| nx.cmp(ny));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (&x[dx..], &y[dy..]);
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let z = d.iter().take_while(|&&c| c == b'0').count();
    &d[z.min(d.len().saturating_sub(1))..]
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:24px;color:#111;background:#fff}
h1{font-size:20px;margin:0 0 6px} h2{font-size:16px;margin:22px 0 6px}
.verdict{font-size:18px;font-weight:bold;margin:6px 0} .verdict.fail{color:#000;background:#ffe08a;padding:2px 8px;display:inline-block}
.verdict.pass{padding:2px 8px;display:inline-block;border:2px solid #21908d}
table{border-collapse:collapse;font-size:13px} td,th{padding:3px 8px;border:1px solid #ccc;text-align:left}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.expect{font-size:14px;margin:8px 0 12px;max-width:60em}
.maps{display:flex;flex-wrap:wrap;gap:28px;align-items:flex-start} .map h2{margin-top:8px}
svg .lbl{font-size:11px;fill:#222} svg .lbl.suspect{font-weight:bold} svg .tick{font-size:11px;fill:#333}
svg g:hover rect{stroke:#000;stroke-width:2}
.subject{font-weight:bold;font-family:'DejaVu Sans Mono',monospace} .none{color:#205}
";

/// The page.
pub fn html(p: &Page<'_>) -> String {
    let n = p.endpoints.len();
    let t = escape(p.title);
    let mut page = String::with_capacity(64 * 1024);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/><title>{t}</title>\n<style>\n{STYLE}</style></head><body>\n<h1>{t}</h1>\n"
    );
    let (word, class, glyph) = if p.verdict == Verdict::Pass { ("PASS", "pass", "✓") } else { ("FAIL", "fail", "✕") };
    let _ = writeln!(page, "<p class=\"verdict {class}\" id=\"verdict\">{glyph} {word}</p>");

    // What ran.
    let measured = p.cells.len();
    let bad = p.cells.iter().filter(|c| c.bad).count();
    let failed = p.cells.iter().filter(|c| c.failed).count();
    page.push_str("<table class=\"params\" id=\"params\">\n");
    let mut rows: Vec<(String, String)> = p.params.to_vec();
    rows.push(("endpoints".into(), n.to_string()));
    rows.push(("pairs measured".into(), format!("{measured}, {bad} bad ({failed} without a result)")));
    for (k, v) in &rows {
        let _ = writeln!(page, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    page.push_str("</table>\n");
    page.push_str("<p class=\"expect\" id=\"expected\">");
    page.push_str(&expectation(p.bw.as_ref(), p.lat.as_ref()));
    page.push_str("</p>\n");

    if n <= MATRIX_MAX {
        page.push_str("<div class=\"maps\">\n");
        for (kind, scale) in [("bw", &p.bw), ("lat", &p.lat)] {
            if let Some(scale) = scale {
                let heading = if kind == "bw" { "Bandwidth (Gb/s)" } else { "Latency (us, p50)" };
                let _ = writeln!(page, "<div class=\"map\" id=\"map-{kind}\"><h2>{heading}</h2>");
                page.push_str(&matrix_svg(p, kind, scale));
                page.push_str("\n</div>\n");
            }
        }
        page.push_str("</div>\n");
    } else {
        per_node(&mut page, p);
    }

    // Suspects, in words.
    page.push_str("<h2>Suspects</h2>\n");
    if p.suspects.is_empty() {
        page.push_str("<p class=\"none\">None: every pair is in line with what is expected.</p>\n");
    } else {
        page.push_str("<table class=\"suspects\" id=\"suspects\">\n<tr><th>kind</th><th>subject</th><th>why</th></tr>\n");
        for s in p.suspects {
            let (kind, meaning) = kind_words(s);
            let _ = writeln!(
                page,
                "<tr><td title=\"{}\">{kind}</td><td class=\"subject\">{}</td><td>{}</td></tr>",
                escape(meaning),
                escape(&s.subject),
                escape(&s.reason)
            );
        }
        page.push_str("</table>\n");
    }
    page.push_str("</body></html>\n");
    page
}

/// The sentence under the parameters: what the colours are measured against.
fn expectation(bw: Option<&Scale>, lat: Option<&Scale>) -> String {
    let mut out = String::new();
    match bw {
        Some(s) => {
            let _ = write!(
                out,
                "Bandwidth is coloured by its share of {}: {} Gb/s. A pair is good from {:.0}% of it ({} Gb/s). ",
                escape(&s.basis),
                fmt(s.reference),
                100.0 * s.pass_share,
                fmt(s.reference * s.pass_share)
            );
        }
        None => out.push_str("No pair has a bandwidth figure. "),
    }
    if let Some(s) = lat {
        let _ = write!(
            out,
            "Latency is coloured by {} over the pair's own: {} us. A pair is bad above {} times it ({} us). ",
            escape(&s.basis),
            fmt(s.reference),
            fmt(1.0 / s.pass_share),
            fmt(s.reference / s.pass_share)
        );
    }
    out.push_str("Dark is half the reference or worse, bright is as expected; hatched cells are bad pairs, crossed grey cells have no result.");
    out
}

/// The defs every SVG of the page uses: the hatch of bad pairs and the scale's gradient.
fn defs(id: &str) -> String {
    let mut out = format!(
        r##"<defs><pattern id="hatch-{id}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="none"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/><line x1="3" y1="0" x2="3" y2="6" stroke="#000000" stroke-width="1.5"/></pattern><linearGradient id="scale-{id}" x1="0" x2="1" y1="0" y2="0">"##
    );
    for (i, _) in VIRIDIS.iter().enumerate() {
        let t = i as f64 / (VIRIDIS.len() - 1) as f64;
        let _ = write!(out, r#"<stop offset="{t:.3}" stop-color="{}"/>"#, colour(t));
    }
    out.push_str("</linearGradient></defs>");
    out
}

/// The legend of a scale at (x, y): the gradient, its ticks (half the reference, the pass line,
/// the reference), the hatch and the cross.
fn legend(out: &mut String, id: &str, scale: &Scale, x: usize, y: usize) {
    let w = 220usize;
    let _ = write!(out, r#"<rect x="{x}" y="{y}" width="{w}" height="12" fill="url(#scale-{id})"/>"#);
    let value = |share: f64| if scale.higher_is_better { scale.reference * share } else { scale.reference / share };
    let pass = scale.pass_share.clamp(0.5, 1.0);
    for (share, prefix) in [(0.5, if scale.higher_is_better { "≤ " } else { "≥ " }), (pass, ""), (1.0, "")] {
        let px = x as f64 + position(share) * w as f64;
        let _ = write!(out, r##"<line x1="{px:.1}" x2="{px:.1}" y1="{y}" y2="{}" stroke="#000"/>"##, y + 16);
        let _ = write!(out, r#"<text class="tick" x="{px:.1}" y="{}" text-anchor="middle">{prefix}{}</text>"#, y + 28, fmt(value(share)));
    }
    let _ = write!(
        out,
        r#"<text class="tick" x="{x}" y="{}">{}: reference {}, pass line at {}</text>"#,
        y + 44,
        scale.unit,
        fmt(scale.reference),
        fmt(value(pass))
    );
    let gx = x + w + 16;
    let _ = write!(
        out,
        r##"<rect x="{gx}" y="{y}" width="14" height="14" fill="{}"/><rect x="{gx}" y="{y}" width="14" height="14" fill="url(#hatch-{id})"/><text class="tick" x="{}" y="{}">bad pair</text>"##,
        colour(0.2),
        gx + 20,
        y + 11
    );
    let _ = write!(
        out,
        r##"<rect x="{gx}" y="{}" width="14" height="14" fill="#bdbdbd"/><text x="{}" y="{}" font-size="11" text-anchor="middle">✕</text><text class="tick" x="{}" y="{}">no result</text>"##,
        y + 20,
        gx + 7,
        y + 31,
        gx + 20,
        y + 31
    );
}

/// The endpoint-by-endpoint matrix of one figure (`kind` `bw` or `lat`) as an SVG.
fn matrix_svg(p: &Page<'_>, kind: &str, scale: &Scale) -> String {
    let n = p.endpoints.len();
    let mut cell_of: HashMap<(usize, usize), &Cell> = HashMap::with_capacity(p.cells.len());
    for c in p.cells {
        cell_of.insert((c.a.min(c.b), c.a.max(c.b)), c);
    }
    let value = |c: &Cell| if kind == "bw" { c.bw_gbps } else { c.lat_us };

    // Who the suspects name: endpoints on the axes, links outlined.
    let index = |s: &str| p.endpoints.iter().position(|e| e == s);
    let mut marked = vec![false; n];
    let mut links: Vec<(usize, usize)> = Vec::new();
    for s in p.suspects {
        if let Some(i) = index(&s.subject) {
            marked[i] = true;
        } else if let Some((a, b)) = s.subject.split_once("<->") {
            if let (Some(a), Some(b)) = (index(a), index(b)) {
                links.extend([(a, b), (b, a)]);
            }
        }
    }

    let cell: usize = match n {
        0..=12 => 48,
        13..=24 => 36,
        25..=48 => 24,
        _ => 16,
    };
    let font = match cell {
        48 => 12,
        36 => 10,
        24 => 8,
        _ => 0,
    };
    let longest = p.endpoints.iter().map(|e| e.chars().count()).max().unwrap_or(1) + 2;
    let text_w = (longest as f64 * 6.6).ceil() as usize + 10;
    let left = text_w + 6;
    let top = (text_w as f64 * 0.72).ceil() as usize + 12;
    let grid = cell * n;
    // The slanted column labels reach past the last column by about their length.
    let width = left + grid.max(360) + (text_w as f64 * 0.72) as usize + 12;
    let height = top + grid + 70;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="matrix {kind}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
    );
    svg.push_str(&defs(kind));
    for (i, e) in p.endpoints.iter().enumerate() {
        let name = escape(e);
        let (class, label) = if marked[i] { ("lbl suspect", format!("▶ {name}")) } else { ("lbl", name) };
        let y = top + i * cell + cell / 2;
        let _ = write!(svg, r#"<text class="{class}" x="{}" y="{y}" text-anchor="end" dominant-baseline="middle">{label}</text>"#, left - 6);
        let x = left + i * cell + cell / 2;
        let yb = top - 6;
        let _ = write!(svg, r#"<text class="{class}" x="{x}" y="{yb}" transform="rotate(-45 {x} {yb})">{label}</text>"#);
    }
    for i in 0..n {
        for j in 0..n {
            let (x, y) = (left + j * cell, top + i * cell);
            if i == j {
                let _ = write!(svg, r##"<rect class="diag" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#fafafa"/>"##);
                continue;
            }
            let (a, b) = (escape(&p.endpoints[i]), escape(&p.endpoints[j]));
            let Some(c) = cell_of.get(&(i.min(j), i.max(j))) else {
                let _ = write!(svg, r##"<rect class="cell none" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#f4f4f4" stroke="#fff"/>"##);
                continue;
            };
            let v = value(c).filter(|v| v.is_finite());
            match v {
                Some(v) => {
                    let share = scale.share(v);
                    let pos = position(share);
                    // Bad on this map's figure: short of its pass line.
                    let bad = share < scale.pass_share;
                    let (class, verdict) = if bad { ("cell bad", "BAD") } else { ("cell", "good") };
                    let _ = write!(
                        svg,
                        r##"<g><title>{a} &lt;-&gt; {b}: {} {} ({:.0}% of the reference), {verdict}</title><rect class="{class}" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{}" stroke="#fff"/>"##,
                        fmt(v),
                        scale.unit,
                        100.0 * share,
                        colour(pos)
                    );
                    if bad {
                        let _ =
                            write!(svg, r#"<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="url(#hatch-{kind})" pointer-events="none"/>"#);
                    }
                    if font > 0 {
                        let text = fmt(v);
                        if bad {
                            // A patch of the cell's colour keeps the figure readable over the hatch.
                            let (w, h) = ((text.chars().count() * font * 6 / 10 + 4) as f64, (font + 4) as f64);
                            let _ = write!(
                                svg,
                                r#"<rect x="{:.1}" y="{:.1}" width="{w:.0}" height="{h:.0}" fill="{}"/>"#,
                                (x + cell / 2) as f64 - w / 2.0,
                                (y + cell / 2) as f64 - h / 2.0,
                                colour(pos)
                            );
                        }
                        let _ = write!(
                            svg,
                            r#"<text class="val" x="{}" y="{}" font-size="{font}" text-anchor="middle" dominant-baseline="central" fill="{}">{text}</text>"#,
                            x + cell / 2,
                            y + cell / 2,
                            ink(pos)
                        );
                    }
                    svg.push_str("</g>");
                }
                None => {
                    // Failed, or this figure was not measured for the pair.
                    let (class, what) = if c.failed { ("cell failed", "no result (failed)") } else { ("cell none", "not measured") };
                    let _ = write!(
                        svg,
                        r##"<g><title>{a} &lt;-&gt; {b}: {what}</title><rect class="{class}" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#bdbdbd" stroke="#fff"/>"##
                    );
                    if c.failed {
                        let _ = write!(
                            svg,
                            r#"<text x="{}" y="{}" font-size="{}" text-anchor="middle" dominant-baseline="central">✕</text>"#,
                            x + cell / 2,
                            y + cell / 2,
                            (cell / 2).max(9)
                        );
                    }
                    svg.push_str("</g>");
                }
            }
        }
    }
    for &(i, j) in &links {
        let _ = write!(
            svg,
            r##"<rect class="outline" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#e00" stroke-width="3" stroke-dasharray="4 2" pointer-events="none"/>"##,
            left + j * cell + 1,
            top + i * cell + 1,
            cell - 2,
            cell - 2
        );
    }
    legend(&mut svg, kind, scale, left, top + grid + 14);
    svg.push_str("</svg>");
    svg
}

/// One node's figures over the pairs of its endpoints.
#[derive(Debug, Clone, Default)]
struct NodeFigures {
    /// Its endpoints, by index.
    endpoints: Vec<usize>,
    pairs: usize,
    bad: usize,
    failed: usize,
    bw: Vec<f64>,
    lat: Vec<f64>,
    suspect: bool,
}

/// The per-node view of a large mesh: overview tiles (bandwidth, latency) in host order, a
/// table of every node, and the worst pairs.
fn per_node(page: &mut String, p: &Page<'_>) {
    let n = p.endpoints.len();
    let node_name = |i: usize| p.nodes.get(i).cloned().unwrap_or_else(|| p.endpoints[i].clone());
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut of = vec![0usize; n];
    for (i, slot) in of.iter_mut().enumerate() {
        let name = node_name(i);
        *slot = *index.entry(name.clone()).or_insert_with(|| {
            names.push(name);
            names.len() - 1
        });
    }
    let mut figs = vec![NodeFigures::default(); names.len()];
    for (i, &k) in of.iter().enumerate() {
        figs[k].endpoints.push(i);
    }
    for c in p.cells {
        let (x, y) = (of[c.a.min(n - 1)], of[c.b.min(n - 1)]);
        for k in if x == y { vec![x] } else { vec![x, y] } {
            let f = &mut figs[k];
            f.pairs += 1;
            f.bad += usize::from(c.bad);
            f.failed += usize::from(c.failed);
            f.bw.extend(c.bw_gbps.filter(|v| v.is_finite()));
            f.lat.extend(c.lat_us.filter(|v| v.is_finite()));
        }
    }
    for s in p.suspects {
        let subject = s.subject.as_str();
        if let Some(i) = p.endpoints.iter().position(|e| e == subject) {
            figs[of[i]].suspect = true;
        } else if let Some(&k) = index.get(subject) {
            figs[k].suspect = true;
        }
    }
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&x, &y| natural_cmp(&names[x], &names[y]));
    let medians: Vec<(Option<f64>, Option<f64>)> = figs.iter().map(|f| (median(f.bw.clone()), median(f.lat.clone()))).collect();

    let _ = writeln!(
        page,
        "<p class=\"expect\">{n} endpoints on {} nodes: above {MATRIX_MAX} endpoints each node is one tile and one row, its median over the pairs of its endpoints, sorted by host name (hover a tile for its figures). The JSON and --csv hold every pair.</p>",
        names.len()
    );
    page.push_str("<div class=\"maps\">\n");
    for (kind, scale) in [("bw", &p.bw), ("lat", &p.lat)] {
        let Some(scale) = scale else { continue };
        let heading = if kind == "bw" { "Bandwidth by node (median Gb/s)" } else { "Latency by node (median us, p50)" };
        let _ = writeln!(page, "<div class=\"map\" id=\"nodes-{kind}\"><h2>{heading}</h2>");
        let tile = 16usize;
        let cols = TILES_PER_ROW.min(order.len().max(1));
        let rows = order.len().div_ceil(cols).max(1);
        // Each row is labelled with its first node's name.
        let left = order.iter().step_by(cols).map(|&k| names[k].chars().count()).max().unwrap_or(1) * 7 + 12;
        let width = (left + cols * tile + 8).max(left + 480);
        let height = rows * tile + 70;
        let _ = write!(
            page,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="tiles {kind}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
        );
        page.push_str(&defs(&format!("n{kind}")));
        for (row, &k) in order.iter().step_by(cols).enumerate() {
            let _ = write!(
                page,
                r#"<text class="lbl" x="{}" y="{}" text-anchor="end" dominant-baseline="middle">{}</text>"#,
                left - 6,
                4 + row * tile + tile / 2,
                escape(&names[k])
            );
        }
        for (slot, &k) in order.iter().enumerate() {
            let (x, y) = (left + (slot % cols) * tile, 4 + (slot / cols) * tile);
            let f = &figs[k];
            let v = if kind == "bw" { medians[k].0 } else { medians[k].1 };
            let name = escape(&names[k]);
            match v {
                Some(v) => {
                    let share = scale.share(v);
                    let _ = write!(
                        page,
                        r##"<g><title>{name}: median {} {}, {} of {} pairs bad</title><rect class="tile" x="{x}" y="{y}" width="{tile}" height="{tile}" fill="{}" stroke="#fff"/>"##,
                        fmt(v),
                        scale.unit,
                        f.bad,
                        f.pairs,
                        colour(position(share))
                    );
                    if share < scale.pass_share {
                        let _ = write!(page, r#"<rect x="{x}" y="{y}" width="{tile}" height="{tile}" fill="url(#hatch-n{kind})"/>"#);
                    }
                }
                None => {
                    let _ = write!(
                        page,
                        r##"<g><title>{name}: no result, {} pairs</title><rect class="tile failed" x="{x}" y="{y}" width="{tile}" height="{tile}" fill="#bdbdbd" stroke="#fff"/><text x="{}" y="{}" font-size="10" text-anchor="middle" dominant-baseline="central">✕</text>"##,
                        f.pairs,
                        x + tile / 2,
                        y + tile / 2
                    );
                }
            }
            if f.suspect {
                // Outlined, and a black corner: a shape, not only a colour.
                let _ = write!(
                    page,
                    r##"<rect class="suspect" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#e00" stroke-width="2"/><path d="M{x},{y} h8 l-8,8 z" fill="#000" stroke="#fff" stroke-width="0.5"/>"##,
                    x + 1,
                    y + 1,
                    tile - 2,
                    tile - 2
                );
            }
            page.push_str("</g>");
        }
        legend(page, &format!("n{kind}"), scale, left, rows * tile + 12);
        page.push_str("</svg>\n</div>\n");
    }
    page.push_str("</div>\n");

    // Every node, in host order.
    page.push_str("<h2>Nodes</h2>\n<table class=\"nodes\" id=\"nodes\">\n<tr><th>node</th><th>endpoints</th><th>pairs</th><th>bad</th>");
    if p.bw.is_some() {
        page.push_str("<th>median Gb/s</th><th>slowest Gb/s</th>");
    }
    if p.lat.is_some() {
        page.push_str("<th>median us</th><th>worst us</th>");
    }
    page.push_str("<th>suspect</th></tr>\n");
    for &k in &order {
        let f = &figs[k];
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            escape(&names[k]),
            escape(&f.endpoints.iter().map(|&i| p.endpoints[i].as_str()).collect::<Vec<_>>().join(", ")),
            f.pairs,
            f.bad
        );
        if let Some(s) = &p.bw {
            cell_td(page, medians[k].0, s);
            let _ = write!(page, "<td class=\"num\">{}</td>", f.bw.iter().copied().reduce(f64::min).map(fmt).unwrap_or_default());
        }
        if let Some(s) = &p.lat {
            cell_td(page, medians[k].1, s);
            let _ = write!(page, "<td class=\"num\">{}</td>", f.lat.iter().copied().reduce(f64::max).map(fmt).unwrap_or_default());
        }
        let _ = writeln!(page, "<td>{}</td></tr>", if f.suspect { "▶ yes" } else { "" });
    }
    page.push_str("</table>\n");

    // The worst pairs: failed first, then by share of the reference.
    let share = |c: &Cell| -> f64 {
        let b = p.bw.as_ref().zip(c.bw_gbps).map_or(f64::INFINITY, |(s, v)| s.share(v));
        let l = p.lat.as_ref().zip(c.lat_us).map_or(f64::INFINITY, |(s, v)| s.share(v));
        b.min(l)
    };
    let mut worst: Vec<&Cell> = p.cells.iter().filter(|c| c.bad).collect();
    worst.sort_by(|x, y| y.failed.cmp(&x.failed).then(share(x).total_cmp(&share(y))).then((x.a, x.b).cmp(&(y.a, y.b))));
    let _ = writeln!(page, "<h2>Worst pairs ({} bad, {} shown)</h2>", worst.len(), worst.len().min(WORST_ROWS));
    if !worst.is_empty() {
        page.push_str("<table class=\"worst\" id=\"worst\">\n<tr><th>pair</th><th>Gb/s</th><th>us</th><th>result</th></tr>\n");
        for c in worst.iter().take(WORST_ROWS) {
            let pair = format!("{} <-> {}", p.endpoints[c.a.min(n - 1)], p.endpoints[c.b.min(n - 1)]);
            let _ = writeln!(
                page,
                "<tr><td class=\"subject\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&pair),
                c.bw_gbps.map(fmt).unwrap_or_default(),
                c.lat_us.map(fmt).unwrap_or_default(),
                if c.failed { "✕ failed" } else { "bad" }
            );
        }
        page.push_str("</table>\n");
    }
}

/// A table cell coloured by its share of the reference (with the figure in it, and a hatch
/// glyph when below the pass line).
fn cell_td(page: &mut String, v: Option<f64>, scale: &Scale) {
    match v {
        Some(v) => {
            let share = scale.share(v);
            let pos = position(share);
            let flag = if share < scale.pass_share { " ▨" } else { "" };
            let _ = write!(page, "<td class=\"num\" style=\"background:{};color:{}\">{}{flag}</td>", colour(pos), ink(pos), fmt(v));
        }
        None => page.push_str("<td class=\"num\">✕</td>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bw_scale() -> Scale {
        Scale { reference: 200.0, basis: "the expected capacity".into(), pass_share: 0.9, higher_is_better: true, unit: "Gb/s" }
    }

    fn lat_scale() -> Scale {
        Scale { reference: 2.0, basis: "the median pair".into(), pass_share: 1.0 / 1.5, higher_is_better: false, unit: "us" }
    }

    /// Every pair of `n` endpoints, `f` giving (bw, lat, failed, bad).
    fn cells(n: usize, f: impl Fn(usize, usize) -> (Option<f64>, Option<f64>, bool, bool)) -> Vec<Cell> {
        let mut out = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let (bw_gbps, lat_us, failed, bad) = f(a, b);
                out.push(Cell { a, b, bw_gbps, lat_us, failed, bad });
            }
        }
        out
    }

    fn page<'a>(endpoints: &'a [String], cells: &'a [Cell], suspects: &'a [Suspect], params: &'a [(String, String)]) -> Page<'a> {
        Page {
            title: "mesh <rail 0> & co",
            verdict: Verdict::Fail,
            params,
            endpoints,
            nodes: endpoints,
            cells,
            bw: Some(bw_scale()),
            lat: Some(lat_scale()),
            suspects,
        }
    }

    fn parse(text: &str) -> roxmltree::Document<'_> {
        let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
        roxmltree::Document::parse_with_options(text, options).unwrap_or_else(|e| panic!("not well-formed: {e}"))
    }

    #[test]
    fn small_page_parses_with_both_maps_verdict_parameters_and_words() {
        let names: Vec<String> = vec!["n1/mlx5_0".into(), "<b>&evil".into(), "n3\"x'".into(), "n4".into()];
        // Endpoint 1 is slow with everyone; 2<->3 failed.
        let cs = cells(4, |a, b| match (a, b) {
            (2, 3) => (None, None, true, true),
            (1, _) | (_, 1) => (Some(96.0), Some(2.1), false, true),
            _ => (Some(190.0), Some(2.0), false, false),
        });
        let sus = vec![
            Suspect::new(SuspectKind::Node, "<b>&evil", "3 of 3 pairs at ~96 Gb/s <slow>"),
            Suspect::new(SuspectKind::Link, "n3\"x'<->n4", "failed twice"),
        ];
        let params = vec![("tests".to_string(), "write_bw, send_lat".to_string()), ("size".into(), "65536 B".into())];
        let text = html(&page(&names, &cs, &sus, &params));
        let doc = parse(&text);
        let by_id = |id: &str| doc.descendants().find(|n| n.attribute("id") == Some(id)).unwrap_or_else(|| panic!("no #{id}"));
        assert_eq!(by_id("verdict").text(), Some("✕ FAIL"));
        let params: Vec<String> = by_id("params").descendants().filter(|n| n.has_tag_name("th")).filter_map(|n| n.text()).map(String::from).collect();
        assert_eq!(params, ["tests", "size", "endpoints", "pairs measured"]);
        let expected: String = by_id("expected").descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
        assert!(expected.contains("the expected capacity: 200 Gb/s") && expected.contains("from 90% of it (180 Gb/s)"), "{expected}");
        for kind in ["bw", "lat"] {
            let map = by_id(&format!("map-{kind}"));
            let rects: Vec<_> = map.descendants().filter(|n| n.has_tag_name("rect")).collect();
            let class = |c: &str| rects.iter().filter(|n| n.attribute("class") == Some(c)).count();
            assert_eq!(class("cell") + class("cell bad") + class("cell failed"), 12, "{kind}");
            assert_eq!(class("cell bad"), if kind == "bw" { 6 } else { 0 }, "{kind}: endpoint 1's six cells are slow, not laggy");
            assert_eq!(class("cell failed"), 2, "{kind}");
            assert_eq!(class("diag"), 4);
            assert_eq!(class("outline"), 2, "the suspect link's cells");
        }
        // Colour against the capacity: 190 of 200 is near the bright end, 96 is at the dark end.
        assert!(text.contains(&format!(r#"fill="{}""#, colour(position(0.95)))));
        assert!(text.contains("96 Gb/s (48% of the reference), BAD"));
        // The suspect node is marked on both axes, with a glyph; kinds in words.
        let marked = doc.descendants().filter(|n| n.attribute("class") == Some("lbl suspect")).count();
        assert_eq!(marked, 4, "both axes of both maps");
        let kinds: Vec<&str> =
            by_id("suspects").descendants().filter(|n| n.has_tag_name("td") && n.attribute("title").is_some()).filter_map(|n| n.text()).collect();
        assert_eq!(kinds, ["node", "link"]);
        assert!(text.contains("&lt;b&gt;&amp;evil") && !text.contains("<b>&evil"));
        assert!(!text.contains("<script") && !text.contains("href="));
    }

    #[test]
    fn no_latency_no_latency_map_and_unmeasured_cells() {
        let names: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let cs = vec![Cell { a: 0, b: 1, bw_gbps: Some(190.0), lat_us: None, failed: false, bad: false }];
        let params = Vec::new();
        let mut p = page(&names, &cs, &[], &params);
        p.lat = None;
        p.verdict = Verdict::Pass;
        let text = html(&p);
        let doc = parse(&text);
        assert!(doc.descendants().any(|n| n.attribute("id") == Some("map-bw")));
        assert!(!doc.descendants().any(|n| n.attribute("id") == Some("map-lat")));
        assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("cell none")).count(), 4);
        assert!(text.contains("✓ PASS") && text.contains("None: every pair"));
    }

    #[test]
    fn a_thousand_endpoints_are_per_node_and_a_few_hundred_kilobytes() {
        let n = 1000;
        let names: Vec<String> = (0..n).map(|i| format!("n{i:04}/mlx5_0")).collect();
        // 125 nodes of 8 rails, given out of order.
        let nodes: Vec<String> = (0..n).map(|i| format!("n{}", (i * 7) % 125)).collect();
        // A shift pattern's 16 rounds: i with i+r.
        let mut cs = Vec::new();
        for r in [1, 250, 125, 375, 62, 187, 312, 437] {
            for a in 0..n {
                let b = (a + r) % n;
                let slow = a == 17 || b == 17;
                cs.push(Cell { a, b, bw_gbps: Some(if slow { 57.0 } else { 190.0 }), lat_us: Some(1.9), failed: false, bad: slow });
            }
        }
        let sus = vec![Suspect::new(SuspectKind::Node, names[17].clone(), "slow")];
        let params = Vec::new();
        let mut p = page(&names, &cs, &sus, &params);
        p.nodes = &nodes;
        let text = html(&p);
        assert!(text.len() < 1 << 20, "{} bytes", text.len());
        let doc = parse(&text);
        let rows: Vec<_> =
            doc.descendants().find(|n| n.attribute("id") == Some("nodes")).unwrap().children().filter(|n| n.has_tag_name("tr")).collect();
        assert_eq!(rows.len(), 1 + 125);
        let first: Vec<&str> = rows[1..4].iter().map(|r| r.first_element_child().unwrap().text().unwrap()).collect();
        assert_eq!(first, ["n0", "n1", "n2"], "sorted by host, naturally");
        assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("tile")).count(), 2 * 125);
        assert!(!text.contains("class=\"cell"), "no endpoint matrix above {MATRIX_MAX}");
        assert!(text.contains("Worst pairs (16 bad, 16 shown)"));
    }

    #[test]
    fn palette_and_order() {
        assert_eq!(colour(0.0), "#440154");
        assert_eq!(colour(1.0), "#fde725");
        assert_eq!(position(1.2), 1.0);
        assert_eq!(position(0.4), 0.0);
        assert_eq!(position(0.75), 0.5);
        assert_eq!(lat_scale().share(4.0), 0.5);
        assert_eq!(natural_cmp("n2", "n10"), Ordering::Less);
        assert_eq!(natural_cmp("n010", "n9"), Ordering::Greater);
        assert_eq!(natural_cmp("a", "a1"), Ordering::Less);
        assert_eq!(escape("a\u{1b}b<"), "a\\u{1b}b&lt;");
    }
}
