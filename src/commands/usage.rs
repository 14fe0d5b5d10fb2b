//! A command line clap refused (exit 2 before any work): what the run's `--format` document and
//! `--output` file still need to say, read from the raw arguments, since clap gave us no
//! matches; and, for a perftest spelling fabcheck does not take, fabcheck's equivalent or that
//! there is none. Pure: the arguments in, plain values out (`main` delivers them).

use crate::report::output::Format;
use std::ffi::OsString;
use std::path::PathBuf;

/// What a refused command line still tells about where its error document goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Salvaged {
    /// The subcommand named, or `fabcheck` when none (or an unknown one) was.
    pub command: String,
    pub format: Format,
    pub output: Option<PathBuf>,
    /// The command's own `--json` was given.
    pub json: bool,
    /// `--max-len N`, when given with a number.
    pub max_len: Option<usize>,
}

/// Reads `--format`, `--output`, `--json` and the subcommand from arguments clap refused
/// (`args` without the program's name). A value clap would refuse (`--format promm`) is left at
/// its default: the error then goes where it can.
pub fn salvage(args: &[OsString], commands: &[&str]) -> Salvaged {
    let mut out = Salvaged { command: "fabcheck".into(), format: Format::Human, output: None, json: false, max_len: None };
    let mut named = false;
    let mut iter = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "--format" => {
                if let Some(v) = inline.or_else(|| iter.next()) {
                    out.format = format_named(&v).unwrap_or(out.format);
                }
            }
            "--output" => out.output = inline.or_else(|| iter.next()).filter(|v| !v.is_empty()).map(PathBuf::from),
            "--json" => out.json = true,
            "--max-len" => out.max_len = inline.or_else(|| iter.next()).and_then(|v| v.parse().ok()).filter(|&n| n >= 16),
            _ if !named && !arg.starts_with('-') => {
                named = true;
                if commands.contains(&arg.as_str()) {
                    out.command = arg;
                }
            }
            _ => {}
        }
    }
    out
}

fn format_named(text: &str) -> Option<Format> {
    Some(match text {
        "human" => Format::Human,
        "json" => Format::Json,
        "oneline" => Format::Oneline,
        "prom" => Format::Prom,
        "junit" => Format::Junit,
        _ => return None,
    })
}

/// perftest's flags (its `long_options` and short options, src/perftest_parameters.c in
/// linux-rdma/perftest) that fabcheck does not spell the same way: fabcheck's equivalent, or
/// why there is none. The spellings fabcheck accepts as aliases are not listed (clap takes them).
const PERFTEST: &[(&str, &str)] = &[
    ("-t", "--tx-depth N (pair)"),
    ("--rx-depth", "none: fabcheck sizes the receive queue itself"),
    ("-r", "none: fabcheck sizes the receive queue itself (perftest's --rx-depth)"),
    ("--connection", "none: fabcheck tests RC queue pairs only"),
    ("-c", "none: fabcheck tests RC queue pairs only (perftest's --connection)"),
    ("-I", "--inline N (pair; 0 turns inline off)"),
    ("--report-both", "none: fabcheck reports both directions with --direction both"),
    ("--report-cycles", "none: fabcheck reports microseconds (its clock is calibrated per loop)"),
    ("-C", "none: fabcheck reports microseconds (perftest's --report-cycles)"),
    ("--report-histogrm", "none: fabcheck reports p50, p99, p99.9 and max (--json has them all)"),
    ("-H", "none: fabcheck reports p50, p99, p99.9 and max (perftest's --report-histogrm)"),
    ("--run_infinitely", "--duration (-D) for a timed run, or mesh/check --soak for a window"),
    ("--port", "--tcp-port (-p)"),
    ("--tos", "--tclass (-T)"),
    ("--pkey_index", "--pkey-index"),
    ("--use_cuda_dmabuf", "none needed: fabcheck registers GPU memory through dma-buf whenever the driver offers it"),
    ("--use_rocm", "none: fabcheck's --mem takes CUDA GPUs only"),
    ("--use_neuron", "none: fabcheck's --mem takes CUDA GPUs only"),
    ("--use_hl", "none: fabcheck's --mem takes CUDA GPUs only"),
    ("--odp", "none: fabcheck registers pinned memory only"),
    ("--use_hugepages", "none: fabcheck allocates its buffers itself"),
    ("--out_json", "--json (or --format json)"),
    ("--out_json_file", "--format json --output FILE"),
    ("--cpu_util", "none: fabcheck does not measure CPU use"),
    ("--mr_per_qp", "none: fabcheck registers one region per test"),
    ("--dont_xchg_versions", "none: fabcheck's agents always check each other's protocol version"),
    ("--ipv6", "--gid-index (-x) naming an IPv6 GID"),
    ("--limit_bw", "none: fabcheck measures the link's full rate"),
    ("--limit_msgrate", "none: fabcheck measures the link's full rate"),
    ("--post_list", "none: fabcheck posts one work request at a time"),
    ("--cq-mod", "none: fabcheck chooses completion moderation itself"),
    ("-Q", "none: fabcheck chooses completion moderation itself (perftest's --cq-mod)"),
    ("--noPeak", "none: fabcheck reports the peak beside the average always"),
    ("-N", "none: fabcheck reports the peak beside the average always (perftest's --noPeak)"),
    ("-e", "--events (pair: a completion channel instead of busy polling)"),
    ("--mcg", "none: fabcheck tests unicast RC only"),
    ("-g", "none: fabcheck tests unicast RC only (perftest's --mcg)"),
    ("-A", "--atomic fetch_add|cmp_swap with --tests atomic_lat,atomic_bw (pair)"),
    ("--dualport", "--rails (every rail of the node at once)"),
    ("-O", "--rails (every rail of the node at once; perftest's --dualport)"),
    ("--CPU-freq", "-F (accepted and ignored)"),
];

