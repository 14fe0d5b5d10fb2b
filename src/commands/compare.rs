//! `fabcheck compare OLD NEW [--json]`: two documents in, the differences out; exit 1 on a
//! regression, 2 when they cannot be compared.

use crate::cli::CompareArgs;
use crate::compare::{self, render};
use crate::error::{Failure, Outcome, Stop};

pub fn run(args: &CompareArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    if !(args.regression.is_finite() && args.regression >= 0.0) {
        return Err(Failure::usage(format!("--regression {} is not a percentage (0 or more)", args.regression)).into());
    }
    let old = super::baseline::read_document(&args.old)?;
    let new = super::baseline::read_document(&args.new)?;
    let mut comparison = compare::compare_docs(&old, &new, args.regression).map_err(|e| Failure::new(e.to_string(), e.remedy()))?;
    // `--regressions`: only what regressed, in every format.
    if args.regressions {
        comparison.differences.retain(|d| d.regression);
    }
    let (old_source, new_source) = (render::Source::of_meta(&shown(&args.old), &old.meta), render::Source::of_meta(&shown(&args.new), &new.meta));
    // The documents' figures are no longer needed while the result is written.
    drop((old, new));
    let view = render::CompareReport { baseline: &old_source, current: &new_source, comparison: &comparison };
    Ok(out.deliver(&view, args.json)?)
}

/// A file name as the header shows it: one line (a name may hold a newline or an escape).
fn shown(path: &std::path::Path) -> String {
    crate::sanitise::one_line(&path.display().to_string()).into_owned()
}
