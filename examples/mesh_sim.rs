//! Simulated agents for `benches/mesh-scale.sh`: thousands of `fabcheck serve`s in one process
//! and one thread, speaking the real protocol (`fabcheck::control::protocol`) on loopback.
//!
//! Agent `i` listens on `127.0.0.1:PORT_i`, says it is host `nIIIII` (`n00042`), reports the
//! `hdr-ib-healthy` fixture's inventory (4X HDR, 200 Gb/s) and answers `prepare`, `connect`,
//! `run`, `stop`, `finish` and `bye` as `tests/integration/mesh_scale.rs`'s fake agents do:
//! the measuring side's figures come from one fabric model shared by every agent, so a fault
//! shows whichever end of a pair measures. Faults, by agent index:
//!
//! - `--slow-node I`: every pair with I is slow;
//! - `--slow-link I:J`: the pair I-J is slow; `I:?`, the pair of I with the first partner
//!   it is measured with (so the pattern surely measures it), slow from then on;
//! - `--slow-uplink L`: every pair with exactly one end on leaf L (agents `L*S .. L*S+S-1`
//!   with `--leaf-size S`) is slow, pairs inside the leaf are fine;
//! - `--flaky I:J` (or `I:?`): the pair is slow the first time it is measured, fine after;
//! - `--rails N`: every agent is a node of N rails (`mlx5_0`..: the fixture's port N times),
//!   answers `rails` (for `mesh --rails`) and takes a connection per rail at once;
//!   `--slow-rail I:K`: rail K of agent I is slow (a bad NIC), its other rails fine.
//!
//! Slow is `--slow-share` (0.3) of `--gbps` (190). `--hostfile FILE` gets one
//! `tcp://127.0.0.1:PORT` line per agent once all listen; `--topology FILE` an ibnetdiscover
//! description of leaves of `--leaf-size` hosts under two spines. Runs until killed.
//!
//! `cargo build --release --example mesh_sim`

use fabcheck::control::protocol::{decode, encode, Endpoint, Reply, Request, Role, RunResult, TestSpec};
use fabcheck::model::rails::{Rail, RailSpec};
use fabcheck::perf::summary::LatencySummary;
use fabcheck::port::PortState;
use fabcheck::probe::{self, Inventory};
use fabcheck::sys::io::{self, Interest, Readiness};
use std::collections::{HashMap, HashSet};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub struct Options {
    pub agents: usize,
    pub hostfile: PathBuf,
    pub topology: Option<PathBuf>,
    pub leaf_size: usize,
    pub gbps: f64,
    pub slow_share: f64,
    pub lat_us: f64,
    pub slow_nodes: HashSet<usize>,
    pub slow_links: HashSet<(usize, usize)>,
    pub slow_uplinks: HashSet<usize>,
    pub flaky: HashSet<(usize, usize)>,
    /// `I:?`: endpoints whose first pair measured becomes a slow link, or flaky.
    pub slow_link_of: HashSet<usize>,
    pub flaky_of: HashSet<usize>,
    /// `--rails N`: rails per node (0: a node of one port that does not answer `rails`).
    pub rails: usize,
    /// `--slow-rail I:K`.
    pub slow_rails: HashSet<(usize, usize)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            agents: 0,
            hostfile: PathBuf::new(),
            topology: None,
            leaf_size: 32,
            gbps: 190.0,
            slow_share: 0.3,
            lat_us: 1.9,
            slow_nodes: HashSet::new(),
            slow_links: HashSet::new(),
            slow_uplinks: HashSet::new(),
            flaky: HashSet::new(),
            slow_link_of: HashSet::new(),
            flaky_of: HashSet::new(),
            rails: 0,
            slow_rails: HashSet::new(),
        }
    }
}

fn usage(why: &str) -> ! {
    eprintln!("mesh_sim: {why}\nusage: mesh_sim --agents N --hostfile FILE [--topology FILE] [--leaf-size S] [--gbps G] [--slow-share F] [--slow-node I]... [--slow-link I:J]... [--slow-uplink L]... [--flaky I:J]... [--rails N [--slow-rail I:K]...]");
    std::process::exit(2)
}

/// `I:J`, or `I:?` (`None`): I and its first partner.
fn pair_arg(text: &str) -> Result<(usize, usize), usize> {
    let (a, b) = text.split_once(':').unwrap_or_else(|| usage("a pair is I:J or I:?"));
    if b == "?" {
        return Err(a.parse().unwrap_or_else(|_| usage("I:? starts with a number")));
    }
    let (a, b): (usize, usize) = (a.parse().unwrap_or_else(|_| usage("I:J are numbers")), b.parse().unwrap_or_else(|_| usage("I:J are numbers")));
    Ok((a.min(b), a.max(b)))
}

