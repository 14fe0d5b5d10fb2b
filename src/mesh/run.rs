//! Running a mesh: reach every agent, run the rounds of the first pass, the retests and the
//! zoom-in (one round runner for all three), then judge. Everything runs on one thread: one hub
//! polls every agent's channel, agents are reached `--fanout` at a time, and each pair of a round
//! is `pair`'s own test sequence, a state machine the hub's events drive. Nothing here writes
//! the result: the run returns a [`MeshRun`] and `report::output` delivers it.

use super::analysis::{self, Criteria, PairMeasure, Suspect};
use super::doc::{MeshDoc, PairRecord, PatternDoc, Timing, Unreachable};
use super::pattern::{self, Layout, Pattern};
use super::report::MeshReport;
use super::text::Counts;
use super::{csv, page, schedule, spool, MeshConfig};
use crate::control::agents::{lend, Agents};
use crate::control::drive::Job;
use crate::control::endpoint::{EndpointSpec, HostSpec};
use crate::control::hub::LinkId;
use crate::error::Failure;
use crate::outcome::loss::Unreached;
use crate::outcome::Verdict;
use crate::pair::sequence::PairSequence;
use crate::pair::{self, verdict};
use crate::probe::Inventory;
use crate::progress::{Event, Progress, Stage};
use crate::report::output::{SideFile, StreamedFile};
use crate::units::rate as gbps;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// A finished mesh: its result, the side files it asked for, and, when no endpoint could be
/// reached, why nothing ran (exit 2, after the document that names every endpoint and why).
pub struct MeshRun {
    pub report: MeshReport,
    /// `--csv`: written as the pairs came, renamed into place once the results are out.
    pub csv: Option<StreamedFile>,
    /// `--html`.
    pub html: Option<SideFile>,
    pub could_not_run: Option<Failure>,
    /// No test could run (no agent had a device, every pair failed before a result): the
    /// document is not delivered, only the one cause of `could_not_run` (exit 2, every format).
    pub nothing_ran: bool,
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
    /// Could not be reached, and why (typed until the document says it): its pairs fail
    /// without running.
    error: Option<Unreached>,
    /// Unreachable, but to be tried once more before the re-tests.
    second_chance: bool,
    /// The host name its agent reported (matched against `--topology`).
    host: Option<String>,
    /// `--rails`: its host could not say its rails, so it is never reached (which port?).
    rails_unknown: bool,
}

