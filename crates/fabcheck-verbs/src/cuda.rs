//! The CUDA driver API, opened at run time, and GPU memory owned by a safe type.
//!
//! fabcheck links no CUDA library, as it links no rdma-core library ([`crate::loader`]): a
//! node without the NVIDIA driver still runs every host-memory test, and `--mem cuda` there
//! is a named error (exit 2), not a loader failure at start. The driver library is
//! `libcuda.so.1` (installed by the NVIDIA driver, not the CUDA toolkit), or the file named
//! by `FABCHECK_CUDA_LIBRARY` in the environment of the process that registers memory: the
//! tests point it at a double that serves host memory. Nothing from the wire can name it.
//!
//! The subset is declared by hand (no CUDA headers on the build hosts); each prototype is
//! NVIDIA's `cuda.h` (CUDA 12), and the same calls perftest's `src/cuda_memory.c` makes:
//! `CUresult` is a C enum (`int`), `CUdevice` an `int`, `CUcontext` a pointer,
//! `CUdeviceptr` an `unsigned long long` on 64-bit hosts. The `_v2` names are what `cuda.h`
//! maps `cuMemAlloc`, `cuMemFree` and `cuDevicePrimaryCtxRelease` to since CUDA 4.0 / 11.0.
//!
//! Ownership: a [`Gpu`] is one device's primary context, retained once on first use and kept
//! for the life of the process (see [`Gpu::open`]); every [`DeviceBuffer`] holds it, and a
//! memory region made on a buffer holds the buffer (`MemoryRegion::on_device`), so the memory
//! is freed only after the registration is gone.

use crate::error::VerbsError;
use libloading::Library;
use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::raw::{c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::{Arc, Mutex, OnceLock};

/// The soname the NVIDIA driver installs (`libcuda1` / `nvidia-driver-libs`, `libnvidia-compute-*`).
pub const LIBCUDA: &str = "libcuda.so.1";
/// The environment variable that names another driver library (tests: the double).
pub const LIBRARY_ENV: &str = "FABCHECK_CUDA_LIBRARY";
/// What to install when the driver library is missing.
pub const CUDA_INSTALL_HINT: &str = "install the NVIDIA driver (it provides libcuda.so.1: Debian/Ubuntu `apt install nvidia-driver` or \
     `libnvidia-compute-<version>`, RHEL `dnf install nvidia-driver-cuda-libs`), or run with --mem host";

type CuResult = c_int;
type CuDevice = c_int;
type CuContext = *mut c_void;
type CuDevicePtr = c_ulonglong;

const CUDA_SUCCESS: CuResult = 0;
/// `CUDA_ERROR_NOT_SUPPORTED`: what `cuMemGetHandleForAddressRange` answers where the
/// platform cannot export dma-buf (proprietary modules before 515, old kernels).
pub const CUDA_ERROR_NOT_SUPPORTED: i32 = 801;
/// `CUDA_ERROR_INVALID_VALUE`: what a driver older than CUDA 11.7 answers for an attribute it
/// does not know (124 included).
const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
/// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`: cuda.h's `cuPointerSetAttribute`: "the region of memory
/// that ptr points to is guaranteed to always synchronize memory operations that are
/// synchronous", so a copy into the buffer is complete before a NIC reads it. NVIDIA's
/// GPUDirect RDMA guide ("Synchronization and Memory Ordering") recommends it for memory a
/// third-party device reads, and DOCA GPUNetIO sets it ("GPUDirect RDMA attribute required",
/// vendored in NCCL, `src/transport/net_ib/gdaki/doca-gpunetio/src/doca_gpunetio.cpp`).
/// perftest does not set it.
const CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: c_int = 6;
/// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` (cuda.h, CUDA 11.7+): whether the platform can
/// export dma-buf. cuda.h's `cuMemGetHandleForAddressRange`: "users are expected to query for
/// dma_buf support for the platform by using CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED device
/// attribute before calling this API"; perftest (`src/cuda_memory.c`) and NCCL
/// (`src/init.cc`, `dmaBufSupported`) both ask it first.
const CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: c_int = 124;
/// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`.
const CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD: c_int = 1;
/// GPU pages are 64 KiB: allocations are whole pages (perftest's `ACCEL_PAGE_SIZE`). dma-buf
/// ranges are whole host pages ([`dmabuf_range`]).
pub const GPU_PAGE: usize = 64 * 1024;

/// The driver functions fabcheck calls.
#[allow(non_snake_case)]
struct Cuda {
    cuInit: unsafe extern "C" fn(c_uint) -> CuResult,
    cuDeviceGetCount: unsafe extern "C" fn(*mut c_int) -> CuResult,
    cuDeviceGet: unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult,
    cuDeviceGetPCIBusId: unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult,
    cuDeviceGetAttribute: unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult,
    cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult,
    cuCtxSetCurrent: unsafe extern "C" fn(CuContext) -> CuResult,
    cuMemAlloc_v2: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    cuMemFree_v2: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    cuPointerSetAttribute: unsafe extern "C" fn(*const c_void, c_int, CuDevicePtr) -> CuResult,
    /// CUDA 11.7 and later; `None` before (no dma-buf export).
    cuMemGetHandleForAddressRange: Option<unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize, c_int, c_ulonglong) -> CuResult>,
    cuGetErrorName: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    _library: Library,
}

