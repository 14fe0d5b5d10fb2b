//! What the agent does with each request, as a pure state machine (like `pair::sequence`):
//! fed requests, it answers with the steps to take. The I/O loop ([`session`](super::session))
//! performs them (the verbs work lives in `perf`) and reports back whether a test could be
//! prepared. Tested without devices or sockets.

use super::budget::{self, Budget, Refusal, Reservation};
use crate::control::protocol::{self, Endpoint, HopPeer, Reply, Request, Target, TestSpec};
use crate::model::collective::MemberPlan;
use std::sync::Arc;
use std::time::Duration;

/// One thing the I/O loop does, in order.
#[derive(Debug, PartialEq)]
pub enum Step {
    Reply(Reply),
    /// Read the inventory and reply with it.
    Inventory,
    /// Resolve `--rails` on this node and reply with its rails.
    Rails(crate::model::rails::RailSpec),
    /// Release the test session (and its registered memory), if one is open.
    Close,
    /// Open a test session; report with [`Machine::opened`].
    Open {
        target: Target,
        spec: TestSpec,
    },
    /// Connect the open session to its peer and reply.
    Connect(Endpoint),
    /// Run the open session's test and reply with its result (`running` is already said).
    Run,
    /// End the conversation (after the steps before it).
    End,
    /// Read and judge the node (or the bundle served) and reply with the check.
    Check,
    /// Open a collective member's hops (0.5); report with [`Machine::opened`]. The plan was
    /// checked and its memory counted against the budget.
    OpenMember {
        target: Target,
        plan: MemberPlan,
        stall_timeout_ms: u64,
    },
    /// Connect the open member's hops to their peers (one per hop, checked against the plan).
    ConnectMember(Vec<HopPeer>),
    /// Run the open member's plan and reply with its result (`running` is already said).
    RunMember,
}

/// What the session has open.
#[derive(Debug, Clone, PartialEq)]
enum Open {
    /// A pair test (`prepare`).
    Test,
    /// A collective member (`prepare_member`), and its plan (to check `connect_hops` by).
    Member(Box<MemberPlan>),
}

pub struct Machine {
    host: String,
    /// `None`: a trusted channel (stdio) that registers what the controller asks for.
    budget: Option<Arc<Budget>>,
    reservation: Option<Reservation>,
    /// What the last open step asked for, until [`Machine::opened`] says whether it opened.
    pending: Option<Open>,
    prepared: Option<Open>,
    /// Serving a bundle (`--sysfs-root`): it answers `check`, `devices`; no verbs test.
    bundle: bool,
}

impl Machine {
    pub fn new(host: impl Into<String>, budget: Option<Arc<Budget>>) -> Machine {
        Machine { host: host.into(), budget, reservation: None, pending: None, prepared: None, bundle: false }
    }

    /// An agent answering from a bundle (`serve --sysfs-root`).
    pub fn serving_bundle(self) -> Machine {
        Machine { bundle: true, ..self }
    }

    /// The hello a controller is greeted with.
    pub fn hello(host: &str) -> Reply {
        Reply::Hello {
            agent: format!("fabcheck {}", env!("CARGO_PKG_VERSION")),
            host: host.to_string(),
            rails: true,
            collective: true,
            member_paths: true,
        }
    }

