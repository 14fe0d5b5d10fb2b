// Builds the CUDA driver test double (tests/cuda-double/cuda_double.c) with the C compiler
// tests/deps.sh installs (build-essential), into `dir`. Shared by the host tier
// (crates/fabcheck-verbs/tests/cuda_double.rs, tests/integration/cuda.rs) and the rxe tier
// (tests/rxe/cuda_double.rs: the guest chroots into the host's /, so the same `cc` is there;
// its /tmp is a tmpfs it can write). `include!`d, so each test binary has its own copy.

/// The double's shared library, built once per `dir`; panics (the test fails) without `cc`.
#[allow(dead_code)]
pub fn build_cuda_double(dir: &std::path::Path) -> std::path::PathBuf {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CUDA_DOUBLE_SOURCE);
    std::fs::create_dir_all(dir).expect("create the double's directory");
    let out = dir.join("libcuda-double.so");
    let status = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("cannot run cc to build the CUDA test double ({e}): install build-essential (tests/deps.sh)"));
    assert!(status.success(), "cc failed to build {}", source.display());
    out
}
