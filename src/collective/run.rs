//! The whole `collective` command as the controller runs it: one run judged ([`once`]), then,
//! when it failed and `--bisect` is asked, halving until the suspects are isolated
//! ([`bisect`](super::bisect)), every sub-run in the document.

use super::member::Member;
use super::members::Members;
use super::once::{document, once, REMEDY_NODE};
use crate::mesh::analysis::Suspect;
use crate::outcome::{Finding, FindingId, Severity, Verdict};

pub use super::doc::CollectiveDoc;
pub use super::once::{Config, Stop};

/// The whole command: one run, then `--bisect` if it failed.
pub fn run(members: &[Member], runner: &mut dyn Members, config: &Config) -> Result<CollectiveDoc, Stop> {
    let rings = super::order::rings(members, config.topology.as_ref());
    let judged = once(members, runner, config, rings)?;
    let mut doc = document(members, config, &judged);
    if config.bisect && judged.verdict == Verdict::Fail {
        let found = super::bisect::bisect(members, runner, config)?;
        doc.bisect = found.runs;
        for (host, reason) in found.isolated {
            let suspect = Suspect::new(crate::mesh::analysis::SuspectKind::Node, host.clone(), reason.clone());
            if !doc.suspects.iter().any(|s| s.kind == suspect.kind && s.subject == suspect.subject) {
                doc.findings.push(Finding::new(FindingId::CollectiveSuspect, Severity::Error, host, format!("node: {reason}"), REMEDY_NODE));
                doc.suspects.push(suspect);
            }
        }
        doc.verdict = Verdict::Fail;
    }
    Ok(doc)
}
