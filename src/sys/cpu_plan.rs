//! The one CPU allocator: which CPU each measured loop of one host runs on (pure). `pair`'s
//! two ends, `mesh`'s agents on one host and every rail of `pair --rails` are placed by it, so
//! two loops of one host never busy-poll one CPU and each sits next to its adapter.

/// Fewest CPUs a host must offer before a loop is pinned without being asked. Measured on a
/// 2-vCPU Soft-RoCE guest: a pinned poller cannot move out of the way of kernel work that runs
/// on its CPU (rxe's tasklets, ksoftirqd), and pinning both ends made latency 6-30% worse.
pub const MIN_AUTO_POOL: usize = 4;

/// Where the loops run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuPlan {
    /// Loop `i` on the `i`th CPU: distinct, each local to its adapter when it has locality.
    Pinned(Vec<usize>),
    /// Left to the scheduler, and why (said as an `info` finding by the caller).
    Unpinned(Unpinned),
}

/// Why a plan pins nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpinned {
    /// No loop asked to be placed.
    Nothing,
    /// Loop `loop_index`'s pool (its adapter's local CPUs this process may use) is smaller than
    /// [`MIN_AUTO_POOL`]: pinning there made latency worse on small guests.
    SmallPool { loop_index: usize, cpus: usize },
    /// The adapters of `loops` loops share `cpus` local CPUs: fewer than one per loop.
    TooFewLocal { loop_index: usize, loops: usize, cpus: usize },
}

impl Unpinned {
    /// For the `info` finding.
    pub fn words(&self) -> String {
        match *self {
            Unpinned::Nothing => "no loop to place".into(),
            Unpinned::SmallPool { loop_index, cpus } => {
                format!("loop {loop_index}'s adapter has {cpus} usable CPU(s) near it, fewer than the {MIN_AUTO_POOL} pinning needs: not pinned")
            }
            Unpinned::TooFewLocal { loop_index, loops, cpus } => format!(
                "{loops} loops share the {cpus} CPU(s) local to loop {loop_index}'s adapter, fewer than one each: not pinned (give CPUs with --cpu)"
            ),
        }
    }
}

/// Places `locals.len()` loops; `locals[i]` is the CPU list near loop `i`'s adapter (empty:
/// no locality, as Soft-RoCE; then any allowed CPU). `allowed` is what this process may run on.
/// `keep_free` are CPUs left to the controller and the agent's I/O thread: taken only when a
/// loop's pool has no other CPU. `skip` shifts every pick (wrapping) so that another placement
/// on the same host with the next `skip` lands elsewhere: a host's `n`th agent passes `n` times
/// its loop count. All loops are pinned, or none.
pub fn plan(locals: &[Vec<usize>], allowed: &[usize], keep_free: &[usize], skip: usize) -> CpuPlan {
    if locals.is_empty() {
        return CpuPlan::Unpinned(Unpinned::Nothing);
    }
    let pools: Vec<Vec<usize>> = locals
        .iter()
        .map(|local| {
            let near: Vec<usize> = local.iter().copied().filter(|c| allowed.contains(c)).collect();
            if near.is_empty() {
                allowed.to_vec()
            } else {
                near
            }
        })
        .collect();
    if let Some((i, pool)) = pools.iter().enumerate().find(|(_, p)| p.len() < MIN_AUTO_POOL) {
        return CpuPlan::Unpinned(Unpinned::SmallPool { loop_index: i, cpus: pool.len() });
    }
    let mut taken: Vec<usize> = Vec::with_capacity(pools.len());
    for (i, pool) in pools.iter().enumerate() {
        // The pool in pick order: rotated by `skip`, CPUs kept free last.
        let start = skip % pool.len();
        let rotated = pool[start..].iter().chain(&pool[..start]).copied();
        let (free, kept): (Vec<usize>, Vec<usize>) = rotated.filter(|c| !taken.contains(c)).partition(|c| !keep_free.contains(c));
        match free.first().or(kept.first()) {
            Some(&cpu) => taken.push(cpu),
            None => {
                let sharing = pools.iter().filter(|p| p.iter().any(|c| pool.contains(c))).count();
                return CpuPlan::Unpinned(Unpinned::TooFewLocal { loop_index: i, loops: sharing, cpus: pool.len() });
            }
        }
    }
    CpuPlan::Pinned(taken)
}

