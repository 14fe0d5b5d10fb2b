//! ibnetdiscover topologies of real fabrics (public sources, `tests/fixtures/wild-fabrics/SOURCES.md`)
//! read as `mesh`/`collective`/`accept`/`fabric --topology` read a file: `topology::load`, then
//! `mesh::topology::Topology::from_cabling`. The counts are what a careful reader counts in each
//! file: every node record, every cable once (it is printed at both of its ends).

use fabcheck::fabric::design::topology::{self, Topology, TopologyError};
use fabcheck::mesh::topology::Topology as Leaves;
use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wild-fabrics").join(name)
}

fn load(name: &str) -> Topology {
    topology::load(&path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (switches, CAs, cables).
fn shape(t: &Topology) -> (usize, usize, usize) {
    let switches = t.nodes.values().filter(|n| n.is_switch).count();
    (switches, t.nodes.len() - switches, t.links.len())
}

/// How many of the file's cables join these two ends (either way round).
fn cables(t: &Topology, a: (&str, u8), b: (&str, u8)) -> usize {
    let end = |e: &(String, u8), want: (&str, u8)| e.0 == want.0 && e.1 == want.1;
    t.links.iter().filter(|l| (end(&l.a, a) && end(&l.b, b)) || (end(&l.a, b) && end(&l.b, a))).count()
}

fn leaves(t: &Topology) -> Leaves {
    Leaves::from_cabling(t).expect("a switch with a host on it")
}

#[test]
fn every_fabric_has_its_source() {
    crate::wild_outputs::assert_every_sample_has_its_source("wild-fabrics");
}

#[test]
fn voltaire_sdr_grouped_output_of_the_man_page() {
    // `ibnetdiscover -g`: the `Non-Chassis Nodes` heading before the records.
    let t = load("voltaire-sdr-grouped-manpage.net");
    assert_eq!(shape(&t), (2, 4, 7));
    let (isr, sw6) = ("S-005442ba00003080", "S-0008f10400410015");
    assert_eq!(t.nodes[isr].key.description, "ISR9024 Voltaire");
    assert_eq!((t.nodes[isr].ports, t.nodes[sw6].ports), (24, 8));
    // The two switches are joined twice: ISR9024 port 10 (4xSDR from its end, 1xSDR from the
    // SW-6IB4's) and port 6.
    assert_eq!(cables(&t, (isr, 10), (sw6, 1)), 1);
    assert_eq!(cables(&t, (isr, 6), (sw6, 3)), 1);
    // One CA cabled on both ports, each to the ISR9024.
    assert_eq!(cables(&t, ("H-0008f10403960558", 2), (isr, 8)), 1);
    assert_eq!(cables(&t, ("H-0008f10403960558", 1), (isr, 12)), 1);
    assert_eq!(t.nodes["H-0008f10403960558"].key.description, "MT23108 InfiniHost Mellanox Technologies");
    let l = leaves(&t);
    assert_eq!(l.leaves(), 2, "both switches have CAs on them");
    let names: Vec<&str> = (0..2).map(|i| l.leaf_name(i)).collect();
    assert_eq!(names, ["ISR9024 Voltaire", "SW-6IB4 Voltaire"]);
    assert_eq!(l.uplinks(0), ["SW-6IB4 Voltaire"], "two cables, one switch");
    assert_eq!(l.uplinks(1), ["ISR9024 Voltaire"]);
}

#[test]
fn ibm_sdr_one_switch_two_nodes() {
    let t = load("ibm-sdr-single-switch.net");
    assert_eq!(shape(&t), (1, 2, 2));
    let sw = "S-000b8cffff0053ee";
    assert_eq!(t.nodes[sw].ports, 8);
    // compute-00-00's HCA is cabled on its port 2, compute-00-01's on port 1.
    assert_eq!(cables(&t, (sw, 2), ("H-0002c9030002847c", 2)), 1);
    assert_eq!(cables(&t, (sw, 1), ("H-0002c902002789ac", 1)), 1);
    assert_eq!(t.nodes["H-0002c9030002847c"].key.description, "compute-00-00 HCA-1");
    let l = leaves(&t);
    assert_eq!(l.leaves(), 1);
    let leaf = l.leaf_of("compute-00-00").unwrap();
    assert_eq!(l.leaf_of("compute-00-01"), Some(leaf));
    assert_eq!(l.leaf_of_nic("compute-00-00", "HCA-1"), Some(leaf));
    assert_eq!(l.leaf_name(leaf), "MT43132 Mellanox Technologies");
    assert!(l.uplinks(leaf).is_empty(), "a single switch has no uplinks");
}

#[test]
fn nvidia_edr_fdr_lab_with_loopback_cables() {
    // As published, the file opens with a libibmad error printed to the terminal beside the
    // output: refused by its number, saying what it is (the discovery may be incomplete).
    match topology::load(&path("nvidia-edr-fdr-loopbacks.net")) {
        Err(TopologyError::Syntax { line: 1, why, .. }) => assert!(why.contains("infiniband-diags printed"), "{why}"),
        other => panic!("{other:?}"),
    }
    let text = std::fs::read_to_string(path("nvidia-edr-fdr-loopbacks.net")).unwrap();
    let (first, output) = text.split_once('\n').unwrap();
    assert!(first.starts_with("src/query_smp.c:195; umad"), "{first}");
    let t = topology::parse("nvidia-edr-fdr-loopbacks.net", output).unwrap();
    assert_eq!(shape(&t), (2, 6, 10));
    let (sib, sx) = ("S-e41d2d030003e470", "S-f4521403005764b0");
    assert_eq!(t.nodes[sx].key.description, "MF0;switch-de779e:SX6012/U1");
    assert_eq!((t.nodes[sib].ports, t.nodes[sx].ports), (36, 12));
    // Three loopback cables, each printed at both its ports in the SwitchIB's record: once each.
    for (a, b) in [(1, 2), (19, 21), (29, 30)] {
        assert_eq!(cables(&t, (sib, a), (sib, b)), 1, "loopback {a}-{b}");
    }
    // The one cable between the switches (4xFDR: an EDR port to an FDR switch).
    assert_eq!(cables(&t, (sib, 3), (sx, 1)), 1);
    // r-ufm101 has two HCAs, both on the SX6012 (4xQDR); r-ufm111's HCA is cabled on port 2.
    assert_eq!(cables(&t, (sx, 2), ("H-0002c9030004e938", 1)), 1);
    assert_eq!(cables(&t, (sx, 3), ("H-0002c9030006ba5a", 1)), 1);
    assert_eq!(cables(&t, (sib, 35), ("H-0002c903003421b0", 2)), 1);
    let l = leaves(&t);
    assert_eq!(l.leaves(), 2);
    let (edr, fdr) = (l.leaf_of("r-ufm216").unwrap(), l.leaf_of("r-ufm101").unwrap());
    assert_ne!(edr, fdr);
    assert_eq!(l.leaf_of("r-ufm111"), Some(edr));
    assert_eq!((l.leaf_of("r-ufm100"), l.leaf_of("r-ufm96")), (Some(fdr), Some(fdr)));
    assert_eq!(l.leaf_of_nic("r-ufm101", "HCA-2"), Some(fdr));
    assert_eq!(l.leaf_name(edr), "SwitchIB Mellanox Technologies");
    assert_eq!(l.leaf_name(fdr), "MF0;switch-de779e:SX6012/U1");
    // Its loopbacks lead to no other switch: the one uplink is the SX6012.
    assert_eq!(l.uplinks(edr), ["MF0;switch-de779e:SX6012/U1"]);
    assert_eq!(l.uplinks(fdr), ["SwitchIB Mellanox Technologies"]);
}

#[test]
fn nvidia_ufm_lab_hdr_and_fdr_switches_with_loopbacks() {
    // Tab-separated records; CA ports with their GUID (`[1](ec0d9a03007d7d0b)`).
    let t = load("nvidia-ufm-lab-hdr-fdr-loopbacks.net");
    assert_eq!(shape(&t), (2, 13, 16));
    let (hdr, fdr) = ("S-b8599f0300fc6de4", "S-0002c903007b78b0");
    assert_eq!(t.nodes[hdr].key.description, "MF0;r-ufm-sw95:MQM8700/U1");
    assert_eq!((t.nodes[hdr].ports, t.nodes[fdr].ports), (41, 36));
    // The SX6036's two loopbacks, each once; the one cable between the switches.
    assert_eq!(cables(&t, (fdr, 25), (fdr, 26)), 1);
    assert_eq!(cables(&t, (fdr, 28), (fdr, 29)), 1);
    assert_eq!(cables(&t, (hdr, 3), (fdr, 1)), 1);
    // The Quantum's SHARP Aggregation Node on port 41.
    assert_eq!(t.nodes["H-b8599f0300fc6dec"].key.description, "Mellanox Technologies Aggregation Node");
    assert_eq!(cables(&t, (hdr, 41), ("H-b8599f0300fc6dec", 1)), 1);
    let l = leaves(&t);
    assert_eq!(l.leaves(), 2);
    // r-dcs96 has HCA-1 and HCA-2 on the Quantum, HCA-3 and HCA-4 on the SX6036: its NICs'
    // leaves differ, as a rail-optimized node's do.
    let (on_hdr, on_fdr) = (l.leaf_of_nic("r-dcs96", "HCA-1").unwrap(), l.leaf_of_nic("r-dcs96", "HCA-3").unwrap());
    assert_ne!(on_hdr, on_fdr);
    assert_eq!(l.leaf_of_nic("r-dcs96", "HCA-2"), Some(on_hdr));
    assert_eq!(l.leaf_of_nic("r-dcs96", "HCA-4"), Some(on_fdr));
    assert_eq!(l.leaf_name(on_hdr), "MF0;r-ufm-sw95:MQM8700/U1");
    assert_eq!(l.leaf_name(on_fdr), "MF0;r-ufm-sw226:SX6036/U1");
    assert_eq!(l.leaf_of("r-dmz-ufm137"), Some(on_fdr));
    // The loopbacks are no uplink, the Aggregation Node no host: each leaf's one uplink is the
    // other switch.
    assert_eq!(l.uplinks(on_hdr), ["MF0;r-ufm-sw226:SX6036/U1"]);
    assert_eq!(l.uplinks(on_fdr), ["MF0;r-ufm-sw95:MQM8700/U1"]);
}

#[test]
fn oracle_sun_dcs_36_qdr_one_hca() {
    let t = load("oracle-sun-dcs-qdr.net");
    assert_eq!(shape(&t), (1, 1, 1));
    let sw = "S-0021283a8389a0a0";
    assert_eq!(t.nodes[sw].key.description, "Sun DCS 36 QDR switch localhost");
    assert_eq!(cables(&t, (sw, 23), ("H-0003ba000100e388", 2)), 1);
    let l = leaves(&t);
    let leaf = l.leaf_of("nsn33-43").unwrap();
    assert_eq!(l.leaf_name(leaf), "Sun DCS 36 QDR switch localhost");
    assert!(l.uplinks(leaf).is_empty());
}

#[test]
fn nvidia_selene_storage_fabric_hdr_spines_edr_appliances() {
    // Selene's storage fabric, 2021: 160 Quantum (MQM8700) switches, 60 of them leaves with
    // DDN AI400X appliances at 4xEDR and DGX A100 storage HCAs at 4xHDR, 16 spines a leaf.
    let t = load("nvidia-selene-storage-hdr-edr.net");
    assert_eq!(shape(&t), (160, 1247, 3286));
    assert!(t.nodes.values().filter(|n| n.is_switch).all(|n| n.ports == 41 && n.key.description.ends_with(":MQM8700/U1")));
    let slg = "S-0c42a103009d6eb6";
    assert_eq!(t.nodes[slg].key.description, "MF0;SLG04-16:MQM8700/U1");
    assert_eq!(cables(&t, (slg, 1), ("H-0c42a10300595394", 1)), 1, "ai400x-157 HCA-1 on port 1");
    assert_eq!(cables(&t, (slg, 2), ("H-0c42a10300595395", 1)), 1, "ai400x-157 HCA-2 on port 2");
    assert_eq!(cables(&t, (slg, 25), ("S-0c42a10300a780d2", 16)), 1, "SSPINE4-01");
    let l = leaves(&t);
    assert_eq!(l.leaves(), 60);
    let leaf = l.leaf_of("ai400x-157").unwrap();
    assert_eq!(l.leaf_name(leaf), "MF0;SLG04-16:MQM8700/U1");
    assert_eq!(l.leaf_of_nic("ai400x-157", "HCA-2"), Some(leaf));
    let spines: Vec<String> = (1..=16).map(|i| format!("MF0;SSPINE4-{i:02}:MQM8700/U1")).collect();
    assert_eq!(l.uplinks(leaf), spines);
}

#[test]
fn nvidia_selene_compute_fabric_every_switch_has_its_aggregation_node() {
    // Selene's compute fabric, 2021: 666 Quantum switches, each with its SHARP Aggregation
    // Node (a CA inside the switch, on port 41); 4xHDR throughout.
    let t = load("nvidia-selene-compute-hdr.net");
    assert_eq!(shape(&t), (666, 4341, 12852));
    let ans = t.nodes.values().filter(|n| n.key.description == "Mellanox Technologies Aggregation Node").count();
    assert_eq!(ans, 666);
    let (mlg, spine) = ("S-1c34da0300728866", "S-1c34da030060a40c");
    assert_eq!(t.nodes[mlg].key.description, "MF0;MLG01-02:MQM8700/U1");
    assert_eq!(t.nodes[spine].key.description, "MF0;CSPINE1-80:MQM8700/U1");
    assert_eq!(cables(&t, (mlg, 1), ("H-1c34da0300608820", 1)), 1, "selene-swift-01 HCA-2");
    // Two cables between the same pair of switches, each counted.
    assert_eq!(cables(&t, (mlg, 39), (spine, 39)), 1);
    assert_eq!(cables(&t, (mlg, 40), (spine, 40)), 1);
    assert_eq!(cables(&t, (mlg, 41), ("H-1c34da030072886e", 1)), 1, "its Aggregation Node");
    let l = leaves(&t);
    // Leaves are the 203 switches with a host on them; the 463 others (with only their AN)
    // are spines, and no host is called "Mellanox".
    assert_eq!(l.leaves(), 203);
    assert_eq!(l.leaf_of("Mellanox"), None);
    let leaf = l.leaf_of_nic("selene-swift-01", "HCA-2").unwrap();
    assert_eq!(l.leaf_name(leaf), "MF0;MLG01-02:MQM8700/U1");
    assert_eq!(l.uplinks(leaf), ["MF0;CSPINE1-80:MQM8700/U1"]);
    // `selene-cache-02 mlx5_1 ` (rdma-ndd's trailing space): host and device still read.
    assert_eq!(l.leaf_of_nic("selene-cache-02", "mlx5_1"), Some(leaf));
}
