//! A sysfs tree to read: the live `/sys`, or a captured copy laid out as `ROOT/class/...`
//! (a bundle). Every path is resolved inside the root (`sys::beneath`): a link or a `..` that
//! leads out of it is refused and named as unreadable, and netdev names read from the tree are
//! checked before they become paths. The readers every probe shares (the inventory in
//! `sysfs`, the physical layer's and the QoS set-up's saved reports) are here; what is built from
//! them is in its own room.

use crate::sys::beneath::Tree;
use crate::sys::fs::{ReadError, SYSFS_CAP};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// A file of the inventory's source that could not be read.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Unreadable {
    pub path: String,
    pub error: String,
}

/// Largest tool report kept, saved or run (an `ethtool -S` of a ConnectX-7 is about 40 KiB).
pub const REPORT_CAP: u64 = 1 << 20;

/// The sysfs tree to read.
#[derive(Debug, Clone)]
pub struct SysfsRoot {
    pub(super) root: PathBuf,
    /// The same root, read from the inside only.
    pub(super) tree: Tree,
    /// Files that exist but could not be read, gathered while the tree is walked.
    unreadable: RefCell<Vec<Unreadable>>,
}

impl SysfsRoot {
    /// The live system.
    pub fn live() -> Self {
        SysfsRoot::at("/sys")
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        SysfsRoot { tree: Tree::new(root.clone()), root, unreadable: RefCell::new(Vec::new()) }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn ib_class(&self) -> PathBuf {
        self.root.join("class/infiniband")
    }

    pub(super) fn net_class(&self) -> PathBuf {
        self.root.join("class/net")
    }

    /// Names of the RDMA devices, in natural order (mlx5_2 before mlx5_10).
    pub fn device_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.list(&self.ib_class()).into_iter().filter_map(|n| n.into_string().ok()).collect();
        names.sort_by_key(|n| natural_key(n));
        names
    }

    /// The files found unreadable so far (and forgets them).
    pub fn take_unreadable(&self) -> Vec<Unreadable> {
        std::mem::take(&mut *self.unreadable.borrow_mut())
    }

    pub(super) fn note(&self, err: ReadError) {
        let path = err.path().display().to_string();
        let mut list = self.unreadable.borrow_mut();
        if list.len() < 256 && !list.iter().any(|u| u.path == path) {
            list.push(Unreadable { path, error: err.to_string() });
        }
    }

    /// `path` (built by joining onto the root) as a path inside the tree.
    pub(super) fn inside<'a>(&self, path: &'a Path) -> &'a Path {
        // A path not under the root stays absolute, and the tree refuses it.
        path.strip_prefix(&self.root).unwrap_or(path)
    }

    pub(super) fn exists(&self, path: &Path) -> bool {
        self.tree.exists(self.inside(path))
    }

    /// An attribute's text, trimmed; `None` when absent, and noted when present but unreadable.
    pub(super) fn read_trim(&self, path: &Path) -> Option<String> {
        match self.tree.read_text(self.inside(path), SYSFS_CAP) {
            Ok(text) => Some(text.trim().to_string()),
            Err(e) if e.is_no_value() => None,
            Err(e) => {
                self.note(e);
                None
            }
        }
    }

    pub(super) fn read_numbered(&self, path: &Path) -> Option<u32> {
        crate::port::parse_numbered(&self.read_trim(path)?)
    }

    pub(super) fn read_hex(&self, path: &Path) -> Option<u32> {
        let text = self.read_trim(path)?;
        let digits = text.strip_prefix("0x").unwrap_or(&text);
        u32::from_str_radix(digits, 16).ok()
    }

    /// A netdev name read from file `path`, if it is one (noted as unreadable when it is not: a
    /// `../../../sys/class/net/lo` there would otherwise become a path).
    pub(super) fn read_netdev_name(&self, path: &Path) -> Option<String> {
        let name = self.read_trim(path).filter(|s| !s.is_empty())?;
        if valid_netdev_name(&name) {
            return Some(name);
        }
        let shown: String = name.chars().flat_map(char::escape_default).take(80).collect();
        self.note(ReadError::Invalid { path: path.to_path_buf(), why: format!("'{shown}', not a network interface name") });
        None
    }

    pub(super) fn list(&self, dir: &Path) -> Vec<std::ffi::OsString> {
        self.tree.list_dir(self.inside(dir)).unwrap_or_else(|e| {
            self.note(e);
            Vec::new()
        })
    }

    /// Directory entries that are plain numbers (port numbers, GID indexes), sorted.
    pub(super) fn list_numbered(&self, dir: &Path) -> Vec<u32> {
        let mut numbers: Vec<u32> = self.list(dir).into_iter().filter_map(|n| n.to_str()?.parse().ok()).collect();
        numbers.sort_unstable();
        numbers
    }

    /// The fastest link mode `ethtool IFACE` lists as supported: run live, or read from a
    /// bundle's `ethtool/IFACE.txt` (`fabcheck bundle DIR` saves it).
    pub fn ethtool_supported_mbps(&self, netdev: &str) -> Option<u32> {
        super::capacity::ethtool_max_supported_mbps(&self.ethtool_report(netdev)?)
    }

    /// The `ethtool IFACE` report: run live (once per process), or a bundle's `ethtool/IFACE.txt`.
    pub fn ethtool_report(&self, netdev: &str) -> Option<String> {
        if !crate::model::valid_device_name(netdev) {
            return None;
        }
        if !self.is_live() {
            self.read_trim(&self.root.join("ethtool").join(format!("{netdev}.txt")))
        } else if valid_tool_netdev(netdev) {
            remembered("ethtool", netdev, || super::host::command_output("ethtool", &[netdev], std::time::Duration::from_secs(2)))
        } else {
            None
        }
    }

    /// Whether this is the live `/sys` (tool reports come from running the tool).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/sys")
    }

    /// A bundle's saved tool report `ethtool/FILE` (`ens2np0.stats.txt`), through the bounded
    /// reader (at most [`REPORT_CAP`] bytes); `None` when absent, and noted when
    /// present but unreadable. `file` is built from a validated netdev name.
    pub fn bundle_report(&self, file: &str) -> Option<String> {
        if file.contains('/') || file.starts_with('.') {
            return None;
        }
        match self.tree.read_text(self.inside(&self.root.join("ethtool").join(file)), REPORT_CAP) {
            Ok(text) => Some(text),
            Err(e) if e.is_no_value() => None,
            Err(e) => {
                self.note(e);
                None
            }
        }
    }

    /// A file at `rel` under the root (a path built from validated names: the QoS reader's
    /// `dcb/IF.json`, `config/rdma_cm/...`, `class/net/IF/ecn/...`), through the bundle reader,
    /// at most `cap` bytes; `None` when absent, and noted when present but unreadable.
    pub fn read_rel(&self, rel: &str, cap: u64) -> Option<String> {
        self.read_rel_path(Path::new(rel), cap)
    }

    /// A file at `rel` (a path) under the root, as [`SysfsRoot::read_rel`].
    pub fn read_rel_path(&self, rel: &Path, cap: u64) -> Option<String> {
        match self.tree.read_text(rel, cap) {
            Ok(text) => Some(text),
            Err(e) if e.is_no_value() => None,
            Err(e) => {
                self.note(e);
                None
            }
        }
    }

    /// The names in the directory `rel` under the root (inside the tree); none when it is not one.
    pub fn list_rel(&self, rel: &Path) -> Vec<std::ffi::OsString> {
        self.tree.list_dir(rel).unwrap_or_default()
    }

    /// Whether `rel` under the root is a directory (inside the tree).
    pub fn rel_is_dir(&self, rel: &str) -> bool {
        self.tree.is_dir(Path::new(rel))
    }
}