/// fabcheck's equivalent of a perftest flag it refused (`--tx-depth=64` as `--tx-depth`), or
/// `None` when the flag is not perftest's.
pub fn perftest_equivalent(arg: &str) -> Option<&'static str> {
    let flag = arg.split_once('=').map_or(arg, |(f, _)| f);
    PERFTEST.iter().find(|(name, _)| *name == flag).map(|(_, says)| *says)
}

/// The cause (clap's own first line, without its `error: ` prefix) and the remedy of a refused
/// command line: fabcheck's equivalent of a perftest flag, clap's suggestion, or the command's
/// `--help`.
pub fn cause_and_remedy(error: &clap::Error, command: &str) -> (String, String) {
    use clap::error::{ContextKind, ContextValue};
    let rendered = error.render().to_string();
    let first = rendered.lines().find(|l| !l.trim().is_empty()).unwrap_or("the command line was refused");
    let cause = first.trim().strip_prefix("error: ").unwrap_or(first.trim()).to_string();
    let invalid = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let suggested = match error.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let help = if command == "fabcheck" { "fabcheck --help".to_string() } else { format!("fabcheck {command} --help") };
    let remedy = match (invalid.as_deref().and_then(perftest_equivalent), suggested) {
        (Some(equivalent), _) => {
            let flag = invalid.unwrap_or_default();
            match equivalent.strip_prefix("none: ") {
                Some(why) => format!("{flag} is perftest's; fabcheck has no equivalent ({why})"),
                None => format!("{flag} is perftest's; fabcheck's equivalent is {equivalent}"),
            }
        }
        (None, Some(s)) => format!("use {s}, or see `{help}` for the flags"),
        (None, None) => format!("correct the command line; `{help}` lists the flags"),
    };
    (cause, remedy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    const COMMANDS: &[&str] = &["check", "mesh", "pair"];

    #[test]
    fn a_refused_line_still_says_where_its_error_goes() {
        let s = salvage(&args(&["check", "--format", "prom", "--outptu", "x", "--output=/tmp/f.prom"]), COMMANDS);
        assert_eq!(s, Salvaged { command: "check".into(), format: Format::Prom, output: Some("/tmp/f.prom".into()), json: false, max_len: None });
        let s = salvage(&args(&["--format=oneline", "chekc", "--json"]), COMMANDS);
        assert_eq!((s.command.as_str(), s.format, s.json), ("fabcheck", Format::Oneline, true));
        // A value given to --output is not taken for the subcommand.
        let s = salvage(&args(&["--output", "mesh", "check", "--format", "promm"]), COMMANDS);
        assert_eq!((s.command.as_str(), s.format, s.output), ("check", Format::Human, Some("mesh".into())));
    }

    #[test]
    fn perftest_spellings_are_aliases_or_named() {
        for line in [
            &["fabcheck", "pair", "a", "b", "--ib-dev", "mlx5_0", "--rdma_cm", "--all", "--qp", "4", "-T", "106", "-S", "3"][..],
            &["fabcheck", "pair", "a", "b", "--use_cuda", "0"],
            &["fabcheck", "pair", "a", "b", "--use_cuda_bus_id", "0000:1a:00.0"],
            &["fabcheck", "mesh", "a", "b", "--ib-dev", "mlx5_0", "--qp", "2", "-T", "106", "-S", "1"],
        ] {
            assert!(Cli::try_parse_from(line).is_ok(), "{line:?}");
        }
        let e = Cli::try_parse_from(["fabcheck", "pair", "a", "b", "--rx-depth", "128"]).unwrap_err();
        let (cause, remedy) = cause_and_remedy(&e, "pair");
        assert!(cause.contains("--rx-depth"), "{cause}");
        assert!(remedy.contains("perftest's") && remedy.contains("no equivalent"), "{remedy}");
        let e = Cli::try_parse_from(["fabcheck", "pair", "a", "b", "--tos=106"]).unwrap_err();
        assert!(cause_and_remedy(&e, "pair").1.contains("--tclass (-T)"));
        let e = Cli::try_parse_from(["fabcheck", "check", "--jsno"]).unwrap_err();
        let (_, remedy) = cause_and_remedy(&e, "check");
        assert!(remedy.contains("--json") && !remedy.contains("see --help"), "{remedy}");
    }
}
