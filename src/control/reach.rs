//! Reaching one agent: hello (with the token), and optionally its inventory. A conversation
//! for [`drive`](super::drive), so a thousand agents are reached from one thread, `window`
//! handshakes (ssh logins, TCP connects) at a time.

use super::drive::{drive, Actions, Conversation, Job};
use super::endpoint::HostSpec;
use super::hub::{Hub, LinkId};
use super::protocol::{Reply, Request};
use crate::outcome::loss::{Loss, LossKind, Step};
use crate::probe::Inventory;
use std::time::{Duration, Instant};

/// Deadlines for each step; a step that misses its deadline ends the run (exit 2).
pub mod deadline {
    use std::time::Duration;
    pub const HELLO: Duration = Duration::from_secs(20);
    pub const INVENTORY: Duration = Duration::from_secs(30);
}

pub struct Reach {
    label: String,
    token: Option<String>,
    want_inventory: bool,
    state: State,
    deadline: Option<Instant>,
    /// The host name the agent reported.
    pub host: String,
    /// What the agent says it is (`fabcheck 0.4.0`), and whether it answers `rails`.
    pub agent: String,
    pub rails: bool,
    /// Whether the agent runs collective members (fabcheck 0.5 and later).
    pub collective: bool,
    /// Whether it runs a member's hops over several paths (`collective --paths`).
    pub member_paths: bool,
    pub inventory: Option<Inventory>,
    pub failure: Option<Loss>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    NotStarted,
    Hello,
    Inventory,
    Done,
}

impl Reach {
    pub fn new(label: &str, token: Option<String>, want_inventory: bool) -> Reach {
        Reach {
            label: label.into(),
            token,
            want_inventory,
            state: State::NotStarted,
            deadline: None,
            host: String::new(),
            agent: String::new(),
            rails: false,
            collective: false,
            member_paths: false,
            inventory: None,
            failure: None,
        }
    }

    fn fail(&mut self, failure: Loss, act: &mut Actions) {
        self.failure = Some(failure);
        self.state = State::Done;
        self.deadline = None;
        act.discard.push(0);
    }

    fn step(&mut self, state: State, limit: Duration, now: Instant) {
        self.state = state;
        self.deadline = Some(crate::sys::time::deadline(now, limit));
    }
}

impl Conversation for Reach {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        act.send(0, Request::Hello { token: self.token.clone() });
        self.step(State::Hello, deadline::HELLO, now);
    }

    fn on_reply(&mut self, _side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        match (self.state, reply) {
            (State::Done, _) => {}
            (State::Hello | State::Inventory, Reply::Error { cause, remedy }) => {
                let step = if self.state == State::Hello { Step::Hello } else { Step::Inventory };
                self.fail(Loss::new(self.label.clone(), LossKind::Refused { step, cause, remedy }), act)
            }
            (State::Hello, Reply::Hello { host, agent, rails, collective, member_paths }) => {
                self.member_paths = member_paths;
                self.host = host;
                self.agent = agent;
                self.rails = rails;
                self.collective = collective;
                if self.want_inventory {
                    act.send(0, Request::Inventory);
                    self.step(State::Inventory, deadline::INVENTORY, now);
                } else {
                    self.state = State::Done;
                    self.deadline = None;
                }
            }
            (State::Inventory, Reply::Inventory { inventory }) => {
                self.inventory = Some(inventory);
                self.state = State::Done;
                self.deadline = None;
            }
            (_, other) => {
                let f = Loss::new(self.label.clone(), LossKind::Protocol(format!("unexpected reply {other:?}")));
                self.fail(f, act)
            }
        }
    }

    fn on_lost(&mut self, _side: usize, failure: Loss, _now: Instant, act: &mut Actions) {
        if self.state != State::Done {
            self.fail(failure, act);
        }
    }

    fn on_deadline(&mut self, _now: Instant, act: &mut Actions) {
        let (step, waited) = match self.state {
            State::Inventory => (Step::Inventory, deadline::INVENTORY),
            _ => (Step::Hello, deadline::HELLO),
        };
        self.fail(Loss::new(self.label.clone(), LossKind::Timeout { step, waited }), act);
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn is_done(&self) -> bool {
        self.state == State::Done
    }
}

