//! Tiers and fat-tree rules on constructed fabrics.

use super::*;
use crate::fabric::discovery::fixture::{fat_tree, Build};

fn found(noted: &[Noted]) -> Vec<(String, Severity, String)> {
    noted.iter().map(|n| (n.finding.id.to_string(), n.finding.severity, n.finding.subject.to_string())).collect()
}

fn tier_of(b: &Build, name: &str) -> Placed {
    let index = Index::new(&b.fabric);
    tiers(&index)[&b.guid(name)].clone()
}

#[test]
fn two_tier_tree_is_read_and_passes() {
    let b = fat_tree(2, 4, 2, 3);
    assert_eq!(tier_of(&b, "leaf0"), Placed { tier: Tier::Leaf, reason: "3 host link(s)".into() });
    assert_eq!(tier_of(&b, "spine1"), Placed { tier: Tier::Spine, reason: "8 link(s) to 4 leaf switch(es) and no hosts".into() });
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty());
    // 3 hosts at 200 Gb/s over 4 uplinks at 200: 0.75:1.
    let index = Index::new(&b.fabric);
    let o = oversubscription(&index, &tiers(&index));
    assert_eq!(o.len(), 4);
    assert_eq!(o[&b.guid("leaf2")], Oversubscription { host_links: 3, host_gbps: 600.0, up_links: 4, up_gbps: 800.0 });
}

#[test]
fn a_leaf_missing_a_spine_is_named_once() {
    let mut b = Build::new();
    for s in ["spine0", "spine1"] {
        b.switch(s);
    }
    for l in 0..4 {
        let leaf = format!("leaf{l}");
        b.switch(&leaf);
        let h = format!("h{l}");
        b.ca(&h);
        b.cable(&leaf, &h);
        b.cable(&leaf, "spine0");
        if l != 2 {
            b.cable(&leaf, "spine1");
        }
    }
    let got = rules(&b.fabric, &FabricExpect::default(), None).0;
    assert_eq!(found(&got), vec![("fabric.design".into(), Severity::Error, "leaf2".into())], "{got:#?}");
    assert_eq!(
        got[0].finding.message,
        "leaf leaf2 has no link to spine spine1, which the other leaves of its tree reach with 1 link(s) each: a missing or unplugged uplink"
    );
}

#[test]
fn a_spine_cabled_to_few_leaves_is_named_as_the_spine() {
    let mut b = fat_tree(3, 4, 1, 1);
    // spine2 loses three of its four leaves: the spine is the odd one, not each leaf.
    for leaf in ["leaf1", "leaf2", "leaf3"] {
        let (l, s) = (b.guid(leaf), b.guid("spine2"));
        for n in b.fabric.nodes.iter_mut().filter(|n| n.guid == l || n.guid == s) {
            for p in n.ports.iter_mut() {
                if p.remote.is_some_and(|(g, _)| g == if n.guid == l { s } else { l }) {
                    p.remote = None;
                }
            }
        }
    }
    let got = rules(&b.fabric, &FabricExpect::default(), None).0;
    assert_eq!(found(&got), vec![("fabric.design".into(), Severity::Error, "spine2".into())], "{got:#?}");
    assert!(got[0].finding.message.contains("no link to 3 leaves of its tree (leaf1, leaf2, leaf3)"), "{}", got[0].finding.message);
}

#[test]
fn uneven_uplinks_are_a_warning() {
    let mut b = fat_tree(2, 3, 2, 1);
    b.cable("leaf1", "spine0"); // leaf1: 3 to spine0, 2 to spine1
    let got = rules(&b.fabric, &FabricExpect::default(), None).0;
    assert_eq!(found(&got), vec![("fabric.design".into(), Severity::Warning, "leaf1".into())], "{got:#?}");
    assert!(got[0].finding.message.contains("has 3 to spine0"), "{}", got[0].finding.message);
}

