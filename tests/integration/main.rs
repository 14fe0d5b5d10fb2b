//! Host-tier integration tests: the CLI as users and CI drive it, with no RDMA device.
//! One binary, a module per topic.

mod accept;
mod accept_levels;
mod agreement;
mod alerts;
mod architecture;
mod bundle;
mod bundle_fuzz;
mod bundle_links;
mod burn_in;
mod cli;
mod collective;
mod collective_paths;
mod compare;
mod contrib;
mod cuda;
mod doc_examples;
mod driver_stack;
mod exporter;
mod exporter_hardening;
mod fabric;
mod fake_cluster;
mod fixtures;
mod flaky;
mod formats;
mod fuzz;
mod golden;
mod gpu;
mod hardening;
mod health_outputs;
mod input_fuzz;
mod inputs;
mod ipoib_addresses;
mod link_flap;
mod loading;
mod login_sharing;
mod mesh_outputs;
mod mesh_patterns;
mod mesh_rails;
mod mesh_scale;
mod nhc;
mod operators;
mod output;
mod output_paths;
mod packaging;
mod pair_fake;
mod pair_paths;
mod phy;
mod properties;
mod protocol;
mod rails;
mod roce_lag;
mod schemas;
mod security_05;
mod serve_admission;
mod serve_hardening;
mod shell;
mod unknown_sweep;
mod wild_fabrics;
mod wild_outputs;
mod wild_qos;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

pub fn fabcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(args).output().expect("run fabcheck")
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `text` as one word of a POSIX shell line: a path spliced into a script (the checkout's may
/// hold a space, `/tmp/a b/fabcheck`) stays one word. Pass paths as arguments where the shell
/// line can take them (`sh -c '... "$1"' sh PATH`); this is for lines that cannot.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The endpoint a fake agent answers `prepare` with: `device`/`port` of `host` set up for
/// `spec` (one QP number per QP, a buffer of the test's size), addressed as a healthy node is.
/// The fake nodes of `rails` and `mesh_scale` share it.
pub fn fake_endpoint(
    host: &str,
    device: &fabcheck::probe::model::Device,
    port: &fabcheck::probe::model::Port,
    spec: &fabcheck::control::protocol::TestSpec,
    gid_index: Option<u8>,
) -> fabcheck::control::protocol::Endpoint {
    fabcheck::control::protocol::Endpoint {
        host: host.into(),
        device: device.name.clone(),
        port: port.port as u8,
        lid: port.lid as u16,
        gid_index,
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
    }
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}

/// What this host's kernel offers libibverbs, which decides what an agent started here answers
/// when asked for devices. Tests that start agents on this host decide by it, and never skip.
#[derive(Debug, Clone, PartialEq)]
pub enum HostRdma {
    /// No `/sys/class/infiniband_verbs` (ib_uverbs not loaded, or no RDMA in the kernel):
    /// libibverbs cannot list devices at all.
    NoVerbs,
    /// ib_uverbs is there but `/sys/class/infiniband` lists no device.
    NoDevices,
    /// These devices are present.
    Devices(Vec<String>),
}

pub fn host_rdma() -> HostRdma {
    if !Path::new("/sys/class/infiniband_verbs").exists() {
        return HostRdma::NoVerbs;
    }
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/infiniband")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        HostRdma::NoDevices
    } else {
        HostRdma::Devices(names)
    }
}

impl HostRdma {
    /// The cause an agent on this host gives when asked for device `device` (which no host has).
    pub fn agent_cause(&self, device: &str) -> String {
        match self {
            HostRdma::NoVerbs => "libibverbs cannot list devices".into(),
            HostRdma::NoDevices => "no RDMA devices found".into(),
            HostRdma::Devices(_) => format!("no RDMA device named '{device}'"),
        }
    }
}

/// A device name no host has: agents asked for it fail before measuring, on any host.
pub const NO_SUCH_DEVICE: &str = "nodev9";

/// The output of `command` (stdin empty, stdout and stderr captured), which must end within
/// `guard`: still running then, it is killed and the test fails naming `what`. A hang guard,
/// not a timing assertion. Both pipes are read while it runs, so a child that writes more than a
/// pipe holds cannot stall on them.
pub fn output_within(command: &mut Command, guard: std::time::Duration, what: &str) -> Output {
    use std::process::Stdio;
    let spawned = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child: Child = spawned.unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if start.elapsed() > guard {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hang guard: {what} still running after {guard:?}; killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Output { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() }
}

/// A fake agent at a fresh `tcp://127.0.0.1:PORT`, as a `fabcheck serve` is reached: every
/// connection (the controller may connect more than once) served on its own thread by
/// `serve`, until the test process ends.
pub fn listen_as<A: Send + Sync + 'static>(agent: A, serve: fn(std::net::TcpStream, &A) -> std::io::Result<()>) -> String {
    let agent = std::sync::Arc::new(agent);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a fake agent");
    let endpoint = format!("tcp://{}", listener.local_addr().expect("its address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let agent = std::sync::Arc::clone(&agent);
            std::thread::spawn(move || {
                let _ = serve(stream, &agent);
            });
        }
    });
    endpoint
}
