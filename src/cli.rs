//! Command-line flags (clap types only). Turning them into validated run configurations is
//! `commands/`'s job (`commands/flags.rs` and each command's file); nothing below `commands/`
//! imports this module.
// Doc comments here are the `--help` text people read, not rustdoc: brackets mean "optional".
#![allow(rustdoc::broken_intra_doc_links)]

use crate::model::Unparsed;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod burn_in;
pub mod examples;
mod fleet;
pub mod values;

pub use burn_in::BurnInFlags;
pub use fleet::{AcceptArgs, CollectiveArgs, MeshArgs};
pub use values::{parse_seconds, parse_size, Tests};

/// How `[user@]host` endpoints get their agent.
/// `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatFlag {
    Human,
    Json,
    Oneline,
    Prom,
    Junit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Launcher {
    /// `ssh host fabcheck agent`, speaking over ssh's stdio.
    Ssh,
    /// `srun --nodes=1 --nodelist=host ... fabcheck agent` inside a Slurm allocation, speaking
    /// over srun's stdio: no ssh keys, no open port, no token.
    Srun,
    /// `kubectl exec -i POD -- fabcheck agent` in the fabcheck DaemonSet's pod on each node
    /// (endpoints are Kubernetes node names; contrib/k8s/).
    Kubectl,
}

#[derive(Debug, Parser)]
#[command(name = "fabcheck", version, about = "RDMA fabric validator: inventory, bring-up checklist, pairwise latency and bandwidth")]
pub struct Cli {
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = "Global options")]
    pub verbose: u8,
    /// Output format: human, json (= --json), oneline (a health-check line), prom (Prometheus
    /// text exposition), junit (JUnit XML).
    #[arg(long, global = true, value_enum, default_value = "human", help_heading = "Global options")]
    pub format: FormatFlag,
    /// Write the result to FILE (atomically: a reader never sees half of it) instead of stdout.
    #[arg(long, global = true, value_name = "FILE", help_heading = "Global options")]
    pub output: Option<PathBuf>,
    /// What makes the exit code 1: an error (default), or also a warning.
    #[arg(long, global = true, value_enum, default_value = "error", help_heading = "Global options")]
    pub fail_on: FailOn,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory of every RDMA device and port (ibv_devinfo -v and ibstat in one).
    Devices(DevicesArgs),
    /// The node's bring-up checklist, each failure with its likely cause and remedy.
    #[command(after_long_help = examples::CHECK)]
    Check(CheckArgs),
    /// The whole InfiniBand subnet over MADs: SM, links, cabling, error counters.
    #[command(after_long_help = examples::FABRIC)]
    Fabric(FabricArgs),
    /// RC latency and bandwidth between two endpoints, with a verdict.
    #[command(after_long_help = examples::PAIR)]
    Pair(PairArgs),
    /// Every pair of many endpoints; names the suspect nodes and links.
    #[command(after_long_help = examples::MESH)]
    Mesh(MeshArgs),
    /// The traffic of a training step (allreduce, alltoall, incast, bcast) among the endpoints'
    /// agents, every member at once, judged hop by hop.
    #[command(after_long_help = examples::COLLECTIVE)]
    Collective(CollectiveArgs),
    /// Agent that `pair` reaches as tcp://host:port.
    Serve(ServeArgs),
    /// Fleet acceptance: every node's checklist through its agent, the drift across nodes, one
    /// report and a drain list.
    Accept(AcceptArgs),
    /// Prometheus endpoint for this node: port states, rates, counters and the check's verdict.
    #[command(after_long_help = examples::EXPORTER)]
    Exporter(ExporterArgs),
    /// The differences between two pair or mesh JSON documents; exit 1 on a regression.
    #[command(after_long_help = examples::COMPARE)]
    Compare(CompareArgs),
    /// Capture this node for `--sysfs-root` (sysfs, the tools' outputs, a manifest) into a new DIR.
    #[command(after_long_help = examples::BUNDLE)]
    Bundle(BundleArgs),
    /// Print a shell completion script: `fabcheck completions bash > /etc/bash_completion.d/fabcheck`.
    Completions(CompletionsArgs),
    /// Agent speaking the control protocol on stdin/stdout (started by `pair` over ssh or locally).
    #[command(hide = true)]
    Agent(AgentArgs),
    /// Print the manual page (roff), rendered from these flags: `fabcheck manpage | man -l -`;
    /// with --dir, write fabcheck.1 and one page per command (fabcheck-check.1...) into DIR.
    #[command(hide = true)]
    Manpage(ManpageArgs),
}