#[test]
fn a_leaf_without_uplinks() {
    let mut b = fat_tree(2, 2, 1, 1);
    b.switch("leaf9");
    b.ca("h9");
    b.cable("leaf9", "h9");
    let got = rules(&b.fabric, &FabricExpect::default(), None).0;
    assert_eq!(found(&got), vec![("fabric.design".into(), Severity::Error, "leaf9".into())], "{got:#?}");
    assert!(got[0].finding.message.contains("has no link to any spine"));
}

/// Two pods of 2 leaves x 2 spines, a host on each leaf; spine k of each pod goes up to core
/// k (planes).
fn two_pods() -> Build {
    let mut b = Build::new();
    for c in ["core0", "core1"] {
        b.switch(c);
    }
    for pod in 0..2 {
        for s in 0..2 {
            b.switch(&format!("p{pod}s{s}"));
            b.cable(&format!("p{pod}s{s}"), &format!("core{s}"));
        }
        for l in 0..2 {
            let leaf = format!("p{pod}l{l}");
            b.switch(&leaf);
            let h = format!("h{pod}{l}");
            b.ca(&h);
            b.cable(&leaf, &h);
            for s in 0..2 {
                b.cable(&leaf, &format!("p{pod}s{s}"));
            }
        }
    }
    b
}

#[test]
fn pods_are_judged_apart_and_cores_found() {
    let mut b = two_pods();
    assert_eq!(tier_of(&b, "core1"), Placed { tier: Tier::Core, reason: "2 link(s) to 2 spine(s), none to a leaf or host".into() });
    assert_eq!(tier_of(&b, "p1s0").tier, Tier::Spine);
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty(), "a pod's leaves need not reach the other pod's spines");
    // A spine that lost its core uplink: named as a spine without a link to any core.
    let (s, c) = (b.guid("p1s1"), b.guid("core1"));
    for n in b.fabric.nodes.iter_mut().filter(|n| n.guid == s || n.guid == c) {
        let other = if n.guid == s { c } else { s };
        for p in n.ports.iter_mut().filter(|p| p.remote.is_some_and(|(g, _)| g == other)) {
            p.remote = None;
        }
    }
    let got = rules(&b.fabric, &FabricExpect::default(), None).0;
    assert_eq!(found(&got), vec![("fabric.design".into(), Severity::Error, "p1s1".into())], "{got:#?}");
    assert!(got[0].finding.message.contains("spine p1s1 has no link to any core"), "{}", got[0].finding.message);
}

#[test]
fn a_spine_with_a_management_node_is_still_a_spine() {
    let mut b = fat_tree(2, 3, 1, 2);
    b.ca("ufm");
    b.cable("spine0", "ufm");
    let p = tier_of(&b, "spine0");
    assert_eq!(p.tier, Tier::Spine);
    assert!(p.reason.contains("and 1 host link(s): a management node?"), "{}", p.reason);
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty());
}

#[test]
fn switches_with_hosts_in_a_ring_are_all_leaves() {
    let mut b = Build::new();
    for l in 0..3 {
        b.switch(&format!("leaf{l}"));
        b.ca(&format!("h{l}"));
        b.cable(&format!("leaf{l}"), &format!("h{l}"));
    }
    for (x, y) in [(0, 1), (1, 2), (2, 0)] {
        for _ in 0..2 {
            b.cable(&format!("leaf{x}"), &format!("leaf{y}"));
        }
    }
    for l in 0..3 {
        assert_eq!(tier_of(&b, &format!("leaf{l}")).tier, Tier::Leaf);
    }
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty());
}

#[test]
fn lone_switches_and_unknowns() {
    let mut b = Build::new();
    b.switch("only");
    b.ca("h");
    b.cable("only", "h");
    b.switch("island");
    assert_eq!(tier_of(&b, "only").tier, Tier::Leaf);
    assert_eq!(tier_of(&b, "island"), Placed { tier: Tier::Unknown, reason: "no hosts, and no link to a leaf or a spine".into() });
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty());
}

