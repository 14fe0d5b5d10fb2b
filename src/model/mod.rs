//! What a test is, independent of how it is carried or run: test kinds, roles, the specs an
//! agent validates, endpoints, targets and results. Nearly a leaf: it imports only the link
//! layer enum of `port` (and `units`), so `perf` (which runs tests) and `control`
//! (which carries them) both build on it without depending on each other. (0.2 called it
//! `spec`, which tools and people read as "tests".)

mod atomic;
pub mod collective;
mod data_check;
pub mod device;
mod direction;
mod interval;
mod invalid;
pub mod member_wire;
pub mod memory;
pub mod paths;
pub mod preempt;
pub mod rails;
pub mod traffic;

pub use atomic::{AtomicOp, ATOMIC_SIZE};
pub use data_check::{DataCheck, DataMismatch};
pub use device::{parse_device_port, valid_device_name};
pub use direction::Direction;
pub use interval::{Interval, IntervalLatency};
pub use invalid::{SpecError, Unparsed};
pub use memory::{BusId, GpuUse, MemChoice, MemPath};

pub use crate::port::LinkLayer;
use serde::{Deserialize, Serialize};

/// Largest message size a test may use.
pub const MAX_SIZE: u32 = 64 << 20;
/// Most queue pairs per test.
pub const MAX_QPS: u32 = 64;
/// Most inline bytes a test may ask (`--inline`): above every provider's limit (mlx5 takes
/// up to ~900, rxe 240 by default); a QP that cannot take the figure asked runs without.
pub const MAX_INLINE: u32 = 1024;
/// Most iterations per test.
pub const MAX_ITERS: u64 = 100_000_000;
/// Longest duration per test: 7 days, a burn-in (perftest's `--run_infinitely` has no end).
pub const MAX_DURATION_MS: u64 = 7 * 24 * 3_600_000;
/// Shortest `--report-every` interval an agent takes.
pub const MIN_REPORT_EVERY_MS: u64 = 100;

/// The six tests, each named after the perftest tool it mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    SendLat,
    WriteLat,
    ReadLat,
    WriteBw,
    ReadBw,
    SendBw,
    /// ib_atomic_lat: one 8-byte atomic in flight, the full round trip.
    AtomicLat,
    /// ib_atomic_bw: a stream of 8-byte atomics (a message rate, not a link test).
    AtomicBw,
    /// ib_send_lat while ib_write_bw runs: a latency QP's ping-pong, idle and then while
    /// bandwidth QPs (`qps` of them) fill the link on the same traffic class (`perf::loaded_latency`).
    LatUnderLoad,
}

impl TestKind {
    /// The tests of the groups `lat`, `bw` and `all` (the default plan).
    pub const ALL: [TestKind; 6] = [TestKind::SendLat, TestKind::WriteLat, TestKind::ReadLat, TestKind::WriteBw, TestKind::ReadBw, TestKind::SendBw];
    /// Tests run only when named: the atomics measure the adapter's atomic unit, not the link.
    /// lat_under_load is a burn-in's test: run when named too.
    pub const NAMED_ONLY: [TestKind; 3] = [TestKind::AtomicLat, TestKind::AtomicBw, TestKind::LatUnderLoad];

