//! `fabcheck pair A B`: RC latency and bandwidth between two endpoints, with a verdict.
//!
//! The controller (this process) starts or reaches two agents, relays their endpoints
//! (LID, QPN, PSN, GID, rkey, address: out of band, so no IPoIB is needed), starts the
//! passive side before the active one, collects results and judges them. The test sequence
//! is a pure state machine (`sequence`) driven through the run's agents (`control::agents`: the
//! one-thread hub), as `mesh` drives it
//! for every pair of a round.

pub mod data;
mod ends;
pub mod interrupted;
pub mod live;
pub mod loaded;
pub mod paths;
pub mod plan;
pub mod plot;
pub mod rails;
pub mod report;
pub mod sequence;
pub mod side;
mod signals;
pub mod verdict;
mod wire;

use crate::control::agents::Agents;
use crate::control::drive::{Actions, Conversation, Job};
use crate::control::endpoint::EndpointSpec;
use crate::control::protocol::Reply;
use crate::control::protocol::{CmRole, Endpoint, Target};
use crate::error::Failure;
use crate::model::Conditions;
use crate::model::Unparsed;
use crate::outcome::loss::Loss;
use crate::outcome::FindingId;
use crate::progress::{Event, Figure, Progress};
use crate::report::output::SideFile;
use plan::PlannedTest;
use report::PairDoc;
use sequence::PairSequence;
use side::Side;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A pair run, validated: everything `run` needs, no flags.
#[derive(Debug, Clone)]
pub struct PairConfig {
    pub endpoints: [EndpointSpec; 2],
    pub plan: Vec<PlannedTest>,
    pub criteria: verdict::Criteria,
    pub gid_index: Option<u8>,
    pub cm: bool,
    pub conditions: Conditions,
    /// Where each agent's measured loop runs (`--cpu`).
    pub cpu: CpuChoice,
    pub test_timeout: Duration,
    pub json: bool,
    /// Human output: only problems and the verdict (no table of passing rows).
    pub quiet: bool,
    /// `--csv FILE`: every result as a CSV row.
    pub csv: Option<PathBuf>,
    /// `--svg FILE`: size against bandwidth and latency.
    pub svg: Option<PathBuf>,
    /// `--rails`: every rail of both nodes at once.
    pub rails: Option<rails::RailsConfig>,
    /// `--report-every`: where each interval's figures go (the plan's specs carry the interval).
    pub live: Option<crate::progress_record::LiveOutput>,
}

/// `pair --cpu`: which CPU each end's measured loop is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuChoice {
    /// Each agent picks a CPU near its adapter; two ends on one host get distinct CPUs.
    #[default]
    Auto,
    /// Not pinned: where the scheduler puts it.
    Off,
    /// Endpoint A's loop on the first, B's on the second.
    Pin([u16; 2]),
}

impl CpuChoice {
    /// `auto`, `none`, `N` (both ends, each on its own host) or `A,B`.
    pub fn parse(text: &str) -> Result<CpuChoice, Unparsed> {
        let cpu = |s: &str| s.trim().parse::<u16>().map_err(|_| format!("--cpu '{text}': '{s}' is not a CPU number"));
        match text.trim() {
            "auto" => Ok(CpuChoice::Auto),
            "none" | "off" => Ok(CpuChoice::Off),
            t => match t.split_once(',') {
                Some((a, b)) => Ok(CpuChoice::Pin([cpu(a)?, cpu(b)?])),
                None => {
                    let n = cpu(t)?;
                    Ok(CpuChoice::Pin([n, n]))
                }
            },
        }
    }

    /// The placement asked of side `side` (0 = A), in its target.
    pub fn apply(self, target: &mut Target, side: usize, same_host: bool) {
        (target.conditions.cpu, target.cpu_slot) = match self {
            CpuChoice::Auto => (None, Some(if same_host { side as u8 } else { 0 })),
            CpuChoice::Off => (None, None),
            CpuChoice::Pin(cpus) => (Some(cpus[side]), None),
        };
    }
}

