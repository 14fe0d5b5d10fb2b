//! FAKE agents living in this test process, for `mesh` at scale and `pair` against agents whose
//! figures the test sets: the real controller binary talks to them as to `fabcheck serve`.
//!
//! Each fake agent is a `TcpListener` on `127.0.0.1:0` (so the mesh reaches it as
//! `tcp://127.0.0.1:PORT`, exactly like a `fabcheck serve`) and a thread that accepts
//! connections in a loop (the controller may connect more than once, e.g. to re-reach an agent
//! whose pair broke) and serves each one on its own thread, line by line, with the library's
//! own protocol types (`decode::<Request>`, `encode(&Reply)`):
//!
//! | request         | reply                                                                |
//! |-----------------|----------------------------------------------------------------------|
//! | `hello`         | `hello{agent:"fabcheck fake", host:"fakeNN"}` (no token check)       |
//! | `inventory`     | a real `Inventory`, built once from the `hdr-ib-healthy` fixture     |
//! |                 | (ConnectX-6, 4X HDR, ACTIVE at 200 Gb/s)                             |
//! | `prepare`       | `ready{endpoint}`: host `fakeNN`, the fixture port's LID, rate...    |
//! | `connect{peer}` | `connected`; remembers `peer.host`, who it is paired with            |
//! | `run`           | `running`; then an active side (`active`, `both`) sends (with        |
//! |                 | `report_every_ms` and a duration: one `progress` per interval, first)|
//! |                 | `done{result}` at once, a passive side waits for `stop`              |
//! | `stop`          | `done{result}` (zeros; with `validate_seed` its data check) if a     |
//! |                 | passive run waits, else nothing                                      |
//! | `finish`        | `finished`                                                           |
//! | `bye`           | `bye`, and the connection is closed                                  |
//!
//! What an active side reports comes from one shared [`Fabric`] model rather than from the
//! agent alone, because with `--direction ab` only the lower-indexed endpoint of a pair is
//! active: a slow NIC must show in the figures whichever end of the pair it is. A pair's
//! bandwidth is [`NORMAL_GBPS`] (95% of the 200 Gb/s port, above the default 90% threshold),
//! times [`SLOW_SHARE`] when either end is a `slow_node`, times it again when either end's
//! `slow_with` names the other (a bad link). Latency is the same for every pair, so the
//! analysis only has bandwidth to go on. A `dead` agent is a port with nothing listening.
//! `controller_stays_single_threaded` also pauses 2 ms before each `done`, so the run lasts long
//! enough for its thread count to be sampled many times.
//!
//! The `fabcheck mesh` child always runs under a hang guard: still running after
//! [`HANG_GUARD`], it is killed and the test fails. That is a guard, not a timing assertion.

use fabcheck::control::protocol::{decode, encode, Reply, Request, Role, RunResult, Target, TestSpec};
use fabcheck::perf::summary::LatencySummary;
use fabcheck::port::PortState;
use fabcheck::probe::{self, Inventory};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The fixture every fake agent reports as its node: two ACTIVE 4X HDR ports at 200 Gb/s.
pub(crate) const FIXTURE: &str = "hdr-ib-healthy";
/// The port rate of that fixture, which mesh takes as the expected rate.
pub(crate) const LINK_GBPS: f64 = 200.0;
/// What a healthy pair measures: 95% of the link, above the default 90% threshold.
pub(crate) const NORMAL_GBPS: f64 = 190.0;
/// A slow node or link runs at this share of normal (57 Gb/s).
pub(crate) const SLOW_SHARE: f64 = 0.3;
/// One-way send latency every pair reports, microseconds.
pub(crate) const LAT_P50_US: f64 = 1.9;
/// lat_under_load: what the fake load does to the latency (p50 and p99 times this).
pub(crate) const LOADED_FACTOR: f64 = 5.0;
/// A mesh still running after this long is a hang: killed, and the test fails.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(120);

