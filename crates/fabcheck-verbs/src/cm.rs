//! librdmacm: connection establishment through the RDMA connection manager (`pair --cm`),
//! the way MPI, NCCL and storage stacks connect. Every wait has a deadline: the event channel
//! is non-blocking and polled with a timeout.

use super::cm_id::{ChannelInner, CmIdInner};
use super::cq::CompletionQueue;
use super::device::{Context, ContextInner, ContextOwner};
use super::error::{from_return_code, last_os_error, VerbsError};
use super::pd::ProtectionDomain;
use super::qp::{Creation, QpConfig, QpMemory, QueuePair};
use crate::loader as dl;
use rdma_sys as sys;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `RDMA_OPTION_ID` / `RDMA_OPTION_ID_TOS` (rdma_cma.h).
const RDMA_OPTION_ID: i32 = 0;
const RDMA_OPTION_ID_TOS: i32 = 0;

/// An event channel: where a set of CM ids report their events.
#[derive(Clone)]
pub struct CmChannel {
    inner: Arc<ChannelInner>,
}

/// What a CM event was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmEvent {
    AddrResolved,
    RouteResolved,
    ConnectRequest,
    Established,
    Disconnected,
    /// Anything else, with its `rdma_event_str` name and status.
    Other(u32, i32),
}

impl CmChannel {
    pub fn new() -> Result<CmChannel, VerbsError> {
        dl::librdmacm_available()?;
        // SAFETY: no arguments; NULL on failure with errno set.
        let ch = unsafe { dl::rdma_create_event_channel() };
        if ch.is_null() {
            return Err(VerbsError::Cm { step: "rdma_create_event_channel", source: last_os_error() });
        }
        // SAFETY: ch is valid; its fd is ours to make non-blocking so waits can time out.
        let fd = unsafe { (*ch).fd };
        // SAFETY: plain fcntl on a valid descriptor.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
        Ok(CmChannel { inner: Arc::new(ChannelInner::new(ch)) })
    }

    /// Waits up to `timeout` for the next event; for a connect request also returns the new id.
    pub fn next_event(&self, timeout: Duration) -> Result<(CmEvent, Option<CmId>), VerbsError> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut event: *mut sys::rdma_cm_event = std::ptr::null_mut();
            let one = self.inner.serialise();
            // SAFETY: the channel is valid and non-blocking; event is an out-pointer. Under the
            // channel's lock: librdmacm acts on the event's id while it hands the event over.
            let rc = unsafe { dl::rdma_get_cm_event(self.inner.ch, &mut event) };
            if rc == 0 {
                // SAFETY: a returned event is valid until acked; we copy what we need first.
                let (kind, status, id) = unsafe { ((*event).event, (*event).status, (*event).id) };
                use sys::rdma_cm_event_type as t;
                let decoded = match kind {
                    t::RDMA_CM_EVENT_ADDR_RESOLVED => CmEvent::AddrResolved,
                    t::RDMA_CM_EVENT_ROUTE_RESOLVED => CmEvent::RouteResolved,
                    t::RDMA_CM_EVENT_CONNECT_REQUEST => CmEvent::ConnectRequest,
                    t::RDMA_CM_EVENT_ESTABLISHED => CmEvent::Established,
                    t::RDMA_CM_EVENT_DISCONNECTED => CmEvent::Disconnected,
                    other => CmEvent::Other(other, status),
                };
                let new_id = (decoded == CmEvent::ConnectRequest).then(|| CmId::wrap(id, self));
                // SAFETY: event came from rdma_get_cm_event and is acked exactly once.
                unsafe { dl::rdma_ack_cm_event(event) };
                return Ok((decoded, new_id));
            }
            let err = last_os_error();
            drop(one);
            if err.raw_os_error() != Some(libc::EAGAIN) {
                return Err(VerbsError::Cm { step: "rdma_get_cm_event", source: err });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(VerbsError::Cm {
                    step: "waiting for a connection manager event",
                    source: std::io::Error::from_raw_os_error(libc::ETIMEDOUT),
                });
            }
            let mut pfd = libc::pollfd {
                // SAFETY: reading the fd field of a valid channel.
                fd: unsafe { (*self.inner.ch).fd },
                events: libc::POLLIN,
                revents: 0,
            };
            let wait_ms = (deadline - now).as_millis().min(100) as libc::c_int;
            // SAFETY: one valid pollfd, bounded timeout.
            unsafe { libc::poll(&mut pfd, 1, wait_ms.max(1)) };
        }
    }

    /// Waits for `want`; any other event is an error naming both.
    pub fn expect(&self, want: CmEvent, timeout: Duration) -> Result<Option<CmId>, VerbsError> {
        let (got, id) = self.next_event(timeout)?;
        if got == want {
            return Ok(id);
        }
        let name = match got {
            CmEvent::Other(kind, status) => {
                // SAFETY: rdma_event_str returns a static NUL-terminated string for any value.
                let text = unsafe { std::ffi::CStr::from_ptr(dl::rdma_event_str(kind)) };
                format!("{} (status {status})", text.to_string_lossy())
            }
            other => format!("{other:?}"),
        };
        Err(VerbsError::CmEvent { expected: format!("{want:?}"), got: name })
    }
}

