//! `mesh --rails SPEC` (issue #29 item 4): the endpoints are hosts, tested rail by rail.
//!
//! Each host is asked for its rails (`Request::Rails`, resolved on the node as for `pair
//! --rails`) and expanded into one endpoint per rail, `HOST/DEV`, with its own agent sessions.
//! The pattern is laid out over the hosts and every host pair of a round becomes one pair per
//! rail, rail k only with rail k: every rail of a host pair runs in the same round, so a shift
//! round loads every rail of every node at once (the bisection test of a rail-optimized fabric).
//! The analysis then sees each rail as an endpoint, and [`fold`] reads its node suspects per
//! host: some rails of a host bad is a `rail` suspect each (`n07/mlx5_3`: that NIC, its cable
//! or leaf port), every rail bad is one `node` suspect (a host-side cause). `link` suspects stay
//! as they are. Asking the hosts ([`expand`]) is the only I/O here.

use super::analysis::{Suspect, SuspectKind};
use super::MeshConfig;
use crate::control::agents::Agents;
use crate::control::endpoint::EndpointSpec;
use crate::control::hub::LinkId;
use crate::error::Failure;
use crate::model::rails::{Rail, RailSpec};
use crate::outcome::loss::{Loss, LossKind, Unreached};
use crate::pair::rails::{ask, count_mismatch, too_old};

/// How the rail endpoints of a `--rails` mesh map onto its hosts: endpoint `h * rails + k` is
/// rail `k` of host `h`.
#[derive(Debug, Clone, PartialEq)]
pub struct Planes {
    /// Each host as suspects name it: the host name its agent reported, else as given.
    pub hosts: Vec<String>,
    /// Rails per host (the same on every host: a mismatch is exit 2 before anything runs).
    pub rails: usize,
}

impl Planes {
    /// The rail of an endpoint.
    pub fn rail(&self, endpoint: usize) -> usize {
        endpoint % self.rails.max(1)
    }

    /// The host of an endpoint.
    pub fn host(&self, endpoint: usize) -> usize {
        endpoint / self.rails.max(1)
    }

    /// Only rail k meets rail k: what the zoom-in's extra pairs are filtered by.
    pub fn same_rail(&self, a: usize, b: usize) -> bool {
        self.rail(a) == self.rail(b)
    }

    /// A round of host pairs as the round of rail pairs it runs: every rail of each host pair.
    pub fn expand_round(&self, round: &[(usize, usize)]) -> Vec<(usize, usize)> {
        round.iter().flat_map(|&(a, b)| (0..self.rails).map(move |k| (a * self.rails + k, b * self.rails + k))).collect()
    }
}

/// The hosts of a `--rails` mesh as rail endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    pub specs: Vec<EndpointSpec>,
    pub names: Vec<String>,
    pub planes: Planes,
    /// Per endpoint: why its host could not say its rails (unreachable, or refused the
    /// question), so it is listed unreachable and none of its pairs runs.
    pub lost: Vec<Option<Unreached>>,
}

/// Asks every host of `run` for its rails and expands the hosts into rail endpoints: their
/// specs and names (`HOST/DEV`), and the planes. A host that cannot be reached or asked is
/// listed unreachable (its endpoints `HOST/rail K`), as `mesh` lists any endpoint it cannot
/// reach. An agent older than 0.3 and hosts with different rail counts are exit 2: the rail
/// numbering every pair depends on is unknown.
pub fn expand(run: &MeshConfig, spec: &RailSpec, fleet: &mut dyn Agents) -> Result<Expansion, Failure> {
    let links: Vec<LinkId> = run.specs.iter().zip(&run.names).map(|(s, name)| fleet.add(&s.host, name.clone())).collect();
    let reached = fleet.reach(&links, &run.names, false, run.fanout)?;
    if let Some(f) = reached.iter().zip(&run.names).find_map(|(r, name)| r.failure.is_none().then(|| too_old(name, r)).flatten()) {
        fleet.close_all();
        return Err(f);
    }
    // Only the hosts that answered hello are asked; the others are lost with their reason.
    let asked: Vec<usize> = (0..reached.len()).filter(|&i| reached[i].failure.is_none()).collect();
    let asked_links: Vec<LinkId> = asked.iter().map(|&i| links[i]).collect();
    let asked_names: Vec<String> = asked.iter().map(|&i| run.names[i].clone()).collect();
    let answers = ask::each(fleet, &asked_links, &asked_names, spec);
    fleet.close_all();
    let mut nodes: Vec<Result<Vec<Rail>, Loss>> = reached
        .iter()
        .zip(&run.names)
        .map(|(r, name)| Err(r.failure.clone().unwrap_or_else(|| Loss::new(name, LossKind::Internal("not asked for its rails".into())))))
        .collect();
    for (&i, answer) in asked.iter().zip(answers?) {
        nodes[i] = answer.map(|(rails, _)| rails);
    }
    let known: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].is_ok()).collect();
    for &i in known.iter().skip(1) {
        let pair = [nodes[known[0]].clone().unwrap_or_default(), nodes[i].clone().unwrap_or_default()];
        if let Some(f) = count_mismatch(&[run.names[known[0]].clone(), run.names[i].clone()], &pair) {
            return Err(f);
        }
    }
    let reported: Vec<String> =
        reached.iter().zip(&run.names).map(|(r, given)| if r.host.is_empty() { given.clone() } else { r.host.clone() }).collect();
    Ok(expand_specs(&run.specs, &host_names(reported, &run.names), &nodes))
}

