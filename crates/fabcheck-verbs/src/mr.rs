//! Registered memory: a zeroed, page-aligned buffer owned together with its registration, or
//! GPU memory ([`DeviceBuffer`]) registered through dma-buf or peer memory.

use super::error::{last_os_error, VerbsError};
use super::pd::{PdInner, ProtectionDomain};
use crate::cuda::{DeviceBuffer, DmabufExport};
use crate::loader as dl;
use rdma_sys as sys;
use std::cell::Cell;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

/// Remote access a region grants. Local read is implicit; ask for no more than a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access(u32);

impl Access {
    pub const LOCAL_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0);
    pub const REMOTE_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0);
    pub const REMOTE_READ: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0);
    /// Atomics may target the region (the target of atomic_lat/atomic_bw only; the verbs
    /// spec requires LOCAL_WRITE with it).
    pub const REMOTE_ATOMIC: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0);
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
    backing: Backing,
    len: usize,
    access: Access,
    _pd: Arc<PdInner>,
}

/// Where a region's bytes live, and so who frees them (after the registration is gone).
enum Backing {
    /// Host memory: a mapping of this many bytes from `pages::map`.
    Host { mapped: usize },
    /// GPU memory: freed when the buffer drops, after the region's `ibv_dereg_mr`; the
    /// dma-buf descriptor (when registered through one) is closed after it too.
    Device { _buffer: DeviceBuffer, _dmabuf: Option<OwnedFd> },
}

/// How a region's memory was registered: the side's `mem_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegPath {
    /// `ibv_reg_mr` on host memory.
    Host,
    /// `ibv_reg_dmabuf_mr` with the GPU buffer's dma-buf descriptor.
    Dmabuf,
    /// `ibv_reg_mr` on the GPU address, which the kernel resolves through `nvidia_peermem`.
    Peermem,
}

impl RegPath {
    pub fn name(self) -> &'static str {
        match self {
            RegPath::Host => "host",
            RegPath::Dmabuf => "dmabuf",
            RegPath::Peermem => "peermem",
        }
    }
}

/// Which registration to try for GPU memory, from what the libraries offer. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegPlan {
    /// libibverbs has `ibv_reg_dmabuf_mr` and the driver exported the buffer: try it first.
    Dmabuf,
    /// Peer memory only, and why dma-buf is not used.
    Peermem { why: String },
}

/// dma-buf where libibverbs exports `ibv_reg_dmabuf_mr` (rdma-core >= 34) and the driver
/// exported a descriptor; else peer memory, saying why.
pub fn registration_plan(verbs_has_dmabuf: bool, export: Result<(), &str>) -> RegPlan {
    match (verbs_has_dmabuf, export) {
        (true, Ok(())) => RegPlan::Dmabuf,
        (false, _) => RegPlan::Peermem { why: "libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34)".into() },
        (true, Err(why)) => RegPlan::Peermem { why: format!("the GPU driver exports no dma-buf ({why})") },
    }
}