/// Runs the pair, telling `progress` of each test as it finishes.
pub fn run(config: PairConfig, fleet: &mut dyn Agents, progress: &mut dyn Progress) -> Result<PairRun, Failure> {
    if let Some(rails_config) = config.rails.clone() {
        let quiet = config.quiet;
        let doc = PairDoc::of_rails(rails::run(config, &rails_config, fleet, progress)?);
        return Ok(PairRun { report: report::PairReport { doc, quiet }, side_files: Vec::new(), interrupted: None });
    }
    let labels = config.endpoints.clone().map(|e| e.host.to_string());
    let links = [0, 1].map(|i| fleet.add(&config.endpoints[i].host, labels[i].clone()));
    // Both agents are reached at once; the first that cannot be is the error.
    let reached = fleet.reach(&links, &labels, false, 2)?;
    let same_host = reached[0].host == reached[1].host;
    if let Some(f) = reached.into_iter().find_map(|r| r.failure) {
        return Err(f.into());
    }
    let roles = [CmRole::Connect, CmRole::Listen];
    let targets = [0, 1].map(|i| {
        let mut t = target(&config.endpoints[i], config.gid_index, config.cm.then_some(roles[i]), config.conditions);
        config.cpu.apply(&mut t, i, same_host);
        t
    });
    let live = live::Live::open(config.live.as_ref(), labels.clone())?;
    let sequence = PairSequence::new(config.plan.clone(), targets, labels, config.test_timeout);
    let mut told = Told { seq: sequence, teller: Teller::new(&config.plan), progress, live };
    let driven = fleet.drive(&mut [Job { links: links.to_vec(), conversation: &mut told }], 1);
    // Closing every channel stops both agents (a test in flight included): nothing is left
    // running on either node, also after a signal.
    fleet.close_all();
    let Told { seq: done, progress, .. } = told;
    progress.done();
    // SIGINT/SIGTERM/SIGHUP (the only way `drive` ends early): the tests that finished are
    // reported, then the run is exit 2 (`interrupted`).
    let interrupted = interrupted::after(driven, &done)?;
    if let Some(loss) = done.could_not_run {
        return Err(loss.into());
    }
    let Some((ea, eb)) = done.endpoints else {
        return Err(Failure::new("no test reached its endpoints", "see the errors above"));
    };
    gpu_memory_used(config.conditions.mem, [&ea, &eb])?;
    let (a, b) = (side(&ea), side(&eb));
    let results = done.results;
    let (mut verdict, mut findings) = verdict::judge(&a, &b, &results, &config.criteria);
    // pair.qos: which priority each RoCE end's bytes rode (an error fails the pair).
    findings.extend(qos_findings(&a, &b, &results, &done.traffic));
    // pair.data: `--validate`'s checks (an error fails the pair).
    if config.plan.iter().any(|t| t.spec.validate_seed.is_some()) {
        findings.extend(data::findings(&format!("{}/{} <-> {}/{}", a.host, a.device, b.host, b.device), &results, &done.data));
    }
    if findings.iter().any(|f| f.severity == crate::outcome::Severity::Error) || interrupted.is_some() {
        verdict = crate::outcome::Verdict::Fail;
    }
    findings.extend([&ea, &eb].into_iter().filter_map(gpu_affinity));
    findings.extend([&ea, &eb].into_iter().filter_map(gpu_link_fault));
    if let Some(message) = plan::duration_note(&config.plan) {
        findings.push(crate::outcome::Finding {
            id: FindingId::PairDuration,
            severity: crate::outcome::Severity::Info,
            subject: (format!("{}/{} <-> {}/{}", a.host, a.device, b.host, b.device)).into(),
            message,
            remedy: "give --iters to run every test by count, or leave send_bw out of --tests".into(),
            about: None,
        });
    }
    let relaxed_ordering = ea.conditions.relaxed_ordering && eb.conditions.relaxed_ordering;
    let capacity_gbps = verdict::capacity(&a, &b).map(|c| c.gbps);
    let doc = PairDoc {
        schema: report::SCHEMA.into(),
        verdict,
        a,
        b,
        results,
        findings,
        relaxed_ordering,
        capacity_gbps,
        rails: Vec::new(),
        aggregate: Vec::new(),
    };
    // The side files are written after the results (by the command), so one that cannot be
    // written loses nothing else.
    let mut side_files = Vec::new();
    if let Some(path) = &config.csv {
        side_files.push(SideFile { path: path.clone(), what: "the CSV", flag: "--csv", bytes: plot::csv(&doc.results).into_bytes() });
    }
    if let Some(path) = &config.svg {
        side_files.push(SideFile {
            path: path.clone(),
            what: "the plot",
            flag: "--svg",
            bytes: plot::svg(&doc, config.criteria.bw_fraction).into_bytes(),
        });
    }
    Ok(PairRun { report: report::PairReport { doc, quiet: config.quiet }, side_files, interrupted })
}

