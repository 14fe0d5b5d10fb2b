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
    /// Prepare this agent's part of a collective (0.5): one QP per hop of `plan` on `target`'s
    /// port, a registered ring per inbound hop. Answered `member_ready`. An agent says it
    /// understands this in its hello (`collective`).
    PrepareMember {
        target: Target,
        plan: crate::model::collective::MemberPlan,
        /// No progress on any hop for this long fails the run, naming the hop (0: the default).
        #[serde(default)]
        stall_timeout_ms: u64,
    },
    /// The far end of each of the member's hops (one endpoint per hop id); answered `connected`.
    /// `run` then runs the plan (answered `running`, then `member_done`); `stop` ends it early.
    ConnectHops {
        peers: Vec<HopPeer>,
    },
}

pub use crate::model::member_wire::{
    check_member_plan, check_member_result, match_hops, member_bytes, HopPeer, MemberWireError, MAX_MEMBER_BYTES, MAX_MEMBER_STALL_MS, RING_SLOTS,
};

/// An agent whose hello does not say `collective` (fabcheck older than 0.5) cannot run one:
/// the controller's exit-2 words, naming the agent's version and host.
pub fn collective_refusal(agent: &str, host: &str) -> (String, String) {
    (
        format!("the agent on {host} is {agent}, which runs no collective (fabcheck 0.5 or later does)"),
        "install the same fabcheck version (0.5 or later) on every node".into(),
    )
}

