//! Reading inside a tree and never outside it: a captured bundle (`--sysfs-root B`) is hostile
//! input, and a `board_id -> /etc/shadow` link, or a `..` in a path built from a value it holds,
//! must not make fabcheck print the analyst's own files. The live `/sys` is read the same way
//! (its links are relative and stay inside it).
//!
//! `openat2(RESOLVE_BENEATH)` would do this in one call, but RHEL 8's kernel lacks it, so the
//! path is walked a component at a time: each directory is opened with `O_NOFOLLOW |
//! O_DIRECTORY` relative to the one before (through `/proc/self/fd/N/NAME`, which keeps this safe
//! code), each symbolic link is read and resolved here, inside the tree (a relative target is
//! walked from the link's directory; an absolute one, or a `..` above the root, is refused), and
//! the file itself is opened with `O_NOFOLLOW | O_NONBLOCK`. A refusal is a [`ReadError`] that
//! names the path, like any other unreadable file.

use super::fs::{kind_of, ReadError};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{self, File, Metadata};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Entries of one directory read at most.
pub const MAX_ENTRIES: usize = 1 << 16;

/// Symbolic links followed in one path before it is called a loop (the kernel's MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// A directory tree read from the inside.
#[derive(Debug, Clone)]
pub struct Tree {
    root: PathBuf,
    /// The root as an absolute path without links: an absolute link to a place under it (a
    /// tree copied with absolute links into itself) stays inside and is followed.
    absolute: Option<PathBuf>,
}

/// Where a walk ended: the directories it went through (the root first), and the last
/// component unless the path ended on a directory of the stack (`a/..`, or the root).
struct Walked {
    dirs: Vec<(File, OsString)>,
    last: Option<(OsString, Metadata)>,
}

impl Walked {
    fn parent(&self) -> &File {
        &self.dirs.last().expect("the root is always there").0
    }

    /// The path of the last component (or the directory the walk ended on) through its parent's
    /// descriptor: opening it cannot wander through a link swapped in on the way.
    fn handle(&self) -> PathBuf {
        let base = fd_path(self.parent());
        match &self.last {
            Some((name, _)) => base.join(name),
            None => base,
        }
    }

    /// The path inside the tree it resolved to, links and `..` taken away.
    fn real(&self) -> PathBuf {
        let mut out: PathBuf = self.dirs.iter().skip(1).map(|(_, n)| n).collect();
        if let Some((name, _)) = &self.last {
            out.push(name);
        }
        out
    }
}

fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

fn open_dir(path: &Path) -> std::io::Result<File> {
    File::options().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
}

