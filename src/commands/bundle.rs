//! `fabcheck bundle DIR`: the capture (`probe::bundle::capture`), then a short account of it.

use crate::cli::BundleArgs;
use crate::error::{Failure, Outcome, Stop};
use crate::probe::bundle::capture::{CaptureError, Plan, LIMITS};
use crate::probe::bundle::run as capture;
use std::time::Duration;

/// How long each tool may run (firmware queries have their own, longer, limit).
const TOOL_LIMIT: Duration = Duration::from_secs(10);

pub fn run(args: &BundleArgs) -> Result<Outcome, Stop> {
    let plan = Plan { out: args.dir.clone(), from_root: args.from_root.clone(), limits: LIMITS, tool_limit: TOOL_LIMIT };
    let manifest = capture::run(&plan).map_err(|e| match e {
        CaptureError::NoDevices(_) => {
            Failure::new(e.to_string(), "load the RDMA modules (`modprobe mlx5_ib`; Soft-RoCE: `rdma link add`), then capture again; bundle captures this node only (no flag reads another's)")
        }
        CaptureError::Write(_) => Failure::new(e.to_string(), "give a new directory (or an empty one) that you can write"),
    })?;
    // DIR, the source and the host name are outside text: one line each, escaped (issue #58).
    let line = |text: &str| crate::sanitise::one_line(text).into_owned();
    let shown = line(&args.dir.display().to_string());
    let mut text = format!(
        "captured {} files ({} bytes, {} links) of {} on {} into {shown} in {:.1} s\n",
        manifest.files,
        manifest.bytes,
        manifest.links,
        line(&manifest.source.to_string()),
        line(&manifest.origin.host),
        manifest.seconds
    );
    let saved = manifest.tools.iter().filter(|t| t.saved).count();
    if manifest.tools_run {
        text.push_str(&format!("tools: {saved} of {} outputs saved\n", manifest.tools.len()));
    }
    let skipped = manifest.skipped.len() as u64 + manifest.skipped_more;
    if skipped > 0 {
        text.push_str(&format!("{skipped} files not captured or cut short: see {shown}/{}\n", crate::probe::bundle::MANIFEST));
    }
    if let Some(why) = &manifest.stopped {
        text.push_str(&format!("incomplete: {}\n", line(why)));
    }
    text.push_str(&format!("review it before sharing it (host names, GUIDs, addresses); read it with: fabcheck check --sysfs-root {shown}\n"));
    crate::report::output::to_stderr(text.trim_end());
    Ok(Outcome::Pass)
}

/// The origin of the bundle `--sysfs-root` names (none live, or without a manifest); a manifest
/// that is not one is a refusal (exit 2), never a stamp.
pub(super) fn origin(root: Option<&std::path::Path>) -> Result<Option<crate::probe::bundle::Origin>, Failure> {
    let Some(root) = root else { return Ok(None) };
    crate::probe::bundle::origin(root).map_err(|u| {
        Failure::new(u.error, format!("re-capture the node with `fabcheck bundle DIR`, or remove {} to read the bundle without its host", u.path))
    })
}
