//! The endpoint-by-endpoint matrix of one figure (bandwidth or latency) as an SVG: up to
//! [`MATRIX_MAX`] endpoints.

use super::*;

/// The endpoint-by-endpoint matrix of one figure (`kind` `bw` or `lat`) as an SVG.
pub(super) fn matrix_svg(p: &Page<'_>, kind: &str, scale: &Scale) -> String {
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
    let labels: Vec<String> = (0..n).map(|i| p.names.at(i)).collect();
    let longest = labels.iter().map(|e| e.chars().count()).max().unwrap_or(1) + 2;
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
    for (i, e) in labels.iter().enumerate() {
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
            let (a, b) = (escape(&labels[i]), escape(&labels[j]));
            let Some(c) = cell_of.get(&(i.min(j), i.max(j))) else {
                let _ = write!(svg, r##"<rect class="cell none" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#f4f4f4" stroke="#fff"/>"##);
                continue;
            };
            let v = value(c).filter(|v| v.is_finite());
            match v {
                Some(v) => {
                    let share = scale.share(v);
                    let pos = on_scale(share);
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