/// The hosts' names for suspects: as their agents reported them, unless two report the same
/// (one host given twice, or cloned images): then as given, which `unique_names` kept apart.
fn host_names(reported: Vec<String>, given: &[String]) -> Vec<String> {
    let mut sorted = reported.clone();
    sorted.sort();
    sorted.dedup();
    if sorted.len() == reported.len() {
        reported
    } else {
        given.to_vec()
    }
}

/// One endpoint per rail of each host, in host order then rail order: the host's spec with the
/// rail's port, named `HOST/DEV` (`HOST/DEV:PORT` where two rails share a device). A host whose
/// rails are unknown (`Err`: why) has as many endpoints as the others, `HOST/rail K`, lost.
fn expand_specs(given: &[EndpointSpec], hosts: &[String], nodes: &[Result<Vec<Rail>, Loss>]) -> Expansion {
    let rails = nodes.iter().find_map(|n| n.as_ref().ok()).map_or(1, Vec::len);
    let mut out = Expansion { specs: Vec::new(), names: Vec::new(), planes: Planes { hosts: hosts.to_vec(), rails }, lost: Vec::new() };
    for ((spec, host), node) in given.iter().zip(hosts).zip(nodes) {
        match node {
            Ok(node) => {
                for rail in node {
                    out.specs.push(EndpointSpec { host: spec.host.clone(), device: Some(rail.device.clone()), port: Some(rail.port) });
                    let shared = node.iter().filter(|r| r.device == rail.device).count() > 1;
                    out.names.push(if shared { format!("{host}/{}:{}", rail.device, rail.port) } else { format!("{host}/{}", rail.device) });
                    out.lost.push(None);
                }
            }
            Err(why) => {
                for k in 0..rails {
                    out.specs.push(spec.clone());
                    out.names.push(if rails == 1 { host.clone() } else { format!("{host}/rail {k}") });
                    out.lost.push(Some(Unreached::RailsUnknown(why.clone())));
                }
            }
        }
    }
    out
}

