//! The controller's connection to one agent: a local child, an ssh child, or a TCP socket.
//! Replies arrive on one shared channel tagged with the agent's index, so one controller
//! thread can watch many agents (a dead one shows up at once as `Closed`).

use super::endpoint::{EndpointSpec, HostSpec};
use super::lines;
use super::protocol::{self, Reply, Request};
use crate::error::Failure;
use crossbeam::channel::{self, Receiver, Sender};
use std::io::{BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub enum Event {
    Reply(Reply),
    /// The channel ended: the agent exited, ssh dropped, or the socket closed.
    Closed(String),
}

/// How to start agents that are not already running.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// `fabcheck` on remote hosts (ssh); a path or a name on the remote PATH.
    pub remote_fabcheck: String,
    pub token: Option<String>,
    pub connect_timeout: Duration,
}

pub struct AgentLink {
    pub label: String,
    /// Started through ssh (failures then point at ssh, keys and the remote PATH).
    via_ssh: bool,
    /// Replies and the end of the channel, in order. A controller waits on several links'
    /// receivers at once, so a dead agent shows up at once as `Closed`.
    pub events: Receiver<Event>,
    writer: Option<Box<dyn Write + Send>>,
    child: Option<Child>,
    socket: Option<TcpStream>,
}

impl AgentLink {
    pub fn open(spec: &EndpointSpec, opts: &LaunchOptions) -> Result<AgentLink, Failure> {
        let label = spec.host.to_string();
        let (events_tx, events) = channel::unbounded();
        match &spec.host {
            HostSpec::Local | HostSpec::Ssh { .. } => {
                let mut command = match &spec.host {
                    HostSpec::Local => {
                        let exe = std::env::current_exe()
                            .map_err(|e| Failure::new(format!("cannot find this fabcheck binary: {e}"), "run fabcheck by its path"))?;
                        let mut c = Command::new(exe);
                        c.arg("agent");
                        c
                    }
                    HostSpec::Ssh { user, host } => {
                        if !valid_remote_path(&opts.remote_fabcheck) {
                            return Err(Failure::usage(format!("--remote-fabcheck '{}' is not a plain path", opts.remote_fabcheck)));
                        }
                        let dest = match user {
                            Some(u) => format!("{u}@{host}"),
                            None => host.clone(),
                        };
                        let mut c = Command::new("ssh");
                        c.args(["-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"])
                            .arg("-o")
                            .arg(format!("ConnectTimeout={}", opts.connect_timeout.as_secs().max(1)))
                            .arg("--")
                            .arg(dest)
                            .arg(&opts.remote_fabcheck)
                            .arg("agent");
                        c
                    }
                    HostSpec::Tcp { .. } => unreachable!(),
                };
                command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
                if let Ok(level) = std::env::var("RUST_LOG") {
                    command.env("RUST_LOG", level);
                }
                let mut child = command.spawn().map_err(|e| {
                    Failure::new(
                        format!("cannot start the agent for {label}: {e}"),
                        if matches!(spec.host, HostSpec::Ssh { .. }) { "install openssh-client" } else { "check the fabcheck binary" },
                    )
                })?;
                let stdout = child.stdout.take().ok_or_else(|| Failure::new("agent has no stdout", "internal error"))?;
                let stdin = child.stdin.take().ok_or_else(|| Failure::new("agent has no stdin", "internal error"))?;
                spawn_reader(BufReader::new(stdout), events_tx);
                let via_ssh = matches!(spec.host, HostSpec::Ssh { .. });
                Ok(AgentLink { label, via_ssh, events, writer: Some(Box::new(stdin)), child: Some(child), socket: None })
            }
            HostSpec::Tcp { host, port } => {
                let addrs: Vec<_> = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(|e| Failure::new(format!("cannot resolve {label}: {e}"), "check the host name"))?
                    .collect();
                let mut last = None;
                for addr in addrs {
                    match TcpStream::connect_timeout(&addr, opts.connect_timeout) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            let read = s.try_clone().map_err(|e| Failure::new(format!("socket: {e}"), "retry"))?;
                            spawn_reader(BufReader::new(read), events_tx);
                            let write = s.try_clone().map_err(|e| Failure::new(format!("socket: {e}"), "retry"))?;
                            return Ok(AgentLink { label, via_ssh: false, events, writer: Some(Box::new(write)), child: None, socket: Some(s) });
                        }
                        Err(e) => last = Some(e),
                    }
                }
                let err = last.map_or_else(|| "no address".to_string(), |e| e.to_string());
                Err(Failure::new(
                    format!("cannot reach {label}: {err}"),
                    format!("start `fabcheck serve --listen 0.0.0.0:{port} --token ...` there, and check firewalls"),
                ))
            }
        }
    }

    pub fn send(&mut self, request: &Request) -> Result<(), Failure> {
        let line = protocol::encode(request);
        let writer = self.writer.as_mut().ok_or_else(|| Failure::new(format!("{}: agent channel closed", self.label), "rerun"))?;
        match writer.write_all(line.as_bytes()).and_then(|_| writer.flush()) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.exited(&e.to_string())),
        }
    }

    pub fn is_ssh(&self) -> bool {
        self.via_ssh
    }

    /// Explains a channel that broke: the agent (or ssh) exited, with its status when known.
    pub fn exited(&mut self, detail: &str) -> Failure {
        std::thread::sleep(Duration::from_millis(50));
        let status = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
        match (self.via_ssh, status) {
            (true, Some(s)) => Failure::new(
                format!("{}: ssh or the remote agent exited ({s}) before answering", self.label),
                format!(
                    "check that `ssh -o BatchMode=yes {} fabcheck --version` works (keys, host reachable, fabcheck on the remote PATH or --remote-fabcheck)",
                    self.label
                ),
            ),
            (false, Some(s)) => Failure::new(format!("{}: the agent exited ({s})", self.label), "see its message above"),
            _ => Failure::new(format!("{}: cannot talk to the agent: {detail}", self.label), "the agent exited or the host went away; check it and rerun"),
        }
    }

    /// Says goodbye and makes sure nothing is left running: closes the channel, waits a
    /// moment for the agent to exit, then kills it.
    pub fn close(&mut self) {
        if self.writer.is_some() {
            let _ = self.send(&Request::Bye);
        }
        self.writer = None;
        if let Some(socket) = self.socket.take() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(3);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
    }
}

impl Drop for AgentLink {
    fn drop(&mut self) {
        self.close();
    }
}

/// Stack of a reader thread: it only blocks on a read and parses a line, so 256 KiB is ample,
/// and a mesh of a thousand agents costs a quarter of the default address space per agent.
const READER_STACK: usize = 256 << 10;

fn spawn_reader<R: std::io::BufRead + Send + 'static>(mut reader: R, events: Sender<Event>) {
    let spawned = std::thread::Builder::new().name("agent-reader".into()).stack_size(READER_STACK).spawn(move || loop {
        let event = match lines::read_line(&mut reader, protocol::MAX_LINE) {
            Ok(Some(line)) => match protocol::decode::<Reply>(&line) {
                Ok(reply) => Event::Reply(reply),
                Err(e) => Event::Closed(format!("it sent a bad message: {e}")),
            },
            Ok(None) => Event::Closed("the agent exited or the connection closed".into()),
            Err(e) => Event::Closed(format!("the connection failed: {e}")),
        };
        let closed = matches!(event, Event::Closed(_));
        if events.send(event).is_err() || closed {
            return;
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start a reader thread; this agent will look unreachable");
    }
}

fn valid_remote_path(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('-') && path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
}
