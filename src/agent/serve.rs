//! `fabcheck serve`: the agent on a TCP port, for controllers that reach it as `tcp://`.
//!
//! The accept loop is a thin adapter over pure parts: connections that have said nothing yet
//! ([`lobby`](super::lobby): a descriptor each, no thread), the places before and after
//! authentication ([`admission`]), the hello deadline from accept ([`hello`]), when a hello is
//! judged ([`guesses`](super::guesses)), the token's comparison ([`token`]), what is logged of wrong tokens
//! ([`token_log`](super::token_log)), registered memory shared by all sessions
//! ([`budget`](super::budget)), and the request state machine ([`machine`](super::machine)). Before a valid hello nothing about this
//! node is said; only sessions that said one count against `--max-sessions`. SIGINT, SIGTERM and
//! SIGHUP end it (exit 0).

use super::admission::{self, Admission, Arrival, Busy, ConnId};
use super::budget::{Budget, Limits};
use super::guesses::{Guesses, Source};
use super::hello::{self, HelloError};
use super::lobby::Lobby;
use super::machine::Machine;
use super::session::{self, AgentOptions};
use super::token;
use super::token_log::{TokenLog, Wrong};
use crate::control::protocol::{self, Reply, Request, HELLO_MAX};
use crate::error::{Failure, Outcome};
use crate::sys::io::{Interest, Readiness};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Controllers served at once; more are answered "serve is busy" (each may hold verbs resources).
pub const MAX_CONNECTIONS: usize = admission::SESSIONS;
/// A connection must have sent a whole hello this long after accept, or it is dropped: silent
/// or dribbling peers cannot hold slots.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// Default `--idle-timeout`: between tests, a controller silent this long is gone.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// A controller that takes no reply for this long is gone.
const WRITE_DEADLINE: Duration = Duration::from_secs(30);
/// How often the accept loop looks at signals, `--max-sessions` and the wrong-token log.
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
    /// `--sysfs-root DIR`: the bundle served and the host name it gives (its manifest's, else
    /// the directory's name).
    pub bundle: Option<(std::path::PathBuf, String)>,
}

/// What the connection threads share with the accept loop.
struct Shared {
    token: Option<String>,
    max_sessions: Option<usize>,
    /// Sessions that said a valid hello (at most `max_sessions`).
    claimed: AtomicUsize,
    /// Of those, sessions that have ended.
    ended: AtomicUsize,
    /// Connection threads running, authenticated or not.
    active: AtomicUsize,
    /// The places; each pending connection's handle is a clone of its socket, shut down when
    /// it is evicted.
    admission: Mutex<Admission<TcpStream>>,
    guesses: Mutex<Guesses>,
    log: Mutex<TokenLog>,
    budget: Arc<Budget>,
    idle_timeout: Option<Duration>,
    bundle: Option<(std::path::PathBuf, String)>,
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

/// A line on serve's stderr. Not `eprintln!`: a full or closed stderr must not kill the server.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
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
    // SIGHUP (the login that started it closed), SIGTERM and SIGINT end serve as one: the loop
    // below sees the flag within a tick (0.3 never caught them: SIGHUP was exit 129).
    crate::sys::os::catch_termination();
    say(&format!("fabcheck serve: listening on {addr}{}", if config.token.is_some() { " (token required)" } else { "" }));
    let shared = Arc::new(Shared {
        token: config.token.clone(),
        max_sessions: config.max_sessions,
        claimed: AtomicUsize::new(0),
        ended: AtomicUsize::new(0),
        active: AtomicUsize::new(0),
        admission: Mutex::new(Admission::default()),
        guesses: Mutex::new(Guesses::default()),
        log: Mutex::new(TokenLog::default()),
        budget: Budget::new(config.registered),
        idle_timeout: config.idle_timeout,
        bundle: config.bundle.clone(),
    });
    // Silent connections are held here, a descriptor each; a few thousand fit.
    crate::sys::io::raise_open_files(4096);
    let mut lobby: Lobby<(TcpStream, SocketAddr)> = Lobby::default();
    let mut readiness: Vec<Readiness> = Vec::new();
    while !shared.used_up() {
        if crate::sys::os::interrupted() {
            say(&format!("fabcheck serve: stopped by {}", crate::sys::os::termination_signal().unwrap_or("a signal")));
            return Ok(Outcome::Pass);
        }
        let now = Instant::now();
        if let Some(summary) = lock(&shared.log).tick(now) {
            say(&summary);
        }
        for (_, (mut stream, _)) in lobby.expired(now, HELLO_DEADLINE) {
            refuse_late(&mut stream);
        }
        let mut fds = vec![(listener.as_fd(), Interest::Read)];
        fds.extend(lobby.iter().map(|(s, _)| (s.as_fd(), Interest::Read)));
        let timeout = lobby.next_expiry(HELLO_DEADLINE).map_or(TICK, |t| t.saturating_duration_since(now).min(TICK));
        let _ = crate::sys::io::wait(&fds, timeout, &mut readiness);
        let listening = readiness.first().is_some_and(|r| r.readable);
        let ready: Vec<bool> = readiness.iter().skip(1).map(|r| r.readable).collect();
        drop(fds);
        // Those that spoke ask for a place; those that closed without a word are dropped here.
        for (accepted, (stream, peer)) in lobby.take(&ready) {
            if has_spoken(&stream) {
                place(&shared, stream, peer, accepted);
            }
        }
        if listening {
            accept_all(&listener, &shared, &mut lobby);
        }
    }
    // Connections still saying hello are refused within their deadline.
    let until = Instant::now() + HELLO_DEADLINE + Duration::from_secs(1);
    while shared.active.load(Ordering::SeqCst) > 0 && Instant::now() < until && !crate::sys::os::interrupted() {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Outcome::Pass)
}

