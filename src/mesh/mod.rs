//! `fabcheck mesh`: every pair of endpoints, in rounds of disjoint pairs run in parallel, the
//! bad pairs re-tested once, and the result read for the node, link or setting to blame.
//!
//! Orchestration only; scheduling (`schedule`), judgement (`analysis`) and the picture
//! (`heatmap`) are pure. Everything runs on one thread: one hub polls every agent's channel,
//! agents are reached `--fanout` at a time, and each pair of a round is `pair`'s own test
//! sequence, a state machine the hub's events drive. A thousand endpoints cost a thousand
//! channels (and, over ssh, a thousand ssh processes), not a thousand threads.

pub mod analysis;
pub mod csv;
pub mod heatmap;
pub mod pattern;
pub mod schedule;
mod spool;
pub mod topology;

use crate::control::drive::{drive, Job};
use crate::control::endpoint::{EndpointSpec, HostSpec};
use crate::control::hub::{Hub, LinkId};
use crate::control::link::LaunchOptions;
use crate::control::reach::{reach_all, token_for};
use crate::diagnose::{gbps, Verdict};
use crate::error::{Failure, Outcome};
use crate::pair::plan::{Direction, PlannedTest};
use crate::pair::report::TestResult;
use crate::pair::sequence::PairSequence;
use crate::pair::{self, verdict};
use crate::probe::Inventory;
use crate::progress::{Event, Progress, Stage};
use crate::units;
use analysis::{Criteria, PairMeasure, Suspect};
use pattern::{Layout, Pattern};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use topology::Topology;

/// Above this many endpoints the human output shows per-endpoint summaries and the worst
/// pairs instead of the matrix.
pub const MATRIX_MAX: usize = 32;
/// Lines of per-endpoint summaries and of worst pairs in the human output of a large mesh.
const SUMMARY_LINES: usize = 20;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairRecord {
    pub a: String,
    pub b: String,
    pub verdict: Verdict,
    pub results: Vec<TestResult>,
    /// Why the pair could not run, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// This record is the re-test of a pair that was bad on the first pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retest: bool,
    /// This pair was added by the zoom-in: an endpoint of a still-bad pair against a
    /// known-good partner.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zoom: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MeshDoc {
    pub schema: String,
    pub verdict: Verdict,
    pub endpoints: Vec<String>,
    pub pairs: Vec<PairRecord>,
    pub suspects: Vec<Suspect>,
    /// Endpoints whose agent could not be reached, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<Unreachable>,
    /// Which pairs were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<PatternDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
}

/// The pattern a mesh ran: its name, rounds of the first pass, and for `random:K` the seed
/// that repeats it (`--seed`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternDoc {
    pub name: String,
    pub rounds: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Endpoints matched to a leaf switch of `--topology`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves: Option<usize>,
}

/// Where the controller's time went.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timing {
    /// Judging every pair and naming suspects, milliseconds.
    pub analysis_ms: f64,
}

/// An endpoint whose agent could not be reached (on the first pass and again before the
/// re-tests).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unreachable {
    pub endpoint: String,
    pub error: String,
}

/// One endpoint's agent: its channel in the hub and what its inventory says.
struct Agent {
    link: LinkId,
    /// Said hello and is in step; false before the first reach and after a pair discarded
    /// its channel (it is reached again before its next pair).
    reached: bool,
    settings: Vec<(String, String)>,
    rate_gbps: Option<f64>,
    soft: bool,
    /// Could not be reached: its pairs fail without running.
    error: Option<String>,
    /// Unreachable, but to be tried once more before the re-tests.
    second_chance: bool,
    /// The host name its agent reported (matched against `--topology`).
    host: Option<String>,
}

/// A mesh run, validated: everything `run` needs, no flags.
#[derive(Debug, Clone)]
pub struct MeshConfig {
    pub specs: Vec<EndpointSpec>,
    pub names: Vec<String>,
    pub plan: Vec<PlannedTest>,
    pub launch: LaunchOptions,
    pub pair_criteria: verdict::Criteria,
    pub gid_index: Option<u8>,
    pub conditions: crate::spec::Conditions,
    pub timeout: Duration,
    pub fanout: usize,
    pub html: Option<PathBuf>,
    /// `--csv FILE`: every pair's results, one row per test (see [`csv`]).
    pub csv: Option<PathBuf>,
    pub json: bool,
    /// Human output: only problems (unreachable endpoints, suspects) and the verdict.
    pub quiet: bool,
    /// `None`: all-pairs up to 64 endpoints, shift above.
    pub pattern: Option<Pattern>,
    /// Rounds of the first pass, at most.
    pub rounds: Option<usize>,
    /// Seed of `random:K` (`None`: a fresh one, printed).
    pub seed: Option<u64>,
    pub topology: Option<Topology>,
    /// Shift may pair endpoints of one leaf.
    pub intra_leaf: bool,
}