    pub fn name(self) -> &'static str {
        match self {
            TestKind::SendLat => "send_lat",
            TestKind::WriteLat => "write_lat",
            TestKind::ReadLat => "read_lat",
            TestKind::WriteBw => "write_bw",
            TestKind::ReadBw => "read_bw",
            TestKind::SendBw => "send_bw",
            TestKind::AtomicLat => "atomic_lat",
            TestKind::AtomicBw => "atomic_bw",
            TestKind::LatUnderLoad => "lat_under_load",
        }
    }

    pub fn perftest_peer(self) -> &'static str {
        match self {
            TestKind::SendLat => "ib_send_lat",
            TestKind::WriteLat => "ib_write_lat",
            TestKind::ReadLat => "ib_read_lat",
            TestKind::WriteBw => "ib_write_bw",
            TestKind::ReadBw => "ib_read_bw",
            TestKind::SendBw => "ib_send_bw",
            TestKind::AtomicLat => "ib_atomic_lat",
            TestKind::AtomicBw => "ib_atomic_bw",
            TestKind::LatUnderLoad => "ib_send_lat while ib_write_bw runs",
        }
    }

    pub fn is_latency(self) -> bool {
        matches!(self, TestKind::SendLat | TestKind::WriteLat | TestKind::ReadLat | TestKind::AtomicLat | TestKind::LatUnderLoad)
    }

    pub fn is_atomic(self) -> bool {
        matches!(self, TestKind::AtomicLat | TestKind::AtomicBw)
    }

    /// Latency reported as the whole round trip (perftest's read and atomic latency), not half.
    pub fn full_round_trip(self) -> bool {
        matches!(self, TestKind::ReadLat | TestKind::AtomicLat)
    }

    pub fn from_name(name: &str) -> Option<TestKind> {
        TestKind::ALL.into_iter().chain(TestKind::NAMED_ONLY).find(|t| t.name() == name)
    }

    /// Parses `--tests`: names and the groups `lat`, `bw`, `all`, comma separated.
    pub fn parse_list(text: &str) -> Result<Vec<TestKind>, Unparsed> {
        let mut out = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let add: Vec<TestKind> = match word {
                "lat" => TestKind::ALL.into_iter().filter(|t| t.is_latency()).collect(),
                "bw" => TestKind::ALL.into_iter().filter(|t| !t.is_latency()).collect(),
                "all" => TestKind::ALL.to_vec(),
                name => vec![TestKind::from_name(name).ok_or_else(|| {
                    format!(
                        "unknown test '{name}' (known: send_lat write_lat read_lat write_bw read_bw send_bw atomic_lat atomic_bw lat_under_load, groups lat bw all)"
                    )
                })?],
            };
            for t in add {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        if out.is_empty() {
            return Err("--tests names no test".into());
        }
        Ok(out)
    }
}

impl std::fmt::Display for TestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// What one side does in a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Initiates: sends, writes or reads; measures.
    Active,
    /// Answers ping-pongs, receives sends, or lends its buffer.
    Passive,
    /// Both at once (bidirectional bandwidth).
    Both,
}

/// A test as an agent runs it. Built by the controller, validated by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    pub test: TestKind,
    pub role: Role,
    pub size: u32,
    /// Measured iterations (ignored when `duration_ms` is set).
    pub iters: u64,
    pub warmup: u64,
    pub duration_ms: Option<u64>,
    pub qps: u32,
    /// Work requests in flight per QP (bandwidth).
    pub tx_depth: u32,
    /// Completion every `cq_mod` sends (selective signaling).
    pub cq_mod: u32,
    /// WRs chained per post call.
    pub post_list: u32,
    /// Seconds without progress before the agent gives up on a peer.
    pub stall_timeout_ms: u64,
    /// `atomic_lat`/`atomic_bw`: the operation (absent in older controllers' specs: fetch-and-add).
    #[serde(default, skip_serializing_if = "AtomicOp::is_default")]
    pub atomic: AtomicOp,
    /// Inline bytes asked of the QP (`--inline N`; 0 turns inline off); `None`: fabcheck's
    /// default (inline where the message fits the provider's limit, as perftest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<u32>,
    /// Wait for completions on a completion channel instead of busy polling (`--events`,
    /// perftest's `-e`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub events: bool,
    /// Send the running test's figures every this many milliseconds (`--report-every`):
    /// `progress` replies before `done`. Absent: none (and an older agent sends none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_every_ms: Option<u64>,
    /// `--validate`: the seed of the pattern every message carries, checked by the receiver
    /// (write_bw, read_bw, send_bw on host memory). Absent: no check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_seed: Option<u64>,
    /// `--paths`: each QP its own GRH flow label (`paths::flow_label(k)`, so its own UDP source
    /// port on RoCE v2) and its own figures in the result. Absent: older controllers, off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paths: bool,
}