/// `pair.qos` over the tests' per-priority byte counts (diagnose::qos_pair, pure).
fn qos_findings(
    a: &side::Side,
    b: &side::Side,
    results: &[crate::outcome::TestResult],
    traffic: &[[Option<crate::model::traffic::PrioTraffic>; 2]],
) -> Vec<crate::outcome::Finding> {
    use crate::diagnose::qos_pair::{judge, PairEnd, TestTraffic};
    let ends = [a, b].map(|s| PairEnd {
        name: format!("{}/{}", s.host, s.device),
        roce: s.link_layer == crate::model::LinkLayer::Ethernet,
        soft_roce: crate::probe::catype::CaKind::of(&s.ca_type).is_software(),
        tclass: s.tclass,
        tclass_source: s.tclass_source,
    });
    let tests: Vec<TestTraffic<'_>> = results
        .iter()
        .zip(traffic)
        .map(|(r, t)| TestTraffic { label: format!("{} {} {} B", r.test, r.direction, r.size), sides: [t[0].as_ref(), t[1].as_ref()] })
        .collect();
    let same_port = a.host == b.host && a.device == b.device && a.port == b.port;
    judge(&ends, same_port, &tests, &format!("{}/{} <-> {}/{}", a.host, a.device, b.host, b.device))
}

/// A finished pair: its document, and the side files it asked for.
pub struct PairRun {
    pub report: report::PairReport,
    pub side_files: Vec<SideFile>,
    /// Stopped by a signal after `report`'s tests: written, then exit 2 with this cause.
    pub interrupted: Option<Failure>,
}

/// Tells progress of each finished step: one test at one size, in every direction it runs (a
/// sweep's sizes are its steps). Pure: fed the results so far.
#[derive(Debug, Clone)]
pub(crate) struct Teller {
    /// Results per step, from the plan: consecutive tests of one kind and size.
    steps: Vec<usize>,
    step: usize,
    told: usize,
}

impl Teller {
    pub(crate) fn new(plan: &[PlannedTest]) -> Teller {
        let mut steps: Vec<usize> = Vec::new();
        let mut last = None;
        for t in plan {
            let key = (t.spec.test, t.spec.size);
            if last == Some(key) {
                *steps.last_mut().expect("a step") += 1;
            } else {
                steps.push(1);
                last = Some(key);
            }
        }
        Teller { steps, step: 0, told: 0 }
    }

    /// Tells of every step `results` completes (all of them once `done`: a failed test ends
    /// the plan early).
    pub(crate) fn tell(&mut self, results: &[crate::outcome::TestResult], done: bool, progress: &mut dyn Progress) {
        while self.told < results.len() {
            let want = self.steps.get(self.step).copied().unwrap_or(1);
            let end = (self.told + want).min(results.len());
            if end - self.told < want && !done {
                return;
            }
            let group = &results[self.told..end];
            let figures: Vec<Figure> = group
                .iter()
                .map(|r| Figure { direction: r.direction.name(), bw_gbps: r.bw_gbps, lat_us: r.lat_us.map(|l| l.p50), failed: r.error.is_some() })
                .collect();
            self.step += 1;
            self.told = end;
            let steps = self.steps.len().max(self.step);
            progress.event(&Event::Test { step: self.step, steps, test: group[0].test, size: group[0].size, figures: &figures });
        }
    }
}