#[test]
fn oversubscription_against_the_expectation() {
    // 6 hosts over 2 uplinks: 3:1 on every leaf.
    let b = fat_tree(2, 2, 1, 6);
    let mut expect = FabricExpect::default();
    expect.set("oversubscription=3").unwrap();
    let got = rules(&b.fabric, &expect, None).0;
    assert!(got.iter().all(|n| n.finding.severity == Severity::Info) && got.len() == 2, "{got:#?}");
    assert_eq!(
        got[0].finding.message,
        "leaf leaf0 oversubscription 3.00:1 (host-facing 1200 Gb/s over 6 link(s), spine-facing 400 Gb/s over 2 link(s))"
    );
    expect.set("oversubscription=2:1").unwrap();
    let got = rules(&b.fabric, &expect, None).0;
    assert_eq!(
        found(&got),
        vec![("fabric.design".into(), Severity::Warning, "leaf0".into()), ("fabric.design".into(), Severity::Warning, "leaf1".into())]
    );
    assert!(got[0].finding.message.contains("above the expected 2:1"), "{}", got[0].finding.message);
}

/// Every Quantum switch holds a SHARP Aggregation Node, a CA cabled to its last port and
/// described "Mellanox Technologies Aggregation Node" (NVIDIA Selene's fabrics,
/// tests/fixtures/wild-fabrics): it is no host, so a spine stays a spine with no word of a
/// management node, and a leaf's oversubscription counts its hosts alone.
#[test]
fn aggregation_nodes_are_no_hosts() {
    let mut b = fat_tree(2, 4, 2, 3);
    let switches: Vec<Guid> = b.fabric.nodes.iter().filter(|n| n.node_type == NodeType::Switch).map(|n| n.guid).collect();
    for sw in switches {
        let an = b.ca("Mellanox Technologies Aggregation Node");
        b.link(sw, an);
    }
    assert_eq!(tier_of(&b, "leaf0"), Placed { tier: Tier::Leaf, reason: "3 host link(s)".into() });
    assert_eq!(tier_of(&b, "spine1"), Placed { tier: Tier::Spine, reason: "8 link(s) to 4 leaf switch(es) and no hosts".into() });
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty());
    let index = Index::new(&b.fabric);
    let o = oversubscription(&index, &tiers(&index));
    assert_eq!(o[&b.guid("leaf2")], Oversubscription { host_links: 3, host_gbps: 600.0, up_links: 4, up_gbps: 800.0 });
}

/// A leaf whose hosts are not plugged in yet (NVIDIA Selene's storage fabric has four) is
/// cabled to its pod's spines as the pod's leaves are: a leaf without hosts, not a core. Taken
/// for a core it joined the cores' planes into one group, and every core was blamed for the
/// spines of the other plane.
#[test]
fn a_leaf_without_hosts_yet_is_a_leaf_not_a_core() {
    // Pod 1 has a third leaf, p1l2, with no host.
    let mut b = two_pods();
    b.switch("p1l2");
    for s in 0..2 {
        b.cable("p1l2", &format!("p1s{s}"));
    }
    assert_eq!(tier_of(&b, "p1l2"), Placed { tier: Tier::Leaf, reason: "no hosts yet; its 2 spine link(s) reach spines leaf p1l0 reaches".into() });
    assert_eq!(tier_of(&b, "core0").tier, Tier::Core);
    assert!(rules(&b.fabric, &FabricExpect::default(), None).0.is_empty(), "{:#?}", rules(&b.fabric, &FabricExpect::default(), None));
    // A core cabled to one spine of each pod stays a core; one cabled to a single spine is not a leaf either.
    b.switch("core2");
    b.cable("core2", "p0s0");
    b.cable("core2", "p1s0");
    assert_eq!(tier_of(&b, "core2").tier, Tier::Core);
}

