//! The plan's word on the design rules. With `--topology` or `--plan` the operator has said
//! how the fabric is meant to be cabled: a switch pair the plan cables exactly as it is live
//! (a management leaf on one spine, a storage pod thinner than the compute pods) is the design,
//! not a fault, however it differs from its tree. The design rules then say such a pair as
//! `info`; a pair the plan cables otherwise stays a fault (and `fabric.topology.*` names its
//! ports); `say` splits a rule's items so. Also the one place a plan's node is found among the
//! discovered ones.

use crate::fabric::design::topology::{NodeKey, Topology};
use crate::fabric::discovery::links::Index;
use crate::fabric::discovery::model::{Fabric, Node};
use crate::fabric::judgement::Noted;
use crate::mad::attributes::Guid;
use crate::outcome::{FindingId, Severity};
use std::collections::{HashMap, HashSet};

/// Finds a plan's node among the discovered ones: by GUID when the plan gives one, else by node
/// description (the first node with it; `fabric.duplicate` names descriptions used twice).
pub struct Resolver<'a> {
    index: &'a Index<'a>,
    /// Each description's first node, and how many nodes hold it.
    by_description: HashMap<&'a str, (&'a Node, usize)>,
}

impl<'a> Resolver<'a> {
    pub fn new(fabric: &'a Fabric, index: &'a Index<'a>) -> Resolver<'a> {
        let mut by_description: HashMap<&str, (&Node, usize)> = HashMap::new();
        for n in &fabric.nodes {
            by_description.entry(n.description.as_str()).or_insert((n, 0)).1 += 1;
        }
        Resolver { index, by_description }
    }

    /// The discovered node the plan's `key` names, if it was discovered.
    pub fn node(&self, key: &NodeKey) -> Option<&'a Node> {
        match key.guid {
            Some(g) => self.index.by_guid.get(&g).copied(),
            None => self.by_description.get(key.description.as_str()).map(|(n, _)| *n),
        }
    }

    /// The node `key` names when no other discovered node could be meant: by GUID, or by a
    /// description only one node holds (unnamed switches share their default one).
    pub fn only_node(&self, key: &NodeKey) -> Option<&'a Node> {
        match key.guid {
            Some(_) => self.node(key),
            None => self.by_description.get(key.description.as_str()).filter(|(_, holders)| *holders == 1).map(|(n, _)| *n),
        }
    }
}

/// How many cables the plan has between each two discovered nodes it names.
#[derive(Debug, Default)]
pub struct Planned {
    cables: HashMap<(Guid, Guid), usize>,
    named: HashSet<Guid>,
}

impl Planned {
    pub fn new(fabric: &Fabric, index: &Index, plan: &Topology) -> Planned {
        let resolver = Resolver::new(fabric, index);
        let mut planned = Planned::default();
        // Each discovered node the plan names once and unmistakably; a node two of the plan's
        // records would name is left to the rules (its cables could be either's).
        let mut found: HashMap<&str, Guid> = HashMap::new();
        let mut named_twice = HashSet::new();
        for (id, node) in &plan.nodes {
            if let Some(n) = resolver.only_node(&node.key) {
                found.insert(id.as_str(), n.guid);
                if !planned.named.insert(n.guid) {
                    named_twice.insert(n.guid);
                }
            }
        }
        found.retain(|_, g| !named_twice.contains(g));
        planned.named.retain(|g| !named_twice.contains(g));
        for link in &plan.links {
            if let (Some(a), Some(b)) = (found.get(link.a.0.as_str()), found.get(link.b.0.as_str())) {
                *planned.cables.entry(pair(*a, *b)).or_default() += 1;
            }
        }
        planned
    }

    /// Whether the plan names both switches and cables them `live` times, as they are.
    pub fn as_planned(&self, a: &Guid, b: &Guid, live: usize) -> bool {
        self.named.contains(a) && self.named.contains(b) && self.cables.get(&pair(*a, *b)).copied().unwrap_or(0) == live
    }
}

