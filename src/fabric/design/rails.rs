//! `fabric --rails`: in a rail-optimized fabric NIC k of every host is cabled to rail k's
//! leaves, so GPU k's traffic to GPU k elsewhere crosses one leaf (or one spine). A NIC
//! cabled to another rail's leaf still works, but its traffic takes a longer path and crowds
//! that rail's uplinks: `fabric.rail` names it, with the leaf it is on and the rail's own.
//!
//! A NIC's rail comes from `--rail-map FILE` (CSV `host,device,rail`, matched to the node
//! description `HOST DEVICE` that rdma-ndd writes), else from the description itself when it
//! reads `HOST mlx5_K` (rail K). A leaf's rail is the rail most of its NICs are on; the
//! leaves of rail k are its leaf group. A leaf holding as many NICs of two rails has no rail
//! (a warning): its NICs are not judged.

use crate::fabric::design::csv::{self, CsvError};
use crate::fabric::discovery::links::{end_name, node_name, Index};
use crate::fabric::discovery::model::Fabric;
use crate::fabric::judgement::Noted;
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::FindingId;
use crate::outcome::Severity;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

pub const COLUMNS: [&str; 3] = ["host", "device", "rail"];

/// `--rail-map`: node description (`HOST DEVICE`) -> rail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RailMap {
    pub rails: BTreeMap<String, u32>,
}

pub fn load_map(path: &Path, deadline: Option<Instant>) -> Result<RailMap, CsvError> {
    map_from_table(&csv::load("rail map", path, deadline)?)
}

pub fn parse_map(path: &str, text: &str) -> Result<RailMap, CsvError> {
    map_from_table(&csv::parse_until("rail map", path, text, || false)?)
}

pub const MAP_REMEDY: &str = "give a CSV whose header is host,device,rail and one NIC per row (host and device as the NIC's node description \
                              `HOST DEVICE` names them, rail a number 0..1023, or rail3)";

/// What to do about a rail map that cannot be used.
pub fn remedy(e: &CsvError) -> &'static str {
    match e {
        CsvError::Deadline { .. } => "raise --deadline, or give a smaller file",
        _ => MAP_REMEDY,
    }
}

fn map_from_table(table: &csv::Table) -> Result<RailMap, CsvError> {
    let at = table.require(&COLUMNS)?;
    let mut map = RailMap::default();
    let mut first: HashMap<String, usize> = HashMap::new();
    for row in &table.rows {
        let err = |why: String| table.syntax(row.line, why);
        let (host, device, rail) = (row.fields[at[0]].trim(), row.fields[at[1]].trim(), row.fields[at[2]].trim());
        if host.is_empty() || device.is_empty() {
            return Err(err("host and device must both be given".into()));
        }
        // `3`, or `rail3` / `rail 3` as spreadsheets often label them.
        let number = rail.strip_prefix("rail").or_else(|| rail.strip_prefix("Rail")).unwrap_or(rail).trim();
        let rail: u32 = number.parse().ok().filter(|&r| r < 1024).ok_or_else(|| err(format!("rail '{rail}' is not a number 0..1023")))?;
        let description = format!("{host} {device}");
        if let Some(line) = first.insert(description.clone(), row.line) {
            return Err(err(format!("{description} is already given a rail on line {line}")));
        }
        map.rails.insert(description, rail);
    }
    Ok(map)
}

/// The rail rdma-ndd's description `HOST mlx5_K` implies: K.
pub fn rail_of_description(description: &str) -> Option<u32> {
    let (host, device) = description.trim().split_once(' ')?;
    let k = device.strip_prefix("mlx5_")?;
    (!host.is_empty() && !k.is_empty() && k.len() <= 4 && k.chars().all(|c| c.is_ascii_digit())).then(|| k.parse().ok()).flatten()
}

/// One NIC port cabled to a switch.
struct Seat {
    nic: Guid,
    port: u8,
    rail: u32,
    leaf: Guid,
    leaf_port: u8,
}

