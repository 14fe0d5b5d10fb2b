//! Reading files that may be hostile: a FIFO where a profile should be, `/dev/zero` as a
//! hostfile, a sysfs attribute behind a symlink loop or a permission bit. Every read here checks
//! the file type before opening (regular files only), opens without blocking, and reads at most
//! a stated number of bytes; every failure names the file and what was wrong.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Largest profile, hostfile or topology file read (a hostfile of 100,000 nodes fits).
pub const TEXT_FILE_CAP: u64 = 8 << 20;
/// Largest sysfs attribute read (the kernel serves at most a page).
pub const SYSFS_CAP: u64 = 64 << 10;

/// Reads a directory's entry names (not following into them); a missing directory is empty.
pub fn list_dir(path: &Path) -> Result<Vec<std::ffi::OsString>, ReadError> {
    match fs::read_dir(path) {
        Ok(entries) => Ok(entries.filter_map(|e| e.ok().map(|e| e.file_name())).take(1 << 16).collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(ReadError::io(path, e)),
    }
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("{path} does not exist")]
    NotFound { path: PathBuf },
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} is larger than {cap} bytes")]
    TooLarge { path: PathBuf, cap: u64 },
    #[error("{path} is not text (UTF-8)")]
    NotText { path: PathBuf },
    #[error("cannot read {path}: {reason}")]
    Io { path: PathBuf, reason: String, errno: Option<i32> },
    /// Reading it would leave the tree being read (a link to an absolute path, a `..` above the
    /// root): see `sys::beneath`.
    #[error("{path} leads outside the tree being read ({why}); not followed")]
    OutsideRoot { path: PathBuf, why: String },
    /// It was read, and what it holds cannot be what it should (a netdev name with a `/`).
    #[error("{path} holds {why}")]
    Invalid { path: PathBuf, why: String },
}

impl ReadError {
    /// What went wrong, without the path (for messages that name the file themselves).
    pub fn reason(&self) -> String {
        match self {
            ReadError::NotFound { .. } => "does not exist".into(),
            ReadError::NotRegular { kind, .. } => format!("not a regular file ({kind})"),
            ReadError::TooLarge { cap, .. } => format!("larger than {cap} bytes"),
            ReadError::NotText { .. } => "not text (UTF-8)".into(),
            ReadError::Io { reason, .. } => reason.clone(),
            ReadError::OutsideRoot { why, .. } => format!("leads outside the tree being read ({why})"),
            ReadError::Invalid { why, .. } => format!("holds {why}"),
        }
    }

    /// Why an I/O error happened, in words (a symlink loop, permission denied, ...).
    pub fn describe(e: &io::Error) -> String {
        match e.raw_os_error() {
            Some(libc::ELOOP) => "a symlink loop".to_string(),
            Some(libc::EACCES) | Some(libc::EPERM) => "permission denied".to_string(),
            _ => e.to_string(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound { .. })
    }

    /// How sysfs says "no value here" (a netdev's speed while its link is down is EINVAL;
    /// some attributes of absent hardware are ENODEV or EOPNOTSUPP): not worth a finding.
    pub fn is_no_value(&self) -> bool {
        self.is_not_found() || matches!(self, ReadError::Io { errno: Some(libc::EINVAL | libc::ENODEV | libc::EOPNOTSUPP | libc::ENXIO), .. })
    }

    /// The path it names.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotFound { path }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::NotText { path }
            | ReadError::Io { path, .. }
            | ReadError::OutsideRoot { path, .. }
            | ReadError::Invalid { path, .. } => path,
        }
    }

    pub(super) fn io(path: &Path, e: io::Error) -> ReadError {
        if e.kind() == io::ErrorKind::NotFound {
            return ReadError::NotFound { path: path.to_path_buf() };
        }
        let reason = ReadError::describe(&e);
        ReadError::Io { path: path.to_path_buf(), reason, errno: e.raw_os_error() }
    }
}

