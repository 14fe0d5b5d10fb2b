//! Which leaf switch each endpoint hangs off (pure), from `ibnetdiscover` output as `fabric`'s
//! topology parser reads it.
//!
//! Only what `mesh` needs: the switch blocks' ports that lead to a channel adapter (`"H-..."`)
//! make that switch a LEAF, and the CA's node description (`"n07 mlx5_0"`) names its host;
//! ports that lead to another switch (`"S-..."`) are the leaf's UPLINKS (to spines). A block:
//!
//! ```text
//! Switch  36 "S-0002c903007b7f40"  # "leaf3" base port 0 lid 3 lmc 0
//! [1]  "H-0002c903000e0b72"[1](2c903000e0b73)  # "n07 mlx5_0" lid 4 4xHDR
//! [19] "S-0002c903007b7f80"[1]  # "spine2" lid 2 4xHDR
//! ```
//!
//! The interface is kept narrow (`leaf_of`, `leaf_name`, `uplinks`) so that a full
//! ibnetdiscover model can take this one's place.

use crate::model::Unparsed;
use std::collections::HashMap;

/// A leaf switch, by its index in [`Topology`].
pub type LeafId = usize;

#[derive(Debug, Clone, Default)]
pub struct Topology {
    leaves: Vec<Leaf>,
    /// Host name -> leaf (the first leaf a CA of that host is cabled to).
    by_host: HashMap<String, LeafId>,
    /// (host, device) -> leaf, from CA descriptions of two words or more (`n07 mlx5_3`, as
    /// rdma-ndd writes them): each NIC of a rail-optimized node on its own leaf.
    by_nic: HashMap<(String, String), LeafId>,
}

#[derive(Debug, Clone)]
struct Leaf {
    /// The switch's node description (`leaf3`), else its id.
    name: String,
    /// Switches its other ports lead to (their descriptions), each once.
    uplinks: Vec<String>,
}

impl Topology {
    /// Parses ibnetdiscover's output with `fabric`'s parser (the one reader of that format); a
    /// topology with no switch that has a CA on it is an error (the wrong file, most likely).
    pub fn parse(text: &str) -> Result<Topology, Unparsed> {
        let cabling = crate::fabric::design::topology::parse("--topology", text).map_err(|e| e.to_string())?;
        Topology::from_cabling(&cabling)
    }

    /// Leaves (switches with a CA on them, in the order the file first cables one), their hosts
    /// (the first word of the CA's description) and their uplinks (the switches they lead to).
    pub fn from_cabling(cabling: &crate::fabric::design::topology::Topology) -> Result<Topology, Unparsed> {
        let mut topo = Topology::default();
        let node = |id: &str| cabling.nodes.get(id);
        let is_switch = |id: &str| node(id).is_some_and(|n| n.is_switch);
        // A SHARP Aggregation Node is a CA inside a switch (Quantum and later give every
        // switch one, cabled to its last port and described "Mellanox Technologies Aggregation
        // Node"; ibdiagnet's dump marks it so too: fabric/ibdiagnet.rs): not a host, so it
        // makes no switch a leaf and names no host.
        let is_aggregation_node =
            |id: &str| node(id).is_some_and(|n| !n.is_switch && crate::mad::attributes::is_aggregation_node(&n.key.description));
        // Switches left with their default description ("Quantum Mellanox Technologies") share
        // it: each such switch is named with its id too, so two leaves (or two spines) are two.
        let mut switches_named: HashMap<&str, usize> = HashMap::new();
        for n in cabling.nodes.values().filter(|n| n.is_switch) {
            *switches_named.entry(n.key.description.as_str()).or_default() += 1;
        }
        let name = |id: &str| match node(id) {
            Some(n) if n.is_switch && switches_named.get(n.key.description.as_str()).is_some_and(|&k| k > 1) => {
                format!("{} ({id})", n.key.description)
            }
            Some(n) => n.key.description.clone(),
            None => id.to_string(),
        };
        let mut leaf_of_switch: HashMap<String, LeafId> = HashMap::new();
        // Leaves first (a switch with a host), in file order.
        for link in &cabling.links {
            for (sw, other) in [(&link.a.0, &link.b.0), (&link.b.0, &link.a.0)] {
                if is_switch(sw) && !is_switch(other) && !is_aggregation_node(other) && !leaf_of_switch.contains_key(sw) {
                    leaf_of_switch.insert(sw.clone(), topo.leaves.len());
                    topo.leaves.push(Leaf { name: name(sw), uplinks: Vec::new() });
                }
            }
        }
        if topo.leaves.is_empty() {
            return Err("no switch with a host on it: is this ibnetdiscover output?".into());
        }
        for link in &cabling.links {
            // A cable from a switch to itself (a loopback: ibnetdiscover prints `[1] "S-X"[2]` in
            // X's own record) leads to no other switch: not an uplink.
            if link.a.0 == link.b.0 {
                continue;
            }
            for (sw, other) in [(&link.a.0, &link.b.0), (&link.b.0, &link.a.0)] {
                let Some(&leaf) = leaf_of_switch.get(sw) else { continue };
                if is_switch(other) {
                    let up = name(other);
                    if !topo.leaves[leaf].uplinks.contains(&up) {
                        topo.leaves[leaf].uplinks.push(up);
                    }
                } else if !is_aggregation_node(other) {
                    let description = name(other);
                    let mut words = description.split_whitespace();
                    if let Some(host) = words.next() {
                        topo.by_host.entry(host.to_string()).or_insert(leaf);
                        if let Some(device) = words.next() {
                            topo.by_nic.entry((host.to_string(), device.to_string())).or_insert(leaf);
                        }
                    }
                }
            }
        }
        Ok(topo)
    }

