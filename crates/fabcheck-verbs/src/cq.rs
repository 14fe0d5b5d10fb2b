//! Completion queue and work completions.

use super::device::{Context, ContextInner};
use super::error::{last_os_error, VerbsError};
use super::wr_id::WrId;
use crate::loader as dl;
use rdma_sys as sys;
use std::sync::Arc;
mod imm;

pub(crate) struct CqInner {
    pub(crate) cq: *mut sys::ibv_cq,
    /// The completion channel its events go to (`--events`); outlives the CQ.
    channel: Option<Arc<ChannelInner>>,
    _ctx: Arc<ContextInner>,
}

/// A completion channel (perftest's `-e`): a file descriptor that becomes readable when an
/// armed CQ gets a completion, so a waiting side sleeps in poll(2) instead of spinning.
pub struct CompletionChannel {
    inner: Arc<ChannelInner>,
}

struct ChannelInner {
    ch: *mut sys::ibv_comp_channel,
    _ctx: Arc<ContextInner>,
}

// SAFETY: the channel is a file descriptor and its struct; it is read (get_cq_event) only
// through `CompletionQueue::wait_event`, which takes `&mut` of the one CQ that owns the read,
// and destroyed once, at the last drop (after every CQ on it, which hold an Arc).
unsafe impl Send for ChannelInner {}
// SAFETY: as above; shared holders only keep the pointer alive.
unsafe impl Sync for ChannelInner {}

impl Drop for ChannelInner {
    fn drop(&mut self) {
        // SAFETY: ch came from ibv_create_comp_channel; the CQs on it hold an Arc, so they are gone.
        let rc = unsafe { dl::ibv_destroy_comp_channel(self.ch) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_comp_channel failed");
        }
    }
}

impl CompletionChannel {
    pub fn new(ctx: &Context) -> Result<Self, VerbsError> {
        // SAFETY: ctx is open.
        let ch = unsafe { dl::ibv_create_comp_channel(ctx.inner.ctx) };
        if ch.is_null() {
            return Err(VerbsError::CreateCompChannel { source: last_os_error() });
        }
        Ok(CompletionChannel { inner: Arc::new(ChannelInner { ch, _ctx: ctx.inner.clone() }) })
    }
}

// SAFETY: the CQ may be destroyed or polled from any thread (libibverbs ties it to no thread).
// Polling goes only through `CompletionQueue::poll`, which takes `&mut` of a handle that is
// not `Clone`, so one thread polls at a time however the provider locks (mlx5 drops its CQ
// lock under MLX5_SINGLE_THREADED, so "providers lock" would not be a reason).
unsafe impl Send for CqInner {}
// SAFETY: shared holders (the QPs using the CQ, through `Arc`) only read the pointer to keep
// it alive and destroy it once, at the last drop; none polls.
unsafe impl Sync for CqInner {}

impl Drop for CqInner {
    fn drop(&mut self) {
        // SAFETY: cq came from ibv_create_cq; QPs using it hold an Arc to us, so they are gone.
        let rc = unsafe { dl::ibv_destroy_cq(self.cq) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_cq failed");
        }
    }
}

/// A completion queue. Not `Clone`, and `poll` takes `&mut self`: one poller at a time is a
/// property of the types, not a rule for callers (`tests/ui/cq_shared_poll.rs`). QPs keep
/// what they need of it alive on their own.
pub struct CompletionQueue {
    pub(crate) inner: Arc<CqInner>,
    cqe: u32,
}

/// One work completion; layout-identical to `struct ibv_wc` so a slice goes straight to poll.
#[repr(transparent)]
pub struct WorkCompletion(sys::ibv_wc);

impl WorkCompletion {
    /// An array of blank completions to poll into (allocated once, before the measured loop).
    pub fn blank_array<const N: usize>() -> [WorkCompletion; N] {
        // SAFETY: ibv_wc is plain old data; zeroed is a valid (if meaningless) value.
        std::array::from_fn(|_| WorkCompletion(unsafe { std::mem::zeroed() }))
    }

