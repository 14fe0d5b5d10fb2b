//! The private folder of a run's ssh control sockets (`ssh_share`'s shared logins).
//!
//! Whoever can rename or replace that folder chooses the master socket root's ssh sessions
//! talk through: in 0.3 it was made in `$TMPDIR`, and with a world-writable TMPDIR that is not
//! sticky an unprivileged user swapped it for their own every time (issue #46 item 1). So the
//! folder is made only under a directory no one else can write, `$XDG_RUNTIME_DIR`, else the
//! user's `~/.ssh` (from the password database, not `$HOME`, which `sudo` may keep), never a
//! shared temporary directory. That directory and every directory above it must belong to
//! root or this user and be writable by no one else (a sticky directory such as `/tmp` above it
//! is fine: others cannot rename what is in it). The folder is made with `mkdir` mode 0700 and
//! looked at again afterwards (a directory, not a link, this user's, 0700). Where no such
//! directory exists, logins are not shared, and the hub says why once.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Longest control socket path kept (a Unix socket path holds 108 bytes; ssh adds a suffix
/// while it binds).
const MAX_SOCKET_PATH: usize = 90;
/// What `/%C` adds to the folder's path (`%C` is 40 hex digits).
const SOCKET_NAME: usize = 41;

/// Where the folder may go: the places asked, in order (injected in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    /// `$XDG_RUNTIME_DIR`, when set.
    pub runtime_dir: Option<PathBuf>,
    /// This user's home directory (the password database's, else `$HOME`).
    pub home: Option<PathBuf>,
    /// The effective user.
    pub euid: u32,
}

impl Places {
    /// The places of this process.
    pub fn of_this_process() -> Places {
        let euid = nix::unistd::geteuid();
        let home = nix::unistd::User::from_uid(euid).ok().flatten().map(|u| u.dir).or_else(|| std::env::var_os("HOME").map(PathBuf::from));
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()).map(PathBuf::from);
        Places { runtime_dir, home, euid: euid.as_raw() }
    }

    /// The directories to try, each named as a person would name it.
    fn candidates(&self) -> Vec<(String, Option<PathBuf>)> {
        vec![("$XDG_RUNTIME_DIR".to_string(), self.runtime_dir.clone()), ("~/.ssh".to_string(), self.home.as_ref().map(|h| h.join(".ssh")))]
    }
}

/// Why a directory cannot hold the sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    NotSet,
    NotAbsolute,
    Missing,
    NotADirectory,
    /// A directory on the way (itself or one above it) belongs to another user.
    Owner {
        dir: PathBuf,
        uid: u32,
    },
    /// A directory on the way may be written by others and is not sticky.
    Writable {
        dir: PathBuf,
        mode: u32,
    },
    /// The path would not fit a Unix socket's.
    TooLong {
        len: usize,
    },
    /// Its path holds a character ssh's `ControlPath` cannot be given (a quote, a backslash,
    /// a control character, or bytes that are not UTF-8).
    Unquotable,
    /// The folder made in it is not what was made (a link, another owner, another mode).
    Swapped {
        dir: PathBuf,
    },
    Io(String),
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::NotSet => write!(f, "is not set"),
            Unfit::NotAbsolute => write!(f, "is not an absolute path"),
            Unfit::Missing => write!(f, "does not exist"),
            Unfit::NotADirectory => write!(f, "is not a directory"),
            Unfit::Owner { dir, uid } => write!(f, "{} belongs to user {uid}, not to this user or root", dir.display()),
            Unfit::Writable { dir, mode } => write!(f, "{} may be written by others (mode {:o}, not sticky)", dir.display(), mode & 0o7777),
            Unfit::TooLong { len } => write!(f, "is too long for a socket path ({len} bytes with the socket's name, at most {MAX_SOCKET_PATH})"),
            Unfit::Unquotable => write!(f, "holds a quote, a backslash or a control character, which ssh's ControlPath cannot take"),
            Unfit::Swapped { dir } => write!(f, "{} was not the private folder made there (a link, another owner or mode)", dir.display()),
            Unfit::Io(e) => write!(f, "{e}"),
        }
    }
}

/// No directory could hold the sockets: each place asked, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoPrivateDir {
    pub tried: Vec<(String, Option<PathBuf>, Unfit)>,
}