#[derive(Debug, Args)]
pub struct ManpageArgs {
    /// Write fabcheck.1 and fabcheck-COMMAND.1 for every command into DIR instead of printing fabcheck.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh or fish (also elvish, powershell).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The new directory to write (absent, or an empty directory; never a symbolic link).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Read this tree in bundle layout instead of the live /sys and run no tool (for tests; a
    /// bundle's own manifest names its host).
    #[arg(long, value_name = "ROOT", hide = true)]
    pub from_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Only this device.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// One JSON document on stdout (schema fabcheck.devices.v1).
    #[arg(long)]
    pub json: bool,
    /// Read a captured sysfs tree (DIR/class/infiniband, DIR/class/net) instead of live verbs.
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Only this device, or one port of it; repeat it or give a list for several
    /// (`--device mlx5_0:1,mlx5_1:1`: the cabled ports of two dual-port adapters).
    #[arg(long, value_name = "NAME[:PORT]")]
    pub device: Vec<String>,
    /// What the node should be, KEY=VALUE (every key: --help).
    #[arg(long = "expect", value_name = "KEY=VALUE", long_help = crate::diagnose::expect::help())]
    pub expect: Vec<String>,
    /// A file of the same KEY=VALUE lines (or a JSON object).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// One JSON document on stdout (schema fabcheck.check.v1).
    #[arg(long)]
    pub json: bool,
    /// Diagnose a captured sysfs tree instead of this node (node-wide stack checks are skipped).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// Read every counter at the start and the end of a window (`10s`, `5m`, `1h`) and judge
    /// rates, not lifetime totals (live only; SIGINT ends the window early, exit 2).
    #[arg(long, value_name = "DURATION")]
    pub soak: Option<String>,
    /// With --format oneline: cut the line to at most N bytes (node-problem-detector's
    /// max_output_length is 80).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(16..))]
    pub max_len: Option<u16>,
    /// How far back the kernel log is read for link downs and ups, mlx5 health events and AER
    /// lines (`link.flap`): 10m, 24h, 7d; a bundle's tools/dmesg.txt up to its last line.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = values::duration)]
    pub since: std::time::Duration,
}

/// The conditions of `pair` and `mesh` tests: what the fabric sees of their traffic.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Test conditions")]
pub struct ConditionFlags {
    /// RoCE traffic class of the test's packets (DSCP << 2), so it runs in the lossless class
    /// the fabric is built for; also rdma_cm's ToS with --cm.
    #[arg(short = 'T', long, value_name = "N", hide_short_help = true)]
    pub tclass: Option<u8>,
    /// InfiniBand service level (0..15).
    #[arg(short = 'S', long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=15), hide_short_help = true)]
    pub sl: Option<u8>,
    /// P_Key index of the test's queue pairs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=127), hide_short_help = true)]
    pub pkey_index: Option<u16>,
    /// Register buffers without relaxed ordering (perftest and fabcheck use it by default).
    #[arg(long, hide_short_help = true)]
    pub no_relaxed_ordering: bool,
    /// What the link should be (as `check --expect`; every key: --help); an endpoint short of
    /// it fails the pair.
    #[arg(long, value_name = "KEY=VALUE", long_help = crate::diagnose::expect::help())]
    pub expect: Vec<String>,
    /// Expectations from a file, as `check --profile`.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Path MTU of the test's queue pairs, as perftest's -m: 256, 512, 1024, 2048 or 4096, at
    /// most the ports' active MTU (the default).
    #[arg(short = 'm', long, value_name = "BYTES", value_parser = values::parse_mtu, hide_short_help = true)]
    pub mtu: Option<u32>,
    /// Accepted as perftest's --report_gbits and ignored: fabcheck reports Gb/s already.
    #[arg(long = "report_gbits", alias = "report-gbits", hide = true)]
    pub report_gbits: bool,
    #[command(flatten)]
    pub mem: MemFlags,
}