/// Reads the analysis's node suspects (each a rail endpoint) per host: a host with every rail
/// blamed is one `node` suspect (a host-side cause: CPU, memory, PCIe root, firmware, settings),
/// said where its first rail was; a host with some rails blamed has a `rail` suspect for each.
/// Every other suspect stays as it is.
pub fn fold(suspects: Vec<Suspect>, names: &[String], planes: &Planes) -> Vec<Suspect> {
    let host_of = |s: &Suspect| (s.kind == SuspectKind::Node).then(|| names.iter().position(|n| *n == s.subject)).flatten().map(|e| planes.host(e));
    let mut blamed = vec![0usize; planes.hosts.len()];
    for h in suspects.iter().filter_map(host_of) {
        blamed[h] += 1;
    }
    let mut said = vec![false; planes.hosts.len()];
    let mut out = Vec::with_capacity(suspects.len());
    for s in suspects {
        match host_of(&s) {
            None => out.push(s),
            Some(h) if blamed[h] >= planes.rails => {
                if !std::mem::replace(&mut said[h], true) {
                    let reason = format!(
                        "every rail bad ({} of {}): a host-side cause (CPU, memory, PCIe root complex, firmware or settings), not one NIC; {}: {}",
                        blamed[h], planes.rails, s.subject, s.reason
                    );
                    out.push(Suspect { kind: SuspectKind::Node, subject: planes.hosts[h].clone(), reason, ..s });
                }
            }
            Some(_) => out.push(Suspect { kind: SuspectKind::Rail, ..s }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rail(k: usize, device: &str, port: u32) -> Rail {
        Rail { rail: k, device: device.into(), port, active: true, bdf: None, gpu: None }
    }

    fn planes() -> (Vec<String>, Planes) {
        let hosts: Vec<String> = ["n1", "n2", "n3", "n4"].map(String::from).to_vec();
        let names = hosts.iter().flat_map(|h| (0..8).map(move |k| format!("{h}/mlx5_{k}"))).collect();
        (names, Planes { hosts, rails: 8 })
    }

    #[test]
    fn a_host_round_runs_every_rail_k_with_rail_k() {
        let p = Planes { hosts: vec!["a".into(), "b".into(), "c".into(), "d".into()], rails: 3 };
        assert_eq!(p.expand_round(&[(0, 1), (2, 3)]), [(0, 3), (1, 4), (2, 5), (6, 9), (7, 10), (8, 11)]);
        assert_eq!((p.host(7), p.rail(7)), (2, 1));
        assert!(p.same_rail(1, 10) && !p.same_rail(1, 11));
    }

    #[test]
    fn hosts_expand_into_one_named_endpoint_per_rail() {
        let given: Vec<EndpointSpec> = ["tcp://10.0.0.1:1", "tcp://10.0.0.2:1"].iter().map(|t| crate::control::endpoint::parse(t).unwrap()).collect();
        let node = vec![rail(0, "mlx5_0", 1), rail(1, "mlx5_4", 1)];
        let dual = vec![rail(0, "mlx5_0", 1), rail(1, "mlx5_0", 2)];
        let e = expand_specs(&given, &["n1".into(), "n2".into()], &[Ok(node), Ok(dual)]);
        assert_eq!(e.names, ["n1/mlx5_0", "n1/mlx5_4", "n2/mlx5_0:1", "n2/mlx5_0:2"]);
        assert_eq!((e.specs[1].device.as_deref(), e.specs[1].port, e.specs[3].port), (Some("mlx5_4"), Some(1), Some(2)));
        assert_eq!(e.specs[2].host, given[1].host);
        assert_eq!(e.planes, Planes { hosts: vec!["n1".into(), "n2".into()], rails: 2 });
        assert!(e.lost.iter().all(Option::is_none));
    }

    #[test]
    fn a_host_whose_rails_are_unknown_is_lost_on_every_rail() {
        let given: Vec<EndpointSpec> =
            ["tcp://10.0.0.1:1", "tcp://10.0.0.2:1", "tcp://10.0.0.3:1"].iter().map(|t| crate::control::endpoint::parse(t).unwrap()).collect();
        let node = || Ok(vec![rail(0, "mlx5_0", 1), rail(1, "mlx5_4", 1)]);
        let hosts = ["n1".into(), "n2".into(), "n3".into()];
        let silent = Loss::new("n1", LossKind::Timeout { step: crate::outcome::loss::Step::Hello, waited: std::time::Duration::from_secs(20) });
        let e = expand_specs(&given, &hosts, &[Err(silent), node(), node()]);
        assert_eq!(e.names[..2], ["n1/rail 0", "n1/rail 1"]);
        assert_eq!(e.planes.rails, 2);
        let said = crate::report::loss::unreached_words(e.lost[0].as_ref().unwrap());
        assert_eq!(said, "its rails are unknown: n1: no answer within 20 s while saying hello");
        assert!(e.lost[2..].iter().all(Option::is_none));
        // None known: one endpoint per host, each lost.
        let gone = |who: &str| Loss::new(who, LossKind::Gone { why: "gone".into(), tail: String::new() });
        let e = expand_specs(&given[..2], &hosts[..2], &[Err(gone("n1")), Err(gone("n2"))]);
        assert_eq!(e.names, ["n1", "n2"]);
        assert_eq!(e.lost.iter().flatten().count(), 2);
    }

    #[test]
    fn hosts_reporting_one_name_are_named_as_given() {
        let given: Vec<String> = ["localhost", "localhost#2"].map(String::from).to_vec();
        assert_eq!(host_names(vec!["box".into(), "box".into()], &given), given);
        assert_eq!(host_names(vec!["n1".into(), "n2".into()], &given), ["n1", "n2"]);
    }

    #[test]
    fn some_rails_bad_are_rail_suspects_every_rail_bad_is_the_node() {
        let (names, planes) = planes();
        let node = |s: &str| Suspect::new(SuspectKind::Node, s, "3 of 3 pairs at ~95 Gb/s");
        let link = Suspect::new(SuspectKind::Link, "n1/mlx5_2<->n3/mlx5_2", "failed twice");
        let mut suspects = vec![node("n2/mlx5_3"), link.clone()];
        suspects.extend((0..8).map(|k| node(&format!("n4/mlx5_{k}"))));
        let folded = fold(suspects, &names, &planes);
        let kinds: Vec<(SuspectKind, &str)> = folded.iter().map(|s| (s.kind, s.subject.as_str())).collect();
        assert_eq!(kinds, [(SuspectKind::Rail, "n2/mlx5_3"), (SuspectKind::Link, "n1/mlx5_2<->n3/mlx5_2"), (SuspectKind::Node, "n4")]);
        assert!(folded[2].reason.starts_with("every rail bad (8 of 8)"), "{}", folded[2].reason);
        assert_eq!(folded[1], link, "a link suspect stays as it is");
    }
}