/// The rail rules; `map` is `--rail-map`'s (None: the descriptions).
pub fn rules(fabric: &Fabric, map: Option<&RailMap>) -> Vec<Noted> {
    let index = Index::new(fabric);
    let mut out = Vec::new();
    // NICs: a SHARP Aggregation Node (inside every Quantum switch) is none.
    let cas: Vec<_> =
        fabric.nodes.iter().filter(|n| n.node_type == NodeType::Ca && !crate::mad::attributes::is_aggregation_node(&n.description)).collect();
    let rail_of: HashMap<Guid, u32> = cas
        .iter()
        .filter_map(|n| match map {
            Some(m) => m.rails.get(n.description.trim()).map(|r| (n.guid, *r)),
            None => rail_of_description(&n.description).map(|r| (n.guid, r)),
        })
        .collect();
    let source = match map {
        Some(_) => "the rail map".to_string(),
        None => "node descriptions (HOST mlx5_K is rail K)".to_string(),
    };
    if rail_of.is_empty() {
        out.push(Noted::new(
            FindingId::FabricRail,
            Severity::Error,
            "rails".into(),
            format!("--rails: no NIC of the {} discovered has a rail from {source}, so no rail could be judged", cas.len()),
            "give --rail-map FILE (host,device,rail), or run rdma-ndd on the hosts so their descriptions read HOST mlx5_K",
            &[],
        ));
        return out;
    }
    if map.is_none() {
        out.push(Noted::new(
            FindingId::FabricRail,
            Severity::Warning,
            "rails".into(),
            format!(
                "rails taken from node descriptions (HOST mlx5_K is rail K) for {} of {} NICs: where storage NICs sit between the compute NICs \
                 this numbering is not the GPU order `pair --rails auto` uses",
                rail_of.len(),
                cas.len()
            ),
            "give --rail-map FILE (host,device,rail) to say each NIC's rail",
            &[],
        ));
    }
    if let Some(m) = map {
        let seen: BTreeSet<&str> = cas.iter().map(|n| n.description.trim()).collect();
        let absent: Vec<&str> = m.rails.keys().map(String::as_str).filter(|d| !seen.contains(d)).collect();
        if !absent.is_empty() {
            let shown: Vec<&str> = absent.iter().copied().take(5).collect();
            out.push(Noted::new(
                FindingId::FabricRail,
                Severity::Warning,
                "rails".into(),
                format!(
                    "{} NIC(s) of the rail map were not discovered (no node has the description): {}{}",
                    absent.len(),
                    shown.join(", "),
                    if absent.len() > shown.len() { ", ..." } else { "" }
                ),
                "check that those hosts are up and cabled, and that their descriptions are HOST DEVICE as the map writes them (rdma-ndd)",
                &[],
            ));
        }
    }
    let mut seats = Vec::new();
    for n in cas.iter().filter(|n| rail_of.contains_key(&n.guid)) {
        for p in &n.ports {
            let Some(peer) = index.peer_of(n.guid, p.number) else { continue };
            if peer.node.node_type == NodeType::Switch {
                seats.push(Seat { nic: n.guid, port: p.number, rail: rail_of[&n.guid], leaf: peer.node.guid, leaf_port: peer.port.number });
            }
        }
    }
    // Each leaf's rail: the one most of its NICs are on.
    let mut per_leaf: BTreeMap<Guid, BTreeMap<u32, usize>> = BTreeMap::new();
    for s in &seats {
        *per_leaf.entry(s.leaf).or_default().entry(s.rail).or_default() += 1;
    }
    let name = |g: &Guid| index.by_guid.get(g).map_or_else(|| g.to_string(), |n| node_name(n));
    let mut leaf_rail: BTreeMap<Guid, u32> = BTreeMap::new();
    for (leaf, counts) in &per_leaf {
        let top = counts.values().copied().max().unwrap_or(0);
        let tied: Vec<u32> = counts.iter().filter(|(_, &c)| c == top).map(|(r, _)| *r).collect();
        if tied.len() == 1 {
            leaf_rail.insert(*leaf, tied[0]);
        } else {
            let rails: Vec<String> = tied.iter().map(|r| format!("rail {r}")).collect();
            out.push(Noted::new(
                FindingId::FabricRail,
                Severity::Warning,
                name(leaf),
                format!("leaf {} holds {top} NIC(s) each of {}: its rail is unclear, so its NICs are not judged", name(leaf), rails.join(" and ")),
                "cable each leaf's NICs to one rail (or give --rail-map if the descriptions do not say the rails)",
                &[],
            ));
        }
    }
    let mut group: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (leaf, rail) in &leaf_rail {
        group.entry(*rail).or_default().push(name(leaf));
    }
    group.values_mut().for_each(|leaves| leaves.sort());
    // Where each host's NIC of each rail is cabled (host: the description's first word).
    let host_of = |g: &Guid| index.by_guid[g].description.split_whitespace().next().unwrap_or_default();
    let mut seat_of: HashMap<(&str, u32), Guid> = HashMap::new();
    let mut on_leaf: HashMap<Guid, Vec<&Seat>> = HashMap::new();
    for s in &seats {
        seat_of.entry((host_of(&s.nic), s.rail)).or_insert(s.leaf);
        on_leaf.entry(s.leaf).or_default().push(s);
    }
    for s in &seats {
        let Some(&on) = leaf_rail.get(&s.leaf) else { continue };
        if on == s.rail {
            continue;
        }
        let nic = index.by_guid[&s.nic];
        let leaf = index.by_guid[&s.leaf];
        let belongs = match group.get(&s.rail) {
            Some(leaves) if leaves.len() > 4 => {
                format!("rail {}'s leaf group is {}, and {} more", s.rail, leaves[..4].join(", "), leaves.len() - 4)
            }
            Some(leaves) => format!("rail {}'s leaf group is {}", s.rail, leaves.join(", ")),
            None => format!("rail {} has no leaf of its own (no leaf holds mostly rail-{} NICs)", s.rail, s.rail),
        };
        // In a rail-optimized fabric the hosts of one leaf share a leaf on every rail: where the
        // other hosts on this leaf have their NIC of this NIC's rail is where its cable goes.
        let mut tally: BTreeMap<Guid, usize> = BTreeMap::new();
        let host = host_of(&s.nic);
        for peer in on_leaf[&s.leaf].iter().filter(|p| p.rail == on && host_of(&p.nic) != host) {
            if let Some(l) = seat_of.get(&(host_of(&peer.nic), s.rail)).filter(|l| leaf_rail.get(l) == Some(&s.rail)) {
                *tally.entry(*l).or_default() += 1;
            }
        }
        let several = group.get(&s.rail).is_some_and(|leaves| leaves.len() > 1);
        let likely = match tally.iter().max_by_key(|(_, n)| **n) {
            Some((l, _)) if several => format!("; likely {}, where the other hosts on {} have their rail-{} NIC", name(l), name(&s.leaf), s.rail),
            _ => String::new(),
        };
        let belongs = belongs + &likely;
        out.push(Noted::new(
            FindingId::FabricRail,
            Severity::Error,
            node_name(nic),
            format!(
                "{} (rail {}, from {source}) is cabled to {}, a leaf of rail {on}; {belongs}",
                end_name(nic, s.port),
                s.rail,
                end_name(leaf, s.leaf_port)
            ),
            "move the cable to a free port of its rail's leaf (or fix the rail map if this NIC is on another rail): on the wrong leaf its traffic \
             takes extra hops and crowds the other rail's uplinks",
            &[(s.nic, s.port), (s.leaf, s.leaf_port)],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rails_from_descriptions() {
        assert_eq!(rail_of_description("gpu01 mlx5_3"), Some(3));
        assert_eq!(rail_of_description("gpu01 mlx5_bond_0"), None);
        assert_eq!(rail_of_description("MT4129 ConnectX7 Mellanox Technologies"), None);
        assert_eq!(rail_of_description("mlx5_0"), None);
        assert_eq!(rail_of_description("gpu01 mlx5_"), None);
    }

    use crate::fabric::discovery::fixture::Build;

    /// 2 leaves (rail 0, rail 1) under a spine, 3 hosts with NICs mlx5_0 and mlx5_1.
    fn railed() -> Build {
        let mut b = Build::new();
        b.switch("spine");
        for l in 0..2 {
            b.switch(&format!("leaf{l}"));
            b.cable(&format!("leaf{l}"), "spine");
        }
        for h in 1..=3 {
            for k in 0..2 {
                let name = format!("gpu{h} mlx5_{k}");
                b.ca(&name);
                b.cable(&format!("leaf{k}"), &name);
            }
        }
        b
    }

    fn found(noted: &[Noted]) -> Vec<(String, Severity, String)> {
        noted.iter().map(|n| (n.finding.id.to_string(), n.finding.severity, n.finding.subject.to_string())).collect()
    }

    fn move_nic(b: &mut Build, nic: &str, to: &str) {
        let n = b.guid(nic);
        let (old, old_port) = b.fabric.nodes.iter().find(|x| x.guid == n).unwrap().ports[0].remote.unwrap();
        for x in b.fabric.nodes.iter_mut() {
            for p in x.ports.iter_mut() {
                if (x.guid == n) || (x.guid == old && p.number == old_port) {
                    p.remote = None;
                }
            }
        }
        b.cable(to, nic);
    }

    /// NVIDIA Selene's compute fabric (tests/fixtures/wild-fabrics: a DGX SuperPOD, rail-optimized,
    /// its DGX A100s' compute NICs mlx5_0-3 and 6-9 each on its rail's leaf) passes; with
    /// luna-0001's mlx5_0 and mlx5_1 cables swapped, exactly those two are named, each with the
    /// leaf it belongs on (its neighbours' leaf of that rail) among rail groups of 20 and more.
    #[test]
    fn nvidia_selene_is_rail_optimized_and_two_swapped_nics_are_named() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wild-fabrics/nvidia-selene-compute-hdr.net");
        let topology = crate::fabric::design::topology::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
        let mut b = crate::fabric::discovery::fixture::from_topology(&topology);
        assert_eq!(found(&rules(&b.fabric, None)), vec![("fabric.rail".into(), Severity::Warning, "rails".into())]);
        let guid = |b: &Build, d: &str| b.fabric.nodes.iter().find(|n| n.description.trim() == d).unwrap().guid;
        let (x, y) = (guid(&b, "luna-0001 mlx5_0"), guid(&b, "luna-0001 mlx5_1"));
        let remote = |b: &Build, g: Guid| b.fabric.nodes.iter().find(|n| n.guid == g).unwrap().ports[0].remote.unwrap();
        let (rx, ry) = (remote(&b, x), remote(&b, y));
        for n in b.fabric.nodes.iter_mut() {
            for p in n.ports.iter_mut() {
                p.remote = match (n.guid, p.number) {
                    (g, 1) if g == x => Some(ry),
                    (g, 1) if g == y => Some(rx),
                    at if at == rx => Some((y, 1)),
                    at if at == ry => Some((x, 1)),
                    _ => p.remote,
                };
            }
        }
        let got = rules(&b.fabric, None);
        let errors: Vec<_> = got.iter().filter(|n| n.finding.severity == Severity::Error).collect();
        let subjects: Vec<String> = errors.iter().map(|n| n.finding.subject.to_string()).collect();
        assert_eq!(subjects, ["luna-0001 mlx5_0", "luna-0001 mlx5_1"], "{got:#?}");
        let said = &errors[0].finding.message;
        assert!(said.starts_with("luna-0001 mlx5_0[1] (rail 0, from node descriptions (HOST mlx5_K is rail K)) is cabled to MF0;LG01-02:MQM8700/U1[1], a leaf of rail 1; rail 0's leaf group is "), "{said}");
        assert!(
            said.ends_with("more; likely MF0;LG01-01:MQM8700/U1, where the other hosts on MF0;LG01-02:MQM8700/U1 have their rail-0 NIC"),
            "{said}"
        );
        assert!(
            errors[1]
                .finding
                .message
                .ends_with("likely MF0;LG01-02:MQM8700/U1, where the other hosts on MF0;LG01-01:MQM8700/U1 have their rail-1 NIC"),
            "{}",
            errors[1].finding.message
        );
    }

    #[test]
    fn a_nic_on_another_rails_leaf_is_named_with_both_leaves() {
        let mut b = railed();
        let got = rules(&b.fabric, None);
        assert_eq!(found(&got), vec![("fabric.rail".into(), Severity::Warning, "rails".into())], "descriptions: only the warning");
        move_nic(&mut b, "gpu2 mlx5_1", "leaf0");
        let got = rules(&b.fabric, None);
        let errors: Vec<_> = got.iter().filter(|n| n.finding.severity == Severity::Error).collect();
        assert_eq!(errors.len(), 1, "{got:#?}");
        assert_eq!(errors[0].finding.subject, "gpu2 mlx5_1");
        assert!(
            errors[0].finding.message.contains("is cabled to leaf0[") && errors[0].finding.message.ends_with("rail 1's leaf group is leaf1"),
            "{}",
            errors[0].finding.message
        );
        assert_eq!(errors[0].ends.len(), 2, "both ends marked in the table");
        // From a rail map: gpu3's NICs are on the other rails than their names say.
        let map = parse_map(
            "m",
            "host,device,rail\ngpu1,mlx5_0,0\ngpu1,mlx5_1,1\ngpu2,mlx5_0,0\ngpu2,mlx5_1,1\ngpu3,mlx5_0,1\ngpu3,mlx5_1,0\ngpu9,mlx5_0,0\n",
        )
        .unwrap();
        let b = railed();
        let got = rules(&b.fabric, Some(&map));
        let mut subjects: Vec<_> = got.iter().filter(|n| n.finding.severity == Severity::Error).map(|n| n.finding.subject.to_string()).collect();
        subjects.sort();
        assert_eq!(subjects, ["gpu3 mlx5_0", "gpu3 mlx5_1"], "{got:#?}");
        let absent = got.iter().find(|n| n.finding.severity == Severity::Warning).unwrap();
        assert!(
            absent.finding.message.contains("were not discovered") && absent.finding.message.contains("gpu9 mlx5_0"),
            "{}",
            absent.finding.message
        );
    }

    #[test]
    fn a_tie_and_a_rail_without_a_leaf() {
        let mut b = Build::new();
        b.switch("leaf0");
        for name in ["a mlx5_0", "b mlx5_1"] {
            b.ca(name);
            b.cable("leaf0", name);
        }
        let got = rules(&b.fabric, None);
        assert_eq!(found(&got)[1], ("fabric.rail".into(), Severity::Warning, "leaf0".into()), "{got:#?}");
        assert!(got.iter().all(|n| n.finding.severity != Severity::Error), "a tied leaf judges none of its NICs");
        b.ca("c mlx5_0");
        b.cable("leaf0", "c mlx5_0");
        let got = rules(&b.fabric, None);
        let e = got.iter().find(|n| n.finding.severity == Severity::Error).unwrap();
        assert!(e.finding.message.ends_with("rail 1 has no leaf of its own (no leaf holds mostly rail-1 NICs)"), "{}", e.finding.message);
        // Nothing to judge is an error, not a pass.
        let mut b = Build::new();
        b.switch("leaf0");
        b.ca("hostA");
        b.cable("leaf0", "hostA");
        assert_eq!(found(&rules(&b.fabric, None)), vec![("fabric.rail".into(), Severity::Error, "rails".into())]);
    }

    #[test]
    fn rail_maps() {
        let m = parse_map("m.csv", "host,device,rail\ngpu01,mlx5_0,0\ngpu01,mlx5_3,1\ngpu01,mlx5_4,rail2\n").unwrap();
        assert_eq!((m.rails["gpu01 mlx5_3"], m.rails["gpu01 mlx5_4"]), (1, 2));
        for (text, line) in [
            ("host,device\ngpu01,mlx5_0\n", 1),
            ("host,device,rail\ngpu01,mlx5_0,x\n", 2),
            ("host,device,rail\ngpu01,mlx5_0,0\ngpu01,mlx5_0,1\n", 3),
            ("host,device,rail\n,mlx5_0,0\n", 2),
        ] {
            match parse_map("m.csv", text) {
                Err(CsvError::Syntax { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }
}
