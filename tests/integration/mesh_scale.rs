//! `fabcheck mesh` end to end at scale, with no RDMA device: the real controller binary against
//! dozens of FAKE agents living in this test process.
//!
//! # The fake agent
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
//! | `run`           | `running`; then an active side (`active`, `both`) sends              |
//! |                 | `done{result}` at once, a passive side waits for `stop`              |
//! | `stop`          | `done{result}` (zeros) if a passive run waits, else nothing          |
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
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The fixture every fake agent reports as its node: two ACTIVE 4X HDR ports at 200 Gb/s.
const FIXTURE: &str = "hdr-ib-healthy";
/// The port rate of that fixture, which mesh takes as the expected rate.
const LINK_GBPS: f64 = 200.0;
/// What a healthy pair measures: 95% of the link, above the default 90% threshold.
const NORMAL_GBPS: f64 = 190.0;
/// A slow node or link runs at this share of normal (57 Gb/s).
const SLOW_SHARE: f64 = 0.3;
/// One-way send latency every pair reports, microseconds.
const LAT_P50_US: f64 = 1.9;
/// A mesh still running after this long is a hang: killed, and the test fails.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// How one fake agent misbehaves. `Default` is a healthy agent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Knobs {
    /// Every pair with this node is slow (a bad NIC, PCIe slot...).
    pub(crate) slow_node: bool,
    /// The pair with this host (e.g. `"fake11"`) is slow (a bad cable or switch port).
    slow_with: Option<String>,
    /// Nothing listens on this agent's port: the endpoint is unreachable.
    dead: bool,
    /// The pair with this host hangs: its measuring side says `running` and then nothing.
    pub(crate) hang_with: Option<String>,
    /// The host name this agent's `hello` reports instead of its own (two agents of one host).
    pub(crate) reported_host: Option<String>,
}

/// The fake agents' host names, as their `hello` reports them.
pub(crate) fn host(i: usize) -> String {
    format!("fake{i:02}")
}

/// What every fake agent shares: the inventory it reports and the fabric's faults.
struct Fabric {
    inventory: Inventory,
    /// By host name.
    knobs: BTreeMap<String, Knobs>,
    /// Pause before an active side's `done`, so a run lasts long enough to watch.
    done_delay: Duration,
    /// Connections each agent accepted, by host name (a re-reached agent counts twice).
    connections: BTreeMap<String, AtomicUsize>,
    /// What a healthy pair measures, Gb/s ([`NORMAL_GBPS`] unless a test says otherwise).
    normal_gbps: f64,
    /// Every `prepare` target the agents received, in arrival order.
    targets: std::sync::Mutex<Vec<Target>>,
    /// Each `prepare`'s agent (its own name) and the CPU slot the controller gave it.
    slots: std::sync::Mutex<Vec<(String, Option<u8>)>>,
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

    /// Whether the test between two hosts hangs.
    fn hangs(&self, a: &str, b: &str) -> bool {
        let knobs = |h: &str| self.knobs.get(h).cloned().unwrap_or_default();
        knobs(a).hang_with.as_deref() == Some(b) || knobs(b).hang_with.as_deref() == Some(a)
    }

    fn connections(&self, host: &str) -> usize {
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
    listeners: Vec<(SocketAddr, JoinHandle<()>)>,
    stop: Arc<AtomicBool>,
    fabric: Arc<Fabric>,
}

impl FakeCluster {
    /// Starts `knobs.len()` agents named `fake00`, `fake01`, ...
    pub(crate) fn start(knobs: Vec<Knobs>, done_delay: Duration) -> FakeCluster {
        FakeCluster::start_at(knobs, done_delay, NORMAL_GBPS)
    }

