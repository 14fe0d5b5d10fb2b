//! The agent's side of `accept`: the answer to a `check` request. The node is read and judged
//! exactly as `fabcheck check` reads and judges it (`probe::node::read`, then
//! `diagnose::node::judge`, no expectations: the fleet's majority is the reference), from the
//! live node or from the bundle a `serve --sysfs-root` serves; its drift facts come with it.

use crate::control::protocol::Reply;
use crate::diagnose::expect::Expectations;
use crate::diagnose::Scope;
use crate::probe::{self, Source};
use std::path::Path;

/// Longest NVIDIA module version read (`550.54.15`).
const VERSION_CAP: u64 = 256;

pub fn check(sysfs_root: Option<&Path>) -> Reply {
    let source = sysfs_root.map_or(Source::Live, |r| Source::Sysfs(r.to_path_buf()));
    match probe::node::read(&source, &[]) {
        Ok(node) => {
            let judged = crate::diagnose::node::judge(&node, &Expectations::default(), &Scope::default(), None);
            let root = sysfs_root.unwrap_or(Path::new("/sys"));
            let facts = crate::probe::facts::gather(&node, gpu_driver(root));
            Reply::Check { report: judged.report, facts }
        }
        Err(e) => Reply::Error { cause: e.to_string(), remedy: e.remedy() },
    }
}

/// The NVIDIA kernel module's version (`module/nvidia/version`), where it is loaded (or the
/// bundle captured it): bounded, one plain line, else nothing.
fn gpu_driver(root: &Path) -> Option<String> {
    let text = crate::sys::fs::read_text(&root.join("module/nvidia/version"), VERSION_CAP).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty() && line.chars().all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c))).then(|| line.to_string())
}
