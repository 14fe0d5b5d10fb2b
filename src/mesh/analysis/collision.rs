//! A flaky pair that may be a route collision (issue #44, pure): a pair bad in the first pass
//! and good on its retest alone, whose ends are on two leaves, ran beside other pairs that
//! crossed the same leaves' uplinks. Two flows the SM routed over one uplink share its bandwidth
//! (a static route per destination LID: the LFTs `fabric` walks), which a flaky cable and a
//! collision both show as "bad together, good alone". The mesh cannot see the routes; it names
//! the possibility and the leaves, and `fabric`'s `fabric.route` (the SM's tables walked) tells.

use super::{Leaves, Suspect, SuspectKind};

/// Adds the route-collision reading to every flaky link suspect whose pair crossed leaves
/// beside other pairs over the same leaves' uplinks in its first-pass round.
pub fn name_route_collisions(suspects: &mut [Suspect], endpoints: &[String], first_rounds: &[Vec<(usize, usize)>], leaves: &Leaves) {
    let index = |name: &str| endpoints.iter().position(|e| e == name);
    let leaf = |e: usize| leaves.of.get(e).copied().flatten();
    for s in suspects.iter_mut().filter(|s| s.flaky && s.kind == SuspectKind::Link) {
        let Some((a, b)) = s.subject.split_once("<->").and_then(|(a, b)| Some((index(a)?, index(b)?))) else { continue };
        let (Some(la), Some(lb)) = (leaf(a), leaf(b)) else { continue };
        if la == lb {
            continue;
        }
        let same = |&(x, y): &(usize, usize)| (x, y) == (a, b) || (y, x) == (a, b);
        let Some(round) = first_rounds.iter().find(|r| r.iter().any(same)) else { continue };
        // The other pairs of its round that crossed the spine from or to one of its leaves.
        let beside = round
            .iter()
            .filter(|p| !same(p))
            .filter(|&&(x, y)| match (leaf(x), leaf(y)) {
                (Some(lx), Some(ly)) => lx != ly && [lx, ly].iter().any(|l| *l == la || *l == lb),
                _ => false,
            })
            .count();
        if beside == 0 {
            continue;
        }
        let name = |l: usize| leaves.names.get(l).cloned().unwrap_or_else(|| format!("leaf #{l}"));
        s.reason.push_str(&format!(
            "; or a route collision: it crossed the uplinks of {} and {} beside {beside} other pair{} of its round, and was good alone; \
             see whether the subnet manager routes them over one uplink (`fabcheck fabric`, fabric.route) or rerun with --pattern all-pairs",
            name(la),
            name(lb),
            if beside == 1 { "" } else { "s" }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves() -> Leaves {
        // Endpoints 0,1 on leaf0; 2,3 on leaf1; 4 on no known leaf.
        Leaves { of: vec![Some(0), Some(0), Some(1), Some(1), None], names: vec!["leaf0".into(), "leaf1".into()], uplinks: vec![vec![], vec![]] }
    }

    fn flaky(subject: &str) -> Suspect {
        let mut s = Suspect::warning(SuspectKind::Link, subject, "flaky: at ~50 Gb/s in the first pass, good on retest");
        s.flaky = true;
        s
    }

    #[test]
    fn a_flaky_pair_beside_others_over_its_uplinks_may_be_a_collision() {
        let endpoints: Vec<String> = (0..5).map(|i| format!("e{i}")).collect();
        let rounds = vec![vec![(0, 2), (1, 3)], vec![(0, 1), (2, 3)], vec![(0, 3), (1, 4)]];
        let mut suspects = vec![flaky("e0<->e2"), flaky("e0<->e1"), flaky("e0<->e3")];
        name_route_collisions(&mut suspects, &endpoints, &rounds, &leaves());
        assert!(suspects[0].reason.starts_with("flaky: "), "still flaky first: {}", suspects[0].reason);
        assert!(
            suspects[0].reason.contains("route collision: it crossed the uplinks of leaf0 and leaf1 beside 1 other pair"),
            "{}",
            suspects[0].reason
        );
        assert!(!suspects[1].reason.contains("collision"), "inside one leaf: no uplink crossed");
        assert!(!suspects[2].reason.contains("collision"), "beside a pair whose leaf is unknown only");
    }
}
