//! Bundles: a node captured by `fabcheck bundle DIR` (the part of `/sys` fabcheck reads, and
//! its tools' outputs, at the paths `--sysfs-root DIR` reads them from) and its manifest,
//! `DIR/fabcheck-bundle.json`: where and when it was captured, by which fabcheck, on which
//! kernel, what was captured and what could not be, and why.
//!
//! The capture is `capture` (the sysfs part, and a source bundle's saved outputs) and `tools`
//! (the tools run on a live node); every read is bounded (`sys::beneath`: inside the tree, a
//! cap per file), every tool a bounded child (`sys::child`), the whole within a deadline and a
//! total size, and every file written through `sys::new_dir` (nothing planted is followed).
//! The manifest's types are here, and the one read of it that `devices`, `check` and the
//! exporter make: [`origin`], the host a bundle was captured on, which is the host their
//! documents name.

pub mod capture;
pub mod run;
mod tools;

#[cfg(test)]
mod tests;

use super::model::Unreadable;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The manifest's name in a bundle.
pub const MANIFEST: &str = "fabcheck-bundle.json";
/// Its schema (the `fabcheck bundle --json` document's too).
pub const SCHEMA: &str = "fabcheck.bundle.v1";
/// The largest manifest read back (a full list of skipped files is well below it).
const MANIFEST_CAP: u64 = 1 << 20;

/// Where and when a bundle was captured: the stamp of its manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Origin {
    pub host: String,
    /// RFC 3339 (UTC), when the capture began.
    pub time: String,
    pub fabcheck_version: String,
    /// The kernel release (`uname -r`) of the node, where it was read.
    pub kernel: Option<String>,
}

/// The manifest, less its stamp (host, fabcheck version, time: the document's stamp holds them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    pub schema: &'static str,
    #[serde(skip)]
    pub origin: Origin,
    pub kernel: Option<String>,
    /// What was read: `/sys`, or the tree given as `--sysfs-root`.
    pub source: String,
    /// Whether the tools were run (a live node); else a source bundle's saved outputs were copied.
    pub tools_run: bool,
    /// False when a limit stopped the capture before its end (`stopped` says which).
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub limits: Limits,
    pub seconds: f64,
    pub files: u64,
    pub bytes: u64,
    pub links: u64,
    /// What was captured, by area, in the order captured.
    pub captured: Vec<Area>,
    /// Every tool run on a live node, and what became of its output.
    pub tools: Vec<ToolRun>,
    /// Files and folders that exist in the source and were not captured, and why.
    pub skipped: Vec<Skipped>,
    /// Skipped beyond the list's length.
    pub skipped_more: u64,
    /// Attributes the kernel answered with no value (EINVAL, ENODEV: an unused GID slot, the
    /// speed of a link that is down), left out as sysfs does.
    pub no_value: u64,
}

/// The limits a capture ran under.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    /// The largest file copied from sysfs.
    pub sysfs_file_bytes: u64,
    /// The largest tool output (or saved output) kept.
    pub report_bytes: u64,
    pub total_bytes: u64,
    pub total_files: u64,
    pub deadline_s: u64,
}

/// Files of one area of the capture (`class/infiniband`, `tools`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Area {
    pub area: String,
    pub files: u64,
    pub bytes: u64,
}

/// One tool run: the command (no shell; as it was run), the file its output went to, and,
/// when it was not saved, why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRun {
    pub command: String,
    pub file: String,
    pub saved: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A path of the source (relative to its root) that was not captured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub why: String,
}

/// The manifest as written: its stamp (`host`, `fabcheck_version`, `time`) first, then the rest.
pub fn manifest_json(m: &Manifest) -> String {
    let mut map = serde_json::Map::new();
    map.insert("schema".into(), m.schema.into());
    map.insert("host".into(), m.origin.host.clone().into());
    map.insert("fabcheck_version".into(), m.origin.fabcheck_version.clone().into());
    map.insert("time".into(), m.origin.time.clone().into());
    if let Ok(serde_json::Value::Object(rest)) = serde_json::to_value(m) {
        for (k, v) in rest {
            map.entry(k).or_insert(v);
        }
    }
    let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}

/// What of the manifest is read back.
#[derive(Deserialize)]
struct Stamped {
    schema: String,
    host: String,
    time: String,
    fabcheck_version: String,
    #[serde(default)]
    kernel: Option<String>,
}

/// A host name as a manifest may hold it: letters, digits, `.`, `-`, `_`, at most 253 bytes,
/// never starting with `-` (what `endpoint` takes, and nothing a terminal or a shell reads).
pub fn valid_host(host: &str) -> bool {
    !host.is_empty() && host.len() <= 253 && !host.starts_with('-') && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// A short value of a manifest (a time, a version, a kernel release): printable ASCII.
fn plain(text: &str, max: usize) -> bool {
    !text.is_empty() && text.len() <= max && text.bytes().all(|b| b.is_ascii_graphic())
}

/// The origin of the bundle at `root`: `Ok(None)` when it has no manifest (captured before
/// 0.4, or by hand), an [`Unreadable`] naming the manifest when it cannot be read or holds what
/// a manifest cannot (a host name with a newline or an escape is refused, never printed).
pub fn origin(root: &Path) -> Result<Option<Origin>, Unreadable> {
    let tree = crate::sys::beneath::Tree::new(root.to_path_buf());
    let text = match tree.read_text(Path::new(MANIFEST), MANIFEST_CAP) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(Unreadable { path: e.path().display().to_string(), error: e.to_string() }),
    };
    let path = root.join(MANIFEST).display().to_string();
    let bad = |why: &str| Unreadable { path: path.clone(), error: format!("{path} {why}") };
    let doc: Stamped = serde_json::from_str(&text).map_err(|e| bad(&format!("is not a bundle manifest ({e})")))?;
    if doc.schema != SCHEMA {
        return Err(bad(&format!("is not a {SCHEMA} manifest")));
    }
    if !valid_host(&doc.host) {
        return Err(bad("holds a host name that is not one (letters, digits, '.', '-', '_')"));
    }
    if !plain(&doc.time, 64) || !plain(&doc.fabcheck_version, 64) || doc.kernel.as_deref().is_some_and(|k| !plain(k, 128)) {
        return Err(bad("holds a time, version or kernel that is not plain text"));
    }
    Ok(Some(Origin { host: doc.host, time: doc.time, fabcheck_version: doc.fabcheck_version, kernel: doc.kernel }))
}
