//! `pair --mem cuda...` on rxe0 with the TEST DOUBLE of the CUDA driver library
//! (tests/cuda-double, loaded through FABCHECK_CUDA_LIBRARY and preloaded so it sees the
//! registrations). The double serves host memory, so this proves the plumbing (GPU choice,
//! allocation, the dma-buf attempt and the peer-memory fallback, context lifetime, teardown
//! order), not GPU behaviour; and, because the double makes registered "device memory"
//! PROT_NONE, that the CPU never touches device bytes on any test while rxe, which reaches
//! the pinned pages through the kernel, moves them. rxe has no dma-buf memory regions: only the
//! peermem-style path (`ibv_reg_mr` on the buffer) can register here.

use super::{bin, json, require_rxe, text, DEVICE};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CUDA_DOUBLE_SOURCE: &str = "tests/cuda-double/cuda_double.c";
include!("../cuda-double/build_double.rs");

/// The guest's /tmp is a tmpfs it can write (the host's / is mounted read-only).
fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-rxe-cuda-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const KNOBS: [&str; 5] = [
    "FABCHECK_CUDA_DOUBLE_FAIL",
    "FABCHECK_CUDA_DOUBLE_MISALIGN",
    "FABCHECK_CUDA_DOUBLE_DMABUF_ATTR",
    "FABCHECK_CUDA_DOUBLE_PROTECT",
    "FABCHECK_CUDA_DOUBLE_BUS_IDS",
];

fn pair_with_double(dir: &Path, extra: &[&str], knobs: &[(&str, &str)]) -> (Output, Value) {
    let lib = build_cuda_double(dir);
    let mut c = Command::new(bin());
    c.args(["pair", "localhost", "localhost", "--device", DEVICE, "--json"]).args(extra);
    // Preloaded: the double sees rxe's registrations (ibv_cmd_reg_mr) and protects the memory.
    c.env("FABCHECK_CUDA_LIBRARY", &lib).env("LD_PRELOAD", &lib).env("FABCHECK_CUDA_DOUBLE_LOG", dir.join("agent-%p.log"));
    for k in KNOBS {
        c.env_remove(k);
    }
    for (k, v) in knobs {
        c.env(k, v);
    }
    let out = c.output().expect("run fabcheck");
    // Exit 2 (the run could not run) writes no document.
    let doc = if out.status.code() == Some(2) { Value::Null } else { json(&out) };
    (out, doc)
}

/// Every agent's call log.
fn agent_logs(dir: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let mut logs: Vec<(PathBuf, Vec<String>)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("agent-") && n.ends_with(".log")))
        .map(|p| {
            let lines = std::fs::read_to_string(&p).unwrap().lines().map(str::to_string).collect();
            (p, lines)
        })
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 2, "one log per agent: {logs:?}");
    logs
}

/// What every run on the double must show, agent by agent: the double saw the registrations
/// (preloaded), every allocation was registered and made PROT_NONE before the tests touched it,
/// none was freed while a registration still covered it, as many frees as allocations, and
/// one primary context per GPU for the agent's life (created once, never destroyed). Returns
/// the allocations counted.
fn assert_device_memory_kept_honest(dir: &Path) -> usize {
    let mut allocations = 0;
    for (log, lines) in agent_logs(dir) {
        let at = log.display();
        assert!(lines.contains(&"hooks on".to_string()), "{at}: the double did not interpose on ibv_cmd_reg_mr: {lines:#?}");
        let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count();
        let frees = lines.iter().filter(|l| *l == "free").count();
        let protects = lines.iter().filter(|l| l.starts_with("register ") && l.ends_with(" protect")).count();
        let allocs = count("alloc ");
        assert!(allocs > 0, "{at}: the agent allocated nothing: the test would prove nothing");
        assert_eq!(count("free-while-registered"), 0, "{at}: cuMemFree while a memory region still covered the buffer: {lines:#?}");
        assert_eq!(frees, allocs, "{at}: every allocation freed: {lines:#?}");
        assert_eq!(protects, allocs, "{at}: every allocation registered, then PROT_NONE: {lines:#?}");
        assert_eq!(count("dereg"), allocs, "{at}: every registration dropped: {lines:#?}");
        assert_eq!(count("ctx-create"), 1, "{at}: one context for the agent's life, not one per test: {lines:#?}");
        assert_eq!(count("ctx-destroy") + count("release"), 0, "{at}: the context is kept, not released: {lines:#?}");
        allocations += allocs;
    }
    allocations
}