impl Tree {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Tree { absolute: fs::canonicalize(&root).ok(), root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `rel` (a path inside the tree) component by component. `follow_last`: whether a
    /// link in the last place is followed (reading) or kept (asking what it points to).
    fn walk(&self, rel: &Path, follow_last: bool) -> Result<Walked, ReadError> {
        let shown = self.root.join(rel);
        let outside = |why: String| ReadError::OutsideRoot { path: shown.clone(), why };
        // The root is the caller's, given on the command line: it is opened as given.
        let root = File::options().read(true).custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC).open(&self.root);
        let root = root.map_err(|e| ReadError::io(&shown, e))?;
        let mut walked = Walked { dirs: vec![(root, OsString::new())], last: None };
        let mut pending: VecDeque<OsString> = VecDeque::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => pending.push_back(n.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => pending.push_back("..".into()),
                Component::RootDir | Component::Prefix(_) => return Err(outside("an absolute path".into())),
            }
        }
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == "." {
                continue;
            }
            if name == ".." {
                if walked.dirs.len() == 1 {
                    return Err(outside("a '..' above the root".into()));
                }
                walked.dirs.pop();
                continue;
            }
            let here = fd_path(walked.parent()).join(&name);
            let meta = fs::symlink_metadata(&here).map_err(|e| ReadError::io(&shown, e))?;
            let is_last = pending.is_empty();
            if meta.file_type().is_symlink() && (follow_last || !is_last) {
                links += 1;
                if links > MAX_LINKS {
                    return Err(ReadError::Io { path: shown, reason: "a symlink loop".into(), errno: Some(libc::ELOOP) });
                }
                let target = fs::read_link(&here).map_err(|e| ReadError::io(&shown, e))?;
                let within = match (target.has_root(), &self.absolute) {
                    (false, _) => target.as_path(),
                    (true, Some(root)) => match target.strip_prefix(root) {
                        Ok(rest) => {
                            // Walked again from the root.
                            walked.dirs.truncate(1);
                            rest
                        }
                        Err(_) => return Err(outside(format!("a link to {}", target.display()))),
                    },
                    (true, None) => return Err(outside(format!("a link to {}", target.display()))),
                };
                let mut parts: Vec<OsString> = Vec::new();
                for c in within.components() {
                    match c {
                        Component::Normal(n) => parts.push(n.to_os_string()),
                        Component::ParentDir => parts.push("..".into()),
                        Component::CurDir => {}
                        Component::RootDir | Component::Prefix(_) => return Err(outside(format!("a link to {}", target.display()))),
                    }
                }
                for part in parts.into_iter().rev() {
                    pending.push_front(part);
                }
                continue;
            }
            if is_last {
                walked.last = Some((name, meta));
                break;
            }
            if !meta.is_dir() {
                return Err(ReadError::Io {
                    path: shown,
                    reason: "a path through something that is not a directory".into(),
                    errno: Some(libc::ENOTDIR),
                });
            }
            let dir = open_dir(&here).map_err(|e| ReadError::io(&shown, e))?;
            walked.dirs.push((dir, name));
        }
        Ok(walked)
    }

    /// The bytes of regular file `rel`, at most `cap` of them (as [`super::fs::read_bytes`]).
    pub fn read_bytes(&self, rel: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
        match self.read_prefix(rel, cap)? {
            (_, true) => Err(ReadError::TooLarge { path: self.root.join(rel), cap }),
            (out, false) => Ok(out),
        }
    }

    /// The first `cap` bytes of regular file `rel`, and whether there was more (a bundle keeps
    /// the start of a file over its cap and says so). Anything but a regular file (a FIFO, a
    /// device, a socket) is refused before it is opened for reading: the name is opened
    /// `O_PATH|O_NOFOLLOW` (which opens no device and blocks on no FIFO), its type judged on
    /// that descriptor, and only then the same inode opened for reading through it (issue #58:
    /// a file flipped to a device node between the look and the open was opened by root).
    pub fn read_prefix(&self, rel: &Path, cap: u64) -> Result<(Vec<u8>, bool), ReadError> {
        let shown = self.root.join(rel);
        let walked = self.walk(rel, true)?;
        let Some((_, meta)) = &walked.last else {
            return Err(ReadError::NotRegular { path: shown, kind: "a directory" });
        };
        if !meta.is_file() {
            return Err(ReadError::NotRegular { path: shown, kind: kind_of(meta) });
        }
        let file = open_regular(&walked.handle()).map_err(|e| match e {
            Opened::Not(kind) => ReadError::NotRegular { path: shown.clone(), kind },
            Opened::Io(e) => ReadError::io(&shown, e),
        })?;
        let mut out = Vec::new();
        file.take(cap.saturating_add(1)).read_to_end(&mut out).map_err(|e| ReadError::io(&shown, e))?;
        let more = out.len() as u64 > cap;
        out.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
        Ok((out, more))
    }

    /// The text of regular file `rel`, at most `cap` bytes.
    pub fn read_text(&self, rel: &Path, cap: u64) -> Result<String, ReadError> {
        String::from_utf8(self.read_bytes(rel, cap)?).map_err(|_| ReadError::NotText { path: self.root.join(rel) })
    }

    /// The entry names of directory `rel` (at most [`MAX_ENTRIES`]); a missing directory is
    /// empty.
    pub fn list_dir(&self, rel: &Path) -> Result<Vec<OsString>, ReadError> {
        self.list_dir_counted(rel).map(|(names, _)| names)
    }

    /// [`list_dir`](Tree::list_dir), with how many entries beyond [`MAX_ENTRIES`] were left out
    /// (counted, not kept), so a caller can say what it did not read (issue #58).
    pub fn list_dir_counted(&self, rel: &Path) -> Result<(Vec<OsString>, u64), ReadError> {
        self.list_dir_up_to(rel, MAX_ENTRIES)
    }

    fn list_dir_up_to(&self, rel: &Path, cap: usize) -> Result<(Vec<OsString>, u64), ReadError> {
        let shown = self.root.join(rel);
        let walked = match self.walk(rel, true) {
            Ok(w) => w,
            Err(e) if e.is_not_found() => return Ok((Vec::new(), 0)),
            Err(e) => return Err(e),
        };
        let dir = match &walked.last {
            Some((_, meta)) if !meta.is_dir() => return Err(ReadError::NotRegular { path: shown, kind: kind_of(meta) }),
            Some(_) => Some(open_dir(&walked.handle()).map_err(|e| ReadError::io(&shown, e))?),
            None => None,
        };
        let path = dir.as_ref().map_or_else(|| walked.handle(), fd_path);
        let entries = fs::read_dir(&path).map_err(|e| ReadError::io(&shown, e))?;
        let mut names = Vec::new();
        let mut left_out = 0u64;
        for entry in entries.filter_map(Result::ok) {
            if names.len() < cap {
                names.push(entry.file_name());
            } else {
                left_out += 1;
            }
        }
        Ok((names, left_out))
    }

    /// What `rel` is, its links followed inside the tree; `None` when it is not there or cannot
    /// be reached from inside.
    pub fn metadata(&self, rel: &Path) -> Option<Metadata> {
        let walked = self.walk(rel, true).ok()?;
        match walked.last {
            Some((_, meta)) => Some(meta),
            None => walked.parent().metadata().ok(),
        }
    }

    pub fn exists(&self, rel: &Path) -> bool {
        self.metadata(rel).is_some()
    }

    pub fn is_dir(&self, rel: &Path) -> bool {
        self.metadata(rel).is_some_and(|m| m.is_dir())
    }

    /// The last component of what link `rel` points to (`device/driver -> .../mlx5_core`), read
    /// without following it: the target need not be inside the tree, since it is never opened.
    pub fn link_name(&self, rel: &Path) -> Option<OsString> {
        let walked = self.walk(rel, false).ok()?;
        let (_, meta) = walked.last.as_ref()?;
        if !meta.file_type().is_symlink() {
            return None;
        }
        fs::read_link(walked.handle()).ok()?.file_name().map(|n| n.to_os_string())
    }

    /// Where `rel` leads inside the tree (links and `..` resolved), relative to the root.
    pub fn resolve(&self, rel: &Path) -> Result<PathBuf, ReadError> {
        self.walk(rel, true).map(|w| w.real())
    }
}

