//! Running a fixed local tool (`ethtool`, `dcb`, `systemctl`) within a time limit that covers
//! its whole life, output included. A tool may leave a grandchild holding its stdout (a helper
//! it forked): waiting for end-of-file would then wait for the grandchild, and a 2 s limit
//! became 47 s. Here the tool runs in its own process group; its output is read without
//! blocking, against the deadline; once the tool exits, whatever is left in its group is killed,
//! and at the deadline the whole group is.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Longest wait between two looks at the tool (its exit is not an event on the pipe).
const SLICE: Duration = Duration::from_millis(20);

/// stderr kept: enough for the line that says why a tool failed or was refused.
pub const STDERR_CAP: usize = 4096;

/// What a tool run within its limit gave.
#[derive(Debug)]
pub struct Finished {
    /// `None` when the tool itself did not exit by the deadline (it was killed).
    pub status: Option<ExitStatus>,
    /// Its standard output, at most the cap asked for (the rest is read and dropped, so a
    /// talkative tool is never blocked on a full pipe).
    pub stdout: Vec<u8>,
    /// Its standard error, at most [`STDERR_CAP`] bytes (drained alike).
    pub stderr: Vec<u8>,
    /// Whether the deadline ended the run (the tool, or something holding its pipes, was
    /// still there).
    pub timed_out: bool,
}

/// Runs `program` with `args` (no shell; stdin null; `LC_ALL=C`, so its words are the ones
/// parsers know), reading at most `cap` bytes of its stdout and [`STDERR_CAP`] of its stderr,
/// and ends everything it started by `limit` at the latest. A program that is not installed
/// is an error of kind `NotFound`.
pub fn run_bounded(program: &str, args: &[&str], limit: Duration, cap: usize) -> io::Result<Finished> {
    let deadline = super::time::deadline(Instant::now(), limit);
    let mut child = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let result = drive(&mut child, group, deadline, cap);
    // Whatever is left in the tool's group (a stray holding the pipe, or the tool itself at
    // the deadline) goes; a group already empty answers ESRCH, which is fine.
    let _ = killpg(group, Signal::SIGKILL);
    let status = match result.as_ref().map(|f| f.status) {
        Ok(Some(status)) => Some(status),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    result.map(|f| Finished { status, ..f })
}

/// How long a launcher child (ssh, srun, a local agent) has after SIGTERM before its process
/// group gets SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// A launcher child told to go, started in a process group of its own
/// (`Command::process_group(0)`): at its time it is sent SIGTERM, by group, and
/// [`TERM_GRACE`] later SIGKILL, by group, so a child that ignores SIGTERM (an `srun` that
/// traps it) and whatever it started are ended alike; once it has exited, whatever is left
/// of its group is killed (issue #58: an srun that ignored SIGTERM left its agent running).
#[derive(Debug)]
pub struct Leaving {
    child: Child,
    /// When it is sent SIGTERM (`None`: not yet decided, a shared ssh login).
    pub term_at: Option<Instant>,
    kill_at: Option<Instant>,
}

impl Leaving {
    pub fn new(child: Child, term_at: Option<Instant>) -> Leaving {
        Leaving { child, term_at, kill_at: None }
    }

    fn group(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX))
    }

    /// One look at it at `now`; `false` once it is gone (reaped, its group killed).
    pub fn poll(&mut self, now: Instant) -> bool {
        match self.child.try_wait() {
            Ok(Some(_)) | Err(_) => {
                // Anything of its group still there is a stray (ESRCH when none is).
                let _ = killpg(self.group(), Signal::SIGKILL);
                false
            }
            Ok(None) if self.kill_at.is_some_and(|at| now >= at) => {
                let _ = killpg(self.group(), Signal::SIGKILL);
                let _ = self.child.kill();
                let _ = self.child.wait();
                false
            }
            Ok(None) if self.kill_at.is_none() && self.term_at.is_some_and(|at| now >= at) => {
                let _ = killpg(self.group(), Signal::SIGTERM);
                self.kill_at = Some(super::time::deadline(now, TERM_GRACE));
                true
            }
            Ok(None) => true,
        }
    }
}

/// One of the tool's output pipes, read without blocking, up to its cap.
struct Pipe {
    file: File,
    kept: Vec<u8>,
    cap: usize,
    eof: bool,
}

impl Pipe {
    fn new(fd: Option<impl Into<OwnedFd>>, cap: usize) -> io::Result<Pipe> {
        let file = File::from(fd.ok_or_else(|| io::Error::other("no pipe to the tool"))?.into());
        super::io::set_nonblocking(file.as_fd())?;
        Ok(Pipe { file, kept: Vec::new(), cap, eof: false })
    }

