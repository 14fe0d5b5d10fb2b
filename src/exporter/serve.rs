//! The exporter's listener: one thread, `poll(2)` over the listening socket and every
//! connection (non-blocking), each connection a [`Conn`] state machine with its limits. A
//! scrape is answered from the last finished page and never waits on sysfs: the reads happen
//! on the refresh thread.

use super::http::{self, Conn, Limits, Pages, Want};
use crate::sys::io::{self, Interest};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The longest one `poll` waits: how soon a stop request and the connection limits are seen.
const TICK: Duration = Duration::from_millis(200);

/// Where the current pages live: the refresh thread swaps in new ones, a scrape clones the
/// `Arc` (the lock is held for a pointer copy, never across I/O).
pub type Shelf = Arc<RwLock<Pages>>;

/// Serves until `stop()` says so.
pub fn serve(listener: &TcpListener, shelf: &Shelf, limits: &Limits, stop: &dyn Fn() -> bool) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut conns: Vec<(TcpStream, IpAddr, Conn)> = Vec::new();
    let mut ready = Vec::new();
    let mut scratch = vec![0u8; 4096];
    // After an accept error (EMFILE: out of descriptors) the listener stays readable; it is
    // left out of the poll for a tick instead of spinning on it.
    let mut accept_paused_until: Option<Instant> = None;
    while !stop() {
        let listening = accept_paused_until.is_none_or(|t| Instant::now() >= t);
        let mut fds = Vec::with_capacity(conns.len() + 1);
        if listening {
            fds.push((listener.as_fd(), Interest::Read));
        }
        for (stream, _, conn) in &conns {
            let interest = if conn.answered() { Interest::Write } else { Interest::Read };
            fds.push((stream.as_fd(), interest));
        }
        io::wait(&fds, TICK, &mut ready)?;
        let offset = usize::from(listening);
        let listener_ready = listening && ready.first().is_some_and(|r| r.readable);
        let now = Instant::now();
        let mut close = vec![false; conns.len()];
        for (i, (stream, _, conn)) in conns.iter_mut().enumerate() {
            let r = ready.get(i + offset).copied().unwrap_or_default();
            if r.readable && !conn.answered() {
                close[i] = read_some(stream, conn, &mut scratch, limits, shelf, now);
            } else if r.readable {
                drain(stream, &mut scratch);
            }
            if !close[i] && conn.answered() && (r.writable || r.readable) {
                close[i] = write_some(stream, conn, now);
            }
            if !close[i] {
                close[i] = conn.tick(now, limits) == Want::Close;
            }
        }
        let mut i = 0;
        conns.retain(|_| {
            i += 1;
            !close[i - 1]
        });
        if listener_ready {
            let failed = accept_all(listener, &mut conns, limits, now);
            // Said once per spell of failures, not every tick.
            if let (Some(error), None) = (&failed, accept_paused_until) {
                tracing::warn!(%error, "exporter: cannot accept connections; retrying every {} ms", TICK.as_millis());
            }
            accept_paused_until = failed.map(|_| now + TICK);
        }
    }
    Ok(())
}

/// Takes every waiting connection. At a cap (per address, or in all) the held connection that
/// has waited longest on its client makes room ([`http::make_room`]): idle sockets and clients
/// that ask and never read must not lock the scraper out (issue #46 item 3). The error when
/// accepting failed (EMFILE and friends: the rest stay in the backlog until connections close).
fn accept_all(listener: &TcpListener, conns: &mut Vec<(TcpStream, IpAddr, Conn)>, limits: &Limits, now: Instant) -> Option<String> {
    loop {
        let (stream, from) = match listener.accept() {
            Ok((stream, peer)) => (stream, peer.ip()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::ConnectionAborted => continue,
            Err(e) => return Some(e.to_string()),
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let held: Vec<(IpAddr, Instant)> = conns.iter().map(|(_, ip, c)| (*ip, c.stuck_since())).collect();
        if let Some(i) = http::make_room(&held, from, limits) {
            drop(conns.remove(i));
        }
        conns.push((stream, from, Conn::new(now)));
    }
}

/// Reads what the client sent; true when the connection is to be closed.
fn read_some(stream: &mut TcpStream, conn: &mut Conn, scratch: &mut [u8], limits: &Limits, shelf: &Shelf, now: Instant) -> bool {
    loop {
        match stream.read(scratch) {
            Ok(0) => return conn.end_of_input() == Want::Close,
            Ok(n) => {
                conn.receive(&scratch[..n], limits, now, || current(shelf));
                if conn.answered() {
                    drain(stream, scratch);
                    return false;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// Reads and drops what a client sends after its request (a POST body, a flood): closing a
/// socket with unread input resets it, and the client would lose its answer. Bounded per call.
fn drain(stream: &mut TcpStream, scratch: &mut [u8]) {
    for _ in 0..16 {
        match stream.read(scratch) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Writes what the socket takes of the answer; true when the connection is to be closed.
fn write_some(stream: &mut TcpStream, conn: &mut Conn, now: Instant) -> bool {
    loop {
        let pending = conn.pending();
        if pending.is_empty() {
            return true;
        }
        match stream.write(pending) {
            Ok(0) => return true,
            Ok(n) => conn.sent(n, now),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// The pages now on the shelf (a poisoned lock still holds a whole page: it is only ever
/// replaced, never edited in place).
pub fn current(shelf: &Shelf) -> Pages {
    match shelf.read() {
        Ok(p) => p.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}
