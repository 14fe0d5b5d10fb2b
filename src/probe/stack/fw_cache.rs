//! A firmware query's output kept for the rest of the boot: `mlxconfig -e query` takes seconds
//! per NIC, and NHC runs `check` every few minutes while an exporter scrapes it. What the
//! firmware will apply at the next boot changes only when someone runs `mlxconfig set`, so a
//! cached answer says "as of this boot"; the cache lives in `/run/fabcheck/` (tmpfs, gone at
//! reboot) and is keyed by `/proc/sys/kernel/random/boot_id` as well.
//!
//! Others may write to `/run`: the directory is created 0700, a file is written through an
//! exclusive temporary file (`O_EXCL|O_NOFOLLOW`, 0600) and renamed, and a cache that is not a
//! regular file owned by this user, or does not parse, is ignored.

use crate::sys::fs::read_text;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the live cache lives.
pub const LIVE_DIR: &str = "/run/fabcheck";
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
/// A query's table is a few KiB; anything far larger is not ours.
const CACHE_CAP: u64 = 256 << 10;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Entry {
    boot_id: String,
    bdf: String,
    tool: String,
    output: String,
}

/// The cache in `dir` for boot `boot_id`.
#[derive(Debug, Clone)]
pub struct FwCache {
    dir: PathBuf,
    boot_id: String,
}

impl FwCache {
    /// The live cache, when this boot's id can be read.
    pub fn live() -> Option<FwCache> {
        let boot_id = read_text(Path::new(BOOT_ID), 4096).ok()?.trim().to_string();
        FwCache::at(LIVE_DIR, &boot_id)
    }

    pub fn at(dir: impl Into<PathBuf>, boot_id: &str) -> Option<FwCache> {
        let valid = !boot_id.is_empty() && boot_id.len() <= 64 && boot_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        valid.then(|| FwCache { dir: dir.into(), boot_id: boot_id.to_string() })
    }

    fn file(&self, bdf: &str) -> PathBuf {
        self.dir.join(format!("fwconfig-{bdf}.json"))
    }

    /// The tool and output cached for `bdf` in this boot, if any is there and trustworthy.
    pub fn get(&self, bdf: &str) -> Option<(String, String)> {
        let path = self.file(bdf);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.file_type().is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
            return None;
        }
        let text = read_text(&path, CACHE_CAP).ok()?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        (entry.boot_id == self.boot_id && entry.bdf == bdf).then_some((entry.tool, entry.output))
    }

    /// Keeps `output` of `tool` for `bdf`; a cache that cannot be written is no error (the next
    /// run queries again).
    pub fn put(&self, bdf: &str, tool: &str, output: &str) {
        let _ = self.try_put(bdf, tool, output);
    }

    fn try_put(&self, bdf: &str, tool: &str, output: &str) -> std::io::Result<()> {
        self.ensure_dir()?;
        let entry = Entry { boot_id: self.boot_id.clone(), bdf: bdf.into(), tool: tool.into(), output: output.into() };
        let body = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        // The one file writer (exclusive 0600 temporary file, fsync, rename, fsync of the folder).
        crate::sys::atomic::write_private(&self.file(bdf), &body).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(())
    }

    /// The directory, made 0700 if missing; one that is a symlink, not ours or open to others
    /// is not used.
    fn ensure_dir(&self) -> std::io::Result<()> {
        match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = std::fs::symlink_metadata(&self.dir)?;
        let ours = meta.file_type().is_dir() && meta.uid() == nix::unistd::geteuid().as_raw() && meta.permissions().mode() & 0o077 == 0;
        if ours {
            Ok(())
        } else {
            Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "cache directory is not this user's alone"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabcheck-fwcache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn round_trip_within_one_boot_only() {
        let dir = scratch("trip");
        let cache = FwCache::at(&dir, "0f1e2d3c-aaaa-bbbb-cccc-000000000001").unwrap();
        assert_eq!(cache.get("0000:17:00.0"), None);
        cache.put("0000:17:00.0", "mlxconfig", "Configurations: Current Next Boot\n");
        assert_eq!(cache.get("0000:17:00.0"), Some(("mlxconfig".into(), "Configurations: Current Next Boot\n".into())));
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(cache.file("0000:17:00.0")).unwrap().permissions().mode() & 0o777, 0o600);
        // Another boot, another device: nothing.
        assert_eq!(FwCache::at(&dir, "0f1e2d3c-aaaa-bbbb-cccc-000000000002").unwrap().get("0000:17:00.0"), None);
        assert_eq!(cache.get("0000:18:00.0"), None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn malformed_or_foreign_entries_are_ignored() {
        let dir = scratch("bad");
        let cache = FwCache::at(&dir, "abcd").unwrap();
        cache.put("0000:17:00.0", "mlxconfig", "x");
        std::fs::write(cache.file("0000:17:00.0"), "{not json").unwrap();
        assert_eq!(cache.get("0000:17:00.0"), None);
        // A symlink planted where the cache goes is not followed.
        std::fs::remove_file(cache.file("0000:17:00.0")).unwrap();
        let target = dir.join("elsewhere.json");
        std::fs::write(
            &target,
            serde_json::to_string(&Entry { boot_id: "abcd".into(), bdf: "0000:17:00.0".into(), tool: "t".into(), output: "o".into() }).unwrap(),
        )
        .unwrap();
        std::os::unix::fs::symlink(&target, cache.file("0000:17:00.0")).unwrap();
        assert_eq!(cache.get("0000:17:00.0"), None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_directory_open_to_others_is_not_used() {
        let dir = scratch("open");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let cache = FwCache::at(&dir, "abcd").unwrap();
        cache.put("0000:17:00.0", "mlxconfig", "x");
        assert_eq!(cache.get("0000:17:00.0"), None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn boot_ids_are_checked() {
        assert!(FwCache::at("/tmp", "").is_none());
        assert!(FwCache::at("/tmp", "../../etc").is_none());
    }
}