/// The token an agent at `host` is given in its hello: only a `fabcheck serve` (tcp) checks
/// one. Agents started over ssh, srun or locally are reached through a channel that is already
/// authenticated, and the token must not travel to every host tested.
pub fn token_for(host: &HostSpec, token: &Option<String>) -> Option<String> {
    match host {
        HostSpec::Tcp { .. } => token.clone(),
        HostSpec::Local | HostSpec::Ssh { .. } => None,
    }
}

/// Reaches the agents on `links` (named `labels`, each given its own hello token), `window`
/// at a time; one finished `Reach` per link, in order. `Err` only on Ctrl-C.
pub fn reach_all(
    hub: &mut Hub,
    links: &[LinkId],
    labels: &[String],
    tokens: &[Option<String>],
    want_inventory: bool,
    window: usize,
) -> Result<Vec<Reach>, Loss> {
    let mut jobs: Vec<Job<Reach>> = links
        .iter()
        .zip(labels)
        .zip(tokens)
        .map(|((&link, label), token)| Job { links: vec![link], conversation: Reach::new(label, token.clone(), want_inventory) })
        .collect();
    drive(hub, &mut jobs, window)?;
    Ok(jobs.into_iter().map(|j| j.conversation).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_then_inventory() {
        let now = Instant::now();
        let mut r = Reach::new("n1", Some("t".into()), true);
        let mut act = Actions::default();
        r.start(now, &mut act);
        assert!(matches!(&act.sends[..], [(0, Request::Hello { token: Some(t) })] if t == "t"));
        act.sends.clear();
        r.on_reply(
            0,
            Reply::Hello { agent: "fabcheck".into(), host: "node1".into(), rails: false, collective: false, member_paths: false },
            now,
            &mut act,
        );
        assert!(matches!(&act.sends[..], [(0, Request::Inventory)]));
        assert!(!r.is_done());
        r.on_reply(0, Reply::Inventory { inventory: crate::probe::Inventory::default() }, now, &mut act);
        assert!(r.is_done() && r.failure.is_none() && r.inventory.is_some());
        assert_eq!(r.host, "node1");
    }

    #[test]
    fn refused_token_silence_and_loss_are_failures() {
        let now = Instant::now();
        let mut act = Actions::default();
        let mut r = Reach::new("n1", None, false);
        r.start(now, &mut act);
        r.on_reply(0, Reply::Error { cause: "the agent refused the token".into(), remedy: "pass it".into() }, now, &mut act);
        let refused = LossKind::Refused { step: Step::Hello, cause: "the agent refused the token".into(), remedy: "pass it".into() };
        assert!(r.is_done() && r.failure == Some(Loss::new("n1", refused.clone())));
        assert_eq!(act.discard, [0]);
        // The agent hangs up after refusing: the first cause stands.
        r.on_lost(0, Loss::new("n1", LossKind::Gone { why: "the connection closed".into(), tail: String::new() }), now, &mut act);
        assert_eq!(r.failure.as_ref().unwrap().kind, refused);

        let mut r = Reach::new("n2", None, false);
        r.start(now, &mut act);
        assert!(r.deadline().unwrap() > now);
        r.on_deadline(now + deadline::HELLO, &mut act);
        assert_eq!(r.failure.as_ref().unwrap().kind, LossKind::Timeout { step: Step::Hello, waited: deadline::HELLO });

        let mut r = Reach::new("n3", None, false);
        r.start(now, &mut act);
        let unreachable = Loss::new("n3", LossKind::Unreachable { port: 18515, detail: "refused".into() });
        r.on_lost(0, unreachable.clone(), now, &mut act);
        assert_eq!(r.failure, Some(unreachable));
    }
}

#[cfg(test)]
mod token_tests {
    use super::*;

    #[test]
    fn only_tcp_agents_get_the_token() {
        let t = Some("secret".to_string());
        assert_eq!(token_for(&HostSpec::Tcp { host: "n1".into(), port: 18515 }, &t), t);
        assert_eq!(token_for(&HostSpec::Ssh { user: None, host: "n1".into() }, &t), None);
        assert_eq!(token_for(&HostSpec::Local, &t), None);
    }
}