/// No memory region is left on rxe0 (the rxe tier's leftover check, for registrations).
fn assert_no_registration_left() {
    let out = Command::new("rdma").args(["resource", "show", "mr"]).output().expect("run rdma (iproute2)");
    assert!(out.status.success(), "rdma resource show mr failed: {}", String::from_utf8_lossy(&out.stderr));
    let left: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(DEVICE)).map(str::to_string).collect();
    assert!(left.is_empty(), "memory regions left on {DEVICE}: {left:#?}");
}

fn assert_every_test_ran(doc: &Value, tests: &[&str]) {
    let results = doc["results"].as_array().unwrap_or_else(|| panic!("no results: {doc:#}"));
    for test in tests {
        let r = results.iter().find(|r| r["test"] == *test).unwrap_or_else(|| panic!("{test} did not run: {doc:#}"));
        assert!(r["error"].is_null(), "{test}: {r}");
        assert!(r["iterations"].as_u64().unwrap_or(0) > 0, "{test}: {r}");
    }
}

fn lines_with(dir: &Path, prefix: &str) -> usize {
    agent_logs(dir).iter().flat_map(|(_, l)| l.iter()).filter(|l| l.starts_with(prefix)).count()
}

/// Every test kind, send_lat at its default 2 bytes (a SEND that mlx5 would put in the CQE
/// unless told not to), on memory the CPU cannot read or write.
#[test]
fn cuda_double_every_test_runs_on_memory_the_cpu_cannot_touch() {
    let _serial = require_rxe();
    let dir = workdir("prot-none");
    let (out, doc) = pair_with_double(&dir, &["--mem", "cuda:auto", "--iters", "200"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}\n{doc:#}");
    for side in ["a", "b"] {
        let s = &doc[side];
        assert_eq!(text(s, "mem"), "cuda:0", "cuda:auto resolved to the double's one GPU: {s}");
        assert_eq!(text(s, "mem_path"), "peermem", "{s}");
        assert_eq!(text(s, "gpu"), "0000:00:00.0", "{s}");
    }
    assert_every_test_ran(&doc, &["send_lat", "write_lat", "read_lat", "write_bw", "read_bw", "send_bw"]);
    let send_lat = doc["results"].as_array().unwrap().iter().find(|r| r["test"] == "send_lat").unwrap();
    assert_eq!(send_lat["size"], 2, "{send_lat}");
    // rxe0 is no PCI function: the GPU's distance is unknown, said as check says it.
    let findings = doc["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["id"] == "gpu.affinity" && f["severity"] == "warning"), "{doc:#}");
    let allocations = assert_device_memory_kept_honest(&dir);
    assert!(allocations >= 12, "six tests, two agents, one buffer each: {allocations}");
    assert_eq!(lines_with(&dir, "export refused"), allocations, "the dma-buf export was tried for each buffer");
    assert_no_registration_left();
}

/// cuMemAlloc guarantees 256-byte alignment only: the export names the page below with the
/// buffer's offset (old code exported the pointer as is: CUDA_ERROR_INVALID_VALUE, exit 2).
/// The double then exports; rxe refuses the dma-buf (EOPNOTSUPP) and peer memory takes over.
#[test]
fn cuda_double_pointers_off_a_page_boundary_export_from_the_page_below_then_fall_back() {
    let _serial = require_rxe();
    let dir = workdir("misaligned");
    let (out, doc) = pair_with_double(
        &dir,
        &["--mem", "cuda:0", "--tests", "send_lat,write_bw,read_bw,send_bw", "--iters", "200"],
        &[("FABCHECK_CUDA_DOUBLE_MISALIGN", "256"), ("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok")],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{doc:#}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text(&doc["a"], "mem_path"), "peermem");
    assert_every_test_ran(&doc, &["send_lat", "write_bw", "read_bw", "send_bw"]);
    let logs = agent_logs(&dir);
    assert!(logs.iter().all(|(_, l)| l.iter().any(|l| l == "alloc 131072 at page offset 256")), "the knob took: {logs:#?}");
    assert_eq!(lines_with(&dir, "export misaligned"), 0, "{logs:#?}");
    let allocations = assert_device_memory_kept_honest(&dir);
    assert_eq!(lines_with(&dir, "export fd"), allocations, "the dma-buf branch was tried for each buffer: {logs:#?}");
    assert_no_registration_left();
}

/// cuda.h: query CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED before exporting. At 0 the double takes
/// an export as a violation (old code asked anyway: CUDA_ERROR_INVALID_VALUE, exit 2).
#[test]
fn cuda_double_dmabuf_attribute_0_goes_to_peermem_without_an_export() {
    let _serial = require_rxe();
    let dir = workdir("attr0");
    let (out, doc) = pair_with_double(
        &dir,
        &["--mem", "cuda:0", "--tests", "send_lat,write_bw,read_bw,send_bw", "--iters", "200"],
        &[("FABCHECK_CUDA_DOUBLE_DMABUF_ATTR", "0"), ("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok")],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{doc:#}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text(&doc["b"], "mem_path"), "peermem");
    assert_every_test_ran(&doc, &["send_lat", "write_bw", "read_bw", "send_bw"]);
    let allocations = assert_device_memory_kept_honest(&dir);
    assert_eq!(lines_with(&dir, "attr dmabuf 0"), allocations, "asked once per buffer");
    assert_eq!(lines_with(&dir, "export"), 0, "never exported: {:#?}", agent_logs(&dir));
    assert_no_registration_left();
}

/// The contract: `--mem cuda:BUSID` as nvidia-smi prints it; the double lists the GPU as CUDA
/// does (upper case), and it is ordinal 1 here.
#[test]
fn cuda_double_pair_selects_the_gpu_by_bus_id() {
    let _serial = require_rxe();
    let dir = workdir("busid");
    let (out, doc) = pair_with_double(
        &dir,
        &["--mem", "cuda:0000:1a:00.0", "--tests", "send_lat", "--iters", "100"],
        &[("FABCHECK_CUDA_DOUBLE_BUS_IDS", "0000:00:00.0,0000:1a:00.0")],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{doc:#}", String::from_utf8_lossy(&out.stderr));
    for side in ["a", "b"] {
        assert_eq!(text(&doc[side], "gpu"), "0000:1a:00.0", "{}", doc[side]);
        assert_eq!(text(&doc[side], "mem"), "cuda:1", "the agent says the ordinal it used: {}", doc[side]);
    }
    assert!(agent_logs(&dir).iter().all(|(_, l)| l.contains(&"ctx-create 1".to_string())), "GPU 1's context");
    assert_device_memory_kept_honest(&dir);
    // An address CUDA does not list: exit 2, naming what it does list.
    let (out, _) = pair_with_double(&workdir("busid-missing"), &["--mem", "cuda:0000:9d:00.0", "--tests", "send_lat"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("CUDA sees no GPU at 0000:9d:00.0 (it sees cuda:0 0000:00:00.0)"), "{err}");
    assert_no_registration_left();
}

/// Memory the kernel cannot pin, as rxe cannot pin a real GPU address (no dma-buf regions, no
/// peer memory): the run ends in a GPU-registration error naming the GPU and the node's GPU
/// finding, exit 2 (what benches/gpu-check.sh expects on a GPU node's Soft-RoCE).
#[test]
fn cuda_double_memory_the_kernel_cannot_pin_is_a_gpu_registration_error() {
    let _serial = require_rxe();
    let dir = workdir("unpinnable");
    let (out, _) = pair_with_double(&dir, &["--mem", "cuda:0", "--tests", "send_lat", "--iters", "50"], &[("FABCHECK_CUDA_DOUBLE_PROTECT", "early")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("registering GPU memory of 0000:00:00.0 (cuda:0) failed: ibv_reg_mr("), "{err}");
    assert!(err.contains("gpu.peermem") && err.contains("modprobe nvidia_peermem"), "the node's GPU finding and its remedy: {err}");
    assert_eq!(lines_with(&dir, "register "), 0, "nothing registered");
    assert_no_registration_left();
}

/// rdma_cm's queue pairs cannot carry mlx5's per-QP flag; rxe is no mlx5 (libmlx5 is loaded and
/// says so), so `--cm` on GPU memory runs here, receives into device memory included.
#[test]
fn cuda_double_rdma_cm_on_a_device_that_is_not_mlx5_runs() {
    let _serial = require_rxe();
    let dir = workdir("cm");
    let (out, doc) = pair_with_double(&dir, &["--cm", "--mem", "cuda:0", "--tests", "send_lat,send_bw", "--direction", "ab", "--iters", "100"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}\n{doc:#}", String::from_utf8_lossy(&out.stderr));
    assert_every_test_ran(&doc, &["send_lat", "send_bw"]);
    assert_device_memory_kept_honest(&dir);
    assert_no_registration_left();
}

#[test]
fn cuda_double_allocation_failure_is_exit_2_naming_the_driver_error() {
    let _serial = require_rxe();
    let dir = workdir("alloc");
    let lib = build_cuda_double(&dir);
    let out = Command::new(bin())
        .args(["pair", "localhost", "localhost", "--device", DEVICE, "--mem", "cuda:0", "--tests", "send_lat", "--iters", "50"])
        .env("FABCHECK_CUDA_LIBRARY", &lib)
        .env("FABCHECK_CUDA_DOUBLE_FAIL", "alloc")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"), "{err}");
    assert_no_registration_left();
}
