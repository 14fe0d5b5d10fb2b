//! `--bisect` (when the whole run failed): the hosts are split into halves that keep the same
//! mix of leaves (with `--topology`), each half is run again, a failing half is split again,
//! and a lone host of a failing half is run beside a host that passed: failing there, it is
//! isolated. Where every half failed (half the hosts or more bad, or a handful of hosts), a
//! ring of pairs of the lone hosts looks for two that pass together before any is named.
//!
//! The bound ([`bound`]): a failing group of two or more hosts costs at most two runs (its two
//! halves, or a lone half's run beside good hosts), and at depth d of the halving at most
//! min(k, 2^d) groups fail, over ⌈log2 n⌉ depths: 2k⌈log2 n⌉. The ring of pairs runs only
//! when every half failed, which takes k >= 2^(⌊log2 n⌋-1) bad hosts (both halves of every
//! group down to groups of two or three), so its at most n pairs are fewer than 4k:
//! 2k⌈log2 n⌉ + min(n, 4k) for every n >= 2 and 1 <= k <= n (the property test in
//! tests/integration/collective.rs holds it, n from 2 with flaky links). The ring finds a
//! passing pair whenever two good hosts sit side by side in it, which fewer than half bad
//! guarantees: with 2k < n the bad hosts are isolated exactly; else, where no pair passed,
//! every host is named, saying so.

use super::doc::SubRun;
use super::member::Member;
use super::members::Members;
use super::once::{once, sub_run, Config, Stop};
use super::op::Op;
use super::plan::Ring;
use crate::outcome::Verdict;

/// What bisection found: every sub-run, and the hosts it isolated with why.
pub struct Found {
    pub runs: Vec<SubRun>,
    pub isolated: Vec<(String, String)>,
}

/// The most runs bisection takes for `k` suspects among `n` hosts: 2k⌈log2 n⌉ + min(n, 4k)
/// (the module's note says why), the full run that failed not counted.
pub fn bound(k: usize, n: usize) -> usize {
    let k = k.max(1);
    2 * k * ceil_log2(n) + n.min(4 * k)
}

/// ⌈log2 n⌉ (0 for n <= 1).
fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// A host and its members.
struct Unit {
    host: String,
    members: Vec<u32>,
    leaf: Option<usize>,
}

pub fn bisect(members: &[Member], runner: &mut dyn Members, config: &Config) -> Result<Found, Stop> {
    let mut units: Vec<Unit> = Vec::new();
    for (i, m) in members.iter().enumerate() {
        match units.iter_mut().find(|u| u.host == m.host) {
            Some(u) => u.members.push(i as u32),
            None => units.push(Unit {
                host: m.host.clone(),
                members: vec![i as u32],
                leaf: config.topology.as_ref().and_then(|t| super::order::leaf_of(t, m)),
            }),
        }
    }
    let full = super::order::rings(members, config.topology.as_ref());
    let mut found = Found { runs: Vec::new(), isolated: Vec::new() };
    let mut good: Vec<usize> = Vec::new();
    let mut lone: Vec<usize> = Vec::new();
    let mut queue: Vec<Vec<usize>> = vec![(0..units.len()).collect()];
    while let Some(group) = queue.pop() {
        if group.len() == 1 {
            lone.push(group[0]);
            continue;
        }
        for half in halves(&group, &units) {
            // A lone host is run beside good ones at the end, not alone.
            if half.len() == 1 || sub(members, runner, config, &full, &units, &half, &mut found)? == Verdict::Fail {
                queue.push(half);
            } else {
                good.extend(half);
            }
        }
    }
    // Every half failed: two lone hosts that pass together are good, to compare the others with.
    if good.is_empty() && lone.len() > 2 {
        if let Some(pair) = passing_pair(members, runner, config, &full, &units, &lone, &mut found)? {
            lone.retain(|u| !pair.contains(u));
            good.extend(pair);
        }
    }
    // Each lone host of a failing half, beside good hosts.
    for u in lone {
        if good.is_empty() {
            found.isolated.push((
                units[u].host.clone(),
                "every sub-run failed, pairs of hosts too: no host passed to compare it with (half the hosts or more are bad, or the fault needs them all)".into(),
            ));
            continue;
        }
        let need = config.op.min_members().saturating_sub(units[u].members.len()).max(1);
        let mut probe = vec![u];
        let mut have = 0;
        for g in &good {
            if have >= need {
                break;
            }
            probe.push(*g);
            have += units[*g].members.len();
        }
        if sub(members, runner, config, &full, &units, &probe, &mut found)? == Verdict::Fail {
            let busbw = found.runs.last().map_or(0.0, |r| r.busbw_gbps);
            found.isolated.push((units[u].host.clone(), format!("--bisect: it failed beside hosts that passed (busbw {busbw:.1} Gb/s)")));
        } else {
            good.push(u);
        }
    }
    Ok(found)
}

/// The first pair of `lone` hosts that passes, trying each host beside the next in a ring
/// (evens then odds, so two halves of one failed group of two, one of them bad, are not
/// neighbours): at most `lone.len()` runs; found whenever two good hosts are neighbours.
fn passing_pair(
    members: &[Member],
    runner: &mut dyn Members,
    config: &Config,
    full: &[Ring],
    units: &[Unit],
    lone: &[usize],
    found: &mut Found,
) -> Result<Option<[usize; 2]>, Stop> {
    let ring: Vec<usize> = lone.iter().step_by(2).chain(lone.iter().skip(1).step_by(2)).copied().collect();
    for i in 0..ring.len() {
        let pair = [ring[i], ring[(i + 1) % ring.len()]];
        if sub(members, runner, config, full, units, &pair, found)? == Verdict::Pass {
            return Ok(Some(pair));
        }
    }
    Ok(None)
}

/// Two halves of `group` that keep its mix of leaves: each leaf's hosts dealt out in turn.
fn halves(group: &[usize], units: &[Unit]) -> [Vec<usize>; 2] {
    let mut sorted = group.to_vec();
    sorted.sort_by_key(|u| units[*u].leaf.unwrap_or(usize::MAX));
    let mut out = [Vec::new(), Vec::new()];
    for (i, u) in sorted.into_iter().enumerate() {
        out[i % 2].push(u);
    }
    out
}

/// Runs the op (or, for too few members, allreduce) over these hosts' members, in the full
/// run's ring order, and lists the run.
fn sub(
    members: &[Member],
    runner: &mut dyn Members,
    config: &Config,
    full: &[Ring],
    units: &[Unit],
    hosts: &[usize],
    found: &mut Found,
) -> Result<Verdict, Stop> {
    let mut ids: Vec<u32> = hosts.iter().flat_map(|u| units[*u].members.iter().copied()).collect();
    ids.sort_unstable();
    let rings: Vec<Ring> =
        full.iter().map(|r| Ring { rail: r.rail, order: r.order.iter().filter(|m| ids.binary_search(&m.0).is_ok()).copied().collect() }).collect();
    let smallest = rings.iter().map(|r| r.order.len()).filter(|n| *n > 0).min().unwrap_or(0);
    let op = if smallest >= config.op.min_members() { config.op } else { Op::AllReduce };
    let rings: Vec<Ring> = rings.into_iter().filter(|r| r.order.len() >= op.min_members()).collect();
    if rings.is_empty() {
        return Ok(Verdict::Pass);
    }
    let config = Config { op, ..config.clone() };
    let judged = once(members, runner, &config, rings)?;
    found.runs.push(sub_run(&ids, &judged));
    Ok(judged.verdict)
}
