//! `--validate` in a test's run: which side fills the pattern where, and which side checks
//! what arrived (see [`super::pattern`] for the pattern and the check). Bandwidth tests on
//! host memory, each direction alone (a bidirectional run is not checked):
//!
//! | test     | fills (before `ready`)            | checks                                      |
//! |----------|-----------------------------------|---------------------------------------------|
//! | send_bw  | active: its send half             | passive: every message at its completion    |
//! | write_bw | active: its send half             | passive: its buffer once stopped            |
//! | read_bw  | passive: the buffer it lends      | active: its buffer after the timed loop     |

use super::pattern::Checker;
use crate::model::{Role, TestKind, TestSpec};
use fabcheck_verbs::MemoryRegion;

/// Whether `spec` asks a check this side can take part in.
fn applies(spec: &TestSpec, mr: &MemoryRegion) -> bool {
    spec.validate_seed.is_some() && mr.host_visible() && matches!(spec.test, TestKind::SendBw | TestKind::WriteBw | TestKind::ReadBw)
}

/// Writes the pattern where this side's role sends it from: the send half `[size, 2*size)`
/// of an active sender or writer, the whole lent half `[0, size)` of a read's passive side.
pub fn fill(spec: &TestSpec, mr: &MemoryRegion) {
    let Some(seed) = spec.validate_seed.filter(|_| applies(spec, mr)) else { return };
    let size = spec.size as usize;
    let pattern = super::pattern::pattern(seed, size);
    let offset = match (spec.test, spec.role) {
        (TestKind::ReadBw, Role::Passive) => 0,
        (TestKind::SendBw | TestKind::WriteBw, Role::Active) => size,
        _ => return,
    };
    for (i, b) in pattern.iter().enumerate() {
        mr.write_volatile(offset + i, *b);
    }
}

/// The checker of the side that receives in `spec`, if it checks.
pub fn checker(spec: &TestSpec, mr: &MemoryRegion) -> Option<Checker> {
    let seed = spec.validate_seed.filter(|_| applies(spec, mr))?;
    let receives = matches!((spec.test, spec.role), (TestKind::SendBw | TestKind::WriteBw, Role::Passive) | (TestKind::ReadBw, Role::Active));
    receives.then(|| Checker::from_env(seed, spec.size as usize))
}
