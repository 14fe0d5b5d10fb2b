//! Groups of two adjacent tiers, and the usual link count: what the design rules compare
//! within. A group is one connected part of the links between the lower and the upper tier (a
//! three-tier fabric's pod, a rail's own spines, a plane of cores, a Dragonfly+'s group).

use crate::mad::attributes::Guid;
use std::collections::{BTreeMap, BTreeSet};

/// The lower and upper switches of one connected group of the two tiers' links.
pub struct Group {
    pub lows: Vec<Guid>,
    pub ups: Vec<Guid>,
}

/// The groups of `lows` and `ups` joined by links (`count` > 0); a lower switch with no link
/// up is in none.
pub fn groups(lows: &[Guid], ups: &BTreeSet<Guid>, count: &impl Fn(&Guid, &Guid) -> usize) -> Vec<Group> {
    let mut seen_low = BTreeSet::new();
    let mut out = Vec::new();
    for start in lows {
        if seen_low.contains(start) || ups.iter().all(|u| count(start, u) == 0) {
            continue;
        }
        let (mut g_low, mut g_up) = (BTreeSet::new(), BTreeSet::new());
        let mut todo = vec![*start];
        seen_low.insert(*start);
        while let Some(l) = todo.pop() {
            g_low.insert(l);
            for u in ups.iter().filter(|u| count(&l, u) > 0) {
                if g_up.insert(*u) {
                    for l2 in lows.iter().filter(|l2| count(l2, u) > 0) {
                        if seen_low.insert(*l2) {
                            todo.push(*l2);
                        }
                    }
                }
            }
        }
        out.push(Group { lows: g_low.into_iter().collect(), ups: g_up.into_iter().collect() });
    }
    out
}

/// The most common of the non-zero link counts: the usual count of a tree or tier (the larger
/// on a tie: a missing cable is likelier than an extra).
pub fn most_common(counts: impl Iterator<Item = usize>) -> Option<usize> {
    let mut tally: BTreeMap<usize, usize> = BTreeMap::new();
    for c in counts.filter(|c| *c > 0) {
        *tally.entry(c).or_default() += 1;
    }
    tally.iter().max_by_key(|(c, n)| (**n, **c)).map(|(c, _)| *c)
}