/// Where the tests' buffers live (`pair`, `mesh`): GPUDirect RDMA as NCCL uses it.
#[derive(Debug, Clone, Args)]
pub struct MemFlags {
    /// Buffers in host memory, or in GPU memory as perftest's --use_cuda: cuda:BUSID (the GPU
    /// at that PCI address, e.g. cuda:0000:1a:00.0 as nvidia-smi prints it), cuda:N (CUDA
    /// device ordinal: CUDA's numbering, fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, not
    /// nvidia-smi's), cuda:auto or cuda (the GPU nearest each NIC). Needs the NVIDIA driver's
    /// libcuda.so.1 on the agents.
    #[arg(long, value_name = "host|cuda|cuda:BUSID|cuda:N|cuda:auto", default_value = "host", value_parser = parse_mem)]
    pub mem: crate::model::MemChoice,
    /// perftest's --use_cuda N (= --mem cuda:N).
    #[arg(long = "use_cuda", alias = "use-cuda", value_name = "N", hide = true, conflicts_with_all = ["mem", "use_cuda_bus_id"], value_parser = parse_cuda_ordinal)]
    pub use_cuda: Option<crate::model::MemChoice>,
    /// perftest's --use_cuda_bus_id B (= --mem cuda:B).
    #[arg(long = "use_cuda_bus_id", alias = "use-cuda-bus-id", value_name = "BUSID", hide = true, conflicts_with = "mem", value_parser = parse_cuda_bus)]
    pub use_cuda_bus_id: Option<crate::model::MemChoice>,
}

impl MemFlags {
    /// `--mem`, or perftest's `--use_cuda`/`--use_cuda_bus_id` spelling of it.
    pub fn choice(&self) -> crate::model::MemChoice {
        self.use_cuda.or(self.use_cuda_bus_id).unwrap_or(self.mem)
    }
}

fn parse_cuda_ordinal(text: &str) -> Result<crate::model::MemChoice, Unparsed> {
    match text.bytes().all(|b| b.is_ascii_digit()) {
        true => crate::model::MemChoice::parse(&format!("cuda:{text}")),
        false => Err(Unparsed(format!("{text}: give a CUDA device ordinal (0, 1...)"))),
    }
}

fn parse_cuda_bus(text: &str) -> Result<crate::model::MemChoice, Unparsed> {
    match text.contains(':') {
        true => crate::model::MemChoice::parse(&format!("cuda:{text}")),
        false => Err(Unparsed(format!("{text}: give a GPU's PCI address (0000:1a:00.0)"))),
    }
}

fn parse_mem(text: &str) -> Result<crate::model::MemChoice, Unparsed> {
    crate::model::MemChoice::parse(text)
}