/// Why [`open_regular`] did not give a file.
enum Opened {
    Not(&'static str),
    Io(std::io::Error),
}

/// `path` (its last component not followed) opened for reading only once the descriptor that
/// names it says it is a regular file: `O_PATH` first (no device's open routine runs, no FIFO
/// blocks), `fstat` on it, then the same inode reopened for reading through
/// `/proc/self/fd/N`, and looked at again.
fn open_regular(path: &Path) -> Result<File, Opened> {
    let handle = File::options().read(true).custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path).map_err(Opened::Io)?;
    let named = handle.metadata().map_err(Opened::Io)?;
    if !named.is_file() {
        return Err(Opened::Not(kind_of(&named)));
    }
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))
        .map_err(Opened::Io)?;
    let opened = file.metadata().map_err(Opened::Io)?;
    use std::os::unix::fs::MetadataExt;
    if !opened.is_file() || (opened.dev(), opened.ino()) != (named.dev(), named.ino()) {
        return Err(Opened::Not(kind_of(&opened)));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabcheck-beneath-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `outside/secret` beside `tree/`, and links in `tree/` that try to reach it.
    fn setup(name: &str) -> (PathBuf, Tree) {
        let dir = scratch(name);
        fs::create_dir_all(dir.join("outside")).unwrap();
        fs::write(dir.join("outside/secret"), "secret\n").unwrap();
        let tree = dir.join("tree");
        fs::create_dir_all(tree.join("devices/pci0/mlx5_0")).unwrap();
        fs::create_dir_all(tree.join("class/infiniband")).unwrap();
        fs::write(tree.join("devices/pci0/mlx5_0/fw_ver"), "20.1\n").unwrap();
        symlink("../../devices/pci0/mlx5_0", tree.join("class/infiniband/mlx5_0")).unwrap();
        (dir, Tree::new(tree))
    }

    #[test]
    fn links_inside_the_tree_are_followed() {
        let (_dir, t) = setup("inside");
        assert_eq!(t.read_text(Path::new("class/infiniband/mlx5_0/fw_ver"), 100).unwrap(), "20.1\n");
        assert_eq!(t.list_dir(Path::new("class/infiniband")).unwrap(), vec![OsString::from("mlx5_0")]);
        assert!(t.is_dir(Path::new("class/infiniband/mlx5_0")));
        assert_eq!(t.resolve(Path::new("class/infiniband/mlx5_0")).unwrap(), PathBuf::from("devices/pci0/mlx5_0"));
        assert_eq!(t.link_name(Path::new("class/infiniband/mlx5_0")), Some(OsString::from("mlx5_0")));
        assert_eq!(t.read_text(Path::new("class/infiniband/mlx5_0/../mlx5_0/fw_ver"), 100).unwrap(), "20.1\n");
        assert!(t.read_text(Path::new("class/infiniband/absent"), 100).unwrap_err().is_not_found());
        assert!(t.list_dir(Path::new("class/absent")).unwrap().is_empty());
    }

    #[test]
    fn links_and_dots_that_leave_the_tree_are_refused() {
        let (dir, t) = setup("outside");
        let dev = t.root().join("devices/pci0/mlx5_0");
        symlink(dir.join("outside/secret"), dev.join("board_id")).unwrap();
        symlink("../../../../outside/secret", dev.join("hca_type")).unwrap();
        symlink("../../../../outside", dev.join("escape_dir")).unwrap();
        for rel in [
            "class/infiniband/mlx5_0/board_id",
            "class/infiniband/mlx5_0/hca_type",
            "class/infiniband/mlx5_0/escape_dir/secret",
            "../outside/secret",
            "class/../../outside/secret",
        ] {
            let err = t.read_text(Path::new(rel), 100).unwrap_err();
            assert!(matches!(err, ReadError::OutsideRoot { .. }), "{rel}: {err:?}");
            assert!(err.to_string().contains("outside"), "{err}");
        }
        assert!(matches!(t.list_dir(Path::new("class/infiniband/mlx5_0/escape_dir")), Err(ReadError::OutsideRoot { .. })));
        assert!(!t.exists(Path::new("class/infiniband/mlx5_0/board_id")));
        assert!(matches!(t.read_text(Path::new("/etc/hostname"), 100), Err(ReadError::OutsideRoot { .. })));
        // An absolute link to a place under the root stays inside, and is followed.
        let abs = fs::canonicalize(t.root()).unwrap().join("devices/pci0/mlx5_0/fw_ver");
        symlink(&abs, dev.join("fw_abs")).unwrap();
        assert_eq!(t.read_text(Path::new("class/infiniband/mlx5_0/fw_abs"), 100).unwrap(), "20.1\n");
        // The name a link points to can still be read (it is never opened).
        assert_eq!(t.link_name(Path::new("class/infiniband/mlx5_0/board_id")), Some(OsString::from("secret")));
    }

    #[test]
    fn loops_fifos_and_sizes_are_refused_inside_too() {
        let (_dir, t) = setup("loops");
        let dev = t.root().join("devices/pci0/mlx5_0");
        symlink("b", dev.join("a")).unwrap();
        symlink("a", dev.join("b")).unwrap();
        let err = t.read_text(Path::new("class/infiniband/mlx5_0/a"), 100).unwrap_err();
        assert!(err.to_string().contains("symlink loop"), "{err}");
        nix::unistd::mkfifo(&dev.join("state"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(t.read_text(Path::new("class/infiniband/mlx5_0/state"), 100), Err(ReadError::NotRegular { kind: "a FIFO", .. })));
        fs::write(dev.join("big"), vec![b'x'; 101]).unwrap();
        assert!(matches!(t.read_text(Path::new("class/infiniband/mlx5_0/big"), 100), Err(ReadError::TooLarge { .. })));
    }

    #[test]
    fn entries_beyond_the_cap_are_counted_not_dropped_silently() {
        let root = scratch("many");
        std::fs::create_dir_all(root.join("d")).unwrap();
        for i in 0..5 {
            std::fs::write(root.join("d").join(format!("f{i}")), "x").unwrap();
        }
        let tree = Tree::new(root.clone());
        let (names, left_out) = tree.list_dir_up_to(Path::new("d"), 3).unwrap();
        assert_eq!((names.len(), left_out), (3, 2));
        assert_eq!(tree.list_dir_counted(Path::new("d")).unwrap().1, 0);
        let _ = std::fs::remove_dir_all(&root);
    }
}