/// NVIDIA Selene's storage fabric as ibnetdiscover printed it in 2021
/// (tests/fixtures/wild-fabrics/nvidia-selene-storage-hdr-edr.net): a three-tier fat tree of
/// 64 leaves (four without hosts yet), 64 spines in four pods and 32 cores in two planes (odd
/// and even spines). Its tiers are read right, and the design rules name the seven cables
/// missing from that snapshot (four leaf uplinks, three spine-core links: each checked by hand
/// against the file) and nothing else. Before 0.5's empty-leaf rule, 36 more errors blamed
/// every core for the other plane's spines.
#[test]
fn nvidia_selene_storage_fabric_names_its_seven_missing_cables_and_nothing_else() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wild-fabrics/nvidia-selene-storage-hdr-edr.net");
    let topology = crate::fabric::design::topology::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    let b = crate::fabric::discovery::fixture::from_topology(&topology);
    let index = Index::new(&b.fabric);
    let placed = tiers(&index);
    let count = |t: Tier| placed.values().filter(|p| p.tier == t).count();
    assert_eq!((count(Tier::Leaf), count(Tier::Spine), count(Tier::Core), count(Tier::Unknown)), (64, 64, 32, 0));
    let empty: Vec<&Placed> = placed.values().filter(|p| p.reason.starts_with("no hosts yet")).collect();
    assert_eq!(empty.len(), 4, "{empty:#?}");
    let got = rules(&b.fabric, &FabricExpect::default(), None).0;
    let short = |s: &str| s.trim_start_matches("MF0;").trim_end_matches(":MQM8700/U1").to_string();
    let mut named: Vec<(String, Severity)> = got.iter().map(|n| (short(&n.finding.subject.to_string()), n.finding.severity)).collect();
    named.sort();
    let want = ["SLG01-09", "SLG01-10", "SLG01-13", "SLG02-07", "SSPINE2-02", "SSPINE3-03", "SSPINE4-14"];
    assert_eq!(named, want.iter().map(|s| (s.to_string(), Severity::Error)).collect::<Vec<_>>(), "{got:#?}");
    let spine = got.iter().find(|n| n.finding.subject.to_string().contains("SSPINE4-14")).unwrap();
    assert!(spine.finding.message.contains("has no link to core MF0;SCORE2-004:MQM8700/U1"), "{}", spine.finding.message);
}

/// NVIDIA's UFM lab as ibnetdiscover printed it in 2021
/// (tests/fixtures/wild-fabrics/nvidia-ufm-lab-hdr-fdr-loopbacks.net): two switches with hosts,
/// joined by one cable, one with two loopback cables, the other with its SHARP Aggregation
/// Node. Both are leaves (the Aggregation Node is no host, a loopback no link to another
/// switch), joined evenly: the design rules say nothing.
#[test]
fn nvidia_ufm_lab_two_leaves_with_loopbacks_pass() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wild-fabrics/nvidia-ufm-lab-hdr-fdr-loopbacks.net");
    let topology = crate::fabric::design::topology::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    let b = crate::fabric::discovery::fixture::from_topology(&topology);
    let placed = tiers(&Index::new(&b.fabric));
    let reasons: Vec<(Tier, &str)> = placed.values().map(|p| (p.tier, p.reason.as_str())).collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons.contains(&(Tier::Leaf, "2 host link(s)")) && reasons.contains(&(Tier::Leaf, "10 host link(s)")), "{reasons:?}");
    assert_eq!(rules(&b.fabric, &FabricExpect::default(), None), (vec![], Cabling::Even));
}

/// NVIDIA Selene's compute fabric, as ibnetdiscover printed it in 2021
/// (tests/fixtures/wild-fabrics/nvidia-selene-compute-hdr.net), named by description as a
/// `--plan` CSV names nodes.
fn selene_compute_plan() -> Topology {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wild-fabrics/nvidia-selene-compute-hdr.net");
    let mut plan = crate::fabric::design::topology::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    plan.nodes.values_mut().for_each(|n| n.key.guid = None);
    plan
}

