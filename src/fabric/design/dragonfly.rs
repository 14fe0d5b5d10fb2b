//! Dragonfly+: the global links counted per pair of groups.
//!
//! A Dragonfly+ (Shpiner et al., "Dragonfly+: Low Cost Topology for Scaling Datacenters",
//! HiPINEB 2017) is groups of leaves and spines, each group a small fat tree, whose spines are
//! cabled to other groups' spines. Its minimal routes want a direct global link between every
//! two groups, and its bandwidth wants them spread evenly: a group's global links shared over
//! the other groups, each pair at least the even share (rounded down, so a design whose count
//! does not divide evenly passes).
//!
//! The spines' own counts (`tiers`' same-tier rule) find a missing link. A cable plugged into
//! the wrong group's spine, or two cables swapped between groups, keeps every spine's count and
//! is found only here. A pair the spine rule already explains (a short spine of each group, no
//! link between them: "likely that cable") is not said twice, unless no link joins the two
//! groups at all: then their traffic takes two global hops, which the spines' words do not say.

use crate::fabric::design::groups::{most_common, Group};
use crate::fabric::design::planned::say;
use crate::fabric::judgement::Noted;
use crate::mad::attributes::Guid;
use crate::outcome::Severity;
use std::collections::BTreeSet;

/// The group-pair rule over the leaf-spine `groups` of a fabric whose spines have links to each
/// other. `short`: the spines the same-tier rule named.
pub(super) fn group_pair_rules(
    groups: &[Group],
    short: &BTreeSet<Guid>,
    count: &impl Fn(&Guid, &Guid) -> usize,
    as_planned: &impl Fn(&Guid, &Guid) -> bool,
    name: &impl Fn(&Guid) -> String,
) -> Vec<Noted> {
    let mut out = Vec::new();
    let between = |a: &Group, b: &Group| -> usize { a.ups.iter().map(|x| b.ups.iter().map(|y| count(x, y)).sum::<usize>()).sum() };
    let pairs = |i: usize| (0..groups.len()).filter(move |j| *j != i);
    let linked: Vec<usize> = (0..groups.len()).filter(|i| pairs(*i).any(|j| between(&groups[*i], &groups[j]) > 0)).collect();
    if linked.len() < 3 {
        return out; // two groups: their one pair's count is the spines' counts, already judged
    }
    let others = linked.len() - 1;
    let total = |i: usize| -> usize { linked.iter().filter(|j| **j != i).map(|j| between(&groups[i], &groups[*j])).sum() };
    let Some(usual) = most_common(linked.iter().map(|i| total(*i))) else { return out };
    let even = usual / others;
    if even == 0 {
        return out; // fewer global links than groups: not every pair is meant to be joined
    }
    let explained =
        |a: &Group, b: &Group| a.ups.iter().filter(|x| short.contains(x)).any(|x| b.ups.iter().any(|y| short.contains(y) && count(x, y) == 0));
    for (k, i) in linked.iter().enumerate() {
        for j in &linked[k + 1..] {
            let (a, b) = (&groups[*i], &groups[*j]);
            let n = between(a, b);
            if n >= even || (n > 0 && explained(a, b)) {
                continue;
            }
            let planned = a.ups.iter().all(|x| b.ups.iter().all(|y| as_planned(x, y)));
            let (la, lb) = (label(a, name), label(b, name));
            let words = |_: &[String]| {
                let hops = if n == 0 { "; with none, their traffic takes two global hops, through a third group" } else { "" };
                format!(
                    "the groups of spines {la} and {lb} have {n} global link(s) between them, where a group's usual {usual} \
                     global links, spread over the {others} other groups, give every pair at least {even}: a global link \
                     missing, or plugged into another group's spine{hops}"
                )
            };
            let remedy = "trace these groups' global cables against the cabling plan (a --topology or --plan run names the ports): \
                          one is unplugged or on another group's spine";
            say(&mut out, Severity::Warning, &format!("{la} <-> {lb}"), &[(String::new(), planned)], words, remedy);
        }
    }
    out
}

/// A group named by its spines: all of them up to three, else the first three and a count.
fn label(group: &Group, name: &impl Fn(&Guid) -> String) -> String {
    let mut names: Vec<String> = group.ups.iter().map(name).collect();
    names.sort();
    match names.len() {
        0..=3 => names.join("/"),
        n => format!("{}/+{}", names[..3].join("/"), n - 3),
    }
}