/// Runs the mesh, telling `progress` of each round.
pub fn run(run: MeshConfig, fleet: &mut dyn Agents, progress: &mut dyn Progress) -> Result<MeshRun, Failure> {
    // `--rails`: each host becomes one endpoint per rail, before anything else is reached; the
    // endpoints of a host that could not say its rails are unreachable from the start.
    let mut lost = Vec::new();
    let run = match &run.rails {
        Some(spec) => {
            let e = super::rails::expand(&run, spec, fleet)?;
            lost = e.lost;
            MeshConfig { specs: e.specs, names: e.names, planes: Some(e.planes), ..run }
        }
        None => run,
    };
    let n = run.specs.len();
    // The pattern is laid out over the hosts; with `--rails` each host pair runs every rail.
    let hosts = run.planes.as_ref().map_or(n, |p| p.hosts.len());
    check_open_files(&run.specs)?;
    let mut agents: Vec<Agent> = run
        .specs
        .iter()
        .zip(&run.names)
        .map(|(spec, name)| Agent {
            link: fleet.add(&spec.host, name.clone()),
            reached: false,
            settings: Vec::new(),
            rate_gbps: None,
            soft: false,
            error: None,
            second_chance: false,
            host: None,
            rails_unknown: false,
        })
        .collect();
    for (agent, why) in agents.iter_mut().zip(lost) {
        agent.rails_unknown = why.is_some();
        agent.error = why;
    }
    let reachable: Vec<usize> = (0..n).filter(|&i| !agents[i].rails_unknown).collect();
    reach(&run, fleet, &mut agents, reachable)?;
    progress.event(&Event::Reached { reached: agents.iter().filter(|a| a.error.is_none()).count(), total: n });
    if agents.iter().all(|a| a.error.is_some()) {
        fleet.close_all();
        progress.done();
        return Ok(nothing_reached(&run, &agents));
    }
    let leaves = leaves(&run, &agents);
    let leaf_of = leaves.as_ref().map(|l| l.of.as_slice());
    // The pattern's layout is over hosts: with `--rails` a host sits on as many leaves as it
    // has rails, so it is laid out without them (the leaves serve the zoom-in and analysis).
    let host_leaf = if run.planes.is_some() { None } else { leaf_of };
    let pattern = run.pattern.unwrap_or(Pattern::default_for(hosts));
    let seed = matches!(pattern, Pattern::Random { .. }).then(|| run.seed.unwrap_or_else(pattern::fresh_seed));
    let order = pattern::leaf_order(host_leaf, hosts);
    let mut plan = pattern::rounds(pattern, &Layout { order: &order, leaf: host_leaf, intra_leaf: run.intra_leaf }, run.rounds, seed.unwrap_or(0));
    if let Some(planes) = &run.planes {
        plan = plan.iter().map(|round| planes.expand_round(round)).collect();
    }
    let pattern_doc =
        PatternDoc { name: pattern.name(), rounds: plan.len(), seed, leaves: leaves.as_ref().map(|l| l.of.iter().filter(|x| x.is_some()).count()) };
    tracing::debug!(pattern = %pattern_doc.name, rounds = plan.len(), pairs = plan.iter().map(Vec::len).sum::<usize>(), "mesh plan");
    let csv = run.csv.as_deref().map(|path| {
        let mut file = StreamedFile::create(path, "the CSV", "--csv");
        file.write(&csv::header_for(run.planes.is_some()));
        file
    });
    let mut records = Records { spool: spool::Spool::new(), csv, bad: 0, pair_suspects: BTreeMap::new(), ran: 0, first_error: None };
    let live = open_live(&run)?;
    let mut passes = Passes { run: &run, fleet, agents: &mut agents, records: &mut records, progress, interrupted: false, live };
    // The first pass's rounds, for what ran beside a pair (route collisions).
    let first_rounds = leaves.as_ref().map(|_| plan.clone());
    let first = passes.run(plan, Stage::First)?;
    // With `--topology`, latency against the pairs of the same hop count (inside a leaf, across
    // the spine), from the first pass as every median.
    let hops = leaf_of.map(|l| analysis::HopMedians::from_first(l, &first));
    let criteria = Criteria { capacity_gbps: capacities(passes.agents), bw_fraction: run.pair_criteria.bw_fraction, hops, ..Criteria::default() };
    // An endpoint unreachable on the first pass gets one more chance, as its pairs do.
    for agent in passes.agents.iter_mut().filter(|a| a.error.is_some() && !a.rails_unknown) {
        agent.second_chance = true;
    }
    // Interrupted (SIGINT, SIGTERM, SIGHUP): no more passes; what was measured is reported.
    let retested =
        if passes.interrupted { Vec::new() } else { passes.run(schedule::retest_round(&analysis::to_retest(&first, &criteria)), Stage::Retest)? };
    // A pattern that skips pairs zooms in: each endpoint of a pair still bad against known-good
    // partners, so a node and a link are told apart as with every pair measured.
    let mut zoomed = Vec::new();
    if !pattern.is_complete() && !passes.interrupted {
        let (still_bad, good) = analysis::zoom_input(n, &first, &retested, &criteria);
        // When most pairs are bad the cause is cluster-wide, not something to zoom into. The
        // zoom-in costs at most ZOOM_PARTNERS pairs per endpoint of a still-bad pair.
        if !still_bad.is_empty() && still_bad.len() * 2 <= first.len() {
            let measured: BTreeSet<(usize, usize)> = first.iter().map(|m| (m.a.min(m.b), m.a.max(m.b))).collect();
            let mut pairs = pattern::zoom_pairs(n, &still_bad, &good, leaf_of, &measured);
            if let Some(planes) = &run.planes {
                pairs.retain(|&(a, b)| planes.same_rail(a, b));
            }
            zoomed = passes.run(schedule::retest_round(&pairs), Stage::Zoom)?;
        }
    }
    let interrupted = passes.interrupted;
    let counts = Counts { first: first.len(), zoom: zoomed.len(), retest: retested.len(), rails: run.planes.is_some() };
    let analysis_start = Instant::now();
    let mut suspects = analysis::analyse_with(&run.names, &first, &retested, &zoomed, &criteria, leaves.as_ref());
    if let (Some(leaves), Some(rounds)) = (&leaves, &first_rounds) {
        analysis::name_route_collisions(&mut suspects, &run.names, rounds, leaves);
    }
    let drift: Vec<(String, Vec<(String, String)>)> =
        agents.iter().zip(&run.names).filter(|(a, _)| a.error.is_none()).map(|(a, name)| (name.clone(), a.settings.clone())).collect();
    suspects.extend(analysis::config_drift(&drift));
    let slow = analysis::slow_ports(&run.names, &criteria, &suspects);
    suspects.extend(slow);
    suspects.extend(std::mem::take(&mut records.pair_suspects).into_values());
    if let Some(planes) = &run.planes {
        suspects = super::rails::fold(suspects, &run.names, planes);
    }
    let analysis_ms = analysis_start.elapsed().as_secs_f64() * 1e3;
    tracing::debug!(analysis_ms, "mesh analysis");
    // The node of each endpoint, for the heat map's per-node view: the host its agent reported,
    // else the host it was given as.
    let nodes: Vec<String> = agents.iter().zip(&run.specs).map(|(a, spec)| a.host.clone().unwrap_or_else(|| spec.host.to_string())).collect();
    let unreachable = unreachable(&run, &agents);
    fleet.close_all();
    // Failed and slow pairs were re-tested and explained as node, link or flaky suspects.
    // Only errors fail the mesh: a flaky link (bad once, good on retest) is a warning, which
    // `--fail-on warning` turns into a failure (`MeshReport::has_warning`).
    // A run cut short never passes: what it did not measure is unknown.
    let verdict = if !interrupted && !suspects.iter().any(Suspect::is_error) && unreachable.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let doc = MeshDoc {
        schema: "fabcheck.mesh.v1".into(),
        verdict,
        endpoints: run.names.clone(),
        hosts: run.names.iter().zip(&agents).filter_map(|(name, a)| Some((name.clone(), a.host.clone()?))).collect(),
        pairs: Vec::new(),
        suspects,
        unreachable,
        pattern: Some(pattern_doc),
        timing: Some(Timing { analysis_ms }),
    };
    // First pass, zoom-in, then retests: a later measure of a pair stands for it.
    let measured: Vec<PairMeasure> = first.iter().chain(&zoomed).chain(&retested).cloned().collect();
    progress.done();
    let html = run.html.as_ref().map(|path| SideFile {
        path: path.clone(),
        what: "the heat map",
        flag: "--html",
        bytes: page::heat_map(&run, &doc, &nodes, &first, &measured, &criteria).into_bytes(),
    });
    let Records { spool, csv, ran, first_error, .. } = records;
    let report = MeshReport { doc, pairs: spool.into_pairs(), counts, measured, criteria, quiet: run.quiet };
    let pairs = counts.first + counts.retest + counts.zoom;
    if ran == 0 && pairs > 0 && !interrupted {
        return Ok(MeshRun {
            report,
            csv: None,
            html: None,
            could_not_run: Some(super::idle::no_pair(counts.first, first_error.as_deref())),
            nothing_ran: true,
        });
    }
    let could_not_run = interrupted.then(|| {
        Failure::new(
            format!("interrupted after {} of the pairs were measured: the report above covers those", counts.first + counts.retest + counts.zoom),
            "run the mesh again (under nohup, tmux or a batch job, so a closed login session does not stop it)",
        )
    });
    Ok(MeshRun { report, csv, html, could_not_run, nothing_ran: false })
}

