//! mlx5's direct verbs (`libmlx5.so.1`), opened at run time like libibverbs ([`crate::loader`]),
//! for one purpose: a queue pair whose buffers are GPU memory must never have received data
//! scattered into its completion queue entry.
//!
//! Why. mlx5 adapters can put a small SEND's payload (up to 32 bytes, 64 with 128-byte CQEs)
//! inside the CQE instead of DMA-ing it to the receive buffer; libmlx5 then copies it to the
//! buffer with the CPU when the completion is polled (rdma-core `providers/mlx5/cq.c`: the
//! `MLX5_INLINE_SCATTER_32/64` branches call `mlx5_copy_to_recv_wqe`, a `memcpy` to the
//! receive WQE's address in `providers/mlx5/qp.c`). On GPU memory that address is a GPU
//! virtual address the CPU cannot write: the agent crashes on its first small receive.
//! libmlx5 turns the feature on for every QP unless `MLX5_SCATTER_TO_CQE=0` is in the
//! environment (`use_scatter_to_cqe()` in `providers/mlx5/verbs.c`, read at each QP creation);
//! `mlx5dv_create_qp(3)` says: "The MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE flag should be set
//! in cases that IOVA doesn't match the process' VA", and "When device memory is used
//! IBV_SEND_INLINE and scatter to CQE should not be used, as the memcpy is not possible".
//! perftest sets the environment variable for device-memory send tests
//! (`src/perftest_parameters.c`, `disable_mlx5_scatter_to_cqe()`).
//!
//! fabcheck uses the per-QP flag instead of the variable: one agent serves host- and
//! GPU-memory tests in one process (the variable would switch the feature off for host-memory
//! QPs too, changing their small-message latency), and `setenv` while other threads may be
//! in libmlx5's `getenv` is a data race (POSIX does not make `setenv` thread-safe; rails run
//! sessions on several threads).
//!
//! The requester side (RDMA READ responses of 32 bytes or less put in the send CQE) is on only
//! for QPs created with `sq_sig_all` or `MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE` (Linux
//! `drivers/infiniband/hw/mlx5/qp.c`, `configure_requester_scat_cqe`); fabcheck's QPs have
//! neither, and the disable flag clears both directions anyway.
//!
//! Which devices are mlx5: `mlx5dv_is_supported(device)` (rdma-core 22+). The mlx5 verbs
//! provider *is* `libmlx5.so.1` (rdma-core installs `libibverbs/libmlx5-rdmav*.so` as a link to
//! it), and libibverbs has loaded it before any mlx5 device is listed, so `dlopen` finds it by
//! its soname even off the library path: when `libmlx5.so.1` cannot be loaded, no device here is
//! an mlx5 device. The binary still starts with no rdma-core at all: nothing here is loaded
//! until a QP for GPU memory is made.

use crate::error::VerbsError;
use libloading::Library;
use rdma_sys as sys;
use std::os::raw::c_int;
use std::sync::OnceLock;

/// The soname rdma-core installs (Debian `ibverbs-providers`, RHEL `libibverbs`).
pub const LIBMLX5: &str = "libmlx5.so.1";

/// `MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS` (`enum mlx5dv_qp_init_attr_mask`, mlx5dv.h).
pub(crate) const MASK_QP_CREATE_FLAGS: u64 = 1 << 0;
/// `MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE` (`enum mlx5dv_qp_create_flags`, mlx5dv.h).
pub(crate) const CREATE_DISABLE_SCATTER_TO_CQE: u32 = 1 << 3;

/// `struct mlx5dv_dc_init_attr`: an `enum mlx5dv_dc_type` and a union of a `uint64_t` and two
/// bytes. Unused here (no DC mask bit is set), declared for the outer struct's layout.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DcInitAttr {
    pub dc_type: c_int,
    pub dct_access_key: u64,
}

/// `struct mlx5dv_qp_init_attr` (mlx5dv.h, unchanged since rdma-core 16 but for fields
/// appended behind `comp_mask` bits). Declared by hand: rdma-sys binds no mlx5dv.h.
/// `tests::the_declaration_matches_the_installed_mlx5dv_h` compiles the header and compares.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QpInitAttr {
    pub comp_mask: u64,
    pub create_flags: u32,
    pub dc_init_attr: DcInitAttr,
    pub send_ops_flags: u64,
}

const _: () = {
    assert!(std::mem::size_of::<QpInitAttr>() == 40);
    assert!(std::mem::offset_of!(QpInitAttr, create_flags) == 8);
    assert!(std::mem::offset_of!(QpInitAttr, dc_init_attr) == 16);
    assert!(std::mem::offset_of!(QpInitAttr, send_ops_flags) == 32);
};

impl QpInitAttr {
    /// What a QP on GPU memory is created with: scatter-to-CQE off, nothing else asked.
    pub(crate) fn no_scatter_to_cqe() -> QpInitAttr {
        QpInitAttr {
            comp_mask: MASK_QP_CREATE_FLAGS,
            create_flags: CREATE_DISABLE_SCATTER_TO_CQE,
            dc_init_attr: DcInitAttr { dc_type: 0, dct_access_key: 0 },
            send_ops_flags: 0,
        }
    }
}

type IsSupported = unsafe extern "C" fn(*mut sys::ibv_device) -> bool;
type CreateQp = unsafe extern "C" fn(*mut sys::ibv_context, *mut sys::ibv_qp_init_attr_ex, *mut QpInitAttr) -> *mut sys::ibv_qp;