impl std::fmt::Display for NoPrivateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no directory that only this user can write holds ssh's control sockets (")?;
        for (i, (name, path, why)) in self.tried.iter().enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            match path {
                Some(p) if name.starts_with('~') => write!(f, "{sep}{name} ({}) {why}", p.display())?,
                Some(p) => write!(f, "{sep}{name} = {} {why}", p.display())?,
                None => write!(f, "{sep}{name} {why}")?,
            }
        }
        write!(f, ")")
    }
}

impl NoPrivateDir {
    /// What to do about it.
    pub fn remedy(&self) -> &'static str {
        "to share one ssh login per host, set XDG_RUNTIME_DIR to a directory only you can write, or `mkdir -m 700 ~/.ssh`"
    }
}

/// The private folder of this run's control sockets (0700, a fresh name), removed with it.
#[derive(Debug)]
pub struct SocketDir {
    path: PathBuf,
}

impl SocketDir {
    /// A new folder in the first place that fits (see the module's doc).
    pub fn create() -> Result<SocketDir, NoPrivateDir> {
        SocketDir::create_in(&Places::of_this_process())
    }

    /// [`SocketDir::create`], or, said once on stderr (the hub asks once a run), why logins are
    /// not shared.
    pub fn for_this_run() -> Option<SocketDir> {
        match SocketDir::create() {
            Ok(dir) => Some(dir),
            Err(none) => {
                // Never a panic on a full or closed stderr (`eprintln!` would be).
                let _ = std::io::Write::write_fmt(
                    &mut std::io::stderr(),
                    format_args!(
                        "fabcheck: ssh logins are not shared, each agent session logs in on its own: {none}\n  what to do: {}\n",
                        none.remedy()
                    ),
                );
                None
            }
        }
    }

    /// [`SocketDir::create`] in the places given.
    pub fn create_in(places: &Places) -> Result<SocketDir, NoPrivateDir> {
        let mut tried = Vec::new();
        for (name, base) in places.candidates() {
            let Some(base) = base else {
                tried.push((name, None, Unfit::NotSet));
                continue;
            };
            match make_in(&base, places.euid) {
                Ok(dir) => return Ok(dir),
                Err(why) => tried.push((name, Some(base), why)),
            }
        }
        Err(NoPrivateDir { tried })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `-o` options of an ssh session opened as `how`.
    pub fn options(&self, how: super::ssh_share::Open) -> Vec<String> {
        use super::ssh_share::Open;
        match how {
            Open::Master | Open::Shared => {
                vec!["ControlMaster=auto".into(), control_path(&self.path).unwrap_or_else(|| "ControlPath=none".into()), "ControlPersist=no".into()]
            }
            Open::Alone | Open::Wait => vec!["ControlMaster=no".into(), "ControlPath=none".into()],
        }
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        // A master that was killed leaves its socket behind.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The `ControlPath=` option for sockets in `dir`, as ssh's option parser reads it (issue #58:
/// an `XDG_RUNTIME_DIR` with a space or `%` broke it): a `%` doubled, since ssh expands `%`
/// tokens in it (`percent_expand`, readconf.c), and the value in double quotes when it holds
/// whitespace, which both of ssh's option splitters take as one word (`strdelim` before
/// OpenSSH 8.7, `argv_split` since). `None` for a path that cannot be said so (a quote, a
/// backslash, a control character, not UTF-8).
pub fn control_path(dir: &Path) -> Option<String> {
    let text = dir.to_str()?;
    if text.chars().any(|c| c == '"' || c == '\\' || c == '\'' || c.is_control()) {
        return None;
    }
    let value = format!("{}/%C", text.replace('%', "%%"));
    Some(if value.contains(char::is_whitespace) { format!("ControlPath=\"{value}\"") } else { format!("ControlPath={value}") })
}

/// Makes the folder in `base` once `base` and the directories above it are safe.
fn make_in(base: &Path, euid: u32) -> Result<SocketDir, Unfit> {
    if !base.is_absolute() {
        return Err(Unfit::NotAbsolute);
    }
    if control_path(base).is_none() {
        return Err(Unfit::Unquotable);
    }
    let real = match std::fs::canonicalize(base) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unfit::Missing),
        Err(e) => return Err(Unfit::Io(e.to_string())),
    };
    let meta = std::fs::metadata(&real).map_err(|e| Unfit::Io(e.to_string()))?;
    if !meta.is_dir() {
        return Err(Unfit::NotADirectory);
    }
    for dir in real.ancestors() {
        let m = std::fs::metadata(dir).map_err(|e| Unfit::Io(format!("{}: {e}", dir.display())))?;
        if let Some(why) = judge_ancestor(dir, m.uid(), m.mode(), euid) {
            return Err(why);
        }
    }
    for attempt in 0..8u32 {
        let path = real.join(format!("fabcheck-ssh-{}", folder_name(attempt)));
        let len = path.as_os_str().len() + SOCKET_NAME;
        if len > MAX_SOCKET_PATH {
            return Err(Unfit::TooLong { len });
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Unfit::Io(format!("{}: {e}", path.display()))),
        }
        // Looked at again, not following a link: what ssh will use must be what was made.
        let made = std::fs::symlink_metadata(&path).map_err(|e| Unfit::Io(e.to_string()))?;
        if !is_private_folder(made.file_type().is_dir(), made.uid(), made.mode(), euid) {
            return Err(Unfit::Swapped { dir: path });
        }
        return Ok(SocketDir { path });
    }
    Err(Unfit::Io("every folder name tried was taken".into()))
}