/// Runs the mesh, telling `progress` of each round.
pub fn run(run: MeshConfig, progress: &mut dyn Progress) -> Result<Outcome, Failure> {
    crate::sys::os::catch_termination();
    let n = run.specs.len();
    check_open_files(&run.specs)?;
    let mut hub = Hub::new(run.launch.clone());
    let mut agents: Vec<Agent> = run
        .specs
        .iter()
        .zip(&run.names)
        .map(|(spec, name)| Agent {
            link: hub.add(&spec.host, name.clone()),
            reached: false,
            settings: Vec::new(),
            rate_gbps: None,
            soft: false,
            error: None,
            second_chance: false,
            host: None,
        })
        .collect();
    reach(&run, &mut hub, &mut agents, (0..n).collect())?;
    progress.event(&Event::Reached { reached: agents.iter().filter(|a| a.error.is_none()).count(), total: n });
    if agents.iter().all(|a| a.error.is_some()) {
        hub.close_all();
        progress.done();
        // Nothing could run (exit 2); the document still names every endpoint and why.
        let unreachable: Vec<Unreachable> = agents
            .iter()
            .zip(&run.names)
            .filter_map(|(a, name)| a.error.clone().map(|error| Unreachable { endpoint: name.clone(), error }))
            .collect();
        let first = unreachable.first().map(|u| u.error.clone()).unwrap_or_default();
        let doc = MeshDoc {
            schema: "fabcheck.mesh.v1".into(),
            verdict: Verdict::Fail,
            endpoints: run.names.clone(),
            pairs: Vec::new(),
            suspects: Vec::new(),
            unreachable,
            pattern: None,
            timing: None,
        };
        if run.json {
            crate::report::print_json(&doc);
        } else {
            crate::report::print_human(&human(&doc, Counts::default(), &[], &Criteria::default(), run.quiet));
        }
        return Err(Failure::new(
            format!("no endpoint could be reached, so no pair could run (first: {first})"),
            "check that the hosts are up and reachable (ssh, or `fabcheck serve` for tcp://) and that fabcheck is installed there",
        ));
    }
    let leaves = leaves(&run, &agents);
    let leaf_of = leaves.as_ref().map(|l| l.of.as_slice());
    let pattern = run.pattern.unwrap_or(Pattern::default_for(n));
    let seed = matches!(pattern, Pattern::Random { .. }).then(|| run.seed.unwrap_or_else(pattern::fresh_seed));
    let order = pattern::leaf_order(leaf_of, n);
    let plan = pattern::rounds(pattern, &Layout { order: &order, leaf: leaf_of, intra_leaf: run.intra_leaf }, run.rounds, seed.unwrap_or(0));
    let pattern_doc =
        PatternDoc { name: pattern.name(), rounds: plan.len(), seed, leaves: leaves.as_ref().map(|l| l.of.iter().filter(|x| x.is_some()).count()) };
    tracing::debug!(pattern = %pattern_doc.name, rounds = plan.len(), pairs = plan.iter().map(Vec::len).sum::<usize>(), "mesh plan");
    let mut records = Records { spool: spool::Spool::new(), csv: run.csv.as_deref().map(CsvFile::create), bad: 0 };
    let mut counts = Counts::default();
    let mut first = Vec::new();
    let (rounds, before) = (plan.len(), records.bad);
    for (i, round) in plan.into_iter().enumerate() {
        for (record, measure) in run_round(&run, &mut hub, &mut agents, &round, false)? {
            records.push(record);
            counts.first += 1;
            first.push(measure);
        }
        progress.event(&Event::Round { stage: Stage::First, round: i + 1, rounds, bad: records.bad - before });
    }
    let expected = expected_rate(&agents);
    let criteria = Criteria { expected_bw_gbps: expected, bw_fraction: run.pair_criteria.bw_fraction, ..Criteria::default() };
    let mut retested = Vec::new();
    // An endpoint unreachable on the first pass gets one more chance, as its pairs do.
    for agent in agents.iter_mut().filter(|a| a.error.is_some()) {
        agent.second_chance = true;
    }
    let retest_rounds = schedule::retest_round(&analysis::to_retest(&first, &criteria));
    let (rounds, before) = (retest_rounds.len(), records.bad);
    for (i, round) in retest_rounds.into_iter().enumerate() {
        for (record, measure) in run_round(&run, &mut hub, &mut agents, &round, true)? {
            records.push(record);
            counts.retest += 1;
            retested.push(measure);
        }
        progress.event(&Event::Round { stage: Stage::Retest, round: i + 1, rounds, bad: records.bad - before });
    }
    // A pattern that skips pairs zooms in: each endpoint of a pair still bad against known-good
    // partners, so a node and a link are told apart as with every pair measured.
    let mut zoomed = Vec::new();
    if !pattern.is_complete() {
        let (still_bad, good) = analysis::zoom_input(n, &first, &retested, &criteria);
        // When most pairs are bad the cause is cluster-wide, not something to zoom into. The
        // zoom-in costs at most ZOOM_PARTNERS pairs per endpoint of a still-bad pair.
        if !still_bad.is_empty() && still_bad.len() * 2 <= first.len() {
            let measured: BTreeSet<(usize, usize)> = first.iter().map(|m| (m.a.min(m.b), m.a.max(m.b))).collect();
            let pairs = pattern::zoom_pairs(n, &still_bad, &good, leaf_of, &measured);
            let zoom_rounds = schedule::retest_round(&pairs);
            let (rounds, before) = (zoom_rounds.len(), records.bad);
            for (i, round) in zoom_rounds.into_iter().enumerate() {
                for (mut record, measure) in run_round(&run, &mut hub, &mut agents, &round, false)? {
                    record.zoom = true;
                    records.push(record);
                    counts.zoom += 1;
                    zoomed.push(measure);
                }
                progress.event(&Event::Round { stage: Stage::Zoom, round: i + 1, rounds, bad: records.bad - before });
            }
        }
    }
    let analysis_start = Instant::now();
    let mut suspects = analysis::analyse_with(&run.names, &first, &retested, &zoomed, &criteria, leaves.as_ref());
    let drift: Vec<(String, Vec<(String, String)>)> =
        agents.iter().zip(&run.names).filter(|(a, _)| a.error.is_none()).map(|(a, name)| (name.clone(), a.settings.clone())).collect();
    suspects.extend(analysis::config_drift(&drift));
    let analysis_ms = analysis_start.elapsed().as_secs_f64() * 1e3;
    tracing::debug!(analysis_ms, "mesh analysis");
    let unreachable: Vec<Unreachable> =
        agents.iter().zip(&run.names).filter_map(|(a, name)| a.error.clone().map(|error| Unreachable { endpoint: name.clone(), error })).collect();
    // The node of each endpoint, for the heat map's per-node view: the host its agent reported,
    // else the host it was given as.
    let nodes: Vec<String> = agents.iter().zip(&run.specs).map(|(a, spec)| a.host.clone().unwrap_or_else(|| spec.host.to_string())).collect();
    hub.close_all();
    // Failed and slow pairs were re-tested and explained as node, link or flaky suspects.
    let verdict = if suspects.is_empty() && unreachable.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let doc = MeshDoc {
        schema: "fabcheck.mesh.v1".into(),
        verdict,
        endpoints: run.names.clone(),
        pairs: Vec::new(),
        suspects,
        unreachable,
        pattern: Some(pattern_doc),
        timing: Some(Timing { analysis_ms }),
    };
    // First pass, zoom-in, then retests: a later measure of a pair stands for it.
    let measured = || -> Vec<PairMeasure> { first.iter().chain(&zoomed).chain(&retested).cloned().collect() };
    // The results first: a side output that cannot be written must not throw the run away.
    let Records { spool, csv, .. } = records;
    progress.done();
    if run.json {
        print_json(&doc, spool.into_pairs());
    } else {
        crate::report::print_human(&human(&doc, counts, &measured(), &criteria, run.quiet));
    }
    let pass = verdict == Verdict::Pass;
    if let (Some(file), Some(path)) = (csv, &run.csv) {
        if let Err(e) = file.finish() {
            pair::side_file_failed(path, "the CSV", "--csv", &e, pass)?;
        }
    }
    if let Some(path) = &run.html {
        let params = params(&run, doc.pattern.as_ref());
        let measured = measured();
        let (mb, ml) = analysis::medians(&first);
        let cells = cells(&measured, &criteria, mb, ml);
        let bw = cells.iter().any(|c| c.bw_gbps.is_some()).then(|| bw_scale(&criteria, mb)).flatten();
        let lat = ml.filter(|_| cells.iter().any(|c| c.lat_us.is_some())).map(|m| heatmap::Scale {
            reference: m,
            basis: "the median pair's latency".into(),
            pass_share: 1.0 / criteria.lat_outlier_factor,
            higher_is_better: false,
            unit: "us",
        });
        let title = format!("fabcheck mesh: {n} endpoints");
        let page = heatmap::Page {
            title: &title,
            verdict,
            params: &params,
            endpoints: &run.names,
            nodes: &nodes,
            cells: &cells,
            bw,
            lat,
            suspects: &doc.suspects,
        };
        pair::side_file(path, "the heat map", "--html", &heatmap::html(&page), pass)?;
    }
    Ok(if pass { Outcome::Pass } else { Outcome::Fail })
}