/// How `pair` and `mesh` reach agents and bound their tests.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Agents")]
pub struct AgentFlags {
    /// GID index on every end (default: RoCE v2 over v1, IPv4 over IPv6, never link-local).
    #[arg(short = 'x', long, value_name = "N")]
    pub gid_index: Option<u8>,
    /// Seconds (or 5m, 1h) a single test may take before the run is abandoned (at most a day).
    #[arg(long, default_value_t = 300, value_name = "SECS", value_parser = values::seconds_up_to_a_day)]
    pub timeout: u64,
    /// Milliseconds without progress after which an agent gives up on its peer.
    #[arg(long, default_value_t = 5000, value_name = "MS", hide = true, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub stall_timeout_ms: u64,
    /// Token for tcp:// agents. Prefer FABCHECK_TOKEN or --token-file: a command line is
    /// visible to every user in `ps`.
    #[arg(long, env = "FABCHECK_TOKEN", hide_env_values = true, conflicts_with = "token_file")]
    pub token: Option<String>,
    /// Read the token for tcp:// agents from FILE (readable by its owner only).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// fabcheck's path on ssh or srun hosts.
    #[arg(long, default_value = "fabcheck", value_name = "PATH", hide_short_help = true)]
    pub remote_fabcheck: String,
    /// How `[user@]host` endpoints get their agent: ssh, srun inside a Slurm allocation, or
    /// kubectl (endpoints are node names; the agent runs in the fabcheck DaemonSet's pod).
    #[arg(long, value_enum, default_value = "ssh")]
    pub launcher: Launcher,
    /// With --launcher kubectl: the label selector of the fabcheck DaemonSet's pods.
    #[arg(long, value_name = "SELECTOR", default_value = "app=fabcheck-agent", hide_short_help = true)]
    pub k8s_selector: String,
}

