//! The judgments on constructed fabrics, including speeds and widths the simulator cannot
//! produce (HDR, NDR, XDR; 2X).

use super::*;
use crate::fabric::design::topology;
use crate::fabric::discovery::model::{LocalView, Port};
use crate::mad::attributes::{Counters, PortInfo, SmInfo, SpeedSet, WidthSet};

const W1: u8 = 1;
const W4: u8 = 2;
const W2: u8 = 16;
const SDR_TO_HDR: u32 = 0b0111_0111; // SDR DDR QDR FDR EDR HDR
const SDR_TO_NDR: u32 = 0b1111_0111;

fn info(lid: u16, width: Width, w_en: u8, w_sup: u8, speed: Speed, s_en: u32, s_sup: u32) -> PortInfo {
    PortInfo {
        lid,
        sm_lid: 1,
        lmc: 0,
        capability_mask: 0,
        state: PortState::Active,
        phys_state: PhysState::LinkUp,
        width_active: width,
        width_enabled: WidthSet(w_en),
        width_supported: WidthSet(w_sup),
        speed_active: speed,
        speed_enabled: SpeedSet(s_en),
        speed_supported: SpeedSet(s_sup),
    }
}

fn hdr(lid: u16) -> PortInfo {
    info(lid, Width::X4, W1 | W4, W1 | W4, Speed::Hdr, SDR_TO_HDR, SDR_TO_HDR)
}

fn down() -> PortInfo {
    PortInfo { state: PortState::Down, phys_state: PhysState::Polling, width_active: Width::Unknown(0), speed_active: Speed::Unknown(0), ..hdr(0) }
}

fn switch(guid: u64, name: &str, lid: u16, ports: u8) -> Node {
    let mut sw = Node { guid: Guid(guid), node_type: NodeType::Switch, description: name.into(), num_ports: ports, ports: Vec::new() };
    sw.ports.push(Port { number: 0, guid: Guid(guid), lid, info: hdr(lid), remote: None, counters: None });
    for n in 1..=ports {
        sw.ports.push(Port { number: n, guid: Guid(guid), lid, info: down(), remote: None, counters: None });
    }
    sw
}

fn ca(guid: u64, name: &str, lid: u16) -> Node {
    Node {
        guid: Guid(guid),
        node_type: NodeType::Ca,
        description: name.into(),
        num_ports: 1,
        ports: vec![Port { number: 1, guid: Guid(guid + 1), lid, info: down(), remote: None, counters: None }],
    }
}

/// Cables `a[pa]` to `b[pb]`, both ends trained as `link` (LIDs kept).
fn cable(f: &mut Fabric, a: u64, pa: u8, b: u64, pb: u8, link: PortInfo) {
    for (x, px, y, py) in [(a, pa, b, pb), (b, pb, a, pa)] {
        let node = f.nodes.iter_mut().find(|n| n.guid == Guid(x)).unwrap();
        let port = node.ports.iter_mut().find(|p| p.number == px).unwrap();
        let lid = port.info.lid;
        port.info = PortInfo { lid, ..link.clone() };
        port.remote = Some((Guid(y), py));
    }
}

fn master() -> SmInfo {
    SmInfo { lid: 1, guid: Guid(0x10), priority: 5, state: SmState::Master, activity: 1 }
}

/// leaf1 (LID 1) with hostA on port 1 and hostB on port 2, spine1 (LID 2) on port 7; all 4X HDR.
fn healthy() -> Fabric {
    let mut f = Fabric {
        local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 3, sm_lid: 1, state: PortState::Active },
        nodes: vec![switch(0x10, "leaf1", 1, 8), switch(0x20, "spine1", 2, 8), ca(0x100, "hostA", 3), ca(0x200, "hostB", 4)],
        master: Some(master()),
        others: Vec::new(),
        gaps: Vec::new(),
        counters_read: true,
    };
    for n in &mut f.nodes {
        if n.node_type == NodeType::Ca {
            n.ports[0].info.lid = n.ports[0].lid;
        }
    }
    cable(&mut f, 0x10, 1, 0x100, 1, hdr(0));
    cable(&mut f, 0x10, 2, 0x200, 1, hdr(0));
    cable(&mut f, 0x10, 7, 0x20, 1, hdr(0));
    f
}

