//! The operating system beyond verbs: poll sets, sockets, signals, interface addresses and
//! process limits. Safe code over `nix`, `socket2` and `signal-hook`; the verbs crate holds
//! fabcheck's only `unsafe`.

pub mod fs;
pub mod io;
pub mod os;
pub mod time;