/// No endpoint could be reached: nothing ran (exit 2), and the document still names every
/// endpoint and why.
fn nothing_reached(run: &MeshConfig, agents: &[Agent]) -> MeshRun {
    let unreachable = unreachable(run, agents);
    let first = unreachable.first().map(|u| u.error.clone()).unwrap_or_default();
    let doc = MeshDoc {
        schema: "fabcheck.mesh.v1".into(),
        verdict: Verdict::Fail,
        endpoints: run.names.clone(),
        hosts: Default::default(),
        pairs: Vec::new(),
        suspects: Vec::new(),
        unreachable,
        pattern: None,
        timing: None,
    };
    let report = MeshReport {
        doc,
        pairs: spool::Pairs::Memory(Vec::new()),
        counts: Counts::default(),
        measured: Vec::new(),
        criteria: Criteria::default(),
        quiet: run.quiet,
    };
    let losses: Vec<&Unreached> = agents.iter().filter_map(|a| a.error.as_ref()).collect();
    let failure = super::idle::no_endpoint(&losses, &first);
    MeshRun { report, csv: None, html: None, could_not_run: Some(failure), nothing_ran: true }
}

/// The endpoints whose agent could not be reached, and why.
fn unreachable(run: &MeshConfig, agents: &[Agent]) -> Vec<Unreachable> {
    agents
        .iter()
        .zip(&run.names)
        .filter_map(|(a, name)| a.error.as_ref().map(|why| Unreachable { endpoint: name.clone(), error: crate::report::loss::unreached_words(why) }))
        .collect()
}

