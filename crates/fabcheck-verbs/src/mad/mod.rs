//! Management datagrams (MADs) through rdma-core's infiniband-diags libraries: libibumad
//! (the umad device), libibmad (SMP and PerfMgt queries) and libibnetdisc (subnet discovery).
//!
//! The libraries are opened at run time by soname (`dlopen` through the bindgen/libloading
//! structs generated in `build.rs`), never linked: a node without them still runs every
//! other command, and `fabric` says which package to install. Everything returned here is
//! raw bytes (the 64-byte SMP attribute payloads, the PerfMgt data area) copied out of the
//! libraries' memory; decoding is pure Rust in the main crate.

mod discover;
mod ffi;
mod port;
mod qos;
mod tables;

pub use discover::{discover, DiscoverConfig, RawNode, RawPort};
pub use port::{find_local_port, LocalPort, MadPort};
pub use qos::QosTable;
pub use tables::{DrPath, SmpTable};

use std::sync::OnceLock;

/// The packages that hold the three libraries, for error messages.
pub const INSTALL_HINT: &str = "install the MAD libraries: Debian/Ubuntu `apt install libibumad3 libibmad5 libibnetdisc5` (or `infiniband-diags`), \
     RHEL `dnf install rdma-core infiniband-diags`";

/// Errors of the MAD layer; each names what failed and on what.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MadError {
    #[error("{soname} cannot be loaded ({detail})")]
    Missing { soname: &'static str, detail: String },
    #[error("no InfiniBand management (umad) device: /dev/infiniband/umad* and /sys/class/infiniband_mad are absent or empty")]
    NoUmadDevice,
    #[error("no umad device named '{name}' (present: {present})")]
    NoSuchCa { name: String, present: String },
    #[error("{ca} has no port {port} (ports: {present})")]
    NoSuchPort { ca: String, port: u8, present: String },
    #[error("{ca} port {port} is DOWN (physical state {phys_state}): there is no subnet to discover from it")]
    PortDown { ca: String, port: u8, phys_state: u32 },
    #[error("cannot open the MAD agents on {ca} port {port}: {source}")]
    OpenPort { ca: String, port: u8, source: std::sync::Arc<std::io::Error> },
    #[error("subnet discovery from {ca} port {port} failed: {source}")]
    Discover { ca: String, port: u8, source: std::sync::Arc<std::io::Error> },
    #[error("{what} to LID {lid} got no answer (timeout, drop or error status)")]
    NoAnswer { what: &'static str, lid: u16 },
}

/// The three libraries, loaded once per process.
pub(crate) struct Libraries {
    pub(crate) umad: ffi::umad::Umad,
    pub(crate) mad: ffi::mad::Mad,
    pub(crate) netdisc: ffi::netdisc::Netdisc,
}

static LIBRARIES: OnceLock<Result<Libraries, MadError>> = OnceLock::new();

pub(crate) fn libraries() -> Result<&'static Libraries, MadError> {
    LIBRARIES.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Whether the MAD libraries can be loaded here (without opening any device).
pub fn available() -> Result<(), MadError> {
    libraries().map(|_| ())
}

/// The sonames rdma-core installs (libibumad3, libibmad5, libibnetdisc5 on Debian).
const SONAMES: [&str; 3] = ["libibumad.so.3", "libibmad.so.5", "libibnetdisc.so.5"];

fn load() -> Result<Libraries, MadError> {
    load_from(SONAMES)
}

fn load_from([umad_so, mad_so, netdisc_so]: [&'static str; 3]) -> Result<Libraries, MadError> {
    fn missing(soname: &'static str) -> impl Fn(libloading::Error) -> MadError {
        move |e| MadError::Missing { soname, detail: e.to_string() }
    }
    // SAFETY: loading runs the libraries' ELF constructors; rdma-core's MAD libraries have
    // no constructors with preconditions. Every symbol is resolved up front by the generated
    // `from_library` (dynamic_link_require_all), so a missing one fails here, not at a call.
    let umad = unsafe { ffi::umad::Umad::new(umad_so) }.map_err(missing(umad_so))?;
    // SAFETY: as above.
    let mad = unsafe { ffi::mad::Mad::new(mad_so) }.map_err(missing(mad_so))?;
    // SAFETY: as above.
    let netdisc = unsafe { ffi::netdisc::Netdisc::new(netdisc_so) }.map_err(missing(netdisc_so))?;
    Ok(Libraries { umad, mad, netdisc })
}

/// Reads a NUL-terminated C string out of a fixed array (lossy UTF-8).
pub(crate) fn c_chars(raw: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = raw.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_typed_error_naming_it() {
        let err = load_from(["libfabcheck-absent-umad.so.3", "libibmad.so.5", "libibnetdisc.so.5"]).err().expect("cannot load");
        match &err {
            MadError::Missing { soname, detail } => {
                assert_eq!(*soname, "libfabcheck-absent-umad.so.3");
                assert!(detail.contains("libfabcheck-absent-umad.so.3"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().starts_with("libfabcheck-absent-umad.so.3 cannot be loaded"));
        assert!(INSTALL_HINT.contains("libibumad3 libibmad5 libibnetdisc5") && INSTALL_HINT.contains("infiniband-diags"));
    }
}
