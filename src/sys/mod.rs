//! The operating system beyond verbs: poll sets, sockets, signals, interface addresses,
//! process limits, CPU affinity, and the files fabcheck writes (atomic; how each path is
//! written: target; a bundle's new directory: new_dir). Safe code over `nix`, `socket2` and
//! `signal-hook`; the verbs crate holds fabcheck's only `unsafe`.

pub mod atomic;
pub mod beneath;
pub mod child;
pub mod cpu;
pub mod cpu_plan;
pub mod fs;
pub mod io;
pub mod new_dir;
pub mod os;
pub mod stdio;
pub mod target;
pub mod time;
pub mod write_error;
