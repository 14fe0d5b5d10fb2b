//! Errors of the verbs layer: which verb failed, on what, and the errno it gave.

use std::io;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerbsError {
    #[error("rdma-core is not installed: {soname} cannot be loaded ({detail})")]
    Library { soname: &'static str, detail: String },
    #[error("ibv_get_device_list failed: {source}")]
    DeviceList { source: io::Error },
    #[error("no RDMA device named '{name}' (present: {present})")]
    NoSuchDevice { name: String, present: String },
    #[error("ibv_open_device({device}) failed: {source}")]
    OpenDevice { device: String, source: io::Error },
    #[error("ibv_query_device({device}) failed: {source}")]
    QueryDevice { device: String, source: io::Error },
    #[error("ibv_query_port({device}, port {port}) failed: {source}")]
    QueryPort { device: String, port: u8, source: io::Error },
    #[error("ibv_query_gid({device}, port {port}, index {index}) failed: {source}")]
    QueryGid { device: String, port: u8, index: u32, source: io::Error },
    #[error("ibv_alloc_pd({device}) failed: {source}")]
    AllocPd { device: String, source: io::Error },
    #[error("ibv_reg_mr({len} bytes) failed: {source}")]
    RegMr { len: usize, source: io::Error },
    #[error("a work request of {len} bytes at offset {offset} does not fit a {region}-byte memory region")]
    OutOfBounds { offset: usize, len: u32, region: usize },
    #[error("ibv_create_comp_channel failed: {source}")]
    CreateCompChannel { source: std::io::Error },
    #[error("waiting for a completion event failed: {source}")]
    CqEvent { source: std::io::Error },
    #[error("an atomic work request moves one 8-byte word at an 8-byte aligned address, not {len} bytes at {addr:#x}")]
    AtomicOperand { addr: u64, len: u32 },
    #[error("a work-request list needs at least one work request")]
    EmptyList,
    #[error("cannot allocate a {len}-byte buffer")]
    Alloc { len: usize },
    #[error("ibv_create_cq({cqe} entries) failed: {source}")]
    CreateCq { cqe: u32, source: io::Error },
    #[error("ibv_create_qp(send {send_wr}, recv {recv_wr}, inline {inline}) failed: {source}")]
    CreateQp { send_wr: u32, recv_wr: u32, inline: u32, source: io::Error },
    #[error("mlx5dv_create_qp({device}, scatter-to-CQE off for GPU memory) failed: {source}")]
    Mlx5CreateQp { device: String, source: io::Error },
    #[error("{device}: a queue pair on GPU memory must not scatter received data into its completions: {why}")]
    ScatterToCqe { device: String, why: String },
    #[error("ibv_modify_qp to {state} failed: {source}")]
    ModifyQp { state: &'static str, source: io::Error },
    #[error("ibv_post_send failed: {source}")]
    PostSend { source: io::Error },
    #[error("ibv_post_recv failed: {source}")]
    PostRecv { source: io::Error },
    #[error("ibv_poll_cq failed (returned {code})")]
    PollCq { code: i32 },
    #[error("{step} failed: {source}")]
    Cm { step: &'static str, source: io::Error },
    #[error("connection manager: expected {expected}, got {got}")]
    CmEvent { expected: String, got: String },
    #[error("the CUDA driver library {library} cannot be loaded ({detail})")]
    CudaLibrary { library: String, detail: String },
    #[error("{call} failed: {name} ({code})")]
    Cuda { call: &'static str, code: i32, name: String },
    #[error("ibv_reg_dmabuf_mr({len} bytes of GPU memory) failed: {source}")]
    RegDmabufMr { len: usize, source: io::Error },
    #[error("work request {wr_id} completed with {status_text} (status {status}, vendor error {vendor_err:#x})")]
    Completion { wr_id: u64, status: u32, status_text: String, vendor_err: u32 },
}

impl VerbsError {
    /// The errno behind the failure, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            VerbsError::DeviceList { source }
            | VerbsError::OpenDevice { source, .. }
            | VerbsError::QueryDevice { source, .. }
            | VerbsError::QueryPort { source, .. }
            | VerbsError::QueryGid { source, .. }
            | VerbsError::AllocPd { source, .. }
            | VerbsError::RegMr { source, .. }
            | VerbsError::RegDmabufMr { source, .. }
            | VerbsError::CreateCq { source, .. }
            | VerbsError::CreateQp { source, .. }
            | VerbsError::Mlx5CreateQp { source, .. }
            | VerbsError::ModifyQp { source, .. }
            | VerbsError::PostSend { source }
            | VerbsError::PostRecv { source }
            | VerbsError::Cm { source, .. }
            | VerbsError::CreateCompChannel { source }
            | VerbsError::CqEvent { source } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// The error of the last failed libc/verbs call (verbs return NULL and set errno).
pub(crate) fn last_os_error() -> io::Error {
    io::Error::last_os_error()
}

/// Verbs that return a positive errno instead of setting `errno`.
pub(crate) fn from_return_code(rc: i32) -> io::Error {
    if rc > 0 {
        io::Error::from_raw_os_error(rc)
    } else if rc < 0 {
        // Some providers return -errno; others -1 with errno set.
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(0) | None => io::Error::from_raw_os_error(-rc),
            _ => err,
        }
    } else {
        io::Error::from_raw_os_error(libc::EIO)
    }
}