/// A connection manager id: one endpoint of one connection (or a listener).
///
/// Every verb that changes the id (bind, set_tos, listen, resolve, create_qp, connect,
/// accept) takes `&mut self`: librdmacm does not lock an id against itself, so two threads
/// driving one id through shared references would race on its state. Only reads (`port`,
/// `context`) take `&self`. `tests/ui/cm_id_shared_mutation.rs` pins this. The id is also
/// reached from elsewhere: reading an event on its channel lets librdmacm act on it, and a QP
/// made on it is destroyed through it; so every librdmacm call on an id, its QP's teardown and
/// its channel's event reads hold the channel's lock too (`ChannelInner::serialise`).
pub struct CmId {
    inner: Arc<CmIdInner>,
    channel: CmChannel,
    qp_created: bool,
}

impl CmId {
    fn wrap(id: *mut sys::rdma_cm_id, channel: &CmChannel) -> CmId {
        CmId { inner: Arc::new(CmIdInner { id, channel: channel.inner.clone() }), channel: channel.clone(), qp_created: false }
    }

    fn raw(&self) -> *mut sys::rdma_cm_id {
        self.inner.id
    }

    /// A new RC (`RDMA_PS_TCP`) id on `channel`.
    pub fn new(channel: &CmChannel) -> Result<CmId, VerbsError> {
        let mut id: *mut sys::rdma_cm_id = std::ptr::null_mut();
        let rc = {
            let _one = channel.inner.serialise();
            // SAFETY: valid channel; id is an out-pointer.
            unsafe { dl::rdma_create_id(channel.inner.ch, &mut id, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step: "rdma_create_id", source: from_return_code(rc) });
        }
        Ok(CmId::wrap(id, channel))
    }

