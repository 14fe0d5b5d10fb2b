//! bindgen's output for the three MAD libraries (see `build.rs`): one struct per library
//! whose fields are the resolved symbols. Nothing outside `mad` sees these.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, clippy::all, clippy::undocumented_unsafe_blocks)]

pub mod umad {
    include!(concat!(env!("OUT_DIR"), "/umad_bindings.rs"));
}

pub mod mad {
    include!(concat!(env!("OUT_DIR"), "/mad_bindings.rs"));
}

pub mod netdisc {
    include!(concat!(env!("OUT_DIR"), "/netdisc_bindings.rs"));
}
