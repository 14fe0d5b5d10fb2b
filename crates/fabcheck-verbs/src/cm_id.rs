//! What rdma_cm objects are underneath, shared by `Arc` among their holders: an event channel
//! and an id. A leaf of the crate: contexts (`device`) and queue pairs (`qp`) made on an id
//! hold one of these, and `cm` builds on all three.

use crate::loader as dl;
use rdma_sys as sys;
use std::sync::Arc;

pub(crate) struct ChannelInner {
    pub(crate) ch: *mut sys::rdma_event_channel,
}

// SAFETY: the channel is a file descriptor wrapper; librdmacm allows use from any thread.
unsafe impl Send for ChannelInner {}
// SAFETY: as above; events are read by one owner at a time.
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
    pub(crate) _channel: Arc<ChannelInner>,
}

// SAFETY: an id may be used from any thread; the verbs that change it take `&mut CmId` or
// happen during construction, so no two threads drive one id at once.
unsafe impl Send for CmIdInner {}
// SAFETY: as above; shared holders (a QP, a borrowed context) only read its fields.
unsafe impl Sync for CmIdInner {}

impl Drop for CmIdInner {
    fn drop(&mut self) {
        // SAFETY: id is valid and this is its last holder: a QP created on it holds an Arc to
        // us and destroyed itself (rdma_destroy_qp) before letting go.
        let rc = unsafe { dl::rdma_destroy_id(self.id) };
        if rc != 0 {
            tracing::warn!(rc, "rdma_destroy_id failed");
        }
    }
}
