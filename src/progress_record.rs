//! `--report-every`'s figures while a run lasts (contract 0.5, "Burn-in and perftest parity"):
//! one [`Record`] per interval, written by a [`Recorder`] as a figure line on stderr (human
//! mode) and as one `fabcheck.progress.v1` JSON object per line in `--progress-json FILE`.
//!
//! Any command's driver can use it (`pair`, `mesh`, `collective`): build a [`Recorder`] from
//! [`LiveOutput`], then hand it a record per interval. It never writes to stdout (the result's
//! place). Every outside string (an endpoint's label) is made printable before it is written.
//! Pure apart from the writes: `t` is given by the caller, so tests need no clock.

use crate::model::IntervalLatency;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// The schema every record names.
pub const SCHEMA: &str = "fabcheck.progress.v1";

/// One interval of one running test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    pub schema: &'static str,
    /// Seconds since the run began (the controller's clock), at the interval's end.
    pub t: f64,
    /// The test (`write_bw`, `send_lat`; a collective names its own).
    pub test: String,
    /// Who measured it: the endpoint whose agent reported (`host/dev`, a pair `a <-> b`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The test's direction (`a->b`, `b->a`, `bidi`), where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<&'static str>,
    /// Message size, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Bandwidth over the interval; `null` for a latency test.
    pub gbps: Option<f64>,
    /// Latency over the interval (`p50`, `p99`, `max`, `samples`); `null` for a bandwidth test.
    pub lat_us: Option<IntervalLatency>,
}

impl Record {
    pub fn new(t: f64, test: &str) -> Record {
        Record { schema: SCHEMA, t, test: test.to_string(), endpoint: None, direction: None, size: None, gbps: None, lat_us: None }
    }

    /// The JSON line (no newline). Figures rounded: 0.1 s, 0.01 Gb/s, 0.01 us.
    pub fn json(&self) -> String {
        let r2 = |x: f64| (x * 100.0).round() / 100.0;
        let rounded = Record {
            t: (self.t * 10.0).round() / 10.0,
            gbps: self.gbps.map(r2),
            lat_us: self.lat_us.map(|l| IntervalLatency { p50: r2(l.p50), p99: r2(l.p99), max: r2(l.max), samples: l.samples }),
            ..self.clone()
        };
        serde_json::to_string(&rounded).unwrap_or_default()
    }

    /// The figure line on stderr: `[  12.0 s] write_bw a->b 65536 B  fake00: 93.41 Gb/s`.
    pub fn line(&self) -> String {
        let mut words = vec![format!("[{:>8.1} s]", self.t), self.test.clone()];
        words.extend(self.direction.map(str::to_string));
        words.extend(self.size.map(|s| format!("{s} B")));
        if let Some(e) = &self.endpoint {
            words.push(format!("{}:", crate::sanitise::one_line(e)));
        }
        if let Some(g) = self.gbps {
            words.push(format!("{g:.2} Gb/s"));
        }
        if let Some(l) = self.lat_us {
            words.push(format!("p50 {:.2} us p99 {:.2} us max {:.2} us ({} samples)", l.p50, l.p99, l.max, l.samples));
        }
        if self.gbps.is_none() && self.lat_us.is_none() {
            words.push("no completion in this interval".into());
        }
        words.join(" ")
    }
}

/// Where the records go, as the flags ask.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveOutput {
    /// A figure line per interval on stderr (human mode).
    pub lines: bool,
    /// `--progress-json FILE`: one JSON record per line (replaced at the run's start).
    pub json: Option<PathBuf>,
    /// `--live-dir DIR`: the last interval's records, for `fabcheck exporter` ([`LiveState`]).
    pub live_dir: Option<PathBuf>,
    /// The interval, seconds (the exporter judges a state file stale by it).
    pub every_s: f64,
}

/// The schema of the state file the exporter reads.
pub const LIVE_SCHEMA: &str = "fabcheck.live.v1";
/// Where `--live-dir` puts it unless told otherwise, and where the exporter looks.
pub const LIVE_DIR: &str = "/run/fabcheck/live";
/// Records a state file keeps at most: the newest of each test, direction, size and endpoint.
pub const LIVE_MAX_RECORDS: usize = 64;

