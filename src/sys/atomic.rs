//! Writing a file fabcheck was asked to write (`--output`, `--csv`, `--svg`, `--html`, `manpage
//! --dir`) so that a reader never sees half of it, and so that the path cannot be turned against
//! a privileged run (docs/reliability.md, "Files fabcheck writes").
//!
//! A regular file (or a name not there yet) is written to a temporary file beside it and renamed
//! over it: node_exporter's textfile collector and a CI job see the old content or the new, never
//! a mix. The temporary file is created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600) with
//! a short random name, so a symlink or file planted at a guessed name is never followed or
//! adopted, and a target name near NAME_MAX still fits. Its mode is set before the rename (the
//! caller's own file keeps its mode, less any set-id bit; a file another user owns gives way to
//! 0644; a new one gets 0666 less the umask); the data and then the directory are synced.
//!
//! What is never renamed over: a character device (`/dev/null`, a terminal) or a FIFO, written
//! directly as a shell redirection would, but opened without blocking: a FIFO nobody reads is
//! refused after [`READER_WAIT`], and a reader that takes nothing for [`STALL`] ends the write
//! (0.3 waited for ever); and `/dev/stdout` or `/dev/stderr`, written through this process's own
//! descriptor at its own offset. A symbolic link to a regular file (or a dangling one) is
//! refused: following it would let whoever planted it choose which file a root run replaces,
//! and replacing the link itself would silently break whoever made it. A block device, a
//! directory or a socket is refused. Which path is which, and the mode a replaced file gets,
//! is `sys::target`'s judgement.

use super::target::{self, Kind};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a FIFO is given to have a reader before the write is refused.
pub const READER_WAIT: Duration = Duration::from_secs(5);
/// How long a FIFO's or device's reader may take nothing before the write fails.
pub const STALL: Duration = Duration::from_secs(30);

pub use super::write_error::WriteError;

/// A file being written: a temporary file to rename into place on [`AtomicFile::commit`], or a
/// device, FIFO or own stream written directly. Dropped without `commit`, the temporary file is
/// removed.
pub struct AtomicFile {
    target: PathBuf,
    out: io::BufWriter<Paced>,
    /// The temporary file, the path it replaces and the mode the result gets; `None` when
    /// written directly.
    staged: Option<(PathBuf, PathBuf, u32)>,
    committed: bool,
}

/// A file written with a deadline: a write that would block waits for room at most `stall`.
struct Paced {
    file: File,
    stall: Duration,
}

impl Write for Paced {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut ready = Vec::new();
                    let n = crate::sys::io::wait(&[(self.file.as_fd(), crate::sys::io::Interest::Write)], self.stall, &mut ready)?;
                    if n == 0 {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, format!("its reader took nothing for {} s", self.stall.as_secs())));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The deadlines of a direct write.
#[derive(Debug, Clone, Copy)]
struct Deadlines {
    reader: Duration,
    stall: Duration,
}

const DEADLINES: Deadlines = Deadlines { reader: READER_WAIT, stall: STALL };

