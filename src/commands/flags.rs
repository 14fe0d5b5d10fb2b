//! The flag groups several commands share (agents, test conditions, expectations), turned into
//! the plain values the layers below take.

use crate::cli::{AgentFlags, ConditionFlags, Launcher};
use crate::control::endpoint::HostSpec;
use crate::control::link::{self, LaunchOptions};
use crate::diagnose::Expectations;
use crate::error::Failure;
use crate::model::Conditions;
use crate::sys::fs::read_text;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// The flag groups `pair` and `mesh` both take, as given on the command line.
pub struct MeasureFlags<'a> {
    /// `-D`/`--duration`, in seconds (from the flag's parser).
    pub duration: Option<f64>,
    pub burn_in: &'a crate::cli::BurnInFlags,
    pub conditions: &'a ConditionFlags,
    pub agents: &'a AgentFlags,
    /// A JSON document on stdout (`--json`): `--report-every`'s lines then go to its file only.
    pub json: bool,
}

/// [`MeasureFlags`] read once, as the typed values a measuring run takes.
pub struct Measuring {
    /// How long each test runs, when by time (`-D`).
    pub duration_ms: Option<u64>,
    /// `--report-every`, and where its records go.
    pub report_every_ms: Option<u64>,
    pub live: Option<crate::progress_record::LiveOutput>,
    /// `--profile` then `--expect`.
    pub expect: Expectations,
    /// The test conditions asked (`-T`, `--sl`, `--mem`, `-m`...).
    pub conditions: Conditions,
    /// How the agents start, every endpoint already checked against the launcher.
    pub launch: LaunchOptions,
    /// How long one test may take: `--timeout`, plus `-D` when tests run by time.
    pub test_timeout: Duration,
}

/// Every shared flag checked and read, each endpoint (its host, and its name in messages)
/// against the launcher: a usage error is exit 2 before anything starts.
pub fn measuring<'h>(given: &MeasureFlags<'_>, hosts: impl IntoIterator<Item = (&'h HostSpec, String)>) -> Result<Measuring, Failure> {
    let duration_ms = duration_ms(given.duration)?;
    let (report_every_ms, live) = burn_in(given.burn_in, given.json)?;
    let expect = expectations(given.conditions)?;
    let test_timeout = Duration::from_secs(given.agents.timeout.max(1)).saturating_add(Duration::from_millis(duration_ms.unwrap_or(0)));
    Ok(Measuring {
        duration_ms,
        report_every_ms,
        live,
        expect,
        conditions: conditions(given.conditions),
        launch: launch_for(given.agents, hosts)?,
        test_timeout,
    })
}

/// `--launcher` and its options, every endpoint (its host, and its name in messages) checked
/// against the launcher before anything starts: srun takes no `user@`, kubectl node names.
pub fn launch_for<'a>(flags: &AgentFlags, hosts: impl IntoIterator<Item = (&'a HostSpec, String)>) -> Result<LaunchOptions, Failure> {
    let launch = launch_options(flags)?;
    for (host, label) in hosts {
        link::validate(launch.launcher, host, &label)?;
    }
    Ok(launch)
}

fn launch_options(flags: &AgentFlags) -> Result<LaunchOptions, Failure> {
    Ok(LaunchOptions {
        remote_fabcheck: flags.remote_fabcheck.clone(),
        token: token(flags.token.as_deref(), flags.token_file.as_deref())?,
        connect_timeout: Duration::from_secs(5),
        launcher: match flags.launcher {
            Launcher::Ssh => link::Launcher::Ssh,
            Launcher::Srun => link::Launcher::Srun,
            Launcher::Kubectl => link::Launcher::Kubectl,
        },
        k8s_selector: flags.k8s_selector.clone(),
    })
}

