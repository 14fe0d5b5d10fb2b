//! The control protocol between a controller (`pair`, `mesh`) and its agents.
//!
//! One JSON object per line, each carrying the protocol version `v`. Pure: no sockets, no
//! clock; the transports feed it lines and the orchestration reads typed messages. Nothing
//! from the wire is ever handed to a shell: an agent only runs fabcheck's own tests,
//! described by the typed [`TestSpec`], whose limits are checked here.

use serde::{Deserialize, Serialize};

/// Bumped on any incompatible change; agents refuse other versions with a clear error.
pub const VERSION: u32 = 1;
/// Longest accepted line (an inventory of a big node fits many times over).
pub const MAX_LINE: usize = 1 << 20;
/// Largest message size a test may use.
pub const MAX_SIZE: u32 = 64 << 20;
/// Most queue pairs per test.
pub const MAX_QPS: u32 = 64;
/// Most iterations per test.
pub const MAX_ITERS: u64 = 100_000_000;
/// Longest duration per test.
pub const MAX_DURATION_MS: u64 = 3_600_000;

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
}

impl TestKind {
    pub const ALL: [TestKind; 6] = [TestKind::SendLat, TestKind::WriteLat, TestKind::ReadLat, TestKind::WriteBw, TestKind::ReadBw, TestKind::SendBw];