impl TestSpec {
    /// Checks every limit; an agent runs nothing that fails this.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.size == 0 {
            return Err(SpecError::EmptyMessage);
        }
        if self.size > MAX_SIZE {
            return Err(SpecError::MessageTooLarge { size: self.size });
        }
        if self.qps == 0 || self.qps > MAX_QPS {
            return Err(SpecError::QpCount);
        }
        if self.test.is_atomic() && self.size != ATOMIC_SIZE {
            return Err(SpecError::AtomicSize);
        }
        if self.inline.is_some_and(|n| n > MAX_INLINE) {
            return Err(SpecError::Inline);
        }
        // lat_under_load's `qps` are its load's; its latency QP is one more.
        if self.test.is_latency() && self.test != TestKind::LatUnderLoad && self.qps != 1 {
            return Err(SpecError::LatencyWithManyQps);
        }
        if self.duration_ms.is_none() && (self.iters == 0 || self.iters > MAX_ITERS) {
            return Err(SpecError::Iterations);
        }
        if self.warmup > MAX_ITERS {
            return Err(SpecError::Warmup);
        }
        if let Some(ms) = self.duration_ms {
            if ms == 0 || ms > MAX_DURATION_MS {
                return Err(SpecError::Duration);
            }
        }
        if self.report_every_ms.is_some_and(|ms| !(MIN_REPORT_EVERY_MS..=MAX_DURATION_MS).contains(&ms)) {
            return Err(SpecError::ReportEvery);
        }
        if self.tx_depth == 0 || self.tx_depth > 8192 || self.cq_mod == 0 || self.cq_mod > self.tx_depth {
            return Err(SpecError::Depth);
        }
        if self.post_list == 0 || self.post_list > self.cq_mod || !self.cq_mod.is_multiple_of(self.post_list) {
            return Err(SpecError::PostList);
        }
        if self.stall_timeout_ms == 0 || self.stall_timeout_ms > 600_000 {
            return Err(SpecError::StallTimeout);
        }
        Ok(())
    }
}

/// What a peer needs to connect to one side: exchanged out of band through the controller,
/// so it works on InfiniBand without IPoIB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub host: String,
    pub device: String,
    pub port: u8,
    pub lid: u16,
    pub gid_index: Option<u8>,
    /// RFC 5952 text; `None` on InfiniBand without a GRH.
    pub gid: Option<std::net::Ipv6Addr>,
    pub qpns: Vec<u32>,
    pub psn: u32,
    pub addr: u64,
    pub rkey: u32,
    pub len: u64,
    /// Active MTU in bytes.
    pub mtu: u32,
    pub link_layer: LinkLayer,
    pub rate_gbps: Option<f64>,
    pub ca_type: String,
    pub max_rd_atomic: u8,
    /// With rdma_cm: the listener's address, `ip:port` on the wire (`[v6]:port` for IPv6),
    /// as it always was; parsed once, when the message is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cm_addr: Option<std::net::SocketAddr>,
    /// Usable bandwidth of the adapter's PCIe link, Gb/s, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gbps: Option<f64>,
    /// How the port runs below what it supports (`speed EDR of HDR`), if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained_low: Option<String>,
    /// The conditions this side set up (what the agent applied, not just what was asked).
    #[serde(default, skip_serializing_if = "Conditions::is_default")]
    pub conditions: Conditions,
    /// The GPU the buffers live on (`--mem cuda...`); `None`: host memory. Boxed: most
    /// endpoints have none, and protocol messages stay small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Box<GpuUse>>,
}