/// Why a directory on the way to the sockets is not safe, if it is not: it must belong to root
/// or this user, and others may not write it unless it is sticky (they then cannot rename
/// what they do not own in it).
fn judge_ancestor(dir: &Path, uid: u32, mode: u32, euid: u32) -> Option<Unfit> {
    if uid != 0 && uid != euid {
        return Some(Unfit::Owner { dir: dir.to_path_buf(), uid });
    }
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky {
        return Some(Unfit::Writable { dir: dir.to_path_buf(), mode });
    }
    None
}

/// Whether the folder made is a directory of this user's that only this user may enter.
fn is_private_folder(is_dir: bool, uid: u32, mode: u32, euid: u32) -> bool {
    is_dir && uid == euid && mode & 0o077 == 0 && mode & 0o700 == 0o700
}

/// A name no one can guess ahead (the standard library's randomly keyed hasher).
fn folder_name(attempt: u32) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    format!("{:08x}", h.finish() & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ssh_share::Open;
    use std::os::unix::fs::PermissionsExt;

    /// A scratch directory under the test's temporary directory with `mode`.
    fn scratch(tag: &str, mode: u32) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    }

    fn euid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    /// The temporary directory the suite runs in must itself be safe for these tests to mean
    /// anything (a sticky /tmp is).
    fn places(runtime_dir: Option<PathBuf>, home: Option<PathBuf>) -> Places {
        Places { runtime_dir, home, euid: euid() }
    }

    #[test]
    fn a_world_writable_directory_that_is_not_sticky_is_never_used() {
        // Issue #46 item 1: 0.3 made the folder in such a TMPDIR, where another user won the
        // race for it 20 times out of 20.
        let shared = scratch("shared", 0o777);
        let err = SocketDir::create_in(&places(Some(shared.clone()), None)).unwrap_err();
        assert_eq!(err.tried[0].2, Unfit::Writable { dir: shared.clone(), mode: 0o40777 });
        assert_eq!(err.tried[1].2, Unfit::NotSet);
        let text = err.to_string();
        assert!(text.contains("may be written by others (mode 777, not sticky)") && text.contains("~/.ssh is not set"), "{text}");
        // A private directory below a shared one is no better: the shared one can be renamed.
        let inner = shared.join("private");
        std::fs::create_dir(&inner).unwrap();
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700)).unwrap();
        let err = SocketDir::create_in(&places(Some(inner), None)).unwrap_err();
        assert_eq!(err.tried[0].2, Unfit::Writable { dir: shared.clone(), mode: 0o40777 });
        assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 1, "nothing was made in it");
        std::fs::remove_dir_all(&shared).ok();
    }

    #[test]
    fn the_runtime_directory_first_then_ssh_under_home() {
        let runtime = scratch("runtime", 0o700);
        let dir = SocketDir::create_in(&places(Some(runtime.clone()), None)).unwrap();
        let path = dir.path().to_path_buf();
        assert_eq!(path.parent().unwrap(), std::fs::canonicalize(&runtime).unwrap());
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), euid());
        assert!(dir.options(Open::Shared).iter().any(|o| o == &format!("ControlPath={}/%C", path.display())));
        assert_eq!(dir.options(Open::Alone), ["ControlMaster=no", "ControlPath=none"]);
        std::fs::write(path.join("left-behind"), b"").unwrap();
        drop(dir);
        assert!(!path.exists(), "removed with the run");

        let home = scratch("home", 0o755);
        let err = SocketDir::create_in(&places(None, Some(home.clone()))).unwrap_err();
        assert_eq!(err.tried[1].2, Unfit::Missing, "no ~/.ssh: {err}");
        assert!(err.to_string().contains(&format!("~/.ssh ({}) does not exist", home.join(".ssh").display())), "{err}");
        std::fs::create_dir(home.join(".ssh")).unwrap();
        std::fs::set_permissions(home.join(".ssh"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = SocketDir::create_in(&places(Some(PathBuf::from("relative")), Some(home.clone()))).unwrap();
        assert!(dir.path().starts_with(std::fs::canonicalize(home.join(".ssh")).unwrap()));
        drop(dir);
        std::fs::remove_dir_all(&runtime).ok();
        std::fs::remove_dir_all(&home).ok();
    }

    #[test]
    fn owners_modes_and_links_are_judged() {
        let me = 1000;
        let d = Path::new("/x");
        assert_eq!(judge_ancestor(d, 0, 0o40755, me), None, "root's");
        assert_eq!(judge_ancestor(d, me, 0o40700, me), None, "mine");
        assert_eq!(judge_ancestor(d, 0, 0o41777, me), None, "sticky /tmp");
        assert_eq!(judge_ancestor(d, 1001, 0o40700, me), Some(Unfit::Owner { dir: d.into(), uid: 1001 }));
        assert_eq!(judge_ancestor(d, me, 0o40770, me), Some(Unfit::Writable { dir: d.into(), mode: 0o40770 }), "group-writable");
        assert!(is_private_folder(true, me, 0o40700, me));
        assert!(!is_private_folder(false, me, 0o120777, me), "a link");
        assert!(!is_private_folder(true, 1001, 0o40700, me), "another user's");
        assert!(!is_private_folder(true, me, 0o40755, me), "others may enter");
    }

    #[test]
    fn a_path_too_long_for_a_socket_is_refused() {
        let root = scratch("long", 0o700);
        let mut long = root.clone();
        while long.as_os_str().len() < MAX_SOCKET_PATH {
            long = long.join("dddddddddd");
            std::fs::create_dir(&long).unwrap();
        }
        let err = SocketDir::create_in(&places(Some(long), None)).unwrap_err();
        assert!(matches!(err.tried[0].2, Unfit::TooLong { .. }), "{err}");
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn a_runtime_directory_with_a_space_or_a_percent_is_quoted_for_ssh() {
        assert_eq!(control_path(Path::new("/run/user/0")).unwrap(), "ControlPath=/run/user/0/%C");
        assert_eq!(control_path(Path::new("/run/a b/x")).unwrap(), "ControlPath=\"/run/a b/x/%C\"");
        assert_eq!(control_path(Path::new("/run/100%/x")).unwrap(), "ControlPath=/run/100%%/x/%C");
        for bad in ["/run/a\"b", "/run/a\\b", "/run/a'b", "/run/a\nb"] {
            assert_eq!(control_path(Path::new(bad)), None, "{bad:?}");
        }
        // The folder is made in such a directory and ssh is given it quoted.
        let base = scratch("with space %", 0o700);
        let dir = make_in(&base, euid()).unwrap();
        let opts = dir.options(Open::Shared);
        assert!(opts[1].starts_with("ControlPath=\"") && opts[1].contains("space %%"), "{opts:?}");
        let quoted = scratch("quote", 0o700).join("a\"b");
        std::fs::create_dir_all(&quoted).unwrap();
        assert_eq!(make_in(&quoted, euid()).err(), Some(Unfit::Unquotable));
    }
}
