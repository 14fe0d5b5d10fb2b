//! Non-blocking descriptors for the controller's one-thread reactor: `poll(2)` over many
//! agent channels, `O_NONBLOCK` on pipes, a TCP connect that does not block, interface
//! addresses, and the open-files limit a large mesh needs.

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
use socket2::{Domain, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

/// What a descriptor is waited on for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    Read,
    Write,
}

/// What `wait` found for one descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Input, end of stream or an error is waiting (a read will not block).
    pub readable: bool,
    /// Room to write, or an error a write will report.
    pub writable: bool,
}

/// Waits until one of `fds` is ready or `timeout` passes, and writes each one's readiness to
/// `out` (same order). A signal ends the wait early with nothing ready, so the caller sees
/// Ctrl-C at once. The descriptors are borrowed only for the wait.
pub fn wait(fds: &[(BorrowedFd<'_>, Interest)], timeout: Duration, out: &mut Vec<Readiness>) -> io::Result<usize> {
    out.clear();
    let mut set: Vec<PollFd<'_>> = fds
        .iter()
        .map(|(fd, interest)| {
            let flags = match interest {
                Interest::Read => PollFlags::POLLIN,
                Interest::Write => PollFlags::POLLOUT,
            };
            PollFd::new(*fd, flags)
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
    let ready = match nix::poll::poll(&mut set, timeout) {
        Ok(n) => n as usize,
        Err(nix::errno::Errno::EINTR) => 0,
        Err(e) => return Err(e.into()),
    };
    let trouble = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
    out.extend(set.iter().map(|p| {
        let revents = if ready == 0 { PollFlags::empty() } else { p.revents().unwrap_or(PollFlags::empty()) };
        Readiness { readable: revents.intersects(PollFlags::POLLIN | trouble), writable: revents.intersects(PollFlags::POLLOUT | trouble) }
    }));
    Ok(ready)
}

/// Makes reads and writes on `fd` return `WouldBlock` instead of waiting.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL)?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(flags))?;
    Ok(())
}

/// Starts a TCP connection without waiting for it: the socket is non-blocking and becomes
/// writable when the handshake ends; then [`connect_finished`] says how it went.
pub fn connect_start(addr: &SocketAddr) -> io::Result<TcpStream> {
    // socket2 opens it close-on-exec, so agents started later do not inherit it.
    let socket = Socket::new(Domain::for_address(*addr), Type::STREAM, None)?;
    socket.set_nonblocking(true)?;
    if let Err(e) = socket.connect(&(*addr).into()) {
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(TcpStream::from(socket))
}

/// After the socket turned writable: `Ok` if connected, else why not.
pub fn connect_finished(stream: &TcpStream) -> io::Result<()> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    stream.peer_addr().map(|_| ())
}

/// The IP addresses of network interface `name` (getifaddrs(3)), in the kernel's order; empty
/// when it has none or does not exist.
pub fn interface_addresses(name: &str) -> Vec<IpAddr> {
    let Ok(list) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    list.filter(|entry| entry.interface_name == name)
        .filter_map(|entry| {
            let addr = entry.address?;
            if let Some(v4) = addr.as_sockaddr_in() {
                Some(IpAddr::V4(v4.ip()))
            } else {
                addr.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
            }
        })
        .collect()
}

/// Raises the soft open-files limit towards `want` (at most the hard limit) and returns the
/// limit now in force: a mesh holds a few descriptors per agent.
pub fn raise_open_files(want: u64) -> u64 {
    let Ok((mut soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 1024;
    };
    if soft != RLIM_INFINITY && soft < want {
        let raised = want.min(hard);
        if setrlimit(Resource::RLIMIT_NOFILE, raised, hard).is_ok() {
            soft = raised;
        }
    }
    if soft == RLIM_INFINITY {
        u64::MAX
    } else {
        soft
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::fd::AsFd;

    fn wait_writable(stream: &TcpStream) -> Readiness {
        let mut out = Vec::new();
        wait(&[(stream.as_fd(), Interest::Write)], Duration::from_secs(5), &mut out).unwrap();
        out[0]
    }

    #[test]
    fn connect_without_blocking_then_poll() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stream = connect_start(&addr).unwrap();
        assert!(wait_writable(&stream).writable);
        connect_finished(&stream).unwrap();
    }

    #[test]
    fn refused_connect_is_reported() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        // The listener is gone: nothing listens there now.
        let stream = connect_start(&port).unwrap();
        wait_writable(&stream);
        assert!(connect_finished(&stream).is_err());
    }

    #[test]
    fn nothing_ready_reads_as_not_ready() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut out = Vec::new();
        let n = wait(&[(listener.as_fd(), Interest::Read)], Duration::from_millis(1), &mut out).unwrap();
        assert_eq!(n, 0);
        assert_eq!(out, vec![Readiness::default()]);
    }

    #[test]
    fn loopback_has_its_address() {
        assert!(interface_addresses("lo").contains(&IpAddr::from([127, 0, 0, 1])));
        assert!(interface_addresses("no-such-interface").is_empty());
    }

    #[test]
    fn open_files_limit_is_reported() {
        assert!(raise_open_files(64) >= 64);
    }
}
