//! Protection domain.

use super::device::{Context, ContextInner};
use super::error::{last_os_error, VerbsError};
use crate::loader as dl;
use rdma_sys as sys;
use std::sync::Arc;

pub(crate) struct PdInner {
    pub(crate) pd: *mut sys::ibv_pd,
    pub(crate) ctx: Arc<ContextInner>,
}

// SAFETY: a PD is a handle that libibverbs lets any thread use.
unsafe impl Send for PdInner {}
// SAFETY: as above.
unsafe impl Sync for PdInner {}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: pd came from ibv_alloc_pd; MRs and QPs hold an Arc to us, so none is alive.
        let rc = unsafe { dl::ibv_dealloc_pd(self.pd) };
        if rc != 0 {
            tracing::warn!(device = %self.ctx.name, rc, "ibv_dealloc_pd failed");
        }
    }
}

/// A protection domain; memory regions and queue pairs keep it (and the device) alive.
#[derive(Clone)]
pub struct ProtectionDomain {
    pub(crate) inner: Arc<PdInner>,
}

impl ProtectionDomain {
    pub fn new(ctx: &Context) -> Result<Self, VerbsError> {
        // SAFETY: ctx is open.
        let pd = unsafe { dl::ibv_alloc_pd(ctx.inner.ctx) };
        if pd.is_null() {
            return Err(VerbsError::AllocPd { device: ctx.inner.name.clone(), source: last_os_error() });
        }
        Ok(ProtectionDomain { inner: Arc::new(PdInner { pd, ctx: ctx.inner.clone() }) })
    }
}
