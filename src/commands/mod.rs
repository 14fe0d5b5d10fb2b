//! One function per command: turn validated flags into work and an outcome.

mod check;
mod devices;
mod fabric;
mod flags;
mod mesh;
mod pair;
mod serve;

use crate::cli::{Command, FormatFlag};
use crate::report::Format;

/// Where results go and in which format, from the global flags (`--json` on a command still
/// means JSON).
pub fn configure_output(format: FormatFlag, output: Option<std::path::PathBuf>) {
    let format = match format {
        FormatFlag::Human => Format::Human,
        FormatFlag::Json => Format::Json,
        FormatFlag::Oneline => Format::Oneline,
        FormatFlag::Prom => Format::Prom,
        FormatFlag::Junit => Format::Junit,
    };
    crate::report::output::configure(format, output);
}
use crate::error::{Failure, Outcome};

pub fn run(command: Command) -> Result<Outcome, Failure> {
    match command {
        Command::Devices(args) => devices::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Fabric(args) => fabric::run(&args),
        Command::Pair(args) => pair::run(&args),
        Command::Mesh(args) => mesh::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Agent(_) => serve::agent(),
    }
}