/// The slot of each endpoint among those on its host (`hosts[i]` is endpoint `i`'s host, as
/// its agent reported it): the first on a host gets 0, the next 1, ... `mesh` hands it to each
/// agent as its `cpu_slot`, so several agents on one host never share a CPU.
pub fn host_slots(hosts: &[String]) -> Vec<usize> {
    hosts.iter().enumerate().map(|(i, h)| hosts[..i].iter().filter(|x| *x == h).count()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sockets of 32 CPUs: 0-31 and 32-63.
    fn socket(n: usize) -> Vec<usize> {
        (n * 32..n * 32 + 32).collect()
    }

    #[test]
    fn eight_rails_on_two_sockets() {
        let allowed: Vec<usize> = (0..64).collect();
        // NICs 0-3 on socket 0, 4-7 on socket 1 (HGX: four per socket).
        let locals: Vec<Vec<usize>> = (0..8).map(|r| socket(r / 4)).collect();
        let CpuPlan::Pinned(cpus) = plan(&locals, &allowed, &[0], 0) else { panic!("pinned") };
        assert_eq!(cpus, [1, 2, 3, 4, 32, 33, 34, 35]);
        let mut distinct = cpus.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "distinct CPUs");
        for (rail, cpu) in cpus.iter().enumerate() {
            assert!(locals[rail].contains(cpu), "rail {rail} on CPU {cpu}, local to its NIC");
        }
        assert!(!cpus.contains(&0), "none on the controller's CPU");
        // A second agent on the same host (mesh's next slot) lands on other CPUs.
        let CpuPlan::Pinned(second) = plan(&locals, &allowed, &[0], 8) else { panic!("pinned") };
        assert!(second.iter().all(|c| !cpus.contains(c)), "{second:?} vs {cpus:?}");
    }

    #[test]
    fn kept_free_cpus_are_used_only_when_needed() {
        // 8 rails, all near 8 CPUs 0-7: CPU 0 is needed, so it is taken (last).
        let locals = vec![(0..8).collect::<Vec<usize>>(); 8];
        let allowed: Vec<usize> = (0..16).collect();
        assert_eq!(plan(&locals, &allowed, &[0], 0), CpuPlan::Pinned(vec![1, 2, 3, 4, 5, 6, 7, 0]));
    }

    #[test]
    fn fewer_local_cpus_than_rails_is_unpinned() {
        // 8 rails on one socket whose NICs have 6 CPUs near them.
        let locals = vec![(0..6).collect::<Vec<usize>>(); 8];
        let allowed: Vec<usize> = (0..64).collect();
        let got = plan(&locals, &allowed, &[], 0);
        assert_eq!(got, CpuPlan::Unpinned(Unpinned::TooFewLocal { loop_index: 6, loops: 8, cpus: 6 }));
        let CpuPlan::Unpinned(why) = got else { unreachable!() };
        assert!(why.words().contains("8 loops share the 6 CPU(s)"), "{}", why.words());
        // taskset leaves only 3 of a NIC's CPUs: too small a pool to pin.
        let got = plan(&[socket(0)], &[0, 1, 2, 40, 41], &[], 0);
        assert_eq!(got, CpuPlan::Unpinned(Unpinned::SmallPool { loop_index: 0, cpus: 3 }));
        assert_eq!(plan(&[], &[0, 1, 2, 3], &[], 0), CpuPlan::Unpinned(Unpinned::Nothing));
    }

    #[test]
    fn soft_roce_rails_spread_over_the_allowed_cpus() {
        // rxe has no locality: four rails on an 8-CPU guest get four distinct CPUs.
        let locals = vec![Vec::new(); 4];
        let allowed: Vec<usize> = (0..8).collect();
        assert_eq!(plan(&locals, &allowed, &[0], 0), CpuPlan::Pinned(vec![1, 2, 3, 4]));
        // A 2-vCPU guest: left to the scheduler (MIN_AUTO_POOL).
        assert!(matches!(plan(&locals, &[0, 1], &[], 0), CpuPlan::Unpinned(Unpinned::SmallPool { .. })));
    }

    #[test]
    fn slots_count_agents_per_host() {
        let hosts: Vec<String> = ["n1", "n2", "n1", "n1", "n3", "n2"].iter().map(|s| s.to_string()).collect();
        assert_eq!(host_slots(&hosts), [0, 0, 1, 2, 0, 1]);
        // Agents on one host with the same adapter pool get distinct CPUs from their slots.
        let local = socket(1);
        let allowed: Vec<usize> = (0..64).collect();
        let picks: Vec<CpuPlan> = [0, 1, 2].iter().map(|&s| plan(std::slice::from_ref(&local), &allowed, &[], s)).collect();
        assert_eq!(picks, [CpuPlan::Pinned(vec![32]), CpuPlan::Pinned(vec![33]), CpuPlan::Pinned(vec![34])]);
    }
}
