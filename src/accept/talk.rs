//! One node's `check` through its agent: hello (with the token), then `check`, each step with a
//! deadline. A conversation for [`drive`](crate::control::drive), so a thousand nodes are asked
//! from one thread, `window` at a time. Pure: replies in, requests out.

use crate::control::drive::{Actions, Conversation};
use crate::control::protocol::{Reply, Request};
use crate::control::reach::deadline;
use crate::outcome::loss::{Loss, LossKind, Step};
use crate::outcome::Report;
use crate::probe::facts::Fact;
use std::time::{Duration, Instant};

pub struct CheckTalk {
    label: String,
    token: Option<String>,
    /// How long the node's read and judgement may take.
    check_limit: Duration,
    state: State,
    deadline: Option<Instant>,
    /// The host the agent says it is, and what it is (`fabcheck 0.5.0`).
    pub host: String,
    pub agent: String,
    pub answer: Option<(Report, Vec<Fact>)>,
    pub failure: Option<Loss>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Hello,
    Check,
    Done,
}

impl CheckTalk {
    pub fn new(label: &str, token: Option<String>, check_limit: Duration) -> CheckTalk {
        CheckTalk {
            label: label.into(),
            token,
            check_limit,
            state: State::Hello,
            deadline: None,
            host: String::new(),
            agent: String::new(),
            answer: None,
            failure: None,
        }
    }

    fn fail(&mut self, kind: LossKind, act: &mut Actions) {
        self.failure = Some(Loss::new(self.label.clone(), kind));
        self.state = State::Done;
        self.deadline = None;
        act.discard.push(0);
    }

    /// Why an agent could not answer `check`: its words, and its version (an agent older than
    /// 0.5 does not know the request and refuses it as a message it cannot read).
    fn refused(&self, cause: String, remedy: String) -> LossKind {
        let agent = if self.agent.is_empty() { "an agent of unknown version".to_string() } else { self.agent.clone() };
        LossKind::Refused {
            step: Step::Test,
            cause: format!("the agent ({agent}) did not answer check: {cause}"),
            remedy: format!("{remedy}; `check` needs fabcheck 0.5 or later on the node: install this fabcheck there"),
        }
    }
}

impl Conversation for CheckTalk {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        act.send(0, Request::Hello { token: self.token.clone() });
        self.deadline = Some(crate::sys::time::deadline(now, deadline::HELLO));
    }

    fn on_reply(&mut self, _side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        match (self.state, reply) {
            (State::Done, _) => {}
            (State::Hello, Reply::Hello { host, agent, .. }) => {
                self.host = host;
                self.agent = agent;
                act.send(0, Request::Check);
                self.state = State::Check;
                self.deadline = Some(crate::sys::time::deadline(now, self.check_limit));
            }
            (State::Hello, Reply::Error { cause, remedy }) => self.fail(LossKind::Refused { step: Step::Hello, cause, remedy }, act),
            (State::Check, Reply::Error { cause, remedy }) => {
                let kind = self.refused(cause, remedy);
                self.fail(kind, act)
            }
            (State::Check, Reply::Check { report, facts }) => {
                self.answer = Some((report, facts));
                self.state = State::Done;
                self.deadline = None;
            }
            (_, other) => {
                // Its type, never its contents (they may be large).
                let name = serde_json::to_value(&other).ok().and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string));
                self.fail(LossKind::Protocol(format!("unexpected reply '{}'", name.unwrap_or_default())), act)
            }
        }
    }

    fn on_lost(&mut self, _side: usize, loss: Loss, _now: Instant, act: &mut Actions) {
        if self.state != State::Done {
            // An agent that hung up on `check` (an older one ends the session on a request it
            // cannot read) is named with its version.
            let kind = match (self.state, loss.kind) {
                (State::Check, LossKind::Gone { why, .. }) => self.refused(format!("the agent hung up ({why})"), "look at the agent's log".into()),
                (_, kind) => kind,
            };
            self.fail(kind, act);
        }
    }

    fn on_deadline(&mut self, _now: Instant, act: &mut Actions) {
        let (step, waited) = match self.state {
            State::Check => (Step::Test, self.check_limit),
            _ => (Step::Hello, deadline::HELLO),
        };
        self.fail(LossKind::Timeout { step, waited }, act);
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn is_done(&self) -> bool {
        self.state == State::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;

    fn report() -> Report {
        Report { verdict: Verdict::Pass, checks: Vec::new(), findings: Vec::new() }
    }

    #[test]
    fn hello_then_check() {
        let now = Instant::now();
        let mut t = CheckTalk::new("n1", Some("t".into()), Duration::from_secs(60));
        let mut act = Actions::default();
        t.start(now, &mut act);
        assert!(matches!(&act.sends[..], [(0, Request::Hello { .. })]));
        act.sends.clear();
        t.on_reply(
            0,
            Reply::Hello { agent: "fabcheck 0.5.0".into(), host: "node1".into(), rails: true, collective: false, member_paths: false },
            now,
            &mut act,
        );
        assert!(matches!(&act.sends[..], [(0, Request::Check)]));
        t.on_reply(0, Reply::Check { report: report(), facts: Vec::new() }, now, &mut act);
        assert!(t.is_done() && t.failure.is_none() && t.answer.is_some());
        assert_eq!(t.host, "node1");
    }

    #[test]
    fn an_old_agent_is_named_with_its_version_and_silence_is_bounded() {
        let now = Instant::now();
        let mut act = Actions::default();
        let mut t = CheckTalk::new("n1", None, Duration::from_secs(60));
        t.start(now, &mut act);
        t.on_reply(
            0,
            Reply::Hello { agent: "fabcheck 0.4.0".into(), host: "n1".into(), rails: true, collective: false, member_paths: false },
            now,
            &mut act,
        );
        let cause = "agent refused a message: malformed message: unknown variant `check`".to_string();
        t.on_reply(0, Reply::Error { cause, remedy: "use the same fabcheck version on every node".into() }, now, &mut act);
        let Some(LossKind::Refused { cause, remedy, .. }) = t.failure.map(|f| f.kind) else { panic!("refused") };
        assert!(cause.contains("fabcheck 0.4.0") && remedy.contains("0.5"), "{cause} / {remedy}");

        let mut t = CheckTalk::new("n2", None, Duration::from_secs(60));
        t.start(now, &mut act);
        t.on_reply(
            0,
            Reply::Hello { agent: "fabcheck 0.5.0".into(), host: "n2".into(), rails: true, collective: false, member_paths: false },
            now,
            &mut act,
        );
        assert!(t.deadline().is_some_and(|d| d > now));
        t.on_deadline(now + Duration::from_secs(60), &mut act);
        assert_eq!(t.failure.unwrap().kind, LossKind::Timeout { step: Step::Test, waited: Duration::from_secs(60) });
    }
}
