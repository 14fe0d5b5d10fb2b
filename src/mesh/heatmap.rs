//! The mesh's bandwidth matrix as a self-contained HTML page (pure): an inline SVG heat map, a
//! legend and the suspects. No scripts, fonts or images from anywhere: it opens offline and
//! can be attached to a ticket as it is.
//!
//! Colour: the share of the best pair's bandwidth. Red up to half of it, through yellow at
//! three quarters, to green at the best: a node at half speed shows as a red cross, a bad link
//! as a single red cell pair. Cells without a result are grey; the diagonal is blank.

use std::fmt::Write;

/// Escapes text for HTML and SVG, in content and in attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

use crate::units::sig3 as fmt;

/// Hue 0 (red) at or below half of `top`, 60 (yellow) at three quarters, 120 (green) at `top`.
fn hue(v: f64, top: f64) -> f64 {
    let r = if top > 0.0 { v / top } else { 1.0 };
    120.0 * ((r - 0.5) / 0.5).clamp(0.0, 1.0)
}

fn fill(v: f64, top: f64) -> String {
    format!("hsl({:.0},68%,58%)", hue(v, top))
}

/// The value of cell (i, j): the matrix is symmetric, either half may hold it.
fn value(bw: &[Vec<Option<f64>>], i: usize, j: usize) -> Option<f64> {
    let get = |r: usize, c: usize| bw.get(r).and_then(|row| row.get(c)).copied().flatten().filter(|v| v.is_finite());
    get(i, j).or_else(|| get(j, i))
}

