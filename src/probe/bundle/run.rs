//! `fabcheck bundle DIR` from start to end: the sysfs part (`capture`), the tools' outputs on a
//! live node (`tools`), then the manifest and the directory put in place.

use super::capture::{self, CaptureError, Plan};
use super::Manifest;

/// Captures per `plan` and writes the manifest last; the manifest is returned.
pub fn run(plan: &Plan) -> Result<Manifest, CaptureError> {
    let mut c = capture::begin(plan)?;
    if plan.from_root.is_none() {
        super::tools::run_all(&mut c, plan.tool_limit)?;
    }
    capture::finish(c)
}
