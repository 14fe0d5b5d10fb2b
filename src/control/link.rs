//! How the controller starts or reaches one agent, and that agent's channel: a local child
//! or an ssh child speaking over pipes, or a TCP socket to `fabcheck serve`. Everything is
//! non-blocking; the [`Hub`](super::hub::Hub) polls every channel from one thread.

use super::endpoint::HostSpec;
use crate::outcome::loss::{Carrier, Loss, LossKind};
use crate::sys::io;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};

/// The environment variable the shared token may come from; scrubbed from every child.
pub const TOKEN_VARIABLE: &str = "FABCHECK_TOKEN";

/// How `[user@]host` endpoints get their agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// `ssh host fabcheck agent`, speaking over ssh's stdio.
    Ssh,
    /// `srun --nodes=1 --nodelist=host ... fabcheck agent` inside a Slurm allocation, speaking
    /// over srun's stdio: no ssh keys, no open port, no token.
    Srun,
    /// `kubectl exec -i POD -- fabcheck agent` in the fabcheck DaemonSet's pod on the node
    /// (`super::kubectl`).
    Kubectl,
}

/// How an agent at `host` is carried with this launcher, as a loss names it.
pub fn carrier(host: &HostSpec, launcher: Launcher) -> Carrier {
    match (host, launcher) {
        (HostSpec::Local, _) => Carrier::Local,
        (HostSpec::Tcp { .. }, _) => Carrier::Tcp,
        (HostSpec::Ssh { host, .. }, Launcher::Srun) => Carrier::Srun { node: host.clone() },
        (HostSpec::Ssh { host, .. }, Launcher::Kubectl) => Carrier::Kubectl { node: host.clone() },
        (ssh @ HostSpec::Ssh { .. }, Launcher::Ssh) => Carrier::Ssh { login: ssh.to_string() },
    }
}

/// Refuses, before anything starts, endpoints this launcher cannot start.
pub fn validate(launcher: Launcher, host: &HostSpec, label: &str) -> Result<(), Loss> {
    if let (Launcher::Srun, HostSpec::Ssh { user: Some(_), .. }) = (launcher, host) {
        return Err(Loss::new(label, LossKind::SrunWithUser));
    }
    if let (Launcher::Kubectl, HostSpec::Ssh { user, host }) = (launcher, host) {
        let detail = match user {
            Some(_) => "kubectl endpoints are node names: drop the user@".to_string(),
            None if !super::kubectl::valid_name(host) => format!("'{host}' is not a Kubernetes node name"),
            None => return Ok(()),
        };
        return Err(Loss::new(label, LossKind::NotStarted { carrier: Carrier::Kubectl { node: host.clone() }, detail }));
    }
    Ok(())
}

/// How to start agents that are not already running.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// `fabcheck` on remote hosts (ssh, srun); a path or a name on the remote PATH.
    pub remote_fabcheck: String,
    pub token: Option<String>,
    pub connect_timeout: std::time::Duration,
    pub launcher: Launcher,
    /// `--k8s-selector`: the label of the DaemonSet's pods (`--launcher kubectl`).
    pub k8s_selector: String,
}

/// An open channel to an agent.
pub enum Channel {
    Child { child: Child, stdin: Option<ChildStdin>, stdout: ChildStdout, stderr: Option<ChildStderr> },
    Tcp(TcpStream),
}

/// Starts a local or ssh agent as a child whose pipes are all non-blocking.
/// `ssh_options` are extra `-o` options for an ssh session (how it shares its host's login).
pub fn spawn(host: &HostSpec, label: &str, opts: &LaunchOptions, ssh_options: &[String]) -> Result<Channel, Loss> {
    let not_started = |detail: String| Loss::new(label, LossKind::NotStarted { carrier: carrier(host, opts.launcher), detail });
    if matches!(host, HostSpec::Ssh { .. }) && !valid_remote_path(&opts.remote_fabcheck) {
        return Err(Loss::new(label, LossKind::BadRemotePath(opts.remote_fabcheck.clone())));
    }
    // Checked when the run was configured too; here again, for any caller that did not.
    validate(opts.launcher, host, label)?;
    let mut command = match host {
        HostSpec::Local => {
            let exe = std::env::current_exe().map_err(|e| Loss::new(label, LossKind::NoOwnBinary(e.to_string())))?;
            let mut c = Command::new(exe);
            c.arg("agent");
            c
        }
        HostSpec::Ssh { host, .. } if opts.launcher == Launcher::Srun => {
            let mut c = Command::new("srun");
            // One task on that node, sharing the allocation with the controller's own step.
            c.args(["--nodes=1", "--ntasks=1", "--overlap", "--quiet", "--kill-on-bad-exit=1"])
                .arg(format!("--nodelist={host}"))
                .arg("--")
                .arg(&opts.remote_fabcheck)
                .arg("agent");
            c
        }
        HostSpec::Ssh { host, .. } if opts.launcher == Launcher::Kubectl => {
            let pod = super::kubectl::find_pod(host, &opts.k8s_selector, TOKEN_VARIABLE).map_err(not_started)?;
            let mut c = Command::new("kubectl");
            c.args(super::kubectl::exec_args(&pod, &opts.remote_fabcheck));
            c
        }
        HostSpec::Ssh { user, host } => {
            let dest = match user {
                Some(u) => format!("{u}@{host}"),
                None => host.clone(),
            };
            let mut c = Command::new("ssh");
            c.args(["-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"])
                .arg("-o")
                .arg(format!("ConnectTimeout={}", opts.connect_timeout.as_secs().max(1)));
            for option in ssh_options {
                c.arg("-o").arg(option);
            }
            c.arg("--").arg(dest).arg(&opts.remote_fabcheck).arg("agent");
            c
        }
        HostSpec::Tcp { .. } => return Err(Loss::new(label, LossKind::Internal("spawn for a tcp endpoint".into()))),
    };
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group: when it is told to go, SIGTERM and then SIGKILL reach whatever it
    // started too (`sys::child::Leaving`); the controller relays a Ctrl-C itself.
    command.process_group(0);
    // The token is for `fabcheck serve` only: never inherited by ssh, srun (which would export
    // it to the node) or a local agent (issue #27 item 9).
    command.env_remove(TOKEN_VARIABLE);
    if let Ok(level) = std::env::var("RUST_LOG") {
        command.env("RUST_LOG", level);
    }
    let mut child = command.spawn().map_err(|e| not_started(e.to_string()))?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Loss::new(label, LossKind::Pipes(None)));
    };
    for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
        if let Err(e) = io::set_nonblocking(fd) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Loss::new(label, LossKind::Pipes(Some(e.to_string()))));
        }
    }
    Ok(Channel::Child { child, stdin: Some(stdin), stdout, stderr: Some(stderr) })
}

