//! libibverbs and librdmacm, opened at run time.
//!
//! fabcheck links neither library (`readelf -d` shows no NEEDED entry for them): a node
//! without rdma-core is exactly the node `check` must diagnose, so the binary has to start
//! there. rdma-sys still provides the types and the inline verbs (`ibv_post_send`,
//! `ibv_poll_cq`... call through the context's ops table, no symbol needed); its build script
//! finds the headers through `crates/fabcheck-verbs/pkgconfig/*.pc`, which declare no
//! `Libs:`, so it emits no link directive (`.cargo/config.toml` puts that folder on
//! `PKG_CONFIG_PATH`).
//!
//! Every exported function fabcheck calls is a field of a table filled by `dlsym` when the
//! library is first needed, and a same-named `unsafe fn` here calls through it; the call
//! sites read as before (`dl::ibv_open_device(..)`). Each signature is checked at compile
//! time against rdma-sys's declaration. The libraries stay loaded for the life of the
//! process (never `dlclose`d: contexts and providers point into them).
//!
//! The safe entry points (`DeviceList::get`, `CmChannel::new`) call [`verbs`] or [`rdmacm`]
//! first and return [`VerbsError::Library`] when a library is missing; every other call
//! happens on an object made from one of them. Should a wrapper run before its library was
//! loaded anyway, it loads it; if that fails it aborts the process with the cause, which is
//! never undefined behaviour.

use crate::error::VerbsError;
use libloading::Library;
use rdma_sys as sys;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// The sonames rdma-core installs (Debian `libibverbs1`, `librdmacm1`; RHEL `libibverbs`, `librdmacm`).
pub const LIBIBVERBS: &str = "libibverbs.so.1";
pub const LIBRDMACM: &str = "librdmacm.so.1";

/// What to install when a library is missing, for error messages and `check`'s finding.
pub const INSTALL_HINT: &str = "install rdma-core: Debian/Ubuntu `apt install rdma-core ibverbs-providers libibverbs1 librdmacm1`, \
     RHEL/Rocky `dnf install rdma-core libibverbs librdmacm`, or NVIDIA MLNX_OFED/DOCA-OFED";

