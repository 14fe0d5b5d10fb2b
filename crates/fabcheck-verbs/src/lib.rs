//! The safe verbs layer: the only code in fabcheck that calls libibverbs or holds `unsafe`;
//! `mad` is the same for the MAD libraries (libibumad, libibmad, libibnetdisc), which it
//! opens at run time.
//!
//! Each object keeps what it depends on alive (`Arc`), so dropping releases in the right
//! order whatever order the caller drops in; a failed teardown is logged, never a panic.
#![deny(clippy::undocumented_unsafe_blocks)]

mod cm;
mod cq;
mod device;
mod error;
pub mod mad;
mod mr;
mod pd;
mod qp;

pub use cm::{CmChannel, CmEvent, CmId};
pub use cq::{status, status_text, CompletionQueue, WorkCompletion};
pub use device::{device_names, Context, DeviceAttributes, GidEntry, PortAttributes};
pub use error::VerbsError;
pub use mr::{Access, MemoryRegion, RemoteBuffer};
pub use pd::ProtectionDomain;
pub use qp::{PathSpec, QpConfig, QueuePair, RecvList, SendList, SendOp};