/// `pair`'s sequence, telling progress as its results come in.
struct Told<'p> {
    seq: PairSequence,
    teller: Teller,
    progress: &'p mut dyn Progress,
    /// `--report-every`: the running test's figures, as the agents send them.
    live: Option<live::Live>,
}

impl Told<'_> {
    fn tell(&mut self) {
        self.teller.tell(&self.seq.results, self.seq.is_done(), self.progress);
    }
}

impl Conversation for Told<'_> {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        self.seq.start(now, act);
        self.tell();
    }
    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        if let (Reply::Progress { interval }, Some(live), Some(test)) = (&reply, self.live.as_mut(), self.seq.current()) {
            live.record(side, test, interval, now);
        }
        self.seq.on_reply(side, reply, now, act);
        self.tell();
    }
    fn on_lost(&mut self, side: usize, loss: Loss, now: Instant, act: &mut Actions) {
        self.seq.on_lost(side, loss, now, act);
        self.tell();
    }
    fn on_deadline(&mut self, now: Instant, act: &mut Actions) {
        self.seq.on_deadline(now, act);
        self.tell();
    }
    fn deadline(&self) -> Option<Instant> {
        self.seq.deadline()
    }
    fn is_done(&self) -> bool {
        self.seq.is_done()
    }
}

/// Where a test runs on one endpoint, as the agent is told.
pub(crate) fn target(spec: &EndpointSpec, gid_index: Option<u8>, cm: Option<CmRole>, conditions: Conditions) -> Target {
    Target { device: spec.device.clone(), port: spec.port.map(|p| p as u8), gid_index, cm, conditions, cpu_slot: None }
}

/// `--mem cuda` asked, but an agent answered without a GPU: a fabcheck before 0.3 ignores the
/// field and would measure host memory under a GPU run's name.
pub(crate) fn gpu_memory_used(asked: crate::model::MemChoice, ends: [&Endpoint; 2]) -> Result<(), Failure> {
    match ends.iter().find(|e| !asked.is_host() && e.gpu.is_none()) {
        Some(e) => Err(Failure::new(
            format!("{}: --mem {asked} was asked, but its agent put the buffers in host memory (a fabcheck older than 0.3 ignores --mem)", e.host),
            "install the same fabcheck version on every node",
        )),
        None => Ok(()),
    }
}

/// `--mem cuda`: a side whose GPU is not near its NIC (PHB and beyond, or unknown) is a
/// `gpu.affinity` warning, as `check` says it.
pub(crate) fn gpu_affinity(e: &Endpoint) -> Option<crate::outcome::Finding> {
    let gpu = e.gpu.as_ref()?;
    Some(crate::outcome::Finding {
        id: FindingId::GpuAffinity,
        severity: crate::outcome::Severity::Warning,
        subject: (format!("{}/{}", e.host, e.device)).into(),
        message: gpu.affinity.clone()?,
        remedy: "use --mem cuda:auto, or pair each NIC with a GPU on its PCIe switch (`nvidia-smi topo -m`: PIX or PXB)".into(),
        about: None,
    })
}

/// `--mem cuda`: a side whose GPU link trained narrower than it and its port support. A
/// warning here (`check` judges the link itself, as an error): the bandwidth, judged against the
/// link's design figure (`gpu::bound`), gives the pair's verdict.
pub(crate) fn gpu_link_fault(e: &Endpoint) -> Option<crate::outcome::Finding> {
    Some(crate::outcome::Finding {
        id: FindingId::PcieLink,
        severity: crate::outcome::Severity::Warning,
        subject: (format!("{}/{}", e.host, e.device)).into(),
        message: e.gpu.as_ref()?.link_fault.clone()?,
        remedy: "reseat the GPU (or its baseboard cable), check the slot's BIOS bifurcation; `fabcheck check` on that node shows pcie.link".into(),
        about: None,
    })
}