fn ids(j: &Judgement) -> Vec<(String, Severity, String)> {
    j.findings.iter().map(|f| (f.id.to_string(), f.severity, f.subject.to_string())).collect()
}

#[test]
fn healthy_fabric_has_no_findings() {
    let j = judge(&healthy(), None, &FabricExpect::default());
    assert!(j.findings.is_empty(), "{:#?}", j.findings);
}

#[test]
fn lane_fault_names_both_ends_with_what_it_could_run() {
    let mut f = healthy();
    cable(&mut f, 0x10, 7, 0x20, 1, info(0, Width::X1, W1 | W4, W1 | W4, Speed::Hdr, SDR_TO_HDR, SDR_TO_HDR));
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.link.width".into(), Severity::Error, "leaf1[7] <-> spine1[1]".into())]);
    let m = &j.findings[0].message;
    assert!(m.contains("runs 1X HDR (50 Gb/s)") && m.contains("4X HDR (200 Gb/s)"), "{m}");
    assert_eq!(j.marks[&(Guid(0x20), 1)], vec![crate::outcome::FindingId::FabricLinkWidth]);
}

#[test]
fn speed_below_both_ends_is_an_error_and_enabled_below_supported_a_warning() {
    let mut f = healthy();
    cable(&mut f, 0x10, 1, 0x100, 1, info(0, Width::X4, W4, W4, Speed::Edr, SDR_TO_HDR, SDR_TO_HDR));
    // hostB's port enables only up to EDR though both support HDR: configuration.
    cable(&mut f, 0x10, 2, 0x200, 1, info(0, Width::X4, W4, W4, Speed::Edr, 0b0011_0111, SDR_TO_HDR));
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(
        ids(&j),
        vec![
            ("fabric.link.speed".into(), Severity::Error, "leaf1[1] <-> hostA[1]".into()),
            ("fabric.link.speed".into(), Severity::Warning, "leaf1[2] <-> hostB[1]".into()),
        ]
    );
    assert!(j.findings[0].message.contains("runs 4X EDR (100 Gb/s) but both ends support and enable 4X HDR (200 Gb/s)"), "{}", j.findings[0].message);
}

#[test]
fn two_x_links_hdr100_ndr200_and_xdr() {
    let mut f = healthy();
    // HDR100 to a 2X-only port, NDR200 likewise, XDR on 4X: all at their best, no findings.
    cable(&mut f, 0x10, 1, 0x100, 1, info(0, Width::X2, W2, W2, Speed::Hdr, SDR_TO_HDR, SDR_TO_HDR));
    cable(&mut f, 0x10, 2, 0x200, 1, info(0, Width::X2, W2, W2, Speed::Ndr, SDR_TO_NDR, SDR_TO_NDR));
    cable(&mut f, 0x10, 7, 0x20, 1, info(0, Width::X4, W4, W4, Speed::Xdr, SDR_TO_NDR | 256, SDR_TO_NDR | 256));
    let j = judge(&f, None, &FabricExpect::default());
    assert!(j.findings.is_empty(), "{:#?}", j.findings);
    // A 2X+4X-capable pair trained at 2X NDR: half its lanes.
    cable(&mut f, 0x10, 2, 0x200, 1, info(0, Width::X2, W2 | W4, W2 | W4, Speed::Ndr, SDR_TO_NDR, SDR_TO_NDR));
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.link.width".into(), Severity::Error, "leaf1[2] <-> hostB[1]".into())]);
    assert!(j.findings[0].message.contains("runs 2X NDR (200 Gb/s) but both ends support and enable 4X NDR (400 Gb/s)"));
    // XDR-capable pair at NDR.
    cable(&mut f, 0x10, 7, 0x20, 1, info(0, Width::X4, W4, W4, Speed::Ndr, SDR_TO_NDR | 256, SDR_TO_NDR | 256));
    let j = judge(&f, None, &FabricExpect::default());
    assert!(j
        .findings
        .iter()
        .any(|x| x.id == FindingId::FabricLinkSpeed && x.severity == Severity::Error && x.message.contains("4X XDR (800 Gb/s)")));
}

