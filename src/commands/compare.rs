//! `fabcheck compare OLD NEW`: placeholder until the judgement lands.

use crate::cli::CompareArgs;
use crate::error::{Failure, Outcome};

pub fn run(_args: &CompareArgs) -> Result<Outcome, Failure> {
    Err(Failure::new("compare is not built yet", "wait for 0.3"))
}