/// Result of one side's run of a test: raw enough for the controller to summarise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub iterations: u64,
    pub bytes: u64,
    pub elapsed_ns: u64,
    /// Latency percentiles (one-way for send/write, round trip for read), latency tests only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<LatencySummary>,
    /// Best throughput over a window of the run, Gb/s (bandwidth tests).
    pub peak_gbps: Option<f64>,
    /// Port error/retransmission counters that moved during the test (name, delta).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_deltas: Vec<(String, u64)>,
    /// RoCE: the bytes each priority carried during the test, and the port's PFC (`pair.qos`);
    /// absent from an older agent, and on InfiniBand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio_traffic: Option<traffic::PrioTraffic>,
    /// `--validate`: what this side's check of the received data found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataCheck>,
    /// `--paths`: what each QP moved, in QP order (bandwidth tests' measuring sides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<paths::PathRun>,
    /// lat_under_load: the latency QP's figures before the load started (`lat` is under it;
    /// `bytes` and `elapsed_ns` are the load's over that phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_lat: Option<Box<LatencySummary>>,
}

/// Where a test runs on one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub device: Option<String>,
    pub port: Option<u8>,
    pub gid_index: Option<u8>,
    /// Connect through librdmacm instead of the out-of-band exchange, in this role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cm: Option<CmRole>,
    /// The conditions the test runs under (traffic class, SL, P_Key, relaxed ordering, CPU).
    #[serde(default, skip_serializing_if = "Conditions::is_default")]
    pub conditions: Conditions,
    /// Let the agent pin the loop itself: to the `n`th CPU (wrapping) of those near the adapter
    /// that it may use; two ends on one host are given 0 and 1. Ignored when `conditions.cpu`
    /// is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_slot: Option<u8>,
}

/// Which source named the ToS a RoCE test ran with when no `--tclass` was given (contract
/// 0.5: `traffic_class|rdma_cm|expect|pfc|none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TclassSource {
    /// MLNX_OFED's per-port override `tc/PORT/traffic_class`.
    TrafficClass,
    /// rdma_cm's `default_roce_tos`.
    RdmaCm,
    /// `--expect roce_dscp=N`.
    Expect,
    /// No DSCP source; the one priority with PFC.
    Pfc,
    /// Nothing: ToS 0.
    None,
}

impl TclassSource {
    /// Where it came from, in words.
    pub fn words(self) -> &'static str {
        match self {
            TclassSource::TrafficClass => "MLNX_OFED's traffic_class",
            TclassSource::RdmaCm => "rdma_cm's default_roce_tos",
            TclassSource::Expect => "--expect roce_dscp",
            TclassSource::Pfc => "the one priority with PFC",
            TclassSource::None => "no source: ToS 0",
        }
    }
}

/// What the fabric sees of a test's traffic, as users set it with perftest's flags: the RoCE
/// traffic class (the lossless class the fabric is built for), the InfiniBand service level,
/// the P_Key index, and relaxed ordering of the buffers (perftest's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conditions {
    /// RoCE: the GRH traffic class (DSCP << 2 | ECN); rdma_cm's ToS. `None`: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tclass: Option<u8>,
    /// Where a `tclass` no `--tclass` gave came from: the port's RoCE DSCP (an agent fills it
    /// in for its own end), or `--expect roce_dscp` (the controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tclass_source: Option<TclassSource>,
    /// InfiniBand service level (0..15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pkey_index: Option<u16>,
    /// Register buffers with `IBV_ACCESS_RELAXED_ORDERING` (an optional flag: ignored where
    /// unsupported).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relaxed_ordering: bool,
    /// The CPU the measured loop runs on: asked for (`pair --cpu`) in a target, the one the
    /// agent pinned its loop to in an endpoint. `None` in both: not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u16>,
    /// Where the buffers live (`--mem`); in an endpoint, `cuda:auto` resolved to its ordinal.
    #[serde(default, skip_serializing_if = "MemChoice::is_host")]
    pub mem: MemChoice,
    /// The queue pairs' path MTU at most this (perftest's -m; 256..4096, a power of two).
    /// `None`: the smaller of the two ports' active MTUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}