/// The shared token, from `--token`/FABCHECK_TOKEN or from a file only its owner can read;
/// trimmed the same way from either, and refused when too short to resist guessing or too long
/// for a hello (issue #27 item 6). An empty FABCHECK_TOKEN means none.
pub fn token(inline: Option<&str>, file: Option<&Path>) -> Result<Option<String>, Failure> {
    let token = match file {
        Some(path) => token_file(path)?,
        None if inline.is_some_and(|t| !t.is_empty()) && token_on_command_line() => {
            // Through the handled writer: a full or closed stderr is never a panic.
            crate::report::output::to_stderr(
                "fabcheck: warning: --token on the command line is visible to every user of this host in `ps`; use FABCHECK_TOKEN or --token-file",
            );
            inline.map(|t| t.trim().to_string())
        }
        None => inline.filter(|t| !t.is_empty()).map(|t| t.trim().to_string()),
    };
    if let Some(problem) = token.as_deref().and_then(crate::control::protocol::token_problem) {
        return Err(Failure::new(
            problem,
            "use the same random token of at least 16 characters everywhere: `head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'`",
        ));
    }
    Ok(token)
}

/// Whether `--token` itself was given (not FABCHECK_TOKEN, which clap reads into the same field).
fn token_on_command_line() -> bool {
    std::env::args_os().any(|a| a == "--token" || a.to_str().is_some_and(|a| a.starts_with("--token=")))
}

fn token_file(path: &Path) -> Result<Option<String>, Failure> {
    let remedy = "keep the token in a file only its owner can read: `install -m 600 /dev/null FILE`, then write the token into it";
    let (text, meta) = crate::sys::fs::read_text_and_meta(path, 4096)
        .map_err(|e| Failure::new(format!("cannot read the token file {}: {}", path.display(), e.reason()), remedy))?;
    if let Some(problem) = token_file_problem(meta.uid(), meta.mode(), nix::unistd::geteuid().as_raw()) {
        let fix = match problem {
            TokenFileProblem::Owner(_) => format!("chown {} {} && chmod 600 {}", nix::unistd::geteuid(), path.display(), path.display()),
            _ => format!("chmod 600 {}", path.display()),
        };
        return Err(Failure::new(format!("the token file {} {problem}", path.display()), fix));
    }
    let token = text.trim();
    if token.is_empty() {
        return Err(Failure::new(format!("the token file {} is empty", path.display()), remedy));
    }
    Ok(Some(token.to_string()))
}

/// Why a token file cannot be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenFileProblem {
    /// Another user owns it, and so chooses the token a root serve accepts (issue #46 item 2).
    Owner(u32),
    /// Others may write it.
    Writable(u32),
    /// Others may read it.
    Readable(u32),
}

impl std::fmt::Display for TokenFileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFileProblem::Owner(uid) => write!(f, "belongs to user {uid}, not to the user running fabcheck ({})", nix::unistd::geteuid()),
            TokenFileProblem::Writable(mode) => write!(f, "may be written by others (mode {:o})", mode & 0o777),
            TokenFileProblem::Readable(mode) => write!(f, "is readable by others (mode {:o})", mode & 0o777),
        }
    }
}

/// The file must be this user's, and neither writable nor readable by anyone else.
fn token_file_problem(uid: u32, mode: u32, euid: u32) -> Option<TokenFileProblem> {
    if uid != euid {
        Some(TokenFileProblem::Owner(uid))
    } else if mode & 0o022 != 0 {
        Some(TokenFileProblem::Writable(mode))
    } else if mode & 0o077 != 0 {
        Some(TokenFileProblem::Readable(mode))
    } else {
        None
    }
}

#[cfg(test)]
mod token_file_tests {
    use super::{token_file_problem, TokenFileProblem};

    #[test]
    fn only_the_users_own_private_file_is_trusted() {
        assert_eq!(token_file_problem(0, 0o100600, 0), None);
        assert_eq!(token_file_problem(1000, 0o100400, 1000), None);
        assert_eq!(token_file_problem(65534, 0o100600, 0), Some(TokenFileProblem::Owner(65534)), "another user's, even 0600");
        assert_eq!(token_file_problem(0, 0o100620, 0), Some(TokenFileProblem::Writable(0o100620)));
        assert_eq!(token_file_problem(0, 0o100640, 0), Some(TokenFileProblem::Readable(0o100640)));
    }
}

