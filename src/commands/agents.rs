//! The agent flags `pair` and `mesh` share, as the options `control::link` starts agents with.

use crate::cli::{AgentFlags, Launcher};
use crate::control::link::{self, LaunchOptions};
use std::time::Duration;

pub fn launch_options(flags: &AgentFlags) -> LaunchOptions {
    LaunchOptions {
        remote_fabcheck: flags.remote_fabcheck.clone(),
        token: flags.token.clone().filter(|t| !t.is_empty()),
        connect_timeout: Duration::from_secs(5),
        launcher: match flags.launcher {
            Launcher::Ssh => link::Launcher::Ssh,
            Launcher::Srun => link::Launcher::Srun,
        },
    }
}
