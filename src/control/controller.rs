//! Drives a set of agents: sends requests, waits for replies under deadlines, and turns
//! silence, a dead agent, an agent's error or Ctrl-C into a `Failure` naming the host.

use super::endpoint::EndpointSpec;
use super::link::{AgentLink, Event, LaunchOptions};
use super::protocol::{Reply, Request};
use crate::error::Failure;
use crossbeam::channel::{self, Receiver, RecvTimeoutError};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub struct Controller {
    links: Vec<AgentLink>,
    events: Receiver<(usize, Event)>,
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
        let (tx, rx) = channel::unbounded();
        let mut links = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            links.push(AgentLink::open(i, spec, opts, tx.clone())?);
        }
        let n = links.len();
        let mut c = Controller { links, events: rx, pending: vec![VecDeque::new(); n], hosts: vec![String::new(); n] };
        for i in 0..n {
            c.send(i, &Request::Hello { token: opts.token.clone() })?;
        }
        for i in 0..n {
            match c.expect(i, deadline::HELLO, "saying hello")? {
                Reply::Hello { host, .. } => c.hosts[i] = host,
                other => return Err(c.unexpected(i, &other)),
            }
        }
        Ok(c)
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
            match self.events.recv_timeout((deadline - now).min(Duration::from_millis(100))) {
                Ok((j, Event::Reply(r))) if j == i => return self.check(i, r),
                Ok((j, Event::Reply(Reply::Error { cause, remedy }))) => {
                    return Err(Failure::new(format!("{}: {cause}", self.links[j].label), remedy))
                }
                Ok((j, Event::Reply(r))) => self.pending[j].push_back(r),
                Ok((j, Event::Closed(why))) => {
                    return Err(Failure::new(
                        format!("{}: agent lost while {what}: {why}", self.links[j].label),
                        "the agent died or its host went away; the other agents were stopped. Check that host and rerun",
                    ))
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(Failure::new("all agent channels closed", "rerun")),
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