static CUDA: OnceLock<Result<Cuda, (String, String)>> = OnceLock::new();

/// The library to open: `FABCHECK_CUDA_LIBRARY` when set and not empty, else `libcuda.so.1`.
pub fn library_name(env: Option<&str>) -> String {
    match env {
        Some(path) if !path.is_empty() => path.to_string(),
        _ => LIBCUDA.to_string(),
    }
}

impl Cuda {
    fn load(name: &str) -> Result<Cuda, (String, String)> {
        let missing = |e: libloading::Error| (name.to_string(), e.to_string());
        // SAFETY: loading runs the library's ELF constructors; the NVIDIA driver's set up its
        // own globals and take no input from us.
        let library = unsafe { Library::new(name) }.map_err(missing)?;
        macro_rules! get {
            ($symbol:literal) => {
                // SAFETY: the field's type is the prototype of `cuda.h` (see the module doc);
                // the pointer stays valid while `_library` is held, i.e. forever.
                *unsafe { library.get(concat!($symbol, "\0").as_bytes()) }.map_err(missing)?
            };
        }
        Ok(Cuda {
            cuInit: get!("cuInit"),
            cuDeviceGetCount: get!("cuDeviceGetCount"),
            cuDeviceGet: get!("cuDeviceGet"),
            cuDeviceGetPCIBusId: get!("cuDeviceGetPCIBusId"),
            cuDeviceGetAttribute: get!("cuDeviceGetAttribute"),
            cuDevicePrimaryCtxRetain: get!("cuDevicePrimaryCtxRetain"),
            cuCtxSetCurrent: get!("cuCtxSetCurrent"),
            cuMemAlloc_v2: get!("cuMemAlloc_v2"),
            cuMemFree_v2: get!("cuMemFree_v2"),
            cuPointerSetAttribute: get!("cuPointerSetAttribute"),
            // SAFETY: as above; a driver older than CUDA 11.7 leaves it `None`.
            cuMemGetHandleForAddressRange: unsafe { library.get(b"cuMemGetHandleForAddressRange\0") }.ok().map(|s| *s),
            cuGetErrorName: get!("cuGetErrorName"),
            _library: library,
        })
    }
}

/// The driver table, loading the library on first use and calling `cuInit` once.
fn cuda() -> Result<&'static Cuda, VerbsError> {
    let table = CUDA
        .get_or_init(|| Cuda::load(&library_name(std::env::var(LIBRARY_ENV).ok().as_deref())))
        .as_ref()
        .map_err(|(library, detail)| VerbsError::CudaLibrary { library: library.clone(), detail: detail.clone() })?;
    static INIT: OnceLock<CuResult> = OnceLock::new();
    // SAFETY: cuInit takes flags (0 is the only defined value) and may be called repeatedly.
    let rc = *INIT.get_or_init(|| unsafe { (table.cuInit)(0) });
    check(table, "cuInit", rc)?;
    Ok(table)
}

fn check(table: &Cuda, call: &'static str, rc: CuResult) -> Result<(), VerbsError> {
    if rc == CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string, or fails for unknown codes.
    let named = unsafe { (table.cuGetErrorName)(rc, &mut name) } == CUDA_SUCCESS && !name.is_null();
    let name = if named {
        // SAFETY: a NUL-terminated static string of the driver.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    } else {
        format!("CUresult {rc}")
    };
    Err(VerbsError::Cuda { call, code: rc, name })
}

/// Whether the CUDA driver library loads and initialises here.
pub fn cuda_available() -> Result<(), VerbsError> {
    cuda().map(|_| ())
}

/// A GPU as CUDA numbers it: its ordinal and PCI address (`0000:1b:00.0`, lower case as sysfs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDevice {
    pub ordinal: u32,
    pub pci_bus_id: String,
}

