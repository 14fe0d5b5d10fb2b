//! Command-line flags (clap) and their validation into run configurations.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "fabcheck", version, about = "RDMA fabric validator: inventory, bring-up checklist, pairwise latency and bandwidth")]
pub struct Cli {
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory of every RDMA device and port (ibv_devinfo -v and ibstat in one).
    Devices(DevicesArgs),
    /// The node's bring-up checklist, each failure with its likely cause and remedy.
    Check(CheckArgs),
    /// The whole InfiniBand subnet over MADs: SM, links, cabling, error counters.
    Fabric(crate::commands::fabric::FabricArgs),
    /// RC latency and bandwidth between two endpoints, with a verdict.
    Pair(crate::pair::PairArgs),
    /// Every pair of many endpoints; names the suspect nodes and links.
    Mesh(crate::mesh::MeshArgs),
    /// Agent that `pair` reaches as tcp://host:port.
    Serve(crate::control::serve::ServeArgs),
    /// Agent speaking the control protocol on stdin/stdout (started by `pair` over ssh or locally).
    #[command(hide = true)]
    Agent(crate::control::serve::AgentArgs),
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Only this device.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// One JSON document on stdout (schema fabcheck.devices.v1).
    #[arg(long)]
    pub json: bool,
    /// Read a captured sysfs tree (DIR/class/infiniband, DIR/class/net) instead of live verbs.
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Only this device, or one port of it.
    #[arg(long, value_name = "NAME[:PORT]")]
    pub device: Option<String>,
    /// What the node should be: rate, width, speed, link_layer, mtu, fw, devices, state.
    #[arg(long = "expect", value_name = "KEY=VALUE")]
    pub expect: Vec<String>,
    /// A file of the same KEY=VALUE lines (or a JSON object).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// One JSON document on stdout (schema fabcheck.check.v1).
    #[arg(long)]
    pub json: bool,
    /// Diagnose a captured sysfs tree instead of this node (node-wide stack checks are skipped).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

/// How `pair` and `mesh` reach agents and bound their tests.
#[derive(Debug, Clone, Args)]
pub struct AgentFlags {
    /// GID index on every end (default: RoCE v2 over v1, IPv4 over IPv6, never link-local).
    #[arg(long, value_name = "N")]
    pub gid_index: Option<u8>,
    /// Seconds a single test may take before the run is abandoned.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub timeout: u64,
    /// Milliseconds without progress after which an agent gives up on its peer.
    #[arg(long, default_value_t = 5000, value_name = "MS", hide = true)]
    pub stall_timeout_ms: u64,
    /// Token for tcp:// agents (or FABCHECK_TOKEN).
    #[arg(long, env = "FABCHECK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// fabcheck's path on ssh or srun hosts.
    #[arg(long, default_value = "fabcheck", value_name = "PATH")]
    pub remote_fabcheck: String,
    /// How `[user@]host` endpoints get their agent: ssh, or srun inside a Slurm allocation.
    #[arg(long, value_enum, default_value = "ssh")]
    pub launcher: crate::control::link::Launcher,
}

impl AgentFlags {
    pub fn launch(&self) -> crate::control::link::LaunchOptions {
        crate::control::link::LaunchOptions {
            remote_fabcheck: self.remote_fabcheck.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
            connect_timeout: std::time::Duration::from_secs(5),
            launcher: self.launcher,
        }
    }
}

/// Splits `NAME[:PORT]`.
pub fn parse_device_port(text: &str) -> Result<(String, Option<u32>), String> {
    let (name, port) = match text.rsplit_once(':') {
        Some((name, port)) => {
            let port: u32 = port.parse().map_err(|_| format!("'{text}': port must be a number, as in mlx5_0:1"))?;
            if port == 0 || port > 255 {
                return Err(format!("'{text}': port must be 1..255"));
            }
            (name, Some(port))
        }
        None => (text, None),
    };
    if !valid_device_name(name) {
        return Err(format!("'{name}' is not a device name (letters, digits, '_' and '-', as `fabcheck devices` lists them)"));
    }
    Ok((name.to_string(), port))
}

/// Device names as the kernel makes them: short, no path or shell characters.
pub fn valid_device_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_port() {
        assert_eq!(parse_device_port("mlx5_0:1").unwrap(), ("mlx5_0".into(), Some(1)));
        assert_eq!(parse_device_port("rxe0").unwrap(), ("rxe0".into(), None));
        assert!(parse_device_port("mlx5_0:x").is_err());
        assert!(parse_device_port("mlx5_0:0").is_err());
        assert!(parse_device_port("a;rm -rf /").is_err());
        assert!(parse_device_port("").is_err());
    }
}