fn pair(a: Guid, b: Guid) -> (Guid, Guid) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// What a rule found about one switch, each item marked by whether the plan cables it so:
/// the items the plan does not account for said at the rule's `severity`, those it does as one
/// `info` finding ("as planned: ..."). `words` says a list of items.
pub fn say(out: &mut Vec<Noted>, severity: Severity, subject: &str, items: &[(String, bool)], words: impl Fn(&[String]) -> String, remedy: &str) {
    let listed = |planned: bool| -> Vec<String> { items.iter().filter(|(_, p)| *p == planned).map(|(item, _)| item.clone()).collect() };
    let (faults, planned) = (listed(false), listed(true));
    if !faults.is_empty() {
        out.push(Noted::new(FindingId::FabricDesign, severity, subject.to_string(), words(&faults), remedy, &[]));
    }
    if !planned.is_empty() {
        out.push(Noted::new(
            FindingId::FabricDesign,
            Severity::Info,
            subject.to_string(),
            format!("as planned: {}", words(&planned)),
            AS_PLANNED,
            &[],
        ));
    }
}

/// The remedy of a deviation the plan itself has.
const AS_PLANNED: &str = "none needed: the --topology or --plan file cables these switches so too; if that is not the design, correct the file";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::design::plan;
    use crate::fabric::discovery::fixture::Build;

    const PLAN: &str = "a_node,a_port,b_node,b_port\nleaf,1,spine,1\nleaf,2,spine,2\nspare,1,spine,3\n";

    #[test]
    fn a_pair_cabled_as_the_plan_cables_it_is_planned() {
        let mut b = Build::new();
        let (leaf, spine) = (b.switch("leaf"), b.switch("spine"));
        b.link(leaf, spine);
        b.link(leaf, spine);
        let index = Index::new(&b.fabric);
        let planned = Planned::new(&b.fabric, &index, &plan::parse("p.csv", PLAN).unwrap());
        assert!(planned.as_planned(&leaf, &spine, 2));
        assert!(planned.as_planned(&spine, &leaf, 2), "either way round");
        assert!(!planned.as_planned(&leaf, &spine, 1), "one of the plan's two cables missing");
        assert!(!planned.as_planned(&leaf, &Guid(0xdead), 0), "a switch the plan does not name");
    }

    /// Unnamed switches share their default description: a plan naming it could mean either, so
    /// neither is planned (the rules then speak as without a plan).
    #[test]
    fn a_description_two_switches_hold_names_neither() {
        let mut b = Build::new();
        let (spare, other, spine) = (b.switch("spare"), b.switch("spare"), b.switch("spine"));
        b.link(spare, spine);
        b.link(other, spine);
        let index = Index::new(&b.fabric);
        let planned = Planned::new(&b.fabric, &index, &plan::parse("p.csv", PLAN).unwrap());
        assert!(!planned.as_planned(&spare, &spine, 1));
        assert!(!planned.as_planned(&other, &spine, 1));
        assert!(!planned.as_planned(&other, &spine, 0));
    }

    /// Two of the plan's records naming one switch (a copy-paste row): its cables could be
    /// either record's, so it is not planned.
    #[test]
    fn a_switch_two_plan_records_name_is_not_planned() {
        let mut b = Build::new();
        let (leaf, spine) = (b.switch("leaf"), b.switch("spine"));
        b.link(leaf, spine);
        let index = Index::new(&b.fabric);
        let guid = format!("{leaf}");
        let text = format!("a_node,a_port,b_node,b_port\nleaf,1,spine,1\n{guid},2,spine,2\n");
        let planned = Planned::new(&b.fabric, &index, &plan::parse("p.csv", &text).unwrap());
        assert!(!planned.as_planned(&leaf, &spine, 1));
        assert!(!planned.as_planned(&leaf, &spine, 2));
    }
}
