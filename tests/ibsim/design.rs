//! Fabric design (#32) on a simulated rail-optimized fabric: 2 spines, 4 leaves (leaf k is
//! rail k's), 4 hosts of 4 NICs each (`hostH mlx5_K` on leaf K), as rdma-ndd describes them.
//! Healthy, it passes `fabric --rails --plan plan.csv`; each fault is named and nothing else
//! is blamed (the simulator's enabled-below-supported speed warnings aside).

use crate::harness::{errors, finding, findings, Sim};

const HOSTS: usize = 4;
const RAILS: usize = 4;
const SPINES: usize = 2;

/// What to break in the rail fabric.
#[derive(Default)]
struct Faults {
    /// host1 mlx5_1 cabled to leaf0[7] instead of leaf1[1].
    wrong_rail: bool,
    /// leaf3 without its cable to spine1.
    missing_spine: bool,
    /// host4's NICs described as host3's (a cloned image), and two NICs with the adapter's default description.
    cloned: bool,
}

fn nic(h: usize, k: usize, f: &Faults) -> String {
    let shown = if f.cloned && h == 4 { 3 } else { h };
    format!("host{shown} mlx5_{k}")
}

/// Where NIC k of host h is cabled: (leaf, port).
fn seat(h: usize, k: usize, f: &Faults) -> (usize, usize) {
    if f.wrong_rail && h == 1 && k == 1 {
        (0, 7)
    } else {
        (k, h)
    }
}

fn rail_net(f: &Faults) -> String {
    let mut net = String::from("width=15\n\n");
    for h in 1..=HOSTS {
        for k in 0..RAILS {
            let (leaf, port) = seat(h, k, f);
            net += &format!("Hca 1 \"h{h}-{k}\" # \"{}\"\n[1] \"leaf{leaf}\"[{port}]\n\n", nic(h, k, f));
        }
    }
    if f.cloned {
        for (i, leaf) in [(5, 0), (6, 1)] {
            net += &format!("Hca 1 \"h{i}-0\" # \"MT4129 ConnectX7 Mellanox Technologies\"\n[1] \"leaf{leaf}\"[8]\n\n");
        }
    }
    for l in 0..RAILS {
        net += &format!("Switch 12 \"leaf{l}\"\n");
        for h in 1..=HOSTS {
            for k in 0..RAILS {
                let (leaf, port) = seat(h, k, f);
                if leaf == l {
                    net += &format!("[{port}] \"h{h}-{k}\"[1]\n");
                }
            }
        }
        if f.cloned && l < 2 {
            net += &format!("[8] \"h{}-0\"[1]\n", l + 5);
        }
        for s in 0..SPINES {
            if !(f.missing_spine && l == 3 && s == 1) {
                net += &format!("[{}] \"spine{s}\"[{}]\n", 5 + s, l + 1);
            }
        }
        net += "\n";
    }
    for s in 0..SPINES {
        net += &format!("Switch 12 \"spine{s}\"\n");
        for l in 0..RAILS {
            if !(f.missing_spine && l == 3 && s == 1) {
                net += &format!("[{}] \"leaf{l}\"[{}]\n", l + 1, 5 + s);
            }
        }
        net += "\n";
    }
    net
}

/// `net` as a Quantum fabric cables it: every switch's SHARP Aggregation Node (a CA inside
/// the switch, all described "Mellanox Technologies Aggregation Node", as NVIDIA Selene's
/// fabrics show: tests/fixtures/wild-fabrics) on its last port, 12.
fn with_aggregation_nodes(net: &str) -> String {
    let mut out = String::new();
    let mut nodes = String::new();
    for line in net.lines() {
        out += line;
        out += "\n";
        if let Some(name) = line.strip_prefix("Switch 12 \"").and_then(|r| r.strip_suffix('"')) {
            out += &format!("[12] \"an-{name}\"[1]\n");
            nodes += &format!("Hca 1 \"an-{name}\" # \"Mellanox Technologies Aggregation Node\"\n[1] \"{name}\"[12]\n\n");
        }
    }
    out + "\n" + &nodes
}