#[test]
fn no_master_sm() {
    let mut f = healthy();
    f.master = None;
    f.local.sm_lid = 0;
    f.local.state = PortState::Init;
    for n in &mut f.nodes {
        for p in &mut n.ports {
            p.info.state = if p.info.link_up() { PortState::Init } else { p.info.state };
        }
    }
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.sm".into(), Severity::Error, "subnet".into())]);
    assert!(j.findings[0].remedy.contains("systemctl enable --now opensm"));
}

#[test]
fn standby_expected_two_masters_and_priorities() {
    let mut f = healthy();
    let mut expect = FabricExpect::default();
    expect.set("sm_standby=1").unwrap();
    let j = judge(&f, None, &expect);
    assert_eq!(ids(&j), vec![("fabric.sm".into(), Severity::Error, "subnet".into())]);
    f.others.push(SmInfo { lid: 3, guid: Guid(0x101), priority: 9, state: SmState::Standby, activity: 0 });
    let j = judge(&f, None, &expect);
    assert_eq!(ids(&j), vec![("fabric.sm".into(), Severity::Warning, "SM lid 3".into())], "a standby above the master's priority");
    f.others.push(SmInfo { lid: 4, guid: Guid(0x201), priority: 1, state: SmState::Master, activity: 0 });
    let j = judge(&f, None, &expect);
    assert!(j.findings.iter().any(|x| x.severity == Severity::Error && x.message.starts_with("two master SMs")));
}

#[test]
fn duplicate_and_missing_lids() {
    let mut f = healthy();
    f.nodes[3].ports[0].info.lid = 3; // hostB takes hostA's LID
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.lid".into(), Severity::Error, "hostA[1], hostB[1]".into())]);
    f.nodes[3].ports[0].info.lid = 0;
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.lid".into(), Severity::Error, "hostB[1]".into())]);
}

#[test]
fn error_counters_over_threshold() {
    let mut f = healthy();
    f.nodes[2].ports[0].counters = Some(Counters { symbol_error: 900, ..Counters::default() });
    f.nodes[0].ports[2].counters = Some(Counters { xmit_discards: 500, ..Counters::default() });
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(
        ids(&j),
        vec![
            ("fabric.errors".into(), Severity::Error, "leaf1[1] <-> hostA[1]".into()),
            ("fabric.errors".into(), Severity::Warning, "leaf1[2] <-> hostB[1]".into()),
        ]
    );
    assert_eq!(j.findings[0].message, "at hostA[1]: SymbolErrorCounter 900 (> 10)");
    let mut lenient = FabricExpect::default();
    lenient.set("symbol_error=1000").unwrap();
    lenient.set("xmit_discards=1000").unwrap();
    assert!(judge(&f, None, &lenient).findings.is_empty());
}

#[test]
fn unanswered_node() {
    let mut f = healthy();
    let sw = &mut f.nodes[0];
    sw.ports[3].info = hdr(1);
    f.gaps.push(Gap::Unanswered { node: Guid(0x10), port: 3 });
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.unreachable".into(), Severity::Error, "leaf1[3] <-> ?".into())]);
}

const EXPECTED: &str = "Switch 8 \"leaf1\"\n[1] \"hostA\"[1]\n[2] \"hostB\"[1]\n[7] \"spine1\"[1]\n\nSwitch 8 \"spine1\"\n[1] \"leaf1\"[7]\n\n\
                        Hca 1 \"hostA\"\n[1] \"leaf1\"[1]\n\nHca 1 \"hostB\"\n[1] \"leaf1\"[2]\n";

#[test]
fn topology_matches_healthy() {
    let t = topology::parse("t", EXPECTED).unwrap();
    let j = judge(&healthy(), Some(&t), &FabricExpect::default());
    assert!(j.findings.is_empty(), "{:#?}", j.findings);
}