/// A plan is the design. Selene's compute fabric holds management leaves and spines cabled
/// thinner than the compute pods on purpose (MLG01-01 on one spine, MSPINE3-01 to one plane's
/// cores by two cables), and its snapshot lacks some single cables: without a plan the rules
/// blame all of them (30 findings). Given its own cabling as the plan, each is said as info,
/// "as planned", and nothing above info is left. A cable the plan has and the fabric lacks is
/// still named, and only it.
#[test]
fn a_plan_settles_the_cabling_it_has_and_nothing_else() {
    let plan = selene_compute_plan();
    let live = crate::fabric::discovery::fixture::from_topology(&plan);
    let above_info = |got: &[Noted]| -> Vec<(String, Severity)> {
        got.iter().filter(|n| n.finding.severity != Severity::Info).map(|n| (n.finding.subject.to_string(), n.finding.severity)).collect()
    };
    let (without, cabling) = rules(&live.fabric, &FabricExpect::default(), None);
    assert_eq!(above_info(&without).len(), 30, "{without:#?}");
    assert_eq!(cabling, Cabling::Uneven);
    let (with, cabling) = rules(&live.fabric, &FabricExpect::default(), Some(&plan));
    assert_eq!(cabling, Cabling::UnevenAsPlanned, "a route imbalance it causes is then expected");
    assert!(above_info(&with).is_empty(), "{:#?}", above_info(&with));
    assert_eq!(with.len(), 30, "each deviation still said, as info: {with:#?}");
    let mlg = with.iter().find(|n| n.finding.subject == "MF0;MLG01-01:MQM8700/U1").expect("the management leaf");
    assert!(mlg.finding.message.starts_with("as planned: leaf MF0;MLG01-01:MQM8700/U1 has no link to spine"), "{}", mlg.finding.message);
    assert!(mlg.finding.remedy.starts_with("none needed"), "{}", mlg.finding.remedy);

    // One of compute leaf LG01-02's two cables to a spine unplugged: the plan has it.
    let mut unplugged = plan.clone();
    let leaf = plan.nodes.iter().find(|(_, n)| n.key.description == "MF0;LG01-02:MQM8700/U1").map(|(id, _)| id.clone()).unwrap();
    let is_switch = |id: &str| plan.nodes[id].is_switch;
    let cable = unplugged.links.iter().position(|l| (l.a.0 == leaf && is_switch(&l.b.0)) || (l.b.0 == leaf && is_switch(&l.a.0))).unwrap();
    unplugged.links.remove(cable);
    let live = crate::fabric::discovery::fixture::from_topology(&unplugged);
    let got = rules(&live.fabric, &FabricExpect::default(), Some(&plan)).0;
    assert_eq!(above_info(&got), vec![("MF0;LG01-02:MQM8700/U1".to_string(), Severity::Warning)], "{got:#?}");
    let fault = got.iter().find(|n| n.finding.severity == Severity::Warning).unwrap();
    assert!(fault.finding.message.starts_with("uneven uplinks: leaf MF0;LG01-02:MQM8700/U1 has 1 to MF0;CSPINE1-"), "{}", fault.finding.message);
}

/// A Dragonfly+ (Shpiner et al., "Dragonfly+: Low Cost Topology for Scaling Datacenters",
/// 2017): `groups` two-level trees of 2 leaves and 2 spines, spine s of each group cabled to
/// spine s of every other group (its global links). No cores: the groups meet at the spines.
fn dragonfly(groups: usize, skip: Option<(usize, usize)>) -> Build {
    let mut global = Vec::new();
    for g in 0..groups {
        for h in g + 1..groups {
            for s in 0..2 {
                if skip != Some((g, h)) || s != 0 {
                    global.push((format!("g{g}spine{s}"), format!("g{h}spine{s}")));
                }
            }
        }
    }
    dragonfly_cabled(groups, &global)
}