/// The pair records as they come: into the spool (for the JSON), the `--csv` file, and the
/// count of failed pair records progress reports (per pass, by difference).
struct Records {
    spool: spool::Spool,
    csv: Option<CsvFile>,
    bad: usize,
}

impl Records {
    fn push(&mut self, record: PairRecord) {
        self.bad += usize::from(record.verdict != Verdict::Pass);
        if let Some(csv) = &mut self.csv {
            csv.push(&record);
        }
        self.spool.push(record);
    }
}

/// `--csv FILE`, written as the pairs come (a large mesh's rows never sit in memory) to a
/// temporary file beside FILE, renamed over it at the end; removed if the run ends early.
struct CsvFile {
    path: PathBuf,
    tmp: PathBuf,
    out: Result<std::io::BufWriter<std::fs::File>, String>,
    done: bool,
}

impl CsvFile {
    fn create(path: &std::path::Path) -> CsvFile {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "mesh.csv".into());
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let out = std::fs::File::create(&tmp).map(|f| std::io::BufWriter::with_capacity(1 << 16, f)).map_err(|e| e.to_string());
        let mut file = CsvFile { path: path.to_path_buf(), tmp, out, done: false };
        file.write(&csv::header());
        file
    }

    fn write(&mut self, text: &str) {
        if let Ok(w) = &mut self.out {
            if let Err(e) = w.write_all(text.as_bytes()) {
                self.out = Err(e.to_string());
            }
        }
    }

    fn push(&mut self, record: &PairRecord) {
        self.write(&csv::rows(record));
    }

    /// Flushes and renames the file into place.
    fn finish(mut self) -> Result<(), String> {
        let out = std::mem::replace(&mut self.out, Err(String::new()))?;
        let file = out.into_inner().map_err(|e| e.error().to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| e.to_string())?;
        self.done = true;
        Ok(())
    }
}