    /// Binds to a local address (port 0: any); afterwards the id knows its device.
    pub fn bind(&mut self, addr: SocketAddr) -> Result<(), VerbsError> {
        let (mut storage, _) = sockaddr(&addr);
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: valid id; storage holds a sockaddr of the right family.
            unsafe { dl::rdma_bind_addr(self.raw(), &mut storage as *mut _ as *mut libc::sockaddr) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step: "rdma_bind_addr", source: from_return_code(rc) });
        }
        Ok(())
    }

    /// The IP type of service of the connection (rdma_cm maps it to the RoCE traffic class).
    pub fn set_tos(&mut self, tos: u8) -> Result<(), VerbsError> {
        let mut value = tos;
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: valid id; RDMA_OPTION_ID_TOS takes a u8, passed by pointer with its size.
            unsafe { dl::rdma_set_option(self.raw(), RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, (&mut value as *mut u8).cast(), std::mem::size_of::<u8>()) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step: "rdma_set_option(TOS)", source: from_return_code(rc) });
        }
        Ok(())
    }

    pub fn listen(&mut self, backlog: i32) -> Result<(), VerbsError> {
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: valid, bound id.
            unsafe { dl::rdma_listen(self.raw(), backlog) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step: "rdma_listen", source: from_return_code(rc) });
        }
        Ok(())
    }

    /// The local port the id is bound to.
    pub fn port(&self) -> u16 {
        let _one = self.inner.serialise();
        // SAFETY: valid id.
        u16::from_be(unsafe { dl::rdma_get_src_port(self.raw()) })
    }

    /// The device context librdmacm opened for this id (set once bound or resolved). The
    /// context keeps the id alive: librdmacm closes the device when its last id goes.
    pub fn context(&self) -> Option<Context> {
        // Events on the channel fill `verbs` in (address resolution): read under its lock.
        let _one = self.inner.serialise();
        // SAFETY: valid id; verbs is NULL until bound to a device.
        let ctx = unsafe { (*self.raw()).verbs };
        if ctx.is_null() {
            return None;
        }
        // SAFETY: reading the name of a valid context's device.
        let name = unsafe { std::ffi::CStr::from_ptr(dl::ibv_get_device_name((*ctx).device)) }.to_string_lossy().into_owned();
        Some(Context { inner: Arc::new(ContextInner { ctx, name, owner: ContextOwner::CmId(self.inner.clone()) }) })
    }

    pub fn resolve(&mut self, dst: SocketAddr, timeout: Duration) -> Result<(), VerbsError> {
        let (mut storage, _) = sockaddr(&dst);
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: valid id; storage holds the destination.
            unsafe { dl::rdma_resolve_addr(self.raw(), std::ptr::null_mut(), &mut storage as *mut _ as *mut libc::sockaddr, ms) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step: "rdma_resolve_addr", source: from_return_code(rc) });
        }
        self.channel.expect(CmEvent::AddrResolved, timeout + Duration::from_secs(1))?;
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: valid id with a resolved address.
            unsafe { dl::rdma_resolve_route(self.raw(), ms) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step: "rdma_resolve_route", source: from_return_code(rc) });
        }
        self.channel.expect(CmEvent::RouteResolved, timeout + Duration::from_secs(1))?;
        Ok(())
    }

    /// Creates the RC QP of this connection; librdmacm moves it through its states.
    pub fn create_qp(
        &mut self,
        pd: &ProtectionDomain,
        send_cq: &CompletionQueue,
        recv_cq: &CompletionQueue,
        config: QpConfig,
    ) -> Result<QueuePair, VerbsError> {
        if self.qp_created {
            return Err(VerbsError::Cm {
                step: "rdma_create_qp (this id already has a QP)",
                source: std::io::Error::from_raw_os_error(libc::EEXIST),
            });
        }
        let ctx = &pd.inner.ctx;
        let scatters_to_cqe =
            cm_scatters_to_cqe(config.memory, std::env::var("MLX5_SCATTER_TO_CQE").ok().as_deref(), || crate::mlx5::is_mlx5(ctx.ctx, &ctx.name))
                .map_err(|why| VerbsError::ScatterToCqe { device: ctx.name.clone(), why })?;
        let mut init = super::qp::rc_init_attr(send_cq, recv_cq, config);
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: id is bound to pd's device (librdmacm checks), CQs are live.
            unsafe { dl::rdma_create_qp(self.raw(), pd.inner.pd, &mut init) }
        };
        if rc != 0 {
            return Err(VerbsError::CreateQp {
                send_wr: config.max_send_wr,
                recv_wr: config.max_recv_wr,
                inline: config.max_inline_data,
                source: from_return_code(rc),
            });
        }
        self.qp_created = true;
        // SAFETY: rdma_create_qp set id->qp.
        let qp = unsafe { (*self.raw()).qp };
        Ok(QueuePair::from_cm(qp, self.inner.clone(), init.cap.max_inline_data, scatters_to_cqe, pd, send_cq, recv_cq))
    }

    fn conn_param(rd_atomic: u8) -> sys::rdma_conn_param {
        // SAFETY: plain old data.
        let mut p: sys::rdma_conn_param = unsafe { std::mem::zeroed() };
        p.responder_resources = rd_atomic;
        p.initiator_depth = rd_atomic;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        p
    }

    /// Active side: connect and wait until established.
    pub fn connect(&mut self, rd_atomic: u8, timeout: Duration) -> Result<(), VerbsError> {
        self.establish("rdma_connect", dl::rdma_connect, rd_atomic, timeout)
    }

    /// Passive side: accept a connect request and wait until established.
    pub fn accept(&mut self, rd_atomic: u8, timeout: Duration) -> Result<(), VerbsError> {
        self.establish("rdma_accept", dl::rdma_accept, rd_atomic, timeout)
    }

    fn establish(
        &mut self,
        step: &'static str,
        verb: unsafe fn(*mut sys::rdma_cm_id, *mut sys::rdma_conn_param) -> libc::c_int,
        rd_atomic: u8,
        timeout: Duration,
    ) -> Result<(), VerbsError> {
        let mut p = Self::conn_param(rd_atomic);
        let rc = {
            let _one = self.inner.serialise();
            // SAFETY: valid id with a QP (and a route, or a pending request); p is initialised.
            unsafe { verb(self.raw(), &mut p) }
        };
        if rc != 0 {
            return Err(VerbsError::Cm { step, source: from_return_code(rc) });
        }
        self.channel.expect(CmEvent::Established, timeout)?;
        Ok(())
    }
}