impl Conditions {
    pub fn is_default(&self) -> bool {
        *self == Conditions::default()
    }

    /// Checks the limits; an agent runs nothing that fails this.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.sl.is_some_and(|sl| sl > 15) {
            return Err(SpecError::ServiceLevel);
        }
        if self.pkey_index.is_some_and(|p| p > 127) {
            return Err(SpecError::PkeyIndex);
        }
        if self.mtu.is_some_and(|m| !matches!(m, 256 | 512 | 1024 | 2048 | 4096)) {
            return Err(SpecError::Mtu);
        }
        Ok(())
    }
}

/// A side's part in an rdma_cm connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmRole {
    Listen,
    Connect,
}

/// Latency percentiles in microseconds, as the contract's `lat_us`: full precision in memory and
/// on the wire between agent and controller; documents print [`LatencySummary::rounded`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
    pub stdev: f64,
    /// The loop lost its CPU between iterations (counted by `perf::preempt`); absent when it
    /// did not, and from an older agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempt: Option<preempt::Preempt>,
}

impl LatencySummary {
    /// Preempted beyond the bound: these figures time the scheduler, not the link.
    pub fn spoiled(&self) -> Option<preempt::Preempt> {
        self.preempt.filter(|p| p.spoils())
    }

    /// Every figure to three decimals (a nanosecond), as documents show them.
    pub fn rounded(&self) -> LatencySummary {
        let r = |v: f64| crate::units::round(v, 3);
        LatencySummary {
            min: r(self.min),
            p50: r(self.p50),
            p90: r(self.p90),
            p99: r(self.p99),
            p999: r(self.p999),
            max: r(self.max),
            mean: r(self.mean),
            stdev: r(self.stdev),
            preempt: self.preempt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(cm_addr: Option<std::net::SocketAddr>) -> Endpoint {
        Endpoint {
            host: "n1".into(),
            device: "mlx5_0".into(),
            port: 1,
            lid: 0,
            gid_index: Some(3),
            gid: Some("::ffff:10.0.0.1".parse().unwrap()),
            qpns: vec![17],
            psn: 1,
            addr: 0x1000,
            rkey: 7,
            len: 65536,
            mtu: 4096,
            link_layer: LinkLayer::Ethernet,
            rate_gbps: Some(200.0),
            ca_type: "ConnectX-7".into(),
            max_rd_atomic: 16,
            cm_addr,
            pcie_gbps: None,
            trained_low: None,
            conditions: Default::default(),
            gpu: None,
        }
    }

    /// `cm_addr` is a socket address inside and the same text on the wire as when it was a
    /// `String` filled from `SocketAddr::to_string`: agents of either build understand each other.
    #[test]
    fn cm_addr_is_ip_port_text_on_the_wire() {
        for text in ["198.18.0.1:40000", "[2001:db8::7]:4791", "[fe80::1%2]:7471"] {
            let addr: std::net::SocketAddr = text.parse().unwrap();
            let json = serde_json::to_string(&endpoint(Some(addr))).unwrap();
            assert!(json.contains(&format!("\"cm_addr\":\"{text}\"")), "{json}");
            let back: Endpoint = serde_json::from_str(&json).unwrap();
            assert_eq!(back.cm_addr, Some(addr));
        }
        let json = serde_json::to_string(&endpoint(None)).unwrap();
        assert!(!json.contains("cm_addr"), "absent when not listening: {json}");
        assert_eq!(serde_json::from_str::<Endpoint>(&json).unwrap().cm_addr, None);
    }

    /// A listener address that is not one is refused with the message, not carried to the
    /// connect step.
    #[test]
    fn a_cm_addr_that_is_no_address_is_refused_when_parsed() {
        let mut value = serde_json::to_value(endpoint(None)).unwrap();
        value["cm_addr"] = "rxe0:1".into();
        assert!(serde_json::from_value::<Endpoint>(value).is_err());
    }
}