/// `-D`/`--duration` (seconds, from the flag's parser) in milliseconds: more than 0, at most 7
/// days (a burn-in; `crate::model::MAX_DURATION_MS`).
fn duration_ms(seconds: Option<f64>) -> Result<Option<u64>, Failure> {
    let most = (crate::model::MAX_DURATION_MS / 1000) as f64;
    match seconds {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= most) => {
            Err(Failure::usage(format!("--duration {s}: give more than 0 and at most {most} seconds (7 days)")))
        }
        Some(s) => Ok(Some((s * 1000.0).round().max(1.0) as u64)),
        None => Ok(None),
    }
}

/// `--report-every SECS` in milliseconds (0.1 s .. 7 days), and where its records go: a line
/// per interval on stderr in human mode (and whenever no `--progress-json` file takes them),
/// a JSON record per line in `--progress-json FILE`.
pub fn burn_in(flags: &crate::cli::BurnInFlags, json: bool) -> Result<(Option<u64>, Option<crate::progress_record::LiveOutput>), Failure> {
    let Some(secs) = flags.report_every else { return Ok((None, None)) };
    let ms = (secs * 1000.0).round();
    let (least, most) = (crate::model::MIN_REPORT_EVERY_MS as f64, crate::model::MAX_DURATION_MS as f64);
    if !(ms.is_finite() && (least..=most).contains(&ms)) {
        return Err(Failure::usage(format!("--report-every {secs}: give at least 0.1 and at most 604800 seconds (7 days)")));
    }
    let live_dir = match flags.live_dir.as_deref() {
        Some(p) if p == std::path::Path::new("none") => None,
        Some(p) => Some(p.to_path_buf()),
        None => Some(std::path::PathBuf::from(crate::progress_record::LIVE_DIR)),
    };
    let out = crate::progress_record::LiveOutput {
        lines: !json || flags.progress_json.is_none(),
        json: flags.progress_json.clone(),
        live_dir,
        every_s: ms / 1000.0,
    };
    Ok((Some(ms as u64), Some(out)))
}

/// The test conditions the flags ask for.
fn conditions(flags: &ConditionFlags) -> Conditions {
    Conditions {
        tclass: flags.tclass,
        sl: flags.sl,
        pkey_index: flags.pkey_index,
        relaxed_ordering: !flags.no_relaxed_ordering,
        mem: flags.mem.choice(),
        mtu: flags.mtu,
        ..Conditions::default()
    }
}

/// `--profile` then `--expect`, as `check` reads them.
fn expectations(flags: &ConditionFlags) -> Result<Expectations, Failure> {
    read_expectations(flags.profile.as_deref(), &flags.expect)
}

/// A profile file (if any), then `--expect KEY=VALUE` items over it.
pub fn read_expectations(profile: Option<&Path>, items: &[String]) -> Result<Expectations, Failure> {
    let mut expect = Expectations::default();
    if let Some(path) = profile {
        // The profile parser refuses anything over 64 KiB; read one byte more to tell.
        let text = read_text(path, 64 * 1024 + 1)
            .map_err(|e| Failure::new(format!("cannot read profile: {e}"), "give the path of a readable KEY=VALUE file"))?;
        expect.apply_profile(&path.display().to_string(), &text).map_err(|e| Failure::usage(e.to_string()))?;
    }
    for kv in items {
        expect.set(kv).map_err(|e| Failure::usage(format!("--expect {kv}: {e}")))?;
    }
    Ok(expect)
}

#[cfg(test)]
mod mem_tests {
    use super::conditions;
    use crate::cli::{Cli, Command};
    use crate::model::MemChoice;
    use clap::Parser;

