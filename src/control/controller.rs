//! Drives a set of agents: sends requests, waits for replies under deadlines, and turns
//! silence, a dead agent, an agent's error or Ctrl-C into a `Failure` naming the host.

use super::endpoint::EndpointSpec;
use super::link::{AgentLink, Event, LaunchOptions};
use super::protocol::{Reply, Request};
use crate::error::Failure;
use crossbeam::channel::{RecvTimeoutError, Select};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub struct Controller {
    links: Vec<AgentLink>,
    pending: Vec<VecDeque<Reply>>,
    hosts: Vec<String>,
}

/// Deadlines for each step; a step that misses its deadline ends the run (exit 2).
pub mod deadline {
    use std::time::Duration;
    pub const HELLO: Duration = Duration::from_secs(20);
    pub const PREPARE: Duration = Duration::from_secs(30);
    pub const CONNECT: Duration = Duration::from_secs(15);
    pub const START: Duration = Duration::from_secs(15);
    pub const STOP: Duration = Duration::from_secs(15);
}

impl Controller {
    /// Starts or reaches every agent and says hello; fails on the first that does not answer.
    pub fn connect(specs: &[EndpointSpec], opts: &LaunchOptions) -> Result<Controller, Failure> {
        let links = specs.iter().map(|spec| AgentLink::open(spec, opts)).collect::<Result<Vec<_>, _>>()?;
        let mut c = Controller::from_links(links, None);
        for i in 0..c.links.len() {
            c.send(i, &Request::Hello { token: opts.token.clone() })?;
        }
        for i in 0..c.links.len() {
            match c.expect(i, deadline::HELLO, "saying hello")? {
                Reply::Hello { host, .. } => c.hosts[i] = host,
                other => return Err(c.unexpected(i, &other)),
            }
        }
        Ok(c)
    }

    /// Drives links that already said hello (`hosts` as they reported), e.g. one pair of a
    /// mesh round.
    pub fn from_links(links: Vec<AgentLink>, hosts: Option<Vec<String>>) -> Controller {
        let n = links.len();
        Controller { links, pending: vec![VecDeque::new(); n], hosts: hosts.unwrap_or_else(|| vec![String::new(); n]) }
    }

    /// Gives the links back (with the host names they reported), for another controller.
    pub fn into_links(self) -> Vec<(AgentLink, String)> {
        self.links.into_iter().zip(self.hosts).collect()
    }

    pub fn label(&self, i: usize) -> &str {
        &self.links[i].label
    }

    /// The host name the agent reported.
    pub fn host(&self, i: usize) -> &str {
        &self.hosts[i]
    }

    pub fn send(&mut self, i: usize, request: &Request) -> Result<(), Failure> {
        self.links[i].send(request)
    }

    /// Waits for agent `i`'s next reply. Another agent's error or death also ends the wait:
    /// when one side of a pair fails, the other side's wait must not outlive it.
    pub fn expect(&mut self, i: usize, limit: Duration, what: &str) -> Result<Reply, Failure> {
        if let Some(r) = self.pending[i].pop_front() {
            return self.check(i, r);
        }
        let deadline = Instant::now() + limit;
        loop {
            if crate::verbs::os::interrupted() {
                return Err(Failure::new("interrupted", "the agents were told to stop; nothing is left running"));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Failure::new(
                    format!("{}: no answer within {} s while {what}", self.links[i].label, limit.as_secs()),
                    "the agent or its host is stuck or unreachable; check it (and the fabric) and rerun",
                ));
            }
            let mut select = Select::new();
            for link in &self.links {
                select.recv(&link.events);
            }
            let ready = match select.ready_timeout((deadline - now).min(Duration::from_millis(100))) {
                Ok(j) => j,
                Err(_) => continue,
            };
            match self.links[ready].events.recv_timeout(Duration::ZERO) {
                Ok(Event::Reply(r)) if ready == i => return self.check(i, r),
                Ok(Event::Reply(Reply::Error { cause, remedy })) => {
                    return Err(Failure::new(format!("{}: {cause}", self.links[ready].label), remedy))
                }
                Ok(Event::Reply(r)) => self.pending[ready].push_back(r),
                Ok(Event::Closed(why)) if self.links[ready].is_ssh() => {
                    let f = self.links[ready].exited(&why);
                    return Err(Failure::new(format!("{} (agent lost while {what})", f.cause), f.remedy));
                }
                Ok(Event::Closed(why)) => {
                    return Err(Failure::new(
                        format!("{}: agent lost while {what}: {why}", self.links[ready].label),
                        "the agent died or its host went away; the other agents were stopped. Check that host and rerun",
                    ))
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Failure::new(format!("{}: agent channel closed while {what}", self.links[ready].label), "rerun"))
                }
            }
        }
    }

    fn check(&self, i: usize, reply: Reply) -> Result<Reply, Failure> {
        match reply {
            Reply::Error { cause, remedy } => Err(Failure::new(format!("{}: {cause}", self.links[i].label), remedy)),
            other => Ok(other),
        }
    }

    pub fn unexpected(&self, i: usize, reply: &Reply) -> Failure {
        Failure::new(format!("{}: unexpected reply {reply:?}", self.links[i].label), "use the same fabcheck version on every node")
    }

    /// Says goodbye to every agent and waits for them to go.
    pub fn close(mut self) {
        for link in &mut self.links {
            link.close();
        }
    }
}
