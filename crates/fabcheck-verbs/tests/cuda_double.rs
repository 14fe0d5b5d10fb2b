//! The CUDA loader and `DeviceBuffer` against the test double of the driver library
//! (tests/cuda-double): it serves host memory, so this proves the calls, their order and the
//! error paths, not GPU behaviour. Host tier: no GPU, no RDMA device needed.
//!
//! The library is chosen once per process (`FABCHECK_CUDA_LIBRARY`, read on first use), so
//! every test here sets it to the same double; the double reads its knobs at each call, and
//! the tests take one lock because they change them.

use fabcheck_verbs::{cuda_devices, DeviceBuffer, DmabufExport, Gpu, VerbsError};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

const CUDA_DOUBLE_SOURCE: &str = "../../tests/cuda-double/cuda_double.c";
include!("../../../tests/cuda-double/build_double.rs");

static LOCK: Mutex<()> = Mutex::new(());

struct Double {
    log: PathBuf,
}

/// Builds the double once, points the loader at it, and clears the knobs and the call log.
fn double() -> (MutexGuard<'static, ()>, &'static Double) {
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    static DOUBLE: OnceLock<Double> = OnceLock::new();
    let d = DOUBLE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("fabcheck-cuda-double-{}", std::process::id()));
        let lib = build_cuda_double(&dir);
        // Under LOCK, before any CUDA call of this process: the loader reads it once.
        std::env::set_var("FABCHECK_CUDA_LIBRARY", &lib);
        std::env::set_var("FABCHECK_CUDA_DOUBLE_BUS_IDS", "0000:1B:00.0,0000:43:00.0");
        Double { log: dir.join("calls.log") }
    });
    std::env::remove_var("FABCHECK_CUDA_DOUBLE_FAIL");
    std::env::set_var("FABCHECK_CUDA_DOUBLE_LOG", &d.log);
    let _ = std::fs::remove_file(&d.log);
    (guard, d)
}

fn calls(d: &Double) -> Vec<String> {
    std::fs::read_to_string(&d.log).unwrap_or_default().lines().filter(|l| !l.starts_with("cuInit")).map(str::to_string).collect()
}

#[test]
fn the_double_lists_its_gpus_by_ordinal_with_sysfs_style_addresses() {
    let (_lock, _d) = double();
    let gpus = cuda_devices().expect("the double loads and initialises");
    let listed: Vec<(u32, &str)> = gpus.iter().map(|g| (g.ordinal, g.pci_bus_id.as_str())).collect();
    assert_eq!(listed, [(0, "0000:1b:00.0"), (1, "0000:43:00.0")], "upper-case CUDA addresses become sysfs's lower case");
    assert!(matches!(Gpu::open(2), Err(VerbsError::Cuda { call: "cuDeviceGet", ref name, .. }) if name == "CUDA_ERROR_INVALID_DEVICE"));
}

#[test]
fn a_buffer_is_freed_before_its_gpus_context_is_released() {
    let (_lock, d) = double();
    let gpu = Gpu::open(1).unwrap();
    let buffer = DeviceBuffer::new(&gpu, 100_000).unwrap();
    assert_eq!(buffer.len(), 128 * 1024, "whole 64 KiB GPU pages");
    assert_eq!(buffer.gpu().pci_bus_id, "0000:43:00.0");
    drop(gpu); // the buffer keeps the context
    assert_eq!(calls(d), ["retain 1", "alloc 131072", "sync_memops"]);
    drop(buffer);
    assert_eq!(calls(d), ["retain 1", "alloc 131072", "sync_memops", "free", "release 1"]);
}

#[test]
fn a_driver_that_cannot_export_dmabuf_is_an_outcome_not_an_error() {
    let (_lock, _d) = double();
    let gpu = Gpu::open(0).unwrap();
    let buffer = DeviceBuffer::new(&gpu, 4096).unwrap();
    match buffer.export_dmabuf().unwrap() {
        DmabufExport::Unsupported(why) => assert!(why.contains("CUDA_ERROR_NOT_SUPPORTED"), "{why}"),
        DmabufExport::Fd(_) => panic!("the double refuses dma-buf unless asked"),
    }
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok");
    assert!(matches!(buffer.export_dmabuf().unwrap(), DmabufExport::Fd(_)), "the dma-buf branch gets a descriptor");
}

#[test]
fn a_failed_allocation_names_the_call_and_the_drivers_error() {
    let (_lock, d) = double();
    let gpu = Gpu::open(0).unwrap();
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "alloc");
    let err = DeviceBuffer::new(&gpu, 4096).err().expect("allocation fails");
    assert_eq!(err.to_string(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    drop(gpu);
    assert_eq!(calls(d), ["retain 0", "release 0"], "nothing allocated, nothing freed, the context released");
}