/// What a run with `--report-every` keeps in `DIR/fabcheck-PID.json` while it lasts (replaced
/// whole at each record, removed when the run ends): the newest record of each test, direction,
/// size and endpoint, and when it was written. The exporter serves it while it is fresh.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveState {
    pub schema: &'static str,
    pub pid: u32,
    pub every_s: f64,
    /// Unix time of the last write.
    pub written_unix: f64,
    pub records: Vec<Record>,
}

impl LiveState {
    /// `record` replaces the one of the same test, direction, size and endpoint; the oldest
    /// go beyond [`LIVE_MAX_RECORDS`].
    pub fn put(&mut self, record: &Record, now_unix: f64) {
        let same = |r: &Record| r.test == record.test && r.direction == record.direction && r.size == record.size && r.endpoint == record.endpoint;
        self.records.retain(|r| !same(r));
        self.records.push(record.clone());
        if self.records.len() > LIVE_MAX_RECORDS {
            let extra = self.records.len() - LIVE_MAX_RECORDS;
            self.records.drain(..extra);
        }
        self.written_unix = now_unix;
    }
}

/// The state file of a run: written through the one output path, removed on drop.
struct LiveFile {
    path: PathBuf,
    state: LiveState,
}

impl LiveFile {
    /// In `dir` (made if missing); `None` where it cannot be (not root: /run is not ours), as
    /// progress never ends a run.
    fn open(dir: &std::path::Path, every_s: f64) -> Option<LiveFile> {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::debug!(dir = %dir.display(), %e, "no live state for the exporter");
            return None;
        }
        let pid = std::process::id();
        let state = LiveState { schema: LIVE_SCHEMA, pid, every_s, written_unix: 0.0, records: Vec::new() };
        Some(LiveFile { path: dir.join(format!("fabcheck-{pid}.json")), state })
    }

    fn put(&mut self, record: &Record) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        self.state.put(record, now);
        let text = serde_json::to_string(&self.state).unwrap_or_default();
        if let Err(e) = crate::sys::atomic::write(&self.path, text.as_bytes()) {
            tracing::debug!(%e, "live state not written");
        }
    }
}

