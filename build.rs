//! Build facts `fabcheck --version` prints: the git commit the binary was built from and the
//! build date (UTC), each "unknown" where it cannot be had (a source tarball, no git).
//!
//! Reproducible: the date is `SOURCE_DATE_EPOCH`'s when it is set (reproducible-builds.org), so
//! two builds of one commit with one `SOURCE_DATE_EPOCH` give the same bytes; no `date` child.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    // dist/package.sh names the commit itself, so a copy of the tree without `.git` builds the
    // same bytes.
    println!("cargo:rerun-if-env-changed=FABCHECK_GIT_COMMIT");
    let given = std::env::var("FABCHECK_GIT_COMMIT").ok().filter(|c| !c.trim().is_empty());
    let commit = given.map(|c| c.trim().to_string()).unwrap_or_else(git_commit);
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(secs) => Some(secs),
            Err(_) => panic!("SOURCE_DATE_EPOCH={text:?} is not a whole number of seconds since 1970"),
        },
        Err(_) => SystemTime::now().duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs()),
    };
    let date = epoch.map(civil_date).unwrap_or_else(|| "unknown".into());
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

fn git_commit() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Unix seconds as a UTC calendar date, `YYYY-MM-DD` (Howard Hinnant's civil-from-days).
fn civil_date(secs: u64) -> String {
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
