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
/// Longest hello a `fabcheck serve` reads before it knows who is speaking (a token and a few
/// fields): a token must fit in it.
pub const HELLO_MAX: usize = 4096;
/// Shortest token `fabcheck serve` and the controllers take: 16 bytes, 128 bits of a random
/// hex or base64 string, which no online guessing at one guess a second gets near.
pub const MIN_TOKEN: usize = 16;
pub use crate::model::{CmRole, Conditions, Endpoint, Role, RunResult, Target, TestKind, TestSpec, MAX_DURATION_MS, MAX_ITERS, MAX_QPS, MAX_SIZE};

/// Controller -> agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Hello {
        token: Option<String>,
    },
    Inventory,
    /// Which ports `--rails SPEC` means on the agent's node, in rail order (0.3; an agent
    /// says it understands this in its hello).
    Rails {
        spec: crate::model::rails::RailSpec,
    },
    Prepare {
        target: Target,
        spec: TestSpec,
    },
    Connect {
        peer: Endpoint,
    },
    Run,
    Stop,
    Finish,
    Bye,
    /// The node's checklist and its drift facts (0.5, `accept`). An older agent refuses it as
    /// a message it cannot read; the controller then names the agent's version.
    Check,
}

/// Agent -> controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Hello {
        agent: String,
        host: String,
        /// Answers `rails` (fabcheck 0.3 and later); absent from older agents' hellos.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        rails: bool,
    },
    Inventory {
        inventory: crate::probe::Inventory,
    },
    Rails {
        rails: Vec<crate::model::rails::Rail>,
        /// PCIe switch uplinks several of these rails share (a bound on their total).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        shared: Vec<crate::gpu::rails::SharedUplink>,
    },
    Ready {
        endpoint: Endpoint,
    },
    Connected,
    Running,
    Done {
        result: RunResult,
    },
    Finished,
    /// The answer to `check`: the node judged as `fabcheck check` judges it, and its drift facts.
    Check {
        report: crate::outcome::Report,
        facts: Vec<crate::probe::facts::Fact>,
    },
    Error {
        cause: String,
        remedy: String,
    },
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

/// [`decode`] for a message from a peer (an agent's reply): every string in it, object keys
/// included, made one line by the sanitiser before anything reads it (issue #58), so a host,
/// device or counter name or an error cause holding a newline or an escape sequence can forge
/// no line in any printer, table, log or document.
pub fn decode_from_peer<T: for<'de> Deserialize<'de>>(line: &str) -> Result<T, DecodeError> {
    if line.len() > MAX_LINE {
        return Err(DecodeError::TooLong);
    }
    let mut value: serde_json::Value = serde_json::from_str(line.trim_end()).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    crate::sanitise::json_strings(&mut value);
    decode(&value.to_string())
}

/// Why `token` cannot be the shared token, if it cannot: too short to resist guessing, or too
/// long for the hello it travels in (then no controller could ever authenticate).
pub fn token_problem(token: &str) -> Option<String> {
    if token.len() < MIN_TOKEN {
        return Some(format!("the token is {} bytes long; it must be at least {MIN_TOKEN}", token.len()));
    }
    let hello = encode(&Request::Hello { token: Some(token.to_string()) });
    if hello.len() > HELLO_MAX {
        return Some(format!("the token is too long: its hello takes {} bytes of the {HELLO_MAX} serve reads", hello.len()));
    }
    None
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
            atomic: crate::model::AtomicOp::FetchAdd,
            inline: None,
            events: false,
        }
    }

    #[test]
    fn round_trip_every_request() {
        let reqs = vec![
            Request::Hello { token: Some("t".into()) },
            Request::Inventory,
            Request::Rails { spec: crate::model::rails::RailSpec::Count(4) },
            Request::Prepare {
                target: Target {
                    device: Some("rxe0".into()),
                    port: Some(1),
                    gid_index: None,
                    cm: None,
                    conditions: Default::default(),
                    cpu_slot: None,
                },
                spec: spec(),
            },
            Request::Run,
            Request::Stop,
            Request::Finish,
            Request::Bye,
            Request::Check,
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
    fn a_token_must_be_long_enough_and_fit_the_hello() {
        assert!(token_problem("s").unwrap().contains("at least 16"));
        assert!(token_problem(&"x".repeat(15)).is_some());
        assert_eq!(token_problem(&"x".repeat(16)), None);
        assert_eq!(token_problem(&"x".repeat(4000)), None);
        assert!(token_problem(&"x".repeat(HELLO_MAX)).unwrap().contains("too long"));
        // Escaped characters take more room on the wire than in the token.
        assert!(token_problem(&"\\\u{1}".repeat(700)).unwrap().contains("too long"));
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
