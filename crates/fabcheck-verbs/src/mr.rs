//! Registered memory: a zeroed, page-aligned buffer owned together with its registration.

use super::error::{last_os_error, VerbsError};
use super::pd::{PdInner, ProtectionDomain};
use crate::loader as dl;
use rdma_sys as sys;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Arc;

/// Remote access a region grants. Local read is implicit; ask for no more than a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access(u32);

impl Access {
    pub const LOCAL_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0);
    pub const REMOTE_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0);
    pub const REMOTE_READ: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0);
    pub const NONE: Access = Access(0);
    /// `IBV_ACCESS_RELAXED_ORDERING` (`IBV_ACCESS_OPTIONAL_FIRST`): the adapter may reorder its
    /// PCIe writes into the buffer. An optional flag: where unsupported it is ignored.
    pub const RELAXED_ORDERING: Access = Access(1 << 20);

    pub fn bits(self) -> u32 {
        self.0
    }

    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// Where a peer's buffer is, for RDMA write and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteBuffer {
    pub addr: u64,
    pub rkey: u32,
    pub len: u64,
}

/// The registration and its buffer; shared (`Arc`) by the region and by every work-request
/// list that points into it, so the memory outlives anything the adapter may still read.
pub(crate) struct MrInner {
    mr: *mut sys::ibv_mr,
    buf: *mut u8,
    layout: Layout,
    len: usize,
    access: Access,
    _pd: Arc<PdInner>,
}

// SAFETY: the region owns its buffer and registration; both are plain memory and a handle that
// libibverbs lets any thread use. Shared access only reads the keys or goes through volatile
// byte accesses, which are the adapter's concurrency model anyway.
unsafe impl Send for MrInner {}
// SAFETY: as above.
unsafe impl Sync for MrInner {}

impl MrInner {
    /// Address of byte `offset`, if `offset..offset + len` lies inside the buffer.
    pub(crate) fn checked_addr(&self, offset: usize, len: usize) -> Option<u64> {
        let end = offset.checked_add(len)?;
        (end <= self.len.max(1)).then(|| self.buf as u64 + offset as u64)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: mr is a live registration for as long as self lives.
        unsafe { (*self.mr).lkey }
    }
}

/// A zeroed, page-aligned buffer registered with a protection domain. Work-request lists
/// built on it hold it alive; every address they use is checked against its bounds.
///
/// A region may move to another thread but is not shared between threads (`!Sync`): its byte
/// accessors are volatile, not atomic.
pub struct MemoryRegion {
    pub(crate) inner: Arc<MrInner>,
    _not_sync: PhantomData<Cell<()>>,
}

const PAGE: usize = 4096;

impl MemoryRegion {
    /// Allocates `len` zeroed bytes (page aligned) and registers them with `access`.
    pub fn new(pd: &ProtectionDomain, len: usize, access: Access) -> Result<Self, VerbsError> {
        let alloc_len = len.max(64).next_multiple_of(PAGE);
        let layout = Layout::from_size_align(alloc_len, PAGE).map_err(|_| VerbsError::Alloc { len })?;
        // SAFETY: layout has a non-zero size.
        let buf = unsafe { alloc_zeroed(layout) };
        if buf.is_null() {
            return Err(VerbsError::Alloc { len });
        }
        // SAFETY: buf is valid for alloc_len bytes and outlives the registration (freed after dereg).
        let mr = unsafe { dl::ibv_reg_mr(pd.inner.pd, buf.cast(), alloc_len, access.bits() as i32) };
        if mr.is_null() {
            let source = last_os_error();
            // SAFETY: buf came from alloc_zeroed with this layout and was never registered.
            unsafe { dealloc(buf, layout) };
            return Err(VerbsError::RegMr { len: alloc_len, source });
        }
        Ok(MemoryRegion { inner: Arc::new(MrInner { mr, buf, layout, len, access, _pd: pd.inner.clone() }), _not_sync: PhantomData })
    }

    pub fn len(&self) -> usize {
        self.inner.len
    }

    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    pub fn access(&self) -> Access {
        self.inner.access
    }

    pub fn addr(&self) -> u64 {
        self.inner.buf as u64
    }

    pub fn lkey(&self) -> u32 {
        self.inner.lkey()
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: mr is a live registration.
        unsafe { (*self.inner.mr).rkey }
    }

    /// What a peer needs to reach this buffer.
    pub fn remote(&self) -> RemoteBuffer {
        RemoteBuffer { addr: self.addr(), rkey: self.rkey(), len: self.inner.len as u64 }
    }

    /// Reads one byte the adapter may be writing concurrently (write latency polls on memory).
    #[inline(always)]
    pub fn read_volatile(&self, offset: usize) -> u8 {
        assert!(offset < self.inner.len);
        // SAFETY: offset is in bounds; volatile because the HCA writes behind the compiler's back.
        unsafe { std::ptr::read_volatile(self.inner.buf.add(offset)) }
    }

    #[inline(always)]
    pub fn write_volatile(&self, offset: usize, value: u8) {
        assert!(offset < self.inner.len);
        // SAFETY: offset is in bounds; a single-byte volatile store races with nothing the
        // compiler can see (only the adapter, which owns that race by design).
        unsafe { std::ptr::write_volatile(self.inner.buf.add(offset), value) }
    }
}

impl Drop for MrInner {
    fn drop(&mut self) {
        // SAFETY: mr is live and this is the last handle: no region or work-request list
        // points into it any more. In-flight work on a QP fails with a protection error once
        // deregistered; it can no longer reach the buffer freed below.
        let rc = unsafe { dl::ibv_dereg_mr(self.mr) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_dereg_mr failed; leaking the buffer rather than freeing registered memory");
            return;
        }
        // SAFETY: buf came from alloc_zeroed with this layout and is no longer registered.
        unsafe { dealloc(self.buf, self.layout) };
    }
}
