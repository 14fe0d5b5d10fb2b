//! The Soft-RoCE tier: every verbs path against a live rxe0, inside the guest that
//! `soft-roce-setup.sh --vm` boots (or natively where the kernel has rxe). Built with
//! `cargo test --test rxe --no-run`, run by tests/rxe/run.sh. Not part of plain
//! `cargo test`: these tests need the device and must fail loudly without it.

mod check;
mod cuda_double;
mod devices;
mod exporter;
mod faults;
mod mesh_patterns;
mod pair;
mod qos;
mod rails;

use std::process::{Command, Output};
use std::sync::Mutex;

/// Tests change the guest's network (faults); they run one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub const DEVICE: &str = "rxe0";
pub const NETDEV: &str = "va";

/// Panics unless rxe0 exists: a verbs test that finds nothing must fail, not pass.
pub fn require_rxe() -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = format!("/sys/class/infiniband/{DEVICE}");
    assert!(
        std::path::Path::new(&path).exists(),
        "rxe tier: {path} is missing. Run this tier through `./soft-roce-setup.sh --vm -- tests/rxe/run.sh RXE_TEST_BINARY` \
         or create it with `./soft-roce-setup.sh --netdev {NETDEV}`"
    );
    guard
}

/// The fabcheck binary under test: this build's, or `FABCHECK_BIN` (a deliberately broken
/// build, to check that these tests catch it).
pub fn bin() -> String {
    std::env::var("FABCHECK_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_fabcheck").to_string())
}

pub fn fabcheck(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run fabcheck")
}

/// A string field of a JSON document, by the contract's key: missing or mistyped is a failure.
pub fn text<'a>(v: &'a serde_json::Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("no string '{key}' in {v}"))
}

/// A number field of a JSON document, by the contract's key.
pub fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no number '{key}' in {v}"))
}

pub fn sh(command: &str) -> Output {
    Command::new("sh").arg("-c").arg(command).output().expect("run sh")
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}):\nstdout: {}\nstderr: {}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

/// Runs a shell command on drop: restores the guest's network after a fault test.
pub struct Restore(pub &'static str);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = sh(self.0);
        // Let rxe notice the netdev event before the next test.
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
