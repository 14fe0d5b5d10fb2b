//! Ring order (pure): one ring per rail with `--rails` (rail k of every host), each in the
//! order given, or with `--topology` consecutive members in one leaf (as NCCL's rings keep a
//! leaf's members together so that only the ring's leaf-to-leaf hops cross the spines). The
//! leaves are `mesh`'s reading of ibnetdiscover ([`crate::mesh::topology`]).

use super::member::Member;
use super::plan::Ring;
use crate::mesh::topology::{LeafId, Topology};
use crate::model::collective::MemberId;

/// The leaf of a member: its NIC's leaf where the CA names its device, else its host's.
pub fn leaf_of(topology: &Topology, member: &Member) -> Option<LeafId> {
    topology.leaf_of_nic(&member.host, &member.device).or_else(|| topology.leaf_of(&member.host))
}

/// The rings of a run: one per rail (in rail order; members without a rail form one ring),
/// each ordered by leaf when a topology is given (leaves in the order their first member was
/// given; members in no leaf last), else in the order given.
pub fn rings(members: &[Member], topology: Option<&Topology>) -> Vec<Ring> {
    let mut rails: Vec<Option<u16>> = members.iter().map(|m| m.rail).collect();
    rails.sort();
    rails.dedup();
    rails
        .into_iter()
        .map(|rail| {
            let mut order: Vec<usize> = (0..members.len()).filter(|i| members[*i].rail == rail).collect();
            if let Some(topo) = topology {
                order = by_leaf(&order, |i| leaf_of(topo, &members[i]));
            }
            Ring { rail, order: order.into_iter().map(|i| MemberId(i as u32)).collect() }
        })
        .collect()
}

/// `items` grouped by leaf, keeping the given order inside a leaf and between leaves (a leaf
/// where its first item stands); items of no leaf last.
pub fn by_leaf(items: &[usize], leaf: impl Fn(usize) -> Option<LeafId>) -> Vec<usize> {
    let mut first_seen: Vec<LeafId> = Vec::new();
    for &i in items {
        if let Some(l) = leaf(i) {
            if !first_seen.contains(&l) {
                first_seen.push(l);
            }
        }
    }
    let rank = |i: usize| leaf(i).map_or(usize::MAX, |l| first_seen.iter().position(|x| *x == l).unwrap_or(usize::MAX));
    let mut out = items.to_vec();
    out.sort_by_key(|i| rank(*i));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::LinkLayer;

    pub(crate) fn member(host: &str, device: &str, rail: Option<u16>) -> Member {
        Member {
            host: host.into(),
            device: device.into(),
            port: 1,
            rail,
            capacity_gbps: Some(200.0),
            link_layer: LinkLayer::InfiniBand,
            mtu: Some(4096),
        }
    }

    #[test]
    fn one_ring_per_rail_in_the_order_given() {
        let members: Vec<Member> = ["a", "b", "c"].iter().flat_map(|h| (0..2).map(move |r| member(h, &format!("mlx5_{r}"), Some(r)))).collect();
        let rings = rings(&members, None);
        assert_eq!(rings.len(), 2);
        assert_eq!(rings[1].rail, Some(1));
        assert_eq!(rings[1].order, vec![MemberId(1), MemberId(3), MemberId(5)]);
    }

    #[test]
    fn a_leafs_members_are_consecutive() {
        let text = "\
Switch 4 \"S-01\" # \"leaf1\" base port 0 lid 1 lmc 0
[1] \"H-a\"[1](a1) # \"a mlx5_0\" lid 2 4xHDR
[2] \"H-c\"[1](c1) # \"c mlx5_0\" lid 3 4xHDR

Switch 4 \"S-02\" # \"leaf2\" base port 0 lid 4 lmc 0
[1] \"H-b\"[1](b1) # \"b mlx5_0\" lid 5 4xHDR
[2] \"H-d\"[1](d1) # \"d mlx5_0\" lid 6 4xHDR

Ca 1 \"H-a\" # \"a mlx5_0\"
[1](a1) \"S-01\"[1] # lid 2 lmc 0 \"leaf1\" lid 1 4xHDR

Ca 1 \"H-b\" # \"b mlx5_0\"
[1](b1) \"S-02\"[1] # lid 5 lmc 0 \"leaf2\" lid 4 4xHDR

Ca 1 \"H-c\" # \"c mlx5_0\"
[1](c1) \"S-01\"[2] # lid 3 lmc 0 \"leaf1\" lid 1 4xHDR

Ca 1 \"H-d\" # \"d mlx5_0\"
[1](d1) \"S-02\"[2] # lid 6 lmc 0 \"leaf2\" lid 4 4xHDR
";
        let topo = Topology::parse(text).unwrap();
        let members: Vec<Member> = ["a", "b", "c", "d", "e"].iter().map(|h| member(h, "mlx5_0", None)).collect();
        let rings = rings(&members, Some(&topo));
        assert_eq!(rings[0].order, [0, 2, 1, 3, 4].map(MemberId));
    }
}
