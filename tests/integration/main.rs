//! Host-tier integration tests: the CLI as users and CI drive it, with no RDMA device.
//! One binary, a module per topic.

mod cli;
mod fixtures;
mod fuzz;
mod gpu;
mod hardening;
mod mesh_patterns;
mod mesh_scale;
mod properties;
mod protocol;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fabcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(args).output().expect("run fabcheck")
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}
