//! Which leaf switch each endpoint hangs off (pure), from `ibnetdiscover` output.
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

use std::collections::HashMap;

/// A leaf switch, by its index in [`Topology`].
pub type LeafId = usize;

#[derive(Debug, Clone, Default)]
pub struct Topology {
    leaves: Vec<Leaf>,
    /// Host name -> leaf.
    by_host: HashMap<String, LeafId>,
}

#[derive(Debug, Clone)]
struct Leaf {
    /// The switch's node description (`leaf3`), else its GUID.
    name: String,
    guid: String,
    /// Switches its other ports lead to (their descriptions), each once.
    uplinks: Vec<String>,
}

impl Topology {
    /// Parses ibnetdiscover's output. Lines it does not know are skipped; a topology with no
    /// switch that has a CA on it is an error (the wrong file, most likely).
    pub fn parse(text: &str) -> Result<Topology, String> {
        let mut topo = Topology::default();
        let mut current: Option<LeafId> = None;
        let mut current_switch: Option<(String, String)> = None;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("Switch") {
                let guid = quoted(line, 0).unwrap_or_default();
                let name = comment_desc(line).unwrap_or_else(|| guid.clone());
                current_switch = Some((guid, name));
                current = None;
            } else if line.starts_with("Ca") || line.starts_with("Rt") {
                current_switch = None;
                current = None;
            } else if line.starts_with('[') {
                let Some((guid, name)) = &current_switch else { continue };
                let Some(peer) = quoted(line, 0) else { continue };
                let leaf = match current {
                    Some(l) => l,
                    None => {
                        let l = match topo.leaves.iter().position(|x| &x.guid == guid) {
                            Some(l) => l,
                            None => {
                                topo.leaves.push(Leaf { name: name.clone(), guid: guid.clone(), uplinks: Vec::new() });
                                topo.leaves.len() - 1
                            }
                        };
                        current = Some(l);
                        l
                    }
                };
                let desc = comment_desc(line);
                if peer.starts_with("H-") {
                    if let Some(host) = desc.as_deref().and_then(|d| d.split_whitespace().next()) {
                        topo.by_host.entry(host.to_string()).or_insert(leaf);
                    }
                } else if peer.starts_with("S-") {
                    let up = desc.unwrap_or(peer);
                    if !topo.leaves[leaf].uplinks.contains(&up) {
                        topo.leaves[leaf].uplinks.push(up);
                    }
                }
            }
        }
        // Switches with no CA are spines, not leaves: drop them, renumbering the rest.
        let mut keep: Vec<Option<LeafId>> = vec![None; topo.leaves.len()];
        let mut leaves = Vec::new();
        for (i, leaf) in topo.leaves.iter().enumerate() {
            if topo.by_host.values().any(|&l| l == i) {
                keep[i] = Some(leaves.len());
                leaves.push(leaf.clone());
            }
        }
        if leaves.is_empty() {
            return Err("no switch with a host on it: is this ibnetdiscover output?".into());
        }
        let by_host = topo.by_host.into_iter().filter_map(|(h, l)| keep[l].map(|k| (h, k))).collect();
        Ok(Topology { leaves, by_host })
    }

    /// The leaf of a host (as ibnetdiscover's node description starts: `n07` of `n07 mlx5_0`).
    pub fn leaf_of(&self, host: &str) -> Option<LeafId> {
        self.by_host.get(host).copied()
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

/// The `nth` double-quoted string of a line, outside the `#` comment.
fn quoted(line: &str, nth: usize) -> Option<String> {
    let head = line.split('#').next().unwrap_or("");
    head.split('"').skip(1).step_by(2).nth(nth).map(str::to_string)
}

/// The first quoted string after `#`: a node description.
fn comment_desc(line: &str) -> Option<String> {
    let (_, comment) = line.split_once('#')?;
    comment.split('"').nth(1).map(str::to_string)
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
    fn not_a_topology() {
        assert!(Topology::parse("hello\nworld\n").is_err());
        assert!(Topology::parse("").is_err());
    }
}
