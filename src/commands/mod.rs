//! One function per command: turn validated flags into work and an outcome.

mod accept;
pub mod baseline;
mod bundle;
mod check;
mod check_doc;
mod collective;
mod compare;
pub mod completions;
mod devices;
mod devices_doc;
mod exporter;
mod fabric;
mod flags;
mod manpage;
mod mesh;
mod pair;
mod progress;
mod serve;
mod soak;
pub mod usage;

use crate::cli::{Command, FormatFlag};
use crate::report::{Format, Output};

/// Where results go and in which format, from the global flags (`--json` on a command still
/// means JSON: `json_flag`): the value `main` hands to [`run`].
pub fn output_settings(format: FormatFlag, output: Option<std::path::PathBuf>, fail_on_warning: bool, json_flag: bool) -> Output {
    let format = match format {
        FormatFlag::Human => Format::Human,
        FormatFlag::Json => Format::Json,
        FormatFlag::Oneline => Format::Oneline,
        FormatFlag::Prom => Format::Prom,
        FormatFlag::Junit => Format::Junit,
    };
    Output::new(format, output, fail_on_warning, json_flag)
}
use crate::error::{Failure, Outcome, Stop};

/// A global flag (`Cli`'s), for saying which ones were given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    Format,
    Output,
    FailOn,
}

impl Global {
    pub const ALL: [Global; 3] = [Global::Format, Global::Output, Global::FailOn];

    /// clap's id of the flag (the field of `Cli`).
    pub fn id(self) -> &'static str {
        match self {
            Global::Format => "format",
            Global::Output => "output",
            Global::FailOn => "fail_on",
        }
    }

    /// The flag as a person types it.
    pub fn flag(self) -> &'static str {
        match self {
            Global::Format => "--format",
            Global::Output => "--output",
            Global::FailOn => "--fail-on",
        }
    }
}

/// The global flags given to a command that does not honour them, refused (exit 2) rather than
/// ignored: `exporter --format junit` would otherwise serve its page as if nothing was said.
pub fn refuse_ignored(command: &Command, given: &[Global]) -> Result<(), Failure> {
    // What each command writes instead of a document in `--format` (a command that writes
    // one takes them all).
    let instead = match command {
        Command::Exporter(_) => return exporter::refuse_globals(given),
        Command::Serve(_) => "serves agents on its port and writes no document",
        Command::Agent(_) => "speaks the control protocol on stdin and stdout",
        Command::Bundle(_) => "writes its capture into DIR (and its account on stderr)",
        Command::Completions(_) => "prints a completion script",
        Command::Manpage(_) => "prints the manual page (or writes it with --dir)",
        _ => return Ok(()),
    };
    match given.first() {
        None => Ok(()),
        Some(flag) => Err(Failure::usage(format!("{} does not take {}: it {instead}", command_name(command), flag.flag()))),
    }
}

/// A command's name as a person types it.
fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Devices(_) => "devices",
        Command::Check(_) => "check",
        Command::Fabric(_) => "fabric",
        Command::Pair(_) => "pair",
        Command::Mesh(_) => "mesh",
        Command::Collective(_) => "collective",
        Command::Serve(_) => "serve",
        Command::Accept(_) => "accept",
        Command::Exporter(_) => "exporter",
        Command::Compare(_) => "compare",
        Command::Bundle(_) => "bundle",
        Command::Completions(_) => "completions",
        Command::Agent(_) => "agent",
        Command::Manpage(_) => "manpage",
    }
}

/// Runs a command. Its result went to stdout or `--output` when this returns `Ok`; `main` maps
/// the outcome, or why there is none, to the exit code.
pub fn run(command: Command, out: &Output) -> Result<Outcome, Stop> {
    match command {
        Command::Devices(args) => devices::run(&args, out),
        Command::Check(args) => check::run(&args, out),
        Command::Fabric(args) => fabric::run(&args, out),
        Command::Pair(args) => pair::run(&args, out),
        Command::Mesh(args) => mesh::run(&args, out),
        Command::Collective(args) => collective::run(&args, out),
        Command::Serve(args) => Ok(serve::run(&args)?),
        Command::Accept(args) => accept::run(&args, out),
        Command::Exporter(args) => Ok(exporter::run(&args)?),
        Command::Compare(args) => compare::run(&args, out),
        Command::Bundle(args) => bundle::run(&args),
        Command::Completions(args) => {
            // Into memory first: clap_complete panics on a write error (`> /dev/full`, `| true`).
            crate::report::output::to_stdout(&completions::script(args.shell))?;
            Ok(Outcome::Pass)
        }
        Command::Agent(args) => Ok(serve::agent(&args)?),
        Command::Manpage(args) => manpage::run(&args),
    }
}

/// What `fabcheck --version` prints: the version, the commit and date it was built from, and the
/// rdma-core this node has (read at run time).
pub fn long_version() -> String {
    let rdma = crate::probe::host::gather_versions(&crate::probe::host::live_root());
    format!(
        "{} (commit {}, built {})\nrdma-core here: {}",
        env!("CARGO_PKG_VERSION"),
        env!("FABCHECK_GIT_COMMIT"),
        env!("FABCHECK_BUILD_DATE"),
        rdma.unwrap_or_else(|| "not found (libibverbs is not installed)".into())
    )
}
