//! What rdma_cm objects are underneath, shared by `Arc` among their holders: an event channel
//! and an id. A leaf of the crate: contexts (`device`) and queue pairs (`qp`) made on an id
//! hold one of these, and `cm` builds on all three.

use crate::loader as dl;
use rdma_sys as sys;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub(crate) struct ChannelInner {
    pub(crate) ch: *mut sys::rdma_event_channel,
    /// Held around every librdmacm call on this channel or on an id made on it. Reading an
    /// event makes librdmacm act on its id (move its QP to RTR and RTS, fill its route), and a
    /// QP made on an id is destroyed through the id: without one lock per channel, a thread
    /// reading events, a thread driving an id and a thread dropping its QP could all be inside
    /// librdmacm on one id at once. Never held across a wait; nothing else is locked under it.
    calls: Mutex<()>,
}

impl ChannelInner {
    pub(crate) fn new(ch: *mut sys::rdma_event_channel) -> ChannelInner {
        ChannelInner { ch, calls: Mutex::new(()) }
    }

    /// The right to call librdmacm on this channel or its ids, until the guard drops.
    pub(crate) fn serialise(&self) -> MutexGuard<'_, ()> {
        // A panic under the lock left no librdmacm call half made: the lock guards no data.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// SAFETY: the channel is a file descriptor wrapper; librdmacm allows use from any thread.
unsafe impl Send for ChannelInner {}
// SAFETY: every librdmacm call through a shared channel (reading and acking an event) holds
// `calls`, so no two threads are inside librdmacm for this channel at once.
unsafe impl Sync for ChannelInner {}

impl Drop for ChannelInner {
    fn drop(&mut self) {
        // SAFETY: every id on the channel holds an Arc to us, so all are destroyed by now.
        unsafe { dl::rdma_destroy_event_channel(self.ch) };
    }
}

/// The id itself, shared by its [`CmId`], the QP created on it and any context borrowed from
/// it: destroyed when the last of them is gone, so teardown order is never the caller's job.
pub(crate) struct CmIdInner {
    pub(crate) id: *mut sys::rdma_cm_id,
    pub(crate) channel: Arc<ChannelInner>,
}

impl CmIdInner {
    /// The right to call librdmacm on this id (its channel's lock), until the guard drops.
    pub(crate) fn serialise(&self) -> MutexGuard<'_, ()> {
        self.channel.serialise()
    }
}

// SAFETY: an id may be used from any thread; the verbs that change it take `&mut CmId`, and
// every librdmacm call on it holds its channel's lock (`serialise`), so no two threads are
// inside librdmacm for one id at once.
unsafe impl Send for CmIdInner {}
// SAFETY: as above: shared holders (a QP's drop, a borrowed context, `CmId`'s readers) call
// librdmacm on the id only under the channel's lock.
unsafe impl Sync for CmIdInner {}

impl Drop for CmIdInner {
    fn drop(&mut self) {
        let _one = self.channel.serialise();
        // SAFETY: id is valid and this is its last holder: a QP created on it holds an Arc to
        // us and destroyed itself (rdma_destroy_qp) before letting go. Every event of the id
        // was acked under the lock we hold, so rdma_destroy_id waits for none.
        let rc = unsafe { dl::rdma_destroy_id(self.id) };
        if rc != 0 {
            tracing::warn!(rc, "rdma_destroy_id failed");
        }
    }
}
