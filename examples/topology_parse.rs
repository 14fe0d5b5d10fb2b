//! Times `--topology`'s reader on one file, for `benches/topology.sh`: the bounded read and the
//! parse `fabric --topology` and `mesh --topology` run (`fabric::topology::load_until`, under a
//! deadline as `fabric` sets it), then the leaves `mesh` derives from it. Prints, as its last
//! line, `bytes= nodes= links= read_parse_s= leaves_s= peak_rss_mb=` (peak RSS from
//! /proc/self/status VmHWM).
//!
//! `cargo build --release --example topology_parse && target/release/examples/topology_parse FILE [DEADLINE_S]`

use std::time::{Duration, Instant};

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
    kb.map_or(f64::NAN, |k| k / 1024.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: topology_parse FILE [DEADLINE_S]");
        std::process::exit(2);
    };
    let deadline_s: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(60);
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let started = Instant::now();
    let topology = match fabcheck::fabric::design::topology::load_until(path.as_ref(), Some(started + Duration::from_secs(deadline_s))) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}: {}", e.remedy());
            std::process::exit(2);
        }
    };
    let parsed = started.elapsed();
    let leaves_started = Instant::now();
    let leaves = fabcheck::mesh::topology::Topology::from_cabling(&topology).map(|t| t.leaves());
    let leaves_took = leaves_started.elapsed();
    if let Err(e) = &leaves {
        eprintln!("mesh's reading of it: {e}");
    }
    println!(
        "bytes={bytes} nodes={} links={} leaves={} read_parse_s={:.3} leaves_s={:.3} peak_rss_mb={:.1}",
        topology.nodes.len(),
        topology.links.len(),
        leaves.unwrap_or(0),
        parsed.as_secs_f64(),
        leaves_took.as_secs_f64(),
        peak_rss_mb()
    );
}