/// Every GPU the driver sees, in ordinal order.
pub fn cuda_devices() -> Result<Vec<CudaDevice>, VerbsError> {
    let table = cuda()?;
    let mut count: c_int = 0;
    // SAFETY: writes one int.
    check(table, "cuDeviceGetCount", unsafe { (table.cuDeviceGetCount)(&mut count) })?;
    (0..count.max(0)).map(|ordinal| Ok(CudaDevice { ordinal: ordinal as u32, pci_bus_id: bus_id(table, device(table, ordinal)?)? })).collect()
}

fn device(table: &Cuda, ordinal: c_int) -> Result<CuDevice, VerbsError> {
    let mut dev: CuDevice = 0;
    // SAFETY: writes one int; an ordinal out of range is CUDA_ERROR_INVALID_DEVICE.
    check(table, "cuDeviceGet", unsafe { (table.cuDeviceGet)(&mut dev, ordinal) })?;
    Ok(dev)
}

fn bus_id(table: &Cuda, dev: CuDevice) -> Result<String, VerbsError> {
    // "dddd:bb:dd.f" and its NUL fit in 13 bytes; cuda.h's examples use 16 or more.
    let mut buf = [0 as c_char; 32];
    // SAFETY: the driver writes at most `len` bytes, NUL included.
    check(table, "cuDeviceGetPCIBusId", unsafe { (table.cuDeviceGetPCIBusId)(buf.as_mut_ptr(), buf.len() as c_int, dev) })?;
    buf[buf.len() - 1] = 0;
    // SAFETY: NUL-terminated within the buffer (the last byte was set above).
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().to_ascii_lowercase())
}

struct GpuInner {
    device: CuDevice,
    ctx: CuContext,
    info: CudaDevice,
}

// SAFETY: a primary context is a process-wide handle the driver lets any thread make current.
unsafe impl Send for GpuInner {}
// SAFETY: as above; nothing here is mutated after creation.
unsafe impl Sync for GpuInner {}

/// The GPUs opened so far, one entry per ordinal, for the life of the process.
static OPEN: Mutex<Vec<Gpu>> = Mutex::new(Vec::new());

/// One GPU, its primary context retained: the context every CUDA program on the GPU shares
/// (the runtime API's, which NCCL uses; perftest creates its own with `cuCtxCreate` and
/// destroys it at exit instead).
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
}

impl Gpu {
    /// CUDA device `ordinal`, its primary context retained on the first call and kept until the
    /// process exits (the driver releases it then): one context per GPU for an agent's life.
    /// Retaining per test and releasing after it destroyed the context whenever the count fell
    /// to 0, and making one costs a GPU tens to hundreds of milliseconds (issue #43). A `serve`
    /// agent thus keeps each GPU it measured on's context (a few hundred MiB of its memory).
    pub fn open(ordinal: u32) -> Result<Gpu, VerbsError> {
        let table = cuda()?;
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(gpu) = open.iter().find(|g| g.inner.info.ordinal == ordinal) {
            return Ok(gpu.clone());
        }
        let ordinal_c =
            c_int::try_from(ordinal).map_err(|_| VerbsError::Cuda { call: "cuDeviceGet", code: 101, name: "CUDA_ERROR_INVALID_DEVICE".into() })?;
        let device = device(table, ordinal_c)?;
        let pci_bus_id = bus_id(table, device)?;
        let mut ctx: CuContext = std::ptr::null_mut();
        // SAFETY: writes one context handle. Never released: the process keeps it (see above).
        check(table, "cuDevicePrimaryCtxRetain", unsafe { (table.cuDevicePrimaryCtxRetain)(&mut ctx, device) })?;
        let gpu = Gpu { inner: Arc::new(GpuInner { device, ctx, info: CudaDevice { ordinal, pci_bus_id } }) };
        open.push(gpu.clone());
        Ok(gpu)
    }

