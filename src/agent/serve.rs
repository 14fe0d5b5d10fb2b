//! `fabcheck serve`: the agent on a TCP port, for controllers that reach it as `tcp://`.
//!
//! The accept loop is a thin adapter over pure parts: the hello deadline from accept
//! ([`hello`]), wrong tokens slowed per source ([`guesses`]),
//! registered memory shared by all sessions ([`budget`](super::budget)), and the request
//! state machine ([`machine`](super::machine)). Before a valid hello nothing about this node is
//! said; only sessions that said one count against `--max-sessions`.

use super::budget::{Budget, Limits};
use super::guesses::{self, Guesses};
use super::hello::{self, HelloError};
use super::machine::Machine;
use super::session::{self, AgentOptions};
use crate::control::protocol::{self, Reply, Request, HELLO_MAX};
use crate::error::{Failure, Outcome};
use crate::sys::io::{Interest, Readiness};
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections served at once; more are answered "serve is busy" (each may hold verbs resources).
pub const MAX_CONNECTIONS: usize = 16;
/// A connection must have sent a whole hello this long after accept, or it is dropped: silent
/// or dribbling peers cannot hold slots.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// Default `--idle-timeout`: between tests, a controller silent this long is gone.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// A controller that takes no reply for this long is gone.
const WRITE_DEADLINE: Duration = Duration::from_secs(30);
/// How often the accept loop looks at whether `--max-sessions` is used up.
const TICK: Duration = Duration::from_millis(100);

/// `fabcheck serve`, validated.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub token: Option<String>,
    /// Exit after serving this many controllers (that said a valid hello).
    pub max_sessions: Option<usize>,
    /// Registered memory, all sessions together and one session.
    pub registered: Limits,
    /// `None`: sessions never time out.
    pub idle_timeout: Option<Duration>,
}

/// What the connection threads share with the accept loop.
struct Shared {
    token: Option<String>,
    max_sessions: Option<usize>,
    /// Sessions that said a valid hello (at most `max_sessions`).
    claimed: AtomicUsize,
    /// Of those, sessions that have ended.
    ended: AtomicUsize,
    /// Connections open, authenticated or not.
    active: AtomicUsize,
    guesses: Mutex<Guesses>,
    budget: Arc<Budget>,
    idle_timeout: Option<Duration>,
}

impl Shared {
    /// Takes one of `--max-sessions`, if any is left.
    fn claim(&self) -> bool {
        let Some(max) = self.max_sessions else {
            self.claimed.fetch_add(1, Ordering::SeqCst);
            return true;
        };
        self.claimed.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1)).is_ok()
    }

    fn used_up(&self) -> bool {
        self.max_sessions.is_some_and(|max| self.ended.load(Ordering::SeqCst) >= max)
    }
}

pub fn serve(config: &ServeConfig) -> Result<Outcome, Failure> {
    let addr = config.listen;
    if !addr.ip().is_loopback() && config.token.is_none() {
        return Err(Failure::new(
            format!("refusing to listen on {addr} without a token"),
            "set FABCHECK_TOKEN (or --token-file FILE) here and give the same to `fabcheck pair` and `mesh`",
        ));
    }
    let listener =
        TcpListener::bind(addr).map_err(|e| Failure::new(format!("cannot listen on {addr}: {e}"), "pick a free port, or stop what holds it"))?;
    listener.set_nonblocking(true).map_err(|e| Failure::new(format!("cannot set up {addr}: {e}"), "rerun"))?;
    // Not `eprintln!`: a full or closed stderr must not kill the server.
    let _ = writeln!(std::io::stderr(), "fabcheck serve: listening on {addr}{}", if config.token.is_some() { " (token required)" } else { "" });
    let shared = Arc::new(Shared {
        token: config.token.clone(),
        max_sessions: config.max_sessions,
        claimed: AtomicUsize::new(0),
        ended: AtomicUsize::new(0),
        active: AtomicUsize::new(0),
        guesses: Mutex::new(Guesses::default()),
        budget: Budget::new(config.registered),
        idle_timeout: config.idle_timeout,
    });
    let mut readiness: Vec<Readiness> = Vec::new();
    while !shared.used_up() {
        if crate::sys::os::interrupted() {
            break;
        }
        let _ = crate::sys::io::wait(&[(listener.as_fd(), Interest::Read)], TICK, &mut readiness);
        let (mut stream, peer) = match listener.accept() {
            Ok(s) => s,
            Err(_) => continue,
        };
        let accepted = Instant::now();
        if stream.set_nonblocking(false).is_err() {
            continue;
        }
        if shared.active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            refuse_busy(&mut stream);
            continue;
        }
        tracing::info!(%peer, "controller connected");
        shared.active.fetch_add(1, Ordering::SeqCst);
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            if let Err(why) = handle(&stream, peer, accepted, &shared) {
                tracing::info!(%peer, %why, "connection ended");
            }
            let _ = stream.shutdown(std::net::Shutdown::Both);
            shared.active.fetch_sub(1, Ordering::SeqCst);
        });
    }
    // Connections still saying hello are refused within their deadline.
    let until = Instant::now() + HELLO_DEADLINE + Duration::from_secs(1);
    while shared.active.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Outcome::Pass)
}

