//! Runs conversations with agents over one [`Hub`], on one thread.
//!
//! A conversation is a pure state machine: it is told of replies, lost channels and its own
//! deadline, and answers with the requests to send. `drive` routes the hub's events to the
//! conversation that owns each link, keeps at most `window` conversations going, and checks
//! for Ctrl-C between wake-ups, so a mesh round of 500 pairs costs no thread per pair.

use super::hub::{Hub, HubEvent, LinkId};
use super::protocol::{Reply, Request};
use crate::outcome::loss::{Loss, LossKind};
use std::time::{Duration, Instant};

/// What a conversation asks for after an input.
#[derive(Debug, Default)]
pub struct Actions {
    /// Requests, by side (index into the job's links).
    pub sends: Vec<(usize, Request)>,
    /// Sides whose channel is out of step and must be closed (the agent is started afresh
    /// next time).
    pub discard: Vec<usize>,
}

impl Actions {
    pub fn send(&mut self, side: usize, request: Request) {
        self.sends.push((side, request));
    }
}

pub trait Conversation {
    fn start(&mut self, now: Instant, act: &mut Actions);
    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions);
    /// The side's channel ended (`loss` says why, naming the agent).
    fn on_lost(&mut self, side: usize, loss: Loss, now: Instant, act: &mut Actions);
    /// Called once the deadline returned by `deadline` has passed.
    fn on_deadline(&mut self, now: Instant, act: &mut Actions);
    fn deadline(&self) -> Option<Instant>;
    fn is_done(&self) -> bool;
}

/// A conversation lent by its owner (who reads it once it is driven) is driven as itself.
impl<C: Conversation + ?Sized> Conversation for &mut C {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        (**self).start(now, act);
    }
    fn on_reply(&mut self, side: usize, reply: Reply, now: Instant, act: &mut Actions) {
        (**self).on_reply(side, reply, now, act);
    }
    fn on_lost(&mut self, side: usize, loss: Loss, now: Instant, act: &mut Actions) {
        (**self).on_lost(side, loss, now, act);
    }
    fn on_deadline(&mut self, now: Instant, act: &mut Actions) {
        (**self).on_deadline(now, act);
    }
    fn deadline(&self) -> Option<Instant> {
        (**self).deadline()
    }
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
}

/// A conversation and the links it talks over (side `i` is `links[i]`).
pub struct Job<C> {
    pub links: Vec<LinkId>,
    pub conversation: C,
}

/// Longest sleep between checks for Ctrl-C.
const TICK: Duration = Duration::from_millis(100);

/// Runs every job to its end, at most `window` at once, in order. Two jobs running at once
/// must not share a link. Returns early only on Ctrl-C or SIGTERM (the caller then closes
/// the hub, which stops every agent).
pub fn drive<C: Conversation>(hub: &mut Hub, jobs: &mut [Job<C>], window: usize) -> Result<(), Loss> {
    let mut owner: Vec<Option<(usize, usize)>> = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut events = Vec::new();
    let mut act = Actions::default();
    loop {
        while active.len() < window.max(1) && next < jobs.len() {
            let j = next;
            next += 1;
            for (side, &link) in jobs[j].links.iter().enumerate() {
                if owner.len() <= link {
                    owner.resize(link + 1, None);
                }
                owner[link] = Some((j, side));
            }
            jobs[j].conversation.start(Instant::now(), &mut act);
            apply(hub, &jobs[j].links, &mut act);
            active.push(j);
        }
        active.retain(|&j| {
            let done = jobs[j].conversation.is_done();
            if done {
                for &link in &jobs[j].links {
                    owner[link] = None;
                }
            }
            !done
        });
        if active.is_empty() && next >= jobs.len() {
            return Ok(());
        }
        if crate::sys::os::interrupted() {
            return Err(Loss::new("", LossKind::Interrupted));
        }
        let now = Instant::now();
        let soonest = active.iter().filter_map(|&j| jobs[j].conversation.deadline()).min();
        let timeout = soonest.map_or(TICK, |d| d.saturating_duration_since(now).min(TICK));
        events.clear();
        hub.wait(timeout, &mut events);
        let now = Instant::now();
        for event in events.drain(..) {
            let link = match &event {
                HubEvent::Reply(l, _) | HubEvent::Lost(l, _) => *l,
            };
            let Some((j, side)) = owner.get(link).copied().flatten() else {
                // A link no running conversation owns: a late reply is dropped; a loss is
                // noticed by whoever sends to it next.
                tracing::debug!(link, "event for an idle link");
                continue;
            };
            if jobs[j].conversation.is_done() {
                // Ended on an earlier event of this batch (an agent that answers an error and
                // hangs up): the hang-up changes nothing.
                continue;
            }
            match event {
                HubEvent::Reply(_, reply) => jobs[j].conversation.on_reply(side, *reply, now, &mut act),
                HubEvent::Lost(_, loss) => jobs[j].conversation.on_lost(side, loss, now, &mut act),
            }
            apply(hub, &jobs[j].links, &mut act);
        }
        for &j in &active {
            let c = &mut jobs[j].conversation;
            if !c.is_done() && c.deadline().is_some_and(|d| d <= now) {
                c.on_deadline(now, &mut act);
                apply(hub, &jobs[j].links, &mut act);
            }
        }
    }
}

fn apply(hub: &mut Hub, links: &[LinkId], act: &mut Actions) {
    for (side, request) in act.sends.drain(..) {
        hub.send(links[side], &request);
    }
    for side in act.discard.drain(..) {
        hub.discard(links[side]);
    }
}
