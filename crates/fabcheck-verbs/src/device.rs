//! Device list, device context and the queries that build the inventory.

use super::error::{from_return_code, last_os_error, VerbsError};
use crate::loader as dl;
use rdma_sys as sys;
use std::ffi::CStr;
use std::sync::Arc;

/// What `ibv_query_device` says about an adapter, reduced to what fabcheck uses.
#[derive(Debug, Clone)]
pub struct DeviceAttributes {
    pub fw_ver: String,
    /// Big-endian GUIDs converted to host order of their bytes (print with `format_guid`).
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub phys_port_cnt: u8,
    pub max_qp_wr: u32,
    pub max_sge: u32,
    pub max_cqe: u32,
    pub max_mr_size: u64,
    pub max_qp_rd_atom: u32,
    pub max_qp_init_rd_atom: u32,
}

/// Raw port attributes: decoding into names happens in `port`, outside this layer.
#[derive(Debug, Clone)]
pub struct PortAttributes {
    pub state: u32,
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub gid_tbl_len: u32,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub active_width: u8,
    pub active_speed: u8,
    /// Zero when the installed libibverbs predates the field.
    pub active_speed_ex: u32,
    /// `IBV_PORT_*_SUP` bits of `port_cap_flags2` (2X width, HDR/NDR/XDR speeds supported).
    pub port_cap_flags2: u16,
    /// Whether the provider's extended `query_port` answered (it fills `active_speed_ex`),
    /// rather than the compat entry point.
    pub extended_query: bool,
    pub phys_state: u8,
    pub link_layer: u8,
    pub max_msg_sz: u32,
}

/// One valid entry of a port's GID table.
#[derive(Debug, Clone)]
pub struct GidEntry {
    pub index: u32,
    pub gid: [u8; 16],
    /// `IBV_GID_TYPE_*`: 0 IB, 1 RoCE v1, 2 RoCE v2; `None` where the library does not say
    /// (the legacy `ibv_query_gid` path).
    pub gid_type: Option<u32>,
    /// Name of the netdev the GID belongs to (RoCE), resolved from its ifindex.
    pub netdev: Option<String>,
}

/// Names of the RDMA devices libibverbs can open, in its order.
pub fn device_names() -> Result<Vec<String>, VerbsError> {
    let list = DeviceList::get()?;
    Ok(list.iter().map(|(name, _)| name).collect())
}

/// The C device list; freed on drop.
struct DeviceList {
    ptr: *mut *mut sys::ibv_device,
    len: usize,
}

impl DeviceList {
    fn get() -> Result<Self, VerbsError> {
        dl::libibverbs_available()?;
        let mut count: libc::c_int = 0;
        // SAFETY: ibv_get_device_list writes the count and returns a NULL-terminated array or NULL.
        let ptr = unsafe { dl::ibv_get_device_list(&mut count) };
        if ptr.is_null() {
            let source = last_os_error();
            // ENOSYS: no kernel support at all; report it as an empty list with the cause intact.
            return Err(VerbsError::DeviceList { source });
        }
        Ok(DeviceList { ptr, len: count.max(0) as usize })
    }

    fn iter(&self) -> impl Iterator<Item = (String, *mut sys::ibv_device)> + '_ {
        (0..self.len).map(move |i| {
            // SAFETY: i < len, the array holds len valid device pointers while the list lives.
            let dev = unsafe { *self.ptr.add(i) };
            // SAFETY: dev is a valid device; the name is a NUL-terminated string it owns.
            let name = unsafe { CStr::from_ptr(dl::ibv_get_device_name(dev)) }.to_string_lossy().into_owned();
            (name, dev)
        })
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: ptr came from ibv_get_device_list and is freed exactly once.
        unsafe { dl::ibv_free_device_list(self.ptr) };
    }
}