pub(crate) fn side(e: &Endpoint) -> Side {
    Side {
        host: e.host.clone(),
        device: e.device.clone(),
        port: e.port,
        gid_index: e.gid_index,
        gid: e.gid,
        link_layer: e.link_layer,
        rate_gbps: e.rate_gbps,
        ca_type: e.ca_type.clone(),
        mtu: Some(e.mtu),
        tclass: e.conditions.tclass,
        tclass_source: e.conditions.tclass_source,
        sl: e.conditions.sl,
        cpu: e.conditions.cpu,
        pcie_gbps: e.pcie_gbps,
        trained_low: e.trained_low.clone(),
        mem: e.conditions.mem,
        mem_path: match (&e.gpu, e.conditions.mem.is_host()) {
            (Some(g), _) => Some(g.path),
            (None, true) => None,
            (None, false) => Some(crate::model::MemPath::Host),
        },
        gpu: e.gpu.as_ref().map(|g| g.pci.clone()),
        gpu_pcie_gbps: e.gpu.as_ref().and_then(|g| g.pcie_gbps),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Direction;
    use crate::model::TestKind;
    use crate::outcome::TestResult;
    use crate::pair::plan::PlanInput;

    fn input(tests: Vec<TestKind>, sweep: bool) -> PlanInput {
        PlanInput { tests, size: None, sweep, iters: Some(10), duration_ms: None, qps: 1, directions: None, stall_timeout_ms: 5000 }
    }

    fn result(t: &PlannedTest, failed: bool) -> TestResult {
        TestResult {
            paths: Vec::new(),
            test: t.spec.test,
            direction: t.direction,
            size: t.spec.size,
            iterations: 10,
            qps: 1,
            lat_us: None,
            bw_gbps: (!failed).then_some(100.0),
            peak_gbps: None,
            msg_rate_mpps: None,
            counters: Default::default(),
            error: failed.then(|| "retry exceeded".into()),
            remedy: None,
            under_load: None,
        }
    }

    #[test]
    fn a_step_is_a_test_at_one_size_in_every_direction() {
        let plan = plan::build(&input(vec![TestKind::WriteBw], true)).unwrap();
        assert_eq!(plan.len(), 23 * 3);
        let mut teller = Teller::new(&plan);
        let mut lines: Vec<String> = Vec::new();
        let results: Vec<TestResult> = plan.iter().map(|t| result(t, false)).collect();
        // Two directions of the first size: nothing yet; the third completes the step.
        teller.tell(&results[..2], false, &mut lines);
        assert!(lines.is_empty());
        teller.tell(&results[..4], false, &mut lines);
        assert_eq!(lines, ["[1/23] write_bw 2 B: a->b 100.0 Gb/s, b->a 100.0 Gb/s, bidi 100.0 Gb/s"]);
        teller.tell(&results, true, &mut lines);
        assert_eq!(lines.len(), 23);
        assert!(lines[22].starts_with("[23/23] write_bw 8388608 B:"), "{}", lines[22]);
    }

    #[test]
    fn a_failed_test_ends_the_plan_and_its_step_is_told() {
        let plan = plan::build(&PlanInput {
            directions: Some(vec![Direction::AtoB, Direction::BtoA]),
            ..input(vec![TestKind::WriteBw, TestKind::ReadBw], false)
        })
        .unwrap();
        let mut teller = Teller::new(&plan);
        let mut lines: Vec<String> = Vec::new();
        let results = vec![result(&plan[0], false), result(&plan[1], false), result(&plan[2], true)];
        teller.tell(&results, true, &mut lines);
        assert_eq!(lines, ["[1/2] write_bw 65536 B: a->b 100.0 Gb/s, b->a 100.0 Gb/s", "[2/2] read_bw 65536 B: FAILED"]);
    }

    #[test]
    fn cpu_choice_per_side() {
        let placed = |choice: CpuChoice, same_host: bool| {
            [0, 1].map(|side| {
                let mut t = Target { device: None, port: None, gid_index: None, cm: None, conditions: Conditions::default(), cpu_slot: None };
                choice.apply(&mut t, side, same_host);
                (t.conditions.cpu, t.cpu_slot)
            })
        };
        assert_eq!(placed(CpuChoice::Auto, true), [(None, Some(0)), (None, Some(1))], "one host: distinct CPUs");
        assert_eq!(placed(CpuChoice::Auto, false), [(None, Some(0)), (None, Some(0))]);
        assert_eq!(placed(CpuChoice::Off, true), [(None, None), (None, None)]);
        assert_eq!(placed(CpuChoice::Pin([4, 7]), true), [(Some(4), None), (Some(7), None)]);
        // Old agents ignore the fields; a target without them deserialises unpinned.
        let t: Target = serde_json::from_str(r#"{"device":null,"port":null,"gid_index":null}"#).unwrap();
        assert_eq!((t.conditions.cpu, t.cpu_slot), (None, None));
        assert_eq!(serde_json::to_string(&Conditions::default()).unwrap(), "{}");
    }

    /// An endpoint as an agent sends it, with `extra` fields merged in.
    fn endpoint(extra: serde_json::Value) -> Endpoint {
        let mut v = serde_json::json!({
            "host": "n1", "device": "mlx5_0", "port": 1, "lid": 0, "gid_index": null, "gid": null, "qpns": [1], "psn": 1,
            "addr": 4096, "rkey": 1, "len": 64, "mtu": 4096, "link_layer": "InfiniBand", "rate_gbps": 400.0, "ca_type": "MT4129",
            "max_rd_atomic": 16
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_gpu_side_says_its_memory_and_a_host_side_is_as_before() {
        let host = side(&endpoint(serde_json::json!({})));
        let json = serde_json::to_value(&host).unwrap();
        assert!(json.get("mem").is_none() && json.get("mem_path").is_none() && json.get("gpu").is_none(), "host JSON unchanged: {json}");
        assert_eq!(gpu_affinity(&endpoint(serde_json::json!({}))), None);

        let gpu = endpoint(serde_json::json!({
            "conditions": {"mem": "cuda:3"},
            "gpu": {"ordinal": 3, "pci": "0000:61:00.0", "path": "dmabuf", "relation": "SYS", "affinity": "GPU 0000:61:00.0 (cuda:3) is SYS from mlx5_0"}
        }));
        let s = side(&gpu);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (&json["mem"], &json["mem_path"], &json["gpu"]),
            (&serde_json::json!("cuda:3"), &serde_json::json!("dmabuf"), &serde_json::json!("0000:61:00.0"))
        );
        let finding = gpu_affinity(&gpu).expect("a gpu.affinity warning");
        assert_eq!(gpu_link_fault(&gpu), None, "a link at its design width");
        let narrow = endpoint(
            serde_json::json!({"gpu": {"ordinal": 0, "pci": "0000:1b:00.0", "path": "dmabuf", "link_fault": "GPU 0000:1b:00.0's PCIe link trained at x8"}}),
        );
        assert_eq!(gpu_link_fault(&narrow).map(|f| (f.id, f.severity)), Some((FindingId::PcieLink, crate::outcome::Severity::Warning)));
        assert_eq!(
            (finding.id.as_str(), finding.severity, finding.subject.to_string().as_str()),
            ("gpu.affinity", crate::outcome::Severity::Warning, "n1/mlx5_0")
        );
        let doc = report::PairDoc {
            schema: report::SCHEMA.into(),
            verdict: crate::outcome::Verdict::Pass,
            a: s.clone(),
            b: host,
            results: Vec::new(),
            findings: Vec::new(),
            relaxed_ordering: true,
            capacity_gbps: None,
            rails: Vec::new(),
            aggregate: Vec::new(),
        };
        let human = report::human(&doc, false);
        assert!(human.contains("   memory cuda:3 (dmabuf, GPU 0000:61:00.0)"), "{human}");
        assert_eq!(human.matches("memory ").count(), 1, "the host side says nothing new: {human}");
        assert!(gpu_memory_used(crate::model::MemChoice::CudaAuto, [&gpu, &gpu]).is_ok());
        let old_agent = endpoint(serde_json::json!({}));
        let refused = gpu_memory_used(crate::model::MemChoice::CudaAuto, [&gpu, &old_agent]).unwrap_err();
        assert!(refused.cause.contains("n1: --mem cuda:auto was asked, but its agent put the buffers in host memory"), "{}", refused.cause);
        assert!(gpu_memory_used(crate::model::MemChoice::Host, [&old_agent, &old_agent]).is_ok());
    }
}
