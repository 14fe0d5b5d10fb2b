//! `fabcheck serve` and `fabcheck agent`: flags in, a validated config out.

use crate::agent::budget::Limits;
use crate::agent::serve::{self, ServeConfig};
use crate::cli::ServeArgs;
use crate::error::{Failure, Outcome};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
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
        bundle: args.sysfs_root.as_deref().map(bundle).transpose()?,
    })
}

pub fn agent(args: &crate::cli::AgentArgs) -> Result<Outcome, Failure> {
    serve::agent_stdio(args.sysfs_root.as_deref().map(bundle).transpose()?)
}

/// `--sysfs-root DIR`: the bundle and the host it is (its manifest's host, else the directory's
/// name). A directory that is not there, or a manifest that is not one, is exit 2 at once.
fn bundle(root: &Path) -> Result<(PathBuf, String), Failure> {
    if !root.is_dir() {
        return Err(Failure::new(
            format!("--sysfs-root {}: not a directory", crate::sanitise::printable(&root.display().to_string())),
            "give a bundle captured with `fabcheck bundle DIR` (or a tree in its layout)",
        ));
    }
    let origin = super::bundle::origin(Some(root))?;
    let host = match origin {
        Some(o) => o.host,
        None => {
            let name = std::fs::canonicalize(root).ok().and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
            name.filter(|n| crate::probe::bundle::valid_host(n)).ok_or_else(|| {
                Failure::new(
                    format!(
                        "--sysfs-root {}: its name is no host name and it has no manifest",
                        crate::sanitise::printable(&root.display().to_string())
                    ),
                    "name the directory after its host (letters, digits, '.', '-', '_'), or capture it with `fabcheck bundle`",
                )
            })?
        }
    };
    Ok((root.to_path_buf(), host))
}
