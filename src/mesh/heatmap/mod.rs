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
use crate::outcome::Verdict;
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
pub use crate::sanitise::xml as escape;

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
    /// How the page names the endpoints and the suspects' subjects: by the host each agent
    /// said (`n07/mlx5_3 (tcp://10.0.3.7:18515/mlx5_3)`), as every other artefact does.
    pub names: crate::mesh::names::Names<'a>,
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
pub fn on_scale(share: f64) -> f64 {
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
        SuspectKind::Rail => ("rail", "one NIC of a node bad while its other rails are fine: that NIC, its cable or its leaf port"),
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
.subject{font-weight:bold;font-family:'DejaVu Sans Mono',monospace;white-space:nowrap} .none{color:#205}
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

    // Suspects, in words, first: what an operator acts on.
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
                escape(&p.names.subject(&s.subject)),
                escape(&s.reason)
            );
        }
        page.push_str("</table>\n");
    }

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
        let px = x as f64 + on_scale(share) * w as f64;
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

mod matrix;
mod nodes;
#[cfg(test)]
mod tests;

use matrix::matrix_svg;
use nodes::per_node;