/// Declares one library's table: its fields, how `dlsym` fills them, a wrapper per function,
/// and a compile-time check that each signature is rdma-sys's.
macro_rules! library {
    (
        $table:ident, $cell:ident, $getter:ident, $soname:expr;
        $( $(#[$unchecked:ident])? fn $name:ident ( $( $arg:ident : $ty:ty ),* ) $( -> $ret:ty )?; )*
        $( optional fn $opt:ident ( $( $opt_ty:ty ),* ) $( -> $opt_ret:ty )?; )*
    ) => {
        /// The functions fabcheck calls, resolved from the library when it is loaded.
        #[allow(non_snake_case)]
        pub(crate) struct $table {
            $( $name: unsafe extern "C" fn( $( $ty ),* ) $( -> $ret )?, )*
            $( $opt: Option<unsafe extern "C" fn( $( $opt_ty ),* ) $( -> $opt_ret )?>, )*
            _library: Library,
        }

        static $cell: OnceLock<Result<$table, Missing>> = OnceLock::new();

        impl $table {
            fn load(soname: &'static str) -> Result<$table, Missing> {
                let missing = |e: libloading::Error| Missing { soname, detail: e.to_string() };
                // SAFETY: loading runs the library's ELF constructors; libibverbs' and
                // librdmacm's set up their own globals and take no input from us.
                let library = unsafe { Library::new(soname) }.map_err(missing)?;
                Ok($table {
                    $(
                        // SAFETY: the field's type is the C prototype (checked against
                        // rdma-sys's declaration below, where rdma-sys declares it); the
                        // pointer stays valid while `_library` is held, i.e. forever.
                        $name: *unsafe { library.get(concat!(stringify!($name), "\0").as_bytes()) }.map_err(missing)?,
                    )*
                    $(
                        // SAFETY: as above; a library too old to export it leaves it `None`.
                        $opt: unsafe { library.get(concat!(stringify!($opt), "\0").as_bytes()) }.ok().map(|symbol| *symbol),
                    )*
                    _library: library,
                })
            }
        }

        /// The library's table, loading it on first use.
        pub(crate) fn $getter() -> Result<&'static $table, VerbsError> {
            $cell.get_or_init(|| $table::load($soname)).as_ref().map_err(|m| VerbsError::Library { soname: m.soname, detail: m.detail.clone() })
        }

        $(
            /// Calls the library's function of the same name.
            ///
            /// # Safety
            /// The C function's contract (see its man page).
            #[allow(clippy::missing_safety_doc)]
            pub(crate) unsafe fn $name( $( $arg: $ty ),* ) $( -> $ret )? {
                let table = $getter().unwrap_or_else(|e| abort_missing(&e));
                // SAFETY: forwarded as is; the caller upholds the C contract.
                unsafe { (table.$name)( $( $arg ),* ) }
            }
            library!(@check $( $unchecked )? $name ( $( $ty ),* ) $( -> $ret )?);
        )*

        $(
            /// The library's function of this name, if this version of the library exports it.
            pub(crate) fn $opt() -> Option<unsafe extern "C" fn( $( $opt_ty ),* ) $( -> $opt_ret )?> {
                $getter().unwrap_or_else(|e| abort_missing(&e)).$opt
            }
        )*
    };
    // Coerce rdma-sys's declaration to our pointer type: a mismatch does not compile. The
    // constant is evaluated at compile time and discarded, so no symbol is referenced.
    (@check $name:ident ( $( $ty:ty ),* ) $( -> $ret:ty )?) => {
        const _: unsafe extern "C" fn( $( $ty ),* ) $( -> $ret )? = sys::$name;
    };
    (@check unchecked $name:ident ( $( $ty:ty ),* ) $( -> $ret:ty )?) => {};
}

library! {
    Verbs, VERBS, verbs, LIBIBVERBS;
    fn ibv_get_device_list(num_devices: *mut c_int) -> *mut *mut sys::ibv_device;
    fn ibv_free_device_list(list: *mut *mut sys::ibv_device);
    fn ibv_get_device_name(device: *mut sys::ibv_device) -> *const c_char;
    fn ibv_open_device(device: *mut sys::ibv_device) -> *mut sys::ibv_context;
    fn ibv_close_device(context: *mut sys::ibv_context) -> c_int;
    fn ibv_query_device(context: *mut sys::ibv_context, device_attr: *mut sys::ibv_device_attr) -> c_int;
    fn ibv_query_port(context: *mut sys::ibv_context, port_num: u8, port_attr: *mut sys::_compat_ibv_port_attr) -> c_int;
    fn ibv_query_gid(context: *mut sys::ibv_context, port_num: u8, index: c_int, gid: *mut sys::ibv_gid) -> c_int;
    fn ibv_alloc_pd(context: *mut sys::ibv_context) -> *mut sys::ibv_pd;
    fn ibv_dealloc_pd(pd: *mut sys::ibv_pd) -> c_int;
    fn ibv_reg_mr(pd: *mut sys::ibv_pd, addr: *mut c_void, length: usize, access: c_int) -> *mut sys::ibv_mr;
    fn ibv_dereg_mr(mr: *mut sys::ibv_mr) -> c_int;
    fn ibv_create_cq(context: *mut sys::ibv_context, cqe: c_int, cq_context: *mut c_void, channel: *mut sys::ibv_comp_channel, comp_vector: c_int) -> *mut sys::ibv_cq;
    fn ibv_destroy_cq(cq: *mut sys::ibv_cq) -> c_int;
    fn ibv_create_comp_channel(context: *mut sys::ibv_context) -> *mut sys::ibv_comp_channel;
    fn ibv_destroy_comp_channel(channel: *mut sys::ibv_comp_channel) -> c_int;
    fn ibv_get_cq_event(channel: *mut sys::ibv_comp_channel, cq: *mut *mut sys::ibv_cq, cq_context: *mut *mut c_void) -> c_int;
    fn ibv_ack_cq_events(cq: *mut sys::ibv_cq, nevents: std::os::raw::c_uint);
    fn ibv_create_qp(pd: *mut sys::ibv_pd, qp_init_attr: *mut sys::ibv_qp_init_attr) -> *mut sys::ibv_qp;
    fn ibv_modify_qp(qp: *mut sys::ibv_qp, attr: *mut sys::ibv_qp_attr, attr_mask: c_int) -> c_int;
    fn ibv_destroy_qp(qp: *mut sys::ibv_qp) -> c_int;
    // Since rdma-core v32 (IBVERBS_1.11); the header's inline `ibv_query_gid_ex` wraps it.
    // rdma-sys does not bind names with a leading underscore. Older libraries (Ubuntu 20.04's
    // v28) lack it, and GIDs are then read without their type.
    optional fn _ibv_query_gid_ex(*mut sys::ibv_context, u32, u32, *mut sys::ibv_gid_entry, u32, usize) -> c_int;
    // Since rdma-core v32 too: `_ibv_query_gid_table(context, entries, max_entries, flags,
    // entry_size)`, every valid GID of every port in one call (one ioctl on kernels >= 5.9)
    // instead of one query per index: Soft-RoCE's table has 1024 slots a port.
    optional fn _ibv_query_gid_table(*mut sys::ibv_context, *mut sys::ibv_gid_entry, usize, u32, usize) -> isize;
    // Since rdma-core v34 (IBVERBS_1.12): `ibv_reg_dmabuf_mr(pd, offset, length, iova, fd,
    // access)`, GPU memory registered through its dma-buf. Older libraries lack it: GPU memory
    // is then registered with ibv_reg_mr through nvidia_peermem.
    optional fn ibv_reg_dmabuf_mr(*mut sys::ibv_pd, u64, usize, u64, c_int, c_int) -> *mut sys::ibv_mr;
}

library! {
    RdmaCm, RDMACM, rdmacm, LIBRDMACM;
    fn rdma_create_event_channel() -> *mut sys::rdma_event_channel;
    fn rdma_destroy_event_channel(channel: *mut sys::rdma_event_channel);
    fn rdma_get_cm_event(channel: *mut sys::rdma_event_channel, event: *mut *mut sys::rdma_cm_event) -> c_int;
    fn rdma_ack_cm_event(event: *mut sys::rdma_cm_event) -> c_int;
    fn rdma_event_str(event: sys::rdma_cm_event_type::Type) -> *const c_char;
    fn rdma_create_id(channel: *mut sys::rdma_event_channel, id: *mut *mut sys::rdma_cm_id, context: *mut c_void, ps: sys::rdma_port_space::Type) -> c_int;
    fn rdma_destroy_id(id: *mut sys::rdma_cm_id) -> c_int;
    fn rdma_bind_addr(id: *mut sys::rdma_cm_id, addr: *mut libc::sockaddr) -> c_int;
    fn rdma_listen(id: *mut sys::rdma_cm_id, backlog: c_int) -> c_int;
    fn rdma_resolve_addr(id: *mut sys::rdma_cm_id, src_addr: *mut libc::sockaddr, dst_addr: *mut libc::sockaddr, timeout_ms: c_int) -> c_int;
    fn rdma_resolve_route(id: *mut sys::rdma_cm_id, timeout_ms: c_int) -> c_int;
    fn rdma_set_option(id: *mut sys::rdma_cm_id, level: c_int, optname: c_int, optval: *mut c_void, optlen: usize) -> c_int;
    fn rdma_create_qp(id: *mut sys::rdma_cm_id, pd: *mut sys::ibv_pd, qp_init_attr: *mut sys::ibv_qp_init_attr) -> c_int;
    fn rdma_destroy_qp(id: *mut sys::rdma_cm_id);
    fn rdma_connect(id: *mut sys::rdma_cm_id, conn_param: *mut sys::rdma_conn_param) -> c_int;
    fn rdma_accept(id: *mut sys::rdma_cm_id, conn_param: *mut sys::rdma_conn_param) -> c_int;
    // Exported by librdmacm, not in rdma-sys's bindings. Network byte order.
    #[unchecked]
    fn rdma_get_src_port(id: *mut sys::rdma_cm_id) -> u16;
}

/// Whether libibverbs can be loaded here, without opening any device.
pub fn libibverbs_available() -> Result<(), VerbsError> {
    verbs().map(|_| ())
}

/// Whether librdmacm can be loaded here.
pub fn librdmacm_available() -> Result<(), VerbsError> {
    rdmacm().map(|_| ())
}

/// Why a library could not be loaded (kept once per process; `VerbsError` is made from it).
struct Missing {
    soname: &'static str,
    detail: String,
}

#[cold]
fn abort_missing(e: &VerbsError) -> ! {
    eprintln!("fabcheck: {e}; {INSTALL_HINT}");
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_typed_error_naming_it_and_what_to_install() {
        let missing = Verbs::load("libfabcheck-absent-ibverbs.so.1").err().expect("no such library");
        assert_eq!(missing.soname, "libfabcheck-absent-ibverbs.so.1");
        assert!(missing.detail.contains("libfabcheck-absent-ibverbs.so.1"), "{}", missing.detail);
        let err = VerbsError::Library { soname: missing.soname, detail: missing.detail };
        assert!(err.to_string().starts_with("rdma-core is not installed: libfabcheck-absent-ibverbs.so.1 cannot be loaded"), "{err}");
        for package in ["rdma-core", "ibverbs-providers", "libibverbs", "MLNX_OFED"] {
            assert!(INSTALL_HINT.contains(package), "{package}");
        }
    }

    /// The host tier installs rdma-core's libraries (tests/deps.sh), so this runs there; it
    /// loads both and resolves every function, the way the binary does on a node.
    #[test]
    fn the_installed_libraries_load_with_every_function() {
        libibverbs_available().expect("libibverbs.so.1 is installed on the test host (tests/deps.sh)");
        librdmacm_available().expect("librdmacm.so.1 is installed on the test host (tests/deps.sh)");
        assert!(_ibv_query_gid_ex().is_some(), "rdma-core >= 32 exports _ibv_query_gid_ex");
        assert!(_ibv_query_gid_table().is_some(), "rdma-core >= 32 exports _ibv_query_gid_table");
        assert!(ibv_reg_dmabuf_mr().is_some(), "rdma-core >= 34 exports ibv_reg_dmabuf_mr");
    }
}