impl Drop for CsvFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The run's parameters as the heat map shows them.
fn params(run: &MeshConfig, pattern: Option<&PatternDoc>) -> Vec<(String, String)> {
    let mut tests: Vec<&PlannedTest> = Vec::new();
    for t in &run.plan {
        if !tests.iter().any(|x| x.spec.test == t.spec.test) {
            tests.push(t);
        }
    }
    // One figure for all tests when they agree, else each test's.
    let per_test = |f: &dyn Fn(&PlannedTest) -> String| -> String {
        let values: Vec<String> = tests.iter().map(|t| f(t)).collect();
        if values.windows(2).all(|w| w[0] == w[1]) {
            values.first().cloned().unwrap_or_default()
        } else {
            tests.iter().zip(&values).map(|(t, v)| format!("{v} ({})", t.spec.test.name())).collect::<Vec<_>>().join(", ")
        }
    };
    let mut directions: Vec<&str> = Vec::new();
    for t in &run.plan {
        if !t.spec.test.is_latency() && !directions.contains(&t.direction.name()) {
            directions.push(t.direction.name());
        }
    }
    let mut out = vec![
        ("tests".to_string(), tests.iter().map(|t| t.spec.test.name()).collect::<Vec<_>>().join(", ")),
        ("size".to_string(), per_test(&|t| format!("{} B", t.spec.size))),
        (
            "iterations".to_string(),
            per_test(&|t| t.spec.duration_ms.map_or_else(|| t.spec.iters.to_string(), |ms| format!("{} s (duration)", ms as f64 / 1000.0))),
        ),
        ("QPs".to_string(), per_test(&|t| t.spec.qps.to_string())),
    ];
    if !directions.is_empty() {
        out.push(("bandwidth directions".into(), directions.join(", ")));
    }
    if let Some(p) = pattern {
        let mut text = format!("{}, {} rounds", p.name, p.rounds);
        if let Some(seed) = p.seed {
            text.push_str(&format!(", seed {seed}"));
        }
        if let Some(l) = p.leaves {
            text.push_str(&format!(", {l} endpoints placed on leaves"));
        }
        out.push(("pattern".into(), text));
    }
    out.push(("threshold".into(), format!("{}% of the expected rate", units::sig3(100.0 * run.pair_criteria.bw_fraction))));
    out
}

