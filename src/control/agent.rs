//! The agent: runs fabcheck's own tests on request, and nothing else.
//!
//! A reader thread turns lines into requests and sets the stop/abort flags directly, so a
//! measured loop notices a `stop`, a closed channel or a dead controller within microseconds
//! without the loop itself ever touching the channel.

use super::lines;
use super::protocol::{self, Reply, Request};
use crate::perf::{self, session::Session, PerfError, Signals};
use crate::probe;
use crossbeam::channel;
use std::io::{BufRead, Write};
use std::sync::Arc;

pub struct AgentOptions {
    /// Token a controller must present in `hello` (serve); `None` = trusted channel (stdio).
    pub token: Option<String>,
    pub host: String,
}

/// Requests read ahead of the one being served. A peer that floods requests and reads no
/// replies fills this, then the reader stops reading (TCP pushes back), so memory stays bounded
/// at about this many lines.
const QUEUE: usize = 16;

enum Event {
    Request(Box<Request>),
    Bad(String),
    /// The channel ended in the middle of a message.
    Truncated,
    Closed,
}

/// How a session with a controller ended, when it did not end cleanly.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("the controller's channel ended in the middle of a message (truncated input)")]
    Truncated,
    #[error("the controller sent a message the agent refused: {0}")]
    Refused(String),
    #[error("the controller's channel failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves one controller until it says bye or the channel closes. Every verbs resource is
/// released before this returns.
pub fn run<R: BufRead + Send + 'static, W: Write>(mut reader: R, mut writer: W, options: AgentOptions) -> Result<(), AgentError> {
    let signals = Signals::new();
    let (tx, rx) = channel::bounded(QUEUE);
    let reader_signals = Arc::clone(&signals);
    std::thread::spawn(move || loop {
        let event = match lines::read_line(&mut reader, protocol::MAX_LINE) {
            Ok(Some(line)) => match protocol::decode::<Request>(&line) {
                Ok(Request::Stop) => {
                    reader_signals.request_stop();
                    Event::Request(Box::new(Request::Stop))
                }
                // Goodbye ends a running test at once: the controller is leaving.
                Ok(Request::Bye) => {
                    reader_signals.request_abort();
                    Event::Request(Box::new(Request::Bye))
                }
                Ok(req) => Event::Request(Box::new(req)),
                Err(e) => {
                    reader_signals.request_abort();
                    Event::Bad(e.to_string())
                }
            },
            // Oversized or not UTF-8: say why, then end the session.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                reader_signals.request_abort();
                Event::Bad(e.to_string())
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                reader_signals.request_abort();
                let _ = tx.send(Event::Truncated);
                return;
            }
            Ok(None) | Err(_) => {
                reader_signals.request_abort();
                let _ = tx.send(Event::Closed);
                return;
            }
        };
        let last = matches!(&event, Event::Bad(_)) || matches!(&event, Event::Request(r) if matches!(**r, Request::Bye));
        if tx.send(event).is_err() || last {
            return;
        }
    });

    let mut authenticated = options.token.is_none();
    let mut session: Option<Session> = None;
    let mut ended: Result<(), AgentError> = Ok(());
    let reply = |writer: &mut W, r: &Reply| -> std::io::Result<()> {
        writer.write_all(protocol::encode(r).as_bytes())?;
        writer.flush()
    };
    while let Ok(event) = rx.recv() {
        let request = match event {
            Event::Closed => break,
            Event::Truncated => {
                ended = Err(AgentError::Truncated);
                break;
            }
            Event::Bad(why) => {
                let _ = reply(
                    &mut writer,
                    &Reply::Error { cause: format!("agent refused a message: {why}"), remedy: "use the same fabcheck version on every node".into() },
                );
                ended = Err(AgentError::Refused(why));
                break;
            }
            Event::Request(r) => *r,
        };
        if !authenticated && !matches!(request, Request::Hello { .. }) {
            reply(
                &mut writer,
                &error("say hello with the shared token first", "set FABCHECK_TOKEN (or --token-file) to the token of `fabcheck serve`"),
            )?;
            break;
        }
        match request {
            Request::Hello { token } => {
                if let Some(want) = &options.token {
                    if !token.as_deref().is_some_and(|t| constant_time_eq(t.as_bytes(), want.as_bytes())) {
                        reply(
                            &mut writer,
                            &error(
                                "the agent refused the token",
                                "give the token `fabcheck serve` was started with (FABCHECK_TOKEN or --token-file)",
                            ),
                        )?;
                        break;
                    }
                }
                authenticated = true;
                reply(&mut writer, &Reply::Hello { agent: format!("fabcheck {}", env!("CARGO_PKG_VERSION")), host: options.host.clone() })?;
            }
            Request::Inventory => {
                let r = match probe::test_inventory(None) {
                    Ok(inventory) => Reply::Inventory { inventory },
                    Err(e) => Reply::Error { cause: e.to_string(), remedy: e.remedy() },
                };
                reply(&mut writer, &r)?;
            }
            Request::Prepare { target, spec } => {
                session = None;
                let r = match Session::open(&target, &spec, &options.host) {
                    Ok(s) => {
                        let endpoint = s.local().clone();
                        session = Some(s);
                        Reply::Ready { endpoint }
                    }
                    Err(e) => perf_error(&e),
                };
                reply(&mut writer, &r)?;
            }
            Request::Connect { peer } => {
                let r = match session.as_mut() {
                    None => error("connect before prepare", "controller bug: prepare a test first"),
                    Some(s) => match s.connect(&peer) {
                        Ok(()) => Reply::Connected,
                        Err(e) => perf_error(&e),
                    },
                };
                reply(&mut writer, &r)?;
            }
            Request::Run => {
                let Some(s) = session.as_mut() else {
                    reply(&mut writer, &error("run before prepare", "controller bug: prepare a test first"))?;
                    continue;
                };
                signals.reset();
                reply(&mut writer, &Reply::Running)?;
                let r = match perf::run(s, &signals) {
                    Ok(result) => Reply::Done { result },
                    Err(PerfError::Aborted) => break,
                    Err(e) => perf_error(&e),
                };
                reply(&mut writer, &r)?;
            }
            Request::Stop => {}
            Request::Finish => {
                session = None;
                reply(&mut writer, &Reply::Finished)?;
            }
            Request::Bye => {
                session = None;
                let _ = reply(&mut writer, &Reply::Bye);
                break;
            }
        }
    }
    drop(session);
    ended
}

fn error(cause: &str, remedy: &str) -> Reply {
    Reply::Error { cause: cause.into(), remedy: remedy.into() }
}

fn perf_error(e: &PerfError) -> Reply {
    Reply::Error { cause: e.cause(), remedy: e.remedy() }
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// This node's name, for reports.
pub fn hostname() -> String {
    crate::sys::os::hostname()
}
