//! rdma-core is loaded at run time, never linked (issue 15): the binary starts on a node
//! without it, and says what to install.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RDMA_LIBRARIES: [&str; 5] = ["libibverbs", "librdmacm", "libibumad", "libibmad", "libibnetdisc"];

#[test]
fn the_binary_links_no_rdma_core_library() {
    let out = Command::new("readelf").args(["-d", env!("CARGO_BIN_EXE_fabcheck")]).output().expect("readelf (binutils) runs");
    assert!(out.status.success());
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
    assert!(!needed.is_empty(), "a dynamically linked binary needs libc at least:\n{dynamic}");
    for line in &needed {
        assert!(!RDMA_LIBRARIES.iter().any(|lib| line.contains(lib)), "linked, not loaded at run time: {line}");
    }
}

/// A root holding the binary, the libraries `ldd` lists for it and nothing else: a node
/// without rdma-core, as far as the binary can tell.
fn bare_root() -> PathBuf {
    let root = std::env::temp_dir().join(format!("fabcheck-bare-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("tmp")).unwrap();
    let binary = env!("CARGO_BIN_EXE_fabcheck");
    std::fs::copy(binary, root.join("fabcheck")).unwrap();
    let ldd = Command::new("ldd").arg(binary).output().expect("ldd runs");
    for path in String::from_utf8_lossy(&ldd.stdout).split_whitespace().filter(|w| w.starts_with('/')) {
        let inside = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
        std::fs::copy(path, &inside).unwrap_or_else(|e| panic!("copy {path}: {e}"));
    }
    root
}

/// `chroot ROOT /fabcheck ARGS`, as root, or in a user namespace where it maps us to root.
fn in_root(root: &Path, args: &[&str]) -> Output {
    let root_arg = root.to_str().unwrap();
    let direct = nix::unistd::geteuid().is_root();
    let mut command = if direct { Command::new("chroot") } else { Command::new("unshare") };
    if !direct {
        command.args(["--user", "--map-root-user", "chroot"]);
    }
    command.arg(root_arg).arg("/fabcheck").args(args).output().expect("chroot runs")
}

#[test]
fn without_rdma_core_it_starts_and_says_what_to_install() {
    let root = bare_root();
    let version = in_root(&root, &["--version"]);
    assert!(
        version.status.success(),
        "chroot (or unshare) must work here to test a node without rdma-core: {}",
        String::from_utf8_lossy(&version.stderr)
    );
    assert!(String::from_utf8_lossy(&version.stdout).contains("rdma-core here: not found"), "{}", String::from_utf8_lossy(&version.stdout));

    let devices = in_root(&root, &["devices"]);
    assert_eq!(devices.status.code(), Some(2), "devices cannot run without libibverbs");
    let stderr = String::from_utf8_lossy(&devices.stderr);
    assert!(stderr.contains("rdma-core (libibverbs) is not installed") && stderr.contains("apt install rdma-core"), "{stderr}");

    let check = in_root(&root, &["check", "--format", "json"]);
    assert_eq!(check.status.code(), Some(1), "check runs and fails: {}", String::from_utf8_lossy(&check.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&check.stdout).expect("one JSON document");
    let finding = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == "stack.rdma_core").expect("a stack.rdma_core finding");
    assert_eq!(finding["severity"], "error");
    assert!(finding["message"].as_str().unwrap().contains("libibverbs.so.1 cannot be loaded"), "{finding}");
    assert!(finding["remedy"].as_str().unwrap().contains("dnf install rdma-core"), "{finding}");

    let oneline = in_root(&root, &["check", "--format", "oneline"]);
    assert_eq!(oneline.status.code(), Some(1));
    let line = String::from_utf8_lossy(&oneline.stdout);
    assert_eq!(line.lines().count(), 1, "{line}");
    std::fs::remove_dir_all(&root).ok();
}
