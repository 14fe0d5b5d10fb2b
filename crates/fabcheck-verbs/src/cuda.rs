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
//! Ownership: a [`Gpu`] retains the device's primary context and releases it when the last
//! [`DeviceBuffer`] made on it is gone (each holds an `Arc` of it); a memory region made on a
//! buffer holds the buffer (`MemoryRegion::on_device`), so the memory is freed only after
//! the registration is gone, and the context released after the memory.

use crate::error::VerbsError;
use libloading::Library;
use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::raw::{c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::{Arc, OnceLock};

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
/// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`: synchronous memory operations on the range, so a
/// copy the CPU starts is complete before the adapter reads the memory (perftest sets it).
const CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: c_int = 6;
/// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`.
const CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD: c_int = 1;
/// GPU pages are 64 KiB: allocations and dma-buf ranges are whole pages (perftest's
/// `ACCEL_PAGE_SIZE`).
pub const GPU_PAGE: usize = 64 * 1024;

/// The driver functions fabcheck calls.
#[allow(non_snake_case)]
struct Cuda {
    cuInit: unsafe extern "C" fn(c_uint) -> CuResult,
    cuDeviceGetCount: unsafe extern "C" fn(*mut c_int) -> CuResult,
    cuDeviceGet: unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult,
    cuDeviceGetPCIBusId: unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult,
    cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult,
    cuDevicePrimaryCtxRelease_v2: unsafe extern "C" fn(CuDevice) -> CuResult,
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
            cuDevicePrimaryCtxRetain: get!("cuDevicePrimaryCtxRetain"),
            cuDevicePrimaryCtxRelease_v2: get!("cuDevicePrimaryCtxRelease_v2"),
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

impl Drop for GpuInner {
    fn drop(&mut self) {
        let Ok(table) = cuda() else { return };
        // SAFETY: retained in Gpu::open; every buffer on it holds an Arc to us, so none is left.
        let rc = unsafe { (table.cuDevicePrimaryCtxRelease_v2)(self.device) };
        if let Err(e) = check(table, "cuDevicePrimaryCtxRelease", rc) {
            tracing::warn!(gpu = %self.info.pci_bus_id, %e, "releasing the primary context failed");
        }
    }
}

/// One GPU, its primary context retained (as NCCL and perftest's default do, the context
/// every CUDA program on the GPU shares).
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
}

impl Gpu {
    /// Opens CUDA device `ordinal` and retains its primary context.
    pub fn open(ordinal: u32) -> Result<Gpu, VerbsError> {
        let table = cuda()?;
        let ordinal_c =
            c_int::try_from(ordinal).map_err(|_| VerbsError::Cuda { call: "cuDeviceGet", code: 101, name: "CUDA_ERROR_INVALID_DEVICE".into() })?;
        let device = device(table, ordinal_c)?;
        let pci_bus_id = bus_id(table, device)?;
        let mut ctx: CuContext = std::ptr::null_mut();
        // SAFETY: writes one context handle.
        check(table, "cuDevicePrimaryCtxRetain", unsafe { (table.cuDevicePrimaryCtxRetain)(&mut ctx, device) })?;
        Ok(Gpu { inner: Arc::new(GpuInner { device, ctx, info: CudaDevice { ordinal, pci_bus_id } }) })
    }

    pub fn info(&self) -> &CudaDevice {
        &self.inner.info
    }

    /// Makes the context current on the calling thread (allocation and free need one).
    fn make_current(&self, table: &Cuda) -> Result<(), VerbsError> {
        // SAFETY: ctx is retained for as long as self lives.
        check(table, "cuCtxSetCurrent", unsafe { (table.cuCtxSetCurrent)(self.inner.ctx) })
    }
}

/// What exporting a buffer as dma-buf gave.
#[derive(Debug)]
pub enum DmabufExport {
    Fd(OwnedFd),
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
    /// Allocates at least `len` bytes (whole 64 KiB GPU pages) with synchronous memory
    /// operations, as perftest's `--use_cuda` does.
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

    /// Exports the whole buffer as a dma-buf file descriptor (CUDA 11.7+, open kernel modules
    /// or 515+ with a 5.12+ kernel). A driver without the call, or one that answers
    /// `CUDA_ERROR_NOT_SUPPORTED`, is [`DmabufExport::Unsupported`]; other errors are errors.
    pub fn export_dmabuf(&self) -> Result<DmabufExport, VerbsError> {
        let table = cuda()?;
        let Some(export) = table.cuMemGetHandleForAddressRange else {
            return Ok(DmabufExport::Unsupported("the driver has no cuMemGetHandleForAddressRange (CUDA < 11.7)".into()));
        };
        let mut fd: c_int = -1;
        // SAFETY: the handle of a DMA_BUF_FD range is one int; the range is this allocation,
        // whole GPU pages (host-page aligned as the call requires).
        let rc = unsafe { export((&mut fd as *mut c_int).cast(), self.ptr, self.len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) };
        match check(table, "cuMemGetHandleForAddressRange", rc) {
            // SAFETY: a fresh descriptor the driver handed to us, owned from here on.
            Ok(()) if fd >= 0 => Ok(DmabufExport::Fd(unsafe { OwnedFd::from_raw_fd(fd) })),
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
        // region holds its buffer, so this runs after ibv_dereg_mr).
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
    fn a_missing_driver_library_is_named() {
        let (library, detail) = Cuda::load("libfabcheck-absent-cuda.so.1").err().expect("no such library");
        assert_eq!(library, "libfabcheck-absent-cuda.so.1");
        assert!(detail.contains("libfabcheck-absent-cuda.so.1"), "{detail}");
        let err = VerbsError::CudaLibrary { library, detail };
        assert!(err.to_string().contains("libfabcheck-absent-cuda.so.1 cannot be loaded"), "{err}");
        assert!(CUDA_INSTALL_HINT.contains("libcuda.so.1") && CUDA_INSTALL_HINT.contains("--mem host"));
    }
}
