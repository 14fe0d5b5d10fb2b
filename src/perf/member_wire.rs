//! The verbs under a member's step loop: posts are pre-built writes with immediate, polls take
//! both CQs in one batch, receives are re-posted from each inbound hop's fixed list. And the
//! run around the loop: counters before and after, errors named by hop and peer.

use super::member::{MemberSession, RECV_DEPTH};
use super::member_loop::{self, Event, LoopError, Monotonic, Waiting, Wire, POLL_BATCH};
use super::Signals;
use crate::model::collective::MemberResult;
use crate::model::member_wire::RING_SLOTS;
use fabcheck_verbs::{VerbsError, WorkCompletion, WrId};

struct VerbsWire<'a> {
    s: &'a mut MemberSession,
    wcs: [WorkCompletion; POLL_BATCH],
    /// Next receive WR to post, per inbound lane.
    cursors: Vec<u32>,
    /// `--report-every`: bytes whose writes completed, stored for the reporter thread.
    live: &'a super::live::Live,
    sent_bytes: u64,
    chunk_bytes: u64,
}

impl Wire for VerbsWire<'_> {
    #[inline(always)]
    fn post(&mut self, lane: usize, seq: u64) -> Result<(), VerbsError> {
        // Lanes of a hop share its peer's ring: chunk `seq` goes to slot `seq` mod the slots.
        let h = &mut self.s.out[lane];
        let Some(writer) = h.writer.as_mut() else { return Err(VerbsError::EmptyList) };
        let seq = seq as u32;
        writer.post(&mut h.qp, seq % RING_SLOTS, seq, WrId::new(lane as u32, seq), true)
    }

    #[inline(always)]
    fn poll(&mut self, events: &mut [Event; POLL_BATCH]) -> Result<usize, VerbsError> {
        let sent = self.s.send_cq.poll(&mut self.wcs)?;
        for (e, wc) in events.iter_mut().zip(&self.wcs[..sent]) {
            let id = wc.wr_id();
            *e = if wc.is_success() {
                self.sent_bytes += self.chunk_bytes;
                Event::Sent { hop: id.qp, seq: id.slot }
            } else {
                Event::Failed { outbound: true, hop: id.qp, status: wc.status() }
            };
        }
        if sent > 0 {
            // One relaxed store for the reporter (a plain store: no lock, no allocation).
            self.live.set_bytes(self.sent_bytes);
        }
        let arrived = self.s.recv_cq.poll(&mut self.wcs[..POLL_BATCH - sent])?;
        for (e, wc) in events[sent..].iter_mut().zip(&self.wcs[..arrived]) {
            let id = wc.wr_id();
            *e = match wc.imm_data() {
                Some(imm) if wc.is_success() && wc.is_write_imm_arrival() => Event::Arrived { hop: id.qp, imm },
                _ => Event::Failed { outbound: false, hop: id.qp, status: wc.status() },
            };
        }
        Ok(sent + arrived)
    }

    #[inline(always)]
    fn repost(&mut self, lane: usize, count: u32) -> Result<(), VerbsError> {
        let h = &mut self.s.inb[lane];
        let first = self.cursors[lane];
        // RECV_DEPTH is a multiple of the batch: a batch never wraps.
        h.recvs.post(&mut h.qp, first as usize, count as usize)?;
        self.cursors[lane] = (first + count) % RECV_DEPTH;
        Ok(())
    }
}

/// Why a member's run gave no result.
#[derive(Debug)]
pub enum MemberError {
    /// The controller left or aborted.
    Aborted,
    Failed {
        cause: String,
        remedy: String,
    },
}

