//! `mesh --paths N`: a pair whose record holds a slow ECMP path (pair's own `pair.path` rule,
//! `pair::paths::slow`) is a link suspect of the mesh, its reason naming the UDP source ports,
//! so the mesh fails where its pair did and the heat map's suspect column says why.

use super::suspect::Suspect;
use crate::mesh::doc::PairRecord;
use crate::outcome::SuspectKind;
use crate::pair::paths::slow;

/// The link suspect of one pair record, if any of its results has a slow path.
pub fn path_suspect(record: &PairRecord) -> Option<Suspect> {
    let mut ports = Vec::new();
    let mut of = 0;
    for r in record.results.iter().filter(|r| r.error.is_none()) {
        let slow = slow(&r.paths);
        if !slow.is_empty() {
            of = of.max(r.paths.len());
        }
        for s in slow {
            let port = r.paths[s.index].udp_sport;
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
    }
    if ports.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    let reason = format!(
        "{} of {of} ECMP paths below half their siblings' median (pair.path): UDP source port {}; give the network team these ports to trace the hash to the bad member",
        ports.len(),
        ports.join(", ")
    );
    Some(Suspect::new(SuspectKind::Link, format!("{}<->{}", record.a, record.b), reason))
}
