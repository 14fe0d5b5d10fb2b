//! Detects which `struct ibv_port_attr` the installed libibverbs headers declare.
//!
//! rdma-core added `active_speed_ex` (needed to decode XDR and later) in v48. rdma-sys
//! generates its bindings from the installed headers, so on older headers (Debian 12 ships
//! v44) the field is missing from the generated struct and fabcheck appends it itself; the
//! library fills it only if it knows it, and zero means "use `active_speed`".

use std::path::PathBuf;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(verbs_has_active_speed_ex)");
    println!("cargo:rerun-if-env-changed=FABCHECK_VERBS_H");
    let candidates: Vec<PathBuf> = std::env::var_os("FABCHECK_VERBS_H")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/include/infiniband/verbs.h", "/usr/local/include/infiniband/verbs.h"].map(PathBuf::from))
        .collect();
    for header in candidates {
        if let Ok(text) = std::fs::read_to_string(&header) {
            println!("cargo:rerun-if-changed={}", header.display());
            if text.contains("active_speed_ex") {
                println!("cargo:rustc-cfg=verbs_has_active_speed_ex");
            }
            return;
        }
    }
}
