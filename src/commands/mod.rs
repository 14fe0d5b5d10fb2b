//! One function per command: turn validated flags into work and an outcome.

mod check;
mod devices;
pub mod fabric;

use crate::cli::Command;
use crate::error::{Failure, Outcome};

pub fn run(command: Command) -> Result<Outcome, Failure> {
    match command {
        Command::Devices(args) => devices::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Fabric(args) => fabric::run(&args),
        Command::Pair(args) => crate::pair::run(&args),
        Command::Mesh(args) => crate::mesh::run(&args),
        Command::Serve(args) => crate::control::serve::serve(&args),
        Command::Agent(args) => crate::control::serve::agent_stdio(&args),
    }
}
