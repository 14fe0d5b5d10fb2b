//! `fabric.creditloop`: the channel-dependency graph of the SM's routes, per virtual lane, and
//! its cycles (ibdiagnet `-r`'s credit-loop check; Dally and Seitz's condition: routing is
//! deadlock-free when the graph of channel dependencies is acyclic). Pure.
//!
//! A channel is one direction of a switch-to-switch cable on one VL: `(switch, out port, VL)`.
//! A packet that holds a buffer of channel `c` while it waits for channel `d` makes `d` a
//! dependency of `c`. For every destination LID a host port owns (every LID of its LMC range),
//! the walk starts at each host's switch and follows the forwarding tables; each pair of
//! consecutive switch-to-switch hops adds one dependency. The VL of a hop is the switch's
//! SL2VL entry for (in port, out port, SL); where the SL2VL tables are not given, SL 0 maps to
//! VL 0 on every hop (what an SM with one data VL sets), so the graph is the single-VL one.
//! Where they are read, every SL whose column of the maps differs is walked, and the graphs
//! are joined (a packet keeps its SL; its VL may change hop by hop). A cycle in it is a credit loop: once every buffer on it fills, no packet on it moves.

use crate::fabric::discovery::links::{end_name, Index};
use crate::fabric::discovery::model::{Fabric, Lft, Tables};
use crate::fabric::routes::route::hosts;
use crate::mad::attributes::{Guid, NodeType};
use crate::outcome::{Finding, FindingId, Severity};
use crate::port::PortState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// One direction of a switch-to-switch cable on one VL: the switch, its out port, the VL.
pub type Channel = (Guid, u8, u8);

/// Cycles reported before the rest are counted (a bad engine makes many).
const LISTED: usize = 5;

pub use crate::fabric::discovery::model::Sl2Vl;

/// The dependency graph: each channel and the channels it waits on.
#[derive(Debug, Default)]
pub struct Graph {
    pub edges: BTreeMap<Channel, BTreeSet<Channel>>,
}

/// Builds the graph from the forwarding tables, for traffic on `sl`.
pub fn graph(fabric: &Fabric, tables: &Tables, sl2vl: &Sl2Vl, sl: u8) -> Graph {
    // Looked up once per hop of every destination's walk: by GUID, not by a scan of the nodes
    // (a scan made a 1,400-node fabric take minutes).
    let index = Index::new(fabric);
    let by_guid = &index.by_guid;
    let is_switch = |g: Guid| by_guid.get(&g).is_some_and(|n| n.node_type == NodeType::Switch);
    let vl = |switch: Guid, inp: u8, out: u8| sl2vl.get(&(switch, inp, out)).map_or(0, |m| m[usize::from(sl & 15)]);
    // The next switch out of (switch, port), and the port it enters by, if ACTIVE.
    let next = |switch: Guid, port: u8| -> Option<(Guid, u8)> {
        let p = by_guid.get(&switch)?.port(port).filter(|p| p.info.state == PortState::Active)?;
        p.remote.filter(|(g, _)| is_switch(*g))
    };
    let host_ports = hosts(fabric);
    let entries: BTreeSet<(Guid, u8)> = host_ports.iter().filter(|h| is_switch(h.peer.0)).map(|h| h.peer).collect();
    let mut g = Graph::default();
    for lid in host_ports.iter().flat_map(|h| h.lids()) {
        // Each (switch, in port) is walked once per destination: the rest of its route is the
        // same whichever host it came from.
        let mut done: HashSet<(Guid, u8)> = HashSet::new();
        // This LID's dependencies (a channel, and the one it waits on next, if any); dropped
        // whole when its routes loop: a forwarding loop is `fabric.route`'s, not a credit loop.
        let mut found: Vec<(Channel, Option<Channel>)> = Vec::new();
        let mut looped = false;
        for &(start, in_port) in &entries {
            let (mut at, mut inp) = (start, in_port);
            let mut held: Option<Channel> = None;
            let mut passed: Vec<Guid> = Vec::new();
            loop {
                if passed.contains(&at) {
                    looped = true;
                    break;
                }
                passed.push(at);
                if !done.insert((at, inp)) {
                    // Walked already for this LID: link the held channel to where that walk
                    // went on from here.
                    if let (Some(prev), Some(out)) = (held, out_port(tables, at, lid)) {
                        if next(at, out).is_some() {
                            found.push((prev, Some((at, out, vl(at, inp, out)))));
                        }
                    }
                    break;
                }
                let Some(out) = out_port(tables, at, lid) else { break };
                let Some((peer, peer_port)) = next(at, out) else { break };
                let channel = (at, out, vl(at, inp, out));
                found.push((channel, None));
                if let Some(prev) = held {
                    found.push((prev, Some(channel)));
                }
                held = Some(channel);
                (at, inp) = (peer, peer_port);
            }
            if looped {
                break;
            }
        }
        if !looped {
            for (from, to) in found {
                let waits = g.edges.entry(from).or_default();
                if let Some(to) = to {
                    waits.insert(to);
                    g.edges.entry(to).or_default();
                }
            }
        }
    }
    g
}

