//! The operating system beyond verbs: poll sets, sockets, signals, interface addresses,
//! process limits and CPU affinity. Safe code over `nix`, `socket2` and `signal-hook`; the verbs crate holds
//! fabcheck's only `unsafe`.

pub mod beneath;
pub mod child;
pub mod cpu;
pub mod fs;
pub mod io;
pub mod os;
pub mod time;