/// `--report-every`: the records' writer, shared by the rounds, and when the run began.
fn open_live(run: &MeshConfig) -> Result<Option<(crate::pair::live::Shared, Instant)>, Failure> {
    let Some(out) = &run.live else { return Ok(None) };
    let recorder =
        crate::progress_record::Recorder::open(out).map_err(|why| Failure::new(why, "give --progress-json a path in a writable directory"))?;
    Ok(Some((std::rc::Rc::new(std::cell::RefCell::new(recorder)), Instant::now())))
}

/// The pair records as they come: into the spool (for the JSON), the `--csv` file, and the
/// count of failed pair records progress reports (per pass, by difference).
struct Records {
    spool: spool::Spool,
    csv: Option<StreamedFile>,
    bad: usize,
    /// A link suspect per pair whose `pair.path` or `pair.loaded_latency` failed it
    /// (`analysis::pair_suspect`), by the pair's link name: a retested pair is named once.
    pair_suspects: BTreeMap<String, Suspect>,
    /// Records with at least one result, and the first error of one without.
    ran: usize,
    first_error: Option<String>,
}

impl Records {
    fn push(&mut self, record: PairRecord, suspect: Option<Suspect>) {
        self.bad += usize::from(record.verdict != Verdict::Pass);
        if let Some(suspect) = suspect {
            self.pair_suspects.insert(suspect.subject.clone(), suspect);
        }
        if !record.results.is_empty() {
            self.ran += 1;
        } else if self.first_error.is_none() {
            self.first_error.clone_from(&record.error);
        }
        if let Some(csv) = &mut self.csv {
            csv.write(&csv::rows(&record));
        }
        self.spool.push(record);
    }
}

/// What every pass's rounds run against: the one round runner for the first pass, the
/// retests and the zoom-in.
struct Passes<'a, 'p> {
    run: &'a MeshConfig,
    fleet: &'a mut dyn Agents,
    agents: &'a mut Vec<Agent>,
    records: &'a mut Records,
    progress: &'a mut (dyn Progress + 'p),
    /// A termination signal stopped a pass: the rest is skipped and the report says so.
    interrupted: bool,
    /// `--report-every`: the run's recorder and its start.
    live: Option<(crate::pair::live::Shared, Instant)>,
}

