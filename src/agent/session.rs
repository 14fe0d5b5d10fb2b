//! The agent's I/O loop: serves one controller until it says bye or the channel closes.
//!
//! A reader thread turns lines into requests and sets the stop/abort flags directly, so a
//! measured loop notices a `stop`, a closed channel or a dead controller within microseconds
//! without the loop itself ever touching the channel. What to do with each request is
//! [`Machine`]'s decision; this file only performs its steps.

use super::budget::Budget;
use super::machine::{Machine, Step};
use crate::control::lines;
use crate::control::protocol::{self, Reply, Request};
use crate::perf::member::MemberSession;
use crate::perf::member_wire::MemberError;
use crate::perf::{self, session::Session, PerfError, Signals};
use crate::probe;
use crossbeam::channel::{self, RecvTimeoutError};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub struct AgentOptions {
    pub host: String,
    /// Registered memory shared with the other sessions (serve); `None`: unbounded (stdio).
    pub budget: Option<Arc<Budget>>,
    /// Between tests, a controller silent this long is gone (serve); `None`: wait forever.
    pub idle_timeout: Option<Duration>,
    /// `--sysfs-root DIR`: answers `check` and `devices` from this bundle, runs no verbs test.
    pub sysfs_root: Option<std::path::PathBuf>,
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
    #[error("the controller sent no request for {} s", .0.as_secs())]
    Idle(Duration),
    #[error("the controller's channel failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves one controller until it says bye or the channel closes. Every verbs resource is
/// released before this returns.
pub fn run<R: BufRead + Send + 'static, W: Write>(reader: R, mut writer: W, options: AgentOptions) -> Result<(), AgentError> {
    let signals = Signals::new();
    let (tx, rx) = channel::bounded(QUEUE);
    let reader_signals = Arc::clone(&signals);
    std::thread::spawn(move || read_requests(reader, &tx, &reader_signals));

    let mut machine = Machine::new(options.host.clone(), options.budget.clone());
    if options.sysfs_root.is_some() {
        machine = machine.serving_bundle();
    }
    let mut session: Option<Session> = None;
    // A collective member's hops (0.5): held beside the pair test's session, one or the other.
    let mut member: Option<MemberSession> = None;
    let reply = |writer: &mut W, r: &Reply| -> std::io::Result<()> {
        writer.write_all(protocol::encode(r).as_bytes())?;
        writer.flush()
    };
    loop {
        let event = match options.idle_timeout {
            Some(limit) => rx.recv_timeout(limit),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let (steps, ended) = match event {
            Err(RecvTimeoutError::Disconnected) | Ok(Event::Closed) => break,
            Ok(Event::Truncated) => {
                drop(session);
                return Err(AgentError::Truncated);
            }
            Err(RecvTimeoutError::Timeout) => {
                let limit = options.idle_timeout.unwrap_or_default();
                (machine.on_idle(limit), Err(AgentError::Idle(limit)))
            }
            Ok(Event::Bad(why)) => (machine.on_bad(&why), Err(AgentError::Refused(why))),
            Ok(Event::Request(r)) => (machine.on_request(*r), Ok(())),
        };
        for step in steps {
            match step {
                // A refusal that cannot be delivered changes nothing: the session ends anyway.
                Step::Reply(r) if ended.is_err() || r == Reply::Bye => {
                    let _ = reply(&mut writer, &r);
                }
                Step::Reply(r) => reply(&mut writer, &r)?,
                Step::Check => reply(&mut writer, &super::check_answer::check(options.sysfs_root.as_deref()))?,
                Step::Inventory => {
                    let read = match &options.sysfs_root {
                        Some(root) => probe::inventory(&probe::Source::Sysfs(root.clone()), None),
                        None => probe::test_inventory(None),
                    };
                    let r = match read {
                        Ok(inventory) => Reply::Inventory { inventory },
                        Err(e) => Reply::Error { cause: e.to_string(), remedy: e.remedy() },
                    };
                    reply(&mut writer, &r)?;
                }
                Step::Rails(spec) => reply(&mut writer, &rails_reply(&spec))?,
                Step::Close => {
                    session = None;
                    member = None;
                }
                Step::OpenMember { target, plan, stall_timeout_ms } => {
                    let r = match MemberSession::open(&target, &plan, stall_timeout_ms, &options.host) {
                        Ok(m) => {
                            let hops = m.local().to_vec();
                            member = Some(m);
                            Reply::MemberReady { hops }
                        }
                        Err(e) => perf_error(&e),
                    };
                    machine.opened(member.is_some());
                    reply(&mut writer, &r)?;
                }
                Step::ConnectMember(peers) => {
                    let r = match member.as_mut().map(|m| m.connect(&peers)) {
                        Some(Ok(())) => Reply::Connected,
                        Some(Err(e)) => perf_error(&e),
                        None => Reply::Error {
                            cause: "connect_hops before prepare_member".into(),
                            remedy: "controller bug: prepare the member first".into(),
                        },
                    };
                    reply(&mut writer, &r)?;
                }
                Step::RunMember => {
                    let Some(m) = member.as_mut() else { continue };
                    signals.reset();
                    let mut progress = |interval| reply(&mut writer, &Reply::Progress { interval });
                    let r = match perf::member_wire::run_reporting(m, &signals, &mut progress) {
                        Ok(result) => Reply::MemberDone { result },
                        Err(MemberError::Aborted) => return Ok(()),
                        Err(MemberError::Failed { cause, remedy }) => Reply::Error { cause, remedy },
                    };
                    reply(&mut writer, &r)?;
                }
                Step::Open { target, spec } => {
                    let r = match Session::open(&target, &spec, &options.host) {
                        Ok(s) => {
                            let endpoint = s.local().clone();
                            session = Some(s);
                            Reply::Ready { endpoint }
                        }
                        Err(e) => perf_error(&e),
                    };
                    machine.opened(session.is_some());
                    reply(&mut writer, &r)?;
                }
                Step::Connect(peer) => {
                    let r = match session.as_mut() {
                        Some(s) => match s.connect(&peer) {
                            Ok(()) => Reply::Connected,
                            Err(e) => perf_error(&e),
                        },
                        None => Reply::Error { cause: "connect before prepare".into(), remedy: "controller bug: prepare a test first".into() },
                    };
                    reply(&mut writer, &r)?;
                }
                Step::Run => {
                    let Some(s) = session.as_mut() else { continue };
                    signals.reset();
                    // `--report-every`: the figures of each interval, as `progress` replies.
                    let mut progress = |interval| reply(&mut writer, &Reply::Progress { interval });
                    let r = match perf::report_every::run(s, &signals, &mut progress) {
                        Ok(result) => Reply::Done { result },
                        Err(PerfError::Aborted) => return Ok(()),
                        Err(e) => perf_error(&e),
                    };
                    reply(&mut writer, &r)?;
                }
                Step::End => return ended,
            }
        }
    }
    Ok(())
}

/// The reader thread: lines in, events out; stop and abort are flagged at once.
fn read_requests<R: BufRead>(mut reader: R, tx: &channel::Sender<Event>, signals: &Signals) {
    loop {
        let event = match lines::read_line(&mut reader, protocol::MAX_LINE) {
            Ok(Some(line)) => match protocol::decode::<Request>(&line) {
                Ok(Request::Stop) => {
                    signals.request_stop();
                    Event::Request(Box::new(Request::Stop))
                }
                // Goodbye ends a running test at once: the controller is leaving.
                Ok(Request::Bye) => {
                    signals.request_abort();
                    Event::Request(Box::new(Request::Bye))
                }
                Ok(req) => Event::Request(Box::new(req)),
                Err(e) => {
                    signals.request_abort();
                    Event::Bad(e.to_string())
                }
            },
            // Oversized or not UTF-8: say why, then end the session.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                signals.request_abort();
                Event::Bad(e.to_string())
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                signals.request_abort();
                let _ = tx.send(Event::Truncated);
                return;
            }
            Ok(None) | Err(_) => {
                signals.request_abort();
                let _ = tx.send(Event::Closed);
                return;
            }
        };
        let last = matches!(&event, Event::Bad(_)) || matches!(&event, Event::Request(r) if matches!(**r, Request::Bye));
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

fn perf_error(e: &PerfError) -> Reply {
    Reply::Error { cause: e.cause(), remedy: e.remedy() }
}

/// This node's rails for `spec`: its ports from verbs, its PCI tree from /sys (for the GPU
/// order), resolved by `gpu::rails`.
fn rails_reply(spec: &crate::model::rails::RailSpec) -> Reply {
    match probe::test_inventory(None) {
        Ok(inventory) => {
            let tree = crate::probe::pci::read(Path::new("/sys"));
            match crate::gpu::rails::resolve(spec, &crate::gpu::rails::candidates(&inventory), tree.as_ref(), None) {
                Ok(rails) => {
                    let shared = tree.as_ref().map(|t| crate::gpu::rails::shared_uplinks(t, &rails)).unwrap_or_default();
                    Reply::Rails { rails, shared }
                }
                Err(e) => Reply::Error {
                    cause: e.to_string(),
                    remedy: "see `fabcheck devices` for this node's ports; name them with --rails DEV[:PORT],...".into(),
                },
            }
        }
        Err(e) => Reply::Error { cause: e.to_string(), remedy: e.remedy() },
    }
}