/// `groups` groups of 2 leaves (a host each) and 2 spines, the spines' links to other groups'
/// spines as `global` lists them.
fn dragonfly_cabled(groups: usize, global: &[(String, String)]) -> Build {
    let mut b = Build::new();
    for g in 0..groups {
        for s in 0..2 {
            b.switch(&format!("g{g}spine{s}"));
        }
        for l in 0..2 {
            let leaf = format!("g{g}leaf{l}");
            b.switch(&leaf);
            let host = format!("g{g}l{l} mlx5_0");
            b.ca(&host);
            b.cable(&leaf, &host);
            for s in 0..2 {
                b.cable(&leaf, &format!("g{g}spine{s}"));
            }
        }
    }
    for (x, y) in global {
        b.cable(x, y);
    }
    b
}

/// A healthy Dragonfly+ is no broken fat tree: its groups are separate trees to the rules, and
/// its global links are even. One global link missing is named by both its ends, each naming
/// the other; with a plan that lacks it too, it is as planned.
#[test]
fn dragonfly_plus_passes_and_a_missing_global_link_is_named() {
    let b = dragonfly(4, None);
    assert_eq!(tier_of(&b, "g2spine1").tier, Tier::Spine);
    assert_eq!(rules(&b.fabric, &FabricExpect::default(), None), (vec![], Cabling::Even));

    let b = dragonfly(4, Some((0, 1)));
    let (got, cabling) = rules(&b.fabric, &FabricExpect::default(), None);
    assert_eq!(cabling, Cabling::Uneven);
    let named: Vec<(String, Severity)> = got.iter().map(|n| (n.finding.subject.to_string(), n.finding.severity)).collect();
    assert_eq!(named, vec![("g0spine0".to_string(), Severity::Warning), ("g1spine0".to_string(), Severity::Warning)], "{got:#?}");
    assert_eq!(
        got[0].finding.message,
        "spine g0spine0 has 2 link(s) to other spines, where the spines of this fabric have 3 each: a link between them missing \
         (a Dragonfly+ global link, a ring's); g1spine0 is short too and has no link to it: likely that cable"
    );

    // The same fabric as its own plan (a build with that link left out on purpose).
    let plan = plan_of(&b);
    let (got, cabling) = rules(&b.fabric, &FabricExpect::default(), Some(&plan));
    assert_eq!(cabling, Cabling::UnevenAsPlanned);
    assert!(got.iter().all(|n| n.finding.severity == Severity::Info && n.finding.message.starts_with("as planned: spine g")), "{got:#?}");
}