/// Takes every waiting connection into the lobby (or, with every authenticated place taken,
/// says busy at once); the oldest silent one makes room, closed having said nothing.
fn accept_all(listener: &TcpListener, shared: &Shared, lobby: &mut Lobby<(TcpStream, SocketAddr)>) {
    while let Ok((mut stream, peer)) = listener.accept() {
        if lock(&shared.admission).counts().1 >= MAX_CONNECTIONS {
            refuse_busy(&mut stream, Busy::Sessions);
            continue;
        }
        if stream.set_nonblocking(false).is_ok() {
            drop(lobby.push(Instant::now(), (stream, peer)));
        }
    }
}

/// A connection that has spoken takes a place (or is told why not) and gets its thread.
fn place(shared: &Arc<Shared>, mut stream: TcpStream, peer: SocketAddr, accepted: Instant) {
    let Ok(closer) = stream.try_clone() else { return };
    let source = Source::of(peer.ip());
    let trusted = lock(&shared.guesses).trusted(source, Instant::now());
    let id = match lock(&shared.admission).arrive_as(source, trusted, accepted, closer, has_spoken) {
        Arrival::Busy(why) => return refuse_busy(&mut stream, why),
        Arrival::Admitted { id, evicted } => {
            if let Some(evicted) = evicted {
                // Its thread's read ends at once, and the thread with it.
                let _ = evicted.shutdown(std::net::Shutdown::Both);
            }
            id
        }
    };
    tracing::info!(%peer, "controller connected");
    shared.active.fetch_add(1, Ordering::SeqCst);
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        if let Err(why) = handle(&stream, peer, accepted, Place { shared: &shared, id, authenticated: false }) {
            tracing::info!(%peer, %why, "connection ended");
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        shared.active.fetch_sub(1, Ordering::SeqCst);
    });
}

/// A connection that said nothing within [`HELLO_DEADLINE`] of accept: told so, and closed.
fn refuse_late(stream: &mut TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let late = Reply::Error { cause: format!("no hello within {} s", HELLO_DEADLINE.as_secs()), remedy: "the controller must speak first".into() };
    let _ = stream.write_all(protocol::encode(&late).as_bytes());
    linger(stream);
}

/// Whether a connection has bytes waiting: it began its hello (looked at without reading or
/// waiting, so its own thread reads them still).
fn has_spoken(stream: &TcpStream) -> bool {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    socket2::SockRef::from(stream).recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT).is_ok_and(|n| n > 0)
}

/// No place: say so (a controller prints "serve is busy"), and close. The reply is one short
/// line that the socket buffer takes at once; the write cannot hold the accept loop.
fn refuse_busy(stream: &mut TcpStream, why: Busy) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let (cause, remedy) = match why {
        Busy::Sessions => (
            format!("serve is busy: it serves at most {MAX_CONNECTIONS} controllers at once and all are taken"),
            "wait for a running pair or mesh to finish, or start another `fabcheck serve --listen` on another port".to_string(),
        ),
        Busy::Judging => (
            format!("serve is busy: {} connections are waiting for their hello to be judged", admission::PRE_AUTH),
            "retry in a few seconds; if it lasts, someone is guessing the token (serve's log says from where)".to_string(),
        ),
        Busy::SourceJudging(source) => (
            format!("serve is busy: {} connections from {source} are waiting for their hello to be judged", admission::PER_SOURCE),
            format!("retry in a few seconds; if it lasts, something on {source} is guessing the token (serve's log says more)"),
        ),
    };
    let _ = stream.write_all(protocol::encode(&Reply::Error { cause, remedy }).as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// A connection's place in the admission, given back however its thread ends.
struct Place<'a> {
    shared: &'a Shared,
    id: ConnId,
    authenticated: bool,
}

impl Place<'_> {
    /// Its hello was valid: an authenticated place, if one is left.
    fn authenticate(&mut self) -> bool {
        self.authenticated = lock(&self.shared.admission).authenticated(self.id);
        self.authenticated
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut admission = lock(&self.shared.admission);
        if self.authenticated {
            admission.session_ended();
        } else {
            admission.left(self.id);
        }
    }
}