    /// `start`, with healthy pairs measuring `normal_gbps`.
    fn start_at(knobs: Vec<Knobs>, done_delay: Duration, normal_gbps: f64) -> FakeCluster {
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
        std::thread::spawn(move || {
            let _ = serve(stream, &me, &fabric);
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
                } else if fabric.hangs(me, p) {
                    // Mute from here on: reads until the controller gives up and closes.
                    while reader.read_line(&mut line)? != 0 {}
                    return Ok(());
                } else {
                    std::thread::sleep(fabric.done_delay);
                    let result = active_result(s, fabric.gbps(me, p));
                    if s.test.is_latency() {
                        send(&Reply::Done { result })?;
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
                // Like the real agent: a stop with nothing running is ignored.
                if std::mem::take(&mut passive_running) {
                    send(&Reply::Done { result: RunResult::default() })?;
                }
            }
            Request::Finish => {
                (spec, peer, passive_running) = (None, None, false);
                send_line(r#"{"v":1,"type":"finished"}"#.into())?;
            }
            Request::Rails { .. } => send(&error("this fake agent has no rails"))?,
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
fn active_result(spec: &TestSpec, gbps: f64) -> RunResult {
    let iterations = spec.iters;
    if spec.test.is_latency() {
        let us = LAT_P50_US;
        let lat = LatencySummary { min: us - 0.1, p50: us, p90: us + 0.05, p99: us + 0.1, p999: us + 0.4, max: us + 1.0, mean: us, stdev: 0.05 };
        // Round trips of twice the one-way latency.
        let elapsed_ns = (iterations as f64 * 2.0 * us * 1000.0) as u64;
        return RunResult { iterations, bytes: u64::from(spec.size) * iterations, elapsed_ns, lat: Some(lat), ..RunResult::default() };
    }
    let bytes = u64::from(spec.size) * iterations * u64::from(spec.qps);
    // bytes * 8 / elapsed_ns = Gb/s.
    let elapsed_ns = (bytes as f64 * 8.0 / gbps).round() as u64;
    RunResult { iterations: iterations * u64::from(spec.qps), bytes, elapsed_ns, peak_gbps: Some(gbps), ..RunResult::default() }
}

/// One `fabcheck mesh --json` run.
struct MeshRun {
    output: Output,
    /// Largest `Threads:` seen in the child's /proc status, and how many samples were read.
    max_threads: usize,
    samples: usize,
    /// Largest resident set seen (`VmHWM`), KiB.
    peak_rss_kib: usize,
    /// User + system CPU time of the controller at the last sample, in clock ticks.
    cpu_ticks: u64,
}

impl MeshRun {
    fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    fn doc(&self) -> Value {
        super::json(&self.output)
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// Runs `fabcheck mesh --json ENDPOINTS... EXTRA...` under the hang guard, reading its
/// thread count from /proc every ~5 ms while it runs.
fn run_mesh(endpoints: &[String], extra: &[&str]) -> MeshRun {
    run_mesh_with_env(endpoints, extra, &[])
}

/// `run_mesh` with extra environment (e.g. a PATH holding a fake ssh).
fn run_mesh_with_env(endpoints: &[String], extra: &[&str], env: &[(&str, String)]) -> MeshRun {
    // FABCHECK_MESH_BIN measures another build (e.g. target/release/fabcheck) by hand.
    let bin = std::env::var("FABCHECK_MESH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_fabcheck").into());
    let mut child = Command::new(bin)
        .arg("mesh")
        .arg("--json")
        .args(endpoints)
        .args(extra)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fabcheck mesh");
    // Drained on their own threads: 780 pairs of JSON are far more than a pipe holds.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status_path = format!("/proc/{}/status", child.id());
    let start = Instant::now();
    let (mut max_threads, mut samples, mut peak_rss_kib, mut cpu_ticks) = (0, 0, 0, 0);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for fabcheck mesh") {
            break status;
        }
        if let Some(n) = threads_of(&status_path) {
            max_threads = max_threads.max(n);
            samples += 1;
        }
        if let Some(kib) = status_field(&status_path, "VmHWM:") {
            peak_rss_kib = peak_rss_kib.max(kib);
        }
        cpu_ticks = cpu_ticks_of(&status_path.replace("status", "stat")).unwrap_or(cpu_ticks);
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
            panic!("hang guard: fabcheck mesh of {} endpoints still running after {HANG_GUARD:?}; killed. stderr:\n{err}", endpoints.len());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    MeshRun { output, max_threads, samples, peak_rss_kib, cpu_ticks }
}

/// `Threads:` of a /proc/PID/status; `None` once the process is gone.
fn threads_of(status_path: &str) -> Option<usize> {
    status_field(status_path, "Threads:")
}

/// utime + stime from /proc/PID/stat (fields 14 and 15, after the parenthesised name).
fn cpu_ticks_of(stat_path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(stat_path).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A number from /proc/PID/status (`Threads:`, `VmHWM:` in KiB...).
fn status_field(status_path: &str, field: &str) -> Option<usize> {
    let text = std::fs::read_to_string(status_path).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|n| n.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The doc's `pairs`, split into the first pass and the re-tests.
fn passes(doc: &Value) -> (Vec<&Value>, Vec<&Value>) {
    doc["pairs"].as_array().expect("pairs").iter().partition(|p| p["retest"] != Value::Bool(true))
}

/// A pair record's endpoints, as an ordered key.
fn pair_key(p: &Value) -> (String, String) {
    let (a, b) = (p["a"].as_str().unwrap().to_string(), p["b"].as_str().unwrap().to_string());
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Every unordered pair of `endpoints`, as ordered keys.
fn all_pairs(endpoints: &[String]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (i, a) in endpoints.iter().enumerate() {
        for b in &endpoints[i + 1..] {
            out.insert(if a <= b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) });
        }
    }
    out
}

/// The write_bw figure of a pair record.
fn write_bw(p: &Value) -> Option<f64> {
    p["results"].as_array()?.iter().find(|r| r["test"] == "write_bw")?["bw_gbps"].as_f64()
}

/// Checks a 40-endpoint healthy mesh's document and exit code.
fn assert_uniform_pass(run: &MeshRun, cluster: &FakeCluster) {
    let doc = run.doc();
    assert_eq!(run.code(), Some(0), "suspects: {:#}\nstderr: {}", doc["suspects"], run.stderr());
    assert_eq!(doc["schema"], "fabcheck.mesh.v1");
    assert_eq!(doc["verdict"], "pass");
    let endpoints: Vec<String> = doc["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect();
    assert_eq!(endpoints, cluster.endpoints, "endpoints are named as given, in order");
    let (first, retests) = passes(&doc);
    let n = cluster.endpoints.len();
    assert_eq!(first.len(), n * (n - 1) / 2, "every pair once");
    assert!(retests.is_empty(), "nothing to re-test in a healthy mesh: {} re-tests", retests.len());
    let measured: BTreeSet<(String, String)> = first.iter().map(|p| pair_key(p)).collect();
    assert_eq!(measured, all_pairs(&cluster.endpoints), "each unordered pair exactly once");
    for p in &first {
        assert_eq!(p["verdict"], "pass", "{p:#}");
        assert!(p.get("error").is_none(), "{p:#}");
        let results = p["results"].as_array().unwrap();
        let tests: Vec<(&str, &str)> = results.iter().map(|r| (r["test"].as_str().unwrap(), r["direction"].as_str().unwrap())).collect();
        assert_eq!(tests, [("write_bw", "a->b"), ("send_lat", "a->b")], "the default plan");
        let bw = write_bw(p).unwrap();
        assert!((bw - NORMAL_GBPS).abs() < 0.5, "write_bw {bw} Gb/s, the fakes report {NORMAL_GBPS}: {p:#}");
        let lat = &results[1]["lat_us"];
        assert_eq!(lat["p50"].as_f64(), Some(LAT_P50_US), "{p:#}");
        assert_eq!(results[0]["iterations"].as_u64(), Some(5000), "write_bw's default iterations");
        assert_eq!(results[1]["iterations"].as_u64(), Some(1000), "send_lat's default iterations");
    }
    assert_eq!(doc["suspects"], serde_json::json!([]), "no suspects");
    assert!(doc.get("unreachable").is_none(), "{:#}", doc["unreachable"]);
}

#[test]
fn uniform_cluster_passes() {
    // FABCHECK_MESH_SCALE=N runs it at N endpoints instead (a manual scale measurement; the
    // run's thread count, time and memory are printed with --nocapture).
    let n = std::env::var("FABCHECK_MESH_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let cluster = FakeCluster::healthy(n);
    let start = Instant::now();
    let run = run_mesh(&cluster.endpoints, &[]);
    eprintln!(
        "mesh of {n} fake endpoints: {} pairs in {:.1} s, controller CPU {:.1} s, threads max {}, peak RSS {} KiB",
        n * (n - 1) / 2,
        start.elapsed().as_secs_f64(),
        run.cpu_ticks as f64 / 100.0,
        run.max_threads,
        run.peak_rss_kib
    );
    assert_uniform_pass(&run, &cluster);
}

#[test]
fn bad_node_and_bad_link_are_named() {
    const SLOW_NODE: usize = 5;
    const LINK: (usize, usize) = (2, 11);
    let mut knobs = vec![Knobs::default(); 16];
    knobs[SLOW_NODE].slow_node = true;
    knobs[LINK.0].slow_with = Some(host(LINK.1));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let run = run_mesh(ep, &[]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "suspects: {:#}\nstderr: {}", doc["suspects"], run.stderr());
    assert_eq!(doc["verdict"], "fail");

    // The first pass measured every pair once; the slow ones, and only they, failed.
    let (first, retests) = passes(&doc);
    assert_eq!(first.len(), 16 * 15 / 2);
    let link_key = pair_key(&serde_json::json!({"a": ep[LINK.0], "b": ep[LINK.1]}));
    let is_slow = |p: &Value| p["a"] == ep[SLOW_NODE] || p["b"] == ep[SLOW_NODE] || pair_key(p) == link_key;
    for p in &first {
        let bw = write_bw(p).unwrap_or_else(|| panic!("no write_bw: {p:#}"));
        if is_slow(p) {
            assert_eq!(p["verdict"], "fail", "{p:#}");
            assert!((bw - NORMAL_GBPS * SLOW_SHARE).abs() < 0.5, "{bw} Gb/s: {p:#}");
        } else {
            assert_eq!(p["verdict"], "pass", "{p:#}");
        }
    }

    // The 15 pairs of the slow node and the slow link were re-tested, once each, still slow.
    let retested: BTreeSet<(String, String)> = retests.iter().map(|p| pair_key(p)).collect();
    let want: BTreeSet<(String, String)> = first.iter().filter(|p| is_slow(p)).map(|p| pair_key(p)).collect();
    assert_eq!(want.len(), 16);
    assert_eq!(retests.len(), 16, "each bad pair re-tested once");
    assert_eq!(retested, want);
    assert!(retests.iter().all(|p| p["verdict"] == "fail"), "the slow pairs are slow again");

    // Exactly a node and a link, named as given.
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 2, "{suspects:#?}");
    let node = &suspects[0];
    assert_eq!((node["kind"].as_str(), node["subject"].as_str()), (Some("node"), Some(ep[SLOW_NODE].as_str())), "{node:#}");
    let reason = node["reason"].as_str().unwrap();
    assert!(reason.starts_with("15 of 15 pairs at ~57 Gb/s vs expected 200 Gb/s"), "{reason}");
    assert!(reason.contains("NIC, PCIe slot"), "{reason}");
    let link = &suspects[1];
    let subject = format!("{}<->{}", ep[LINK.0], ep[LINK.1]);
    assert_eq!((link["kind"].as_str(), link["subject"].as_str()), (Some("link"), Some(subject.as_str())), "{link:#}");
    let reason = link["reason"].as_str().unwrap();
    assert!(reason.starts_with("only this pair is slow in both passes (at ~57 Gb/s vs expected 200 Gb/s)"), "{reason}");
    assert!(reason.contains("cable, switch port or route"), "{reason}");
    assert!(doc.get("unreachable").is_none(), "{:#}", doc["unreachable"]);
}

#[test]
fn dead_agent_is_unreachable_not_a_hang() {
    const DEAD: usize = 3;
    let mut knobs = vec![Knobs::default(); 8];
    knobs[DEAD].dead = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let run = run_mesh(ep, &[]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "a dead agent fails the mesh but does not stop it: {}", run.stderr());
    assert_eq!(doc["verdict"], "fail");

    // Named as unreachable, with the reason.
    let unreachable = doc["unreachable"].as_array().unwrap_or_else(|| panic!("no unreachable: {doc:#}"));
    assert_eq!(unreachable.len(), 1, "{unreachable:#?}");
    assert_eq!(unreachable[0]["endpoint"], ep[DEAD]);
    let why = unreachable[0]["error"].as_str().unwrap();
    assert!(why.contains(&format!("cannot reach {}", ep[DEAD])), "{why}");

    // Its pairs fail with that reason and no results; every other pair was still measured.
    let (first, retests) = passes(&doc);
    assert_eq!(first.len(), 8 * 7 / 2);
    let dead_pair = |p: &Value| p["a"] == ep[DEAD] || p["b"] == ep[DEAD];
    for p in &first {
        if dead_pair(p) {
            assert_eq!(p["verdict"], "fail", "{p:#}");
            assert!(p["error"].as_str().is_some_and(|e| e.contains(&ep[DEAD]) && e.contains("cannot reach")), "{p:#}");
            assert_eq!(p["results"], serde_json::json!([]), "{p:#}");
        } else {
            assert_eq!(p["verdict"], "pass", "{p:#}");
            assert!((write_bw(p).unwrap() - NORMAL_GBPS).abs() < 0.5, "{p:#}");
        }
    }
    assert_eq!(first.iter().filter(|p| !dead_pair(p)).count(), 7 * 6 / 2);

    // Its 7 failed pairs were re-tested (and failed again); nothing else was.
    assert_eq!(retests.len(), 7, "{retests:#?}");
    assert!(retests.iter().all(|p| dead_pair(p) && p["verdict"] == "fail" && p["error"].is_string()), "{retests:#?}");

    // Blamed on the node, as unreachable.
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 1, "{suspects:#?}");
    assert_eq!((suspects[0]["kind"].as_str(), suspects[0]["subject"].as_str()), (Some("node"), Some(ep[DEAD].as_str())));
    let reason = suspects[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("7 of 7 pairs failed: agent unreachable"), "{reason}");
}

#[test]
fn controller_stays_single_threaded() {
    // A short pause before each `done` stretches the run so the sampler sees it at work.
    let cluster = FakeCluster::start(vec![Knobs::default(); 40], Duration::from_millis(2));
    let run = run_mesh(&cluster.endpoints, &[]);
    // The run itself must be the healthy 780-pair mesh, or the thread count means nothing.
    assert_uniform_pass(&run, &cluster);
    assert_eq!(
        run.max_threads, 1,
        "the mesh controller ran up to {} threads (max of {} samples of /proc/PID/status every ~5 ms); it should be one event loop",
        run.max_threads, run.samples
    );
}

#[test]
fn a_hung_pair_is_abandoned_and_its_agents_come_back() {
    // fake01 <-> fake04 hangs mid-test (a measuring side that never reports): each time the
    // pair hits the test timeout, both channels are dropped, and both agents are reached
    // again for their next pairs.
    let mut knobs = vec![Knobs::default(); 6];
    knobs[1].hang_with = Some(host(4));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let ep = &cluster.endpoints;
    let run = run_mesh(ep, &["--timeout", "2"]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let (first, retests) = passes(&doc);
    assert_eq!(first.len(), 15);
    let hung = |p: &Value| (p["a"] == ep[1] && p["b"] == ep[4]) || (p["a"] == ep[4] && p["b"] == ep[1]);
    for p in first.iter().chain(&retests) {
        if hung(p) {
            let error = p["error"].as_str().unwrap_or_else(|| panic!("{p:#}"));
            assert!(error.contains("no answer within 2 s while running write_bw"), "{error}");
        } else {
            assert_eq!(p["verdict"], "pass", "every other pair runs, on fresh channels where needed: {p:#}");
        }
    }
    assert_eq!(retests.len(), 1, "{retests:#?}");
    assert!(hung(retests[0]));
    // Reached once at the start, again after each hang (first pass and re-test).
    for i in [1, 4] {
        assert!(cluster.fabric.connections(&host(i)) >= 2, "{} connected {} times", host(i), cluster.fabric.connections(&host(i)));
    }
    assert_eq!(cluster.fabric.connections(&host(0)), 1, "healthy agents keep their one channel");
    let suspects = doc["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 1, "{suspects:#?}");
    assert_eq!(suspects[0]["kind"], "link", "{suspects:#?}");
    assert!(doc.get("unreachable").is_none());
}

#[test]
fn ssh_agents_start_in_bounded_parallel_and_none_outlives_the_mesh() {
    // 48 ssh endpoints through tests/fake-ssh (which runs the "remote" command here): every
    // agent is a child with its pipes on the one-thread hub, started 8 at a time. Each answers
    // hello and then fails its inventory, so every endpoint ends up named with that cause; what
    // matters here is the fan-out and the clean-up. That needs a host whose libibverbs lists no
    // device (the host tier's machines): with devices the agents would answer the inventory and
    // run 1128 pairs. Decided by the host, never skipped: elsewhere this test fails and says why.
    let host = super::host_rdma();
    if let super::HostRdma::Devices(names) = &host {
        panic!(
            "this test needs a host without RDMA devices, and this one has {names:?}: run the host tier on such a \
             host; tests/run-all.sh with FABCHECK_RXE_NATIVE=1 on an RDMA host leaves it out by name and says so"
        );
    }
    let cause = host.agent_cause("mlx5_0");
    let dir = std::env::temp_dir().join(format!("fabcheck-fanout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A path of its own, so the processes it starts can be told from other tests' agents.
    let remote = dir.join("fabcheck");
    let _ = std::fs::remove_file(&remote);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fabcheck"), &remote).unwrap();
    let log = dir.join("ssh.log");
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-ssh");
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let endpoints: Vec<String> = (0..48).map(|i| format!("node{i:02}/mlx5_0")).collect();
    let remote_arg = remote.to_str().unwrap();
    let run = run_mesh_with_env(
        &endpoints,
        &["--fanout", "8", "--remote-fabcheck", remote_arg],
        &[("PATH", path), ("FAKE_SSH_LOG", log.display().to_string())],
    );
    // Not one endpoint could be reached: the mesh could not run (exit 2), and says why for each.
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("no endpoint could be reached"), "{}", run.stderr());
    let doc = run.doc();
    let unreachable = doc["unreachable"].as_array().unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(unreachable.len(), 48);
    assert!(doc["suspects"].as_array().unwrap().is_empty(), "no link is blamed when nothing ran: {doc:#}");
    for u in unreachable {
        let error = u["error"].as_str().unwrap();
        let endpoint = u["endpoint"].as_str().unwrap();
        assert!(error.starts_with(&format!("{endpoint}: {cause}")), "hello worked, the inventory named the cause ({host:?}): {error}");
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    let hosts: BTreeSet<&str> = calls.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(hosts.len(), 48, "{calls}");
    assert!(calls.lines().all(|l| l.ends_with(&format!("{remote_arg} agent"))), "{calls}");
    assert_eq!(run.max_threads, 1, "one thread for 48 ssh children ({} samples)", run.samples);
    // Nothing the mesh started outlives it.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(remote_arg))
        .collect();
    assert!(left.is_empty(), "agents left running: {left:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// One `fabcheck pair --json` between two endpoints (fake agents), under the hang guard's limit.
fn run_pair(endpoints: [&str; 2], extra: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .arg("pair")
        .args(endpoints)
        .arg("--json")
        .args(extra)
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fabcheck pair");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            panic!("hang guard: fabcheck pair still running after {HANG_GUARD:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn pair_threshold_90_fails_at_89_percent_with_exit_1_and_passes_at_91() {
    // 4X HDR: 200 Gb/s. 178 Gb/s is 89%, 182 Gb/s is 91%.
    for (gbps, want_exit, verdict) in [(178.0, 1, "fail"), (182.0, 0, "pass")] {
        let cluster = FakeCluster::start_at(vec![Knobs::default(); 2], Duration::ZERO, gbps);
        let ep = &cluster.endpoints;
        let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw", "--direction", "ab", "--threshold", "90"]);
        let doc = super::json(&out);
        assert_eq!(out.status.code(), Some(want_exit), "{gbps} Gb/s at --threshold 90: {doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(doc["schema"], "fabcheck.pair.v1");
        assert_eq!(doc["verdict"], verdict, "{doc:#}");
        let results = doc["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{doc:#}");
        assert_eq!((results[0]["test"].as_str(), results[0]["direction"].as_str()), (Some("write_bw"), Some("a->b")));
        let bw = results[0]["bw_gbps"].as_f64().unwrap();
        assert!((bw - gbps).abs() < 0.5, "bw_gbps {bw}, the fakes report {gbps}");
        let findings: Vec<(&str, &str)> =
            doc["findings"].as_array().unwrap().iter().map(|f| (f["id"].as_str().unwrap(), f["severity"].as_str().unwrap())).collect();
        if want_exit == 1 {
            assert_eq!(findings, [("pair.bw", "error")], "{doc:#}");
            let message = doc["findings"][0]["message"].as_str().unwrap();
            assert!(message.contains("89% of the 200 Gb/s link (needs 90%)"), "{message}");
        } else {
            assert_eq!(findings, [], "{doc:#}");
        }
    }
    // The same 89% passes at the default threshold's neighbour --threshold 85.
    let cluster = FakeCluster::start_at(vec![Knobs::default(); 2], Duration::ZERO, 178.0);
    let out = run_pair([&cluster.endpoints[0], &cluster.endpoints[1]], &["--tests", "write_bw", "--direction", "ab", "--threshold", "85"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn impossible_figures_from_an_agent_are_a_protocol_error_not_a_pass() {
    // Regression (issue #27 item 14): an agent reporting 1e308 Gb/s passed every threshold,
    // and -5 Gb/s failed as a slow link; both are now a broken agent (exit 2, named).
    for gbps in [1e308, -5.0] {
        let cluster = FakeCluster::start_at(vec![Knobs::default(); 2], Duration::ZERO, gbps);
        let ep = &cluster.endpoints;
        let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw", "--direction", "ab"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{gbps} Gb/s: {err}");
        assert!(err.contains(&format!("it sent a bad message: it reported a peak_gbps of {gbps} Gb/s")), "{err}");
    }
}

#[test]
fn pair_max_latency_is_exit_1_above_and_0_at_the_limit() {
    // The fakes report a p50 of 1.9 us.
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "send_lat", "--direction", "ab", "--max-lat-us", "1.8"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!((doc["findings"][0]["id"].as_str(), doc["findings"][0]["severity"].as_str()), (Some("pair.latency"), Some("error")));
    assert_eq!(doc["results"][0]["lat_us"]["p50"].as_f64(), Some(LAT_P50_US));
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "send_lat", "--direction", "ab", "--max-lat-us", "1.9"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn gid_index_reaches_both_agents() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "send_lat", "--direction", "ab", "--gid-index", "3"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let targets = cluster.fabric.targets.lock().unwrap().clone();
    assert_eq!(targets.len(), 2, "one prepare per side: {targets:?}");
    assert!(targets.iter().all(|t| t.gid_index == Some(3)), "{targets:?}");
    assert_eq!(doc["a"]["gid_index"], 3, "{doc:#}");
    assert_eq!(doc["b"]["gid_index"], 3, "{doc:#}");
    // Without the flag the agents choose.
    let cluster = FakeCluster::healthy(2);
    let out = run_pair([&cluster.endpoints[0], &cluster.endpoints[1]], &["--tests", "send_lat", "--direction", "ab"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(cluster.fabric.targets.lock().unwrap().iter().all(|t| t.gid_index.is_none()));
}

/// Issue #28 item 4: mesh pins its agents as pair does, agents of one host on distinct CPU
/// slots (the one CPU allocator's `host_slots`): fake01 says it is fake00's host.
#[test]
fn mesh_gives_agents_of_one_host_distinct_cpu_slots() {
    let mut knobs = vec![Knobs::default(); 3];
    knobs[1].reported_host = Some(host(0));
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let run = run_mesh(&cluster.endpoints, &["--tests", "write_bw"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let slots = cluster.fabric.slots.lock().unwrap().clone();
    let of = |agent: &str| -> BTreeSet<Option<u8>> { slots.iter().filter(|(a, _)| a == agent).map(|(_, s)| *s).collect() };
    assert_eq!(of(&host(0)), BTreeSet::from([Some(0)]), "{slots:?}");
    assert_eq!(of(&host(1)), BTreeSet::from([Some(1)]), "fake01 is fake00's host's second agent: {slots:?}");
    assert_eq!(of(&host(2)), BTreeSet::from([Some(0)]), "alone on its host: {slots:?}");
}

#[test]
fn mesh_from_a_hostfile_and_its_threshold() {
    let cluster = FakeCluster::start_at(vec![Knobs::default(); 4], Duration::ZERO, 178.0);
    let file = std::env::temp_dir().join(format!("fabcheck-hostfile-{}", std::process::id()));
    let text =
        format!("# four fake agents\n{}\n\n{}\n{}\n{}\n", cluster.endpoints[0], cluster.endpoints[1], cluster.endpoints[2], cluster.endpoints[3]);
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap();
    // 89% of the link: every pair fails at the default 90%, and passes at 85%.
    let run = run_mesh(&[], &["--hostfile", path]);
    let doc = run.doc();
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let endpoints: Vec<&str> = doc["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(endpoints, cluster.endpoints.iter().map(String::as_str).collect::<Vec<_>>(), "the hostfile's endpoints, in order");
    let (first, _) = passes(&doc);
    assert_eq!(first.len(), 6);
    assert!(first.iter().all(|p| p["verdict"] == "fail"), "{doc:#}");
    let run = run_mesh(&[], &["--hostfile", path, "--threshold", "85"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let doc = run.doc();
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(passes(&doc).0.len(), 6);
    std::fs::remove_file(&file).ok();
}

#[test]
fn an_unwritable_heat_map_keeps_the_results() {
    // Regression (issue 14): `--html` to a path that cannot be written threw the whole run away.
    let cluster = FakeCluster::healthy(4);
    let run = run_mesh(&cluster.endpoints, &["--html", "/nonexistent/fabcheck/mesh.html"]);
    // The mesh passed but could not do all it was asked: exit 2, after the results.
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("heat map could not be written to /nonexistent/fabcheck/mesh.html"), "{}", run.stderr());
    let doc = run.doc();
    assert_eq!(doc["verdict"], "pass", "{doc:#}");
    assert_eq!(doc["pairs"].as_array().map(Vec::len), Some(6), "every pair's results are on stdout");
}

/// `fabcheck ARGS...` with stdout and stderr captured, under the hang guard (no `--json` added).
fn run_fabcheck(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(args)
        .env_remove("FABCHECK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fabcheck");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            panic!("hang guard: fabcheck {args:?} still running after {HANG_GUARD:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// A fresh temporary directory for one test's side files.
fn side_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-side-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A page of ours as XML: the heat map is XHTML with an HTML5 doctype.
fn parse_page(text: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(text, options).unwrap_or_else(|e| panic!("the page is not well-formed XML: {e}"))
}

#[test]
fn mesh_progress_is_round_lines_on_stderr_and_stdout_stays_one_document() {
    let mut knobs = vec![Knobs::default(); 6];
    knobs[2].slow_node = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let run = run_mesh(&cluster.endpoints, &["--progress"]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    // stdout: exactly the document (it parses whole), nothing else.
    let doc = run.doc();
    assert_eq!(doc["schema"], "fabcheck.mesh.v1");
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.first().copied(), Some("reached 6 agents"), "{stderr}");
    // All-pairs of 6: 5 rounds, then the slow node's 5 pairs re-tested in rounds of their own.
    for r in 1..=5 {
        assert!(lines.iter().any(|l| l.starts_with(&format!("round {r}/5, ")) && l.ends_with(" bad so far")), "round {r}: {stderr}");
    }
    assert!(lines.contains(&"round 5/5, 5 bad so far"), "the slow node's 5 pairs failed: {stderr}");
    assert!(lines.iter().any(|l| l.starts_with("retest round 1/")), "{stderr}");
    assert!(!stderr.contains('\r'), "not a terminal: plain lines, no status line rewritten");
    // Not a terminal and no --progress: silent.
    let run = run_mesh(&cluster.endpoints, &[]);
    assert!(!run.stderr().contains("round"), "{}", run.stderr());
    // --progress wins over --quiet; --no-progress after it silences.
    let run = run_mesh(&cluster.endpoints, &["--quiet", "--progress"]);
    assert!(run.stderr().contains("round 1/5"), "{}", run.stderr());
    let run = run_mesh(&cluster.endpoints, &["--progress", "--no-progress"]);
    assert!(!run.stderr().contains("round"), "{}", run.stderr());
}

#[test]
fn mesh_quiet_keeps_the_problems_and_the_verdict_only() {
    let mut knobs = vec![Knobs::default(); 4];
    knobs[3].slow_node = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let mut args = vec!["mesh"];
    args.extend(cluster.endpoints.iter().map(String::as_str));
    let full = run_fabcheck(&args);
    let full = String::from_utf8_lossy(&full.stdout).into_owned();
    assert!(full.contains("bandwidth (Gb/s), slowest direction"), "{full}");
    args.push("--quiet");
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("bandwidth (Gb/s)") && !text.contains("190.000"), "no matrix of ok rows with --quiet:\n{text}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{text}");
    // 0.3: named by the agent's host, the address as given after it.
    assert!(lines[0].starts_with(&format!("SUSPECT node   {} ({})", host(3), cluster.endpoints[3])), "{text}");
    assert!(lines[1].starts_with("FAIL: 4 endpoints, 6 pairs"), "{text}");
    assert!(out.stderr.is_empty(), "quiet: nothing on stderr: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn pair_progress_and_quiet() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let out = run_pair([&ep[0], &ep[1]], &["--tests", "write_bw,send_lat", "--direction", "both", "--progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    assert_eq!(doc["results"].as_array().map(Vec::len), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let want = ["[1/2] write_bw 65536 B: a->b 190.0 Gb/s, b->a 190.0 Gb/s", "[2/2] send_lat 2 B: a->b p50 1.9 us, b->a p50 1.9 us"];
    assert_eq!(lines, want, "{stderr}");

    // --quiet, human: a passing run is its verdict.
    let mut args = vec!["pair", ep[0].as_str(), ep[1].as_str(), "--tests", "write_bw", "--direction", "ab"];
    let out = run_fabcheck(&args);
    assert!(String::from_utf8_lossy(&out.stdout).contains("write_bw   a->b"));
    args.push("--quiet");
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "PASS\n");
    // A failing one keeps its error finding and verdict, not the ok rows.
    args.extend(["--threshold", "96"]);
    let out = run_fabcheck(&args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("ERROR   pair.bw") && text.ends_with("\nFAIL\n") && !text.contains("write_bw   a->b"), "{text}");
}

#[test]
fn pair_sweep_writes_csv_and_an_svg_plot() {
    let cluster = FakeCluster::healthy(2);
    let ep = &cluster.endpoints;
    let dir = side_dir("sweep");
    let (csv, svg) = (dir.join("sweep.csv"), dir.join("sweep.svg"));
    let args = [
        "--tests",
        "write_bw,send_lat",
        "--direction",
        "ab",
        "--sweep",
        "--iters",
        "20",
        "--csv",
        csv.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ];
    let out = run_pair([&ep[0], &ep[1]], &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = super::json(&out);
    assert_eq!(doc["results"].as_array().map(Vec::len), Some(46));

    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(&header[..3], ["test", "direction", "size"]);
    assert_eq!(lines.len(), 1 + 46);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let bw: Vec<(u32, f64)> =
        rows.iter().filter(|r| r[0] == "write_bw").map(|r| (r[col("size")].parse().unwrap(), r[col("bw_gbps")].parse().unwrap())).collect();
    assert_eq!(bw.len(), 23);
    assert_eq!(bw.first().map(|b| b.0), Some(2));
    assert_eq!(bw.last().map(|b| b.0), Some(8 << 20));
    // (The fakes' tiny messages take a nanosecond or two, so only the large sizes are exact.)
    assert!(bw.iter().filter(|b| b.0 >= 65536).all(|&(_, g)| (g - NORMAL_GBPS).abs() < 0.5), "{bw:?}");
    assert!(rows.iter().filter(|r| r[0] == "send_lat").all(|r| r[col("lat_p50_us")] == "1.9" && r[col("bw_gbps")].is_empty()));

    let text = std::fs::read_to_string(&svg).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(xml.root_element().tag_name().name(), "svg");
    let series: Vec<_> = xml.descendants().filter(|n| n.attribute("class") == Some("series")).collect();
    let names: Vec<&str> = series.iter().filter_map(|n| n.attribute("data-name")).collect();
    assert_eq!(names, ["write_bw a->b", "send_lat p50", "send_lat p99"]);
    for s in &series {
        let points = s.children().find(|n| n.has_tag_name("polyline")).and_then(|n| n.attribute("points")).unwrap();
        let xs: Vec<f64> = points.split(' ').map(|p| p.split(',').next().unwrap().parse().unwrap()).collect();
        assert_eq!(xs.len(), 23, "a point per size");
        // log2 axis: every doubling the same step to the right.
        let steps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(steps.iter().all(|s| (s - steps[0]).abs() < 0.2), "{steps:?}");
    }
    assert_eq!(xml.descendants().filter(|n| n.attribute("class") == Some("capacity")).count(), 1, "the 200 Gb/s capacity line");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mesh_csv_and_heat_map_parse_and_hold_every_pair() {
    let mut knobs = vec![Knobs::default(); 6];
    knobs[4].slow_node = true;
    let cluster = FakeCluster::start(knobs, Duration::ZERO);
    let dir = side_dir("mesh");
    let (csv, html) = (dir.join("mesh.csv"), dir.join("mesh.html"));
    let run = run_mesh(&cluster.endpoints, &["--csv", csv.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let doc = run.doc();
    let pairs = doc["pairs"].as_array().unwrap();

    // CSV: a row per pair and test, first pass and re-tests.
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "a,b,test,direction,size,value,unit,verdict,pass,error");
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), pairs.len() * 2, "write_bw and send_lat of every record");
    assert_eq!(rows.iter().filter(|r| r[8] == "first").count(), 15 * 2);
    assert_eq!(rows.iter().filter(|r| r[8] == "retest").count(), 5 * 2);
    let slow = &cluster.endpoints[4];
    for r in &rows {
        assert_eq!(r.len(), 10);
        let involves = r[0] == slow || r[1] == slow;
        if r[2] == "write_bw" {
            let v: f64 = r[5].parse().unwrap();
            let want = if involves { NORMAL_GBPS * SLOW_SHARE } else { NORMAL_GBPS };
            assert!((v - want).abs() < 0.5 && r[6] == "Gb/s", "{r:?}");
            assert_eq!(r[7], if involves { "fail" } else { "pass" }, "{r:?}");
        } else {
            assert_eq!((r[2], r[5], r[6]), ("send_lat", "1.9", "us"));
        }
    }
    assert!(!dir.read_dir().unwrap().any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp")), "no temporary file left");

    // The page: verdict, parameters, the expected rate, both maps, the suspect in words.
    let text = std::fs::read_to_string(&html).unwrap();
    let page = parse_page(&text);
    let by_id = |id: &str| page.descendants().find(|n| n.attribute("id") == Some(id)).unwrap_or_else(|| panic!("no #{id}"));
    assert_eq!(by_id("verdict").text(), Some("✕ FAIL"));
    let params: BTreeMap<String, String> = by_id("params")
        .children()
        .filter(|n| n.has_tag_name("tr"))
        .map(|tr| {
            let cells: Vec<String> = tr.children().filter(|n| n.is_element()).map(|n| n.text().unwrap_or_default().to_string()).collect();
            (cells[0].clone(), cells[1].clone())
        })
        .collect();
    assert_eq!(params["tests"], "write_bw, send_lat");
    assert_eq!(params["size"], "65536 B (write_bw), 2 B (send_lat)");
    assert_eq!(params["iterations"], "5000 (write_bw), 1000 (send_lat)");
    assert_eq!(params["QPs"], "1");
    assert!(params["pattern"].starts_with("all-pairs, 5 rounds"), "{params:?}");
    let expected: String = by_id("expected").descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
    // 0.3: each pair against its own two ends' capacity (issue #28 item 2), said in the legend.
    assert!(expected.contains("the capacity of the full-speed pairs (each pair is judged against its own: the smaller of its two ends' link, or PCIe where smaller; the JSON's judged_against_gbps says which): 200 Gb/s"), "{expected}");
    for map in ["map-bw", "map-lat"] {
        let rects: Vec<_> = by_id(map).descendants().filter(|n| n.has_tag_name("rect")).collect();
        let count = |class: &str| rects.iter().filter(|n| n.attribute("class") == Some(class)).count();
        assert_eq!(count("cell") + count("cell bad"), 30, "{map}");
        assert_eq!(count("cell bad"), if map == "map-bw" { 10 } else { 0 }, "{map}: the slow node's row and column");
    }
    let suspects = by_id("suspects");
    let row: Vec<String> = suspects.descendants().filter(|n| n.has_tag_name("td")).filter_map(|n| n.text()).map(String::from).collect();
    assert_eq!(&row[..2], ["node".to_string(), slow.clone()]);
    std::fs::remove_dir_all(&dir).ok();
}