    pub fn name(self) -> &'static str {
        match self {
            TestKind::SendLat => "send_lat",
            TestKind::WriteLat => "write_lat",
            TestKind::ReadLat => "read_lat",
            TestKind::WriteBw => "write_bw",
            TestKind::ReadBw => "read_bw",
            TestKind::SendBw => "send_bw",
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
        }
    }

    pub fn is_latency(self) -> bool {
        matches!(self, TestKind::SendLat | TestKind::WriteLat | TestKind::ReadLat)
    }

    pub fn from_name(name: &str) -> Option<TestKind> {
        TestKind::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Parses `--tests`: names and the groups `lat`, `bw`, `all`, comma separated.
    pub fn parse_list(text: &str) -> Result<Vec<TestKind>, String> {
        let mut out = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let add: Vec<TestKind> = match word {
                "lat" => TestKind::ALL.into_iter().filter(|t| t.is_latency()).collect(),
                "bw" => TestKind::ALL.into_iter().filter(|t| !t.is_latency()).collect(),
                "all" => TestKind::ALL.to_vec(),
                name => vec![TestKind::from_name(name).ok_or_else(|| {
                    format!("unknown test '{name}' (known: send_lat write_lat read_lat write_bw read_bw send_bw, groups lat bw all)")
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
}

impl TestSpec {
    /// Checks every limit; an agent runs nothing that fails this.
    pub fn validate(&self) -> Result<(), String> {
        if self.size == 0 {
            return Err("size must be at least 1 byte".into());
        }
        if self.size > MAX_SIZE {
            return Err(format!("size {} exceeds the limit of {} bytes", self.size, MAX_SIZE));
        }
        if self.test == TestKind::WriteLat && self.size < 1 {
            return Err("write_lat needs at least 1 byte".into());
        }
        if self.qps == 0 || self.qps > MAX_QPS {
            return Err(format!("qps must be 1..{MAX_QPS}"));
        }
        if self.test.is_latency() && self.qps != 1 {
            return Err("latency tests use one QP".into());
        }
        if self.duration_ms.is_none() && (self.iters == 0 || self.iters > MAX_ITERS) {
            return Err(format!("iterations must be 1..{MAX_ITERS}"));
        }
        if self.warmup > MAX_ITERS {
            return Err("warm-up too long".into());
        }
        if let Some(ms) = self.duration_ms {
            if ms == 0 || ms > MAX_DURATION_MS {
                return Err(format!("duration must be 1 ms..{} s", MAX_DURATION_MS / 1000));
            }
        }
        if self.tx_depth == 0 || self.tx_depth > 8192 || self.cq_mod == 0 || self.cq_mod > self.tx_depth {
            return Err("tx_depth must be 1..8192 and cq_mod 1..tx_depth".into());
        }
        if self.post_list == 0 || self.post_list > self.cq_mod || self.cq_mod % self.post_list != 0 {
            return Err("post_list must divide cq_mod".into());
        }
        if self.stall_timeout_ms == 0 || self.stall_timeout_ms > 600_000 {
            return Err("stall timeout must be 1 ms..600 s".into());
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
    pub gid: Option<String>,
    pub qpns: Vec<u32>,
    pub psn: u32,
    pub addr: u64,
    pub rkey: u32,
    pub len: u64,
    /// Active MTU in bytes.
    pub mtu: u32,
    pub link_layer: String,
    pub rate_gbps: Option<f64>,
    pub ca_type: String,
    pub max_rd_atomic: u8,
    /// With rdma_cm: the listener's `ip:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cm_addr: Option<String>,
}

/// Result of one side's run of a test: raw enough for the controller to summarise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub iterations: u64,
    pub bytes: u64,
    pub elapsed_ns: u64,
    /// Latency percentiles (one-way for send/write, round trip for read), latency tests only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<crate::perf::summary::LatencySummary>,
    /// Best throughput over a window of the run, Gb/s (bandwidth tests).
    pub peak_gbps: Option<f64>,
    /// Port error/retransmission counters that moved during the test (name, delta).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_deltas: Vec<(String, u64)>,
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
}

/// A side's part in an rdma_cm connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmRole {
    Listen,
    Connect,
}

/// Controller -> agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Hello { token: Option<String> },
    Inventory,
    Prepare { target: Target, spec: TestSpec },
    Connect { peer: Endpoint },
    Run,
    Stop,
    Finish,
    Bye,
}

/// Agent -> controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Hello { agent: String, host: String },
    Inventory { inventory: crate::probe::Inventory },
    Ready { endpoint: Endpoint },
    Connected,
    Running,
    Done { result: RunResult },
    Finished,
    Error { cause: String, remedy: String },
    Bye,
}

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    v: u32,
    #[serde(flatten)]
    body: T,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("message longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("peer speaks protocol version {0}, this fabcheck speaks {VERSION}: install the same fabcheck version on every node")]
    Version(u32),
    #[error("malformed message: {0}")]
    Malformed(String),
}

/// Encodes one message as a line (with the trailing newline).
pub fn encode<T: Serialize>(body: &T) -> String {
    let mut line = serde_json::to_string(&Envelope { v: VERSION, body }).unwrap_or_else(|_| String::from("{}"));
    line.push('\n');
    line
}

/// Decodes one line (without or with its newline).
pub fn decode<T: for<'de> Deserialize<'de>>(line: &str) -> Result<T, DecodeError> {
    if line.len() > MAX_LINE {
        return Err(DecodeError::TooLong);
    }
    let value: serde_json::Value = serde_json::from_str(line.trim_end()).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let version = value.get("v").and_then(|v| v.as_u64()).ok_or_else(|| DecodeError::Malformed("no protocol version 'v'".into()))?;
    if version != u64::from(VERSION) {
        return Err(DecodeError::Version(version.min(u64::from(u32::MAX)) as u32));
    }
    let envelope: Envelope<T> = serde_json::from_value(value).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(envelope.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> TestSpec {
        TestSpec {
            test: TestKind::WriteBw,
            role: Role::Active,
            size: 65536,
            iters: 1000,
            warmup: 10,
            duration_ms: None,
            qps: 1,
            tx_depth: 128,
            cq_mod: 32,
            post_list: 8,
            stall_timeout_ms: 5000,
        }
    }

    #[test]
    fn round_trip_every_request() {
        let reqs = vec![
            Request::Hello { token: Some("t".into()) },
            Request::Inventory,
            Request::Prepare { target: Target { device: Some("rxe0".into()), port: Some(1), gid_index: None, cm: None }, spec: spec() },
            Request::Run,
            Request::Stop,
            Request::Finish,
            Request::Bye,
        ];
        for r in reqs {
            let line = encode(&r);
            assert!(line.ends_with('\n') && line.contains("\"v\":1"));
            assert_eq!(decode::<Request>(&line).unwrap(), r);
        }
    }

    #[test]
    fn rejects_bad_lines() {
        assert!(matches!(decode::<Request>("not json"), Err(DecodeError::Malformed(_))));
        assert!(matches!(decode::<Request>("{\"type\":\"run\"}"), Err(DecodeError::Malformed(_))));
        assert!(matches!(decode::<Request>("{\"v\":2,\"type\":\"run\"}"), Err(DecodeError::Version(2))));
        assert!(matches!(decode::<Request>("{\"v\":1,\"type\":\"rm -rf\"}"), Err(DecodeError::Malformed(_))));
        assert!(matches!(decode::<Request>("{\"v\":1,\"type\":\"run\""), Err(DecodeError::Malformed(_))));
        let huge = format!("{{\"v\":1,\"type\":\"hello\",\"token\":\"{}\"}}", "x".repeat(MAX_LINE));
        assert_eq!(decode::<Request>(&huge), Err(DecodeError::TooLong));
    }

    #[test]
    fn spec_limits() {
        assert!(spec().validate().is_ok());
        let mut s = spec();
        s.size = 0;
        assert!(s.validate().is_err());
        s.size = MAX_SIZE + 1;
        assert!(s.validate().is_err());
        let mut s = spec();
        s.qps = 0;
        assert!(s.validate().is_err());
        let mut s = spec();
        s.iters = 0;
        assert!(s.validate().is_err());
        s.duration_ms = Some(1000);
        assert!(s.validate().is_ok());
        let mut s = spec();
        s.cq_mod = 1000;
        assert!(s.validate().is_err());
        let mut s = spec();
        s.test = TestKind::SendLat;
        s.qps = 2;
        assert!(s.validate().is_err());
    }

    #[test]
    fn test_lists() {
        assert_eq!(TestKind::parse_list("lat").unwrap().len(), 3);
        assert_eq!(TestKind::parse_list("bw,write_bw").unwrap().len(), 3);
        assert_eq!(TestKind::parse_list("send_lat").unwrap(), vec![TestKind::SendLat]);
        assert!(TestKind::parse_list("warp").is_err());
        assert!(TestKind::parse_list(",").is_err());
    }
}
