//! `fabcheck serve` and `fabcheck agent`: flags in, a validated config out.

use crate::cli::ServeArgs;
use crate::control::serve::{self, ServeConfig};
use crate::error::{Failure, Outcome};
use std::net::SocketAddr;

pub fn run(args: &ServeArgs) -> Result<Outcome, Failure> {
    serve::serve(&configure(args)?)
}

pub fn configure(args: &ServeArgs) -> Result<ServeConfig, Failure> {
    let listen: SocketAddr =
        args.listen.parse().map_err(|_| Failure::usage(format!("--listen '{}' is not ADDR:PORT (e.g. 0.0.0.0:18515)", args.listen)))?;
    Ok(ServeConfig { listen, token: args.token.clone().filter(|t| !t.is_empty()), max_sessions: args.max_sessions })
}

pub fn agent() -> Result<Outcome, Failure> {
    serve::agent_stdio()
}