    pub fn on_request(&mut self, request: Request) -> Vec<Step> {
        match request {
            Request::Hello { .. } => vec![Step::Reply(Machine::hello(&self.host))],
            Request::Inventory => vec![Step::Inventory],
            Request::Check => vec![Step::Check],
            Request::Rails { .. } | Request::Prepare { .. } | Request::PrepareMember { .. } if self.bundle => vec![Step::Reply(error(
                "this agent serves a bundle (--sysfs-root): it answers check and devices, and runs no verbs test",
                "test with an agent on the live node (`fabcheck serve` without --sysfs-root)",
            ))],
            // Held to the command line's bounds: a controller is not trusted to have parsed it.
            Request::Rails { spec } => match spec.check() {
                Ok(()) => vec![Step::Rails(spec)],
                Err(why) => vec![Step::Reply(error(&why.0, "name 1 to 32 rails, each port once (`--rails`)"))],
            },
            Request::Prepare { target, spec } => {
                self.close();
                let bytes = if spec.validate().is_err() { None } else { Some(budget::test_bytes(crate::perf::latency_probe::region_half(&spec))) };
                match self.reserve(bytes) {
                    Ok(()) => {
                        self.pending = Some(Open::Test);
                        vec![Step::Close, Step::Open { target, spec }]
                    }
                    Err(refusal) => vec![Step::Close, Step::Reply(Reply::Error { cause: refusal.cause(), remedy: refusal.remedy().into() })],
                }
            }
            Request::PrepareMember { target, plan, stall_timeout_ms } => self.prepare_member(target, plan, stall_timeout_ms),
            Request::ConnectHops { peers } => match &self.prepared {
                Some(Open::Member(plan)) => match protocol::match_hops(plan, &peers) {
                    Ok(_) => vec![Step::ConnectMember(peers)],
                    Err(e) => vec![Step::Reply(error(&format!("connect_hops refused: {e}"), "use the same fabcheck version on every node"))],
                },
                _ => vec![Step::Reply(error("connect_hops before prepare_member", "controller bug: prepare the member first"))],
            },
            Request::Connect { peer } if self.prepared == Some(Open::Test) => vec![Step::Connect(peer)],
            Request::Connect { .. } => vec![Step::Reply(error("connect before prepare", "controller bug: prepare a test first"))],
            Request::Run if matches!(self.prepared, Some(Open::Member(_))) => vec![Step::Reply(Reply::Running), Step::RunMember],
            Request::Run if self.prepared.is_some() => vec![Step::Reply(Reply::Running), Step::Run],
            Request::Run => vec![Step::Reply(error("run before prepare", "controller bug: prepare a test first"))],
            Request::Stop => Vec::new(),
            Request::Finish => {
                self.close();
                vec![Step::Close, Step::Reply(Reply::Finished)]
            }
            Request::Bye => {
                self.close();
                vec![Step::Close, Step::Reply(Reply::Bye), Step::End]
            }
        }
    }

    /// Whether the session of the last `Open` or `OpenMember` could be opened.
    pub fn opened(&mut self, ok: bool) {
        let pending = self.pending.take();
        self.prepared = if ok { pending } else { None };
        if !ok {
            self.reservation = None;
        }
    }

    /// A member's plan, checked (bounds, hops its own) and its rings and send chunk counted
    /// against the budget before anything is registered.
    fn prepare_member(&mut self, target: Target, plan: MemberPlan, stall_timeout_ms: u64) -> Vec<Step> {
        self.close();
        if let Err(e) = protocol::check_member_plan(&plan, stall_timeout_ms) {
            return vec![Step::Close, Step::Reply(error(&format!("prepare_member refused: {e}"), "use the same fabcheck version on every node"))];
        }
        match self.reserve(Some(protocol::member_bytes(&plan))) {
            Ok(()) => {
                self.pending = Some(Open::Member(Box::new(plan.clone())));
                vec![Step::Close, Step::OpenMember { target, plan, stall_timeout_ms }]
            }
            Err(refusal) => vec![Step::Close, Step::Reply(Reply::Error { cause: refusal.cause(), remedy: refusal.remedy().into() })],
        }
    }

    /// A message the agent cannot read: say why, then end.
    pub fn on_bad(&mut self, why: &str) -> Vec<Step> {
        self.close();
        vec![
            Step::Close,
            Step::Reply(Reply::Error {
                cause: format!("agent refused a message: {why}"),
                remedy: "use the same fabcheck version on every node".into(),
            }),
            Step::End,
        ]
    }