    /// Which QP and list slot the completed work request was.
    #[inline(always)]
    pub fn wr_id(&self) -> WrId {
        WrId::from_raw(self.0.wr_id)
    }

    #[inline(always)]
    pub fn is_success(&self) -> bool {
        self.0.status == sys::ibv_wc_status::IBV_WC_SUCCESS
    }

    pub fn status(&self) -> u32 {
        self.0.status
    }

    pub fn vendor_err(&self) -> u32 {
        self.0.vendor_err
    }

    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }

    /// As an error, naming the status the way `ibv_wc_status_str` does.
    pub fn to_error(&self) -> VerbsError {
        VerbsError::Completion { wr_id: self.0.wr_id, status: self.0.status, status_text: status_text(self.0.status), vendor_err: self.0.vendor_err }
    }
}

/// What `ibv_wc_status_str` says for a status ("transport retry counter exceeded", "Work
/// Request Flushed Error", ...), the same words without calling libibverbs, so a status can be
/// explained where the library is not loaded (a status read off the wire from an agent).
pub fn status_text(status: u32) -> String {
    WC_STATUS_TEXT.get(status as usize).copied().unwrap_or("unknown").to_owned()
}

/// rdma-core's `wc_status_str` table, indexed by `enum ibv_wc_status` (0 ..= 23).
const WC_STATUS_TEXT: [&str; 24] = [
    "success",
    "local length error",
    "local QP operation error",
    "local EE context operation error",
    "local protection error",
    "Work Request Flushed Error",
    "memory management operation error",
    "bad response error",
    "local access error",
    "remote invalid request error",
    "remote access error",
    "remote operation error",
    "transport retry counter exceeded",
    "RNR retry counter exceeded",
    "local RDD violation error",
    "remote invalid RD request",
    "aborted error",
    "invalid EE context number",
    "invalid EE context state",
    "fatal error",
    "response timeout error",
    "general error",
    "TM error",
    "TM software rendezvous",
];

/// Completion statuses fabcheck explains (`IBV_WC_*`).
pub mod status {
    use rdma_sys::ibv_wc_status as s;
    pub const RETRY_EXCEEDED: u32 = s::IBV_WC_RETRY_EXC_ERR;
    pub const RNR_RETRY_EXCEEDED: u32 = s::IBV_WC_RNR_RETRY_EXC_ERR;
    pub const FLUSHED: u32 = s::IBV_WC_WR_FLUSH_ERR;
    pub const REMOTE_ACCESS: u32 = s::IBV_WC_REM_ACCESS_ERR;
    pub const LOCAL_PROTECTION: u32 = s::IBV_WC_LOC_PROT_ERR;
    pub const LOCAL_QP_OPERATION: u32 = s::IBV_WC_LOC_QP_OP_ERR;
    pub const REMOTE_INVALID_REQUEST: u32 = s::IBV_WC_REM_INV_REQ_ERR;
}