fn options() -> Options {
    let mut o = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let number = |v: String| v.parse::<f64>().unwrap_or_else(|_| usage("not a number"));
        match flag.as_str() {
            "--agents" => o.agents = number(value()) as usize,
            "--hostfile" => o.hostfile = value().into(),
            "--topology" => o.topology = Some(value().into()),
            "--leaf-size" => o.leaf_size = (number(value()) as usize).max(1),
            "--gbps" => o.gbps = number(value()),
            "--slow-share" => o.slow_share = number(value()),
            "--lat-us" => o.lat_us = number(value()),
            "--slow-node" => {
                o.slow_nodes.insert(number(value()) as usize);
            }
            "--slow-link" => match pair_arg(&value()) {
                Ok(p) => _ = o.slow_links.insert(p),
                Err(i) => _ = o.slow_link_of.insert(i),
            },
            "--slow-uplink" => {
                o.slow_uplinks.insert(number(value()) as usize);
            }
            "--flaky" => match pair_arg(&value()) {
                Ok(p) => _ = o.flaky.insert(p),
                Err(i) => _ = o.flaky_of.insert(i),
            },
            "--rails" => o.rails = (number(value()) as usize).min(fabcheck::model::rails::MAX_RAILS),
            "--slow-rail" => {
                let text = value();
                let (i, k) = text.split_once(':').unwrap_or_else(|| usage("--slow-rail is I:K"));
                o.slow_rails.insert((number(i.into()) as usize, number(k.into()) as usize));
            }
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if o.agents < 2 || o.hostfile.as_os_str().is_empty() {
        usage("--agents (at least 2) and --hostfile are required");
    }
    o
}

/// Rail `k`'s device on a `--rails` node.
fn rail_device(k: usize) -> String {
    format!("mlx5_{k}")
}

/// The rail a device name is (`mlx5_K`), on a `--rails` node.
fn rail_of(device: &str) -> Option<usize> {
    device.strip_prefix("mlx5_")?.parse().ok()
}

fn host(i: usize) -> String {
    format!("n{i:05}")
}

fn index_of(host: &str) -> Option<usize> {
    host.strip_prefix('n')?.parse().ok()
}

/// The fabric every agent shares.
struct Fabric {
    o: Options,
    inventory_line: String,
    /// Bandwidth measurements so far, by pair (for `--flaky`).
    measured: HashMap<(usize, usize), u32>,
}

impl Fabric {
    fn gbps(&mut self, a: usize, b: usize) -> f64 {
        let k = (a.min(b), a.max(b));
        // An `I:?` fault goes on a pair no other fault touches, so each shows on its own.
        let o = &self.o;
        let leaf_fault = |e: usize| o.slow_uplinks.contains(&(e / o.leaf_size));
        let touched = |e: usize| o.slow_nodes.contains(&e) || leaf_fault(e) || o.slow_links.iter().chain(&o.flaky).any(|&(x, y)| x == e || y == e);
        if touched(a) || touched(b) {
            return self.model(k);
        }
        for e in [a, b] {
            if self.o.slow_link_of.remove(&e) {
                eprintln!("mesh_sim: slow link {}:{}", k.0, k.1);
                self.o.slow_links.insert(k);
            }
            if self.o.flaky_of.remove(&e) {
                eprintln!("mesh_sim: flaky pair {}:{}", k.0, k.1);
                self.o.flaky.insert(k);
            }
        }
        self.model(k)
    }

    fn model(&mut self, k: (usize, usize)) -> f64 {
        let (a, b) = k;
        let o = &self.o;
        let mut gbps = o.gbps;
        if o.slow_nodes.contains(&a) || o.slow_nodes.contains(&b) {
            gbps *= o.slow_share;
        }
        if o.slow_links.contains(&k) {
            gbps *= o.slow_share;
        }
        let (la, lb) = (a / o.leaf_size, b / o.leaf_size);
        if la != lb && (o.slow_uplinks.contains(&la) || o.slow_uplinks.contains(&lb)) {
            gbps *= o.slow_share;
        }
        let seen = self.measured.entry(k).or_insert(0);
        if self.o.flaky.contains(&k) && *seen == 0 {
            gbps *= self.o.slow_share;
        }
        *seen += 1;
        gbps
    }
}

/// One controller connection to agent `agent`.
struct Conn {
    agent: usize,
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    spec: Option<TestSpec>,
    peer: Option<usize>,
    /// `--rails`: the rail this connection's test runs on, and its peer's.
    rail: Option<usize>,
    peer_rail: Option<usize>,
    passive_running: bool,
    closed: bool,
}

fn main() {
    let o = options();
    let (hostfile, topology_file) = (o.hostfile.clone(), o.topology.clone());
    let sim = Sim::bind(o);
    if let Some(path) = &topology_file {
        std::fs::write(path, topology(sim.endpoints.len(), sim.fabric.o.leaf_size)).expect("write the topology");
    }
    let partial = hostfile.with_extension("partial");
    std::fs::write(&partial, sim.endpoints.iter().map(|e| format!("{e}\n")).collect::<String>()).expect("write the hostfile");
    std::fs::rename(&partial, &hostfile).expect("publish the hostfile");
    sim.run(&AtomicBool::new(false));
}

/// The agents, bound and listening; `run` answers them (on the calling thread) until `stop`.
pub struct Sim {
    /// `tcp://127.0.0.1:PORT`, by agent.
    pub endpoints: Vec<String>,
    listeners: Vec<Option<TcpListener>>,
    ports: Vec<std::net::SocketAddr>,
    fabric: Fabric,
    device: probe::Device,
    port: probe::Port,
}

impl Sim {
    pub fn bind(o: Options) -> Sim {
        let n = o.agents;
        // One descriptor per agent: a listener, or once the controller is connected its connection
        // (the listener is closed meanwhile and bound again when the connection ends), so that
        // 10,000 agents fit a 20,000-file limit next to a controller on its own 10,000.
        let want = n as u64 + 64;
        let got = fabcheck::sys::io::raise_open_files(want);
        if got < want {
            usage(&format!("{n} agents need {want} open files; the limit is {got} (raise `ulimit -Hn`)"));
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hdr-ib-healthy");
        let mut inventory: Inventory = probe::inventory(&probe::Source::Sysfs(root), None).expect("the hdr-ib-healthy fixture's inventory");
        let (device, port) =
            inventory.ports().find(|(_, p)| p.state == PortState::Active).map(|(d, p)| (d.clone(), p.clone())).expect("an ACTIVE port");
        if o.rails > 0 {
            inventory.devices = (0..o.rails).map(|k| probe::Device { name: rail_device(k), ports: vec![port.clone()], ..device.clone() }).collect();
        }
        let inventory_line = encode(&Reply::Inventory { inventory: inventory.clone() });

        let mut listeners: Vec<Option<TcpListener>> = Vec::with_capacity(n);
        let mut ports = Vec::with_capacity(n);
        let mut endpoints = Vec::with_capacity(n);
        for _ in 0..n {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            l.set_nonblocking(true).expect("non-blocking");
            let addr = l.local_addr().expect("address");
            endpoints.push(format!("tcp://{addr}"));
            ports.push(addr);
            listeners.push(Some(l));
        }
        Sim { endpoints, listeners, ports, fabric: Fabric { o, inventory_line, measured: HashMap::new() }, device, port }
    }

    pub fn run(self, stop: &AtomicBool) {
        let Sim { mut listeners, ports, mut fabric, device, port, .. } = self;
        let n = listeners.len();
        let mut conns: Vec<Conn> = Vec::new();
        let mut readiness: Vec<Readiness> = Vec::new();
        // (kind, index): 0 = listener of agent, 1 = conn read, 2 = conn write.
        let mut slots: Vec<(u8, usize)> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            slots.clear();
            let mut fds = Vec::with_capacity(n + conns.len() * 2);
            for (i, l) in listeners.iter().enumerate() {
                if let Some(l) = l {
                    fds.push((l.as_fd(), Interest::Read));
                    slots.push((0, i));
                }
            }
            for (c, conn) in conns.iter().enumerate() {
                fds.push((conn.stream.as_fd(), Interest::Read));
                slots.push((1, c));
                if !conn.output.is_empty() {
                    fds.push((conn.stream.as_fd(), Interest::Write));
                    slots.push((2, c));
                }
            }
            if io::wait(&fds, Duration::from_millis(100), &mut readiness).is_err() {
                continue;
            }
            drop(fds);
            for k in 0..slots.len() {
                let (kind, i) = slots[k];
                let r = readiness[k];
                match kind {
                    0 if r.readable => {
                        if let Some(Ok((stream, _))) = listeners[i].as_ref().map(TcpListener::accept) {
                            let _ = stream.set_nonblocking(true);
                            let _ = stream.set_nodelay(true);
                            // A node of rails takes a connection per rail at once: it keeps listening.
                            if fabric.o.rails == 0 {
                                listeners[i] = None;
                            }
                            conns.push(Conn {
                                agent: i,
                                stream,
                                input: Vec::new(),
                                output: Vec::new(),
                                spec: None,
                                peer: None,
                                rail: None,
                                peer_rail: None,
                                passive_running: false,
                                closed: false,
                            });
                        }
                    }
                    1 if r.readable => {
                        let conn = &mut conns[i];
                        let mut buf = [0u8; 16384];
                        loop {
                            match conn.stream.read(&mut buf) {
                                Ok(0) => {
                                    conn.closed = true;
                                    break;
                                }
                                Ok(len) => conn.input.extend_from_slice(&buf[..len]),
                                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                                Err(_) => {
                                    conn.closed = true;
                                    break;
                                }
                            }
                        }
                        while let Some(end) = conn.input.iter().position(|&b| b == b'\n') {
                            let line: Vec<u8> = conn.input.drain(..=end).collect();
                            let text = String::from_utf8_lossy(&line);
                            answer(conn, &text, &mut fabric, &device, &port);
                        }
                        flush(conn);
                    }
                    2 if r.writable => flush(&mut conns[i]),
                    _ => {}
                }
            }
            conns.retain(|c| {
                if c.closed && c.output.is_empty() {
                    // Listen again, on the same port (std binds with SO_REUSEADDR).
                    if listeners[c.agent].is_none() {
                        listeners[c.agent] = TcpListener::bind(ports[c.agent]).ok().filter(|l| l.set_nonblocking(true).is_ok());
                    }
                    false
                } else {
                    true
                }
            });
        }
    }
}

fn flush(conn: &mut Conn) {
    while !conn.output.is_empty() {
        match conn.stream.write(&conn.output) {
            Ok(0) => {
                conn.closed = true;
                conn.output.clear();
            }
            Ok(len) => {
                conn.output.drain(..len);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                conn.closed = true;
                conn.output.clear();
            }
        }
    }
}

fn send(conn: &mut Conn, reply: &Reply) {
    conn.output.extend_from_slice(encode(reply).as_bytes());
}

fn error(cause: &str) -> Reply {
    Reply::Error { cause: cause.into(), remedy: "mesh_sim: see examples/mesh_sim.rs".into() }
}

/// One request, answered as `fabcheck serve` would (see `mesh_scale.rs`'s fake agent).
fn answer(conn: &mut Conn, line: &str, fabric: &mut Fabric, device: &probe::Device, port: &probe::Port) {
    let me = conn.agent;
    let request = match decode::<Request>(line) {
        Ok(r) => r,
        Err(e) => {
            send(conn, &error(&format!("refused a message: {e}")));
            conn.closed = true;
            return;
        }
    };
    match request {
        Request::Hello { .. } => send(
            conn,
            &Reply::Hello { agent: "fabcheck mesh_sim".into(), host: host(me), rails: fabric.o.rails > 0, collective: false, member_paths: false },
        ),
        Request::Inventory => conn.output.extend_from_slice(fabric.inventory_line.as_bytes()),
        Request::Prepare { spec, target } => {
            conn.passive_running = false;
            conn.peer = None;
            conn.rail = target.device.as_deref().and_then(rail_of).filter(|&k| k < fabric.o.rails);
            let device_name = conn.rail.map_or_else(|| device.name.clone(), rail_device);
            if let Err(e) = spec.validate() {
                conn.spec = None;
                send(conn, &error(&e.to_string()));
                return;
            }
            let endpoint = Endpoint {
                host: host(me),
                device: device_name,
                port: port.port as u8,
                lid: port.lid as u16,
                gid_index: None,
                gid: None,
                qpns: (0..spec.qps).map(|q| 0x100 + q).collect(),
                psn: 0x1234,
                addr: 0x7f00_0000_0000,
                rkey: 0x42,
                len: u64::from(spec.size),
                mtu: port.active_mtu.unwrap_or(4096),
                link_layer: port.link_layer,
                rate_gbps: port.rate_gbps,
                ca_type: device.ca_type.clone(),
                max_rd_atomic: 16,
                cm_addr: None,
                pcie_gbps: None,
                trained_low: None,
                conditions: Default::default(),
                gpu: None,
            };
            conn.spec = Some(spec);
            send(conn, &Reply::Ready { endpoint });
        }
        Request::Connect { peer } => {
            if conn.spec.is_none() {
                send(conn, &error("connect before prepare"));
                return;
            }
            conn.peer = index_of(&peer.host);
            conn.peer_rail = rail_of(&peer.device);
            send(conn, &Reply::Connected);
        }
        Request::Run => {
            let (Some(spec), Some(peer)) = (conn.spec.clone(), conn.peer) else {
                send(conn, &error("run before prepare and connect"));
                return;
            };
            send(conn, &Reply::Running);
            if spec.role == Role::Passive {
                conn.passive_running = true;
            } else {
                let mut gbps = if spec.test.is_latency() { 0.0 } else { fabric.gbps(me, peer) };
                // A slow rail shows whichever end measures, as every fault here does.
                let slow = |e: usize, k: Option<usize>| k.is_some_and(|k| fabric.o.slow_rails.contains(&(e, k)));
                if slow(me, conn.rail) || slow(peer, conn.peer_rail) {
                    gbps *= fabric.o.slow_share;
                }
                send(conn, &Reply::Done { result: active_result(&spec, gbps, fabric.o.lat_us) });
            }
        }
        Request::Stop => {
            if std::mem::take(&mut conn.passive_running) {
                send(conn, &Reply::Done { result: RunResult::default() });
            }
        }
        Request::Finish => {
            (conn.spec, conn.peer, conn.passive_running) = (None, None, false);
            (conn.rail, conn.peer_rail) = (None, None);
            send(conn, &Reply::Finished);
        }
        Request::Rails { .. } if fabric.o.rails == 0 => send(conn, &error("mesh_sim simulates rails only with --rails N")),
        Request::Rails { spec } => {
            let count = match spec {
                RailSpec::Count(c) => usize::from(c).min(fabric.o.rails),
                _ => fabric.o.rails,
            };
            let rails = (0..count).map(|k| Rail { rail: k, device: rail_device(k), port: port.port, active: true, bdf: None, gpu: None }).collect();
            send(conn, &Reply::Rails { rails, shared: Vec::new() });
        }
        Request::Check => send(conn, &error("mesh_sim has no node to check")),
        Request::PrepareMember { .. } | Request::ConnectHops { .. } => send(conn, &error("mesh_sim runs no collective")),
        Request::Bye => {
            send(conn, &Reply::Bye);
            conn.closed = true;
        }
    }
}

fn active_result(spec: &TestSpec, gbps: f64, us: f64) -> RunResult {
    let iterations = spec.iters;
    if spec.test.is_latency() {
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
        let elapsed_ns = (iterations as f64 * 2.0 * us * 1000.0) as u64;
        return RunResult { iterations, bytes: u64::from(spec.size) * iterations, elapsed_ns, lat: Some(lat), ..RunResult::default() };
    }
    let bytes = u64::from(spec.size) * iterations * u64::from(spec.qps);
    let elapsed_ns = (bytes as f64 * 8.0 / gbps).round() as u64;
    RunResult { iterations: iterations * u64::from(spec.qps), bytes, elapsed_ns, peak_gbps: Some(gbps), ..RunResult::default() }
}

/// An ibnetdiscover description: leaves of `leaf_size` hosts (`leafL`), each with one uplink
/// to each of two spines.
pub fn topology(n: usize, leaf_size: usize) -> String {
    let mut out = String::from("#\n# Topology file: generated by mesh_sim\n#\n");
    let leaves = n.div_ceil(leaf_size);
    for s in 0..2 {
        out.push_str(&format!("\nSwitch\t{} \"S-00000000000{s:05x}\"\t\t# \"spine{s}\" enhanced port 0 lid {} lmc 0\n", leaves + 1, 1 + s));
        for l in 0..leaves {
            out.push_str(&format!("[{}]\t\"S-0000000001{l:06x}\"[{}]\t\t# \"leaf{l}\" lid {} 4xHDR\n", l + 1, leaf_size + 1 + s, 10 + l));
        }
    }
    for l in 0..leaves {
        out.push_str(&format!("\nSwitch\t{} \"S-0000000001{l:06x}\"\t\t# \"leaf{l}\" enhanced port 0 lid {} lmc 0\n", leaf_size + 2, 10 + l));
        for (p, i) in (l * leaf_size..((l + 1) * leaf_size).min(n)).enumerate() {
            out.push_str(&format!("[{}]\t\"H-0000000002{i:06x}\"[1](2{i:06x})\t\t# \"{} mlx5_0\" lid {} 4xHDR\n", p + 1, host(i), 100_000 + i));
        }
        for s in 0..2 {
            out.push_str(&format!("[{}]\t\"S-00000000000{s:05x}\"[{}]\t\t# \"spine{s}\" lid {} 4xHDR\n", leaf_size + 1 + s, l + 1, 1 + s));
        }
    }
    out
}