/// The out port of `switch` towards `lid`, if it forwards it to another port (0 is the switch
/// itself, 0xFF no route).
fn out_port(tables: &Tables, switch: Guid, lid: u16) -> Option<u8> {
    tables.lfts.get(&switch).map(|l| l.port_for(lid)).filter(|&o| o != 0 && o != Lft::NONE)
}

/// The cycles of the graph, one per strongly connected part that has one (Tarjan's
/// algorithm, iterative), each as its channels in order from the lowest.
pub fn cycles(g: &Graph) -> Vec<Vec<Channel>> {
    let nodes: Vec<Channel> = g.edges.keys().copied().collect();
    let index_of: HashMap<Channel, usize> = nodes.iter().enumerate().map(|(i, c)| (*c, i)).collect();
    let adj: Vec<Vec<usize>> = nodes.iter().map(|c| g.edges[c].iter().filter_map(|d| index_of.get(d).copied()).collect()).collect();
    let components = strongly_connected(&adj);
    let mut out = Vec::new();
    for comp in components {
        let inside: HashSet<usize> = comp.iter().copied().collect();
        let self_loop = comp.len() == 1 && adj[comp[0]].contains(&comp[0]);
        if comp.len() < 2 && !self_loop {
            continue;
        }
        // One cycle through the component's lowest channel: a breadth-first path back to it.
        let start = *comp.iter().min().unwrap_or(&comp[0]);
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut end = None;
        'search: while let Some(v) = queue.pop_front() {
            for &w in adj[v].iter().filter(|w| inside.contains(w)) {
                if w == start {
                    end = Some(v);
                    break 'search;
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(w) {
                    e.insert(v);
                    queue.push_back(w);
                }
            }
        }
        let Some(mut v) = end else { continue };
        let mut cycle = vec![nodes[v]];
        while v != start {
            v = parent[&v];
            cycle.push(nodes[v]);
        }
        cycle.reverse();
        out.push(cycle);
    }
    out.sort();
    out
}

/// Tarjan's strongly connected components over an adjacency list, without recursion.
fn strongly_connected(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = adj.len();
    let (mut index, mut low, mut on_stack) = (vec![UNSEEN; n], vec![0; n], vec![false; n]);
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = adj[v].get(*i) {
                *i += 1;
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

/// The SLs whose routes differ in VL somewhere (one per distinct column of the SL2VL maps):
/// SL 0 alone where no map was read.
fn distinct_sls(sl2vl: &Sl2Vl) -> Vec<u8> {
    let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
    (0..16u8).filter(|&sl| sl == 0 || !sl2vl.is_empty()).filter(|&sl| seen.insert(sl2vl.values().map(|m| m[usize::from(sl)]).collect())).collect()
}

/// `fabric.creditloop` findings: the graph of every SL's routes together (each hop on the VL
/// its switch's SL2VL map gives), one error per cycle of links (up to five), naming its links
/// and the VLs it is found on.
pub fn judge(fabric: &Fabric, tables: &Tables, sl2vl: &Sl2Vl) -> Vec<Finding> {
    if tables.lfts.is_empty() {
        return Vec::new();
    }
    let mut all = Graph::default();
    for sl in distinct_sls(sl2vl) {
        for (from, to) in graph(fabric, tables, sl2vl, sl).edges {
            all.edges.entry(from).or_default().extend(to);
        }
    }
    // The same links in a cycle on several VLs are one finding.
    let mut found: BTreeMap<Vec<(Guid, u8)>, BTreeSet<u8>> = BTreeMap::new();
    for cycle in cycles(&all) {
        let vl = cycle[0].2;
        found.entry(cycle.iter().map(|&(g, p, _)| (g, p)).collect()).or_default().insert(vl);
    }
    let link = |&(g, port): &(Guid, u8)| -> String {
        let Some(node) = fabric.node(g) else { return format!("{g}[{port}]") };
        let far = node.port(port).and_then(|p| p.remote).and_then(|(r, rp)| fabric.node(r).map(|n| end_name(n, rp)));
        format!("{} -> {}", end_name(node, port), far.unwrap_or_else(|| "?".into()))
    };
    let total = found.len();
    found
        .iter()
        .take(LISTED)
        .map(|(cycle, vls)| {
            let links: Vec<String> = cycle.iter().map(link).collect();
            let vls: Vec<String> = vls.iter().map(u8::to_string).collect();
            let on = if vls.len() == 1 { format!("VL {}", vls[0]) } else { format!("VLs {}", vls.join(", ")) };
            let more = if total > LISTED { format!(" ({total} cycles in all, {LISTED} listed)") } else { String::new() };
            Finding {
                id: FindingId::FabricCreditloop,
                severity: Severity::Error,
                subject: links.first().cloned().unwrap_or_default().into(),
                message: format!(
                    "credit loop on {on}: the routes make these {} links wait on each other in a cycle: {}{more}; under load every buffer on \
                     it can fill and the fabric stops moving on them",
                    links.len(),
                    links.join(", ")
                ),
                remedy: "route with a deadlock-free engine: OpenSM `-R updn` or `-R ftree` on trees, `-R dfsssp` (with enough VLs) on other \
                         topologies such as rings and tori; then resweep and rerun"
                    .into(),
                about: None,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "creditloop/tests.rs"]
mod tests;
