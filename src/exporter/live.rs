//! A running burn-in's last interval, for the page: the `fabcheck.live.v1` state files that
//! `pair` and `mesh --report-every` keep in `--live-dir` (`progress_record::LiveState`), read
//! bounded (a few files, each a few KiB, regular files only, no link followed) and served only
//! while fresh: a run that ended removed its file, and one that died leaves a file that ages
//! out after three of its intervals (at least [`MIN_FRESH_S`]).

use serde::Deserialize;
use std::path::Path;

/// State files read at most per look (the newest names first are not needed: one run, one file).
pub const MAX_FILES: usize = 16;
/// Bytes read of one state file at most (64 records of a few hundred bytes).
pub const MAX_BYTES: u64 = 64 << 10;
/// A state file is fresh for three of its intervals, and never less than this.
pub const MIN_FRESH_S: f64 = 5.0;

/// One running test's last interval, as the page writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFigure {
    pub pid: u32,
    pub test: String,
    pub direction: Option<String>,
    pub size: Option<u32>,
    pub endpoint: Option<String>,
    pub gbps: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// When its state file was written (Unix time).
    pub written_unix: f64,
}

#[derive(Deserialize)]
struct State {
    schema: String,
    pid: u32,
    every_s: f64,
    written_unix: f64,
    records: Vec<Rec>,
}

#[derive(Deserialize)]
struct Rec {
    test: String,
    direction: Option<String>,
    size: Option<u32>,
    endpoint: Option<String>,
    gbps: Option<f64>,
    lat_us: Option<Lat>,
}

#[derive(Deserialize)]
struct Lat {
    p50: f64,
    p99: f64,
}

/// Whether a state written at `written_unix`, every `every_s`, is still a running run's.
pub fn fresh(written_unix: f64, every_s: f64, now_unix: f64) -> bool {
    let limit = (3.0 * every_s).max(MIN_FRESH_S);
    every_s.is_finite() && written_unix.is_finite() && now_unix - written_unix <= limit
}

/// The figures of one state file's text; none when it is not one, or stale.
pub fn parse(text: &str, now_unix: f64) -> Vec<LiveFigure> {
    let Ok(state) = serde_json::from_str::<State>(text) else { return Vec::new() };
    if state.schema != crate::progress_record::LIVE_SCHEMA || !fresh(state.written_unix, state.every_s, now_unix) {
        return Vec::new();
    }
    let clean = |s: Option<String>| s.map(|s| crate::sanitise::one_line(&s).chars().take(200).collect::<String>());
    state
        .records
        .into_iter()
        .take(crate::progress_record::LIVE_MAX_RECORDS)
        .map(|r| LiveFigure {
            pid: state.pid,
            test: clean(Some(r.test)).unwrap_or_default(),
            direction: clean(r.direction),
            size: r.size,
            endpoint: clean(r.endpoint),
            gbps: r.gbps.filter(|g| g.is_finite()),
            p50_us: r.lat_us.as_ref().map(|l| l.p50).filter(|v| v.is_finite()),
            p99_us: r.lat_us.as_ref().map(|l| l.p99).filter(|v| v.is_finite()),
            written_unix: state.written_unix,
        })
        .collect()
}

/// Every fresh figure in `dir` (`fabcheck-*.json`, at most [`MAX_FILES`], each at most
/// [`MAX_BYTES`]); a missing or unreadable directory has none.
pub fn read(dir: &Path, now_unix: f64) -> Vec<LiveFigure> {
    let Ok(mut names) = crate::sys::fs::list_dir(dir) else { return Vec::new() };
    names.retain(|n| n.to_str().is_some_and(|n| n.starts_with("fabcheck-") && n.ends_with(".json")));
    names.sort();
    let mut out = Vec::new();
    for name in names.iter().take(MAX_FILES) {
        // Regular files only, bounded, no link followed (sys::fs).
        if let Ok(text) = crate::sys::fs::read_text(&dir.join(name), MAX_BYTES) {
            out.extend(parse(&text, now_unix));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(written_unix: f64) -> String {
        format!(
            r#"{{"schema":"fabcheck.live.v1","pid":42,"every_s":1.0,"written_unix":{written_unix},"records":[
            {{"schema":"fabcheck.progress.v1","t":3.0,"test":"write_bw","endpoint":"a <-> b","direction":"a->b","size":65536,"gbps":93.4,"lat_us":null}},
            {{"schema":"fabcheck.progress.v1","t":3.0,"test":"send_lat","direction":"a->b","size":2,"gbps":null,"lat_us":{{"p50":1.9,"p99":2.5,"max":9.0,"samples":100}}}}]}}"#
        )
    }

    #[test]
    fn a_fresh_state_gives_its_figures() {
        let f = parse(&state(1000.0), 1002.0);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f[0].test.as_str(), f[0].gbps, f[0].endpoint.as_deref(), f[0].pid), ("write_bw", Some(93.4), Some("a <-> b"), 42));
        assert_eq!((f[1].p50_us, f[1].p99_us, f[1].gbps), (Some(1.9), Some(2.5), None));
    }

    /// Three intervals old (at least 5 s) is a run that died: not served as live.
    #[test]
    fn a_stale_or_foreign_state_gives_nothing() {
        assert!(parse(&state(1000.0), 1005.0).len() == 2, "5 s is within the floor");
        assert!(parse(&state(1000.0), 1005.1).is_empty());
        assert!(parse(&state(1000.0).replace("fabcheck.live.v1", "other.v1"), 1000.0).is_empty());
        assert!(parse("not json", 1000.0).is_empty());
        assert!(fresh(0.0, 10.0, 30.0) && !fresh(0.0, 10.0, 30.5));
        assert!(!fresh(f64::NAN, 1.0, 0.0));
    }

    #[test]
    fn a_directory_is_read_bounded() {
        let dir = std::env::temp_dir().join(format!("fabcheck-live-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("fabcheck-1.json"), state(1000.0)).unwrap();
        std::fs::write(dir.join("fabcheck-2.json"), state(900.0)).unwrap();
        std::fs::write(dir.join("other.json"), state(1000.0)).unwrap();
        std::fs::write(dir.join("fabcheck-3.json"), "x".repeat(MAX_BYTES as usize + 10)).unwrap();
        let f = read(&dir, 1001.0);
        assert_eq!(f.len(), 2, "only the fresh fabcheck-*.json: {f:?}");
        assert!(read(&dir.join("missing"), 0.0).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