    pub fn info(&self) -> &CudaDevice {
        &self.inner.info
    }

    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`: whether the driver can export this GPU's memory
    /// as dma-buf. A driver that does not know the attribute (older than CUDA 11.7 answers
    /// `CUDA_ERROR_INVALID_VALUE`) cannot; other errors are errors.
    pub fn dmabuf_supported(&self) -> Result<bool, VerbsError> {
        let table = cuda()?;
        let mut value: c_int = 0;
        // SAFETY: writes one int.
        let rc = unsafe { (table.cuDeviceGetAttribute)(&mut value, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, self.inner.device) };
        if rc == CUDA_ERROR_INVALID_VALUE {
            return Ok(false);
        }
        check(table, "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)", rc)?;
        Ok(value != 0)
    }

    /// Makes the context current on the calling thread (allocation and free need one).
    fn make_current(&self, table: &Cuda) -> Result<(), VerbsError> {
        // SAFETY: ctx is retained for the life of the process.
        check(table, "cuCtxSetCurrent", unsafe { (table.cuCtxSetCurrent)(self.inner.ctx) })
    }
}

/// The host-page-aligned range a dma-buf export must name (cuda.h: `dptr` and `size` "must
/// be aligned to host page size") around `len` bytes at `ptr`, and where the buffer starts
/// in it. `cuMemAlloc` guarantees 256-byte alignment only (CUDA C++ Programming Guide,
/// "Device Memory Accesses"), so the start is rounded down and the buffer's offset passed to
/// `ibv_reg_dmabuf_mr`, as perftest (`src/cuda_memory.c`: `aligned_ptr = d_A &
/// ~(host_page_size - 1)`, `*dmabuf_offset = offset`) and NCCL (`src/transport/net_ib/reg.cc`:
/// `addr & -pageSize`) do. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmabufRange {
    /// The exported range's start (a multiple of the page).
    pub start: u64,
    /// Its length (a multiple of the page, covering the whole buffer).
    pub len: usize,
    /// Where the buffer starts, from `start`: the `offset` of `ibv_reg_dmabuf_mr`.
    pub offset: u64,
}

pub fn dmabuf_range(ptr: u64, len: usize, page: usize) -> DmabufRange {
    let page = page.max(1) as u64;
    let start = ptr - ptr % page;
    let offset = ptr - start;
    let len = (offset + len as u64).next_multiple_of(page) as usize;
    DmabufRange { start, len, offset }
}

/// The host's page size (4 KiB on x86-64, 4 or 64 KiB on arm64 hosts such as Grace).
fn host_page() -> usize {
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).ok().filter(|p| p.is_power_of_two()).unwrap_or(4096)
}

/// What exporting a buffer as dma-buf gave.
#[derive(Debug)]
pub enum DmabufExport {
    /// The descriptor of the page-aligned range around the buffer, which starts `offset` bytes
    /// into it (see [`dmabuf_range`]).
    Fd { fd: OwnedFd, offset: u64 },
    /// The platform cannot: why, in the driver's words (an outcome, not a failure).
    Unsupported(String),
}

/// GPU memory from `cuMemAlloc`, freed on drop. The CPU never dereferences it (it is not
/// host memory): the type gives out its device address only, for registration.
pub struct DeviceBuffer {
    ptr: CuDevicePtr,
    len: usize,
    gpu: Gpu,
}

