//! The controller's reactor: every agent channel, polled from one thread.
//!
//! A mesh of a thousand nodes holds a thousand channels (ssh children or sockets) and no
//! thread per node. Sending only queues a request; all the work is done in [`Hub::wait`]
//! (as quinn-proto's connection does it in its polls): it starts the agents that have
//! requests waiting, connects sockets without blocking, writes what is queued, reads replies
//! as they arrive and hands them out as events. Conversations (see [`drive`](super::drive))
//! decide what to send; the hub only moves bytes and explains channels that end.

use super::endpoint::HostSpec;
use super::figures;
use super::lines::LineBuffer;
use super::link::{self, Channel, LaunchOptions, Launcher, ReadOutcome};
use super::protocol::{self, Reply, Request};
use super::ssh_share::{Logins, Open};
use super::ssh_sockets::SocketDir;
use crate::outcome::loss::{Loss, LossKind};
use crate::sys::child::Leaving;
use crate::sys::io::{self, Interest, Readiness};
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

pub use super::link_id::LinkId;

#[derive(Debug)]
pub enum HubEvent {
    /// A reply, boxed: an endpoint is large, a loss small.
    Reply(LinkId, Box<Reply>),
    /// The channel ended or never came up, and why. The link is idle again: the next
    /// request starts or reaches that agent anew.
    Lost(LinkId, Loss),
}

/// How long an ended child may take to report its exit status (it explains the loss).
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// How long an agent told goodbye may take to exit before it is killed.
const BYE_GRACE: Duration = Duration::from_secs(3);
/// Longest stderr line kept to explain a loss.
const TAIL: usize = 300;

enum State {
    Idle,
    /// Asked to carry a request while idle: its agent is started or reached at the next
    /// [`Hub::wait`], its requests kept until then.
    Asked,
    Connecting {
        stream: TcpStream,
        rest: Vec<SocketAddr>,
        port: u16,
        deadline: Instant,
    },
    Open(Channel),
    /// An ssh session waiting for its host's first login to come up, to share it
    /// ([`ssh_share`](super::ssh_share)); its requests are kept until it opens.
    Waiting,
    /// End of stream seen; waiting briefly for the child's exit status.
    Ending {
        channel: Channel,
        why: String,
        until: Instant,
    },
}

struct Link {
    host: HostSpec,
    label: String,
    state: State,
    inbox: LineBuffer,
    outbox: Vec<u8>,
    stderr: LineBuffer,
    stderr_tail: String,
    /// A `hello` the hub itself sent on (re)connecting to a `fabcheck serve`, whose reply is
    /// not a conversation's.
    greeting: bool,
    /// It logged in as its host's ssh master and has not answered yet.
    logging_in: bool,
    /// Its ssh child is (or was) its host's shared login: other sessions may still use it, so
    /// it is never killed before they end (only by `close_all`).
    master: bool,
}