#[test]
fn pulled_cable_is_down_with_both_ends_named() {
    let t = topology::parse("t", EXPECTED).unwrap();
    let mut f = healthy();
    // hostB unplugged: leaf1[2] polls, hostB is not discovered at all.
    f.nodes.retain(|n| n.description != "hostB");
    f.nodes[0].ports[2].info = down();
    f.nodes[0].ports[2].remote = None;
    let j = judge(&f, Some(&t), &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.link.down".into(), Severity::Error, "leaf1[2] <-> hostB[1]".into())]);
    assert!(j.findings[0].message.contains("leaf1[2] is DOWN/POLLING") && j.findings[0].message.contains("not discovered: hostB"));
}

#[test]
fn cable_in_the_wrong_port_is_miswired_not_extra() {
    let t = topology::parse("t", EXPECTED).unwrap();
    let mut f = healthy();
    // hostB's cable moved from leaf1[2] to leaf1[3].
    f.nodes[0].ports[2].info = down();
    f.nodes[0].ports[2].remote = None;
    cable(&mut f, 0x10, 3, 0x200, 1, hdr(0));
    let j = judge(&f, Some(&t), &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.topology.miswired".into(), Severity::Error, "leaf1[2] <-> hostB[1]".into())]);
    assert_eq!(j.findings[0].message, "expected this cable, but hostB[1] is cabled to leaf1[3]");
}

#[test]
fn extra_and_missing() {
    let mut t = topology::parse("t", EXPECTED).unwrap();
    t.links.retain(|l| l.b.0 != "hostB" && l.a.0 != "hostB");
    t.links.push(topology::ExpectedLink { a: ("spine1".into(), 2), b: ("hostC".into(), 1) });
    t.links.push(topology::ExpectedLink { a: ("spine9".into(), 1), b: ("hostC".into(), 1) });
    for id in ["hostC", "spine9"] {
        let key = topology::NodeKey { guid: None, description: id.into() };
        t.nodes.insert(id.into(), topology::ExpectedNode { id: id.into(), key, is_switch: false, ports: 1 });
    }
    let j = judge(&healthy(), Some(&t), &FabricExpect::default());
    assert_eq!(
        ids(&j),
        vec![
            ("fabric.link.down".into(), Severity::Error, "spine1[2] <-> hostC[1]".into()),
            ("fabric.topology.missing".into(), Severity::Error, "spine9[1] <-> hostC[1]".into()),
            ("fabric.topology.extra".into(), Severity::Warning, "leaf1[2] <-> hostB[1]".into()),
        ]
    );
}

#[test]
fn nodes_matched_by_guid_when_the_file_gives_one() {
    let text = "Switch 8 \"S-0000000000000010\" # \"renamed-leaf\"\n[1] \"H-0000000000000100\"[1] # \"whatever\"\n";
    let t = topology::parse("t", text).unwrap();
    let j = judge(&healthy(), Some(&t), &FabricExpect::default());
    // The leaf1[1] <-> hostA cable matches by GUID despite other names; the rest is extra.
    assert!(j.findings.iter().all(|f| f.id == FindingId::FabricTopologyExtra), "{:#?}", j.findings);
    assert_eq!(j.findings.len(), 2);
}

#[test]
fn unanswered_node_is_named_from_the_topology() {
    let t = topology::parse("t", EXPECTED).unwrap();
    let mut f = healthy();
    // hostB drops every MAD: leaf1[2] is up, hostB never discovered.
    f.nodes.retain(|n| n.description != "hostB");
    f.nodes[0].ports[2].remote = None;
    f.gaps.push(Gap::Unanswered { node: Guid(0x10), port: 2 });
    let j = judge(&f, Some(&t), &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.unreachable".into(), Severity::Error, "leaf1[2] <-> hostB[1]".into())]);
    assert!(j.findings[0].message.contains("(hostB[1] per the topology file)"), "{}", j.findings[0].message);
}

#[test]
fn link_left_in_init_under_a_master() {
    let mut f = healthy();
    f.nodes[0].ports[1].info.state = PortState::Init;
    f.nodes[2].ports[0].info.state = PortState::Init;
    let j = judge(&f, None, &FabricExpect::default());
    assert_eq!(ids(&j), vec![("fabric.link.state".into(), Severity::Error, "leaf1[1] <-> hostA[1]".into())]);
    assert!(j.findings[0].message.starts_with("linked up but INIT / INIT"));
    // Without a master the SM finding explains it instead.
    f.master = None;
    assert!(judge(&f, None, &FabricExpect::default()).findings.iter().all(|x| x.id == FindingId::FabricSm));
}
