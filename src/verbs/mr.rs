//! Registered memory: a zeroed, page-aligned buffer owned together with its registration.

use super::error::{last_os_error, VerbsError};
use super::pd::{PdInner, ProtectionDomain};
use rdma_sys as sys;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::Arc;

/// Remote access a region grants. Local read is implicit; ask for no more than a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access(u32);

impl Access {
    pub const LOCAL_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0);
    pub const REMOTE_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0);
    pub const REMOTE_READ: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0);
    pub const NONE: Access = Access(0);

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

pub struct MemoryRegion {
    mr: *mut sys::ibv_mr,
    buf: *mut u8,
    layout: Layout,
    len: usize,
    access: Access,
    _pd: Arc<PdInner>,
}

// SAFETY: the region owns its buffer; the handle may move between threads.
unsafe impl Send for MemoryRegion {}

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
        // SAFETY: buf is valid for alloc_len bytes and outlives the registration (dropped after dereg).
        let mr = unsafe { sys::ibv_reg_mr(pd.inner.pd, buf.cast(), alloc_len, access.bits() as i32) };
        if mr.is_null() {
            let source = last_os_error();
            // SAFETY: buf came from alloc_zeroed with this layout and was never registered.
            unsafe { dealloc(buf, layout) };
            return Err(VerbsError::RegMr { len: alloc_len, source });
        }
        Ok(MemoryRegion { mr, buf, layout, len, access, _pd: pd.inner.clone() })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn access(&self) -> Access {
        self.access
    }

    pub fn addr(&self) -> u64 {
        self.buf as u64
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: mr is a live registration.
        unsafe { (*self.mr).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: mr is a live registration.
        unsafe { (*self.mr).rkey }
    }

    /// What a peer needs to reach this buffer.
    pub fn remote(&self) -> RemoteBuffer {
        RemoteBuffer { addr: self.addr(), rkey: self.rkey(), len: self.len as u64 }
    }

    /// Reads one byte the adapter may be writing concurrently (write latency polls on memory).
    #[inline(always)]
    pub fn read_volatile(&self, offset: usize) -> u8 {
        assert!(offset < self.len);
        // SAFETY: offset is in bounds; volatile because the HCA writes behind the compiler's back.
        unsafe { std::ptr::read_volatile(self.buf.add(offset)) }
    }

    #[inline(always)]
    pub fn write_volatile(&self, offset: usize, value: u8) {
        assert!(offset < self.len);
        // SAFETY: offset is in bounds; the buffer is ours.
        unsafe { std::ptr::write_volatile(self.buf.add(offset), value) }
    }

    /// Fills the first `len` bytes with `value`.
    pub fn fill(&self, value: u8) {
        // SAFETY: the buffer holds at least len bytes.
        unsafe { std::ptr::write_bytes(self.buf, value, self.len) }
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: mr is live; queue pairs that used it are dropped first by the engines' field order.
        let rc = unsafe { sys::ibv_dereg_mr(self.mr) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_dereg_mr failed; leaking the buffer rather than freeing registered memory");
            return;
        }
        // SAFETY: buf came from alloc_zeroed with this layout and is no longer registered.
        unsafe { dealloc(self.buf, self.layout) };
    }
}