impl Link {
    /// Shows each whole stderr line, attributed, and keeps the last to explain a loss.
    fn show_stderr_lines(&mut self) {
        loop {
            match self.stderr.pop(4096) {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => {
                    // The agent's (or ssh's) own words, attributed. Never a panic when stderr is
                    // full or closed (`eprintln!` would be).
                    // Sanitised first (issue #58): ssh's, srun's or a peer's words may hold an
                    // escape sequence (a screen clear, an OSC 52 clipboard write) or a line break.
                    let line = crate::sanitise::one_line(&line);
                    let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{}: {line}\n", self.label));
                    self.stderr_tail = line.chars().take(TAIL).collect();
                }
                Ok(None) => return,
                Err(_) => {
                    self.stderr = LineBuffer::default();
                    return;
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Slot {
    Connect,
    Read,
    Write,
    Stderr,
}

pub struct Hub {
    links: Vec<Link>,
    opts: LaunchOptions,
    ready: VecDeque<HubEvent>,
    /// Children told to go, each with the time it is killed at (`None`: a shared ssh login,
    /// which exits when its last session does, or is killed by `close_all`).
    reaping: Vec<Leaving>,
    logins: Logins,
    /// This run's ssh control sockets; made at the first ssh session (`None` inside: there is
    /// no private place for them, said once, and every session logs in on its own).
    sockets: Option<Option<SocketDir>>,
    /// What the last wait found, slot by slot.
    readiness: Vec<Readiness>,
    slots: Vec<(LinkId, Slot)>,
    buf: Vec<u8>,
}

impl Hub {
    pub fn new(opts: LaunchOptions) -> Hub {
        Hub {
            links: Vec::new(),
            opts,
            ready: VecDeque::new(),
            reaping: Vec::new(),
            logins: Logins::default(),
            sockets: None,
            readiness: Vec::new(),
            slots: Vec::new(),
            buf: vec![0; 64 << 10],
        }
    }

    /// Registers an agent; nothing starts until a request is sent to it and the hub next waits.
    pub fn add(&mut self, host: &HostSpec, label: impl Into<String>) -> LinkId {
        self.links.push(Link {
            host: host.clone(),
            label: label.into(),
            state: State::Idle,
            inbox: LineBuffer::default(),
            outbox: Vec::new(),
            stderr: LineBuffer::default(),
            stderr_tail: String::new(),
            greeting: false,
            logging_in: false,
            master: false,
        });
        self.links.len() - 1
    }

    pub fn label(&self, id: LinkId) -> &str {
        &self.links[id].label
    }

    /// Queues a request; nothing is started, written or read until the next [`Hub::wait`]
    /// (an idle link's agent is started or reached there first). Losses arrive as a `Lost`
    /// event, so callers handle every loss in one place.
    pub fn send(&mut self, id: LinkId, request: &Request) {
        let link = &mut self.links[id];
        match link.state {
            State::Idle => {
                link.inbox = LineBuffer::default();
                link.outbox.clear();
                link.stderr = LineBuffer::default();
                link.stderr_tail.clear();
                link.greeting = false;
                link.state = State::Asked;
            }
            State::Ending { .. } => return,
            State::Asked | State::Open(_) | State::Connecting { .. } | State::Waiting => {}
        }
        link.outbox.extend_from_slice(protocol::encode(request).as_bytes());
    }

    /// Starts or reaches the agent of a link asked to carry requests (they wait in its outbox).
    fn open(&mut self, id: LinkId) {
        let link = &mut self.links[id];
        match link.host.clone() {
            HostSpec::Tcp { host, port } => match link::resolve(&host, port, &link.label) {
                Ok(addrs) => {
                    // A serve talks only after a hello, and ends sessions idle for its
                    // --idle-timeout: a link reopened for any request says hello first, so a
                    // conversation never depends on whether the old connection survived.
                    let hello = protocol::encode(&Request::Hello { token: self.opts.token.clone() });
                    link.outbox.splice(0..0, hello.bytes());
                    link.greeting = true;
                    self.connect_next(id, addrs, port, String::new())
                }
                Err(f) => {
                    link.state = State::Idle;
                    link.outbox.clear();
                    self.ready.push_back(HubEvent::Lost(id, f));
                }
            },
            HostSpec::Ssh { user, host } if self.opts.launcher == Launcher::Ssh => {
                let destination = match user {
                    Some(u) => format!("{u}@{host}"),
                    None => host,
                };
                let sockets = self.sockets.get_or_insert_with(SocketDir::for_this_run);
                let how = if sockets.is_some() { self.logins.open(&destination, id) } else { Open::Alone };
                if how == Open::Wait {
                    link.state = State::Waiting;
                } else {
                    self.spawn(id, how);
                }
            }
            HostSpec::Local | HostSpec::Ssh { .. } => self.spawn(id, Open::Alone),
        }
    }

    /// Starts the child of a local, srun or ssh link (opened as `how` over ssh).
    fn spawn(&mut self, id: LinkId, how: Open) {
        let options = match self.sockets.as_ref().and_then(Option::as_ref) {
            Some(sockets) if matches!(self.links[id].host, HostSpec::Ssh { .. }) && self.opts.launcher == Launcher::Ssh => sockets.options(how),
            _ => Vec::new(),
        };
        let link = &mut self.links[id];
        match link::spawn(&link.host, &link.label, &self.opts, &options) {
            Ok(channel) => {
                link.state = State::Open(channel);
                link.logging_in = how == Open::Master;
                link.master |= how == Open::Master;
            }
            Err(f) => {
                link.state = State::Idle;
                link.outbox.clear();
                self.ready.push_back(HubEvent::Lost(id, f));
                self.released(id);
            }
        }
    }

    /// Link `id` answered for the first time: the sessions waiting for its login open over it
    /// (at the next wait).
    fn answered(&mut self, id: LinkId) {
        if std::mem::take(&mut self.links[id].logging_in) {
            let waiting = self.logins.answered(id);
            self.stop_waiting(waiting);
        }
    }

    /// Link `id` is closed or lost: a login that never came up lets its waiting sessions log
    /// in on their own (at the next wait); a shared session makes room.
    fn released(&mut self, id: LinkId) {
        self.links[id].logging_in = false;
        if matches!(self.links[id].host, HostSpec::Ssh { .. }) {
            let waiting = self.logins.closed(id);
            self.stop_waiting(waiting);
        }
    }

    /// Sessions that waited for a login are opened at the next wait, as [`Logins`] then says.
    fn stop_waiting(&mut self, ids: Vec<LinkId>) {
        for id in ids {
            if matches!(self.links[id].state, State::Waiting) {
                self.links[id].state = State::Asked;
            }
        }
    }

    /// Tries the next address of a `tcp://` agent, or reports that none answered.
    fn connect_next(&mut self, id: LinkId, mut rest: Vec<SocketAddr>, port: u16, mut last_error: String) {
        while !rest.is_empty() {
            let addr = rest.remove(0);
            match io::connect_start(&addr) {
                Ok(stream) => {
                    let deadline = crate::sys::time::deadline(Instant::now(), self.opts.connect_timeout);
                    self.links[id].state = State::Connecting { stream, rest, port, deadline };
                    return;
                }
                Err(e) => last_error = e.to_string(),
            }
        }
        let link = &mut self.links[id];
        link.state = State::Idle;
        link.outbox.clear();
        self.ready.push_back(HubEvent::Lost(id, link::unreachable(&link.label, port, &last_error)));
    }

    fn flush(&mut self, id: LinkId) {
        let link = &mut self.links[id];
        let State::Open(channel) = &mut link.state else { return };
        while !link.outbox.is_empty() {
            match channel.write(&link.outbox) {
                Ok(0) => return,
                Ok(n) => {
                    link.outbox.drain(..n);
                }
                Err(e) => {
                    self.begin_end(id, format!("cannot send to the agent: {e}"));
                    return;
                }
            }
        }
    }

    /// Waits up to `timeout` for replies and losses, appending them to `out`.
    pub fn wait(&mut self, timeout: Duration, out: &mut Vec<HubEvent>) {
        for id in 0..self.links.len() {
            if matches!(self.links[id].state, State::Asked) {
                self.open(id);
            }
        }
        let now = Instant::now();
        let mut timeout = if self.ready.is_empty() { timeout } else { Duration::ZERO };
        self.slots.clear();
        let mut fds = Vec::with_capacity(self.links.len() * 2);
        for (id, link) in self.links.iter().enumerate() {
            match &link.state {
                State::Idle | State::Asked | State::Waiting => {}
                State::Connecting { stream, deadline, .. } => {
                    timeout = timeout.min(deadline.saturating_duration_since(now));
                    fds.push((stream.as_fd(), Interest::Write));
                    self.slots.push((id, Slot::Connect));
                }
                State::Open(channel) | State::Ending { channel, .. } => {
                    if let State::Ending { until, .. } = &link.state {
                        timeout = timeout.min(until.saturating_duration_since(now).max(Duration::from_millis(5)));
                    } else {
                        fds.push((channel.read_fd(), Interest::Read));
                        self.slots.push((id, Slot::Read));
                        if let (false, Some(fd)) = (link.outbox.is_empty(), channel.write_fd()) {
                            fds.push((fd, Interest::Write));
                            self.slots.push((id, Slot::Write));
                        }
                    }
                    if let Some(fd) = channel.stderr_fd() {
                        fds.push((fd, Interest::Read));
                        self.slots.push((id, Slot::Stderr));
                    }
                }
            }
        }
        if !self.reaping.is_empty() {
            timeout = timeout.min(Duration::from_millis(20));
        }
        if let Err(e) = io::wait(&fds, timeout, &mut self.readiness) {
            tracing::warn!(error = %e, "poll failed");
            self.readiness.clear();
            self.readiness.resize(fds.len(), Readiness::default());
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(fds);
        for k in 0..self.slots.len() {
            let (id, slot) = self.slots[k];
            let ready = self.readiness[k];
            match slot {
                Slot::Connect if ready.writable => self.connected(id),
                Slot::Read if ready.readable => self.read(id),
                Slot::Write if ready.writable => self.flush(id),
                Slot::Stderr if ready.readable => self.read_stderr(id),
                _ => {}
            }
        }
        self.expire(Instant::now());
        self.reap(false);
        out.extend(self.ready.drain(..));
    }

    fn connected(&mut self, id: LinkId) {
        let State::Connecting { stream, .. } = &self.links[id].state else { return };
        match io::connect_finished(stream) {
            Ok(()) => {
                let _ = stream.set_nodelay(true);
                let State::Connecting { stream, .. } = std::mem::replace(&mut self.links[id].state, State::Idle) else { return };
                self.links[id].state = State::Open(Channel::Tcp(stream));
                self.flush(id);
            }
            Err(e) => {
                let State::Connecting { rest, port, .. } = std::mem::replace(&mut self.links[id].state, State::Idle) else { return };
                self.connect_next(id, rest, port, e.to_string());
            }
        }
    }

    fn read(&mut self, id: LinkId) {
        // Bounded per wake-up, so one chatty agent cannot starve the others.
        for _ in 0..16 {
            let link = &mut self.links[id];
            let State::Open(channel) = &mut link.state else { return };
            match channel.read(&mut self.buf) {
                Ok(ReadOutcome::Data(n)) => {
                    link.inbox.push(&self.buf[..n]);
                    if link.logging_in {
                        self.answered(id);
                    }
                    loop {
                        match self.links[id].inbox.pop(protocol::MAX_LINE) {
                            Ok(Some(line)) => match protocol::decode_from_peer::<Reply>(&line) {
                                Ok(Reply::Hello { .. }) if self.links[id].greeting => self.links[id].greeting = false,
                                Ok(reply) => match figures::check(&reply) {
                                    Ok(()) => self.ready.push_back(HubEvent::Reply(id, Box::new(reply))),
                                    Err(figure) => return self.refuse(id, &format!("it sent a bad message: it reported {figure}")),
                                },
                                Err(e) => return self.refuse(id, &format!("it sent a bad message: {e}")),
                            },
                            Ok(None) => break,
                            Err(e) => return self.refuse(id, &format!("it sent a bad message: {e}")),
                        }
                    }
                }
                Ok(ReadOutcome::WouldBlock) => return,
                Ok(ReadOutcome::End) => {
                    let why = if link.inbox.pending() > 0 {
                        "the channel closed in the middle of a message"
                    } else {
                        "the agent exited or the connection closed"
                    };
                    return self.begin_end(id, why.into());
                }
                Err(e) => return self.begin_end(id, format!("the connection failed: {e}")),
            }
        }
    }

    fn read_stderr(&mut self, id: LinkId) {
        for _ in 0..16 {
            let link = &mut self.links[id];
            let (State::Open(channel) | State::Ending { channel, .. }) = &mut link.state else { return };
            match channel.read_stderr(&mut self.buf) {
                Ok(ReadOutcome::Data(n)) => {
                    link.stderr.push(&self.buf[..n]);
                    link.show_stderr_lines();
                }
                Ok(ReadOutcome::WouldBlock) => return,
                Ok(ReadOutcome::End) | Err(_) => return channel.close_stderr(),
            }
        }
    }

    /// The channel broke or ended: a child gets a moment to report its exit status.
    fn begin_end(&mut self, id: LinkId, why: String) {
        let link = &mut self.links[id];
        match std::mem::replace(&mut link.state, State::Idle) {
            State::Open(channel @ Channel::Child { .. }) => {
                link.state = State::Ending { channel, why, until: Instant::now() + EXIT_GRACE };
            }
            State::Open(channel) | State::Ending { channel, .. } => {
                let failure = explain(link, self.opts.launcher, None, &why);
                drop(channel.into_child());
                self.ready.push_back(HubEvent::Lost(id, failure));
                self.released(id);
            }
            State::Connecting { .. } | State::Idle | State::Asked | State::Waiting => {}
        }
    }

    /// An agent that broke the protocol is not trusted further: killed, reported.
    fn refuse(&mut self, id: LinkId, why: &str) {
        let failure = Loss::new(self.links[id].label.clone(), LossKind::Protocol(why.to_string()));
        self.discard(id);
        self.ready.push_back(HubEvent::Lost(id, failure));
    }

    /// Connect deadlines and ended children whose status is in (or whose grace ran out).
    fn expire(&mut self, now: Instant) {
        for id in 0..self.links.len() {
            match &mut self.links[id].state {
                State::Connecting { deadline, .. } if *deadline <= now => {
                    let State::Connecting { rest, port, .. } = std::mem::replace(&mut self.links[id].state, State::Idle) else { continue };
                    let secs = self.opts.connect_timeout.as_secs().max(1);
                    self.connect_next(id, rest, port, format!("no answer within {secs} s (host down or a firewall drops the connection)"));
                }
                State::Ending { channel, until, .. } => {
                    let status = channel.child().and_then(|c| c.try_wait().ok().flatten());
                    if status.is_none() && *until > now {
                        continue;
                    }
                    // Whatever the child said last explains the loss best.
                    self.read_stderr(id);
                    let State::Ending { channel, why, .. } = std::mem::replace(&mut self.links[id].state, State::Idle) else { continue };
                    let failure = explain(&self.links[id], self.opts.launcher, status, &why);
                    if let Some(child) = channel.into_child() {
                        let kill_at = (!self.links[id].master).then_some(now + BYE_GRACE);
                        self.reaping.push(Leaving::new(child, kill_at));
                    }
                    self.ready.push_back(HubEvent::Lost(id, failure));
                    self.released(id);
                }
                _ => {}
            }
        }
    }

    /// Takes a link out of service (it is out of step, or its pair could not run): the agent
    /// is told goodbye and its channel closed, so it stops whatever it runs; a child that does
    /// not exit within a few seconds is killed. The next request starts it afresh.
    pub fn discard(&mut self, id: LinkId) {
        self.say_bye(id);
        let link = &mut self.links[id];
        link.outbox.clear();
        let channel = match std::mem::replace(&mut link.state, State::Idle) {
            State::Open(c) | State::Ending { channel: c, .. } => c,
            // A session that waited for its host's login (and one freed from that wait, not yet
            // opened) gives its place in the login back.
            State::Waiting | State::Asked => return self.released(id),
            State::Connecting { .. } | State::Idle => return,
        };
        let mut channel = channel;
        channel.close_write();
        if let Some(child) = channel.into_child() {
            let kill_at = (!link.master).then_some(Instant::now() + BYE_GRACE);
            self.reaping.push(Leaving::new(child, kill_at));
        }
        self.released(id);
    }

    fn say_bye(&mut self, id: LinkId) {
        if !self.links[id].outbox.is_empty() {
            // Mid-request: a goodbye now would corrupt that line; the close alone stops it.
            return;
        }
        if let State::Open(channel) = &mut self.links[id].state {
            // Best effort: a full pipe or socket only means the agent learns from the close.
            let _ = channel.write(protocol::encode(&Request::Bye).as_bytes());
        }
    }

    /// Reaps children told to go; `all` waits (to their grace, then kills) until none is left.
    fn reap(&mut self, all: bool) {
        loop {
            let now = Instant::now();
            self.reaping.retain_mut(|leaving| leaving.poll(now));
            if !all || self.reaping.is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Says goodbye to every agent and makes sure nothing is left running.
    pub fn close_all(&mut self) {
        for id in 0..self.links.len() {
            self.discard(id);
        }
        // Shared logins end with their last session; none outlives the run.
        let last = Instant::now() + BYE_GRACE;
        for leaving in &mut self.reaping {
            leaving.term_at.get_or_insert(last);
        }
        self.ready.clear();
        self.reap(true);
        // Every child is gone, masters too: a link used again logs in afresh, as in a new hub
        // (a new private socket folder; the old one, with any socket a killed master left, goes).
        self.logins = Logins::default();
        self.sockets = None;
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.close_all();
    }
}

/// Why a channel ended: the exit status when there is one (its words, pointing at ssh, srun or
/// the local agent, are chosen in `report::loss`), with the last line the agent said.
fn explain(link: &Link, launcher: Launcher, status: Option<ExitStatus>, why: &str) -> Loss {
    let tail = link.stderr_tail.clone();
    let kind = match status {
        Some(status) => LossKind::Exited { carrier: super::link::carrier(&link.host, launcher), status, tail },
        None => LossKind::Gone { why: why.to_string(), tail },
    };
    Loss::new(link.label.clone(), kind)
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