    /// `--mem` reaches the targets of both commands through the shared condition flags, so
    /// `mesh --mem cuda:auto` asks every agent of every pair for the GPU nearest its NIC.
    #[test]
    fn mem_reaches_pair_and_mesh_conditions() {
        let parsed = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::Pair(p) => conditions(&p.conditions).mem,
            Command::Mesh(m) => conditions(&m.conditions).mem,
            _ => unreachable!(),
        };
        assert_eq!(parsed(&["fabcheck", "pair", "a", "b"]), MemChoice::Host);
        assert_eq!(parsed(&["fabcheck", "pair", "a", "b", "--mem", "cuda:2"]), MemChoice::Cuda(2));
        assert_eq!(parsed(&["fabcheck", "mesh", "a", "b", "c", "--mem", "cuda:auto"]), MemChoice::CudaAuto);
        assert_eq!(parsed(&["fabcheck", "mesh", "a", "b", "--mem", "cuda"]), MemChoice::CudaAuto);
        // perftest's spellings (issue #57).
        assert_eq!(parsed(&["fabcheck", "pair", "a", "b", "--use_cuda", "1"]), MemChoice::Cuda(1));
        assert!(matches!(parsed(&["fabcheck", "mesh", "a", "b", "--use_cuda_bus_id", "0000:1a:00.0"]), MemChoice::CudaBus(_)));
        assert!(Cli::try_parse_from(["fabcheck", "pair", "a", "b", "--use_cuda", "1", "--mem", "cuda:2"]).is_err());
    }
}

/// The endpoints a fleet command was given, on its command line and in `--hostfile` (one per
/// line, `#` comments), each parsed; `-d NAME[:PORT]` and `-i PORT` fill what an endpoint leaves
/// out. A bad hostfile line is named by its number, never shown: `--hostfile /etc/shadow` under
/// sudo would show a password hash (issue #46 item 6).
pub struct EndpointFlags<'a> {
    pub command: &'a str,
    pub endpoints: &'a [String],
    pub hostfile: Option<&'a Path>,
    pub tcp_port: Option<u16>,
    pub device: Option<&'a str>,
    pub ib_port: Option<u32>,
}

pub fn endpoints(given: &EndpointFlags<'_>) -> Result<Vec<crate::control::endpoint::EndpointSpec>, Failure> {
    let mut texts: Vec<(String, Option<usize>)> = given.endpoints.iter().map(|e| (e.clone(), None)).collect();
    if let Some(path) = given.hostfile {
        let text = read_text(path, crate::sys::fs::TEXT_FILE_CAP)
            .map_err(|e| Failure::new(format!("cannot read hostfile: {e}"), "give a readable file, one endpoint per line"))?;
        let lines = text.lines().enumerate().map(|(i, l)| (l.split('#').next().unwrap_or("").trim(), i + 1));
        texts.extend(lines.filter(|(l, _)| !l.is_empty()).map(|(l, n)| (l.to_string(), Some(n))));
    }
    if texts.len() < 2 {
        return Err(Failure::usage(format!("{} needs at least two endpoints (arguments or --hostfile)", given.command)));
    }
    let mut specs = Vec::with_capacity(texts.len());
    for (t, line) in &texts {
        let mut spec = crate::control::endpoint::parse_with_tcp_port(t, given.tcp_port).map_err(|e| match (line, given.hostfile) {
            (Some(n), Some(path)) => Failure::usage(format!(
                "--hostfile {}: line {n} is not an endpoint (HOST[/DEVICE[:PORT]], [USER@]HOST or tcp://HOST:PORT); the line is not shown",
                path.display()
            )),
            _ => Failure::usage(e),
        })?;
        if spec.device.is_none() {
            if let Some(d) = given.device {
                let (device, port) = crate::model::parse_device_port(d).map_err(Failure::usage)?;
                spec.device = Some(device);
                spec.port = port;
            }
        }
        if spec.port.is_none() {
            spec.port = given.ib_port;
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// `--device`'s values, each `NAME[:PORT]` or a comma-separated list of them, as the ports the
/// checklist judges (none given: all).
pub fn device_scope(given: &[String]) -> Result<crate::diagnose::Scope, Failure> {
    let mut only = Vec::new();
    for text in given.iter().flat_map(|t| t.split(',')).map(str::trim) {
        if text.is_empty() {
            return Err(Failure::usage("--device: an empty name in the list; give NAME[:PORT], or several separated by commas"));
        }
        only.push(crate::model::parse_device_port(text).map_err(Failure::usage)?);
    }
    Ok(crate::diagnose::Scope { only })
}