/// The output of a command about a netdev, run once per process: an agent prepares many tests
/// on the same port, and a netdev's supported modes do not change under it.
fn remembered(program: &'static str, netdev: &str, run: impl FnOnce() -> Option<String>) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Outputs = HashMap<(&'static str, String), Option<String>>;
    static SEEN: OnceLock<Mutex<Outputs>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(known) = seen.lock().ok().and_then(|m| m.get(&(program, netdev.to_string())).cloned()) {
        return known;
    }
    let out = run();
    if let Ok(mut m) = seen.lock() {
        m.insert((program, netdev.to_string()), out.clone());
    }
    out
}

/// Whether `name` can be a network interface's name, as the kernel's `dev_valid_name` has it
/// (1 to 15 bytes, not `.` or `..`, no `/`, `:` or white space), in printable ASCII.
pub fn valid_netdev_name(name: &str) -> bool {
    (1..16).contains(&name.len()) && name != "." && name != ".." && name.bytes().all(|b| b.is_ascii_graphic() && b != b'/' && b != b':')
}

/// Whether `name` may be given to `ethtool`, `mlnx_qos` or `dcb` as a word of their command
/// line: a valid netdev name that does not begin with `-` (issue #58). The kernel allows a
/// name like `-s`, and ethtool has no `--`: its first word is an option or a device, and the
/// word after an option is the device whatever it looks like (ethtool.c, `main`: "a device
/// name ... which we don't expect to begin with '-'"); mlnx_qos's argparse would read `-i -s`
/// as two options. Such a netdev is not asked about, and what would have been read from it is
/// not (said as not read where the tool's answer was wanted).
pub fn valid_tool_netdev(name: &str) -> bool {
    valid_netdev_name(name) && !name.starts_with('-')
}

/// Sort key that orders embedded numbers numerically: mlx5_2 < mlx5_10.
pub(crate) fn natural_key(name: &str) -> (String, u64) {
    let digits: String = name.chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
    let stem = name[..name.len() - digits.len()].to_string();
    (stem, digits.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut names = vec!["mlx5_10", "mlx5_2", "mlx5_1", "rxe0"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, vec!["mlx5_1", "mlx5_2", "mlx5_10", "rxe0"]);
    }

    #[test]
    fn missing_root_is_empty_not_an_error() {
        let inv = SysfsRoot::at("/nonexistent/fabcheck").inventory();
        assert!(inv.devices.is_empty());
    }

    #[test]
    fn a_netdev_that_looks_like_an_option_is_never_a_tools_argument() {
        assert!(valid_tool_netdev("ens2np0") && valid_tool_netdev("eth-1"));
        for name in ["-s", "--help", "-i", "-"] {
            assert!(valid_netdev_name(name), "the kernel allows {name}");
            assert!(!valid_tool_netdev(name), "{name}");
        }
    }
}
