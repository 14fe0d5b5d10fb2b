//! The mesh schedule (pure): every pair of endpoints exactly once, in rounds of disjoint pairs,
//! so a round can run all its pairs at once without any endpoint being in two tests.
//!
//! `rounds` is the circle (round-robin tournament) method: endpoint `m-1` stays put while the
//! others rotate one place per round, giving `n-1` rounds of `n/2` pairs for even `n`. For odd
//! `n` a phantom endpoint is added and whoever meets it sits the round out: `n` rounds of
//! `(n-1)/2` pairs, each endpoint idle exactly once. `retest_round` packs an arbitrary list of
//! pairs (the bad ones of a first pass) into as few rounds of disjoint pairs as a greedy can.

/// Every unordered pair of `0..n` exactly once, as `(lower, higher)`, in rounds of disjoint
/// pairs. `n < 2` has no pairs and so no rounds.
pub fn rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return Vec::new();
    }
    (0..round_count(n)).map(|r| round(n, r)).collect()
}

/// How many rounds [`rounds`] has for `n` endpoints.
pub fn round_count(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        _ if n % 2 == 1 => n,
        _ => n - 1,
    }
}

/// Round `r` of [`rounds`] alone (so the first few rounds of a huge mesh cost only those).
pub fn round(n: usize, r: usize) -> Vec<(usize, usize)> {
    // m is even; with odd n, index n (== m-1) is the phantom.
    let m = if n % 2 == 1 { n + 1 } else { n };
    let ring = m - 1;
    let mut round = Vec::with_capacity(m / 2);
    // The fixed endpoint meets the one at the head of the ring.
    push_real(&mut round, r, m - 1, n);
    for k in 1..m / 2 {
        let x = (r + k) % ring;
        let y = (r + ring - k) % ring;
        push_real(&mut round, x, y, n);
    }
    round.sort_unstable();
    round
}

fn push_real(round: &mut Vec<(usize, usize)>, x: usize, y: usize, n: usize) {
    if x < n && y < n {
        round.push((x.min(y), x.max(y)));
    }
}

