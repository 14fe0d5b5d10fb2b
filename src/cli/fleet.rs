//! The flags of the commands that run over many nodes: `mesh`, `collective` and `accept`
//! (clap types only, as the rest of `cli`).
// Doc comments here are the `--help` text people read, not rustdoc: brackets mean "optional".
#![allow(rustdoc::broken_intra_doc_links)]

use super::*;

#[derive(Debug, Args)]
pub struct MeshArgs {
    /// Endpoints: HOST[/DEVICE[:PORT]] as for `pair`.
    pub endpoints: Vec<String>,
    /// A file with one endpoint per line (`#` comments).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Tests run for every pair.
    #[arg(long, default_value = "write_bw,send_lat", value_name = "LIST", value_parser = super::values::parse_tests)]
    pub tests: super::Tests,
    /// Device (and port) for endpoints that name none.
    #[arg(short = 'd', long, visible_alias = "ib-dev", value_name = "NAME[:PORT]")]
    pub device: Option<String>,
    /// Message size in bytes, or with K, M, G (binary) (default 2 for latency, 64K for bandwidth).
    #[arg(short = 's', long, value_name = "BYTES", value_parser = parse_size)]
    pub size: Option<u32>,
    /// Measured iterations per test and pair (default 1000 latency, 5000 bandwidth).
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration")]
    pub iters: Option<u64>,
    /// Run each test of each pair for this long instead of a count: seconds, or with a unit
    /// (500ms, 5s, 2m). Bidirectional send_bw runs by count.
    #[arg(short = 'D', long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Refused with the reason: a mesh measures one size per pair (sweep one pair with `pair -a`).
    #[arg(short = 'a', long, alias = "all", hide = true)]
    pub sweep: bool,
    /// Queue pairs for bandwidth tests.
    #[arg(short = 'q', long, alias = "qp", default_value_t = 1, value_name = "N")]
    pub qps: u32,
    /// RoCE ECMP: run each bandwidth test on N QPs, each with its own flow label and so its own
    /// UDP source port (N draws of the switches' hash); a path below half its siblings' median
    /// is pair.path, naming its port. One QP (no --paths) is one hash: it cannot see one bad
    /// ECMP member.
    #[arg(long, value_name = "N", conflicts_with = "qps", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::MAX_QPS)))]
    pub paths: Option<u32>,
    /// Port of the device, for endpoints that name none (perftest's -i).
    #[arg(short = 'i', long, value_name = "PORT", value_parser = clap::value_parser!(u32).range(1..=255))]
    pub ib_port: Option<u32>,
    /// Accepted as perftest's -F and ignored: fabcheck never warns about the CPU's frequency.
    #[arg(short = 'F', hide_short_help = true)]
    pub cpu_freq_quiet: bool,
    /// Bandwidth directions per pair: ab, ba, both, bidi, all.
    #[arg(long, default_value = "ab", value_name = "DIR")]
    pub direction: String,
    /// Both directions at once, as perftest's -b (= --direction bidi).
    #[arg(short = 'b', long, conflicts_with = "direction", hide_short_help = true)]
    pub bidirectional: bool,
    /// The port of tcp://HOST endpoints that name none (perftest's -p; `fabcheck serve`
    /// listens on 18515 unless told otherwise).
    #[arg(short = 'p', long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..), hide_short_help = true)]
    pub tcp_port: Option<u16>,
    /// A pair passes bandwidth at this percentage of the expected link rate.
    #[arg(long, default_value_t = 90.0, value_name = "PCT", help_heading = "Judgement")]
    pub threshold: f64,
    /// Agents started (ssh, srun) or reached (tcp) at once; all are then driven from one thread.
    #[arg(long, default_value_t = 32, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub fanout: u64,
    #[command(flatten)]
    pub agents: AgentFlags,
    #[command(flatten)]
    pub conditions: ConditionFlags,
    /// Write an HTML heat map: bandwidth and latency against the expected rate, the suspects.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Write every pair's results as CSV to FILE (one row per pair and test).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub progress: ProgressFlags,
    #[command(flatten)]
    pub burn_in: BurnInFlags,
    /// One JSON document on stdout (schema fabcheck.mesh.v1).
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
    /// Which pairs to measure: all-pairs, shift, ring or random:K (default: all-pairs up to
    /// 64 endpoints, shift above).
    #[arg(long, value_name = "PATTERN", help_heading = "Pattern")]
    pub pattern: Option<String>,
    /// Rounds of the first pass, at most (shift: 16 by default).
    #[arg(long, value_name = "N", help_heading = "Pattern", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub rounds: Option<u64>,
    /// Seed of random:K, to repeat a run (printed with the results).
    #[arg(long, value_name = "N", help_heading = "Pattern")]
    pub seed: Option<u64>,
    /// ibnetdiscover output: endpoints grouped by leaf switch; shift crosses the spine and
    /// suspects may be a switch or an uplink.
    #[arg(long, value_name = "FILE", help_heading = "Pattern")]
    pub topology: Option<PathBuf>,
    /// Let shift pair endpoints on the same leaf switch.
    #[arg(long, help_heading = "Pattern")]
    pub intra_leaf: bool,
    // Whole nodes (issue #29): every rail at once.
    /// The endpoints are hosts, tested rail by rail: rail k of each host only with rail k of the
    /// others, every rail of a host pair at once. SPEC as for pair: auto, all, N or
    /// DEV[:PORT],... A bad NIC is a `rail` suspect (HOST/DEV), every rail bad the `node`.
    #[arg(long, value_name = "SPEC", help_heading = "Pattern")]
    pub rails: Option<String>,
}