/// Whether a QP librdmacm makes may scatter received data into its CQEs, or why it may not be
/// made for `memory`. `rdma_create_qp` calls `ibv_create_qp`, which cannot pass mlx5's
/// per-QP flag (see `mlx5.rs`); only the environment knob libmlx5 reads at each QP
/// creation (`MLX5_SCATTER_TO_CQE=0`, rdma-core `providers/mlx5/verbs.c`) turns it off there,
/// as perftest sets it for its own process. fabcheck reads the variable, never sets it (setenv
/// in a threaded agent is a data race): the agent's environment must carry it. Pure but for
/// the provider question.
fn cm_scatters_to_cqe(memory: QpMemory, env: Option<&str>, is_mlx5: impl FnOnce() -> Result<bool, VerbsError>) -> Result<bool, String> {
    match super::qp::creation(memory, is_mlx5).map_err(|e| e.to_string())? {
        Creation::Verbs { scatters_to_cqe } => Ok(scatters_to_cqe),
        Creation::Mlx5dv(_) if env == Some("0") => Ok(false),
        Creation::Mlx5dv(_) => Err("rdma_cm (--cm) makes its queue pairs with ibv_create_qp, which leaves mlx5's scatter-to-CQE on, \
                                    and libmlx5 would copy small receives into GPU memory with the CPU; start the agents with \
                                    MLX5_SCATTER_TO_CQE=0 in their environment (libmlx5 then turns it off for every queue pair of \
                                    the agent), or drop --cm"
            .into()),
    }
}

/// `addr` as the C socket address rdma_cm takes.
fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdma_cm_on_gpu_memory_of_an_mlx5_needs_the_environment_knob() {
        let mlx5 = || Ok(true);
        let err = cm_scatters_to_cqe(QpMemory::Device, None, mlx5).unwrap_err();
        assert!(err.contains("MLX5_SCATTER_TO_CQE=0") && err.contains("drop --cm"), "{err}");
        assert_eq!(cm_scatters_to_cqe(QpMemory::Device, Some("1"), mlx5).map_err(|_| ()), Err(()), "only \"0\" turns it off (verbs.c)");
        assert_eq!(cm_scatters_to_cqe(QpMemory::Device, Some("0"), mlx5), Ok(false));
        assert_eq!(cm_scatters_to_cqe(QpMemory::Device, None, || Ok(false)), Ok(false), "rxe: nothing to turn off");
        assert_eq!(cm_scatters_to_cqe(QpMemory::Host, None, mlx5), Ok(true));
    }
}