/// What the bandwidth colours are measured against: the expected capacity when known, else
/// the median pair (as the analysis judges).
fn bw_scale(c: &Criteria, median_bw: Option<f64>) -> Option<heatmap::Scale> {
    let (reference, basis, pass_share) = match (c.expected_bw_gbps, median_bw) {
        (Some(e), _) => (e, "the expected capacity (the slowest endpoint's link, or PCIe where smaller)", c.bw_fraction),
        (None, Some(m)) => (m, "the median pair (no link rate is known: Soft-RoCE, or a port that reports none)", c.outlier_fraction),
        (None, None) => return None,
    };
    Some(heatmap::Scale { reference, basis: basis.into(), pass_share, higher_is_better: true, unit: "Gb/s" })
}

/// Each measured pair once, its latest measure standing for it (first pass, zoom-in, then
/// retests), judged as the analysis judges it.
fn cells(measured: &[PairMeasure], c: &Criteria, median_bw: Option<f64>, median_lat: Option<f64>) -> Vec<heatmap::Cell> {
    let mut at: HashMap<(usize, usize), usize> = HashMap::with_capacity(measured.len());
    let mut out: Vec<heatmap::Cell> = Vec::with_capacity(measured.len());
    for m in measured {
        let cell = heatmap::Cell {
            a: m.a,
            b: m.b,
            bw_gbps: m.bw_gbps,
            lat_us: m.lat_us,
            failed: m.failed,
            bad: analysis::is_bad(m, c, median_bw, median_lat),
        };
        match at.get(&(m.a.min(m.b), m.a.max(m.b))) {
            Some(&i) => out[i] = cell,
            None => {
                at.insert((m.a.min(m.b), m.a.max(m.b)), out.len());
                out.push(cell);
            }
        }
    }
    out
}

/// Pair records by pass.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    first: usize,
    zoom: usize,
    retest: usize,
}

/// The document as `print_json` would print it (pretty, the same keys in the same order), with
/// the pair records streamed from the spool rather than held in memory.
fn print_json(doc: &MeshDoc, pairs: spool::Pairs) {
    #[derive(Serialize)]
    struct Out<'a> {
        schema: &'a str,
        verdict: Verdict,
        endpoints: &'a [String],
        pairs: spool::Pairs,
        suspects: &'a [Suspect],
        #[serde(skip_serializing_if = "<[Unreachable]>::is_empty")]
        unreachable: &'a [Unreachable],
        #[serde(skip_serializing_if = "Option::is_none")]
        pattern: Option<&'a PatternDoc>,
        #[serde(skip_serializing_if = "Option::is_none")]
        timing: Option<&'a Timing>,
    }
    let out = Out {
        schema: &doc.schema,
        verdict: doc.verdict,
        endpoints: &doc.endpoints,
        pairs,
        suspects: &doc.suspects,
        unreachable: &doc.unreachable,
        pattern: doc.pattern.as_ref(),
        timing: doc.timing.as_ref(),
    };
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = serde_json::to_writer_pretty(&mut w, &out).map_err(std::io::Error::from).and_then(|()| writeln!(w)).and_then(|()| w.flush());
    if let Err(e) = written {
        eprintln!("fabcheck: cannot write the result: {e}");
    }
}

/// Endpoint names, with `#2`, `#3`... on repeats (`localhost/rxe0` given four times is four
/// endpoints), so suspects and matrix rows name one endpoint each.
pub fn unique_names(specs: &[EndpointSpec]) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(specs.len());
    specs
        .iter()
        .map(|s| {
            let name = s.to_string();
            let nth = seen.entry(name.clone()).or_insert(0);
            *nth += 1;
            if *nth > 1 {
                format!("{name}#{nth}")
            } else {
                name
            }
        })
        .collect()
}

