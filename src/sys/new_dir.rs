//! A new directory filled from the inside: what `fabcheck bundle DIR` writes its capture into.
//! Like every file fabcheck writes (`sys::atomic`), nothing planted is ever followed: DIR must be
//! new or empty (a symbolic link is refused, even to an empty directory); the capture is made in
//! a temporary directory beside it and renamed to DIR at the end (`finish`), so DIR is a whole
//! bundle or none. That directory is opened once
//! (`O_DIRECTORY|O_NOFOLLOW`) and everything below it is made through the descriptor of its
//! parent (`/proc/self/fd/N/NAME`, as `sys::beneath` reads), each directory with `mkdir` and
//! then opened `O_NOFOLLOW`, each file created `O_CREAT|O_EXCL|O_NOFOLLOW`
//! (`atomic::create_new`). A name that is already taken when this run did not make it (a link
//! or file planted while the capture runs, in a DIR that others can write) is an error naming
//! it, and nothing is written through it.
//!
//! The DIR made here is mode 0700: a capture holds host names, GUIDs, MACs and addresses, to be
//! reviewed before it is shared. What is below it gets 0755 and 0644 (less the umask).

use super::atomic::{create_new, temp_name, WriteError};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// A directory this run made (or found empty), filled only through descriptors.
#[derive(Debug)]
pub struct NewDir {
    path: PathBuf,
    /// Every directory made so far, open, by its path inside ("" is DIR itself).
    dirs: HashMap<PathBuf, File>,
    /// Every file and link made so far, by its path inside.
    made: HashSet<PathBuf>,
    /// The directory filled, beside `path`, renamed to it at the end.
    temp: PathBuf,
    finished: bool,
}

impl Drop for NewDir {
    /// A capture that did not finish leaves nothing behind.
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// `path` is absent, or an empty directory that is not a symbolic link.
fn check_target(path: &Path) -> Result<(), WriteError> {
    super::target::refuse_planted(path)?;
    let fail = |doing, e| WriteError::new(path, doing, e);
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(fail("write into", io::Error::other("it is a symbolic link; give a new directory, fabcheck does not write through links")))
        }
        Ok(meta) if !meta.is_dir() => Err(fail("write into", io::Error::other("it exists and is not a directory"))),
        Ok(_) => {
            let dir = open_dir(path).map_err(|e| fail("open", e))?;
            let mut entries = std::fs::read_dir(through(&dir, ".".as_ref())).map_err(|e| fail("list", e))?;
            if entries.next().is_some() {
                return Err(fail(
                    "write into",
                    io::Error::other("it exists and is not empty; give a new or empty directory (a bundle is never mixed with other files)"),
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(fail("inspect", e)),
    }
}

fn through(dir: &File, name: &std::ffi::OsStr) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name)
}

fn open_dir(path: &Path) -> io::Result<File> {
    File::options().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
}

/// `rel` as plain names, or why it cannot be a path inside.
fn names(rel: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain path inside the directory")),
        }
    }
    if out.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    }
    Ok(out)
}