impl CompletionQueue {
    pub fn new(ctx: &Context, cqe: u32) -> Result<Self, VerbsError> {
        // SAFETY: ctx is open; no channel, no context pointer.
        let cq = unsafe { dl::ibv_create_cq(ctx.inner.ctx, cqe as i32, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        if cq.is_null() {
            return Err(VerbsError::CreateCq { cqe, source: last_os_error() });
        }
        Ok(CompletionQueue { inner: Arc::new(CqInner { cq, channel: None, _ctx: ctx.inner.clone() }), cqe })
    }

    /// A CQ whose completions, once armed ([`CompletionQueue::arm`]), raise an event on `channel`.
    /// One CQ per channel: [`CompletionQueue::wait_event`] takes whatever event the channel has.
    pub fn with_channel(ctx: &Context, cqe: u32, channel: &CompletionChannel) -> Result<Self, VerbsError> {
        // SAFETY: ctx is open; the channel is alive (and held by the CQ from here on).
        let cq = unsafe { dl::ibv_create_cq(ctx.inner.ctx, cqe as i32, std::ptr::null_mut(), channel.inner.ch, 0) };
        if cq.is_null() {
            return Err(VerbsError::CreateCq { cqe, source: last_os_error() });
        }
        Ok(CompletionQueue { inner: Arc::new(CqInner { cq, channel: Some(channel.inner.clone()), _ctx: ctx.inner.clone() }), cqe })
    }

    /// Whether this CQ reports to a completion channel.
    #[inline(always)]
    pub fn has_channel(&self) -> bool {
        self.inner.channel.is_some()
    }

    /// Asks for an event at the next completion (`ibv_req_notify_cq`). Poll once more after
    /// arming: a completion that came in before it raises no event.
    pub fn arm(&mut self) -> Result<(), VerbsError> {
        // SAFETY: the CQ is alive; `&mut self`: no other thread uses it.
        let rc = unsafe { sys::ibv_req_notify_cq(self.inner.cq, 0) };
        if rc != 0 {
            return Err(VerbsError::CqEvent { source: std::io::Error::from_raw_os_error(rc.abs()) });
        }
        Ok(())
    }

    /// Sleeps until the channel has an event or `timeout` passes; an event is taken,
    /// acknowledged at once (so the CQ can always be destroyed) and the CQ armed again before
    /// the caller polls, so no completion goes unannounced (perftest's `ctx_notify_events`).
    /// The CQ must have been armed once before the traffic. `Ok(false)`: the time passed.
    /// Without a channel it returns at once with `Ok(true)` (the caller polls).
    pub fn wait_event(&mut self, timeout: std::time::Duration) -> Result<bool, VerbsError> {
        let Some(channel) = &self.inner.channel else { return Ok(true) };
        // SAFETY: the channel struct is alive (held through self.inner); its fd field is plain data.
        let fd = unsafe { (*channel.ch).fd };
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, its count 1.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = last_os_error();
            return if e.kind() == std::io::ErrorKind::Interrupted { Ok(false) } else { Err(VerbsError::CqEvent { source: e }) };
        }
        if n == 0 {
            return Ok(false);
        }
        let mut cq: *mut sys::ibv_cq = std::ptr::null_mut();
        let mut context: *mut std::os::raw::c_void = std::ptr::null_mut();
        // SAFETY: the channel is readable, so this does not block; both out-pointers are ours.
        let rc = unsafe { dl::ibv_get_cq_event(channel.ch, &mut cq, &mut context) };
        if rc != 0 {
            return Err(VerbsError::CqEvent { source: last_os_error() });
        }
        // SAFETY: the event named a CQ of this channel (this one: one CQ per channel), alive.
        unsafe { dl::ibv_ack_cq_events(cq, 1) };
        self.arm()?;
        Ok(true)
    }

    pub fn capacity(&self) -> u32 {
        self.cqe
    }

    /// Polls up to `out.len()` completions without blocking; returns how many were written.
    #[inline(always)]
    pub fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize, VerbsError> {
        // SAFETY: out is a writable array of ibv_wc (repr(transparent)); its length bounds the
        // write. `&mut self` on a handle that is not Clone: no other thread polls this CQ now.
        let n = unsafe { sys::ibv_poll_cq(self.inner.cq, out.len() as i32, out.as_mut_ptr().cast()) };
        if n < 0 {
            return Err(VerbsError::PollCq { code: n });
        }
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is rdma-core's words: compared with the installed library's own function
    /// (the host tier installs it), and past the end as the library says, "unknown".
    #[test]
    fn status_words_are_libibverbs_own() {
        // SAFETY: loading libibverbs runs its constructors, which take no input from us.
        let library = unsafe { libloading::Library::new(crate::LIBIBVERBS) }.expect("libibverbs.so.1 is installed on the test host");
        // SAFETY: the C prototype is `const char *ibv_wc_status_str(enum ibv_wc_status)`.
        let words = unsafe { library.get::<unsafe extern "C" fn(u32) -> *const std::os::raw::c_char>(b"ibv_wc_status_str\0") }.expect("exported");
        for status in 0..40u32 {
            // SAFETY: the function returns a static NUL-terminated string for any value.
            let theirs = unsafe { std::ffi::CStr::from_ptr(words(status)) }.to_string_lossy().into_owned();
            assert_eq!(status_text(status), theirs, "status {status}");
        }
    }
}