/// Packs `pairs` (in any order, either orientation) into rounds in which no endpoint appears
/// twice. Each distinct pair is placed once, as `(lower, higher)`; a repeated pair is placed once.
/// Greedy first fit, busiest endpoints first: an optimal packing needs at most one round more
/// than the busiest endpoint has pairs (Vizing), and first fit is close to that in practice.
pub fn retest_round(pairs: &[(usize, usize)]) -> Vec<Vec<(usize, usize)>> {
    let mut list: Vec<(usize, usize)> = pairs.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    list.sort_unstable();
    list.dedup();
    let width = list.iter().map(|&(_, b)| b + 1).max().unwrap_or(0);
    let mut degree = vec![0usize; width];
    for &(a, b) in &list {
        degree[a] += 1;
        if b != a {
            degree[b] += 1;
        }
    }
    // Busiest pairs first, then in index order, so the result is deterministic.
    list.sort_by(|p, q| {
        let dp = degree[p.0] + degree[p.1];
        let dq = degree[q.0] + degree[q.1];
        dq.cmp(&dp).then(p.cmp(q))
    });

    let mut out: Vec<Vec<(usize, usize)>> = Vec::new();
    // busy[r][e]: endpoint e already has a pair in round r.
    let mut busy: Vec<Vec<bool>> = Vec::new();
    for (a, b) in list {
        let slot = busy.iter().position(|used| !used[a] && !used[b]);
        let r = match slot {
            Some(r) => r,
            None => {
                out.push(Vec::new());
                busy.push(vec![false; width]);
                out.len() - 1
            }
        };
        busy[r][a] = true;
        busy[r][b] = true;
        out[r].push((a, b));
    }
    for round in &mut out {
        round.sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every pair once, none twice in a round; returns the number of rounds.
    fn check_complete(n: usize) -> usize {
        let rs = rounds(n);
        let mut seen = BTreeSet::new();
        for round in &rs {
            let mut used = BTreeSet::new();
            for &(a, b) in round {
                assert!(a < b && b < n, "n={n}: bad pair ({a},{b})");
                assert!(used.insert(a) && used.insert(b), "n={n}: endpoint twice in {round:?}");
                assert!(seen.insert((a, b)), "n={n}: pair ({a},{b}) twice");
            }
            assert_eq!(round.len(), n / 2, "n={n}: round size");
        }
        assert_eq!(seen.len(), n * (n - 1) / 2, "n={n}: pairs missing");
        rs.len()
    }

    #[test]
    fn no_rounds_below_two() {
        assert!(rounds(0).is_empty());
        assert!(rounds(1).is_empty());
    }

    #[test]
    fn round_counts() {
        assert_eq!(check_complete(2), 1);
        assert_eq!(check_complete(3), 3);
        assert_eq!(check_complete(4), 3);
        assert_eq!(check_complete(5), 5);
        assert_eq!(check_complete(8), 7);
        assert_eq!(check_complete(101), 101);
    }

    #[test]
    fn complete_for_every_small_n() {
        for n in 2..40 {
            let r = check_complete(n);
            assert_eq!(r, if n % 2 == 0 { n - 1 } else { n });
        }
    }

    #[test]
    fn odd_n_idles_each_endpoint_once() {
        let n = 7;
        let mut idle = vec![0; n];
        for round in rounds(n) {
            let used: BTreeSet<usize> = round.iter().flat_map(|&(a, b)| [a, b]).collect();
            for (e, count) in idle.iter_mut().enumerate() {
                if !used.contains(&e) {
                    *count += 1;
                }
            }
        }
        assert_eq!(idle, vec![1; n]);
    }

    #[test]
    fn two_endpoints() {
        assert_eq!(rounds(2), vec![vec![(0, 1)]]);
    }

    fn check_packing(pairs: &[(usize, usize)], rs: &[Vec<(usize, usize)>]) {
        let want: BTreeSet<(usize, usize)> = pairs.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
        let mut got = BTreeSet::new();
        for round in rs {
            assert!(!round.is_empty());
            let mut used = BTreeSet::new();
            for &(a, b) in round {
                assert!(a <= b);
                assert!(used.insert(a), "endpoint {a} twice in {round:?}");
                if b != a {
                    assert!(used.insert(b), "endpoint {b} twice in {round:?}");
                }
                assert!(got.insert((a, b)), "pair placed twice");
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn retest_empty() {
        assert!(retest_round(&[]).is_empty());
    }

    #[test]
    fn retest_disjoint_pairs_share_one_round() {
        let pairs = [(3, 1), (0, 2), (5, 4)];
        let rs = retest_round(&pairs);
        assert_eq!(rs.len(), 1);
        check_packing(&pairs, &rs);
    }

    #[test]
    fn retest_bad_node_needs_one_round_per_pair() {
        // Node 3's seven pairs all share node 3: seven rounds, and a stray link rides along.
        let mut pairs: Vec<(usize, usize)> = (0..8).filter(|&e| e != 3).map(|e| (3, e)).collect();
        pairs.push((5, 6));
        let rs = retest_round(&pairs);
        assert_eq!(rs.len(), 7);
        check_packing(&pairs, &rs);
    }

    #[test]
    fn retest_dedups_and_orients() {
        let pairs = [(2, 1), (1, 2), (1, 2)];
        let rs = retest_round(&pairs);
        assert_eq!(rs, vec![vec![(1, 2)]]);
    }

    #[test]
    fn retest_full_mesh_packs_near_optimal() {
        let all: Vec<(usize, usize)> = rounds(8).into_iter().flatten().collect();
        let rs = retest_round(&all);
        check_packing(&all, &rs);
        // Optimal is 7; a greedy may need one or two more, never more than 2*7-1.
        assert!(rs.len() <= 9, "{} rounds", rs.len());
    }
}
