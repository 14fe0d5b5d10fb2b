//! `fabcheck serve` and `fabcheck agent`: flags in, a validated config out.

use crate::agent::budget::Limits;
use crate::agent::serve::{self, ServeConfig};
use crate::cli::ServeArgs;
use crate::error::{Failure, Outcome};
use std::net::SocketAddr;
use std::time::Duration;

pub fn run(args: &ServeArgs) -> Result<Outcome, Failure> {
    serve::serve(&configure(args)?)
}

pub fn configure(args: &ServeArgs) -> Result<ServeConfig, Failure> {
    let listen: SocketAddr =
        args.listen.parse().map_err(|_| Failure::usage(format!("--listen '{}' is not ADDR:PORT (e.g. 0.0.0.0:18515)", args.listen)))?;
    let token = super::flags::token(args.token.as_deref(), args.token_file.as_deref())?;
    if args.max_registered < (1 << 20) {
        return Err(Failure::usage(format!("--max-registered {} is below 1 MiB: no test would fit", args.max_registered)));
    }
    Ok(ServeConfig {
        listen,
        token,
        max_sessions: args.max_sessions.map(|n| n as usize),
        registered: Limits::from_total(u64::from(args.max_registered)),
        idle_timeout: (args.idle_timeout > 0).then(|| Duration::from_secs(args.idle_timeout)),
    })
}

pub fn agent() -> Result<Outcome, Failure> {
    serve::agent_stdio()
}