impl NewDir {
    /// Checks that `path` can take a bundle (absent, or an empty directory that is not a link),
    /// and makes the temporary directory beside it (mode 0700) that is filled and then renamed
    /// to `path` by [`NewDir::finish`]: a reader never sees half a bundle at `path`.
    pub fn create(path: &Path) -> Result<NewDir, WriteError> {
        let fail = |doing, e| WriteError::new(path, doing, e);
        check_target(path)?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let base = path.file_name().ok_or_else(|| fail("write into", io::Error::other("it names no directory")))?;
        let mut made = None;
        for attempt in 0..16u32 {
            let mut name = std::ffi::OsString::from(".");
            name.push(base);
            name.push(".");
            name.push(temp_name(attempt));
            let temp = parent.join(name);
            match std::fs::DirBuilder::new().mode(0o700).create(&temp) {
                Ok(()) => {
                    made = Some(temp);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(fail("create a temporary directory beside", e)),
            }
        }
        let temp = made.ok_or_else(|| fail("create a temporary directory beside", io::Error::other("every temporary name tried was taken")))?;
        let dir = open_dir(&temp).map_err(|e| fail("open", e))?;
        Ok(NewDir { path: path.to_path_buf(), temp, dirs: HashMap::from([(PathBuf::new(), dir)]), made: HashSet::new(), finished: false })
    }

    /// Renames the filled directory to its name (an empty directory there is replaced; anything
    /// else there now is refused and the temporary directory removed).
    pub fn finish(mut self) -> Result<(), WriteError> {
        check_target(&self.path)?;
        std::fs::rename(&self.temp, &self.path).map_err(|e| WriteError::new(&self.path, "rename the capture to", e))?;
        self.finished = true;
        Ok(())
    }

    /// The directory, as it was named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this run made `rel` (a file, link or directory).
    pub fn has(&self, rel: &Path) -> bool {
        self.made.contains(rel) || self.dirs.contains_key(rel)
    }

    fn error(&self, rel: &Path, doing: &'static str, e: io::Error) -> WriteError {
        WriteError::new(&self.path.join(rel), doing, e)
    }

    /// Makes directory `rel` and those above it, where this run has not made them yet.
    pub fn make_dirs(&mut self, rel: &Path) -> Result<(), WriteError> {
        let parts = names(rel).map_err(|e| self.error(rel, "create", e))?;
        let mut here = PathBuf::new();
        for name in parts {
            let parent = here.clone();
            here.push(name);
            if self.dirs.contains_key(&here) {
                continue;
            }
            let at = through(&self.dirs[&parent], name);
            if let Err(e) = std::fs::DirBuilder::new().mode(0o755).create(&at) {
                let e = if e.kind() == io::ErrorKind::AlreadyExists { taken() } else { e };
                return Err(self.error(&here, "create", e));
            }
            let dir = open_dir(&at).map_err(|e| self.error(&here, "open", e))?;
            self.dirs.insert(here.clone(), dir);
        }
        Ok(())
    }

    /// The open parent directory of `rel` (made if needed) and `rel`'s last name.
    fn parent_of<'a>(&mut self, rel: &'a Path) -> Result<(&File, &'a std::ffi::OsStr), WriteError> {
        let parts = names(rel).map_err(|e| self.error(rel, "create", e))?;
        let name = *parts.last().expect("names() is never empty");
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        if !parent.as_os_str().is_empty() {
            self.make_dirs(&parent)?;
        }
        Ok((&self.dirs[&parent], name))
    }

    /// Creates file `rel` (never an existing one, never through a link) holding `bytes`.
    pub fn write_new(&mut self, rel: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        let (parent, name) = self.parent_of(rel)?;
        let at = through(parent, name);
        let mut file = create_new(&at, 0o644).map_err(|e| {
            let e = if e.kind() == io::ErrorKind::AlreadyExists { taken() } else { e };
            WriteError::new(&self.path.join(rel), "create", e)
        })?;
        file.write_all(bytes).map_err(|e| self.error(rel, "write", e))?;
        self.made.insert(rel.to_path_buf());
        Ok(())
    }

    /// Makes `rel` a symbolic link to `target` (a relative path inside, as sysfs's links are).
    pub fn link(&mut self, rel: &Path, target: &Path) -> Result<(), WriteError> {
        let (parent, name) = self.parent_of(rel)?;
        let at = through(parent, name);
        std::os::unix::fs::symlink(target, &at).map_err(|e| {
            let e = if e.kind() == io::ErrorKind::AlreadyExists { taken() } else { e };
            WriteError::new(&self.path.join(rel), "create the link", e)
        })?;
        self.made.insert(rel.to_path_buf());
        Ok(())
    }

    /// Writes file `rel` whole or not at all: a temporary file beside it, synced, renamed into
    /// place, the directory synced (the manifest, written last: a reader sees it complete or
    /// not at all).
    pub fn write_complete(&mut self, rel: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        let (parent, name) = self.parent_of(rel)?;
        let parent = parent.try_clone().map_err(|e| WriteError::new(&self.path.join(rel), "open", e))?;
        let (tmp, mut file) = (0..16u32)
            .find_map(|attempt| {
                let tmp = through(&parent, &temp_name(attempt));
                match create_new(&tmp, 0o644) {
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => None,
                    other => Some(other.map(|f| (tmp, f))),
                }
            })
            .unwrap_or_else(|| Err(io::Error::other("every temporary name tried was taken")))
            .map_err(|e| self.error(rel, "create a temporary file for", e))?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        let renamed = written.and_then(|()| std::fs::rename(&tmp, through(&parent, name)));
        if let Err(e) = renamed {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.error(rel, "write", e));
        }
        self.made.insert(rel.to_path_buf());
        parent.sync_all().map_err(|e| self.error(rel, "sync the directory of", e))
    }
}

