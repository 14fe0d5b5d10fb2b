//! Pair rules the mesh's own analysis does not see: a pair's `pair.path` (`--paths N`: a slow
//! ECMP member) and `pair.loaded_latency` (`lat_under_load` above `--load-threshold`) errors,
//! as pair's one judge (`pair::verdict::judge`) words them, become a link suspect of the mesh:
//! the mesh fails where its pair did and the heat map's suspect column says why.

use super::suspect::Suspect;
use crate::outcome::{Finding, FindingId, Severity, SuspectKind};

/// The ids whose errors a pair record's verdict carries but the mesh's figures (bandwidth
/// against capacity, latency against the cluster) do not.
const LINK_RULES: [FindingId; 2] = [FindingId::PairPath, FindingId::PairLoadedLatency];

/// The link suspect `A<->B` of one judged pair, if pair's judge gave it one of those errors;
/// its reason is their messages (UDP source ports, p99 ratios) and the first one's remedy.
pub fn pair_suspect(a: &str, b: &str, findings: &[Finding]) -> Option<Suspect> {
    let errors: Vec<&Finding> = findings.iter().filter(|f| f.severity == Severity::Error && LINK_RULES.contains(&f.id)).collect();
    let first = errors.first()?;
    let said: Vec<String> = errors.iter().map(|f| format!("{}: {}", f.id, f.message)).collect();
    Some(Suspect::new(SuspectKind::Link, format!("{a}<->{b}"), format!("{}; {}", said.join("; "), first.remedy)))
}