#[derive(Debug, Args)]
pub struct PairArgs {
    /// First endpoint: HOST[/DEVICE[:PORT]], HOST = localhost | [user@]host | tcp://host:port.
    pub a: String,
    /// Second endpoint.
    pub b: String,
    /// Device (and port) for endpoints that name none.
    #[arg(short = 'd', long, visible_alias = "ib-dev", value_name = "NAME[:PORT]")]
    pub device: Option<String>,
    /// Tests: send_lat write_lat read_lat write_bw read_bw send_bw, or the groups lat, bw, all;
    /// atomic_lat atomic_bw (ib_atomic_lat/ib_atomic_bw) only when named.
    #[arg(long, default_value = "all", value_name = "LIST", value_parser = values::parse_tests)]
    pub tests: values::Tests,
    /// Message size in bytes, or with K, M, G (binary: 64K = 64KB = 65536) (default 2 for
    /// latency, 64K for bandwidth); with --sweep, the largest size of the sweep.
    #[arg(short = 's', long, value_name = "BYTES", value_parser = parse_size)]
    pub size: Option<u32>,
    /// Every power of two from 2 B to 8 MiB (with -s, up to that size, as perftest's -a).
    #[arg(short = 'a', long, alias = "all")]
    pub sweep: bool,
    /// Measured iterations per test (default 1000 latency, 5000 bandwidth).
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration")]
    pub iters: Option<u64>,
    /// Run each test for this long instead of a count: seconds, or with a unit (500ms, 5s, 2m).
    /// Bidirectional send_bw runs by count (--iters or its default), said as an info finding.
    #[arg(short = 'D', long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Queue pairs for bandwidth tests.
    #[arg(short = 'q', long, alias = "qp", default_value_t = 1, value_name = "N")]
    pub qps: u32,
    /// RoCE ECMP: run each bandwidth test on N QPs, each with its own flow label and so its own
    /// UDP source port (N draws of the switches' hash); a path below half its siblings' median
    /// is pair.path, naming its port. One QP (no --paths) is one hash: it cannot see one bad
    /// ECMP member.
    #[arg(long, value_name = "N", conflicts_with = "qps", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::MAX_QPS)))]
    pub paths: Option<u32>,
    /// atomic_lat/atomic_bw: fetch_add or cmp_swap (perftest's --atomic_type).
    #[arg(long, value_name = "OP", default_value = "fetch_add", value_parser = crate::model::AtomicOp::parse, alias = "atomic_type")]
    pub atomic: crate::model::AtomicOp,
    /// Inline bytes asked of each QP (0 turns inline off, as NCCL runs); default: inline where
    /// the message fits (perftest's --inline_size).
    #[arg(long, value_name = "N", alias = "inline_size", value_parser = clap::value_parser!(u32).range(0..=i64::from(crate::model::MAX_INLINE)))]
    pub inline: Option<u32>,
    /// Send queue depth of the bandwidth tests (perftest's --tx-depth; default 128, less for
    /// big messages).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub tx_depth: Option<u32>,
    /// Sleep on a completion channel instead of busy polling (perftest's -e/--use_event); write
    /// latency still watches its buffer, where no completion announces the data.
    #[arg(long, alias = "use_event")]
    pub events: bool,
    /// Check every message's bytes: a seeded pattern, compared by the receiver (send_bw,
    /// write_bw, read_bw on host memory; perftest's --data_validation). A mismatch is pair.data.
    #[arg(long, alias = "data_validation")]
    pub validate: bool,
    /// Port of the device, for endpoints that name none (perftest's -i).
    #[arg(short = 'i', long, value_name = "PORT", value_parser = clap::value_parser!(u32).range(1..=255))]
    pub ib_port: Option<u32>,
    /// Bandwidth directions: ab (A sends), ba, both, bidi, all (default all; latency runs ab).
    #[arg(long, value_name = "DIR")]
    pub direction: Option<String>,
    /// Both directions at once, as perftest's -b (= --direction bidi).
    #[arg(short = 'b', long, conflicts_with = "direction", hide_short_help = true)]
    pub bidirectional: bool,
    /// The port of tcp://HOST endpoints that name none (perftest's -p; `fabcheck serve`
    /// listens on 18515 unless told otherwise).
    #[arg(short = 'p', long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..), hide_short_help = true)]
    pub tcp_port: Option<u16>,
    /// Fail if typical (p50) latency exceeds this, in microseconds.
    #[arg(long, value_name = "US", help_heading = "Judgement")]
    pub max_lat_us: Option<f64>,
    /// Bandwidth must reach this percentage of the link's data rate (largest size).
    #[arg(long, default_value_t = 90.0, value_name = "PCT", help_heading = "Judgement")]
    pub threshold: f64,
    /// lat_under_load: fail when the p99 under load exceeds this many times the idle p99.
    #[arg(long, default_value_t = 4.0, value_name = "X", help_heading = "Judgement")]
    pub load_threshold: f64,
    #[command(flatten)]
    pub agents: AgentFlags,
    #[command(flatten)]
    pub conditions: ConditionFlags,
    /// Connect through librdmacm (rdma_cm), as MPI, NCCL and storage do, instead of the
    /// out-of-band exchange: A connects, B listens. RoCE: the GID's address; InfiniBand: the
    /// port's IPoIB address (the interface needs one). -R as perftest's.
    #[arg(short = 'R', long, alias = "rdma_cm")]
    pub cm: bool,
    /// Accepted as perftest's -F and ignored: fabcheck never warns about the CPU's frequency
    /// (its clock is calibrated over each loop).
    #[arg(short = 'F', hide_short_help = true)]
    pub cpu_freq_quiet: bool,
    /// CPUs of the measured loops, as perftest users pin with taskset: A,B (endpoint A's agent,
    /// B's), N (both, on two hosts), auto (default: near the adapter, distinct on one host), none.
    #[arg(long, value_name = "A,B")]
    pub cpu: Option<String>,
    // Whole nodes (issue #29): every rail at once.
    /// Test the two nodes rail by rail, every rail at once: auto (on a GPU node each GPU's own
    /// NIC, in GPU PCI order; else every port of the link layer in use by PCI address), all, N
    /// (the first N of auto), or DEV[:PORT],... (both ends, in that order). Rail k of A is paired
    /// with rail k of B. With --rails, --cpu also takes A0,A1,...:B0,B1,... (one CPU per rail).
    #[arg(long, value_name = "SPEC")]
    pub rails: Option<String>,
    /// With --rails: a rail whose bandwidth is below PCT% of its sibling rails' median, or whose
    /// latency is above 100/PCT times theirs, is pair.rail (default 50: 50% and 2x).
    #[arg(long, value_name = "PCT")]
    pub rail_threshold: Option<String>,
    /// One JSON document on stdout (schema fabcheck.pair.v1).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// A previous JSON document of this command (its `--json` output): a bandwidth or message
    /// rate more than --regression percent below it, or a latency p50 more than that above it,
    /// is a warning (pair.regression; mesh: a regression suspect).
    #[arg(long, value_name = "FILE", help_heading = "Judgement")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: the change, in percent, that counts as a regression.
    #[arg(long, value_name = "PCT", default_value_t = 5.0, help_heading = "Judgement")]
    pub regression: f64,
    #[command(flatten)]
    pub progress: ProgressFlags,
    #[command(flatten)]
    pub burn_in: BurnInFlags,
    /// Also write every result as CSV to FILE (one row per test, direction and size).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub csv: Option<PathBuf>,
    /// Also write an SVG plot of size against bandwidth and latency to FILE (for --sweep).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub svg: Option<PathBuf>,
}