/// Two global cables swapped between groups (0-1 and 2-3 become 0-2 and 1-3): every spine
/// keeps its count, so the spine rule is silent; the two group pairs left with one link where
/// the even share is two are named. A pair left with none is named even where the spine rule
/// names its short spines, and says its traffic takes two hops. A design whose links do not
/// divide evenly over the groups passes.
#[test]
fn a_global_link_on_the_wrong_group_is_named_by_its_groups() {
    let healthy = dragonfly(4, None);
    let swap = |from: [(&str, &str); 2], to: [(&str, &str); 2]| -> Vec<(String, String)> {
        let links = Index::new(&healthy.fabric).links;
        let mut global: Vec<(String, String)> = links
            .iter()
            .map(|l| (l.a.node.description.clone(), l.b.node.description.clone()))
            .filter(|(a, b)| a.contains("spine") && b.contains("spine"))
            .filter(|(a, b)| !from.iter().any(|(x, y)| (a == x && b == y) || (a == y && b == x)))
            .collect();
        global.extend(to.iter().map(|(x, y)| (x.to_string(), y.to_string())));
        global
    };
    let global = swap([("g0spine0", "g1spine0"), ("g2spine0", "g3spine0")], [("g0spine0", "g2spine0"), ("g1spine0", "g3spine0")]);
    let b = dragonfly_cabled(4, &global);
    let (got, cabling) = rules(&b.fabric, &FabricExpect::default(), None);
    assert_eq!(cabling, Cabling::Uneven);
    let w = |s: &str| ("fabric.design".to_string(), Severity::Warning, s.to_string());
    assert_eq!(found(&got), vec![w("g0spine0/g0spine1 <-> g1spine0/g1spine1"), w("g2spine0/g2spine1 <-> g3spine0/g3spine1")], "{got:#?}");
    assert_eq!(
        got[0].finding.message,
        "the groups of spines g0spine0/g0spine1 and g1spine0/g1spine1 have 1 global link(s) between them, where a group's usual 6 \
         global links, spread over the 3 other groups, give every pair at least 2: a global link missing, or plugged into another group's spine"
    );
    // The fabric as its own plan: as planned.
    let (got, cabling) = rules(&b.fabric, &FabricExpect::default(), Some(&plan_of(&b)));
    assert_eq!(cabling, Cabling::UnevenAsPlanned);
    assert!(got.iter().all(|n| n.finding.severity == Severity::Info && n.finding.message.starts_with("as planned: the groups")), "{got:#?}");

    // Both of 0-1's cables on other groups: no direct link left.
    let global = swap([("g0spine0", "g1spine0"), ("g0spine1", "g1spine1")], [("g0spine0", "g2spine0"), ("g1spine1", "g3spine1")]);
    let (got, _) = rules(&dragonfly_cabled(4, &global).fabric, &FabricExpect::default(), None);
    // The spine rule names the two spines left short; the group pair is said too, as no link
    // joins the groups at all.
    let pair = w("g0spine0/g0spine1 <-> g1spine0/g1spine1");
    assert_eq!(found(&got), vec![w("g0spine1"), w("g1spine0"), pair], "{got:#?}");
    let pair = &got[2];
    assert!(pair.finding.message.contains("have 0 global link(s)"), "{}", pair.finding.message);
    assert!(pair.finding.message.ends_with("their traffic takes two global hops, through a third group"), "{}", pair.finding.message);

    // A healthy design that does not divide evenly: 5 groups, 3 global links a spine (6 a group
    // over 4 others): neighbours round the ring get 2 links, groups two apart 1.
    let mut global = Vec::new();
    for g in 0..5 {
        let (next, after) = ((g + 1) % 5, (g + 2) % 5);
        global.push((format!("g{g}spine0"), format!("g{next}spine0")));
        global.push((format!("g{g}spine1"), format!("g{after}spine1")));
        global.push((format!("g{g}spine0"), format!("g{next}spine1")));
    }
    let b = dragonfly_cabled(5, &global);
    let (got, _) = rules(&b.fabric, &FabricExpect::default(), None);
    assert_eq!(found(&got), vec![], "{got:#?}");
}

/// Five switches with hosts in a daisy chain: the two ends have one link to the chain where the
/// others have two, and are named (as a broken ring's would be); given the chain as its plan,
/// they are as planned.
#[test]
fn a_daisy_chains_ends_are_short_unless_planned() {
    let mut b = Build::new();
    for s in 0..5 {
        let sw = format!("sw{s}");
        b.switch(&sw);
        let host = format!("h{s} mlx5_0");
        b.ca(&host);
        b.cable(&sw, &host);
        if s > 0 {
            b.cable(&format!("sw{}", s - 1), &sw);
        }
    }
    assert_eq!(tier_of(&b, "sw2").tier, Tier::Leaf);
    let (got, _) = rules(&b.fabric, &FabricExpect::default(), None);
    assert_eq!(found(&got).into_iter().map(|f| f.2).collect::<Vec<_>>(), ["sw0", "sw4"], "{got:#?}");
    let plan = plan_of(&b);
    let (got, cabling) = rules(&b.fabric, &FabricExpect::default(), Some(&plan));
    assert_eq!(cabling, Cabling::UnevenAsPlanned);
    assert!(got.iter().all(|n| n.finding.severity == Severity::Info), "{got:#?}");
}

/// A fabric's cabling as a `--plan` CSV names it (by description), read back as the plan.
fn plan_of(b: &Build) -> Topology {
    let mut text = String::from("a_node,a_port,b_node,b_port\n");
    for link in &Index::new(&b.fabric).links {
        text += &format!("{},{},{},{}\n", link.a.node.description, link.a.port.number, link.b.node.description, link.b.port.number);
    }
    crate::fabric::design::plan::parse("plan.csv", &text).unwrap()
}