fn taken() -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, "the name is already taken by something this run did not make; nothing is written through it")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabcheck-newdir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn files_links_and_folders_are_made_inside() {
        let dir = scratch("made");
        let out = dir.join("bundle");
        let mut b = NewDir::create(&out).unwrap();
        assert!(!out.exists(), "nothing at the name until the capture is whole");
        b.write_new(Path::new("class/infiniband/mlx5_0/fw_ver"), b"20.1\n").unwrap();
        b.make_dirs(Path::new("devices/pci0000:00/0000:00:01.0")).unwrap();
        b.link(Path::new("bus/pci/devices/0000:00:01.0"), Path::new("../../../devices/pci0000:00/0000:00:01.0")).unwrap();
        b.write_complete(Path::new("fabcheck-bundle.json"), b"{}\n").unwrap();
        assert!(b.has(Path::new("class/infiniband/mlx5_0/fw_ver")) && b.has(Path::new("devices/pci0000:00")));
        for bad in ["../escape", "/etc/x", "a/../b"] {
            assert!(b.write_new(Path::new(bad), b"x").is_err(), "{bad}");
        }
        b.finish().unwrap();
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::read_to_string(out.join("class/infiniband/mlx5_0/fw_ver")).unwrap(), "20.1\n");
        assert!(out.join("bus/pci/devices/0000:00:01.0").is_dir(), "the link resolves inside");
        let names: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
        assert!(!dir.join("escape").exists());
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("bundle")], "no temporary directory left");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_existing_directory_must_be_empty_and_not_a_link() {
        let dir = scratch("existing");
        std::fs::create_dir(dir.join("empty")).unwrap();
        let b = NewDir::create(&dir.join("empty")).unwrap();
        drop(b);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "an unfinished capture leaves nothing");
        NewDir::create(&dir.join("empty")).unwrap().finish().unwrap();
        std::fs::create_dir(dir.join("full")).unwrap();
        std::fs::write(dir.join("full/precious"), "keep").unwrap();
        let err = NewDir::create(&dir.join("full")).unwrap_err().to_string();
        assert!(err.contains("not empty"), "{err}");
        std::fs::create_dir(dir.join("empty2")).unwrap();
        symlink(dir.join("empty2"), dir.join("link")).unwrap();
        let err = NewDir::create(&dir.join("link")).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::write(dir.join("file"), "x").unwrap();
        assert!(NewDir::create(&dir.join("file")).unwrap_err().to_string().contains("not a directory"));
        assert_eq!(std::fs::read_to_string(dir.join("full/precious")).unwrap(), "keep");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn names_planted_during_the_capture_are_refused_not_followed() {
        let dir = scratch("planted");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::create_dir(dir.join("elsewhere")).unwrap();
        let out = dir.join("bundle");
        let mut b = NewDir::create(&out).unwrap();
        b.make_dirs(Path::new("class")).unwrap();
        // Another user plants a link at a file's name, and one at a folder's name.
        symlink(&victim, b.temp.join("class/fw_ver")).unwrap();
        symlink(dir.join("elsewhere"), b.temp.join("class/net")).unwrap();
        let err = b.write_new(Path::new("class/fw_ver"), b"evil\n").unwrap_err().to_string();
        assert!(err.contains("already taken"), "{err}");
        let err = b.write_new(Path::new("class/net/va/mtu"), b"1500\n").unwrap_err().to_string();
        assert!(err.contains("already taken"), "{err}");
        assert!(b.link(Path::new("class/fw_ver"), Path::new("x")).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(std::fs::read_dir(dir.join("elsewhere")).unwrap().count(), 0, "nothing written through the planted folder link");
        std::fs::remove_dir_all(&dir).ok();
    }
}
