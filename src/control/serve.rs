//! `fabcheck serve` (TCP) and `fabcheck agent` (stdio) entry points.

use super::agent::{self, AgentOptions};
use super::lines;
use super::protocol::{self, Reply, Request};
use crate::error::{Failure, Outcome};
use std::io::{BufReader, ErrorKind, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once; more are answered "serve is busy" (each may hold verbs resources).
pub const MAX_CONNECTIONS: usize = 16;
/// A connection must say hello within this, or it is dropped: silent peers cannot hold slots.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// A controller that takes no reply for this long is gone.
const WRITE_DEADLINE: Duration = Duration::from_secs(30);
/// Longest hello accepted (a token and a few fields).
const HELLO_MAX: usize = 4096;

/// `fabcheck serve`, validated.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub token: Option<String>,
    /// Exit after serving this many controllers.
    pub max_sessions: Option<usize>,
}

pub fn serve(config: &ServeConfig) -> Result<Outcome, Failure> {
    let addr = config.listen;
    let token = config.token.clone();
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(Failure::new(
            format!("refusing to listen on {addr} without a token"),
            "set FABCHECK_TOKEN (or --token-file FILE) here and give the same to `fabcheck pair` and `mesh`",
        ));
    }
    let listener =
        TcpListener::bind(addr).map_err(|e| Failure::new(format!("cannot listen on {addr}: {e}"), "pick a free port, or stop what holds it"))?;
    // Not `eprintln!`: a full or closed stderr must not kill the server.
    let _ = writeln!(std::io::stderr(), "fabcheck serve: listening on {addr}{}", if token.is_some() { " (token required)" } else { "" });
    let active = Arc::new(AtomicUsize::new(0));
    let mut served = 0usize;
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            refuse_busy(&mut stream);
            continue;
        }
        let peer = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        tracing::info!(%peer, "controller connected");
        active.fetch_add(1, Ordering::SeqCst);
        let counter = Arc::clone(&active);
        let token = token.clone();
        let handle = std::thread::spawn(move || {
            if let Err(why) = handle(&stream, token) {
                tracing::info!(%peer, %why, "connection ended");
            }
            let _ = stream.shutdown(std::net::Shutdown::Both);
            counter.fetch_sub(1, Ordering::SeqCst);
        });
        served += 1;
        if config.max_sessions.is_some_and(|max| served >= max) {
            let _ = handle.join();
            while active.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(Duration::from_millis(20));
            }
            break;
        }
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

/// One controller: a hello within [`HELLO_DEADLINE`] (with the token when one is set), then the
/// agent. Before a valid hello nothing about this node is said.
fn handle(stream: &TcpStream, token: Option<String>) -> Result<(), String> {
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(WRITE_DEADLINE)).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(HELLO_DEADLINE)).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    let mut writer = stream;
    let refuse = |writer: &mut &TcpStream, cause: &str, remedy: &str| {
        let reply = Reply::Error { cause: cause.into(), remedy: remedy.into() };
        let _ = writer.write_all(protocol::encode(&reply).as_bytes());
        cause.to_string()
    };
    let line = match lines::read_line(&mut reader, HELLO_MAX) {
        Ok(Some(line)) => line,
        Ok(None) => return Err("closed before hello".into()),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            return Err(refuse(&mut writer, &format!("no hello within {} s", HELLO_DEADLINE.as_secs()), "the controller must speak first"));
        }
        Err(e) => return Err(refuse(&mut writer, &format!("refused a message: {e}"), "use the same fabcheck version on every node")),
    };
    match protocol::decode::<Request>(&line) {
        Ok(Request::Hello { token: offered }) => {
            if let Some(want) = &token {
                if !offered.as_deref().is_some_and(|t| agent::constant_time_eq(t.as_bytes(), want.as_bytes())) {
                    return Err(refuse(
                        &mut writer,
                        "the agent refused the token",
                        "give the token `fabcheck serve` was started with (FABCHECK_TOKEN or --token-file)",
                    ));
                }
            }
        }
        Ok(_) => return Err(refuse(&mut writer, "say hello with the shared token first", "use `fabcheck pair` or `mesh` to talk to serve")),
        Err(e) => return Err(refuse(&mut writer, &format!("refused a message: {e}"), "use the same fabcheck version on every node")),
    }
    let hello = Reply::Hello { agent: format!("fabcheck {}", env!("CARGO_PKG_VERSION")), host: agent::hostname() };
    writer.write_all(protocol::encode(&hello).as_bytes()).map_err(|e| e.to_string())?;
    // Tests may run for minutes with the controller silent: no read deadline from here on.
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    agent::run(reader, stream, AgentOptions { token: None, host: agent::hostname() }).map_err(|e| e.to_string())
}

pub fn agent_stdio() -> Result<Outcome, Failure> {
    let options = AgentOptions { token: None, host: agent::hostname() };
    let stdin = BufReader::new(std::io::stdin());
    agent::run(stdin, std::io::stdout().lock(), options).map_err(|e| {
        Failure::new(format!("agent: {e}"), "the controller went away or speaks another version; use the same fabcheck on every node")
    })?;
    Ok(Outcome::Pass)
}
