//! Build facts `fabcheck --version` prints: the git commit the binary was built from and the
//! build date (UTC), each "unknown" where it cannot be had (a source tarball, no git).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FABCHECK_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=FABCHECK_BUILD_DATE={date}");
    // Where git keeps them: in a worktree `.git` is a file, and a path that does not exist
    // would make cargo rerun this script, and rebuild the crate, on every build.
    for path in ["HEAD", "refs/heads"] {
        let located = Command::new("git")
            .args(["rev-parse", "--git-path", path])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| std::path::Path::new(s).exists());
        if let Some(located) = located {
            println!("cargo:rerun-if-changed={located}");
        }
    }
}