/// How one fake agent misbehaves. `Default` is a healthy agent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Knobs {
    /// Every pair with this node is slow (a bad NIC, PCIe slot...).
    pub(crate) slow_node: bool,
    /// The pair with this host (e.g. `"fake11"`) is slow (a bad cable or switch port).
    pub(crate) slow_with: Option<String>,
    /// Nothing listens on this agent's port: the endpoint is unreachable.
    pub(crate) dead: bool,
    /// The pair with this host hangs: its measuring side says `running` and then nothing.
    pub(crate) hang_with: Option<String>,
    /// The host name this agent's `hello` reports instead of its own (two agents of one host).
    pub(crate) reported_host: Option<String>,
    /// The agent answers hello but has no RDMA device: its inventory is refused, as a real
    /// agent's is when libibverbs lists none.
    pub(crate) no_device: bool,
    /// The latency loop of a test with this host is preempted: 8 ms, and its gaps reported
    /// (a loaded host: more busy pollers than CPUs).
    pub(crate) preempted_with: Option<String>,
    /// The active run of this test hangs (says `running`, then nothing), whoever the peer:
    /// a long test in flight when a signal comes.
    pub(crate) hang_on: Option<fabcheck::model::TestKind>,
    /// `--validate`: this agent, receiving, finds bytes changed (a bit at offset 4100 of
    /// message 812), as a real agent with the fault knob set does.
    pub(crate) corrupt: bool,
    /// `--paths`: this agent's QP with this index (0-based) moves its bytes in ten times the
    /// time of its siblings (a bad ECMP member on its UDP source port's hash).
    pub(crate) slow_path: Option<u32>,
}

/// The fake agents' host names, as their `hello` reports them.
pub(crate) fn host(i: usize) -> String {
    format!("fake{i:02}")
}

/// What every fake agent shares: the inventory it reports and the fabric's faults.
pub(crate) struct Fabric {
    pub(crate) inventory: Inventory,
    /// By host name.
    pub(crate) knobs: BTreeMap<String, Knobs>,
    /// Pause before an active side's `done`, so a run lasts long enough to watch.
    pub(crate) done_delay: Duration,
    /// Connections each agent accepted, by host name (a re-reached agent counts twice).
    pub(crate) connections: BTreeMap<String, AtomicUsize>,
    /// What a healthy pair measures, Gb/s ([`NORMAL_GBPS`] unless a test says otherwise).
    pub(crate) normal_gbps: f64,
    /// Every `prepare` target the agents received, in arrival order.
    pub(crate) targets: std::sync::Mutex<Vec<Target>>,
    /// Each `prepare`'s agent (its own name) and the CPU slot the controller gave it.
    pub(crate) slots: std::sync::Mutex<Vec<(String, Option<u8>)>>,
    /// Controller connections still open (a session whose channel the controller has not
    /// closed: an agent still running for it).
    pub(crate) open: AtomicUsize,
}

impl Fabric {
    /// Bandwidth between two hosts, Gb/s.
    fn gbps(&self, a: &str, b: &str) -> f64 {
        let knobs = |h: &str| self.knobs.get(h).cloned().unwrap_or_default();
        let (ka, kb) = (knobs(a), knobs(b));
        let mut gbps = self.normal_gbps;
        if ka.slow_node || kb.slow_node {
            gbps *= SLOW_SHARE;
        }
        if ka.slow_with.as_deref() == Some(b) || kb.slow_with.as_deref() == Some(a) {
            gbps *= SLOW_SHARE;
        }
        gbps
    }

    /// Whether the latency loops between two hosts lose their CPU.
    fn preempted(&self, a: &str, b: &str) -> bool {
        let knobs = |h: &str| self.knobs.get(h).cloned().unwrap_or_default();
        knobs(a).preempted_with.as_deref() == Some(b) || knobs(b).preempted_with.as_deref() == Some(a)
    }

    /// Whether the test between two hosts hangs.
    fn hangs(&self, a: &str, b: &str) -> bool {
        let knobs = |h: &str| self.knobs.get(h).cloned().unwrap_or_default();
        knobs(a).hang_with.as_deref() == Some(b) || knobs(b).hang_with.as_deref() == Some(a)
    }

    pub(crate) fn connections(&self, host: &str) -> usize {
        self.connections.get(host).map_or(0, |c| c.load(Ordering::SeqCst))
    }

    /// The port a `prepare` lands on: the target's device and port, else the first ACTIVE one.
    fn port(&self, target: &Target) -> Option<(&probe::Device, &probe::Port)> {
        self.inventory
            .ports()
            .filter(|(d, _)| target.device.as_deref().is_none_or(|want| d.name == want))
            .filter(|(_, p)| target.port.is_none_or(|want| p.port == u32::from(want)))
            .find(|(_, p)| p.state == PortState::Active)
    }
}

