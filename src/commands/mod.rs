//! One function per command: turn validated flags into work and an outcome.

mod baseline;
mod bundle;
mod check;
mod compare;
pub mod completions;
mod devices;
mod exporter;
mod fabric;
mod flags;
mod manpage;
mod mesh;
mod pair;
mod progress;
mod serve;
mod soak;

use crate::cli::{Command, FormatFlag};
use crate::report::Format;

/// Where results go and in which format, from the global flags (`--json` on a command still
/// means JSON: `json_flag`).
pub fn configure_output(format: FormatFlag, output: Option<std::path::PathBuf>, fail_on_warning: bool, json_flag: bool) {
    let format = match format {
        FormatFlag::Human => Format::Human,
        FormatFlag::Json => Format::Json,
        FormatFlag::Oneline => Format::Oneline,
        FormatFlag::Prom => Format::Prom,
        FormatFlag::Junit => Format::Junit,
    };
    crate::report::output::configure(format, output, fail_on_warning, json_flag);
}
use crate::error::{Outcome, Stop};

/// Runs a command. Its result went to stdout or `--output` when this returns `Ok`; `main` maps
/// the outcome, or why there is none, to the exit code.
pub fn run(command: Command) -> Result<Outcome, Stop> {
    match command {
        Command::Devices(args) => devices::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Fabric(args) => fabric::run(&args),
        Command::Pair(args) => pair::run(&args),
        Command::Mesh(args) => mesh::run(&args),
        Command::Serve(args) => Ok(serve::run(&args)?),
        Command::Exporter(args) => Ok(exporter::run(&args)?),
        Command::Compare(args) => compare::run(&args),
        Command::Bundle(args) => bundle::run(&args),
        Command::Completions(args) => {
            // Into memory first: clap_complete panics on a write error (`> /dev/full`, `| true`).
            crate::report::output::to_stdout(&completions::script(args.shell))?;
            Ok(Outcome::Pass)
        }
        Command::Agent(_) => Ok(serve::agent()?),
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