/// How a controller's connection ended other than by its session's end: logged, never sent
/// further (what the controller was told is in `Refused`).
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("closed before hello")]
    ClosedBeforeHello,
    #[error("evicted before its hello was in")]
    Evicted,
    /// Refused with this cause, which the controller was told.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Session(session::AgentError),
}

/// One controller: a whole hello within [`HELLO_DEADLINE`] of accept, judged in its turn (with
/// the token when one is set), then the agent.
fn handle(stream: &TcpStream, peer: SocketAddr, accepted: Instant, mut place: Place<'_>) -> Result<(), Ended> {
    let shared = place.shared;
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(WRITE_DEADLINE))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let refuse = |writer: &mut &TcpStream, cause: &str, remedy: &str| {
        let reply = Reply::Error { cause: cause.into(), remedy: remedy.into() };
        let _ = writer.write_all(protocol::encode(&reply).as_bytes());
        linger(writer);
        Ended::Refused(cause.to_string())
    };
    let line = match hello::read_hello(&mut reader, accepted, HELLO_DEADLINE, HELLO_MAX, Instant::now) {
        Ok(line) => line,
        Err(HelloError::Closed) => return Err(Ended::ClosedBeforeHello),
        Err(HelloError::Late) => {
            return Err(refuse(&mut writer, &format!("no hello within {} s", HELLO_DEADLINE.as_secs()), "the controller must speak first"));
        }
        Err(HelloError::Invalid(e)) => {
            return Err(refuse(&mut writer, &format!("refused a message: {e}"), "use the same fabcheck version on every node"))
        }
        Err(HelloError::Io(e)) => return Err(Ended::Io(e)),
    };
    if !lock(&shared.admission).hello_in(place.id) {
        return Err(Ended::Evicted);
    }
    match protocol::decode::<Request>(&line) {
        Ok(Request::Hello { token: offered }) => {
            if let Some(want) = &shared.token {
                judge(shared, peer, offered.as_deref().unwrap_or(""), want)
                    .map_err(|why| refuse(&mut writer, why, "give the token `fabcheck serve` was started with (FABCHECK_TOKEN or --token-file)"))?;
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
    if !place.authenticate() {
        shared.claimed.fetch_sub(1, Ordering::SeqCst);
        return Err(refuse(
            &mut writer,
            &format!("serve is busy: it serves at most {MAX_CONNECTIONS} controllers at once and all are taken"),
            "wait for a running pair or mesh to finish, or start another `fabcheck serve --listen` on another port",
        ));
    }
    let host = shared.bundle.as_ref().map_or_else(crate::sys::os::hostname, |(_, host)| host.clone());
    let served = writer.write_all(protocol::encode(&Machine::hello(&host)).as_bytes()).map_err(Ended::Io).and_then(|()| {
        // Tests may run for minutes with the controller silent: no read deadline from here on
        // (a silent controller between tests is bounded by --idle-timeout instead).
        stream.set_read_timeout(None)?;
        let sysfs_root = shared.bundle.as_ref().map(|(root, _)| root.clone());
        let options = AgentOptions { host, budget: Some(Arc::clone(&shared.budget)), idle_timeout: shared.idle_timeout, sysfs_root };
        session::run(reader, stream, options).map_err(Ended::Session)
    });
    shared.ended.fetch_add(1, Ordering::SeqCst);
    served
}

/// Waits for the hello's turn, then compares the token; a wrong one is logged (rate-limited)
/// and counted. `Err`: the refusal's cause.
fn judge(shared: &Shared, peer: SocketAddr, offered: &str, want: &str) -> Result<(), &'static str> {
    let turn = lock(&shared.guesses).turn(peer.ip(), Instant::now());
    // The wait is bounded by the places: at most PER_SOURCE turns of its source, and PRE_AUTH
    // of the cap, are ahead of it.
    let wait = turn.at.saturating_duration_since(Instant::now());
    if !wait.is_zero() {
        std::thread::sleep(wait);
    }
    if token::same(offered.as_bytes(), want.as_bytes()) {
        lock(&shared.guesses).right(&turn);
        return Ok(());
    }
    let now = Instant::now();
    let (in_a_row, paced) = lock(&shared.guesses).wrong(&turn, now);
    let lines = lock(&shared.log).wrong(Wrong { ip: peer.ip(), source: turn.source, in_a_row, paced }, now);
    for line in lines {
        say(&line);
    }
    Err("the agent refused the token")
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn agent_stdio(bundle: Option<(std::path::PathBuf, String)>) -> Result<Outcome, Failure> {
    let host = bundle.as_ref().map_or_else(crate::sys::os::hostname, |(_, host)| host.clone());
    let options = AgentOptions { host, budget: None, idle_timeout: None, sysfs_root: bundle.map(|(root, _)| root) };
    let stdin = BufReader::new(std::io::stdin());
    session::run(stdin, std::io::stdout().lock(), options).map_err(|e| {
        Failure::new(format!("agent: {e}"), "the controller went away or speaks another version; use the same fabcheck on every node")
    })?;
    Ok(Outcome::Pass)
}