/// Each endpoint's leaf switch, by the host name its agent reported (else the host it was
/// given as), when a topology is known and it names at least one of them.
fn leaves(run: &MeshConfig, agents: &[Agent]) -> Option<analysis::Leaves> {
    let topo = run.topology.as_ref()?;
    let of: Vec<Option<usize>> = agents
        .iter()
        .zip(&run.specs)
        .map(|(a, spec)| {
            let given = match &spec.host {
                HostSpec::Tcp { host, .. } => host.clone(),
                other => other.to_string().rsplit('@').next().unwrap_or_default().to_string(),
            };
            a.host.as_deref().and_then(|h| topo.leaf_of(h)).or_else(|| topo.leaf_of(&given))
        })
        .collect();
    if of.iter().all(Option::is_none) {
        tracing::warn!("--topology names none of the mesh's hosts: running without it");
        return None;
    }
    let names = (0..topo.leaves()).map(|l| topo.leaf_name(l).to_string()).collect();
    let uplinks = (0..topo.leaves()).map(|l| topo.uplinks(l).to_vec()).collect();
    Some(analysis::Leaves { of, names, uplinks })
}

/// A mesh holds about three descriptors per child agent (ssh or local: its pipes) and one
/// per socket: the open-files limit is raised to fit, or the run refused up front.
fn check_open_files(specs: &[EndpointSpec]) -> Result<(), Failure> {
    let children = specs.iter().filter(|s| !matches!(s.host, HostSpec::Tcp { .. })).count() as u64;
    let need = children * 3 + (specs.len() as u64 - children) + 64;
    let limit = crate::sys::io::raise_open_files(need);
    if limit < need {
        return Err(Failure::new(
            format!("a mesh of {} endpoints needs about {need} open files; this process may open {limit}", specs.len()),
            "raise the hard limit (`ulimit -Hn`, limits.conf or the service's LimitNOFILE), or run `fabcheck serve` on the nodes and mesh tcp:// endpoints",
        ));
    }
    Ok(())
}

/// Reaches the agents of `which`, `fanout` handshakes at a time, each saying hello and
/// sending its inventory. An endpoint that cannot be reached is recorded, not fatal: its
/// pairs fail.
fn reach(run: &MeshConfig, hub: &mut Hub, agents: &mut [Agent], which: Vec<usize>) -> Result<(), Failure> {
    let links: Vec<LinkId> = which.iter().map(|&i| agents[i].link).collect();
    let labels: Vec<String> = which.iter().map(|&i| run.names[i].clone()).collect();
    let tokens: Vec<Option<String>> = which.iter().map(|&i| token_for(&run.specs[i].host, &run.launch.token)).collect();
    for (&i, reach) in which.iter().zip(reach_all(hub, &links, &labels, &tokens, true, run.fanout)?) {
        let agent = &mut agents[i];
        agent.second_chance = false;
        match reach.failure {
            Some(f) => agent.error = Some(Failure::from(f).cause),
            None => {
                agent.reached = true;
                agent.error = None;
                agent.host = Some(reach.host.clone()).filter(|h| !h.is_empty());
                if let Some(inventory) = &reach.inventory {
                    read_inventory(agent, &run.specs[i], inventory);
                }
            }
        }
    }
    Ok(())
}

/// The settings compared across endpoints (drift), and the rate pairs are judged against.
fn read_inventory(agent: &mut Agent, spec: &EndpointSpec, inventory: &Inventory) {
    let port = inventory
        .ports()
        .filter(|(d, _)| spec.device.as_deref().is_none_or(|want| d.name == want))
        .filter(|(_, p)| spec.port.is_none_or(|want| p.port == want))
        .find(|(_, p)| p.state == crate::probe::decode::PortState::Active);
    if let Some((d, p)) = port {
        agent.soft = d.ca_type.starts_with("Soft-");
        // What this endpoint can carry: its link's rate, or its PCIe link's if smaller.
        let pcie = d.pci.as_ref().and_then(|pci| pci.usable_gbps);
        agent.rate_gbps = p.rate_gbps.map(|r| crate::probe::capacity::capacity(r, pcie).gbps);
        agent.settings = vec![
            ("ca_type".into(), d.ca_type.clone()),
            ("fw_ver".into(), d.fw_ver.clone()),
            ("link_layer".into(), p.link_layer.to_string()),
            ("active_mtu".into(), p.active_mtu.map_or("?".into(), |m| m.to_string())),
            ("rate_gbps".into(), p.rate_gbps.map_or("?".into(), gbps)),
        ];
    }
}

/// The rate every pair should reach: the slowest endpoint's, unless any is Soft-RoCE (whose
/// rate is synthesized) or unknown; then pairs are compared with the cluster's median.
fn expected_rate(agents: &[Agent]) -> Option<f64> {
    let live: Vec<&Agent> = agents.iter().filter(|a| a.error.is_none()).collect();
    if live.is_empty() || live.iter().any(|a| a.soft || a.rate_gbps.is_none()) {
        return None;
    }
    live.iter().filter_map(|a| a.rate_gbps).reduce(f64::min)
}

