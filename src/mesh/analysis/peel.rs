//! Node peeling (pure): blame the endpoint whose pairs are worst, stop counting its pairs
//! against its peers, and repeat. Counters per endpoint are updated as nodes are blamed, so a
//! blame costs the blamed node's pairs, not a rescan of every pair.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An endpoint that qualifies for blame, with the counts it qualified with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    e: usize,
    bad: usize,
    total: usize,
}

impl Ord for Candidate {
    /// Greater is worse: a higher share of bad pairs, then more bad pairs, then a lower index.
    fn cmp(&self, o: &Self) -> Ordering {
        (self.bad * o.total).cmp(&(o.bad * self.total)).then(self.bad.cmp(&o.bad)).then(o.e.cmp(&self.e))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The endpoints' pairs, and which endpoints are blamed.
pub(super) struct Peeled {
    /// Per endpoint: the other end and whether the pair is bad (twice), for each of its pairs.
    adjacent: Vec<Vec<(usize, bool)>>,
    blamed: Vec<bool>,
    order: Vec<usize>,
    /// Per endpoint, over its pairs whose other end is not blamed: the bad ones, and all.
    bad: Vec<usize>,
    total: Vec<usize>,
    total_bad: usize,
}

impl Peeled {
    /// `pairs`: each pair once, as `((a, b), bad)` with `a != b`, both below `width`.
    pub(super) fn new(width: usize, pairs: impl Iterator<Item = ((usize, usize), bool)>) -> Peeled {
        let mut adjacent = vec![Vec::new(); width];
        let mut total_bad = 0;
        for ((a, b), bad) in pairs {
            adjacent[a].push((b, bad));
            adjacent[b].push((a, bad));
            total_bad += usize::from(bad);
        }
        let mut p = Peeled { adjacent, blamed: vec![false; width], order: Vec::new(), bad: vec![0; width], total: vec![0; width], total_bad };
        p.recount();
        p
    }

    fn recount(&mut self) {
        for e in 0..self.adjacent.len() {
            let live = self.adjacent[e].iter().filter(|(x, _)| !self.blamed[*x]);
            let (bad, total) = live.fold((0, 0), |(b, t), (_, bad)| (b + usize::from(*bad), t + 1));
            self.bad[e] = bad;
            self.total[e] = total;
        }
    }

    /// Blames nodes, worst first, while one has at least 2 bad pairs and at least 2/3 of its
    /// pairs (with unblamed peers) bad. Worst: higher share of bad pairs, then more bad pairs,
    /// then lower index. A heap of candidates, refreshed as blames change counts (a stale entry
    /// is skipped when popped), so peeling costs O(pairs log n) however many nodes are blamed,
    /// not a scan of every endpoint per blame.
    pub(super) fn peel(&mut self) {
        let mut heap: BinaryHeap<Candidate> = (0..self.adjacent.len()).filter_map(|e| self.candidate(e)).collect();
        while let Some(c) = heap.pop() {
            if self.blamed[c.e] || (c.bad, c.total) != (self.bad[c.e], self.total[c.e]) {
                continue;
            }
            self.blame(c.e);
            for i in 0..self.adjacent[c.e].len() {
                let x = self.adjacent[c.e][i].0;
                if let Some(next) = self.candidate(x) {
                    heap.push(next);
                }
            }
        }
    }

    /// `e` as a candidate for blame, if it qualifies now.
    fn candidate(&self, e: usize) -> Option<Candidate> {
        let (bad, total) = (self.bad[e], self.total[e]);
        (!self.blamed[e] && bad >= 2 && bad * 3 >= total * 2).then_some(Candidate { e, bad, total })
    }

    fn blame(&mut self, e: usize) {
        self.blamed[e] = true;
        self.order.push(e);
        for &(x, bad) in &self.adjacent[e] {
            if !self.blamed[x] {
                self.total[x] -= 1;
                self.bad[x] -= usize::from(bad);
            }
        }
    }

    /// Nearly every pair among the unblamed endpoints is bad (and at least 3 are bad in all):
    /// no node stands out, the cause is cluster-wide.
    pub(super) fn cluster_wide(&self) -> bool {
        let live = (0..self.adjacent.len()).filter(|&e| !self.blamed[e]);
        let (rest_bad, rest) = live.fold((0, 0), |(b, t), e| (b + self.bad[e], t + self.total[e]));
        // Each pair is counted at both of its ends.
        let (rest_bad, rest) = (rest_bad / 2, rest / 2);
        self.total_bad >= 3 && rest_bad * 3 >= rest * 2
    }

    pub(super) fn total_bad(&self) -> usize {
        self.total_bad
    }

    /// Takes every blame back (a cluster-wide cause explains the pairs instead).
    pub(super) fn forgive_all(&mut self) {
        self.blamed.iter_mut().for_each(|b| *b = false);
        self.order.clear();
        self.recount();
    }

    pub(super) fn is_blamed(&self, e: usize) -> bool {
        self.blamed.get(e).copied().unwrap_or(false)
    }

    /// The blamed endpoints, in endpoint order.
    pub(super) fn blamed_in_order(&self) -> Vec<usize> {
        let mut order = self.order.clone();
        order.sort_unstable();
        order
    }

    /// Every pair of `e`, as `(lower, higher)`, in order.
    pub(super) fn pairs_of(&self, e: usize) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = self.adjacent[e].iter().map(|&(x, _)| (e.min(x), e.max(x))).collect();
        out.sort_unstable();
        out
    }

    /// Bad pairs of unblamed `e` with unblamed peers.
    pub(super) fn bad_unblamed(&self, e: usize) -> usize {
        self.bad[e]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blaming_a_node_stops_its_pairs_counting_against_its_peers() {
        // Endpoints 0 and 1 are bad with everyone; 2 and 3 are fine with each other.
        let bad = |a: usize, b: usize| a < 2 || b < 2;
        let pairs = (0..4).flat_map(|a| (a + 1..4).map(move |b| ((a, b), bad(a, b))));
        let mut p = Peeled::new(4, pairs);
        assert_eq!((p.bad[2], p.total[2]), (2, 3), "2/3 bad before any blame");
        p.peel();
        assert_eq!(p.blamed_in_order(), vec![0, 1]);
        assert_eq!((p.bad[2], p.total[2]), (0, 1), "only 2<->3 left, and it is good");
        assert!(!p.cluster_wide());
        assert_eq!(p.pairs_of(2), vec![(0, 2), (1, 2), (2, 3)]);
    }

    /// The scan the heap replaced: every endpoint looked at for each blame.
    fn peel_by_scan(p: &mut Peeled) {
        loop {
            let mut best: Option<(usize, usize, usize)> = None;
            for e in (0..p.adjacent.len()).filter(|&e| !p.blamed[e]) {
                let (nbad, total) = (p.bad[e], p.total[e]);
                if nbad >= 2 && nbad * 3 >= total * 2 {
                    let better = match best {
                        None => true,
                        Some((_, bb, bt)) => nbad * bt > bb * total || (nbad * bt == bb * total && nbad > bb),
                    };
                    if better {
                        best = Some((e, nbad, total));
                    }
                }
            }
            let Some((e, _, _)) = best else { break };
            p.blame(e);
        }
    }

    #[test]
    fn heap_blames_as_the_scan_did_in_the_same_order() {
        let mut seed = 1u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..300 {
            let n = 3 + case % 20;
            let slow: Vec<bool> = (0..n).map(|_| next() % 4 == 0).collect();
            let mut pairs: Vec<((usize, usize), bool)> = Vec::new();
            for a in 0..n {
                for b in a + 1..n {
                    if next() % 3 != 0 {
                        pairs.push(((a, b), slow[a] || slow[b] || next() % 10 == 0));
                    }
                }
            }
            let mut heap = Peeled::new(n, pairs.iter().copied());
            let mut scan = Peeled::new(n, pairs.iter().copied());
            heap.peel();
            peel_by_scan(&mut scan);
            assert_eq!(heap.order, scan.order, "case {case}");
        }
    }

    #[test]
    fn everything_bad_is_cluster_wide() {
        let pairs = (0..4).flat_map(|a| (a + 1..4).map(move |b| ((a, b), true)));
        let mut p = Peeled::new(4, pairs);
        p.peel();
        assert!(p.cluster_wide());
        p.forgive_all();
        assert!(p.blamed_in_order().is_empty());
        assert_eq!(p.bad_unblamed(0), 3);
    }
}