/// Runs the connected member's plan; errors name the hop and its peer.
pub fn run(s: &mut MemberSession, signals: &Signals) -> Result<MemberResult, MemberError> {
    if !s.is_connected() {
        return Err(MemberError::Failed {
            cause: "run before connect_hops".into(),
            remedy: "controller bug: connect the member's hops first".into(),
        });
    }
    let sys = std::path::Path::new("/sys");
    let before = super::counters::snapshot(sys, &s.device, s.port);
    let window = super::member_counters::start(&s.device, s.port);
    let plan = s.plan.clone();
    let stall_ms = s.stall_ms;
    let cursors = vec![0; s.inb.len()];
    let mut clock = Monotonic::start();
    let tally = {
        let chunk_bytes = u64::from(plan.chunk_bytes);
        let mut wire =
            VerbsWire { s: &mut *s, wcs: WorkCompletion::blank_array::<POLL_BATCH>(), cursors, live: &signals.live, sent_bytes: 0, chunk_bytes };
        member_loop::run_steps(&mut wire, &mut clock, &plan, signals, stall_ms)
    };
    let tally = tally.map_err(|e| failure(s, e))?;
    let mut result = member_loop::summarise(&plan, &tally);
    result.counter_deltas = super::counters::deltas(&before, &super::counters::snapshot(sys, &s.device, s.port));
    result.window = Some(super::member_counters::finish(&s.device, s.port, window));
    Ok(result)
}

/// [`run`], and with the plan's `report_every_ms` the member's send rate over each interval
/// handed to `send` while it runs (a `send` that fails, the controller gone, aborts the run).
pub fn run_reporting(
    s: &mut MemberSession,
    signals: &Signals,
    send: &mut dyn FnMut(crate::model::Interval) -> std::io::Result<()>,
) -> Result<MemberResult, MemberError> {
    signals.live.arm(false);
    let Some(ms) = s.plan.report_every_ms else { return run(s, signals) };
    let every = std::time::Duration::from_millis(ms);
    super::member_report::report_while(
        || run(s, signals),
        &signals.live,
        every,
        |interval| {
            if send(interval).is_err() {
                signals.request_abort();
            }
        },
    )
}

/// The loop's error in words, naming the hop by id and its peer by host (and, with `--paths`,
/// the lane's path by its UDP source port).
fn failure(s: &MemberSession, e: LoopError) -> MemberError {
    let out = |i: usize| s.out.get(i).map_or((0, ""), |h| (h.hop.0, h.peer.as_str()));
    let inb = |i: usize| s.inb.get(i).map_or((0, ""), |h| (h.hop.0, h.peer.as_str()));
    let labelled = s.plan.paths > 1;
    let path = |outbound: bool, i: usize| {
        let k = if outbound { s.out.get(i).map(|h| h.path) } else { s.inb.get(i).map(|h| h.path) };
        match k {
            Some(k) if labelled => {
                format!(" (path {k}, UDP source port {})", crate::model::paths::flow_label_to_udp_sport(crate::model::paths::flow_label(k)))
            }
            _ => String::new(),
        }
    };
    let side = |outbound: bool, i: usize| {
        if outbound {
            let (id, peer) = out(i);
            format!("hop {id} to {peer}{}", path(true, i))
        } else {
            let (id, peer) = inb(i);
            format!("hop {id} from {peer}{}", path(false, i))
        }
    };
    let (cause, remedy) = match e {
        LoopError::Aborted => return MemberError::Aborted,
        LoopError::Completion { outbound, hop, status } => {
            let (what, remedy) = super::completion_remedy(status);
            (format!("{}: {what} ({})", side(outbound, hop), fabcheck_verbs::status_text(status)), remedy.to_string())
        }
        LoopError::Verbs { outbound, hop, error } => (format!("{}: {error}", side(outbound, hop)), "run `fabcheck check` on this node".into()),
        LoopError::Poll(error) => (format!("polling the member's completions: {error}"), "run `fabcheck check` on this node".into()),
        LoopError::Stalled { waiting: Waiting::Arrival(i), waited_ms } => (
            format!("{}: no chunk arrived for {waited_ms} ms", side(false, i)),
            format!("the sender on {} stopped or its link is down: check its agent and run `fabcheck check` on both nodes", inb(i).1),
        ),
        LoopError::Stalled { waiting: Waiting::Room(i) | Waiting::Drain(i), waited_ms } => (
            format!("{}: no write completed for {waited_ms} ms", side(true, i)),
            format!("the receiver on {} stopped acknowledging: check its agent and run `fabcheck check` on both nodes", out(i).1),
        ),
        LoopError::OutOfOrder { hop, expected, got } => (
            format!("{}: chunk {got} arrived where chunk {expected} was due", side(false, hop)),
            "RC delivers in order: report this with both nodes' `fabcheck bundle`".into(),
        ),
    };
    MemberError::Failed { cause, remedy }
}