/// A set of fake agents, stopped when dropped.
pub(crate) struct FakeCluster {
    /// `tcp://127.0.0.1:PORT`, one per agent, in order (dead ones included).
    pub(crate) endpoints: Vec<String>,
    pub(crate) listeners: Vec<(SocketAddr, JoinHandle<()>)>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) fabric: Arc<Fabric>,
}

impl FakeCluster {
    /// Starts `knobs.len()` agents named `fake00`, `fake01`, ...
    pub(crate) fn start(knobs: Vec<Knobs>, done_delay: Duration) -> FakeCluster {
        FakeCluster::start_at(knobs, done_delay, NORMAL_GBPS)
    }

    /// `start`, with healthy pairs measuring `normal_gbps`.
    pub(crate) fn start_at(knobs: Vec<Knobs>, done_delay: Duration, normal_gbps: f64) -> FakeCluster {
        let root = super::fixtures_dir().join(FIXTURE);
        let inventory = probe::inventory(&probe::Source::Sysfs(root), None).expect("the fixture's inventory");
        let rate = inventory.ports().find(|(_, p)| p.state == PortState::Active).and_then(|(_, p)| p.rate_gbps);
        assert_eq!(rate, Some(LINK_GBPS), "{FIXTURE}'s first ACTIVE port sets the rate mesh expects");
        let fabric = Arc::new(Fabric {
            inventory,
            knobs: knobs.iter().enumerate().map(|(i, k)| (host(i), k.clone())).collect(),
            done_delay,
            connections: (0..knobs.len()).map(|i| (host(i), AtomicUsize::new(0))).collect(),
            normal_gbps,
            targets: std::sync::Mutex::new(Vec::new()),
            slots: std::sync::Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let mut endpoints = Vec::new();
        let mut listeners = Vec::new();
        for (i, k) in knobs.iter().enumerate() {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a fake agent");
            let addr = listener.local_addr().unwrap();
            endpoints.push(format!("tcp://{addr}"));
            if k.dead {
                // The port was ours a moment ago and now nothing listens there: refused at once.
                drop(listener);
                continue;
            }
            let (fabric, stop, me) = (Arc::clone(&fabric), Arc::clone(&stop), host(i));
            let handle = std::thread::spawn(move || accept_loop(listener, &me, &fabric, &stop));
            listeners.push((addr, handle));
        }
        FakeCluster { endpoints, listeners, stop, fabric }
    }

    pub(crate) fn healthy(n: usize) -> FakeCluster {
        FakeCluster::start(vec![Knobs::default(); n], Duration::ZERO)
    }
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for (addr, handle) in self.listeners.drain(..) {
            // Wake the blocked accept so the thread sees the flag.
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
            let _ = handle.join();
        }
    }
}

fn accept_loop(listener: TcpListener, me: &str, fabric: &Arc<Fabric>, stop: &AtomicBool) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Some(count) = fabric.connections.get(me) {
            count.fetch_add(1, Ordering::SeqCst);
        }
        let (fabric, me) = (Arc::clone(fabric), me.to_string());
        // A connection ends with `bye` or when the controller closes (or is killed).
        fabric.open.fetch_add(1, Ordering::SeqCst);
        std::thread::spawn(move || {
            let _ = serve(stream, &me, &fabric);
            fabric.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// One controller connection, as `fabcheck serve` would answer it.
fn serve(stream: TcpStream, me: &str, fabric: &Fabric) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut raw_writer = writer.try_clone()?;
    let mut send = |reply: &Reply| writer.write_all(encode(reply).as_bytes());
    // Replies written by hand, as the protocol specifies them: the controller must accept the
    // protocol as written down, not only what the library's own encoder happens to emit.
    let mut send_line = |line: String| raw_writer.write_all(format!("{line}\n").as_bytes());
    let mut spec: Option<TestSpec> = None;
    let mut peer: Option<String> = None;
    let mut passive_running = false;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        // Every request is a JSON object carrying protocol version 1 and its type.
        let raw: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        assert_eq!(raw["v"], 1, "a request without protocol version 1: {line}");
        assert!(raw["type"].is_string(), "a request without a type: {line}");
        let request = match decode::<Request>(&line) {
            Ok(r) => r,
            Err(e) => {
                send(&error(&format!("fake agent refused a message: {e}")))?;
                return Ok(());
            }
        };
        match request {
            Request::Hello { .. } => {
                let host = fabric.knobs.get(me).and_then(|k| k.reported_host.clone()).unwrap_or_else(|| me.to_string());
                send_line(format!(r#"{{"v":1,"type":"hello","agent":"fabcheck fake","host":"{host}"}}"#))?
            }
            Request::Inventory if fabric.knobs.get(me).is_some_and(|k| k.no_device) => {
                send(&error(&format!("{me}: libibverbs lists no RDMA device")))?;
            }
            Request::Inventory => send(&Reply::Inventory { inventory: fabric.inventory.clone() })?,
            Request::Prepare { target, spec: s } => {
                fabric.targets.lock().unwrap().push(target.clone());
                fabric.slots.lock().unwrap().push((me.to_string(), target.cpu_slot));
                passive_running = false;
                peer = None;
                if let Err(e) = s.validate() {
                    spec = None;
                    send(&error(&e.to_string()))?;
                    continue;
                }
                let Some((device, port)) = fabric.port(&target) else {
                    spec = None;
                    send(&error("no ACTIVE port matches the target"))?;
                    continue;
                };
                let endpoint = super::fake_endpoint(me, device, port, &s, target.gid_index);
                spec = Some(s);
                send(&Reply::Ready { endpoint })?;
            }
            Request::Connect { peer: p } => {
                if spec.is_none() {
                    send(&error("connect before prepare"))?;
                    continue;
                }
                peer = Some(p.host);
                send_line(r#"{"v":1,"type":"connected"}"#.into())?;
            }
            Request::Run => {
                let (Some(s), Some(p)) = (&spec, &peer) else {
                    send(&error("run before prepare and connect"))?;
                    continue;
                };
                send_line(r#"{"v":1,"type":"running"}"#.into())?;
                if s.role == Role::Passive {
                    passive_running = true;
                } else if fabric.hangs(me, p) || fabric.knobs.get(me).is_some_and(|k| k.hang_on == Some(s.test)) {
                    // Mute from here on: reads until the controller gives up and closes.
                    while reader.read_line(&mut line)? != 0 {}
                    return Ok(());
                } else {
                    std::thread::sleep(fabric.done_delay);
                    // `--report-every`: one `progress` per interval of the duration, at once
                    // (the fake's clock: no waiting).
                    if let (Some(every), Some(ms)) = (s.report_every_ms, s.duration_ms) {
                        for k in 1..=ms / every {
                            send(&Reply::Progress { interval: interval(s, k * every, fabric.gbps(me, p)) })?;
                        }
                    }
                    let mut result = active_result(s, fabric.gbps(me, p));
                    if fabric.preempted(me, p) {
                        result.lat = result.lat.map(preempted);
                    }
                    if s.test.is_latency() {
                        send(&Reply::Done { result })?;
                    } else if s.paths {
                        let slow = fabric.knobs.get(me).and_then(|k| k.slow_path);
                        send(&Reply::Done { result: with_paths(result, s, slow) })?;
                    } else {
                        // A bandwidth result with the fields the protocol names, by hand.
                        send_line(format!(
                            r#"{{"v":1,"type":"done","result":{{"iterations":{},"bytes":{},"elapsed_ns":{},"peak_gbps":{}}}}}"#,
                            result.iterations,
                            result.bytes,
                            result.elapsed_ns,
                            result.peak_gbps.unwrap()
                        ))?;
                    }
                }
            }
            Request::Stop => {
                // Like the real agent: a stop with nothing running is ignored. A passive
                // receiver asked to `--validate` says what its check found.
                if std::mem::take(&mut passive_running) {
                    let corrupt = fabric.knobs.get(me).is_some_and(|k| k.corrupt);
                    let data = spec.as_ref().and_then(|s| s.validate_seed).map(|seed| data_check(seed, corrupt));
                    send(&Reply::Done { result: RunResult { data, ..RunResult::default() } })?;
                }
            }
            Request::Finish => {
                (spec, peer, passive_running) = (None, None, false);
                send_line(r#"{"v":1,"type":"finished"}"#.into())?;
            }
            Request::Rails { .. } => send(&error("this fake agent has no rails"))?,
            Request::PrepareMember { .. } | Request::ConnectHops { .. } => send(&error("this fake agent runs no collective"))?,
            Request::Check => send(&error("this fake agent has no node to check"))?,
            Request::Bye => {
                send_line(r#"{"v":1,"type":"bye"}"#.into())?;
                return Ok(());
            }
        }
    }
}

fn error(cause: &str) -> Reply {
    Reply::Error { cause: cause.into(), remedy: "fake agent: see the test".into() }
}

/// What the measuring side of a test reports: `gbps` for bandwidth tests, a fixed latency
/// profile for latency tests.
/// `--paths`: the run's bytes split evenly over its QPs, each labelled as a real agent labels
/// it; QP `slow` (if any) takes ten times as long.
fn with_paths(mut result: RunResult, spec: &TestSpec, slow: Option<u32>) -> RunResult {
    let per = result.bytes / u64::from(spec.qps);
    result.paths = (0..spec.qps)
        .map(|k| fabcheck::model::paths::PathRun {
            flow_label: fabcheck::model::paths::flow_label(k),
            bytes: per,
            elapsed_ns: if slow == Some(k) { result.elapsed_ns * 10 } else { result.elapsed_ns },
        })
        .collect();
    result
}

fn active_result(spec: &TestSpec, gbps: f64) -> RunResult {
    let iterations = spec.iters;
    if spec.test.is_latency() {
        let us = LAT_P50_US;
        let lat = LatencySummary {
            min: us - 0.1,
            p50: us,
            p90: us + 0.05,
            p99: us + 0.1,
            p999: us + 0.4,
            max: us + 1.0,
            mean: us,
            stdev: 0.05,
            preempt: None,
        };
        // Round trips of twice the one-way latency.
        let elapsed_ns = (iterations as f64 * 2.0 * us * 1000.0) as u64;
        if spec.test == fabcheck::model::TestKind::LatUnderLoad {
            // The idle profile, then LOADED_FACTOR times it while a load of `gbps` ran.
            let loaded = LatencySummary { p50: us * LOADED_FACTOR, p99: (us + 0.1) * LOADED_FACTOR, ..lat };
            let bytes = (gbps * elapsed_ns as f64 / 8.0) as u64;
            return RunResult { iterations, bytes, elapsed_ns, lat: Some(loaded), idle_lat: Some(Box::new(lat)), ..RunResult::default() };
        }
        return RunResult { iterations, bytes: u64::from(spec.size) * iterations, elapsed_ns, lat: Some(lat), ..RunResult::default() };
    }
    let bytes = u64::from(spec.size) * iterations * u64::from(spec.qps);
    // bytes * 8 / elapsed_ns = Gb/s.
    let elapsed_ns = (bytes as f64 * 8.0 / gbps).round() as u64;
    RunResult { iterations: iterations * u64::from(spec.qps), bytes, elapsed_ns, peak_gbps: Some(gbps), ..RunResult::default() }
}

/// A receiver's `--validate` check: clean, or one bad message (bits 0x10 at offset 4100).
fn data_check(seed: u64, corrupt: bool) -> fabcheck::model::DataCheck {
    let first = corrupt.then_some(fabcheck::model::DataMismatch { message: Some(812), offset: 4100, expected: 0x5a, got: 0x4a, bytes: 1 });
    fabcheck::model::DataCheck { seed, checked: 5500, bad: u64::from(corrupt), first }
}

/// One `--report-every` interval of a running test: the figures its result will hold.
fn interval(spec: &TestSpec, t_ms: u64, gbps: f64) -> fabcheck::model::Interval {
    let lat_us = spec.test.is_latency().then_some(fabcheck::model::IntervalLatency {
        p50: LAT_P50_US,
        p99: LAT_P50_US + 0.1,
        max: LAT_P50_US + 1.0,
        samples: 1000,
    });
    fabcheck::model::Interval { t_ms, gbps: (!spec.test.is_latency()).then_some(gbps), lat_us }
}

/// A latency profile of a loop that lost its CPU: ~8 ms, a quarter of its time in gaps.
fn preempted(l: LatencySummary) -> LatencySummary {
    let gaps = fabcheck::perf::preempt::Preempt { gaps: 30, gap_ns: 240_000_000, elapsed_ns: 1_000_000_000 };
    LatencySummary { p50: 8000.0, p90: 8000.0, p99: 8000.0, p999: 8000.0, max: 8000.0, mean: 8000.0, preempt: Some(gaps), ..l }
}

/// `fabcheck ARGS...` with stdout and stderr captured, under the hang guard (no `--json` added).
pub(crate) fn run_fabcheck(args: &[&str]) -> std::process::Output {
    use std::process::Command;

    super::output_within(
        Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(args).env_remove("FABCHECK_TOKEN"),
        HANG_GUARD,
        &format!("fabcheck {args:?}"),
    )
}