/// Who closes a context.
pub(crate) enum ContextOwner {
    /// Opened with `ibv_open_device`: closed when the last user goes.
    Owned,
    /// Opened by librdmacm for an id: it stays open while the id lives, so the context holds
    /// the id (librdmacm closes the device itself).
    CmId(#[allow(dead_code)] Arc<crate::cm_id::CmIdInner>),
}

pub(crate) struct ContextInner {
    pub(crate) ctx: *mut sys::ibv_context,
    pub(crate) name: String,
    pub(crate) owner: ContextOwner,
}

// SAFETY: an ibv_context is thread-safe per libibverbs' documented threading model.
unsafe impl Send for ContextInner {}
// SAFETY: as above; all verbs on a context may be called from several threads.
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        if !matches!(self.owner, ContextOwner::Owned) {
            return;
        }
        // SAFETY: ctx came from ibv_open_device; every child object holds an Arc to us, so none is alive.
        let rc = unsafe { dl::ibv_close_device(self.ctx) };
        if rc != 0 {
            tracing::warn!(device = %self.name, rc, "ibv_close_device failed");
        }
    }
}

/// An open device. Cheap to clone; closed when the last user (PD, CQ, QP...) is gone.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("name", &self.inner.name).finish()
    }
}

impl Context {
    /// Opens the device called `name`.
    pub fn open(name: &str) -> Result<Context, VerbsError> {
        let list = DeviceList::get()?;
        let mut present = Vec::new();
        for (dev_name, dev) in list.iter() {
            if dev_name == name {
                // SAFETY: dev is valid while `list` lives; the context outlives the list by design.
                let ctx = unsafe { dl::ibv_open_device(dev) };
                if ctx.is_null() {
                    return Err(VerbsError::OpenDevice { device: name.to_string(), source: last_os_error() });
                }
                return Ok(Context { inner: Arc::new(ContextInner { ctx, name: name.to_string(), owner: ContextOwner::Owned }) });
            }
            present.push(dev_name);
        }
        Err(VerbsError::NoSuchDevice { name: name.to_string(), present: if present.is_empty() { "none".into() } else { present.join(", ") } })
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn query_device(&self) -> Result<DeviceAttributes, VerbsError> {
        // SAFETY: ibv_device_attr is plain old data; all-zero is a valid value.
        let mut attr: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is open; attr is a valid out-pointer.
        let rc = unsafe { dl::ibv_query_device(self.inner.ctx, &mut attr) };
        if rc != 0 {
            return Err(VerbsError::QueryDevice { device: self.inner.name.clone(), source: from_return_code(rc) });
        }
        // SAFETY: fw_ver is a NUL-terminated C string inside the struct (64 bytes, terminated by the library).
        let fw_ver = unsafe { CStr::from_ptr(attr.fw_ver.as_ptr()) }.to_string_lossy().into_owned();
        Ok(DeviceAttributes {
            fw_ver,
            node_guid: u64::from_be(attr.node_guid),
            sys_image_guid: u64::from_be(attr.sys_image_guid),
            vendor_id: attr.vendor_id,
            vendor_part_id: attr.vendor_part_id,
            hw_ver: attr.hw_ver,
            phys_port_cnt: attr.phys_port_cnt,
            max_qp_wr: attr.max_qp_wr.max(0) as u32,
            max_sge: attr.max_sge.max(0) as u32,
            max_cqe: attr.max_cqe.max(0) as u32,
            max_mr_size: attr.max_mr_size,
            max_qp_rd_atom: attr.max_qp_rd_atom.max(0) as u32,
            max_qp_init_rd_atom: attr.max_qp_init_rd_atom.max(0) as u32,
        })
    }

    /// Queries a port through the library's extended entry point, so that `active_speed_ex`
    /// is filled in where libibverbs knows it (the exported compat `ibv_query_port` symbol
    /// never fills it, which breaks XDR decoding).
    pub fn query_port(&self, port: u8) -> Result<PortAttributes, VerbsError> {
        let mut attr = PortAttrBuffer::zeroed();
        let size = std::mem::size_of::<PortAttrBuffer>();
        let ctx = self.inner.ctx;
        let op = extended_query_port(ctx);
        let extended_query = op.is_some();
        let rc = match op {
            // SAFETY: op is the provider's query_port from a valid verbs_context; the buffer is
            // `size` bytes and starts with a complete ibv_port_attr, as the op expects.
            Some(op) => unsafe { op(ctx, port, &mut attr.base, size) },
            // SAFETY: legacy (non-extended) context: the compat entry point fills the compat struct,
            // which is a prefix of ibv_port_attr.
            None => unsafe { dl::ibv_query_port(ctx, port, &mut attr.base as *mut _ as *mut sys::_compat_ibv_port_attr) },
        };
        if rc != 0 {
            return Err(VerbsError::QueryPort { device: self.inner.name.clone(), port, source: from_return_code(rc) });
        }
        let b = &attr.base;
        Ok(PortAttributes {
            state: b.state,
            max_mtu: b.max_mtu,
            active_mtu: b.active_mtu,
            gid_tbl_len: b.gid_tbl_len.max(0) as u32,
            lid: b.lid,
            sm_lid: b.sm_lid,
            lmc: b.lmc,
            active_width: b.active_width,
            active_speed: b.active_speed,
            active_speed_ex: attr.speed_ex(),
            port_cap_flags2: if extended_query { b.port_cap_flags2 } else { 0 },
            extended_query,
            phys_state: b.phys_state,
            link_layer: b.link_layer,
            max_msg_sz: b.max_msg_sz,
        })
    }

    /// The valid entries of a port's GID table, with type and netdev.
    pub fn gid_table(&self, port: u8, table_len: u32) -> Result<Vec<GidEntry>, VerbsError> {
        if let Some(entries) = self.gid_table_at_once(port, table_len) {
            return Ok(entries);
        }
        let Some(query_gid_ex) = dl::_ibv_query_gid_ex() else {
            return self.gid_table_legacy(port, table_len);
        };
        let mut entries = Vec::new();
        for index in 0..table_len {
            // SAFETY: ibv_gid_entry is plain old data.
            let mut entry: sys::ibv_gid_entry = unsafe { std::mem::zeroed() };
            // SAFETY: ctx is open; entry is a valid out-pointer of the size we pass.
            let rc = unsafe { query_gid_ex(self.inner.ctx, u32::from(port), index, &mut entry, 0, std::mem::size_of::<sys::ibv_gid_entry>()) };
            match rc {
                0 => {}
                // Unused slot (ENODATA), or beyond what the kernel exposes.
                libc::ENODATA | libc::EINVAL | libc::ENOENT => continue,
                // Kernels without the GID-table ioctl: fall back to the plain query (no type).
                libc::EOPNOTSUPP | libc::ENOSYS | libc::EPROTONOSUPPORT => return self.gid_table_legacy(port, table_len),
                other => return Err(VerbsError::QueryGid { device: self.inner.name.clone(), port, index, source: from_return_code(other) }),
            }
            // SAFETY: the union's raw view is always valid.
            let gid = unsafe { entry.gid.raw };
            if gid.iter().all(|&b| b == 0) {
                continue;
            }
            entries.push(GidEntry { index, gid, gid_type: Some(entry.gid_type), netdev: ifindex_name(entry.ndev_ifindex) });
        }
        Ok(entries)
    }

    /// Every valid GID of the device in one call (`_ibv_query_gid_table`), this port's kept;
    /// `None` where the library lacks it or the call fails, and the caller asks index by index.
    /// The buffer holds valid entries only, so a few per port; it grows (up to every slot of
    /// every port the device could have) while the library says it is too small (EINVAL).
    fn gid_table_at_once(&self, port: u8, table_len: u32) -> Option<Vec<GidEntry>> {
        let query_gid_table = dl::_ibv_query_gid_table()?;
        let most = (table_len as usize).max(1) * 4;
        let mut max_entries = 256.min(most);
        loop {
            // SAFETY: ibv_gid_entry is plain old data; an all-zero value is valid.
            let mut entries: Vec<sys::ibv_gid_entry> = (0..max_entries).map(|_| unsafe { std::mem::zeroed() }).collect();
            // SAFETY: ctx is open; the buffer holds max_entries entries of the size we pass,
            // and the library writes at most that many.
            let n = unsafe { query_gid_table(self.inner.ctx, entries.as_mut_ptr(), max_entries, 0, std::mem::size_of::<sys::ibv_gid_entry>()) };
            if n == -(libc::EINVAL as isize) && max_entries < most {
                max_entries = (max_entries * 2).min(most);
                continue;
            }
            let n = usize::try_from(n).ok()?.min(max_entries);
            entries.truncate(n);
            let mut out: Vec<GidEntry> = entries
                .iter()
                .filter(|e| e.port_num == u32::from(port))
                .filter_map(|e| {
                    // SAFETY: the union's raw view is always valid.
                    let gid = unsafe { e.gid.raw };
                    (!gid.iter().all(|&b| b == 0)).then(|| GidEntry {
                        index: e.gid_index,
                        gid,
                        gid_type: Some(e.gid_type),
                        netdev: ifindex_name(e.ndev_ifindex),
                    })
                })
                .collect();
            out.sort_by_key(|e| e.index);
            return Some(out);
        }
    }

    fn gid_table_legacy(&self, port: u8, table_len: u32) -> Result<Vec<GidEntry>, VerbsError> {
        let mut entries = Vec::new();
        for index in 0..table_len {
            // SAFETY: ibv_gid is plain old data.
            let mut gid: sys::ibv_gid = unsafe { std::mem::zeroed() };
            // SAFETY: ctx is open; gid is a valid out-pointer.
            let rc = unsafe { dl::ibv_query_gid(self.inner.ctx, port, index as i32, &mut gid) };
            if rc != 0 {
                continue;
            }
            // SAFETY: raw view of the union.
            let raw = unsafe { gid.raw };
            if raw.iter().any(|&b| b != 0) {
                entries.push(GidEntry { index, gid: raw, gid_type: None, netdev: None });
            }
        }
        Ok(entries)
    }
}

/// `ibv_port_attr` followed by `active_speed_ex` when the headers predate it (see build.rs).
#[repr(C)]
struct PortAttrBuffer {
    base: sys::ibv_port_attr,
    #[cfg(not(verbs_has_active_speed_ex))]
    active_speed_ex: u32,
}

impl PortAttrBuffer {
    fn zeroed() -> Self {
        // SAFETY: plain old data; all-zero is valid.
        unsafe { std::mem::zeroed() }
    }