/// Runs one round: every pair at once, each its own test sequence on the one hub.
fn run_round(
    run: &MeshConfig,
    hub: &mut Hub,
    agents: &mut [Agent],
    round: &[(usize, usize)],
    retest: bool,
) -> Result<Vec<(PairRecord, PairMeasure)>, Failure> {
    // Agents whose channel an earlier pair discarded are reached again (a restarted node may
    // come back).
    let mut again: Vec<usize> =
        round.iter().flat_map(|&(a, b)| [a, b]).filter(|&i| !agents[i].reached && (agents[i].error.is_none() || agents[i].second_chance)).collect();
    again.sort_unstable();
    again.dedup();
    if !again.is_empty() {
        reach(run, hub, agents, again)?;
    }
    let mut out = Vec::new();
    let mut jobs = Vec::new();
    let mut pairs = Vec::new();
    for &(a, b) in round {
        if agents[a].reached && agents[b].reached {
            let targets = [a, b].map(|i| pair::target(&run.specs[i], run.gid_index, None, run.conditions));
            let labels = [run.names[a].clone(), run.names[b].clone()];
            let conversation = PairSequence::new(run.plan.clone(), targets, labels, run.timeout);
            jobs.push(Job { links: vec![agents[a].link, agents[b].link], conversation });
            pairs.push((a, b));
        } else {
            // Causes name their endpoint already ("cannot reach n3: ..."); others get it added.
            let why = [a, b]
                .iter()
                .filter_map(|&i| {
                    agents[i].error.as_ref().map(|e| if e.contains(&run.names[i]) { e.clone() } else { format!("{}: {e}", run.names[i]) })
                })
                .collect::<Vec<_>>()
                .join("; ");
            let record = PairRecord {
                a: run.names[a].clone(),
                b: run.names[b].clone(),
                verdict: Verdict::Fail,
                results: Vec::new(),
                error: Some(why),
                retest,
                zoom: false,
            };
            out.push((record, PairMeasure { a, b, bw_gbps: None, lat_us: None, failed: true }));
        }
    }
    drive(hub, &mut jobs, usize::MAX)?;
    for ((a, b), job) in pairs.into_iter().zip(jobs) {
        let done = job.conversation;
        for (i, discarded) in [a, b].into_iter().zip(done.discarded) {
            if discarded {
                agents[i].reached = false;
            }
        }
        out.push(record(run, a, b, done, retest));
    }
    Ok(out)
}

/// A finished pair's record and headline figures.
fn record(run: &MeshConfig, a: usize, b: usize, done: PairSequence, retest: bool) -> (PairRecord, PairMeasure) {
    let sides = done.endpoints.as_ref().map(|(ea, eb)| (pair::side(ea), pair::side(eb)));
    let error = done.could_not_run.map(|f| format!("{} ({})", f.cause, f.remedy));
    let results = done.results;
    let verdict = match (&sides, &error) {
        (Some((sa, sb)), None) => verdict::judge(sa, sb, &results, &run.pair_criteria).0,
        _ => Verdict::Fail,
    };
    let measure = measure(a, b, &results, error.is_some() || results.iter().any(|r| r.error.is_some()));
    (PairRecord { a: run.names[a].clone(), b: run.names[b].clone(), verdict, results, error, retest, zoom: false }, measure)
}