    /// The leaf of a host (as ibnetdiscover's node description starts: `n07` of `n07 mlx5_0`).
    pub fn leaf_of(&self, host: &str) -> Option<LeafId> {
        self.by_host.get(host).copied()
    }

    /// The leaf of one NIC of a host (`n07 mlx5_3`): what `mesh --rails` needs, since a
    /// rail-optimized node has as many leaves as rails. None when no CA is described so.
    pub fn leaf_of_nic(&self, host: &str, device: &str) -> Option<LeafId> {
        self.by_nic.get(&(host.to_string(), device.to_string())).copied()
    }

    pub fn leaf_name(&self, leaf: LeafId) -> &str {
        self.leaves.get(leaf).map_or("?", |l| l.name.as_str())
    }

    /// The switches a leaf's uplinks lead to (spines), as described.
    pub fn uplinks(&self, leaf: LeafId) -> &[String] {
        self.leaves.get(leaf).map_or(&[], |l| l.uplinks.as_slice())
    }

    pub fn leaves(&self) -> usize {
        self.leaves.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
#
# Topology file: generated on Mon Nov 30 10:00:00 2026
#
vendid=0x2c9
devid=0xd2f0
sysimgguid=0x2c903007b7f80
switchguid=0x2c903007b7f80(2c903007b7f80)
Switch	40 "S-0002c903007b7f80"		# "spine2" enhanced port 0 lid 2 lmc 0
[1]	"S-0002c903007b7f40"[19]		# "leaf3" lid 3 4xHDR
[2]	"S-0002c903007b7f50"[19]		# "leaf4" lid 5 4xHDR

Switch	40 "S-0002c903007b7f40"		# "leaf3" enhanced port 0 lid 3 lmc 0
[1]	"H-0002c903000e0b72"[1](2c903000e0b73) 		# "n07 mlx5_0" lid 4 4xHDR
[2]	"H-0002c903000e0b82"[1](2c903000e0b83) 		# "n08 mlx5_0" lid 6 4xHDR
[19]	"S-0002c903007b7f80"[1]		# "spine2" lid 2 4xHDR
[20]	"S-0002c903007b7f90"[1]		# "spine1" lid 9 4xHDR

Switch	40 "S-0002c903007b7f50"		# "leaf4" enhanced port 0 lid 5 lmc 0
[1]	"H-0002c903000e0c72"[1](2c903000e0c73) 		# "n09 mlx5_0" lid 7 4xHDR
[19]	"S-0002c903007b7f80"[2]		# "spine2" lid 2 4xHDR

Ca	1 "H-0002c903000e0b72"		# "n07 mlx5_0"
[1](2c903000e0b73) 	"S-0002c903007b7f40"[1]		# lid 4 lmc 0 "leaf3" lid 3 4xHDR
"#;

    #[test]
    fn hosts_to_leaves_and_uplinks() {
        let t = Topology::parse(SAMPLE).unwrap();
        assert_eq!(t.leaves(), 2, "spine2 has no host: not a leaf");
        let l3 = t.leaf_of("n07").unwrap();
        assert_eq!(t.leaf_of("n08"), Some(l3));
        assert_eq!(t.leaf_name(l3), "leaf3");
        assert_eq!(t.uplinks(l3), ["spine2", "spine1"]);
        let l4 = t.leaf_of("n09").unwrap();
        assert_ne!(l3, l4);
        assert_eq!(t.leaf_name(l4), "leaf4");
        assert_eq!(t.leaf_of("n10"), None);
    }

    #[test]
    fn each_nic_of_a_rail_optimized_node_on_its_own_leaf() {
        let text = "Switch\t40 \"S-0000000000000a00\"\t\t# \"rail0-leaf\" enhanced port 0 lid 1 lmc 0\n\
                    [1]\t\"H-0000000000000001\"[1](2) \t\t# \"n1 mlx5_0\" lid 3 4xNDR\n\
                    [2]\t\"H-0000000000000011\"[1](12) \t\t# \"n2 mlx5_0\" lid 4 4xNDR\n\n\
                    Switch\t40 \"S-0000000000000b00\"\t\t# \"rail1-leaf\" enhanced port 0 lid 2 lmc 0\n\
                    [1]\t\"H-0000000000000003\"[1](4) \t\t# \"n1 mlx5_3\" lid 5 4xNDR\n\
                    [2]\t\"H-0000000000000013\"[1](14) \t\t# \"n2 mlx5_3\" lid 6 4xNDR\n";
        let t = Topology::parse(text).unwrap();
        let (r0, r1) = (t.leaf_of_nic("n1", "mlx5_0").unwrap(), t.leaf_of_nic("n2", "mlx5_3").unwrap());
        assert_eq!((t.leaf_name(r0), t.leaf_name(r1)), ("rail0-leaf", "rail1-leaf"));
        assert_eq!(t.leaf_of_nic("n2", "mlx5_0"), Some(r0));
        assert_eq!(t.leaf_of_nic("n1", "mlx5_9"), None, "a NIC the file does not describe has no leaf, not its host's first");
        assert_eq!(Topology::parse(SAMPLE).unwrap().leaf_of_nic("n07", "mlx5_0").map(|l| l < 2), Some(true));
    }

    /// A switch with loopback cables on it (as in NVIDIA's ibdiagpath article's fabric,
    /// tests/fixtures/wild-fabrics/nvidia-edr-fdr-loopbacks.net): itself is not its uplink.
    #[test]
    fn a_loopback_cable_is_no_uplink() {
        let text = "Switch\t36 \"S-e41d2d030003e470\"\t# \"SwitchIB Mellanox Technologies\" base port 0 lid 268 lmc 0\n\
                    [1]\t\"S-e41d2d030003e470\"[2]\t# \"SwitchIB Mellanox Technologies\" lid 268 4xEDR\n\
                    [2]\t\"S-e41d2d030003e470\"[1]\t# \"SwitchIB Mellanox Technologies\" lid 268 4xEDR\n\
                    [3]\t\"S-f4521403005764b0\"[1]\t# \"MF0;switch-de779e:SX6012/U1\" lid 174 4xFDR\n\
                    [34]\t\"H-e41d2d030061f957\"[1](e41d2d030061f957) \t# \"r-ufm216 HCA-2\" lid 2 4xEDR\n";
        let t = Topology::parse(text).unwrap();
        let leaf = t.leaf_of("r-ufm216").unwrap();
        assert_eq!(t.leaf_name(leaf), "SwitchIB Mellanox Technologies");
        assert_eq!(t.uplinks(leaf), ["MF0;switch-de779e:SX6012/U1"]);
    }

    /// Switches that keep their default description (no node description set: common on
    /// unmanaged ones) are told apart by their ids: two spines are two uplinks, two leaves two
    /// names.
    #[test]
    fn switches_sharing_a_default_description_are_told_apart() {
        let text = "Switch\t40 \"S-0000000000000a01\"\t# \"Quantum Mellanox Technologies\" base port 0 lid 1 lmc 0\n\
                    [1]\t\"H-0000000000000b01\"[1](b01)\t# \"n01 mlx5_0\" lid 11 4xNDR\n\
                    [39]\t\"S-0000000000000c01\"[1]\t# \"Quantum Mellanox Technologies\" lid 3 4xNDR\n\
                    [40]\t\"S-0000000000000c02\"[1]\t# \"Quantum Mellanox Technologies\" lid 4 4xNDR\n\
                    \n\
                    Switch\t40 \"S-0000000000000a02\"\t# \"Quantum Mellanox Technologies\" base port 0 lid 2 lmc 0\n\
                    [1]\t\"H-0000000000000b02\"[1](b02)\t# \"n02 mlx5_0\" lid 12 4xNDR\n\
                    [39]\t\"S-0000000000000c01\"[2]\t# \"Quantum Mellanox Technologies\" lid 3 4xNDR\n\
                    [40]\t\"S-0000000000000c02\"[2]\t# \"Quantum Mellanox Technologies\" lid 4 4xNDR\n";
        let t = Topology::parse(text).unwrap();
        let (a, b) = (t.leaf_of("n01").unwrap(), t.leaf_of("n02").unwrap());
        assert_ne!(a, b);
        assert_eq!(t.leaf_name(a), "Quantum Mellanox Technologies (S-0000000000000a01)");
        assert_eq!(t.leaf_name(b), "Quantum Mellanox Technologies (S-0000000000000a02)");
        assert_eq!(t.uplinks(a), ["Quantum Mellanox Technologies (S-0000000000000c01)", "Quantum Mellanox Technologies (S-0000000000000c02)"]);
    }

    /// NVIDIA Selene's compute fabric (tests/fixtures/wild-fabrics/nvidia-selene-compute-hdr.net):
    /// every Quantum switch, spine or leaf, has its SHARP Aggregation Node on port 41. The spine
    /// is no leaf, and the AN names no host "Mellanox".
    #[test]
    fn an_aggregation_node_is_no_host() {
        let text = "Switch\t41 \"S-1c34da0300728866\"\t\t# \"MF0;MLG01-02:MQM8700/U1\" enhanced port 0 lid 1600 lmc 0\n\
                    [1]\t\"H-1c34da0300608820\"[1](1c34da0300608820) \t\t# \"selene-swift-01 HCA-2\" lid 837 4xHDR\n\
                    [39]\t\"S-1c34da030060a40c\"[39]\t\t# \"MF0;CSPINE1-80:MQM8700/U1\" lid 102 4xHDR\n\
                    [41]\t\"H-1c34da030072886e\"[1](1c34da030072886e) \t\t# \"Mellanox Technologies Aggregation Node\" lid 355 4xHDR\n\
                    \n\
                    Switch\t41 \"S-1c34da030060a40c\"\t\t# \"MF0;CSPINE1-80:MQM8700/U1\" enhanced port 0 lid 102 lmc 0\n\
                    [39]\t\"S-1c34da0300728866\"[39]\t\t# \"MF0;MLG01-02:MQM8700/U1\" lid 1600 4xHDR\n\
                    [41]\t\"H-1c34da030060a414\"[1](1c34da030060a414) \t\t# \"Mellanox Technologies Aggregation Node\" lid 277 4xHDR\n\
                    \n\
                    Ca\t1 \"H-1c34da030072886e\"\t\t# \"Mellanox Technologies Aggregation Node\"\n\
                    [1](1c34da030072886e) \t\"S-1c34da0300728866\"[41]\t\t# lid 355 lmc 0 \"MF0;MLG01-02:MQM8700/U1\" lid 1600 4xHDR\n\
                    \n\
                    Ca\t1 \"H-1c34da030060a414\"\t\t# \"Mellanox Technologies Aggregation Node\"\n\
                    [1](1c34da030060a414) \t\"S-1c34da030060a40c\"[41]\t\t# lid 277 lmc 0 \"MF0;CSPINE1-80:MQM8700/U1\" lid 102 4xHDR\n";
        let t = Topology::parse(text).unwrap();
        assert_eq!(t.leaves(), 1, "the spine's only CA is its Aggregation Node");
        let leaf = t.leaf_of("selene-swift-01").unwrap();
        assert_eq!(t.leaf_name(leaf), "MF0;MLG01-02:MQM8700/U1");
        assert_eq!(t.uplinks(leaf), ["MF0;CSPINE1-80:MQM8700/U1"]);
        assert_eq!(t.leaf_of("Mellanox"), None);
        assert_eq!(t.leaf_of_nic("Mellanox", "Technologies"), None);
        // Only Aggregation Nodes: no switch has a host.
        let only_an = text.lines().skip(5).collect::<Vec<_>>().join("\n");
        assert!(Topology::parse(&only_an).is_err(), "a spine with only its AN is no leaf");
    }

    #[test]
    fn not_a_topology() {
        assert!(Topology::parse("hello\nworld\n").is_err());
        assert!(Topology::parse("").is_err());
    }
}