impl Drop for LiveFile {
    fn drop(&mut self) {
        // The run ended: nothing of it is served as live.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes records where [`LiveOutput`] says.
pub struct Recorder {
    lines: Option<Box<dyn Write + Send>>,
    json: Option<Box<dyn Write + Send>>,
    live: Option<LiveFile>,
    /// Records written (for the caller's tests and its summary).
    pub written: usize,
}

impl Recorder {
    /// Opens the JSON file (created or truncated) and chooses stderr for the lines. The error
    /// is the file's, said with its path (the caller adds the next step).
    pub fn open(out: &LiveOutput) -> Result<Recorder, String> {
        let json: Option<Box<dyn Write + Send>> = match &out.json {
            // Through the one output path (a planted path refused, no link followed), in place so
            // `tail -f` follows it.
            Some(path) => Some(Box::new(crate::sys::atomic::create_growing(path).map_err(|e| format!("--progress-json: {e}"))?)),
            None => None,
        };
        let lines: Option<Box<dyn Write + Send>> = out.lines.then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>);
        let live = out.live_dir.as_deref().and_then(|dir| LiveFile::open(dir, out.every_s));
        Ok(Recorder { lines, json, live, written: 0 })
    }

    /// Into any two writers (tests; a collective that keeps its own files).
    pub fn to(lines: Option<Box<dyn Write + Send>>, json: Option<Box<dyn Write + Send>>) -> Recorder {
        Recorder { lines, json, live: None, written: 0 }
    }

    /// Writes one record: its line, its JSON object, each flushed (so `tail -f` follows it).
    /// A write that fails is dropped: progress never ends a run.
    pub fn record(&mut self, record: &Record) {
        if let Some(w) = self.lines.as_mut() {
            let _ = writeln!(w, "{}", record.line()).and_then(|_| w.flush());
        }
        if let Some(w) = self.json.as_mut() {
            let _ = writeln!(w, "{}", record.json()).and_then(|_| w.flush());
        }
        if let Some(live) = self.live.as_mut() {
            live.put(record);
        }
        self.written += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn bw(t: f64) -> Record {
        Record {
            endpoint: Some("fake00/mlx5_0".into()),
            direction: Some("a->b"),
            size: Some(65536),
            gbps: Some(93.4149),
            ..Record::new(t, "write_bw")
        }
    }

    /// The state file keeps the newest record of each test and endpoint, bounded, and goes
    /// when the run (its recorder) ends.
    #[test]
    fn the_live_state_keeps_the_newest_of_each_and_is_removed_at_the_end() {
        let mut state = LiveState { schema: LIVE_SCHEMA, pid: 1, every_s: 1.0, written_unix: 0.0, records: Vec::new() };
        state.put(&bw(1.0), 10.0);
        state.put(&bw(2.0), 11.0);
        assert_eq!((state.records.len(), state.records[0].t, state.written_unix), (1, 2.0, 11.0));
        for k in 0..100 {
            state.put(&Record { endpoint: Some(format!("n{k}")), ..bw(3.0) }, 12.0);
        }
        assert_eq!(state.records.len(), LIVE_MAX_RECORDS);
        assert_eq!(state.records.last().unwrap().endpoint.as_deref(), Some("n99"));
        let dir = std::env::temp_dir().join(format!("fabcheck-live-unit-{}", std::process::id()));
        let out = LiveOutput { live_dir: Some(dir.clone()), every_s: 1.0, ..LiveOutput::default() };
        let mut recorder = Recorder::open(&out).unwrap();
        recorder.record(&bw(1.0));
        let file = dir.join(format!("fabcheck-{}.json", std::process::id()));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!((v["schema"].as_str(), v["records"][0]["gbps"].as_f64()), (Some(LIVE_SCHEMA), Some(93.4149)));
        drop(recorder);
        assert!(!file.exists(), "the run ended: no live state left");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_is_one_json_object_with_the_contract_keys() {
        let v: serde_json::Value = serde_json::from_str(&bw(12.04).json()).unwrap();
        assert_eq!(v["schema"], "fabcheck.progress.v1");
        assert_eq!(v["t"], 12.0);
        assert_eq!(v["test"], "write_bw");
        assert_eq!(v["gbps"], 93.41);
        assert!(v["lat_us"].is_null(), "{v}");
        let lat = Record { lat_us: Some(IntervalLatency { p50: 1.934, p99: 2.5, max: 9.0, samples: 5000 }), ..Record::new(1.0, "send_lat") };
        let v: serde_json::Value = serde_json::from_str(&lat.json()).unwrap();
        assert_eq!((v["lat_us"]["p50"].as_f64(), v["lat_us"]["p99"].as_f64(), v["lat_us"]["samples"].as_u64()), (Some(1.93), Some(2.5), Some(5000)));
        assert!(v["gbps"].is_null());
    }

    #[test]
    fn ten_intervals_are_ten_lines_and_ten_records() {
        let (lines, json) = (Shared::default(), Shared::default());
        let mut rec = Recorder::to(Some(Box::new(lines.clone())), Some(Box::new(json.clone())));
        for i in 1..=10 {
            rec.record(&bw(f64::from(i)));
        }
        assert_eq!(rec.written, 10);
        let records: Vec<serde_json::Value> = json.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(records.len(), 10);
        assert_eq!(records.iter().map(|r| r["t"].as_f64().unwrap()).collect::<Vec<_>>(), (1..=10).map(f64::from).collect::<Vec<_>>());
        let text = lines.text();
        assert_eq!(text.lines().count(), 10);
        assert!(text.lines().next().unwrap().ends_with("write_bw a->b 65536 B fake00/mlx5_0: 93.41 Gb/s"), "{text}");
    }

    #[test]
    fn an_endpoint_label_cannot_forge_a_line() {
        let r = Record { endpoint: Some("evil\n[ 1.0 s] forged\x1b[2J".into()), ..bw(1.0) };
        assert_eq!(r.line().lines().count(), 1, "{}", r.line());
        assert!(!r.line().contains('\x1b'));
        assert_eq!(r.json().lines().count(), 1);
    }
}
