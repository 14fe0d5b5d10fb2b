//! `fabcheck serve` (TCP) and `fabcheck agent` (stdio) entry points.

use super::agent::{self, AgentOptions};
use crate::error::{Failure, Outcome};
use clap::Args;
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Connections served at once; more are refused (each may hold verbs resources).
const MAX_CONNECTIONS: usize = 16;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback needs a token.
    #[arg(long, default_value = "127.0.0.1:18515", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Shared token controllers must present (or FABCHECK_TOKEN).
    #[arg(long, env = "FABCHECK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Exit after serving this many controllers (for tests and one-shot CI use).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<usize>,
}

#[derive(Debug, Args)]
pub struct AgentArgs {}

pub fn serve(args: &ServeArgs) -> Result<Outcome, Failure> {
    let addr: SocketAddr =
        args.listen.parse().map_err(|_| Failure::usage(format!("--listen '{}' is not ADDR:PORT (e.g. 0.0.0.0:18515)", args.listen)))?;
    let token = args.token.clone().filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(Failure::new(
            format!("refusing to listen on {addr} without a token"),
            "pass --token SECRET (or set FABCHECK_TOKEN) here and give the same to `fabcheck pair --token`",
        ));
    }
    let listener =
        TcpListener::bind(addr).map_err(|e| Failure::new(format!("cannot listen on {addr}: {e}"), "pick a free port, or stop what holds it"))?;
    eprintln!("fabcheck serve: listening on {addr}{}", if token.is_some() { " (token required)" } else { "" });
    let active = Arc::new(AtomicUsize::new(0));
    let mut served = 0usize;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            drop(stream);
            continue;
        }
        let peer = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        tracing::info!(%peer, "controller connected");
        let _ = stream.set_nodelay(true);
        let options = AgentOptions { token: token.clone(), host: agent::hostname() };
        active.fetch_add(1, Ordering::SeqCst);
        let counter = Arc::clone(&active);
        let handle = std::thread::spawn(move || {
            if let Ok(read_half) = stream.try_clone() {
                let _ = agent::run(BufReader::new(read_half), &stream, options);
            }
            let _ = stream.shutdown(std::net::Shutdown::Both);
            counter.fetch_sub(1, Ordering::SeqCst);
        });
        served += 1;
        if args.max_sessions.is_some_and(|max| served >= max) {
            let _ = handle.join();
            while active.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            break;
        }
    }
    Ok(Outcome::Pass)
}

pub fn agent_stdio(_args: &AgentArgs) -> Result<Outcome, Failure> {
    let options = AgentOptions { token: None, host: agent::hostname() };
    let stdin = BufReader::new(std::io::stdin());
    agent::run(stdin, std::io::stdout().lock(), options)
        .map_err(|e| Failure::new(format!("agent channel failed: {e}"), "the controller went away"))?;
    Ok(Outcome::Pass)
}