// SAFETY: a device address and a context handle; the driver lets any thread free it once
// its context is made current there (Drop does).
unsafe impl Send for DeviceBuffer {}
// SAFETY: shared access only reads the address and length.
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// Allocates at least `len` bytes, rounded up to whole 64 KiB GPU pages as perftest's
    /// `--use_cuda` rounds (`ACCEL_PAGE_SIZE`), and asks for synchronous memory operations on
    /// them (`CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, see there). The address is what `cuMemAlloc`
    /// gave: 256-byte aligned at least, not necessarily page aligned.
    pub fn new(gpu: &Gpu, len: usize) -> Result<DeviceBuffer, VerbsError> {
        let table = cuda()?;
        gpu.make_current(table)?;
        let len = len.max(1).next_multiple_of(GPU_PAGE);
        let mut ptr: CuDevicePtr = 0;
        // SAFETY: writes one device address; the context is current on this thread.
        check(table, "cuMemAlloc", unsafe { (table.cuMemAlloc_v2)(&mut ptr, len) })?;
        let buffer = DeviceBuffer { ptr, len, gpu: gpu.clone() };
        let on: c_uint = 1;
        // SAFETY: `on` is a live unsigned int; ptr is the allocation just made.
        check(table, "cuPointerSetAttribute", unsafe {
            (table.cuPointerSetAttribute)((&on as *const c_uint).cast(), CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr)
        })?;
        Ok(buffer)
    }

    /// The device address (a GPU virtual address; CUDA's unified addressing keeps it apart
    /// from host addresses).
    pub fn device_addr(&self) -> u64 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn gpu(&self) -> &CudaDevice {
        self.gpu.info()
    }

    /// Exports the buffer as a dma-buf file descriptor (CUDA 11.7+, open kernel modules or 515+
    /// with a 5.12+ kernel), of the host-page-aligned range around it ([`dmabuf_range`]).
    /// "Not supported" answers are [`DmabufExport::Unsupported`], and then peer memory is
    /// tried: `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` 0 (asked first, the export is then never
    /// called), a driver without the call, or `CUDA_ERROR_NOT_SUPPORTED`. Any other answer is
    /// an error naming the call and the driver's error.
    pub fn export_dmabuf(&self) -> Result<DmabufExport, VerbsError> {
        let table = cuda()?;
        let Some(export) = table.cuMemGetHandleForAddressRange else {
            return Ok(DmabufExport::Unsupported("the driver has no cuMemGetHandleForAddressRange (CUDA < 11.7)".into()));
        };
        if !self.gpu.dmabuf_supported()? {
            return Ok(DmabufExport::Unsupported(format!(
                "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0 on GPU {}: the driver cannot export dma-buf here (proprietary modules before 515, or a kernel before 5.12)",
                self.gpu.info().pci_bus_id
            )));
        }
        let range = dmabuf_range(self.ptr, self.len, host_page());
        let mut fd: c_int = -1;
        // SAFETY: the handle of a DMA_BUF_FD range is one int; the range is host-page aligned
        // as the call requires and covers this allocation (its first and last page at most
        // reach outside it, as in perftest; the registration then names only the buffer).
        let rc = unsafe { export((&mut fd as *mut c_int).cast(), range.start, range.len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) };
        match check(table, "cuMemGetHandleForAddressRange", rc) {
            // SAFETY: a fresh descriptor the driver handed to us, owned from here on.
            Ok(()) if fd >= 0 => Ok(DmabufExport::Fd { fd: unsafe { OwnedFd::from_raw_fd(fd) }, offset: range.offset }),
            Ok(()) => Ok(DmabufExport::Unsupported("cuMemGetHandleForAddressRange gave no descriptor".into())),
            Err(VerbsError::Cuda { code: CUDA_ERROR_NOT_SUPPORTED, name, .. }) => {
                Ok(DmabufExport::Unsupported(format!("cuMemGetHandleForAddressRange: {name}")))
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let Ok(table) = cuda() else { return };
        if let Err(e) = self.gpu.make_current(table) {
            tracing::warn!(%e, "cannot free GPU memory: its context cannot be made current");
            return;
        }
        // SAFETY: ptr came from cuMemAlloc and no registration names it any more (a memory
        // region holds its buffer, so this runs after ibv_dereg_mr). The context is retained
        // for the life of the process, so it is still there.
        let rc = unsafe { (table.cuMemFree_v2)(self.ptr) };
        if let Err(e) = check(table, "cuMemFree", rc) {
            tracing::warn!(%e, "cuMemFree failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_libcuda_unless_the_environment_names_another() {
        assert_eq!(library_name(None), "libcuda.so.1");
        assert_eq!(library_name(Some("")), "libcuda.so.1");
        assert_eq!(library_name(Some("/tmp/libcuda-double.so")), "/tmp/libcuda-double.so");
    }

    #[test]
    fn a_dmabuf_range_is_page_aligned_around_the_buffer_with_its_offset() {
        // cuMemAlloc's 256-byte guarantee: a pointer 256 bytes into a page.
        let r = dmabuf_range(0x7f00_0000_0100, 65536, 4096);
        assert_eq!(r, DmabufRange { start: 0x7f00_0000_0000, len: 65536 + 4096, offset: 0x100 });
        assert_eq!(dmabuf_range(0x7f00_0001_0000, 65536, 4096), DmabufRange { start: 0x7f00_0001_0000, len: 65536, offset: 0 }, "aligned");
        // A 64 KiB-page arm64 host (Grace).
        let r = dmabuf_range(0x1_0000_1000, 4096, 65536);
        assert_eq!((r.start, r.len, r.offset), (0x1_0000_0000, 65536, 0x1000));
        assert!(r.start.is_multiple_of(65536) && r.len.is_multiple_of(65536) && r.offset + 4096 <= r.len as u64, "covers the buffer");
    }

    #[test]
    fn a_missing_driver_library_is_named() {
        let (library, detail) = Cuda::load("libfabcheck-absent-cuda.so.1").err().expect("no such library");
        assert_eq!(library, "libfabcheck-absent-cuda.so.1");
        assert!(detail.contains("libfabcheck-absent-cuda.so.1"), "{detail}");
        let err = VerbsError::CudaLibrary { library, detail };
        assert!(err.to_string().contains("libfabcheck-absent-cuda.so.1 cannot be loaded"), "{err}");
        assert!(CUDA_INSTALL_HINT.contains("libcuda.so.1") && CUDA_INSTALL_HINT.contains("--mem host"));
    }
}