#[derive(Debug, Args)]
pub struct CollectiveArgs {
    /// Endpoints: HOST[/DEVICE[:PORT]] as for `mesh` (with --rails: hosts).
    pub endpoints: Vec<String>,
    /// A file with one endpoint per line (`#` comments).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// allreduce (ring, NCCL's step dependency), alltoall, incast:K (K senders to one receiver,
    /// each member in turn) or bcast (pipelined ring).
    #[arg(long, value_name = "OP")]
    pub op: String,
    /// The endpoints are hosts; one ring per rail (rail k of every host), all rails at once.
    /// SPEC as for pair: auto, all, N or DEV[:PORT],...
    #[arg(long, value_name = "SPEC")]
    pub rails: Option<String>,
    /// Bytes per member, as nccl-tests' size (split over the rails' rings), or with K, M, G.
    #[arg(short = 's', long, default_value = "64M", value_name = "BYTES", value_parser = parse_size)]
    pub size: u32,
    /// Iterations of the op (default 20).
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub iters: Option<u64>,
    /// Run about this long instead (iterations worked out from the slowest link's rate).
    #[arg(short = 'D', long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// When the run fails: halve the hosts (keeping the leaves' mix) until the suspects are
    /// isolated; every sub-run is in the document.
    #[arg(long)]
    pub bisect: bool,
    /// ibnetdiscover output: each ring keeps a leaf's members together; suspects may be a
    /// switch or an uplink.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// RoCE ECMP: carry every hop on N QPs, each with its own flow label and so its own UDP
    /// source port (N draws of the switches' hash), a hop's chunks spread over them; a path
    /// below half the median of its hop's other paths is pair.path, naming its port. One path
    /// (the default) is one hash per hop: it cannot see one bad ECMP member.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::MAX_QPS)))]
    pub paths: u32,
    /// A hop slower than its ring's median hop by more than this factor is named.
    #[arg(long, default_value_t = 2.0, value_name = "X", help_heading = "Judgement")]
    pub hop_threshold: f64,
    /// A ring passes at this percentage of its slowest link (framing counted, as pair).
    #[arg(long, default_value_t = 90.0, value_name = "PCT", help_heading = "Judgement")]
    pub threshold: f64,
    /// Device (and port) for endpoints that name none.
    #[arg(short = 'd', long, visible_alias = "ib-dev", value_name = "NAME[:PORT]")]
    pub device: Option<String>,
    /// The port of tcp://HOST endpoints that name none.
    #[arg(short = 'p', long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..), hide_short_help = true)]
    pub tcp_port: Option<u16>,
    #[command(flatten)]
    pub agents: AgentFlags,
    #[command(flatten)]
    pub mem: MemFlags,
    #[command(flatten)]
    pub burn_in: BurnInFlags,
    #[command(flatten)]
    pub progress: ProgressFlags,
    /// A previous JSON document of this command (its `--json` output): a ring's or the total's
    /// busbw, or a hop's rate, more than --regression percent below it is a warning
    /// (pair.regression naming the rail, the total or the hop).
    #[arg(long, value_name = "FILE", help_heading = "Judgement")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: the change, in percent, that counts as a regression.
    #[arg(long, value_name = "PCT", default_value_t = 5.0, help_heading = "Judgement")]
    pub regression: f64,
    /// One JSON document on stdout (schema fabcheck.collective.v1).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Also write one self-contained HTML page: each ring drawn, the slow hops marked.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// Endpoints: HOST, USER@HOST or tcp://HOST[:PORT], as for `mesh` (a device is ignored: the
    /// whole node is checked).
    pub endpoints: Vec<String>,
    /// Read endpoints from FILE, one per line ('#' starts a comment).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// 1: check on every node + drift (seconds). 2: + pair --rails between ring neighbours and
    /// fabric where there is InfiniBand (minutes). 3: + mesh --pattern shift, collective
    /// allreduce and alltoall on every rail, and a soak window over the run (--duration).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=3))]
    pub level: u8,
    /// Levels 2 and 3: the rails of each node, as for `pair --rails` (auto, all, N, DEV[:PORT],...).
    #[arg(long, default_value = "auto", value_name = "SPEC")]
    pub rails: String,
    /// Level 2's `pair --rails` ring: iterations of each test (default: pair's).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub iters: Option<u64>,
    /// Level 3: how long the whole run takes, seconds (the soak window spans it); the mesh and
    /// the collectives take their shares of it (docs/accept.md).
    #[arg(short = 'D', long, default_value_t = 3600.0, value_name = "SECS")]
    pub duration: f64,
    /// The port of tcp://HOST endpoints that name none.
    #[arg(short = 'p', long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..), hide_short_help = true)]
    pub tcp_port: Option<u16>,
    /// Nodes asked at once; all are driven from one thread.
    #[arg(long, default_value_t = 32, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub fanout: u64,
    #[command(flatten)]
    pub agents: AgentFlags,
    /// Inside a Slurm allocation: `scontrol update nodename=HOST state=drain reason=...` for each
    /// failed node (outside one: exit 2).
    #[arg(long)]
    pub drain: bool,
    /// Write one HTML page: the stages, the node table, the drift, the drain list.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub progress: ProgressFlags,
    /// One JSON document on stdout (schema fabcheck.accept.v1).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}
