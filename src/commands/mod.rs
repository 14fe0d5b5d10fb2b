//! One function per command: turn validated flags into work and an outcome.

mod check;
mod devices;
mod fabric;
mod flags;
mod mesh;
mod pair;
mod serve;

use crate::cli::Command;
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