/// Progress on stderr, and how much the human output says (`pair`, `mesh`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Output")]
pub struct ProgressFlags {
    /// Progress lines on stderr even when it is not a terminal (default: only on a terminal).
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,
    /// No progress on stderr, even on a terminal.
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,
    /// Only problems and the verdict: no progress (unless --progress), no rows that passed.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback needs a token.
    #[arg(long, default_value = "127.0.0.1:18515", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Shared token controllers must present. Prefer FABCHECK_TOKEN or --token-file: a command
    /// line is visible to every user in `ps`.
    #[arg(long, env = "FABCHECK_TOKEN", hide_env_values = true, conflicts_with = "token_file")]
    pub token: Option<String>,
    /// Read the shared token from FILE (readable by its owner only).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Exit after serving this many controllers (for tests and one-shot CI use). Only
    /// controllers that said a valid hello count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: Option<u64>,
    /// Memory all sessions together may register (K, M, G; 1M to below 4G); one session at
    /// most half of it.
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size)]
    pub max_registered: u32,
    /// Seconds (or 5m, 1h) a session may stay silent between tests before serve ends it (0: never).
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = values::seconds_up_to_a_day)]
    pub idle_timeout: u64,
    /// Answer `check` and `devices` from this bundle (its manifest's host, else the directory's
    /// name, is the host); verbs tests against it are refused (offline `accept`, tests).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

