//! The Soft-RoCE tier: every verbs path against a live rxe0, inside the guest that
//! `soft-roce-setup.sh --vm` boots (or natively where the kernel has rxe). Built with
//! `cargo test --test rxe --no-run`, run by tests/rxe/run.sh. Not part of plain
//! `cargo test`: these tests need the device and must fail loudly without it.

mod bond;
mod bundle;
mod burn_in;
mod check;
mod collective;
mod cuda_double;
mod devices;
mod exporter;
mod faults;
mod flap;
mod mesh_patterns;
mod pair;
mod parity;
mod paths;
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

/// What `--remote-fabcheck` takes: letters, digits and `/._-+` (fabcheck refuses a path the
/// remote login shell would split or expand, src/control/link.rs).
fn is_plain(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('-') && path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
}

/// `bin()` at a path `--remote-fabcheck` takes, for agents started over ssh or srun: the one in
/// `FABCHECK_REMOTE_BIN` (tests/rxe/two-hosts.sh copies the binary to one plain path on both
/// guests), else `bin()` itself where its path is plain, else a link to it in this guest's /tmp
/// (a checkout under `/tmp/a b`): enough for the stand-ins for ssh and srun, which start the agent
/// here.
pub fn remote_bin() -> String {
    if let Ok(path) = std::env::var("FABCHECK_REMOTE_BIN") {
        return path;
    }
    let bin = bin();
    if is_plain(&bin) {
        return bin;
    }
    static LINK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINK.get_or_init(|| {
        let dir = std::path::PathBuf::from(format!("/tmp/fabcheck-remote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("fabcheck");
        std::os::unix::fs::symlink(&bin, &link).unwrap();
        link.display().to_string()
    })
    .clone()
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