/// The healthy fabric's cabling plan, descriptions quoted as a spreadsheet writes them.
fn plan_csv() -> String {
    let f = Faults::default();
    let mut csv = String::from("a_node,a_port,b_node,b_port,cable\r\n");
    for l in 0..RAILS {
        for h in 1..=HOSTS {
            csv += &format!("leaf{l},{h},\"{}\",1,C{l}{h}\r\n", nic(h, l, &f));
        }
        for s in 0..SPINES {
            csv += &format!("leaf{l},{},spine{s},{},\"uplink, {l}-{s}\"\r\n", 5 + s, l + 1);
        }
    }
    csv
}

/// The findings other than the simulator's speed warnings.
fn blamed(doc: &serde_json::Value) -> Vec<(String, String, String)> {
    findings(doc).into_iter().filter(|f| !(f.0 == "fabric.link.speed" && f.1 == "warning")).collect()
}

#[test]
fn healthy_rail_fabric_passes_rails_and_plan() {
    let mut sim = Sim::start("rails-healthy", &rail_net(&Faults::default()));
    sim.start_sm_and_wait();
    std::fs::write(sim.dir.join("plan.csv"), plan_csv()).unwrap();
    let out = sim.fabcheck(&["fabric", "--json", "--rails", "--plan", &sim.path("plan.csv")]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{:#?}", blamed(&doc));
    assert_eq!(doc["nodes"].as_array().unwrap().len(), HOSTS * RAILS + RAILS + SPINES);
    // Only the warning that the rails were read from descriptions.
    assert_eq!(blamed(&doc), vec![("fabric.rail".into(), "warning".into(), "rails".into())]);
    assert!(finding(&doc, "fabric.rail", "rails")["message"].as_str().unwrap().contains("for 16 of 16 NICs"));
    // Tiers in the JSON, with their reasons and the leaves' oversubscription (4 hosts, 2 uplinks).
    for node in doc["nodes"].as_array().unwrap() {
        let name = node["description"].as_str().unwrap();
        match node["type"].as_str().unwrap() {
            "switch" if name.starts_with("leaf") => {
                assert_eq!((node["tier"].as_str(), node["tier_reason"].as_str()), (Some("leaf"), Some("4 host link(s)")), "{node}");
                assert_eq!(node["oversubscription"].as_f64(), Some(2.0), "{node}");
            }
            "switch" => assert_eq!(
                (node["tier"].as_str(), node["tier_reason"].as_str()),
                (Some("spine"), Some("4 link(s) to 4 leaf switch(es) and no hosts"))
            ),
            _ => assert!(node.get("tier").is_none(), "{node}"),
        }
    }
    // A rail map instead of the descriptions: no warning at all.
    let mut map = String::from("host,device,rail\n");
    for h in 1..=HOSTS {
        for k in 0..RAILS {
            map += &format!("host{h},mlx5_{k},{k}\n");
        }
    }
    std::fs::write(sim.dir.join("rails.csv"), map).unwrap();
    let doc = sim.json(&["--rail-map", &sim.path("rails.csv"), "--plan", &sim.path("plan.csv"), "--expect", "oversubscription=2:1"]);
    let infos: Vec<_> = blamed(&doc).into_iter().filter(|f| f.1 == "info").collect();
    assert_eq!(infos.len(), RAILS, "one oversubscription per leaf: {:#?}", blamed(&doc));
    assert!(blamed(&doc).iter().all(|f| f.1 == "info"), "{:#?}", blamed(&doc));
    assert!(finding(&doc, "fabric.design", "leaf2")["message"].as_str().unwrap().contains("2.00:1"));
    let doc = sim.json(&["--expect", "oversubscription=1.5"]);
    assert_eq!(blamed(&doc).iter().filter(|f| f.0 == "fabric.design" && f.1 == "warning").count(), RAILS);
    // The human form says each switch's tier.
    let text = String::from_utf8_lossy(&sim.fabcheck(&["fabric"]).stdout).to_string();
    assert!(
        text.contains("tier leaf (4 host link(s), oversubscription 2.00:1)") && text.contains("tier spine (4 link(s) to 4 leaf switch(es)"),
        "{text}"
    );

    // The plan with one cable in the wrong row: host1 mlx5_2 said to be on leaf2[7].
    std::fs::write(sim.dir.join("miswired.csv"), plan_csv().replace("leaf2,1,\"host1 mlx5_2\"", "leaf2,7,\"host1 mlx5_2\"")).unwrap();
    let out = sim.fabcheck(&["fabric", "--json", "--plan", &sim.path("miswired.csv")]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(errors(&doc), vec![("fabric.topology.miswired".into(), "error".into(), "leaf2[7] <-> host1 mlx5_2[1]".into())]);
    assert_eq!(
        finding(&doc, "fabric.topology.miswired", "leaf2[7] <-> host1 mlx5_2[1]")["message"],
        "expected this cable, but host1 mlx5_2[1] is cabled to leaf2[1]"
    );
    assert!(blamed(&doc).iter().all(|f| f.1 == "error"), "the moved cable is explained, not extra: {:#?}", blamed(&doc));
    // A plan missing a cable's row: that cable is extra (a warning), as with --topology.
    std::fs::write(sim.dir.join("short.csv"), plan_csv().replace("leaf3,4,\"host4 mlx5_3\",1,C34\r\n", "")).unwrap();
    let doc = sim.json(&["--plan", &sim.path("short.csv")]);
    assert_eq!(blamed(&doc), vec![("fabric.topology.extra".into(), "warning".into(), "leaf3[4] <-> host4 mlx5_3[1]".into())]);
}

#[test]
fn faulted_rail_fabric_names_each_fault_and_nothing_else() {
    let faults = Faults { wrong_rail: true, missing_spine: true, cloned: true };
    let mut sim = Sim::start("rails-faulted", &rail_net(&faults));
    sim.start_sm_and_wait();
    let out = sim.fabcheck(&["fabric", "--json", "--rails"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{:#?}", blamed(&doc));
    // Info blames nothing: a leaf's uplink balance where a spine link is missing is said as info
    // (fabric.design already names the missing link).
    let mut got: Vec<_> = blamed(&doc).into_iter().filter(|f| f.1 != "info").collect();
    got.sort();
    let w = |id: &str, subject: &str| (id.to_string(), "warning".to_string(), subject.to_string());
    let mut want = vec![
        ("fabric.design".to_string(), "error".to_string(), "leaf3".to_string()),
        ("fabric.rail".to_string(), "error".to_string(), "host1 mlx5_1".to_string()),
        w("fabric.duplicate", "MT4129 ConnectX7 Mellanox Technologies"),
        w("fabric.rail", "rails"),
    ];
    for k in 0..RAILS {
        want.push(w("fabric.duplicate", &format!("host3 mlx5_{k}")));
    }
    want.sort();
    assert_eq!(got, want);
    let rail = finding(&doc, "fabric.rail", "host1 mlx5_1")["message"].as_str().unwrap().to_string();
    assert_eq!(
        rail,
        "host1 mlx5_1[1] (rail 1, from node descriptions (HOST mlx5_K is rail K)) is cabled to leaf0[7], a leaf of rail 0; rail 1's leaf group is leaf1"
    );
    let design = finding(&doc, "fabric.design", "leaf3")["message"].as_str().unwrap().to_string();
    assert!(design.contains("leaf leaf3 has no link to spine spine1"), "{design}");
    let cloned = finding(&doc, "fabric.duplicate", "host3 mlx5_2")["message"].as_str().unwrap().to_string();
    assert!(
        cloned.starts_with("2 NICs have the node description \"host3 mlx5_2\"") && cloned.contains("on leaf2[3]") && cloned.contains("on leaf2[4]"),
        "{cloned}"
    );
    let default = finding(&doc, "fabric.duplicate", "MT4129 ConnectX7 Mellanox Technologies")["message"].as_str().unwrap().to_string();
    assert!(default.starts_with("2 NIC(s) have the adapter's default node description") && default.contains("rdma-ndd is not running"), "{default}");
}

/// The healthy rail fabric with an Aggregation Node in every switch, as on Quantum: the ANs
/// are no hosts (a spine stays a spine, in the design rules and in the routes' tree; a leaf's
/// oversubscription counts its NICs alone) and no NICs (no cloned or default description, no
/// rail to miss).
#[test]
fn aggregation_nodes_are_neither_hosts_nor_nics() {
    let mut sim = Sim::start("rails-sharp", &with_aggregation_nodes(&rail_net(&Faults::default())));
    sim.start_sm_and_wait();
    let out = sim.fabcheck(&["fabric", "--json", "--rails"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{:#?}", blamed(&doc));
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), HOSTS * RAILS + 2 * (RAILS + SPINES), "every switch with its AN: {doc}");
    assert_eq!(blamed(&doc), vec![("fabric.rail".into(), "warning".into(), "rails".into())]);
    assert!(finding(&doc, "fabric.rail", "rails")["message"].as_str().unwrap().contains("for 16 of 16 NICs"));
    for node in nodes.iter().filter(|n| n["type"] == "switch") {
        let want = if node["description"].as_str().unwrap().starts_with("leaf") {
            ("leaf", "4 host link(s)")
        } else {
            ("spine", "4 link(s) to 4 leaf switch(es) and no hosts")
        };
        assert_eq!((node["tier"].as_str().unwrap(), node["tier_reason"].as_str().unwrap()), want, "{node}");
    }
    // The routes' tree too: two tiers, and only the leaves have uplinks (an AN made every
    // spine a leaf there: a 1-tier tree whose spines' leaf links were "uplinks").
    let routes = &doc["routes"];
    assert_eq!(routes["depth"], 2, "{routes}");
    let with_uplinks: Vec<&str> = routes["uplinks"].as_array().unwrap().iter().map(|u| u["leaf"].as_str().unwrap()).collect();
    assert_eq!(with_uplinks.len(), RAILS, "{routes}");
    assert!(with_uplinks.iter().all(|l| l.starts_with("leaf")), "{routes}");
}

/// The healthy rail fabric with a fifth leaf whose hosts are not plugged in yet, cabled to both
/// spines as the others are: a leaf (`no hosts yet`), not a core, and nothing is blamed. Read as
/// a core, such leaves made NVIDIA Selene's storage fabric blame every core (fabric/design/tiers.rs).
#[test]
fn a_leaf_without_hosts_yet_is_a_leaf() {
    let mut net = rail_net(&Faults::default());
    net += "Switch 12 \"leaf9\"\n[5] \"spine0\"[9]\n[6] \"spine1\"[9]\n\n";
    let net = net
        .replace("Switch 12 \"spine0\"\n", "Switch 12 \"spine0\"\n[9] \"leaf9\"[5]\n")
        .replace("Switch 12 \"spine1\"\n", "Switch 12 \"spine1\"\n[9] \"leaf9\"[6]\n");
    let mut sim = Sim::start("rails-empty-leaf", &net);
    sim.start_sm_and_wait();
    let out = sim.fabcheck(&["fabric", "--json", "--rails"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{:#?}", blamed(&doc));
    assert_eq!(blamed(&doc), vec![("fabric.rail".into(), "warning".into(), "rails".into())]);
    let leaf9 = doc["nodes"].as_array().unwrap().iter().find(|n| n["description"] == "leaf9").expect("leaf9 discovered");
    assert_eq!(leaf9["tier"], "leaf", "{leaf9}");
    assert!(leaf9["tier_reason"].as_str().unwrap().starts_with("no hosts yet; its 2 spine link(s) reach spines leaf "), "{leaf9}");
}

/// A leaf on one spine by design (a management leaf), and a plan that cables it so: `fabric
/// --plan` passes and says the deviation as info, "as planned". The healthy plan, which cables
/// it to both spines, names the missing cable by its ports and by the design rule.
#[test]
fn a_plan_is_the_design() {
    let faults = Faults { missing_spine: true, ..Faults::default() };
    let mut sim = Sim::start("rails-planned", &rail_net(&faults));
    sim.start_sm_and_wait();
    let thin: String = plan_csv().lines().filter(|row| !row.starts_with("leaf3,6,spine1,4,")).map(|row| format!("{row}\r\n")).collect();
    assert_eq!(thin.lines().count() + 1, plan_csv().lines().count(), "the plan without leaf3's cable to spine1");
    std::fs::write(sim.dir.join("thin.csv"), thin).unwrap();
    std::fs::write(sim.dir.join("plan.csv"), plan_csv()).unwrap();

    let out = sim.fabcheck(&["fabric", "--json", "--plan", &sim.path("thin.csv")]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{:#?}", blamed(&doc));
    let said = finding(&doc, "fabric.design", "leaf3");
    assert_eq!(said["severity"], "info", "{said}");
    assert!(said["message"].as_str().unwrap().starts_with("as planned: leaf leaf3 has no link to spine spine1"), "{said}");
    // The other leaves reach leaf3's hosts through spine0 alone: each such imbalance is the
    // plan's, said as info too.
    for (id, severity, subject) in blamed(&doc).into_iter().filter(|f| f.0 != "fabric.design") {
        assert_eq!((id.as_str(), severity.as_str()), ("fabric.route", "info"), "{subject}");
        let message = finding(&doc, "fabric.route", &subject)["message"].as_str().unwrap().to_string();
        assert!(message.ends_with("(fabric.design says them as planned)"), "{message}");
    }

    let out = sim.fabcheck(&["fabric", "--json", "--plan", &sim.path("plan.csv")]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{:#?}", blamed(&doc));
    let e = |id: &str, subject: &str| (id.to_string(), "error".to_string(), subject.to_string());
    assert_eq!(errors(&doc), vec![e("fabric.link.down", "leaf3[6] <-> spine1[4]"), e("fabric.design", "leaf3")], "{:#?}", blamed(&doc));
    let said = finding(&doc, "fabric.design", "leaf3")["message"].as_str().unwrap().to_string();
    assert!(said.starts_with("leaf leaf3 has no link to spine spine1"), "{said}");
}

/// A Dragonfly+ of 4 groups (2 leaves, 2 spines and 2 hosts a leaf each; spine s of each group
/// cabled to spine s of every other group), without the global link between groups `skip`'s
/// spines 0. Ports: a leaf's hosts 1-2, its spines 3-4; a spine's leaves 1-2, then its global
/// links in order of the other groups.
fn dragonfly_net(skip: Option<(usize, usize)>) -> String {
    dragonfly_cabled(&dragonfly_global(skip))
}

/// One end of a global link: group, spine, port.
type End = (usize, usize, usize);

const GROUPS: usize = 4;

/// The designed global links (spine s to spine s of every other group, on the port of that
/// group), less `skip`'s spines 0.
fn dragonfly_global(skip: Option<(usize, usize)>) -> Vec<(End, End)> {
    let port = |g: usize, other: usize| 3 + if other < g { other } else { other - 1 };
    let mut out = Vec::new();
    for g in 0..GROUPS {
        for h in g + 1..GROUPS {
            for s in 0..2 {
                if s != 0 || skip != Some((g, h)) {
                    out.push(((g, s, port(g, h)), (h, s, port(h, g))));
                }
            }
        }
    }
    out
}

/// The fabric of `dragonfly_net` with the global links `global` lists.
fn dragonfly_cabled(global: &[(End, End)]) -> String {
    let mut net = String::from("width=15\n\n");
    for g in 0..GROUPS {
        for l in 0..2 {
            net += &format!("Switch 36 \"g{g}leaf{l}\"\n");
            for h in 0..2 {
                net += &format!("[{}] \"g{g}l{l}h{h}\"[1]\n", h + 1);
            }
            for s in 0..2 {
                net += &format!("[{}] \"g{g}spine{s}\"[{}]\n", 3 + s, l + 1);
            }
            net += "\n";
            for h in 0..2 {
                net += &format!("Hca 1 \"g{g}l{l}h{h}\" # \"g{g}l{l}h{h} mlx5_0\"\n[1] \"g{g}leaf{l}\"[{}]\n\n", h + 1);
            }
        }
        for s in 0..2 {
            net += &format!("Switch 36 \"g{g}spine{s}\"\n");
            for l in 0..2 {
                net += &format!("[{}] \"g{g}leaf{l}\"[{}]\n", l + 1, 3 + s);
            }
            let mut ports: Vec<(usize, End)> = global
                .iter()
                .flat_map(|(x, y)| [(*x, *y), (*y, *x)])
                .filter(|((xg, xs, _), _)| (*xg, *xs) == (g, s))
                .map(|((_, _, port), far)| (port, far))
                .collect();
            ports.sort();
            for (port, (fg, fs, fp)) in ports {
                net += &format!("[{port}] \"g{fg}spine{fs}\"[{fp}]\n");
            }
            net += "\n";
        }
    }
    net
}

/// A Dragonfly+ `net` on ibsim with OpenSM's routes in, and the designed fabric beside it as
/// `healthy.net`.
fn dragonfly_on_ibsim(name: &str, net: &str) -> Sim {
    let mut sim = Sim::start(name, net);
    sim.start_sm_and_wait();
    std::fs::write(sim.dir.join("healthy.net"), dragonfly_net(None)).unwrap();
    sim
}

/// `fabcheck fabric --json` with `args`: its exit code and document.
fn fabric_doc(sim: &Sim, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = sim.fabcheck(&[&["fabric", "--json"], args].concat());
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap())
}

/// Dragonfly+ on a real subnet: healthy, nothing is blamed (its groups are separate trees, its
/// global links even, OpenSM's routes between groups as short as the cabling allows). One
/// global link missing: both its ends are named, each naming the other; `--topology` of the
/// healthy fabric names its ports.
#[test]
fn dragonfly_plus_passes_and_a_missing_global_link_is_named() {
    let sim = dragonfly_on_ibsim("dragonfly", &dragonfly_net(None));
    let (code, doc) = fabric_doc(&sim, &[]);
    assert_eq!(code, Some(0), "{:#?}", blamed(&doc));
    assert_eq!(blamed(&doc), vec![]);
    assert_eq!(doc["routes"]["depth"], 2, "{}", doc["routes"]);
    drop(sim);

    let sim = dragonfly_on_ibsim("dragonfly-missing", &dragonfly_net(Some((0, 1))));
    let (code, doc) = fabric_doc(&sim, &[]);
    assert_eq!(code, Some(0), "warnings only: {:#?}", blamed(&doc));
    let w = |subject: &str| ("fabric.design".to_string(), "warning".to_string(), subject.to_string());
    assert_eq!(blamed(&doc), vec![w("g0spine0"), w("g1spine0")]);
    let said = finding(&doc, "fabric.design", "g1spine0")["message"].as_str().unwrap().to_string();
    assert!(said.starts_with("spine g1spine0 has 2 link(s) to other spines, where the spines of this fabric have 3 each"), "{said}");
    assert!(said.ends_with("g0spine0 is short too and has no link to it: likely that cable"), "{said}");
    let (code, doc) = fabric_doc(&sim, &["--topology", &sim.path("healthy.net")]);
    assert_eq!(code, Some(1), "{:#?}", blamed(&doc));
    assert_eq!(errors(&doc), vec![("fabric.link.down".into(), "error".into(), "g0spine0[3] <-> g1spine0[3]".into())], "{:#?}", blamed(&doc));
}

/// Two global cables swapped between groups on a real subnet (0-1 and 2-3's spines 0 become
/// 0-2 and 1-3, on the same ports): every spine keeps its count, and the two group pairs left
/// with one link where the even share is two are named (warnings). `--topology` of the
/// designed fabric names the two cables as miswired, by their designed ports.
#[test]
fn dragonfly_plus_swapped_global_links_are_named_by_their_groups() {
    let mut global = dragonfly_global(None);
    let at = |g: &[(End, End)], a: (usize, usize)| g.iter().position(|(x, y)| (x.0, y.0, x.1) == (a.0, a.1, 0)).unwrap();
    let (i, j) = (at(&global, (0, 1)), at(&global, (2, 3)));
    let ((a, b), (c, d)) = (global[i], global[j]);
    global[i] = (a, c);
    global[j] = (b, d);
    let sim = dragonfly_on_ibsim("dragonfly-swapped", &dragonfly_cabled(&global));
    let (code, doc) = fabric_doc(&sim, &[]);
    assert_eq!(code, Some(0), "warnings only: {:#?}", blamed(&doc));
    let w = |subject: &str| ("fabric.design".to_string(), "warning".to_string(), subject.to_string());
    assert_eq!(
        blamed(&doc),
        vec![w("g0spine0/g0spine1 <-> g1spine0/g1spine1"), w("g2spine0/g2spine1 <-> g3spine0/g3spine1")],
        "{:#?}",
        doc["findings"]
    );
    let said = finding(&doc, "fabric.design", "g0spine0/g0spine1 <-> g1spine0/g1spine1")["message"].as_str().unwrap().to_string();
    assert!(said.contains("have 1 global link(s) between them"), "{said}");
    let (code, doc) = fabric_doc(&sim, &["--topology", &sim.path("healthy.net")]);
    assert_eq!(code, Some(1), "{:#?}", blamed(&doc));
    let e = |subject: &str| ("fabric.topology.miswired".to_string(), "error".to_string(), subject.to_string());
    assert_eq!(errors(&doc), vec![e("g0spine0[3] <-> g1spine0[3]"), e("g2spine0[5] <-> g3spine0[5]")], "{:#?}", blamed(&doc));
}