/// An `ibv_reg_dmabuf_mr` that failed this way means the provider or kernel lacks dma-buf
/// memory regions (rxe, kernels before 5.12): peer memory is tried next. Any other errno is
/// the registration's own failure.
pub fn dmabuf_unsupported(errno: Option<i32>) -> bool {
    matches!(errno, Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EPROTONOSUPPORT))
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

    /// Whether the CPU may touch the bytes (host memory): inline sends copy them, and the
    /// byte accessors read them; neither is allowed on GPU memory.
    pub(crate) fn host_visible(&self) -> bool {
        matches!(self.backing, Backing::Host { .. })
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
        Self::new_near(pd, len, access, None)
    }

    /// [`MemoryRegion::new`] with the pages on NUMA node `node` where given (the NIC's: see
    /// `pages`), preferred, not required: a refused or full node leaves them where first touch
    /// puts them.
    pub fn new_near(pd: &ProtectionDomain, len: usize, access: Access, node: Option<u32>) -> Result<Self, VerbsError> {
        let alloc_len = len.max(64).next_multiple_of(PAGE);
        let buf = crate::pages::map(alloc_len).ok_or(VerbsError::Alloc { len })?;
        if let Some(node) = node {
            // Before the registration touches (pins) the pages.
            if let Err(errno) = crate::pages::prefer_node(buf, alloc_len, node) {
                tracing::debug!(node, errno, "mbind refused: the buffer's pages go where first touch puts them");
            }
        }
        // SAFETY: buf is valid for alloc_len bytes and outlives the registration (unmapped after dereg).
        let mr = unsafe { dl::ibv_reg_mr(pd.inner.pd, buf.cast(), alloc_len, access.bits() as i32) };
        if mr.is_null() {
            let source = last_os_error();
            // SAFETY: buf is the mapping made above, never registered.
            unsafe { crate::pages::unmap(buf, alloc_len) };
            return Err(VerbsError::RegMr { len: alloc_len, source });
        }
        Ok(MemoryRegion {
            inner: Arc::new(MrInner { mr, buf, backing: Backing::Host { mapped: alloc_len }, len, access, _pd: pd.inner.clone() }),
            _not_sync: PhantomData,
        })
    }

    /// Registers GPU memory with `access`: through its dma-buf (`ibv_reg_dmabuf_mr`) where
    /// libibverbs and the GPU driver offer it and the provider takes it, else `ibv_reg_mr` on
    /// the device address (peer memory: `nvidia_peermem` resolves it in the kernel). The
    /// region owns the buffer: it is freed after the registration, whatever the drop order.
    /// Returns the path taken. The region's byte accessors refuse GPU memory (the CPU cannot
    /// read it) and lists on it never inline.
    pub fn on_device(pd: &ProtectionDomain, buffer: DeviceBuffer, len: usize, access: Access) -> Result<(Self, RegPath), VerbsError> {
        if len > buffer.len() {
            return Err(VerbsError::Alloc { len });
        }
        let reg_len = buffer.len();
        let addr = buffer.device_addr();
        let dmabuf = dl::ibv_reg_dmabuf_mr();
        let export = match dmabuf {
            Some(_) => buffer.export_dmabuf()?,
            None => DmabufExport::Unsupported(String::new()),
        };
        let plan = registration_plan(
            dmabuf.is_some(),
            match &export {
                DmabufExport::Fd { .. } => Ok(()),
                DmabufExport::Unsupported(why) => Err(why.as_str()),
            },
        );
        let (mut fd, offset) = match export {
            DmabufExport::Fd { fd, offset } => (Some(fd), offset),
            DmabufExport::Unsupported(_) => (None, 0),
        };
        let mut taken = None;
        if let (RegPlan::Dmabuf, Some(reg), Some(f)) = (&plan, dmabuf, &fd) {
            // SAFETY: the descriptor exports the page-aligned range around the buffer, which
            // starts `offset` bytes into it; the registration names [offset, offset + reg_len)
            // of it at iova `addr`, the buffer itself (perftest's and NCCL's call), which the
            // region keeps (with the descriptor) until after ibv_dereg_mr.
            let mr = unsafe { reg(pd.inner.pd, offset, reg_len, addr, f.as_raw_fd(), access.bits() as i32) };
            if !mr.is_null() {
                taken = Some((mr, RegPath::Dmabuf));
            } else {
                let source = last_os_error();
                if !dmabuf_unsupported(source.raw_os_error()) {
                    return Err(VerbsError::RegDmabufMr { len: reg_len, source });
                }
                tracing::debug!(%source, "ibv_reg_dmabuf_mr refused by the provider; trying peer memory");
                fd = None;
            }
        }
        let (mr, path) = match taken {
            Some(t) => t,
            None => {
                if let RegPlan::Peermem { why } = &plan {
                    tracing::debug!(%why, "GPU memory through peer memory");
                }
                // SAFETY: a device address of reg_len bytes the region keeps until after
                // dereg; the kernel (nvidia_peermem) pins it or the call fails.
                let mr = unsafe { dl::ibv_reg_mr(pd.inner.pd, addr as *mut std::ffi::c_void, reg_len, access.bits() as i32) };
                if mr.is_null() {
                    return Err(VerbsError::RegMr { len: reg_len, source: last_os_error() });
                }
                (mr, RegPath::Peermem)
            }
        };
        let inner =
            MrInner { mr, buf: addr as *mut u8, backing: Backing::Device { _buffer: buffer, _dmabuf: fd }, len, access, _pd: pd.inner.clone() };
        Ok((MemoryRegion { inner: Arc::new(inner), _not_sync: PhantomData }, path))
    }

    /// Whether the CPU can read and write the region's bytes (host memory, not GPU memory).
    pub fn host_visible(&self) -> bool {
        self.inner.host_visible()
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
        assert!(offset < self.inner.len && self.inner.host_visible());
        // SAFETY: offset is in bounds of host memory; volatile because the HCA writes behind the compiler's back.
        unsafe { std::ptr::read_volatile(self.inner.buf.add(offset)) }
    }

    #[inline(always)]
    pub fn write_volatile(&self, offset: usize, value: u8) {
        assert!(offset < self.inner.len && self.inner.host_visible());
        // SAFETY: offset is in bounds of host memory; a single-byte volatile store races with nothing the
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
            // GPU memory would be freed with the field: forget it instead (host pages are
            // never unmapped on this path).
            std::mem::forget(std::mem::replace(&mut self.backing, Backing::Host { mapped: 0 }));
            return;
        }
        if let Backing::Host { mapped } = self.backing {
            // SAFETY: buf is the mapping of `mapped` bytes made in `new_near`, no longer
            // registered, and this is its last handle.
            unsafe { crate::pages::unmap(self.buf, mapped) };
        }
        // GPU memory: the buffer (a field) is freed after this, its context released after it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmabuf_only_where_both_libraries_offer_it() {
        assert_eq!(registration_plan(true, Ok(())), RegPlan::Dmabuf);
        let RegPlan::Peermem { why } = registration_plan(false, Ok(())) else { panic!("no symbol: peer memory") };
        assert!(why.contains("rdma-core < 34"), "{why}");
        let RegPlan::Peermem { why } = registration_plan(true, Err("cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED")) else {
            panic!("no export: peer memory")
        };
        assert!(why.contains("CUDA_ERROR_NOT_SUPPORTED"), "{why}");
    }

    #[test]
    fn a_provider_without_dmabuf_regions_falls_back_but_other_errors_do_not() {
        assert!(dmabuf_unsupported(Some(libc::EOPNOTSUPP)), "rxe and old kernels");
        assert!(dmabuf_unsupported(Some(libc::ENOSYS)));
        assert!(!dmabuf_unsupported(Some(libc::ENOMEM)), "out of pinned memory is the registration's own failure");
        assert!(!dmabuf_unsupported(Some(libc::EFAULT)));
        assert!(!dmabuf_unsupported(None));
        assert_eq!([RegPath::Host, RegPath::Dmabuf, RegPath::Peermem].map(RegPath::name), ["host", "dmabuf", "peermem"]);
    }
}
