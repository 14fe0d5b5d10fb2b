//! Thin entry point: parse, run, map the outcome to the contract's exit codes.
#![deny(unsafe_code)]

use clap::{CommandFactory, FromArgMatches};
use fabcheck::cli::{Cli, FailOn};
use fabcheck::error::Outcome;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `--version` says what was built and what rdma-core this node has.
    let long_version: &'static str = Box::leak(fabcheck::commands::long_version().into_boxed_str());
    let matches = Cli::command().long_version(long_version).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    init_logging(cli.verbose);
    fabcheck::commands::configure_output(cli.format, cli.output.clone(), cli.fail_on == FailOn::Warning);
    match fabcheck::commands::run(cli.command) {
        Ok(Outcome::Pass) if cli.fail_on == FailOn::Warning && fabcheck::report::output::saw_warning() => ExitCode::from(1),
        Ok(Outcome::Pass) => ExitCode::from(0),
        Ok(Outcome::Fail) => ExitCode::from(1),
        Err(failure) => {
            eprintln!("fabcheck: {}", fabcheck::report::printable(&failure.cause));
            eprintln!("  what to do: {}", fabcheck::report::printable(&failure.remedy));
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}