/// Whether `path` could be written as [`AtomicFile`] would (its kind, and for a regular file a
/// directory to put the temporary file in), without creating anything: a run that takes an
/// hour says at once that its `--output` is a symlink or in a missing directory. The write
/// itself checks again.
pub fn precheck(path: &Path) -> Result<(), WriteError> {
    if let Kind::Replace { path, .. } = target::judge(path)? {
        let dir = directory_of(&path);
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(WriteError::new(&dir, "create a temporary file in", io::Error::other("it is not a directory"))),
            Err(e) => return Err(WriteError::new(&dir, "create a temporary file in", e)),
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` as [`AtomicFile`] does.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|e| WriteError::new(path, "write", e))?;
    file.commit()
}

/// [`write()`], the result readable by its owner only (0600): a cache of root's tool output.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = AtomicFile::create(path)?;
    if let Some((_, _, mode)) = &mut file.staged {
        *mode = 0o600;
    }
    file.write_all(bytes).map_err(|e| WriteError::new(path, "write", e))?;
    file.commit()
}

impl AtomicFile {
    /// Opens `path` for writing: decides how (see the module's doc), and creates the temporary
    /// file or opens the device.
    pub fn create(path: &Path) -> Result<AtomicFile, WriteError> {
        AtomicFile::create_with(path, DEADLINES)
    }

    fn create_with(path: &Path, deadlines: Deadlines) -> Result<AtomicFile, WriteError> {
        let (file, staged) = match target::judge(path)? {
            Kind::Own(fd) => (super::stdio::own_stream(fd).map_err(|e| WriteError::new(path, "write", e))?, None),
            Kind::Direct(at) => (open_direct(&at, deadlines.reader)?, None),
            Kind::Replace { path: at, mode } => {
                let (tmp, file) = create_temp(&directory_of(&at))?;
                (file, Some((tmp, at, mode)))
            }
        };
        let out = io::BufWriter::with_capacity(1 << 16, Paced { file, stall: deadlines.stall });
        Ok(AtomicFile { target: path.to_path_buf(), out, staged, committed: false })
    }

    /// The path asked for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, and for a regular file: sets the mode, syncs, renames the temporary file over the
    /// file it replaces and syncs the directory.
    pub fn commit(mut self) -> Result<(), WriteError> {
        let target = self.target.clone();
        self.out.flush().map_err(|e| WriteError::new(&target, "write", e))?;
        let Some((tmp, at, mode)) = self.staged.clone() else {
            self.committed = true;
            return Ok(());
        };
        let file = &self.out.get_ref().file;
        file.set_permissions(std::fs::Permissions::from_mode(mode)).map_err(|e| WriteError::new(&tmp, "set the mode of", e))?;
        file.sync_all().map_err(|e| WriteError::new(&tmp, "sync", e))?;
        std::fs::rename(&tmp, &at).map_err(|e| WriteError::new(&at, "rename the temporary file over", e))?;
        self.committed = true;
        // The rename is durable once the directory is: a crash after this keeps the new file.
        let dir = directory_of(&at);
        File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| WriteError::new(&dir, "sync the directory", e))
    }
}

/// A file written as it grows, for a reader that follows it (`--progress-json`, `tail -f`):
/// its path judged as [`AtomicFile`]'s is (this process's own descriptors; a path another user
/// planted refused; a FIFO or character device opened without blocking, with deadlines), but a
/// regular file is truncated and written in place, never through a link at its name
/// (`O_NOFOLLOW`) and only when it is a regular file once opened.
pub fn create_growing(path: &Path) -> Result<impl Write + Send, WriteError> {
    let file = match target::judge(path)? {
        Kind::Own(fd) => super::stdio::own_stream(fd).map_err(|e| WriteError::new(path, "write", e))?,
        Kind::Direct(at) => open_direct(&at, DEADLINES.reader)?,
        Kind::Replace { path: at, mode } => {
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
                .open(&at)
                .map_err(|e| WriteError::new(&at, "open", e))?;
            // Judged on the opened descriptor: what was looked at may have been swapped since.
            if !file.metadata().map_err(|e| WriteError::new(&at, "inspect", e))?.file_type().is_file() {
                return Err(WriteError::new(&at, "write", io::Error::other("it changed between the look and the open (no longer a regular file)")));
            }
            file
        }
    };
    Ok(Paced { file, stall: DEADLINES.stall })
}

/// Opens a character device or a FIFO for writing without blocking: a FIFO with no reader is
/// tried again until `reader_wait` has passed, then refused.
fn open_direct(path: &Path, reader_wait: Duration) -> Result<File, WriteError> {
    let until = crate::sys::time::deadline(Instant::now(), reader_wait);
    loop {
        let opened = OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC).open(path);
        match opened {
            // Judged on the opened descriptor: what was looked at may have been swapped since.
            Ok(file) => {
                let ft = file.metadata().map_err(|e| WriteError::new(path, "inspect", e))?.file_type();
                if !(ft.is_char_device() || ft.is_fifo()) {
                    return Err(WriteError::new(
                        path,
                        "write",
                        io::Error::other("it changed between the look and the open (no longer a device or a FIFO)"),
                    ));
                }
                return Ok(file);
            }
            // A device that answers ENXIO (`/dev/tty` without a controlling terminal) has no
            // reader to wait for: said at once (issue #58: it waited 5 s).
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device()) => {
                let why = "there is no such terminal or device here (fabcheck has no controlling terminal: /dev/tty names none)";
                return Err(WriteError::new(path, "open", io::Error::other(why)));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                let why = format!("no process has it open for reading (waited {} s)", reader_wait.as_secs_f64());
                return Err(WriteError::new(path, "open", io::Error::other(why)));
            }
            Err(e) => return Err(WriteError::new(path, "open", e)),
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let (false, Some((tmp, _, _))) = (self.committed, &self.staged) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The directory a path's file lives in (`.` for a bare name).
fn directory_of(path: &Path) -> PathBuf {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf()
}

/// A fresh temporary file in `dir`: created exclusively, not following links, mode 0600, named
/// `.fabcheck-XXXXXXXXXXXX.tmp` (short, whatever the target's name).
fn create_temp(dir: &Path) -> Result<(PathBuf, File), WriteError> {
    let mut last = None;
    for attempt in 0..16u32 {
        let path = dir.join(temp_name(attempt));
        match create_exclusive(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(WriteError::new(dir, "create a temporary file in", e)),
        }
    }
    Err(WriteError::new(dir, "create a temporary file in", last.unwrap_or_else(|| io::Error::other("every name tried was taken"))))
}

/// Creates `path` as a new file: never an existing one, never through a symlink.
fn create_exclusive(path: &Path) -> io::Result<File> {
    create_new(path, 0o600)
}

/// Creates `path` as a new file with `mode` (less the umask): `O_CREAT|O_EXCL|O_NOFOLLOW`, so a
/// file or link planted at the name is refused, never followed or adopted. The safe creation
/// every file fabcheck writes goes through (a temporary file here, each file of a bundle in
/// `sys::new_dir`).
pub(super) fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).mode(mode).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
}

/// A name no one can guess ahead: the process id, the time and a counter, through the
/// standard library's randomly keyed hasher.
pub(super) fn temp_name(attempt: u32) -> OsString {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    format!(".fabcheck-{:012x}.tmp", h.finish() & 0xffff_ffff_ffff).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, FileTypeExt};

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabcheck-atomic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `--progress-json`'s file: written in place and readable while it grows; a link planted at
    /// its name is not followed (the file it points at is untouched).
    #[test]
    fn a_growing_file_is_written_in_place_and_never_through_a_link() {
        let dir = scratch("growing");
        let path = dir.join("progress.json");
        let mut out = create_growing(&path).unwrap();
        out.write_all(b"{\"t\":1}\n").unwrap();
        out.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"t\":1}\n", "readable while it grows");
        drop(out);
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.join("link.json");
        symlink(&victim, &link).unwrap();
        assert!(create_growing(&link).is_err(), "a link at the name is not followed");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        std::fs::remove_dir_all(&dir).ok();
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_a_regular_file_and_leaves_no_temporary_file() {
        let dir = scratch("replace");
        let path = dir.join("fabcheck.prom");
        write(&path, b"one\n").unwrap();
        write(&path, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        assert_eq!(entries(&dir), ["fabcheck.prom"]);
        assert!(precheck(&dir.join("missing/x")).unwrap_err().to_string().contains("missing"));
        assert!(precheck(&path).is_ok() && precheck(&dir.join("new")).is_ok());
        let err = write(&dir.join("missing/x"), b"x").unwrap_err();
        assert!(err.to_string().contains("temporary file in") && err.to_string().contains("missing"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_planted_symlink_at_the_old_temporary_name_is_not_followed() {
        // 0.2 wrote `.NAME.PID.tmp` with create+truncate: a symlink planted there made the run
        // overwrite whatever it pointed at.
        let dir = scratch("planted");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        symlink(&victim, dir.join(format!(".out.json.{}.tmp", std::process::id()))).unwrap();
        write(&dir.join("out.json"), b"result\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(std::fs::read_to_string(dir.join("out.json")).unwrap(), "result\n");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_temporary_file_is_created_exclusively_without_following_links() {
        let dir = scratch("exclusive");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let planted = dir.join(".fabcheck-planted.tmp");
        symlink(&victim, &planted).unwrap();
        assert!(create_exclusive(&planted).is_err(), "a symlink at the name is refused, not followed");
        std::fs::write(dir.join(".fabcheck-file.tmp"), "theirs").unwrap();
        assert_eq!(create_exclusive(&dir.join(".fabcheck-file.tmp")).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let (tmp, f) = create_temp(&dir).unwrap();
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600, "0600 while written");
        assert!(tmp.file_name().unwrap().len() < 32);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_existing_file_keeps_its_mode_and_a_new_one_gets_the_umask_default() {
        let dir = scratch("mode");
        let kept = dir.join("secret.json");
        std::fs::write(&kept, "old").unwrap();
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
        write(&kept, b"new").unwrap();
        assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o7777, 0o600);
        let fresh = dir.join("fresh.json");
        write(&fresh, b"new").unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o7777, 0o666 & !target::umask());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_target_name_near_name_max_is_written() {
        let dir = scratch("long");
        let path = dir.join(format!("{}.prom", "n".repeat(250)));
        write(&path, b"long\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "long\n");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_fifo_is_written_directly_and_stays_a_fifo() {
        let dir = scratch("fifo");
        let fifo = dir.join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // A reader open first, without blocking: the write never waits, and a writer that
        // replaced the FIFO would leave it empty rather than hang the test.
        let mut reader = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        write(&fifo, b"through the pipe\n").unwrap();
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "not replaced by a regular file");
        let mut text = String::new();
        let _ = io::Read::read_to_string(&mut reader, &mut text);
        assert_eq!(text, "through the pipe\n");
        assert_eq!(entries(&dir), ["pipe"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_fifo_nobody_reads_is_refused_after_the_wait() {
        // Issue #46 item 4: the open blocked for ever.
        let dir = scratch("no-reader");
        let fifo = dir.join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let quick = Deadlines { reader: Duration::from_millis(200), stall: Duration::from_millis(200) };
        let err = AtomicFile::create_with(&fifo, quick).err().expect("refused").to_string();
        assert!(err.contains("no process has it open for reading"), "{err}");
        // A reader that takes nothing: the write ends when the pipe is full and it stays so.
        let _reader = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        let mut file = AtomicFile::create_with(&fifo, quick).unwrap();
        let wrote = file.write_all(&vec![b'x'; 4 << 20]).and_then(|()| file.flush());
        let err = wrote.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_file_another_user_planted_gives_way_to_0644() {
        // Issue #46 item 4: as root, nobody's 6777 file was replaced keeping 6777. (The
        // judgement is unit-tested for every user in `sys::target`; this is the write.)
        if !nix::unistd::geteuid().is_root() {
            assert_eq!(target::replacement_mode(65534, 0o106777, nix::unistd::geteuid().as_raw()), 0o644);
            return;
        }
        let dir = scratch("planted-mode");
        let path = dir.join("out.prom");
        std::fs::write(&path, "theirs").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o6777)).unwrap();
        write(&path, b"ours").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((std::os::unix::fs::MetadataExt::uid(&meta), meta.permissions().mode() & 0o7777), (0, 0o644));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_symlink_to_a_file_is_refused_and_left_alone() {
        let dir = scratch("link");
        let real = dir.join("real.json");
        std::fs::write(&real, "old").unwrap();
        let link = dir.join("link.json");
        symlink(&real, &link).unwrap();
        let err = write(&link, b"new").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "old");
        assert!(write(&dir, b"x").unwrap_err().to_string().contains("directory"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_abandoned_file_leaves_nothing_behind() {
        let dir = scratch("abandon");
        let mut f = AtomicFile::create(&dir.join("big.csv")).unwrap();
        f.write_all(b"a,b\n").unwrap();
        drop(f);
        assert!(entries(&dir).is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
