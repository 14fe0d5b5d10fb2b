//! The safe verbs layer: the only code in fabcheck that calls libibverbs or holds `unsafe`;
//! `mad` is the same for the MAD libraries (libibumad, libibmad, libibnetdisc), which it
//! opens at run time.
//!
//! Each object keeps what it depends on alive (`Arc`), so dropping releases in the right
//! order whatever order the caller drops in; a failed teardown is logged, never a panic.
//!
//! # Guarantees the types make
//!
//! Everything the adapter may touch later is held by ownership, so no order of drops can
//! leave it pointing at freed memory. A work-request list holds its memory region, and a
//! queue pair holds its CQs, its PD and (through them) its context, so each may outlive the
//! handles it was built from:
//!
//! ```no_run
//! use fabcheck_verbs::*;
//! let ctx = Context::open("rxe0")?;
//! let pd = ProtectionDomain::new(&ctx)?;
//! let cq = CompletionQueue::new(&ctx, 16)?;
//! let mut qp = QueuePair::new_rc(&pd, &cq, &cq, QpConfig { max_send_wr: 4, max_recv_wr: 4, max_inline_data: 64, memory: QpMemory::Host })?;
//! let mr = MemoryRegion::new(&pd, 4096, Access::LOCAL_WRITE)?;
//! let mut list = SendList::new(1, SendOp::Send, &mr, 0, 64, None, true)?;
//! drop(mr); // the list keeps the registration and its buffer alive
//! drop((ctx, pd, cq)); // the QP keeps its CQ, PD and device open
//! list.post(&mut qp, 1)?;
//! # Ok::<(), VerbsError>(())
//! ```
//!
//! Every local address is checked against its region when a list is built or changed:
//!
//! ```no_run
//! # use fabcheck_verbs::*;
//! # let ctx = Context::open("rxe0")?;
//! # let pd = ProtectionDomain::new(&ctx)?;
//! let mr = MemoryRegion::new(&pd, 4096, Access::LOCAL_WRITE)?;
//! assert!(SendList::new(1, SendOp::Send, &mr, 4000, 200, None, false).is_err());
//! let mut list = SendList::new(1, SendOp::Send, &mr, 0, 200, None, false)?;
//! assert!(list.set_local_offset(0, 3900).is_err());
//! # Ok::<(), VerbsError>(())
//! ```
//!
//! What does not compile keeps it so. Each of these is a test in `tests/ui/`, with the
//! compiler's error checked in beside it (`.stderr`), run by
//! `cargo test -p fabcheck-verbs --test compile_fail`:
//!
//! - no list can be made to point anywhere but into its region: its fields are private and
//!   no method takes a raw address (`list_no_raw_address.rs`);
//! - a region's byte accessors are volatile, not atomic, so a region is `!Sync`
//!   (`region_not_sync.rs`);
//! - posting sends or receives needs the QP exclusively, `&mut QueuePair`
//!   (`post_needs_mut_qp.rs`, `recv_post_needs_mut_qp.rs`);
//! - a QP is destroyed once: it cannot be cloned, and only `QueuePair::new_rc` or
//!   `CmId::create_qp` make one, tied to live CQs and PD (`qp_not_clone.rs`);
//! - the verbs that change an rdma_cm id take `&mut CmId`, so two threads cannot drive one id
//!   through shared references (`cm_id_shared_mutation.rs`);
//! - one poller per CQ: `poll` takes `&mut CompletionQueue` and a CQ is not `Clone`
//!   (`cq_shared_poll.rs`).
//!
//! A context borrowed from an rdma_cm id holds the id, and a QP made on an id holds it too, so
//! neither can outlive the id: the id is destroyed after the last of them, whatever the order.
//!
//! ```no_run
//! # use fabcheck_verbs::*;
//! let channel = CmChannel::new()?;
//! let mut id = CmId::new(&channel)?;
//! id.bind("198.18.0.1:0".parse().unwrap())?;
//! let ctx = id.context().expect("bound to a device");
//! let pd = ProtectionDomain::new(&ctx)?;
//! let cq = CompletionQueue::new(&ctx, 16)?;
//! let qp = id.create_qp(&pd, &cq, &cq, QpConfig { max_send_wr: 4, max_recv_wr: 4, max_inline_data: 0, memory: QpMemory::Host })?;
//! drop(id); // still alive: the QP and the context hold it
//! drop(channel);
//! drop(qp);
//! # Ok::<(), VerbsError>(())
//! ```
#![deny(clippy::undocumented_unsafe_blocks)]

mod cm;
mod cm_id;
mod cq;
mod cuda;
mod device;
mod error;
mod loader;
pub mod mad;
mod mlx5;
mod mr;
mod pages;
mod pd;
mod qp;
pub mod tsc;
mod wr;
mod wr_id;

pub use cm::{CmChannel, CmEvent, CmId};
pub use cq::{status, status_text, CompletionChannel, CompletionQueue, WorkCompletion};
pub use cuda::{
    cuda_available, cuda_devices, dmabuf_range, CudaDevice, DeviceBuffer, DmabufExport, DmabufRange, Gpu, CUDA_INSTALL_HINT, LIBCUDA,
    LIBRARY_ENV as CUDA_LIBRARY_ENV,
};
pub use device::{device_names, Context, DeviceAttributes, GidEntry, PortAttributes};
pub use error::VerbsError;
pub use loader::{libibverbs_available, librdmacm_available, INSTALL_HINT, LIBIBVERBS, LIBRDMACM};
pub use mlx5::LIBMLX5;
pub use mr::{registration_plan, Access, MemoryRegion, RegPath, RegPlan, RemoteBuffer};
pub use pd::ProtectionDomain;
pub use qp::chunk::ChunkWriter;
pub use qp::{PathSpec, QpConfig, QpMemory, QueuePair, RtsParams};
pub use wr::{RecvList, SendList, SendOp};
pub use wr_id::WrId;
