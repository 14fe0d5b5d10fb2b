//! The CUDA loader and `DeviceBuffer` against the TEST DOUBLE of the driver library
//! (tests/cuda-double): it serves host memory, so this proves the calls, their order and the
//! error paths, not GPU behaviour. Host tier: no GPU, no RDMA device needed.
//!
//! The library is chosen once per process (`FABCHECK_CUDA_LIBRARY`, read on first use), so
//! every test here sets it to the same double; the double reads its knobs at each call, and
//! the tests take one lock because they change them. GPUs stay open for the process's life
//! (one context per GPU), so a test sees a `retain` only if it is the first to open that GPU.

use fabcheck_verbs::{cuda_devices, DeviceBuffer, DmabufExport, Gpu, VerbsError};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

const CUDA_DOUBLE_SOURCE: &str = "../../tests/cuda-double/cuda_double.c";
include!("../../../tests/cuda-double/build_double.rs");

static LOCK: Mutex<()> = Mutex::new(());

struct Double {
    log: PathBuf,
}

const KNOBS: [&str; 3] = ["FABCHECK_CUDA_DOUBLE_FAIL", "FABCHECK_CUDA_DOUBLE_MISALIGN", "FABCHECK_CUDA_DOUBLE_DMABUF_ATTR"];

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
    for knob in KNOBS {
        std::env::remove_var(knob);
    }
    std::env::set_var("FABCHECK_CUDA_DOUBLE_LOG", &d.log);
    let _ = std::fs::remove_file(&d.log);
    (guard, d)
}

fn calls(d: &Double) -> Vec<String> {
    std::fs::read_to_string(&d.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("cuInit") && !l.starts_with("hooks"))
        .map(str::to_string)
        .collect()
}

/// The calls but the context's (which only the first opener of a GPU makes).
fn memory_calls(d: &Double) -> Vec<String> {
    calls(d).into_iter().filter(|l| !l.starts_with("retain") && !l.starts_with("ctx-create")).collect()
}

#[test]
fn the_double_lists_its_gpus_by_ordinal_with_sysfs_style_addresses() {
    let (_lock, _d) = double();
    let gpus = cuda_devices().expect("the double loads and initialises");
    let listed: Vec<(u32, &str)> = gpus.iter().map(|g| (g.ordinal, g.pci_bus_id.as_str())).collect();
    assert_eq!(listed, [(0, "0000:1b:00.0"), (1, "0000:43:00.0")], "upper-case CUDA addresses become sysfs's lower case");
    assert!(matches!(Gpu::open(2), Err(VerbsError::Cuda { call: "cuDeviceGet", ref name, .. }) if name == "CUDA_ERROR_INVALID_DEVICE"));
}

/// Issue #43: retaining per test and releasing after it destroyed the primary context each time
/// its count fell to 0. A GPU's context is retained once and never released by fabcheck.
#[test]
fn a_gpu_has_one_context_for_the_life_of_the_process() {
    let (_lock, d) = double();
    for _ in 0..3 {
        let gpu = Gpu::open(1).unwrap();
        let buffer = DeviceBuffer::new(&gpu, 100_000).unwrap();
        assert_eq!(buffer.len(), 128 * 1024, "whole 64 KiB GPU pages");
        assert_eq!(buffer.gpu().pci_bus_id, "0000:43:00.0");
        drop(gpu); // the buffer keeps the GPU
        drop(buffer);
    }
    let log = calls(d);
    assert!(log.iter().filter(|l| l.starts_with("ctx-create 1")).count() <= 1, "one context: {log:?}");
    assert!(!log.iter().any(|l| l.starts_with("release") || l.starts_with("ctx-destroy")), "never released: {log:?}");
    let once = ["alloc 131072 at page offset 0", "sync_memops", "free"];
    assert_eq!(memory_calls(d), once.repeat(3), "each buffer allocated and freed in turn");
}

#[test]
fn a_driver_that_cannot_export_dmabuf_is_an_outcome_not_an_error() {
    let (_lock, _d) = double();
    let gpu = Gpu::open(0).unwrap();
    let buffer = DeviceBuffer::new(&gpu, 4096).unwrap();
    match buffer.export_dmabuf().unwrap() {
        DmabufExport::Unsupported(why) => assert!(why.contains("CUDA_ERROR_NOT_SUPPORTED"), "{why}"),
        DmabufExport::Fd { .. } => panic!("the double refuses dma-buf unless asked"),
    }
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok");
    assert!(matches!(buffer.export_dmabuf().unwrap(), DmabufExport::Fd { offset: 0, .. }), "the dma-buf branch gets a descriptor");
}

/// cuMemAlloc guarantees 256-byte alignment; cuMemGetHandleForAddressRange wants host pages.
/// The export names the page-aligned range around the buffer and says where the buffer starts.
#[test]
fn a_buffer_off_a_page_boundary_is_exported_from_the_page_below_with_its_offset() {
    let (_lock, d) = double();
    std::env::set_var("FABCHECK_CUDA_DOUBLE_MISALIGN", "256");
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok");
    let buffer = DeviceBuffer::new(&Gpu::open(0).unwrap(), 65536).unwrap();
    assert_eq!(buffer.device_addr() % 4096, 256, "the knob took");
    match buffer.export_dmabuf() {
        Ok(DmabufExport::Fd { offset, .. }) => assert_eq!(offset, 256),
        other => panic!("the aligned range exports: {other:?}; calls {:?}", calls(d)),
    }
    assert!(!calls(d).iter().any(|l| l.starts_with("export misaligned")), "{:?}", calls(d));
}

/// cuda.h: users are expected to query CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED before exporting.
#[test]
fn a_gpu_whose_dmabuf_attribute_is_0_is_never_asked_to_export() {
    let (_lock, d) = double();
    std::env::set_var("FABCHECK_CUDA_DOUBLE_DMABUF_ATTR", "0");
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok");
    let buffer = DeviceBuffer::new(&Gpu::open(0).unwrap(), 4096).unwrap();
    match buffer.export_dmabuf().unwrap() {
        DmabufExport::Unsupported(why) => assert!(why.contains("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0 on GPU 0000:1b:00.0"), "{why}"),
        DmabufExport::Fd { .. } => panic!("attribute 0: no export"),
    }
    assert!(calls(d).contains(&"attr dmabuf 0".to_string()) && !calls(d).iter().any(|l| l.starts_with("export")), "{:?}", calls(d));
}

#[test]
fn an_export_failure_that_is_not_unsupported_names_the_drivers_error() {
    let (_lock, _d) = double();
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "export_error");
    let buffer = DeviceBuffer::new(&Gpu::open(0).unwrap(), 4096).unwrap();
    let err = buffer.export_dmabuf().expect_err("not an outcome: an error");
    assert_eq!(err.to_string(), "cuMemGetHandleForAddressRange failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
}

#[test]
fn a_failed_allocation_names_the_call_and_the_drivers_error() {
    let (_lock, d) = double();
    let gpu = Gpu::open(0).unwrap();
    std::env::set_var("FABCHECK_CUDA_DOUBLE_FAIL", "alloc");
    let err = DeviceBuffer::new(&gpu, 4096).err().expect("allocation fails");
    assert_eq!(err.to_string(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    drop(gpu);
    assert_eq!(memory_calls(d), Vec::<String>::new(), "nothing allocated, nothing freed, nothing released");
}