/// The two functions fabcheck calls: `mlx5dv_create_qp` (MLX5_1.3, rdma-core 16) and
/// `mlx5dv_is_supported` (MLX5_1.8, rdma-core 22).
struct Mlx5 {
    is_supported: Option<IsSupported>,
    create_qp: Option<CreateQp>,
    _library: Library,
}

static MLX5: OnceLock<Option<Mlx5>> = OnceLock::new();

fn mlx5() -> Option<&'static Mlx5> {
    MLX5.get_or_init(|| {
        // SAFETY: loading runs libmlx5's constructor, which registers the provider with
        // libibverbs (a no-op when libibverbs loaded it already: the same object is returned).
        let library = unsafe { Library::new(LIBMLX5) }.ok()?;
        // SAFETY: the types are mlx5dv.h's prototypes; the pointers stay valid while `_library`
        // is held, i.e. forever (never dlclosed, like libibverbs).
        let is_supported = unsafe { library.get::<IsSupported>(b"mlx5dv_is_supported\0") }.ok().map(|s| *s);
        // SAFETY: as above.
        let create_qp = unsafe { library.get::<CreateQp>(b"mlx5dv_create_qp\0") }.ok().map(|s| *s);
        Some(Mlx5 { is_supported, create_qp, _library: library })
    })
    .as_ref()
}

/// Whether the device behind `ctx` is an mlx5 adapter; named errors when libmlx5 is too old to
/// say (rdma-core < 22).
pub(crate) fn is_mlx5(ctx: *mut sys::ibv_context, device: &str) -> Result<bool, VerbsError> {
    let Some(lib) = mlx5() else { return Ok(false) };
    let Some(is_supported) = lib.is_supported else {
        return Err(VerbsError::ScatterToCqe {
            device: device.to_string(),
            why: "libmlx5.so.1 has no mlx5dv_is_supported (rdma-core older than 22), so fabcheck cannot tell whether this device \
                  scatters small receives into its CQEs; update rdma-core, or run with --mem host"
                .into(),
        });
    };
    // SAFETY: ctx is a live context (the caller holds it); its device pointer is libibverbs'.
    Ok(unsafe { is_supported((*ctx).device) })
}

/// `mlx5dv_create_qp(ctx, init, attr)`; `None` when libmlx5 lacks it (rdma-core < 16).
///
/// # Safety
/// `ctx` is a live mlx5 context and `init` a fully initialised `ibv_qp_init_attr_ex` whose PD
/// and CQs belong to it.
pub(crate) unsafe fn create_qp(ctx: *mut sys::ibv_context, init: &mut sys::ibv_qp_init_attr_ex, attr: &mut QpInitAttr) -> Option<*mut sys::ibv_qp> {
    let create = mlx5()?.create_qp?;
    // SAFETY: the caller's contract; attr is mlx5dv.h's layout (checked above and in the tests).
    Some(unsafe { create(ctx, init, attr) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qp_on_device_memory_asks_for_scatter_to_cqe_off_and_nothing_else() {
        let a = QpInitAttr::no_scatter_to_cqe();
        assert_eq!(a.comp_mask, MASK_QP_CREATE_FLAGS, "only the create-flags field is valid");
        assert_eq!(a.create_flags, CREATE_DISABLE_SCATTER_TO_CQE);
        assert_eq!(a.create_flags & (1 << 4), 0, "never MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE (libmlx5 refuses both with EINVAL)");
    }

    /// The host tier installs rdma-core's providers (tests/deps.sh): libmlx5 loads, and has both
    /// functions, as on a node.
    #[test]
    fn the_installed_libmlx5_has_both_functions() {
        let lib = mlx5().expect("libmlx5.so.1 is installed on the test host (ibverbs-providers, tests/deps.sh)");
        assert!(lib.is_supported.is_some() && lib.create_qp.is_some());
    }

    /// Compiles a C program against the installed `<infiniband/mlx5dv.h>` (tests/deps.sh
    /// installs libibverbs-dev, which ships it) and compares sizes, offsets and constants with
    /// the hand-written declaration.
    #[test]
    fn the_declaration_matches_the_installed_mlx5dv_h() {
        let dir = std::env::temp_dir().join(format!("fabcheck-mlx5dv-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("layout.c");
        std::fs::write(
            &src,
            "#include <stddef.h>\n#include <stdio.h>\n#include <infiniband/mlx5dv.h>\n\
             int main(void) { printf(\"%zu %zu %zu %zu %d %d\\n\", sizeof(struct mlx5dv_qp_init_attr), \
             offsetof(struct mlx5dv_qp_init_attr, create_flags), offsetof(struct mlx5dv_qp_init_attr, dc_init_attr), \
             offsetof(struct mlx5dv_qp_init_attr, send_ops_flags), (int)MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS, \
             (int)MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE); return 0; }\n",
        )
        .unwrap();
        let exe = dir.join("layout");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = std::process::Command::new(&cc).arg("-o").arg(&exe).arg(&src).status().expect("run cc (build-essential, tests/deps.sh)");
        assert!(built.success(), "cc could not compile against <infiniband/mlx5dv.h>: install libibverbs-dev (tests/deps.sh)");
        let out = std::process::Command::new(&exe).output().unwrap();
        let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let want = format!(
            "{} {} {} {} {} {}",
            std::mem::size_of::<QpInitAttr>(),
            std::mem::offset_of!(QpInitAttr, create_flags),
            std::mem::offset_of!(QpInitAttr, dc_init_attr),
            std::mem::offset_of!(QpInitAttr, send_ops_flags),
            MASK_QP_CREATE_FLAGS,
            CREATE_DISABLE_SCATTER_TO_CQE
        );
        assert_eq!(got, want, "struct mlx5dv_qp_init_attr or its constants differ from mlx5dv.h");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