    #[cfg(not(verbs_has_active_speed_ex))]
    fn speed_ex(&self) -> u32 {
        self.active_speed_ex
    }

    #[cfg(verbs_has_active_speed_ex)]
    fn speed_ex(&self) -> u32 {
        self.base.active_speed_ex
    }
}

type QueryPortOp = unsafe extern "C" fn(*mut sys::ibv_context, u8, *mut sys::ibv_port_attr, usize) -> libc::c_int;

/// The extended `query_port` op of a context, as rdma-core's inline `___ibv_query_port` finds it.
fn extended_query_port(ctx: *mut sys::ibv_context) -> Option<QueryPortOp> {
    // SAFETY: ctx is a valid open context; abi_compat is set by the library.
    let abi = unsafe { (*ctx).abi_compat } as usize;
    // rdma-core marks an extended context with `__VERBS_ABI_IS_EXTENDED`, `(void *)UINTPTR_MAX`.
    if abi != usize::MAX {
        return None;
    }
    let offset = std::mem::offset_of!(sys::verbs_context, context);
    // SAFETY: an extended context is embedded in a verbs_context at `offset` (container_of).
    let vctx = unsafe { (ctx as *mut u8).sub(offset) as *mut sys::verbs_context };
    let needed = std::mem::size_of::<sys::verbs_context>() - std::mem::offset_of!(sys::verbs_context, query_port);
    // SAFETY: vctx points at a live verbs_context; sz tells how much of it the library provides.
    let (sz, op) = unsafe { ((*vctx).sz, (*vctx).query_port) };
    if sz < needed {
        return None;
    }
    op
}

fn ifindex_name(ifindex: u32) -> Option<String> {
    if ifindex == 0 {
        return None;
    }
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buf has IF_NAMESIZE bytes as if_indextoname requires.
    let ptr = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into buf.
    Some(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}
