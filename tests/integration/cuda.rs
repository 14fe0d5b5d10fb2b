//! `--mem cuda` on the host tier (no GPU, no RDMA device): the CUDA driver library missing
//! or failing is exit 2 in a moment, naming it; the test double of the driver
//! (tests/cuda-double) drives the error paths. What the double does not prove (GPU memory
//! itself) is said in docs/gpu.md; the data path runs in the rxe tier (tests/rxe/cuda_double.rs).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const CUDA_DOUBLE_SOURCE: &str = "tests/cuda-double/cuda_double.c";
include!("../cuda-double/build_double.rs");

fn double() -> &'static PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| build_cuda_double(&std::env::temp_dir().join(format!("fabcheck-int-cuda-double-{}", std::process::id()))))
}

fn pair(mem: &str, env: &[(&str, &str)]) -> (Output, Duration) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabcheck"));
    c.args(["pair", "localhost", "localhost", "--tests", "send_lat", "--mem", mem, "--timeout", "60"]);
    c.env_remove("FABCHECK_CUDA_DOUBLE_FAIL");
    for (k, v) in env {
        c.env(k, v);
    }
    let start = Instant::now();
    let out = c.output().expect("run fabcheck");
    (out, start.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn without_the_cuda_driver_library_mem_cuda_is_exit_2_at_once_naming_it() {
    let (out, took) = pair("cuda", &[("FABCHECK_CUDA_LIBRARY", "/nonexistent/fabcheck-test/libcuda.so.1")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("CUDA driver library /nonexistent/fabcheck-test/libcuda.so.1 cannot be loaded"), "{err}");
    assert!(err.contains("install the NVIDIA driver (it provides libcuda.so.1"), "what to install: {err}");
    // Before any device is looked at: the host tier has none, and that is not what is said.
    assert!(!err.contains("libibverbs cannot list devices"), "{err}");
    assert!(took < Duration::from_secs(30), "a generous bound, not a timing assert: {took:?}");
}

#[test]
fn a_driver_whose_cuinit_fails_is_named_with_its_error() {
    let lib = double().to_str().unwrap();
    let (out, _) = pair("cuda:0", &[("FABCHECK_CUDA_LIBRARY", lib), ("FABCHECK_CUDA_DOUBLE_FAIL", "init")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--mem cuda: cuInit failed: CUDA_ERROR_NO_DEVICE (100)"), "{err}");
    assert!(err.contains("nvidia-smi"), "{err}");
}

#[test]
fn a_gpu_ordinal_the_node_lacks_is_exit_2_saying_how_many_there_are() {
    let lib = double().to_str().unwrap();
    let (out, _) = pair("cuda:4", &[("FABCHECK_CUDA_LIBRARY", lib), ("FABCHECK_CUDA_DOUBLE_BUS_IDS", "0000:1b:00.0,0000:43:00.0")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("there is no CUDA device 4 (CUDA sees 2 GPUs here"), "{err}");
}

/// `cuda:BUSID` names a GPU by the PCI address nvidia-smi prints; one CUDA does not list is
/// exit 2 at once, listing what it does (ordinal and address), before any device is opened.
#[test]
fn a_gpu_bus_id_the_node_lacks_is_exit_2_listing_what_cuda_sees() {
    let lib = double().to_str().unwrap();
    let (out, _) = pair("cuda:00000000:1A:00.0", &[("FABCHECK_CUDA_LIBRARY", lib), ("FABCHECK_CUDA_DOUBLE_BUS_IDS", "0000:1b:00.0,0000:43:00.0")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("CUDA sees no GPU at 0000:1a:00.0 (it sees cuda:0 0000:1b:00.0, cuda:1 0000:43:00.0)"), "{err}");
    assert!(err.contains("--mem cuda:BUSID") && err.contains("CUDA_VISIBLE_DEVICES"), "the next step: {err}");
    assert!(!err.contains("libibverbs cannot list devices"), "{err}");
}

#[test]
fn mem_host_is_as_before_and_never_loads_cuda() {
    // A library that cannot load: host memory must not need it.
    let (out, _) = pair("host", &[("FABCHECK_CUDA_LIBRARY", "/nonexistent/fabcheck-test/libcuda.so.1")]);
    let err = stderr(&out);
    assert!(!err.to_lowercase().contains("cuda"), "{err}");
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabcheck"));
    let default = c.args(["pair", "localhost", "localhost", "--tests", "send_lat", "--timeout", "60"]).output().unwrap();
    assert_eq!(out.status.code(), default.status.code());
    assert_eq!(err, stderr(&default), "--mem host is the default");
}

#[test]
fn mem_takes_only_the_contracts_spellings() {
    for bad in ["rocm", "cuda:", "cuda:-1", "gpu0", "cuda:/usr/lib/libcuda.so.1", "cuda:1a:00", "cuda:0000:1a:00.9"] {
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(["pair", "localhost", "localhost", "--mem", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr(&out).contains("expected host, cuda, cuda:N (a CUDA device ordinal), cuda:BUSID"), "{bad}: {}", stderr(&out));
    }
}