/// Over the cap: say so (a controller prints "serve is busy"), and close. The reply is one
/// short line that the socket buffer takes at once; the write cannot hold the accept loop.
fn refuse_busy(stream: &mut TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let busy = Reply::Error {
        cause: format!("serve is busy: it serves at most {MAX_CONNECTIONS} controllers at once and all are taken"),
        remedy: "wait for a running pair or mesh to finish, or start another `fabcheck serve --listen` on another port".into(),
    };
    let _ = stream.write_all(protocol::encode(&busy).as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// One controller: a whole hello within [`HELLO_DEADLINE`] of accept (with the token when one
/// is set), then the agent.
fn handle(stream: &TcpStream, peer: SocketAddr, accepted: Instant, shared: &Shared) -> Result<(), String> {
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(WRITE_DEADLINE)).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    let mut writer = stream;
    let refuse = |writer: &mut &TcpStream, cause: &str, remedy: &str| {
        let reply = Reply::Error { cause: cause.into(), remedy: remedy.into() };
        let _ = writer.write_all(protocol::encode(&reply).as_bytes());
        linger(writer);
        cause.to_string()
    };
    let line = match hello::read_hello(&mut reader, accepted, HELLO_DEADLINE, HELLO_MAX, Instant::now) {
        Ok(line) => line,
        Err(HelloError::Closed) => return Err("closed before hello".into()),
        Err(HelloError::Late) => {
            return Err(refuse(&mut writer, &format!("no hello within {} s", HELLO_DEADLINE.as_secs()), "the controller must speak first"));
        }
        Err(HelloError::Invalid(e)) => {
            return Err(refuse(&mut writer, &format!("refused a message: {e}"), "use the same fabcheck version on every node"))
        }
        Err(HelloError::Io(e)) => return Err(e.to_string()),
    };
    match protocol::decode::<Request>(&line) {
        Ok(Request::Hello { token: offered }) => {
            if let Some(want) = &shared.token {
                // A slowed address's hello is read (so the refusal arrives whole) but not judged.
                let admitted = lock(&shared.guesses).admit(peer.ip(), Instant::now());
                if let Err(wait) = admitted {
                    return Err(refuse(
                        &mut writer,
                        &format!("too many wrong tokens from {}: serve takes one guess a second from it", peer.ip()),
                        &format!(
                            "give the token `fabcheck serve` was started with (FABCHECK_TOKEN or --token-file), and retry in {} ms",
                            wait.as_millis().max(1)
                        ),
                    ));
                }
                if !offered.as_deref().is_some_and(|t| constant_time_eq(t.as_bytes(), want.as_bytes())) {
                    wrong_token(shared, peer.ip());
                    return Err(refuse(
                        &mut writer,
                        "the agent refused the token",
                        "give the token `fabcheck serve` was started with (FABCHECK_TOKEN or --token-file)",
                    ));
                }
                lock(&shared.guesses).succeeded(peer.ip());
            }
        }
        Ok(_) => return Err(refuse(&mut writer, "say hello with the shared token first", "use `fabcheck pair` or `mesh` to talk to serve")),
        Err(e) => return Err(refuse(&mut writer, &format!("refused a message: {e}"), "use the same fabcheck version on every node")),
    }
    if !shared.claim() {
        let max = shared.max_sessions.unwrap_or_default();
        return Err(refuse(
            &mut writer,
            &format!("serve has taken its {max} sessions (--max-sessions) and is ending"),
            "start `fabcheck serve` again, without --max-sessions to serve any number",
        ));
    }
    let host = crate::sys::os::hostname();
    let served = writer.write_all(protocol::encode(&Machine::hello(&host)).as_bytes()).map_err(|e| e.to_string()).and_then(|()| {
        // Tests may run for minutes with the controller silent: no read deadline from here on
        // (a silent controller between tests is bounded by --idle-timeout instead).
        stream.set_read_timeout(None).map_err(|e| e.to_string())?;
        let options = AgentOptions { host, budget: Some(Arc::clone(&shared.budget)), idle_timeout: shared.idle_timeout };
        session::run(reader, stream, options).map_err(|e| e.to_string())
    });
    shared.ended.fetch_add(1, Ordering::SeqCst);
    served
}

/// Ends the stream after a refusal so that the refusal arrives: closing a socket with unread
/// bytes (the rest of an HTTP request, say) sends a reset, and the peer may lose the reply.
/// Drains what has already arrived, bounded, without waiting for more: no slot is held.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let mut reader = stream;
    for _ in 0..16 {
        match std::io::Read::read(&mut reader, &mut sink) {
            Ok(n) if n > 0 => {}
            _ => return,
        }
    }
}

/// Logged on serve's stderr (an operator sees guessing), and counted for the slow-down.
fn wrong_token(shared: &Shared, ip: IpAddr) {
    let n = lock(&shared.guesses).failed(ip, Instant::now());
    let slowed = if n >= guesses::FREE { "; slowed to one guess a second" } else { "" };
    let _ = writeln!(std::io::stderr(), "fabcheck serve: wrong token from {ip} ({n} in a row{slowed})");
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Compares without an early exit, so the time taken says nothing about how much matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn agent_stdio() -> Result<Outcome, Failure> {
    let options = AgentOptions { host: crate::sys::os::hostname(), budget: None, idle_timeout: None };
    let stdin = BufReader::new(std::io::stdin());
    session::run(stdin, std::io::stdout().lock(), options).map_err(|e| {
        Failure::new(format!("agent: {e}"), "the controller went away or speaks another version; use the same fabcheck on every node")
    })?;
    Ok(Outcome::Pass)
}