    /// No request for `limit` between tests: the session ends, its memory is released.
    pub fn on_idle(&mut self, limit: Duration) -> Vec<Step> {
        self.close();
        vec![
            Step::Close,
            Step::Reply(error(
                &format!("serve ended this session: no request for {} s", limit.as_secs()),
                "reconnect; or start serve with a longer --idle-timeout if the controller pauses that long",
            )),
            Step::End,
        ]
    }

    fn close(&mut self) {
        self.prepared = None;
        self.pending = None;
        self.reservation = None;
    }

    /// Counts `bytes` of buffers against the budget before anything is registered. `None`: a
    /// spec that is invalid, left for `Session::open` to refuse with its own words.
    fn reserve(&mut self, bytes: Option<u64>) -> Result<(), Refusal> {
        let Some(budget) = &self.budget else { return Ok(()) };
        let Some(bytes) = bytes else { return Ok(()) };
        match budget.reserve(bytes, 0) {
            Ok(r) => {
                self.reservation = Some(r);
                Ok(())
            }
            Err(refusal) => Err(refusal),
        }
    }
}

fn error(cause: &str, remedy: &str) -> Reply {
    Reply::Error { cause: cause.into(), remedy: remedy.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::budget::Limits;
    use crate::control::protocol::{Role, TestKind};

    fn spec(size: u32) -> TestSpec {
        TestSpec {
            paths: false,
            test: TestKind::WriteBw,
            role: Role::Active,
            size,
            iters: 10,
            warmup: 0,
            duration_ms: None,
            qps: 1,
            tx_depth: 128,
            cq_mod: 32,
            post_list: 8,
            stall_timeout_ms: 1000,
            atomic: crate::model::AtomicOp::FetchAdd,
            inline: None,
            events: false,
            report_every_ms: None,
            validate_seed: None,
        }
    }

    fn target() -> Target {
        Target { device: None, port: None, gid_index: None, cm: None, conditions: Default::default(), cpu_slot: None }
    }

    fn prepare(size: u32) -> Request {
        Request::Prepare { target: target(), spec: spec(size) }
    }

    #[test]
    fn a_test_runs_only_once_prepared() {
        let mut m = Machine::new("n1", None);
        assert!(matches!(&m.on_request(Request::Hello { token: None })[..], [Step::Reply(Reply::Hello { host, .. })] if host == "n1"));
        assert!(matches!(&m.on_request(Request::Run)[..], [Step::Reply(Reply::Error { cause, .. })] if cause == "run before prepare"));
        assert!(matches!(&m.on_request(prepare(4096))[..], [Step::Close, Step::Open { .. }]));
        m.opened(true);
        assert_eq!(m.on_request(Request::Run), [Step::Reply(Reply::Running), Step::Run]);
        assert_eq!(m.on_request(Request::Finish), [Step::Close, Step::Reply(Reply::Finished)]);
        assert!(matches!(&m.on_request(Request::Connect { peer: dummy_endpoint() })[..], [Step::Reply(Reply::Error { .. })]));
        assert_eq!(m.on_request(Request::Bye), [Step::Close, Step::Reply(Reply::Bye), Step::End]);
    }

    #[test]
    fn a_bundle_agent_answers_check_and_refuses_verbs_tests() {
        let mut m = Machine::new("n1", None).serving_bundle();
        assert_eq!(m.on_request(Request::Check), [Step::Check]);
        assert_eq!(m.on_request(Request::Inventory), [Step::Inventory]);
        assert!(matches!(&m.on_request(prepare(4096))[..], [Step::Reply(Reply::Error { cause, .. })] if cause.contains("serves a bundle")));
        let rails = Request::Rails { spec: crate::model::rails::RailSpec::Count(1) };
        assert!(matches!(&m.on_request(rails)[..], [Step::Reply(Reply::Error { .. })]));
        assert_eq!(Machine::new("n1", None).on_request(Request::Check), [Step::Check]);
    }

    /// A `rails` request is held to `--rails`'s bounds: a controller that sends thousands of
    /// names, or one port twice, is answered with why, and nothing is resolved.
    #[test]
    fn a_rails_request_past_the_bounds_is_refused() {
        use crate::model::rails::{RailName, RailSpec};
        let mut m = Machine::new("n1", None);
        assert_eq!(m.on_request(Request::Rails { spec: RailSpec::Count(2) }), [Step::Rails(RailSpec::Count(2))]);
        let many = RailSpec::List((0..5000).map(|i| RailName { device: format!("d{i}"), port: None }).collect());
        let steps = m.on_request(Request::Rails { spec: many });
        assert!(matches!(&steps[..], [Step::Reply(Reply::Error { cause, .. })] if cause.contains("5000 rails named")), "{steps:?}");
        let steps = m.on_request(Request::Rails { spec: RailSpec::Count(40) });
        assert!(matches!(&steps[..], [Step::Reply(Reply::Error { .. })]), "{steps:?}");
    }

    #[test]
    fn buffers_over_the_budget_are_refused_before_registering() {
        let budget = Budget::new(Limits::from_total(64 << 20));
        let mut a = Machine::new("n1", Some(Arc::clone(&budget)));
        let mut b = Machine::new("n1", Some(Arc::clone(&budget)));
        assert!(matches!(&a.on_request(prepare(16 << 20))[..], [Step::Close, Step::Open { .. }]));
        a.opened(true);
        assert_eq!(budget.held(), 32 << 20);
        assert!(matches!(&b.on_request(prepare(16 << 20))[..], [Step::Close, Step::Open { .. }]));
        b.opened(true);
        // A third session, and a second test of the first session while it holds its first.
        let mut c = Machine::new("n1", Some(Arc::clone(&budget)));
        let steps = c.on_request(prepare(4096));
        assert!(
            matches!(&steps[..], [Step::Close, Step::Reply(Reply::Error { cause, remedy })]
            if cause.contains("its sessions hold 64 MiB of the 64 MiB") && remedy.contains("--max-registered")),
            "{steps:?}"
        );
        // Preparing anew releases the session's last test first.
        assert!(matches!(&a.on_request(prepare(8 << 20))[..], [Step::Close, Step::Open { .. }]));
        a.opened(false);
        assert_eq!(budget.held(), 32 << 20, "a failed open gives its bytes back");
        b.on_idle(Duration::from_secs(300));
        assert_eq!(budget.held(), 0, "an idle session gives its bytes back");
    }

    #[test]
    fn an_invalid_spec_is_left_to_session_open() {
        let mut m = Machine::new("n1", Some(Budget::new(Limits::default())));
        assert!(matches!(&m.on_request(prepare(0))[..], [Step::Close, Step::Open { .. }]));
    }

    fn member(inbound: u32, chunk: u32) -> MemberPlan {
        use crate::model::collective::{Hop, HopId, MemberId, Step};
        let out = Hop { id: HopId(100), from: MemberId(0), to: MemberId(1) };
        let inbound = (0..inbound).map(|i| Hop { id: HopId(i), from: MemberId(i + 1), to: MemberId(0) }).collect();
        MemberPlan {
            member: MemberId(0),
            outbound: vec![out],
            inbound,
            steps: vec![Step::once(vec![0], vec![0])],
            chunk_bytes: chunk,
            iters: 3,
            report_every_ms: None,
            paths: 1,
        }
    }

    fn prepare_member(plan: MemberPlan) -> Request {
        Request::PrepareMember { target: target(), plan, stall_timeout_ms: 0 }
    }

    fn hop(id: u32) -> HopPeer {
        let mut endpoint = dummy_endpoint();
        endpoint.qpns = vec![5];
        HopPeer { hop: crate::model::collective::HopId(id), endpoint }
    }

    #[test]
    fn a_member_is_prepared_connected_by_hop_and_run() {
        let mut m = Machine::new("n1", None);
        assert!(
            matches!(&m.on_request(Request::ConnectHops { peers: vec![] })[..], [Step::Reply(Reply::Error { cause, .. })] if cause.contains("before prepare_member"))
        );
        assert!(matches!(&m.on_request(prepare_member(member(1, 4096)))[..], [Step::Close, Step::OpenMember { stall_timeout_ms: 0, .. }]));
        m.opened(true);
        // A pair's connect is not a member's.
        assert!(matches!(&m.on_request(Request::Connect { peer: dummy_endpoint() })[..], [Step::Reply(Reply::Error { .. })]));
        let missing = m.on_request(Request::ConnectHops { peers: vec![hop(100)] });
        assert!(matches!(&missing[..], [Step::Reply(Reply::Error { cause, .. })] if cause.contains("hop 0 has no peer endpoint")), "{missing:?}");
        assert!(matches!(&m.on_request(Request::ConnectHops { peers: vec![hop(100), hop(0)] })[..], [Step::ConnectMember(p)] if p.len() == 2));
        assert_eq!(m.on_request(Request::Run), [Step::Reply(Reply::Running), Step::RunMember]);
        assert_eq!(m.on_request(Request::Finish), [Step::Close, Step::Reply(Reply::Finished)]);
        assert!(matches!(&m.on_request(Request::Run)[..], [Step::Reply(Reply::Error { .. })]));
        // A pair test after a member runs on its own path, as before.
        assert!(matches!(&m.on_request(prepare(4096))[..], [Step::Close, Step::Open { .. }]));
        m.opened(true);
        assert_eq!(m.on_request(Request::Run), [Step::Reply(Reply::Running), Step::Run]);
    }

    #[test]
    fn a_member_plan_is_checked_and_its_rings_counted_before_registering() {
        let mut m = Machine::new("n1", None);
        let mut bad = member(1, 4096);
        bad.steps[0].send = vec![3];
        assert!(
            matches!(&m.on_request(prepare_member(bad))[..], [Step::Close, Step::Reply(Reply::Error { cause, .. })] if cause.contains("prepare_member refused"))
        );
        let budget = Budget::new(Limits::from_total(64 << 20));
        let mut a = Machine::new("n1", Some(Arc::clone(&budget)));
        // 3 inbound rings of 8 chunks of 1 MiB, and one chunk to send from: 25 MiB.
        assert!(matches!(&a.on_request(prepare_member(member(3, 1 << 20)))[..], [Step::Close, Step::OpenMember { .. }]));
        a.opened(true);
        assert_eq!(budget.held(), 25 << 20);
        // 4 inbound rings: 33 MiB, over one session's 32 MiB.
        let mut b = Machine::new("n1", Some(Arc::clone(&budget)));
        let steps = b.on_request(prepare_member(member(4, 1 << 20)));
        assert!(matches!(&steps[..], [Step::Close, Step::Reply(Reply::Error { remedy, .. })] if remedy.contains("--max-registered")), "{steps:?}");
        a.opened(false);
        assert_eq!(budget.held(), 0, "a member that failed to open gives its bytes back");
        let mut bundle = Machine::new("n1", None).serving_bundle();
        assert!(
            matches!(&bundle.on_request(prepare_member(member(1, 4096)))[..], [Step::Reply(Reply::Error { cause, .. })] if cause.contains("serves a bundle"))
        );
    }

    #[test]
    fn the_hello_says_it_runs_collectives() {
        assert!(matches!(Machine::hello("n1"), Reply::Hello { collective: true, rails: true, .. }));
    }

    fn dummy_endpoint() -> Endpoint {
        serde_json::from_value(serde_json::json!({
            "host": "n2", "device": "rxe0", "port": 1, "lid": 0, "gid_index": null, "gid": null, "qpns": [1], "psn": 1,
            "addr": 0, "rkey": 0, "len": 4096, "mtu": 1024, "link_layer": "Ethernet", "rate_gbps": null, "ca_type": "x", "max_rd_atomic": 1
        }))
        .unwrap()
    }
}
