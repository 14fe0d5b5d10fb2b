//! `pair --mem cuda...` on rxe0 with the TEST DOUBLE of the CUDA driver library
//! (tests/cuda-double, loaded through FABCHECK_CUDA_LIBRARY): the double serves host memory,
//! so this proves the plumbing (GPU choice, allocation, the dma-buf attempt and the
//! peer-memory fallback, no inline and no CPU polling on "device" memory, teardown order),
//! not GPU behaviour. rxe has no dma-buf memory regions: only the peermem-style path
//! (`ibv_reg_mr` on the buffer) can register here.

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

fn pair_with_double(dir: &Path, extra: &[&str], knobs: &[(&str, &str)]) -> (Output, Value) {
    let lib = build_cuda_double(dir);
    let mut c = Command::new(bin());
    c.args(["pair", "localhost", "localhost", "--device", DEVICE, "--json"]).args(extra);
    c.env("FABCHECK_CUDA_LIBRARY", &lib).env("FABCHECK_CUDA_DOUBLE_LOG", dir.join("agent-%p.log")).env_remove("FABCHECK_CUDA_DOUBLE_FAIL");
    for (k, v) in knobs {
        c.env(k, v);
    }
    let out = c.output().expect("run fabcheck");
    let doc = json(&out);
    (out, doc)
}

/// Every agent's call log: as many frees as allocations, each context released after the
/// last free, and something was allocated at all.
fn assert_teardown_in_order(dir: &Path) -> usize {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("agent-") && n.ends_with(".log")))
        .collect();
    assert_eq!(logs.len(), 2, "one log per agent: {logs:?}");
    let mut allocations = 0;
    for log in &logs {
        let lines: Vec<String> = std::fs::read_to_string(log).unwrap().lines().map(str::to_string).collect();
        let (mut live, mut retained) = (0i64, 0i64);
        for line in &lines {
            match line.split_whitespace().next() {
                Some("alloc") => {
                    assert!(retained > 0, "{}: allocation without a context: {lines:#?}", log.display());
                    live += 1;
                    allocations += 1;
                }
                Some("free") => live -= 1,
                Some("retain") => retained += 1,
                Some("release") => {
                    assert_eq!(live, 0, "{}: context released with GPU memory still allocated: {lines:#?}", log.display());
                    retained -= 1;
                }
                _ => {}
            }
        }
        assert_eq!((live, retained), (0, 0), "{}: memory or a context left: {lines:#?}", log.display());
    }
    assert!(allocations > 0, "the agents allocated nothing: the test would prove nothing");
    allocations
}

/// No memory region is left on rxe0 (the rxe tier's leftover check, for registrations).
fn assert_no_registration_left() {
    let out = Command::new("rdma").args(["resource", "show", "mr"]).output().expect("run rdma (iproute2)");
    assert!(out.status.success(), "rdma resource show mr failed: {}", String::from_utf8_lossy(&out.stderr));
    let left: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(DEVICE)).map(str::to_string).collect();
    assert!(left.is_empty(), "memory regions left on {DEVICE}: {left:#?}");
}

#[test]
fn cuda_double_pair_auto_runs_every_test_through_the_peermem_path() {
    let _serial = require_rxe();
    let dir = workdir("auto");
    let (out, doc) = pair_with_double(&dir, &["--mem", "cuda:auto", "--iters", "200"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}\n{doc:#}");
    for side in ["a", "b"] {
        let s = &doc[side];
        assert_eq!(text(s, "mem"), "cuda:0", "cuda:auto resolved to the double's one GPU: {s}");
        assert_eq!(text(s, "mem_path"), "peermem", "{s}");
        assert_eq!(text(s, "gpu"), "0000:00:00.0", "{s}");
    }
    let results = doc["results"].as_array().unwrap();
    for test in ["send_lat", "write_lat", "read_lat", "write_bw", "read_bw", "send_bw"] {
        let r = results.iter().find(|r| r["test"] == test).unwrap_or_else(|| panic!("{test} did not run: {doc:#}"));
        assert!(r["error"].is_null(), "{test}: {r}");
        assert!(r["iterations"].as_u64().unwrap_or(0) > 0, "{test}: {r}");
    }
    // rxe0 is no PCI function: the GPU's distance is unknown, said as check says it.
    let findings = doc["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["id"] == "gpu.affinity" && f["severity"] == "warning"), "{doc:#}");
    assert_teardown_in_order(&dir);
    assert_no_registration_left();
}

#[test]
fn cuda_double_dmabuf_refused_by_rxe_falls_back_to_peermem() {
    let _serial = require_rxe();
    let dir = workdir("dmabuf");
    // The double "exports" a descriptor; rxe refuses ibv_reg_dmabuf_mr (EOPNOTSUPP): fallback.
    let (out, doc) = pair_with_double(
        &dir,
        &["--mem", "cuda:0", "--tests", "write_bw,write_lat", "--iters", "200"],
        &[("FABCHECK_CUDA_DOUBLE_FAIL", "export_ok")],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{doc:#}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text(&doc["a"], "mem_path"), "peermem");
    let exported =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).any(|e| std::fs::read_to_string(e.path()).unwrap_or_default().contains("export fd"));
    assert!(exported, "the dma-buf branch was tried (a descriptor exported)");
    assert_teardown_in_order(&dir);
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