/// The headline figures of a pair: the slowest direction's bandwidth at the largest size, and
/// the first latency test's p50.
fn measure(a: usize, b: usize, results: &[TestResult], failed: bool) -> PairMeasure {
    let largest = results.iter().filter(|r| r.bw_gbps.is_some()).map(|r| r.size).max();
    let bw = results.iter().filter(|r| Some(r.size) == largest && r.direction != Direction::Bidi).filter_map(|r| r.bw_gbps).reduce(f64::min);
    let lat = results.iter().find_map(|r| r.lat_us.map(|l| l.p50));
    PairMeasure { a, b, bw_gbps: bw, lat_us: lat, failed }
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
fn human(doc: &MeshDoc, counts: Counts, measured: &[PairMeasure], c: &Criteria, quiet: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if quiet {
        // Only problems and the verdict.
    } else if doc.endpoints.len() <= MATRIX_MAX {
        matrix_text(&mut out, doc, &bw_matrix(doc.endpoints.len(), measured));
    } else {
        summary_text(&mut out, doc, measured, c);
    }
    for u in &doc.unreachable {
        let _ = writeln!(out, "\nUNREACHABLE {}: {}", u.endpoint, u.error);
    }
    if !doc.suspects.is_empty() {
        let _ = writeln!(out);
    }
    for s in &doc.suspects {
        let _ = writeln!(out, "SUSPECT {:<6} {}  {}", format!("{:?}", s.kind).to_lowercase(), s.subject, s.reason);
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

fn matrix_text(out: &mut String, doc: &MeshDoc, matrix: &[Vec<Option<f64>>]) {
    use std::fmt::Write;
    let width = doc.endpoints.iter().map(|e| e.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(out, "bandwidth (Gb/s), slowest direction, largest size");
    let _ = write!(out, "{:width$}", "");
    for j in 0..doc.endpoints.len() {
        let _ = write!(out, " {:>8}", format!("[{j}]"));
    }
    let _ = writeln!(out);
    for (i, name) in doc.endpoints.iter().enumerate() {
        let _ = write!(out, "{name:width$}");
        for (j, cell) in matrix[i].iter().enumerate() {
            let text = if i == j { "-".to_string() } else { cell.map_or("fail".into(), |v| format!("{v:.3}")) };
            let _ = write!(out, " {text:>8}");
        }
        let _ = writeln!(out, "  [{i}]");
    }
}

/// Per-endpoint summaries (the endpoints with the most bad pairs) and the worst pairs.
fn summary_text(out: &mut String, doc: &MeshDoc, measured: &[PairMeasure], c: &Criteria) {
    use std::fmt::Write;
    let n = doc.endpoints.len();
    let (mb, ml) = analysis::medians(measured);
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
        "{n} endpoints: {clean} with every pair good; median {} Gb/s, {} us",
        mb.map_or("-".into(), |v| format!("{v:.1}")),
        ml.map_or("-".into(), |v| format!("{v:.2}"))
    );
    let mut order: Vec<usize> = (0..n).filter(|&e| per[e].1 > 0).collect();
    order.sort_by(|&x, &y| per[y].1.cmp(&per[x].1).then(per[x].2.total_cmp(&per[y].2)).then(x.cmp(&y)));
    if !order.is_empty() {
        let _ = writeln!(out, "\nendpoints with bad pairs ({}, worst {} shown; --json has all):", order.len(), order.len().min(SUMMARY_LINES));
    }
    let width = order.iter().take(SUMMARY_LINES).map(|&e| doc.endpoints[e].len()).max().unwrap_or(4);
    for &e in order.iter().take(SUMMARY_LINES) {
        let (pairs, bad, slowest) = per[e];
        let slowest = if slowest.is_finite() { format!("{slowest:.1} Gb/s") } else { "-".into() };
        let _ = writeln!(out, "  {:width$}  {bad:>4} of {pairs:>4} pairs bad, slowest {slowest}", doc.endpoints[e]);
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
        let _ = writeln!(out, "  {}<->{}  {what}", doc.endpoints[m.a], doc.endpoints[m.b]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(a: usize, b: usize, bw: f64) -> PairMeasure {
        PairMeasure { a, b, bw_gbps: Some(bw), lat_us: None, failed: false }
    }

    #[test]
    fn a_retest_stands_for_its_pair_on_the_heat_map() {
        let c = Criteria { expected_bw_gbps: Some(200.0), ..Criteria::default() };
        let cells = cells(&[m(0, 1, 100.0), m(1, 2, 190.0), m(1, 0, 190.0)], &c, None, None);
        assert_eq!(cells.len(), 2);
        assert_eq!((cells[0].a, cells[0].b, cells[0].bw_gbps, cells[0].bad), (1, 0, Some(190.0), false));
        assert!(!cells[1].bad);
        assert!(cells_bad(&c));
        let scale = bw_scale(&c, Some(150.0)).unwrap();
        assert_eq!((scale.reference, scale.pass_share), (200.0, 0.9));
        let scale = bw_scale(&Criteria::default(), Some(150.0)).unwrap();
        assert_eq!((scale.reference, scale.pass_share), (150.0, 0.8));
        assert!(bw_scale(&Criteria::default(), None).is_none());
    }

    fn cells_bad(c: &Criteria) -> bool {
        cells(&[m(0, 1, 170.0)], c, None, None)[0].bad
    }

    #[test]
    fn unique_names_number_repeats() {
        let specs: Vec<EndpointSpec> = ["a/rxe0", "a/rxe0", "b", "a/rxe0"].iter().map(|t| crate::control::endpoint::parse(t).unwrap()).collect();
        assert_eq!(unique_names(&specs), ["a/rxe0", "a/rxe0#2", "b", "a/rxe0#3"]);
    }
}