impl Passes<'_, '_> {
    /// Runs the rounds of one pass, recording each pair (a retest marked `retest`, a zoom-in
    /// pair `zoom`) and telling progress after each round; returns the pairs' measures.
    fn run(&mut self, rounds: Vec<Vec<(usize, usize)>>, stage: Stage) -> Result<Vec<PairMeasure>, Failure> {
        let (total, before) = (rounds.len(), self.records.bad);
        let mut measures = Vec::new();
        for (i, round) in rounds.into_iter().enumerate() {
            let done = match run_round(self.run, self.fleet, self.agents, &round, stage == Stage::Retest, self.live.as_ref()) {
                Ok(done) => done,
                // Stopped by a signal: the pairs of the rounds before stand; this round's do not.
                Err(_) if crate::sys::os::interrupted() => {
                    self.interrupted = true;
                    break;
                }
                Err(e) => return Err(e),
            };
            for (mut record, measure, suspect) in done {
                record.zoom = stage == Stage::Zoom;
                self.records.push(record, suspect);
                measures.push(measure);
            }
            self.progress.event(&Event::Round { stage, round: i + 1, rounds: total, bad: self.records.bad - before });
        }
        Ok(measures)
    }
}

/// Each endpoint's leaf switch, by the host name its agent reported (else the host it was
/// given as), when a topology is known and it names at least one of them. A `--rails`
/// endpoint is one NIC: its leaf is the one its own CA (`HOST DEV`) is cabled to.
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
            let leaf_of = |host: &str| match (&run.planes, &spec.device) {
                (Some(_), Some(device)) => topo.leaf_of_nic(host, device),
                _ => topo.leaf_of(host),
            };
            a.host.as_deref().and_then(leaf_of).or_else(|| leaf_of(&given))
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
fn reach(run: &MeshConfig, fleet: &mut dyn Agents, agents: &mut [Agent], which: Vec<usize>) -> Result<(), Failure> {
    let links: Vec<LinkId> = which.iter().map(|&i| agents[i].link).collect();
    let labels: Vec<String> = which.iter().map(|&i| run.names[i].clone()).collect();
    for (&i, reach) in which.iter().zip(fleet.reach(&links, &labels, true, run.fanout)?) {
        let agent = &mut agents[i];
        agent.second_chance = false;
        match reach.failure {
            Some(loss) => agent.error = Some(Unreached::Lost(loss)),
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
        .find(|(_, p)| p.state == crate::port::PortState::Active);
    if let Some((d, p)) = port {
        agent.soft = crate::probe::catype::CaKind::of(&d.ca_type).is_software();
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

/// What each endpoint can carry, for judging each pair against its own two ends (issue #28 item
/// 2: 0.2 took the slowest endpoint's rate for every pair, so one 2X port hid real suspects).
/// Unknown where the endpoint was not reached, reported no rate, or is Soft-RoCE (its rate is
/// synthesized): its pairs are compared with the cluster's median.
fn capacities(agents: &[Agent]) -> Vec<Option<f64>> {
    agents.iter().map(capacity_of).collect()
}

fn capacity_of(agent: &Agent) -> Option<f64> {
    if agent.error.is_some() || agent.soft {
        return None;
    }
    agent.rate_gbps
}

/// Runs one round: every pair at once, each its own test sequence over the run's agents.
fn run_round(
    run: &MeshConfig,
    fleet: &mut dyn Agents,
    agents: &mut [Agent],
    round: &[(usize, usize)],
    retest: bool,
    live: Option<&(crate::pair::live::Shared, Instant)>,
) -> Result<Vec<(PairRecord, PairMeasure, Option<Suspect>)>, Failure> {
    // Agents whose channel an earlier pair discarded are reached again (a restarted node may
    // come back).
    let mut again: Vec<usize> =
        round.iter().flat_map(|&(a, b)| [a, b]).filter(|&i| !agents[i].reached && (agents[i].error.is_none() || agents[i].second_chance)).collect();
    again.sort_unstable();
    again.dedup();
    if !again.is_empty() {
        reach(run, fleet, agents, again)?;
    }
    let mut out = Vec::new();
    let mut jobs = Vec::new();
    let mut pairs = Vec::new();
    let slots = cpu_slots(run, agents);
    for &(a, b) in round {
        if agents[a].reached && agents[b].reached {
            let targets = [a, b].map(|i| {
                let mut target = pair::target(&run.specs[i], run.gid_index, None, run.conditions);
                // Each agent pins its loop near its adapter, agents of one host on distinct
                // CPUs (issue #28 item 4); a CPU named in the conditions wins.
                if target.conditions.cpu.is_none() {
                    target.cpu_slot = Some(slots[i]);
                }
                target
            });
            let labels = [run.names[a].clone(), run.names[b].clone()];
            let seq = PairSequence::new(run.plan.clone(), targets, labels.clone(), run.timeout);
            let conversation = crate::pair::live::Reporting::new(seq, live.map(|(r, t)| (r, *t)), labels);
            jobs.push(Job { links: vec![agents[a].link, agents[b].link], conversation });
            pairs.push((a, b));
        } else {
            // Causes name their endpoint already ("cannot reach n3: ..."); others get it added.
            let why = [a, b]
                .iter()
                .filter_map(|&i| {
                    agents[i].error.as_ref().map(crate::report::loss::unreached_words).map(|e| {
                        if e.contains(&run.names[i]) {
                            e
                        } else {
                            format!("{}: {e}", run.names[i])
                        }
                    })
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
                rail: run.planes.as_ref().map(|p| p.rail(a)),
                judged_against_gbps: None,
            };
            out.push((record, PairMeasure { a, b, bw_gbps: None, lat_us: None, failed: true, preempted: None }, None));
        }
    }
    fleet.drive(&mut lend(&mut jobs), usize::MAX)?;
    for ((a, b), job) in pairs.into_iter().zip(jobs) {
        let done = job.conversation.seq;
        for (i, discarded) in [a, b].into_iter().zip(done.discarded) {
            if discarded {
                agents[i].reached = false;
            }
        }
        let judged_against_gbps = crate::mesh::analysis::pair_capacity(capacity_of(&agents[a]), capacity_of(&agents[b]));
        let (mut record, measure, suspect) = record(run, a, b, done, retest);
        record.judged_against_gbps = judged_against_gbps.map(|g| (g * 1000.0).round() / 1000.0);
        out.push((record, measure, suspect));
    }
    Ok(out)
}

/// Each endpoint's CPU slot: its rank among the endpoints on its host (the host its agent
/// reported, else the one it was given as), from the one CPU allocator's `host_slots`.
fn cpu_slots(run: &MeshConfig, agents: &[Agent]) -> Vec<u8> {
    let hosts: Vec<String> = agents.iter().zip(&run.specs).map(|(a, spec)| a.host.clone().unwrap_or_else(|| spec.host.to_string())).collect();
    // The agent wraps a slot around its pool: a saturated slot still lands on a CPU.
    crate::sys::cpu_plan::host_slots(&hosts).into_iter().map(|s| u8::try_from(s).unwrap_or(u8::MAX)).collect()
}

/// A finished pair's record and headline figures.
/// With it, the link suspect of a pair rule the mesh's figures do not see (`pair_suspect`).
fn record(run: &MeshConfig, a: usize, b: usize, done: PairSequence, retest: bool) -> (PairRecord, PairMeasure, Option<Suspect>) {
    let sides = done.endpoints.as_ref().map(|(ea, eb)| (pair::side(ea), pair::side(eb)));
    // The record is the document: the loss said in its words, cause and remedy.
    let error = done.could_not_run.map(|loss| {
        let (cause, remedy) = crate::report::loss::words(&loss);
        format!("{cause} ({remedy})")
    });
    let results = done.results;
    let (verdict, findings) = match (&sides, &error) {
        (Some((sa, sb)), None) => verdict::judge(sa, sb, &results, &run.pair_criteria),
        _ => (Verdict::Fail, Vec::new()),
    };
    let suspect = analysis::pair_suspect(&run.names[a], &run.names[b], &findings);
    let measure = PairMeasure::of(a, b, &results, error.is_some() || results.iter().any(|r| r.error.is_some()));
    let rail = run.planes.as_ref().map(|p| p.rail(a));
    (
        PairRecord {
            a: run.names[a].clone(),
            b: run.names[b].clone(),
            verdict,
            results,
            error,
            retest,
            zoom: false,
            rail,
            judged_against_gbps: None,
        },
        measure,
        suspect,
    )
}