/// `fabcheck agent` speaks the protocol on stdin/stdout.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Answer `check` and `devices` from this bundle instead of the live node (as `serve --sysfs-root`).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FabricArgs {
    /// The umad device (CA) to send MADs from (`ibstat -l` lists them); default: the first with an ACTIVE port.
    #[arg(long, value_name = "NAME")]
    pub ca: Option<String>,
    /// Its port (default: the first ACTIVE one; port 0 on a switch).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8))]
    pub port: Option<u8>,
    /// The expected cabling, in ibnetdiscover format: missing, extra and miswired cables are named.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// sm_standby=N, nodes=N, switches=N, width=4X, speed=HDR, or an error-counter threshold (symbol_error=10, ...).
    #[arg(long = "expect", value_name = "KEY=VALUE")]
    pub expect: Vec<String>,
    /// One JSON document on stdout (schema fabcheck.fabric.v1).
    #[arg(long)]
    pub json: bool,
    /// Milliseconds each MAD waits for its answer.
    #[arg(long, default_value_t = 500, value_name = "MS", value_parser = clap::value_parser!(u32).range(10..=60_000))]
    pub timeout_ms: u32,
    /// Retries of an unanswered MAD.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=20))]
    pub retries: u32,
    /// Clear every port's PortCounters after reading them (never done unless asked).
    #[arg(long)]
    pub reset_counters: bool,
    /// Seconds (or 10m, 1h) the whole run may take; past it fabcheck gives up (exit 2) instead
    /// of hanging.
    #[arg(long, default_value_t = 600, value_name = "SECS", value_parser = values::seconds_1_to_a_day)]
    pub deadline: u64,
    /// Read every port's counters at the start and the end of a window (`10s`, `5m`) and
    /// judge what rose in it, not lifetime totals; the window counts within --deadline.
    #[arg(long, value_name = "DURATION")]
    pub soak: Option<String>,
    // Fabric design (#32).
    /// The cabling plan as CSV (header a_node,a_port,b_node,b_port; node descriptions or 0x GUIDs),
    /// judged as --topology is: for a first bring-up without a known-good discovery.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Judge a rail-optimized fabric: every NIC of rail k under rail k's leaves (rails from
    /// --rail-map, else from node descriptions HOST mlx5_K).
    #[arg(long)]
    pub rails: bool,
    /// Each NIC's rail as CSV (header host,device,rail); implies --rails.
    #[arg(long, value_name = "FILE")]
    pub rail_map: Option<PathBuf>,
    /// An ibdiagnet output directory (`ibdiagnet -r --sharp --congestion_control`): adaptive
    /// routing, SHARP aggregation nodes and congestion control judged from its files.
    #[arg(long, value_name = "DIR")]
    pub ibdiagnet: Option<PathBuf>,
    // fabric.route (issue #32):
    /// Seed of the sample of host pairs whose routes are walked when a fabric has more than
    /// 10,000 pairs (printed with the results, to repeat a sample; default: from the clock).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--cm` on InfiniBand connects through the port's IPoIB address (`perf::gid::cm_address`):
    /// the help and docs/reliability.md say that, not "RoCE only" or "refused".
    #[test]
    fn cm_on_infiniband_is_described_as_the_code_does_it() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let help = cli.find_subcommand_mut("pair").expect("pair").render_long_help().to_string();
        // The flag's own line (`-R, --cm`), not a mention of it in another flag's help.
        let cm = &help[help.find("-R, --cm\n").expect("--cm in pair --help")..];
        let cm = &cm[..cm.find("\n  -").unwrap_or(cm.len())];
        assert!(cm.contains("IPoIB") && !cm.contains("RoCE only"), "{cm}");
        let reliability = include_str!("../docs/reliability.md");
        let line = reliability.lines().find(|l| l.contains("`--cm`")).expect("--cm in docs/reliability.md");
        assert!(!line.contains("refused") && reliability.contains("IPoIB"), "{line}");
    }
}

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve `GET /metrics` on. Loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:9879", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Seconds (or 5m) between reads of the node (inventory, counters, check), in the background.
    #[arg(long, default_value = "60", value_name = "SECS", value_parser = values::seconds_1_to_a_day)]
    pub interval: u64,
    /// Read a captured sysfs tree (DIR/class/infiniband, DIR/class/net) instead of this node.
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// What the checklist's series are judged against, as `check --expect` (repeatable):
    /// the exporter says what `check` with the same expectations says.
    #[arg(long = "expect", value_name = "KEY=VALUE")]
    pub expect: Vec<String>,
    /// Expectations from a profile file, as `check --profile`.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Only these devices or ports, as `check --device` (repeatable, or a list:
    /// `mlx5_0:1,mlx5_2:1`): a port meant to stay uncabled raises no alert.
    #[arg(long, value_name = "NAME[:PORT]")]
    pub device: Vec<String>,
    /// Also serve the last interval of pair and mesh runs with --report-every on this node,
    /// from the state they keep in DIR (default /run/fabcheck/live; none with --sysfs-root).
    #[arg(long, value_name = "DIR")]
    pub live_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: an earlier `pair` or `mesh` JSON document.
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The document to judge against it, of the same command.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
    /// A bandwidth or message rate more than PCT below the baseline's, or a latency p50 more
    /// than PCT above it, is a regression.
    #[arg(long, default_value = "5", value_name = "PCT")]
    pub regression: f64,
    /// Only what regressed: the figures that did not are left out (every format).
    #[arg(long)]
    pub regressions: bool,
    /// One JSON document on stdout (schema fabcheck.compare.v1).
    #[arg(long)]
    pub json: bool,
}