pub(super) fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading if it is a regular file: the type is checked before opening, and
/// the open does not block (should it be swapped for a FIFO in between, the open and the read
/// return at once instead of waiting for a writer).
fn open_regular(path: &Path) -> Result<File, ReadError> {
    let meta = fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular { path: path.to_path_buf(), kind: kind_of(&meta) });
    }
    File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| ReadError::io(path, e))
}

/// The first `limit` bytes of regular file `path` (a longer file is not an error: a config space
/// is read as far as the reader wants); `Ok(None)` when it does not exist.
pub fn read_prefix(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    file.take(limit).read_to_end(&mut out).map_err(|e| ReadError::io(path, e))?;
    Ok(Some(out))
}

/// The bytes of regular file `path`, at most `cap` of them. A file whose size is past the cap
/// is refused before it is read (a 256 MiB `--topology` cap must not read 256 MiB to say no);
/// the read itself still stops past the cap, for files that say a smaller size (procfs, 0).
pub fn read_bytes(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > cap {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), cap });
    }
    // Room for what the file says it holds (and the one byte that tells a longer file), so a
    // large file is not copied through a doubling buffer.
    let mut out = Vec::with_capacity(usize::try_from(size.min(cap).saturating_add(1)).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut out).map_err(|e| ReadError::io(path, e))?;
    if out.len() as u64 > cap {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), cap });
    }
    Ok(out)
}

/// The text of regular file `path`, at most `cap` bytes, and the metadata of the file that
/// was read (from the open descriptor: what was judged is what was read).
pub fn read_text_and_meta(path: &Path, cap: u64) -> Result<(String, fs::Metadata), ReadError> {
    let file = open_regular(path)?;
    let meta = file.metadata().map_err(|e| ReadError::io(path, e))?;
    let mut out = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut out).map_err(|e| ReadError::io(path, e))?;
    if out.len() as u64 > cap {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), cap });
    }
    let text = String::from_utf8(out).map_err(|_| ReadError::NotText { path: path.to_path_buf() })?;
    Ok((text, meta))
}

/// A regular file opened for reading (checked and opened as every read here is), and its size:
/// for a reader that streams it.
pub fn open_for_reading(path: &Path) -> Result<(File, u64), ReadError> {
    let file = open_regular(path)?;
    let len = file.metadata().map_err(|e| ReadError::io(path, e))?.len();
    Ok((file, len))
}

/// The text of regular file `path`, at most `cap` bytes.
pub fn read_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, cap)?).map_err(|_| ReadError::NotText { path: path.to_path_buf() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabcheck-fs-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let dir = scratch("fifo");
        let fifo = dir.join("profile");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = read_text(&fifo, 100).unwrap_err();
        assert_eq!(err, ReadError::NotRegular { path: fifo.clone(), kind: "a FIFO" });
        assert!(err.to_string().contains("is a FIFO, not a regular file"), "{err}");
    }

    #[test]
    fn devices_and_directories_are_refused() {
        assert!(matches!(read_text(Path::new("/dev/zero"), 100), Err(ReadError::NotRegular { kind: "a character device", .. })));
        assert!(matches!(read_text(Path::new("/"), 100), Err(ReadError::NotRegular { kind: "a directory", .. })));
    }

    #[test]
    fn the_cap_is_enforced_by_the_read() {
        let dir = scratch("cap");
        let big = dir.join("big");
        fs::write(&big, vec![b'x'; 101]).unwrap();
        assert_eq!(read_text(&big, 100), Err(ReadError::TooLarge { path: big.clone(), cap: 100 }));
        assert_eq!(read_text(&big, 101).unwrap().len(), 101);
    }

    #[test]
    fn missing_loops_and_binary_are_named() {
        let dir = scratch("names");
        assert!(read_text(&dir.join("nope"), 10).unwrap_err().is_not_found());
        let a = dir.join("a");
        let b = dir.join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = read_text(&a, 10).unwrap_err();
        assert!(err.to_string().contains("symlink loop"), "{err}");
        let bin = dir.join("bin");
        fs::write(&bin, [0xff, 0xfe]).unwrap();
        assert_eq!(read_text(&bin, 10), Err(ReadError::NotText { path: bin.clone() }));
    }
}
