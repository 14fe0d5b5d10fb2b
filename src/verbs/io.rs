//! Non-blocking descriptors for the controller's one-thread reactor: `poll(2)` over many
//! agent channels, `O_NONBLOCK` on pipes, a TCP connect that does not block, and the
//! open-files limit a large mesh needs.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A reusable set of descriptors to wait on.
#[derive(Default)]
pub struct PollSet {
    fds: Vec<libc::pollfd>,
}

impl PollSet {
    pub fn clear(&mut self) {
        self.fds.clear();
    }

    /// Adds `fd`, waiting for input and/or room to write; returns its slot.
    pub fn add(&mut self, fd: RawFd, read: bool, write: bool) -> usize {
        let mut events = 0;
        if read {
            events |= libc::POLLIN;
        }
        if write {
            events |= libc::POLLOUT;
        }
        self.fds.push(libc::pollfd { fd, events, revents: 0 });
        self.fds.len() - 1
    }

    /// Waits until a descriptor is ready or `timeout` passes; a signal ends the wait early
    /// (returns 0), so the caller sees Ctrl-C at once.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<usize> {
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid, exclusively borrowed array of `len` pollfd structs.
        let rc = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(e) };
        }
        Ok(rc as usize)
    }

    /// Input, end of stream or an error is waiting at `slot` (a read will not block).
    pub fn readable(&self, slot: usize) -> bool {
        self.fds[slot].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
    }

    /// Room to write, or an error a write will report, at `slot`.
    pub fn writable(&self, slot: usize) -> bool {
        self.fds[slot].revents & (libc::POLLOUT | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
    }
}

/// Makes reads and writes on `fd` return `WouldBlock` instead of waiting.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL on a descriptor the caller owns; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL with an integer flag set; no memory is passed.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Starts a TCP connection without waiting for it: the socket is non-blocking and becomes
/// writable when the handshake ends; then [`connect_finished`] says how it went.
pub fn connect_start(addr: &SocketAddr) -> io::Result<TcpStream> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes for this family.
    let rc = unsafe { libc::connect(owned.as_raw_fd(), std::ptr::addr_of!(storage).cast(), len) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(TcpStream::from(owned))
}

/// After the socket turned writable: `Ok` if connected, else why not.
pub fn connect_finished(stream: &TcpStream) -> io::Result<()> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    stream.peer_addr().map(|_| ())
}

/// `addr` as the C socket address (and its length) that connect(2) and rdma_cm take.
pub(super) fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast::<libc::sockaddr_in>(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast::<libc::sockaddr_in6>(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// The IP addresses of network interface `name` (getifaddrs(3)), in the kernel's order; empty
/// when it has none or does not exist.
pub fn interface_addresses(name: &str) -> Vec<std::net::IpAddr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cursor = head;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a node of the list getifaddrs returned, not yet freed.
        let entry = unsafe { &*cursor };
        cursor = entry.ifa_next;
        if entry.ifa_addr.is_null() || entry.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let ifname = unsafe { std::ffi::CStr::from_ptr(entry.ifa_name) };
        if ifname.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: ifa_addr points at a sockaddr whose family says which struct it is.
        let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
        if family == libc::AF_INET {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in>() };
            out.push(std::net::IpAddr::from(sin.sin_addr.s_addr.to_ne_bytes()));
        } else if family == libc::AF_INET6 {
            // SAFETY: an AF_INET6 address is a sockaddr_in6.
            let sin6 = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in6>() };
            out.push(std::net::IpAddr::from(sin6.sin6_addr.s6_addr));
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// Raises the soft open-files limit towards `want` (at most the hard limit) and returns the
/// limit now in force: a mesh holds a few descriptors per agent.
pub fn raise_open_files(want: u64) -> u64 {
    // SAFETY: plain old data out-parameter.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: valid resource id and out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    if lim.rlim_cur != libc::RLIM_INFINITY && (lim.rlim_cur as u64) < want {
        let raised = libc::rlimit { rlim_cur: (want as libc::rlim_t).min(lim.rlim_max), rlim_max: lim.rlim_max };
        // SAFETY: valid resource id and a limit within the hard maximum.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = raised.rlim_cur;
        }
    }
    if lim.rlim_cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        lim.rlim_cur as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn connect_without_blocking_then_poll() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stream = connect_start(&addr).unwrap();
        let mut set = PollSet::default();
        set.add(stream.as_raw_fd(), false, true);
        assert_eq!(set.wait(Duration::from_secs(5)).unwrap(), 1);
        assert!(set.writable(0));
        connect_finished(&stream).unwrap();
    }

    #[test]
    fn refused_connect_is_reported() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        // The listener is gone: nothing listens there now.
        let stream = connect_start(&port).unwrap();
        let mut set = PollSet::default();
        set.add(stream.as_raw_fd(), false, true);
        set.wait(Duration::from_secs(5)).unwrap();
        assert!(connect_finished(&stream).is_err());
    }

    #[test]
    fn loopback_has_its_address() {
        assert!(interface_addresses("lo").contains(&std::net::IpAddr::from([127, 0, 0, 1])));
        assert!(interface_addresses("no-such-interface").is_empty());
    }

    #[test]
    fn open_files_limit_is_reported() {
        assert!(raise_open_files(64) >= 64);
    }
}