/// The addresses of a `tcp://` endpoint, in the resolver's order.
pub fn resolve(host: &str, port: u16, label: &str) -> Result<Vec<SocketAddr>, Loss> {
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().map_err(|e| Loss::new(label, LossKind::Unresolved(Some(e.to_string()))))?.collect();
    if addrs.is_empty() {
        return Err(Loss::new(label, LossKind::Unresolved(None)));
    }
    Ok(addrs)
}

/// A `tcp://` agent that could not be reached.
pub fn unreachable(label: &str, port: u16, detail: &str) -> Loss {
    Loss::new(label, LossKind::Unreachable { port, detail: detail.to_string() })
}

/// A read that would have blocked, or the end of the stream.
pub enum ReadOutcome {
    Data(usize),
    WouldBlock,
    End,
}

impl Channel {
    /// Where replies arrive.
    pub fn read_fd(&self) -> BorrowedFd<'_> {
        match self {
            Channel::Child { stdout, .. } => stdout.as_fd(),
            Channel::Tcp(s) => s.as_fd(),
        }
    }

    /// Where requests go (`None` once the write side is closed).
    pub fn write_fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Channel::Child { stdin, .. } => stdin.as_ref().map(|s| s.as_fd()),
            Channel::Tcp(s) => Some(s.as_fd()),
        }
    }

    /// A child's stderr, while open.
    pub fn stderr_fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Channel::Child { stderr, .. } => stderr.as_ref().map(|s| s.as_fd()),
            Channel::Tcp(_) => None,
        }
    }

    pub fn read(&mut self, buf: &mut [u8]) -> std::io::Result<ReadOutcome> {
        let r = match self {
            Channel::Child { stdout, .. } => stdout.read(buf),
            Channel::Tcp(s) => s.read(buf),
        };
        classify(r)
    }

    pub fn read_stderr(&mut self, buf: &mut [u8]) -> std::io::Result<ReadOutcome> {
        match self {
            Channel::Child { stderr: Some(e), .. } => classify(e.read(buf)),
            _ => Ok(ReadOutcome::End),
        }
    }

    pub fn close_stderr(&mut self) {
        if let Channel::Child { stderr, .. } = self {
            *stderr = None;
        }
    }

    /// Writes what the channel takes now; `Ok(0)` when it would block.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let r = match self {
            Channel::Child { stdin: Some(s), .. } => s.write(bytes),
            Channel::Child { stdin: None, .. } => return Err(std::io::Error::new(ErrorKind::BrokenPipe, "channel closed")),
            Channel::Tcp(s) => s.write(bytes),
        };
        match r {
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(0),
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(0),
            other => other,
        }
    }

    /// Closes the write side: the agent reads end of stream and stops whatever it runs.
    pub fn close_write(&mut self) {
        match self {
            Channel::Child { stdin, .. } => *stdin = None,
            Channel::Tcp(s) => {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
        }
    }

    /// The child, if the agent is one.
    pub fn child(&mut self) -> Option<&mut Child> {
        match self {
            Channel::Child { child, .. } => Some(child),
            Channel::Tcp(_) => None,
        }
    }

    /// Gives up the channel, returning a child that still has to be reaped.
    pub fn into_child(self) -> Option<Child> {
        match self {
            Channel::Child { child, .. } => Some(child),
            Channel::Tcp(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
                None
            }
        }
    }
}

fn classify(r: std::io::Result<usize>) -> std::io::Result<ReadOutcome> {
    match r {
        Ok(0) => Ok(ReadOutcome::End),
        Ok(n) => Ok(ReadOutcome::Data(n)),
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => Ok(ReadOutcome::WouldBlock),
        Err(e) => Err(e),
    }
}

fn valid_remote_path(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('-') && path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
}
