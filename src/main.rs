//! Thin entry point: parse, run, map the outcome to the contract's exit codes.
#![deny(unsafe_code)]

use clap::{CommandFactory, FromArgMatches};
use fabcheck::cli::{Cli, FailOn};
use fabcheck::commands::Global;
use fabcheck::error::{Outcome, Stop};
use fabcheck::report::output::to_stderr;
use fabcheck::report::Output;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Before anything opens a file, which could take a closed stdout's descriptor.
    fabcheck::sys::stdio::note_stdout();
    // `--version` says what was built and what rdma-core this node has.
    let long_version: &'static str = Box::leak(fabcheck::commands::long_version().into_boxed_str());
    let parsed = Cli::command().long_version(long_version).try_get_matches().and_then(|m| {
        let name = m.subcommand_name().unwrap_or("fabcheck").to_string();
        // The command's own `--json` (not every command has one).
        let json_flag = m.subcommand().and_then(|(_, sub)| sub.try_get_one::<bool>("json").ok().flatten().copied()).unwrap_or(false);
        // Globals are propagated to the subcommand's matches; their source says whether the
        // person typed them or clap filled in the default.
        let matches = m.subcommand().map_or(&m, |(_, sub)| sub);
        let given: Vec<Global> =
            Global::ALL.into_iter().filter(|g| matches.value_source(g.id()) == Some(clap::parser::ValueSource::CommandLine)).collect();
        Cli::from_arg_matches(&m).map(|cli| (cli, name, json_flag, given))
    });
    let (cli, command_name, json_flag, given) = match parsed {
        Ok(parsed) => parsed,
        // `--help`, `--version` (exit 0) or a usage error (exit 2); a help text that cannot be
        // written (`--help | true`, `> /dev/full`) is exit 2, as any lost result.
        Err(e) => {
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            let printed = e.print().is_ok();
            if code == 2 {
                refused_line(&e);
            }
            return if printed { ExitCode::from(code) } else { ExitCode::from(2) };
        }
    };
    init_logging(cli.verbose);
    // A global flag the command ignores is refused before any output is configured: the
    // refusal is said on stderr only, in no format the command does not write.
    let refused = fabcheck::commands::refuse_ignored(&cli.command, &given);
    let out = match refused {
        Ok(()) => fabcheck::commands::output_settings(cli.format, cli.output.clone(), cli.fail_on == FailOn::Warning, json_flag),
        Err(_) => Output::default(),
    };
    // The outcome already holds `--fail-on`: the document's verdict decided it.
    let ran = refused
        .map_err(Stop::Failure)
        .and_then(|()| out.precheck().map_err(Stop::Delivery))
        .and_then(|()| fabcheck::commands::run(cli.command, &out));
    let failure = match ran {
        Ok(Outcome::Pass) => return ExitCode::from(0),
        Ok(Outcome::Fail) => return ExitCode::from(1),
        // stdout's reader is gone: nothing to say, and no one to say it to.
        Err(Stop::Delivery(d)) if d.is_quiet() => return ExitCode::from(2),
        Err(Stop::Delivery(d)) => d.to_failure(),
        Err(Stop::Failure(f)) => f,
    };
    // A health check that reads stdout (NHC, Slurm) still gets one line with the cause; a
    // textfile collector's `--output` gets `fabcheck_up 0` instead of the last run's verdict.
    out.deliver_failure(&command_name, &failure.cause, &failure.remedy);
    // Never a panic, even with stderr full or closed: exit 2 is what the caller must see.
    // One line each (issue #58): a cause quotes paths, names and peers' words, and a newline in
    // any of them would forge a line of its own.
    to_stderr(&format!("fabcheck: {}", fabcheck::sanitise::one_line(&failure.cause)));
    to_stderr(&format!("  what to do: {}", fabcheck::sanitise::one_line(&failure.remedy)));
    ExitCode::from(2)
}

/// A usage error (exit 2 before any work): the `--format` document of an error still goes to
/// stdout or `--output`, so a stale PASS never survives a misspelled flag.
fn refused_line(e: &clap::Error) {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let cli = Cli::command();
    let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    let salvaged = fabcheck::commands::usage::salvage(&args, &names);
    let (cause, remedy) = fabcheck::commands::usage::cause_and_remedy(e, &salvaged.command);
    let out = Output::new(salvaged.format, salvaged.output, false, salvaged.json);
    if let Some(max) = salvaged.max_len {
        out.limit_oneline(max);
    }
    out.deliver_failure(&salvaged.command, &cause, &remedy);
    to_stderr(&format!("  what to do: {}", fabcheck::sanitise::printable(&remedy)));
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // A log line that cannot be written is dropped: the subscriber would otherwise report it
    // with `eprintln!`, which panics when stderr is full or closed.
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).log_internal_errors(false).init();
}