/// A page with the `n`×`n` bandwidth matrix `bw` (Gb/s, `bw[i][j]` for `endpoints[i]` and
/// `endpoints[j]`; either half of the symmetric matrix may be filled, `None` for no result),
/// each cell labelled with its value and holding a tooltip, and the suspects below it.
/// `suspects`: `(subject, reason)`, the subject as in the mesh JSON (an endpoint, `A<->B`, or
/// `cluster`); an endpoint named by a suspect is marked on the axes, a link's cells outlined.
pub fn html(title: &str, endpoints: &[String], bw: &[Vec<Option<f64>>], suspects: &[(String, String)]) -> String {
    let n = endpoints.len();
    let t = escape(title);

    // Figures over the pairs (upper triangle).
    let mut vals: Vec<f64> = Vec::new();
    let mut missing = 0usize;
    for i in 0..n {
        for j in i + 1..n {
            match value(bw, i, j) {
                Some(v) => vals.push(v),
                None => missing += 1,
            }
        }
    }
    let top = vals.iter().copied().fold(0.0f64, f64::max);
    let median = {
        let mut v = vals.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        match v.len() {
            0 => None,
            k if k % 2 == 1 => Some(v[k / 2]),
            k => Some((v[k / 2 - 1] + v[k / 2]) / 2.0),
        }
    };

    // Who the suspects name.
    let index = |s: &str| endpoints.iter().position(|e| e == s);
    let mut node_marked = vec![false; n];
    let mut link_marked: Vec<(usize, usize)> = Vec::new();
    for (subject, _) in suspects {
        if let Some(i) = index(subject) {
            node_marked[i] = true;
        } else if let Some((a, b)) = subject.split_once("<->") {
            if let (Some(a), Some(b)) = (index(a), index(b)) {
                link_marked.push((a, b));
                link_marked.push((b, a));
            }
        }
    }

    // Geometry.
    let cell: usize = match n {
        0..=12 => 56,
        13..=24 => 42,
        25..=48 => 28,
        _ => 18,
    };
    let font = if cell >= 42 {
        12
    } else if cell >= 28 {
        9
    } else {
        0
    };
    let longest = endpoints.iter().map(|e| e.chars().count()).max().unwrap_or(1);
    let text_w = (longest as f64 * 7.2).ceil() as usize + 14;
    let left = text_w + 8;
    let top_margin = (text_w as f64 * 0.72).ceil() as usize + 12;
    let grid = cell * n;
    let legend_h = 64;
    let width = left + grid + text_w.max(120);
    let height = top_margin + grid + legend_h;

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{t}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
    );
    svg.push_str(
        r#"<defs><linearGradient id="scale" x1="0" x2="1" y1="0" y2="0"><stop offset="0" stop-color="hsl(0,68%,58%)"/><stop offset="0.5" stop-color="hsl(60,68%,58%)"/><stop offset="1" stop-color="hsl(120,68%,58%)"/></linearGradient></defs>"#,
    );

    // Axis labels: rows on the left, columns on top (slanted).
    for (i, e) in endpoints.iter().enumerate() {
        let name = escape(e);
        let class = if node_marked[i] { "lbl suspect" } else { "lbl" };
        let y = top_margin + i * cell + cell / 2;
        let _ = write!(svg, r#"<text class="{class}" x="{}" y="{y}" text-anchor="end" dominant-baseline="middle">{name}</text>"#, left - 8);
        let x = left + i * cell + cell / 2;
        let yb = top_margin - 6;
        let _ = write!(svg, r#"<text class="{class}" x="{x}" y="{yb}" transform="rotate(-45 {x} {yb})">{name}</text>"#);
    }

    // Cells.
    for i in 0..n {
        for j in 0..n {
            let x = left + j * cell;
            let y = top_margin + i * cell;
            if i == j {
                let _ = write!(svg, r##"<rect class="diag" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#fafafa"/>"##);
                continue;
            }
            let (a, b) = (escape(&endpoints[i]), escape(&endpoints[j]));
            let stroke = r##" stroke="#fff" stroke-width="1""##;
            match value(bw, i, j) {
                Some(v) => {
                    let share = if top > 0.0 { format!(" ({:.0}% of the best)", 100.0 * v / top) } else { String::new() };
                    let _ = write!(
                        svg,
                        r#"<g><title>{a} &lt;-&gt; {b}: {} Gb/s{share}</title><rect class="cell" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{}"{stroke}/>"#,
                        fmt(v),
                        fill(v, top)
                    );
                    if font > 0 {
                        let _ = write!(
                            svg,
                            r#"<text class="val" x="{}" y="{}" font-size="{font}" text-anchor="middle" dominant-baseline="central">{}</text>"#,
                            x + cell / 2,
                            y + cell / 2,
                            fmt(v)
                        );
                    }
                    svg.push_str("</g>");
                }
                None => {
                    let _ = write!(
                        svg,
                        r##"<g><title>{a} &lt;-&gt; {b}: no result</title><rect class="cell none" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#c8c8c8"{stroke}/>"##
                    );
                    if font > 0 {
                        let _ = write!(
                            svg,
                            r##"<text class="val" x="{}" y="{}" font-size="{font}" text-anchor="middle" dominant-baseline="central" fill="#555">n/a</text>"##,
                            x + cell / 2,
                            y + cell / 2
                        );
                    }
                    svg.push_str("</g>");
                }
            }
        }
    }

    // Suspect links outlined on top of the cells, so no neighbour hides the outline.
    for &(i, j) in &link_marked {
        let _ = write!(
            svg,
            r##"<rect class="outline" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#111" stroke-width="3" pointer-events="none"/>"##,
            left + j * cell + 1,
            top_margin + i * cell + 1,
            cell - 2,
            cell - 2
        );
    }

    // Legend: the scale, then the grey of no result.
    let ly = top_margin + grid + 22;
    let lw = 240usize;
    let lx = left;
    let _ = write!(svg, r#"<rect x="{lx}" y="{ly}" width="{lw}" height="14" fill="url(#scale)"/>"#);
    let ticks = [(0.0, 0.5), (0.5, 0.75), (1.0, 1.0)];
    for (pos, share) in ticks {
        let x = lx as f64 + pos * lw as f64;
        let label = if top > 0.0 { format!("{}{}", if pos == 0.0 { "≤ " } else { "" }, fmt(share * top)) } else { "-".into() };
        let anchor = if pos == 0.0 {
            "start"
        } else if pos == 1.0 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(svg, r#"<text class="tick" x="{x:.0}" y="{}" text-anchor="{anchor}">{label}</text>"#, ly + 30);
    }
    let _ = write!(svg, r#"<text class="tick" x="{}" y="{}">Gb/s (share of the best pair)</text>"#, lx + lw + 10, ly + 11);
    let gx = lx + lw + 10;
    let _ = write!(
        svg,
        r##"<rect x="{gx}" y="{}" width="14" height="14" fill="#c8c8c8"/><text class="tick" x="{}" y="{}">no result</text>"##,
        ly + 20,
        gx + 20,
        ly + 31
    );
    svg.push_str("</svg>");

    // Page.
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\n\
         body{{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:24px;color:#111;background:#fff}}\n\
         h1{{font-size:20px;margin:0 0 4px}} .sum{{color:#444;margin:0 0 12px;font-size:14px}}\n\
         svg .lbl{{font-size:12px;fill:#222}} svg .lbl.suspect{{fill:#b00;font-weight:bold}}\n\
         svg .val{{fill:#111}} svg .tick{{font-size:11px;fill:#333}} svg g:hover rect{{stroke:#000;stroke-width:2}}\n\
         h2{{font-size:16px;margin:20px 0 6px}} ul.suspects{{padding-left:20px;font-size:14px}}\n\
         ul.suspects li{{margin:4px 0}} .subject{{font-weight:bold;font-family:'DejaVu Sans Mono',monospace}}\n\
         .none{{color:#070}}\n</style></head><body>\n<h1>{t}</h1>\n"
    );
    let pairs = n * n.saturating_sub(1) / 2;
    let _ = write!(page, "<p class=\"sum\">{n} endpoints, {pairs} pairs");
    if !vals.is_empty() {
        let _ = write!(page, "; best {} Gb/s", fmt(top));
        if let Some(m) = median {
            let _ = write!(page, ", median {} Gb/s", fmt(m));
        }
    }
    if missing > 0 {
        let _ = write!(page, "; {missing} without a result");
    }
    page.push_str(". Hover a cell for its pair.</p>\n");
    page.push_str(&svg);
    page.push_str("\n<h2>Suspects</h2>\n");
    if suspects.is_empty() {
        page.push_str("<p class=\"none\">None: every pair is in line with the others.</p>\n");
    } else {
        page.push_str("<ul class=\"suspects\">\n");
        for (subject, reason) in suspects {
            let _ = writeln!(page, "<li><span class=\"subject\">{}</span>: {}</li>", escape(subject), escape(reason));
        }
        page.push_str("</ul>\n");
    }
    page.push_str("</body></html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(n: usize, f: impl Fn(usize, usize) -> Option<f64>) -> Vec<Vec<Option<f64>>> {
        (0..n).map(|i| (0..n).map(|j| if i == j { None } else { f(i.min(j), i.max(j)) }).collect()).collect()
    }

    #[test]
    fn page_has_svg_cells_and_escaped_names() {
        let names: Vec<String> = vec!["n1/mlx5_0".into(), "<b>&evil".into(), "n3\"x'".into(), "n4".into()];
        let bw = matrix(4, |i, j| if i == 1 || j == 1 { Some(48.0) } else { Some(196.0) });
        let sus = vec![("<b>&evil".to_string(), "3 of 3 pairs at ~48 Gb/s <slow> & bad".to_string())];
        let page = html("mesh <rail 0> & co", &names, &bw, &sus);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<svg"));
        assert!(page.contains("</svg>"));
        assert_eq!(page.matches(r#"<rect class="cell"#).count(), 4 * 4 - 4);
        assert_eq!(page.matches(r#"class="diag""#).count(), 4);
        assert_eq!(page.matches("<title>").count(), 1 + 12);
        assert!(!page.contains("<b>&evil"));
        assert!(page.contains("&lt;b&gt;&amp;evil"));
        assert!(page.contains("n3&quot;x&#39;"));
        assert!(page.contains("mesh &lt;rail 0&gt; &amp; co"));
        assert!(page.contains("~48 Gb/s &lt;slow&gt; &amp; bad"));
        // The suspect node is marked on both axes.
        assert_eq!(page.matches(r#"class="lbl suspect""#).count(), 2);
        // Values and tooltips.
        assert!(page.contains(">196</text>"));
        assert!(page.contains("n1/mlx5_0 &lt;-&gt; &lt;b&gt;&amp;evil: 48 Gb/s (24% of the best)</title>"));
        // No external resources.
        assert!(!page.contains("src="));
        assert!(!page.contains("href="));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn half_matrix_missing_cells_and_link_outline() {
        let names: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        // Only the upper half is filled; (0,2) has no result.
        let mut bw = vec![vec![None; 3]; 3];
        bw[0][1] = Some(190.0);
        bw[1][2] = Some(95.0);
        let sus = vec![("n2<->n3".to_string(), "only this pair is slow".to_string())];
        let page = html("t", &names, &bw, &sus);
        assert_eq!(page.matches(r#"<rect class="cell"#).count(), 6);
        assert_eq!(page.matches(r#"class="cell none""#).count(), 2);
        assert_eq!(page.matches(r#">95</text>"#).count(), 2);
        assert_eq!(page.matches(r##"stroke="#111" stroke-width="3""##).count(), 2);
        assert!(page.contains("1 without a result"));
    }

    #[test]
    fn colour_scale() {
        assert_eq!(hue(200.0, 200.0), 120.0);
        assert_eq!(hue(150.0, 200.0), 60.0);
        assert_eq!(hue(100.0, 200.0), 0.0);
        assert_eq!(hue(20.0, 200.0), 0.0);
        assert_eq!(fill(200.0, 200.0), "hsl(120,68%,58%)");
    }

    #[test]
    fn empty_and_large() {
        let page = html("none", &[], &[], &[]);
        assert!(page.contains("<svg") && page.contains("0 endpoints"));
        let n = 60;
        let names: Vec<String> = (0..n).map(|i| format!("node{i:03}/mlx5_0")).collect();
        let bw = matrix(n, |_, _| Some(390.0));
        let page = html("big", &names, &bw, &[]);
        assert_eq!(page.matches(r#"<rect class="cell"#).count(), n * n - n);
    }

    #[test]
    fn escape_all() {
        assert_eq!(escape(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