    /// Reads what is there; what is past the cap is dropped.
    fn drain(&mut self, chunk: &mut [u8]) -> io::Result<()> {
        while !self.eof {
            match self.file.read(chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    let room = self.cap.saturating_sub(self.kept.len());
                    self.kept.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn drive(child: &mut Child, group: Pid, deadline: Instant, cap: usize) -> io::Result<Finished> {
    let mut pipes = [Pipe::new(child.stdout.take(), cap)?, Pipe::new(child.stderr.take(), STDERR_CAP)?];
    let mut chunk = [0u8; 8192];
    let mut status = None;
    let mut ready = Vec::new();
    loop {
        for pipe in &mut pipes {
            pipe.drain(&mut chunk)?;
        }
        let eof = pipes.iter().all(|p| p.eof);
        if status.is_none() {
            status = child.try_wait()?;
            if status.is_some() && !eof {
                // The tool is done; anything of its group still holding a pipe is a stray.
                let _ = killpg(group, Signal::SIGKILL);
            }
        }
        let done = |pipes: [Pipe; 2], timed_out| {
            let [out, err] = pipes;
            Ok(Finished { status, stdout: out.kept, stderr: err.kept, timed_out })
        };
        if eof && status.is_some() {
            return done(pipes, false);
        }
        let now = Instant::now();
        if now >= deadline {
            return done(pipes, true);
        }
        let wait = deadline.saturating_duration_since(now).min(SLICE);
        let open: Vec<_> = pipes.iter().filter(|p| !p.eof).map(|p| (p.file.as_fd(), super::io::Interest::Read)).collect();
        if open.is_empty() {
            std::thread::sleep(wait);
        } else {
            super::io::wait(&open, wait, &mut ready)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_status_of_a_quick_tool() {
        let f = run_bounded("sh", &["-c", "echo hello; exit 3"], Duration::from_secs(20), 1024).unwrap();
        assert_eq!((f.stdout.as_slice(), f.status.and_then(|s| s.code()), f.timed_out), (&b"hello\n"[..], Some(3), false));
    }

    #[test]
    fn a_grandchild_holding_stdout_does_not_stretch_the_limit() {
        // 0.2 waited for end-of-file, which the sleeping grandchild held for 30 s.
        let started = Instant::now();
        let f = run_bounded("sh", &["-c", "sleep 30 & echo partial"], Duration::from_secs(2), 1024).unwrap();
        let took = started.elapsed();
        assert_eq!(f.stdout, b"partial\n");
        assert!(f.status.is_some_and(|s| s.success()), "{f:?}");
        // A generous bound, far below the grandchild's 30 s.
        assert!(took < Duration::from_secs(10), "took {took:?}");
    }

    #[test]
    fn a_grandchild_that_left_the_group_is_cut_off_at_the_deadline() {
        // `setsid` puts the grandchild in a session of its own, out of reach of the group
        // kill: the deadline still ends the read, with what the tool printed.
        let started = Instant::now();
        // (The pause lets the grandchild leave before the tool exits and its group is killed.)
        let f = run_bounded("sh", &["-c", "setsid sleep 8 & sleep 0.5; echo early"], Duration::from_secs(2), 1024).unwrap();
        assert!(started.elapsed() < Duration::from_secs(7), "took {:?}", started.elapsed());
        assert_eq!(f.stdout, b"early\n");
        assert!(f.status.is_some(), "the tool itself exited");
        assert!(f.timed_out, "the stray held the pipe until the deadline: {f:?}");
    }

    #[test]
    fn a_tool_that_never_ends_is_killed_at_the_deadline() {
        let started = Instant::now();
        let f = run_bounded("sh", &["-c", "echo start; exec sleep 30"], Duration::from_millis(300), 1024).unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
        assert!(f.timed_out && f.status.is_none(), "{f:?}");
        assert_eq!(f.stdout, b"start\n");
    }

    #[test]
    fn a_talkative_tool_is_capped_and_not_blocked() {
        let f = run_bounded("sh", &["-c", "head -c 300000 /dev/zero"], Duration::from_secs(20), 1000).unwrap();
        assert_eq!(f.stdout.len(), 1000);
        assert!(f.status.is_some_and(|s| s.success()) && !f.timed_out, "{f:?}");
    }

    #[test]
    fn a_missing_tool_is_an_error() {
        let missing = run_bounded("/nonexistent/fabcheck-tool", &[], Duration::from_secs(1), 10);
        assert_eq!(missing.map(|_| ()).map_err(|e| e.kind()), Err(io::ErrorKind::NotFound));
    }

    #[test]
    fn stderr_is_kept_apart_and_capped() {
        let f = run_bounded("sh", &["-c", "echo out; echo why >&2; head -c 100000 /dev/zero >&2"], Duration::from_secs(20), 1024).unwrap();
        assert_eq!(f.stdout, b"out\n");
        assert_eq!((&f.stderr[..4], f.stderr.len()), (&b"why\n"[..], STDERR_CAP));
        assert!(f.status.is_some_and(|s| s.success()) && !f.timed_out, "{f:?}");
    }

    #[test]
    fn a_child_that_ignores_sigterm_and_its_group_are_killed_after_the_grace() {
        let dir = std::env::temp_dir().join(format!("fabcheck-leaving-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let pidfile = dir.join("pid");
        let script = "trap '' TERM; sleep 300 & echo $! > \"$1\"; wait";
        let child = Command::new("sh").args(["-c", script, "sh"]).arg(&pidfile).process_group(0).spawn().unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while std::fs::read_to_string(&pidfile).map_or(true, |s| !s.ends_with('\n')) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let grandchild: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        let start = Instant::now();
        let mut leaving = Leaving::new(child, Some(start));
        assert!(leaving.poll(start), "SIGTERM sent, ignored");
        assert!(leaving.kill_at.is_some());
        let mut looks = 0;
        while leaving.poll(Instant::now()) {
            looks += 1;
            assert!(Instant::now() < until, "still running after {looks} looks");
            std::thread::sleep(Duration::from_millis(20));
        }
        let alive = |pid: i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        };
        let mut gone = false;
        for _ in 0..200 {
            if !alive(grandchild) {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone, "the grandchild {grandchild} outlived its group's SIGKILL");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