/// An agent whose hello does not say `member_paths` (older than `collective --paths`) runs each
/// hop on one QP: asked for more, the controller's exit-2 words, naming its version and host.
pub fn paths_refusal(agent: &str, host: &str, paths: u32) -> (String, String) {
    (
        format!("the agent on {host} is {agent}, which runs a collective's hops on one path each; --paths {paths} needs a newer agent"),
        "install the same fabcheck version on every node, or run without --paths".into(),
    )
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
        /// Runs collective members (`prepare_member`, fabcheck 0.5 and later); absent from
        /// older agents' hellos.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        collective: bool,
        /// Runs a collective member's hops over several paths (`collective --paths`, QPs with
        /// their own flow labels); absent from older agents' hellos.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        member_paths: bool,
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
    /// The running test's figures over the last interval (`--report-every`; only to a
    /// controller that asked, with the spec's `report_every_ms`), before its `done`.
    Progress {
        interval: crate::model::Interval,
    },
    Done {
        result: RunResult,
    },
    /// The answer to `prepare_member`: this member's end of each of its hops (0.5).
    MemberReady {
        hops: Vec<HopPeer>,
    },
    /// A collective member's measurements, after `run` (0.5).
    MemberDone {
        result: crate::model::collective::MemberResult,
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
            paths: false,
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
            report_every_ms: None,
            validate_seed: None,
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

    fn member_plan() -> crate::model::collective::MemberPlan {
        use crate::model::collective::{Hop, HopId, MemberId, MemberPlan, Step};
        let out = Hop { id: HopId(1), from: MemberId(1), to: MemberId(2) };
        let inb = Hop { id: HopId(0), from: MemberId(0), to: MemberId(1) };
        let steps = vec![Step::once(vec![], vec![0]), Step::once(vec![0], vec![0]), Step::once(vec![0], vec![])];
        MemberPlan {
            member: MemberId(1),
            outbound: vec![out],
            inbound: vec![inb],
            steps,
            chunk_bytes: 65536,
            iters: 10,
            report_every_ms: None,
            paths: 1,
        }
    }

    fn hop_peer(hop: u32, qpns: Vec<u32>) -> HopPeer {
        let mut endpoint: Endpoint = serde_json::from_value(serde_json::json!({
            "host": "n2", "device": "rxe0", "port": 1, "lid": 0, "gid_index": null, "gid": null, "qpns": [], "psn": 1,
            "addr": 4096, "rkey": 7, "len": 524288, "mtu": 1024, "link_layer": "Ethernet", "rate_gbps": null, "ca_type": "x", "max_rd_atomic": 1
        }))
        .unwrap();
        endpoint.qpns = qpns;
        HopPeer { hop: crate::model::collective::HopId(hop), endpoint }
    }

    #[test]
    fn collective_messages_travel_the_wire_unchanged() {
        let target = Target { device: Some("rxe0".into()), port: Some(1), gid_index: None, cm: None, conditions: Default::default(), cpu_slot: None };
        for r in [
            Request::PrepareMember { target, plan: member_plan(), stall_timeout_ms: 2000 },
            Request::ConnectHops { peers: vec![hop_peer(0, vec![17]), hop_peer(1, vec![18])] },
        ] {
            assert_eq!(decode::<Request>(&encode(&r)).unwrap(), r);
        }
        let done = Reply::MemberDone {
            result: crate::model::collective::MemberResult {
                member: crate::model::collective::MemberId(1),
                elapsed_ns: 5,
                iterations: 10,
                hops: vec![],
                counter_deltas: vec![],
                window: None,
            },
        };
        assert_eq!(decode_from_peer::<Reply>(&encode(&done)).unwrap(), done);
        // A 0.4 agent's hello says nothing of collectives: it reads as false.
        let old = "{\"v\":1,\"type\":\"hello\",\"agent\":\"fabcheck 0.4.2\",\"host\":\"n1\",\"rails\":true}";
        assert!(matches!(decode_from_peer::<Reply>(old).unwrap(), Reply::Hello { collective: false, rails: true, .. }));
        let (cause, remedy) = collective_refusal("fabcheck 0.4.2", "n1");
        assert!(cause.contains("n1") && cause.contains("fabcheck 0.4.2") && remedy.contains("0.5"), "{cause} / {remedy}");
    }

    #[test]
    fn a_member_plan_off_the_wire_is_bounded() {
        let plan = member_plan();
        assert_eq!(check_member_plan(&plan, 1000), Ok(()));
        assert_eq!(member_bytes(&plan), 65536 * u64::from(RING_SLOTS) + 65536);
        let mut p = plan.clone();
        p.iters = 0;
        assert_eq!(check_member_plan(&p, 0), Err(MemberWireError::Iters(0)));
        p.iters = MAX_ITERS + 1;
        assert!(check_member_plan(&p, 0).is_err());
        assert_eq!(check_member_plan(&plan, MAX_MEMBER_STALL_MS + 1), Err(MemberWireError::Stall(MAX_MEMBER_STALL_MS + 1)));
        let mut p = plan.clone();
        p.inbound = (0..1000).map(|i| crate::model::collective::Hop { id: crate::model::collective::HopId(i), ..plan.inbound[0] }).collect();
        p.chunk_bytes = MAX_SIZE;
        assert!(matches!(check_member_plan(&p, 0), Err(MemberWireError::TooLarge(_))));
        let mut p = plan;
        p.steps[1].wait = vec![4];
        assert!(matches!(check_member_plan(&p, 0), Err(MemberWireError::Plan(_))));
    }

    #[test]
    fn every_hop_gets_exactly_one_endpoint_of_one_qp() {
        let plan = member_plan();
        let both = [hop_peer(0, vec![17]), hop_peer(1, vec![18])];
        let got = match_hops(&plan, &both).unwrap();
        assert_eq!(got.iter().map(|e| e.qpns[0]).collect::<Vec<_>>(), [18, 17], "outbound first, then inbound");
        assert_eq!(match_hops(&plan, &[hop_peer(1, vec![18])]), Err(MemberWireError::MissingHop(0)));
        assert_eq!(match_hops(&plan, &[hop_peer(1, vec![18]), hop_peer(1, vec![18])]), Err(MemberWireError::DuplicateHop(1)));
        assert_eq!(match_hops(&plan, &[hop_peer(9, vec![18])]), Err(MemberWireError::UnknownHop(9)));
        assert_eq!(match_hops(&plan, &[hop_peer(0, vec![]), hop_peer(1, vec![1])]), Err(MemberWireError::QpCount(0, 0, 1)));
        // `--paths 4`: a hop is four QPs, in path order.
        let four = crate::model::collective::MemberPlan { paths: 4, ..plan.clone() };
        assert_eq!(match_hops(&four, &both), Err(MemberWireError::QpCount(0, 1, 4)));
        let labelled = [hop_peer(0, vec![1, 2, 3, 4]), hop_peer(1, vec![5, 6, 7, 8])];
        let got = match_hops(&four, &labelled).unwrap();
        assert_eq!(got[0].qpns, [5, 6, 7, 8]);
        use crate::model::collective::{HopId, HopResult, MemberId, MemberResult};
        let hop = |id| HopResult { hop: HopId(id), chunks: 1, bytes: 1, step_us: None, gbps: 1.0, paths: Vec::new() };
        let mut r = MemberResult { member: MemberId(1), elapsed_ns: 1, iterations: 1, hops: vec![hop(1)], counter_deltas: vec![], window: None };
        assert_eq!(check_member_result(&plan, &r), Ok(()));
        r.hops.push(hop(0));
        assert_eq!(check_member_result(&plan, &r), Err(MemberWireError::UnknownHop(0)), "an inbound hop has no sender's figures here");
        r.hops.pop();
        r.hops[0].paths = vec![crate::model::paths::PathRun::default(); 2];
        assert_eq!(check_member_result(&plan, &r), Err(MemberWireError::PathCount(1, 2, 1)), "no more paths than the plan asked");
        let two = crate::model::collective::MemberPlan { paths: 2, ..plan.clone() };
        assert_eq!(check_member_result(&two, &r), Ok(()));
        r.hops[0].paths[1].bytes = 2;
        assert_eq!(check_member_result(&two, &r), Err(MemberWireError::PathBytes(1)), "paths move no more than their hop");
        r.member = MemberId(3);
        assert_eq!(check_member_result(&plan, &r), Err(MemberWireError::WrongMember(3)));
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
