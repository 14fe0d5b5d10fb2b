//! The per-node view of a large mesh (above [`MATRIX_MAX`] endpoints): overview tiles, a table of
//! every node, and the worst pairs.

use super::*;
use crate::units::median;

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

/// The nodes of a large mesh: names, figures, host order, and each node's medians (bandwidth,
/// latency).
struct Nodes {
    names: Vec<String>,
    figs: Vec<NodeFigures>,
    /// Node indices in host order.
    order: Vec<usize>,
    medians: Vec<(Option<f64>, Option<f64>)>,
}

/// The per-node view of a large mesh: overview tiles (bandwidth, latency) in host order, a
/// table of every node, and the worst pairs.
pub(super) fn per_node(page: &mut String, p: &Page<'_>) {
    let nodes = nodes(p);
    let (n, names) = (p.endpoints.len(), &nodes.names);
    let _ = writeln!(
        page,
        "<p class=\"expect\">{n} endpoints on {} nodes: above {MATRIX_MAX} endpoints each node is one tile and one row, its median over the pairs of its endpoints, sorted by host name (hover a tile for its figures). The JSON and --csv hold every pair.</p>",
        names.len()
    );
    tiles(page, p, &nodes);
    node_table(page, p, &nodes);
    worst_pairs(page, p);
}

/// Each endpoint's node, and each node's figures over the pairs of its endpoints.
fn nodes(p: &Page<'_>) -> Nodes {
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
    Nodes { names, figs, order, medians }
}

/// The overview tiles, one per node in host order, for bandwidth and latency.
fn tiles(page: &mut String, p: &Page<'_>, nodes: &Nodes) {
    let Nodes { names, figs, order, medians } = nodes;
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
                        colour(on_scale(share))
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
}

/// Every node, worst first.
fn node_table(page: &mut String, p: &Page<'_>, nodes: &Nodes) {
    let Nodes { names, figs, order, medians } = nodes;
    // Every node, worst first (suspects, then the most bad pairs), then in host order: the
    // tiles above keep host order, where a place is easy to find.
    let mut worst_first = order.clone();
    worst_first.sort_by(|&x, &y| figs[y].suspect.cmp(&figs[x].suspect).then(figs[y].bad.cmp(&figs[x].bad)).then(natural_cmp(&names[x], &names[y])));
    let order = worst_first;
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
            escape(&f.endpoints.iter().map(|&i| p.names.at(i)).collect::<Vec<_>>().join(", ")),
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
}

/// The worst pairs of the mesh.
fn worst_pairs(page: &mut String, p: &Page<'_>) {
    let n = p.endpoints.len();
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
            let pair = format!("{} <-> {}", p.names.at(c.a.min(n - 1)), p.names.at(c.b.min(n - 1)));
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
            let pos = on_scale(share);
            let flag = if share < scale.pass_share { " ▨" } else { "" };
            let _ = write!(page, "<td class=\"num\" style=\"background:{};color:{}\">{}{flag}</td>", colour(pos), ink(pos), fmt(v));
        }
        None => page.push_str("<td class=\"num\">✕</td>"),
    }
}
