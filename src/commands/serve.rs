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
    let token = super::flags::token(args.token.as_deref(), args.token_file.as_deref())?;
    Ok(ServeConfig { listen, token, max_sessions: args.max_sessions.map(|n| n as usize) })
}

pub fn agent() -> Result<Outcome, Failure> {
    serve::agent_stdio()
}
