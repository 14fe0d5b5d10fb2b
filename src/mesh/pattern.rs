//! Mesh patterns (pure): which pairs a mesh measures, as rounds of disjoint pairs, and the
//! zoom-in that sharpens what a sparse pattern found.
//!
//! A round is the unit a mesh runs at once: pairs that share no endpoint, since one agent runs
//! one test at a time. Patterns work on an ORDER of the endpoints (a permutation of `0..n`;
//! with a topology it interleaves the leaf switches, so neighbours in the order sit on
//! different leaves) and return pairs of endpoint indices, each as `(lower, higher)`.
//!
//! - `all-pairs`: every pair once, the circle method (`schedule::rounds`).
//! - `shift`: shift `r` pairs position `i` with `i+r (mod n)`. Those `n` pairs form cycles in
//!   which every endpoint has two partners, so one shift runs as two rounds of disjoint pairs
//!   (three when a cycle is odd); each round keeps every endpoint (but, at most, a few) busy,
//!   and a shift by a distance that crosses leaves loads the spine (a bisection test). The
//!   distances are spread over `1..=n/2`, so a few shifts reach far across the order.
//! - `ring`: shift by 1 only: each endpoint with both neighbours.
//! - `random:K`: K random perfect matchings of the endpoints, from a seed printed with the
//!   results, so a run can be repeated. Each endpoint gets up to K partners (one per round).
//!
//! `--rounds N` keeps the first N rounds of any pattern.

use crate::model::Unparsed;
use std::collections::BTreeSet;

/// Rounds of a shift pattern when `--rounds` is not given: 8 shifts, 16 partners per endpoint.
pub const SHIFT_DEFAULT_ROUNDS: usize = 16;
/// Above this many endpoints, the default pattern is `shift` rather than `all-pairs`.
pub const ALL_PAIRS_MAX_DEFAULT: usize = 64;
/// Known-good partners each endpoint of a still-bad pair is tested against.
pub const ZOOM_PARTNERS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    AllPairs,
    Shift,
    Ring,
    Random { k: usize },
}

impl Pattern {
    /// `all-pairs`, `shift`, `ring` or `random:K` (K from 1 to 64).
    pub fn parse(text: &str) -> Result<Pattern, Unparsed> {
        match text {
            "all-pairs" => Ok(Pattern::AllPairs),
            "shift" => Ok(Pattern::Shift),
            "ring" => Ok(Pattern::Ring),
            _ => match text.strip_prefix("random:").map(str::parse::<usize>) {
                Some(Ok(k)) if (1..=64).contains(&k) => Ok(Pattern::Random { k }),
                Some(_) => Err(format!("--pattern {text}: K in random:K is a number of partners, 1..64").into()),
                None => Err(format!("unknown --pattern {text}: use all-pairs, shift, ring or random:K").into()),
            },
        }
    }

    /// The default for `n` endpoints: every pair when that is affordable, shifts above.
    pub fn default_for(n: usize) -> Pattern {
        if n <= ALL_PAIRS_MAX_DEFAULT {
            Pattern::AllPairs
        } else {
            Pattern::Shift
        }
    }

    pub fn name(&self) -> String {
        match self {
            Pattern::AllPairs => "all-pairs".into(),
            Pattern::Shift => "shift".into(),
            Pattern::Ring => "ring".into(),
            Pattern::Random { k } => format!("random:{k}"),
        }
    }

    /// Every pair is measured: no zoom-in is needed to tell a node from a link.
    pub fn is_complete(&self) -> bool {
        matches!(self, Pattern::AllPairs)
    }
}

/// What a pattern is run over.
#[derive(Debug, Clone)]
pub struct Layout<'a> {
    /// A permutation of `0..n`: position -> endpoint.
    pub order: &'a [usize],
    /// Leaf group of each endpoint (by endpoint index), when a topology is known.
    pub leaf: Option<&'a [Option<usize>]>,
    /// Pairs on the same leaf are allowed in a shift (`--intra-leaf`).
    pub intra_leaf: bool,
}

/// The rounds of `pattern` over `layout`, at most `max_rounds` of them (`None`: the pattern's
/// own count; `shift` stops at [`SHIFT_DEFAULT_ROUNDS`]).
pub fn rounds(pattern: Pattern, layout: &Layout<'_>, max_rounds: Option<usize>, seed: u64) -> Vec<Vec<(usize, usize)>> {
    let order = layout.order;
    let n = order.len();
    let by_position = |rounds: Vec<Vec<(usize, usize)>>| -> Vec<Vec<(usize, usize)>> {
        rounds
            .into_iter()
            .map(|round| {
                let mut r: Vec<(usize, usize)> = round.into_iter().map(|(x, y)| key(order[x], order[y])).collect();
                r.sort_unstable();
                r
            })
            .collect()
    };
    let mut out = match pattern {
        Pattern::AllPairs => {
            let count = super::schedule::round_count(n).min(max_rounds.unwrap_or(usize::MAX));
            by_position((0..count).map(|r| super::schedule::round(n, r)).collect())
        }
        Pattern::Ring => by_position(shift_rounds(n, 1)),
        Pattern::Shift => {
            let want = max_rounds.unwrap_or(SHIFT_DEFAULT_ROUNDS);
            let mut out = Vec::new();
            for r in shift_distances(n) {
                if out.len() >= want {
                    break;
                }
                if !layout.intra_leaf && crosses_a_leaf(layout, r) {
                    continue;
                }
                out.extend(by_position(shift_rounds(n, r)));
            }
            out.truncate(want);
            out
        }
        Pattern::Random { k } => {
            random_rounds(n, k, seed).into_iter().map(|round| round.into_iter().map(|(x, y)| key(order[x], order[y])).collect()).collect()
        }
    };
    if let Some(max) = max_rounds {
        out.truncate(max);
    }
    out.retain(|round| !round.is_empty());
    out
}

/// Shift distances, spread over `1..=n/2` (1 first): a few shifts reach across the order.
/// Every distance comes once, so enough rounds cover every pair.
fn shift_distances(n: usize) -> Vec<usize> {
    let half = n / 2;
    if half == 0 {
        return Vec::new();
    }
    // Bit-reversal-like spreading: 1, then halves, quarters... of the range, then the rest.
    let mut seen = vec![false; half + 1];
    let mut out = Vec::with_capacity(half);
    let mut push = |r: usize, out: &mut Vec<usize>| {
        if (1..=half).contains(&r) && !seen[r] {
            seen[r] = true;
            out.push(r);
        }
    };
    push(1, &mut out);
    let mut parts = 2;
    while parts <= 2 * half {
        for j in (1..parts).step_by(2) {
            push((j * half).div_ceil(parts), &mut out);
        }
        parts *= 2;
    }
    for r in 1..=half {
        push(r, &mut out);
    }
    out
}

/// Some pair of the shift by `r` has both ends on one leaf.
fn crosses_a_leaf(layout: &Layout<'_>, r: usize) -> bool {
    let Some(leaf) = layout.leaf else { return false };
    let n = layout.order.len();
    (0..n).any(|i| {
        let (a, b) = (layout.order[i], layout.order[(i + r) % n]);
        matches!((leaf[a], leaf[b]), (Some(x), Some(y)) if x == y)
    })
}

/// The pairs `{i, i+r mod n}` (by position) as rounds of disjoint pairs. They form
/// `gcd(n, r)` cycles; an even cycle splits into two matchings, an odd one needs a third
/// round for its closing pair. With `2r == n` each pair appears once and one round holds all.
fn shift_rounds(n: usize, r: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 || r == 0 || r >= n {
        return Vec::new();
    }
    if 2 * r == n {
        return vec![(0..r).map(|i| (i, i + r)).collect()];
    }
    let cycles = gcd(n, r);
    let len = n / cycles;
    let mut out = vec![Vec::new(), Vec::new(), Vec::new()];
    for c in 0..cycles {
        // The cycle c, c+r, c+2r, ...: edge t joins its t-th and (t+1)-th positions.
        for t in 0..len {
            let x = (c + t * r) % n;
            let y = (x + r) % n;
            let slot = if len % 2 == 1 && t == len - 1 { 2 } else { t % 2 };
            out[slot].push(key(x, y));
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `k` random perfect matchings of positions `0..n` (one endpoint idle per round when `n` is
/// odd); a pair drawn twice is measured once.
fn random_rounds(n: usize, k: usize, seed: u64) -> Vec<Vec<(usize, usize)>> {
    let mut rng = SplitMix(seed);
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(k);
    let mut perm: Vec<usize> = (0..n).collect();
    for _ in 0..k {
        // Fisher-Yates.
        for i in (1..n).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            perm.swap(i, j);
        }
        let round: Vec<(usize, usize)> = perm.chunks_exact(2).map(|c| key(c[0], c[1])).filter(|&p| seen.insert(p)).collect();
        out.push(round);
    }
    out
}

/// SplitMix64: small, fast and the same everywhere, so a seed repeats a run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A seed for `random:K` when none is given: from the clock, printed with the results.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    SplitMix(nanos ^ u64::from(std::process::id())).next() >> 11
}

/// The order a pattern runs over: endpoints interleaved leaf by leaf (the first of each leaf,
/// then the second of each...), so neighbours in the order sit on different leaves; endpoints
/// with no known leaf come last, in their own order. Without leaves: `0..n`.
pub fn leaf_order(leaf: Option<&[Option<usize>]>, n: usize) -> Vec<usize> {
    let Some(leaf) = leaf else { return (0..n).collect() };
    let groups = leaf.iter().flatten().max().map_or(0, |m| m + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    let mut loose = Vec::new();
    for (e, l) in leaf.iter().enumerate().take(n) {
        match l {
            Some(l) => members[*l].push(e),
            None => loose.push(e),
        }
    }
    let deepest = members.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for depth in 0..deepest {
        out.extend(members.iter().filter_map(|m| m.get(depth)));
    }
    out.extend(loose);
    out
}

/// The zoom-in (pure): each endpoint of a pair still bad after its retest is tested against up
/// to [`ZOOM_PARTNERS`] known-good partners (endpoints none of whose pairs was bad), none it
/// has met already; with leaves, one of them on its own leaf when the leaf has another member,
/// known-good or not (a good pair inside the leaf and bad ones across it point at the leaf's
/// uplinks, not the node). `measured`: every pair measured so far. Deterministic.
pub fn zoom_pairs(
    n: usize,
    still_bad: &[(usize, usize)],
    known_good: &[bool],
    leaf: Option<&[Option<usize>]>,
    measured: &BTreeSet<(usize, usize)>,
) -> Vec<(usize, usize)> {
    let suspects: BTreeSet<usize> = still_bad.iter().flat_map(|&(a, b)| [a, b]).collect();
    let good: Vec<usize> = (0..n).filter(|&e| known_good.get(e).copied().unwrap_or(false) && !suspects.contains(&e)).collect();
    // Each leaf's endpoints, in index order, to find a leaf mate without scanning all n.
    let mut members: std::collections::HashMap<usize, Vec<usize>> = std::collections::HashMap::new();
    for (e, l) in leaf.into_iter().flatten().enumerate() {
        if let Some(l) = l {
            members.entry(*l).or_default().push(e);
        }
    }
    let mut out: BTreeSet<(usize, usize)> = BTreeSet::new();
    for &e in &suspects {
        let mut chosen = 0;
        if let Some(mates) = leaf.and_then(|leaf| leaf[e]).and_then(|l| members.get(&l)) {
            // The next mates after e, wrapping around the leaf.
            let at = mates.partition_point(|&x| x <= e);
            let mut next = mates[at..].iter().chain(&mates[..at]).copied().filter(|&x| x != e && !measured.contains(&key(e, x)));
            if let Some(x) = next.next() {
                out.insert(key(e, x));
                chosen += 1;
            }
        }
        if good.is_empty() {
            continue;
        }
        // Start at a spot that depends on e, so the suspects spread over the good endpoints.
        let start = (e.wrapping_mul(2_654_435_761)) % good.len();
        for step in 0..good.len() {
            if chosen >= ZOOM_PARTNERS {
                break;
            }
            let x = good[(start + step) % good.len()];
            let k = key(e, x);
            if x == e || measured.contains(&k) || out.contains(&k) {
                continue;
            }
            if let Some(leaf) = leaf {
                // The known-good ones are for the path across the spine.
                if leaf[e].is_some() && leaf[e] == leaf[x] {
                    continue;
                }
            }
            out.insert(k);
            chosen += 1;
        }
    }
    out.into_iter().collect()
}

fn key(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(n: usize) -> Vec<usize> {
        (0..n).collect()
    }

    fn run(pattern: Pattern, n: usize, max: Option<usize>, seed: u64) -> Vec<Vec<(usize, usize)>> {
        let order = plain(n);
        rounds(pattern, &Layout { order: &order, leaf: None, intra_leaf: false }, max, seed)
    }

    /// No endpoint twice in a round, pairs oriented and in range, no pair in two rounds.
    fn check_disjoint(n: usize, rs: &[Vec<(usize, usize)>]) -> BTreeSet<(usize, usize)> {
        let mut seen = BTreeSet::new();
        for round in rs {
            let mut used = BTreeSet::new();
            for &(a, b) in round {
                assert!(a < b && b < n, "bad pair ({a},{b})");
                assert!(used.insert(a) && used.insert(b), "endpoint twice in {round:?}");
                assert!(seen.insert((a, b)), "pair ({a},{b}) twice");
            }
        }
        seen
    }

    #[test]
    fn parse_names() {
        assert_eq!(Pattern::parse("all-pairs"), Ok(Pattern::AllPairs));
        assert_eq!(Pattern::parse("shift"), Ok(Pattern::Shift));
        assert_eq!(Pattern::parse("ring"), Ok(Pattern::Ring));
        assert_eq!(Pattern::parse("random:3"), Ok(Pattern::Random { k: 3 }));
        assert!(Pattern::parse("random:0").is_err());
        assert!(Pattern::parse("random:x").is_err());
        assert!(Pattern::parse("star").is_err());
        assert_eq!(Pattern::Random { k: 3 }.name(), "random:3");
        assert_eq!(Pattern::default_for(64), Pattern::AllPairs);
        assert_eq!(Pattern::default_for(65), Pattern::Shift);
    }

    #[test]
    fn shift_covers_i_plus_r_in_disjoint_rounds() {
        for n in [2, 3, 4, 5, 7, 8, 10, 15, 16, 33, 100] {
            for r in 1..n {
                let rs = shift_rounds(n, r);
                let seen = check_disjoint(n, &rs);
                let want: BTreeSet<(usize, usize)> = (0..n).map(|i| key(i, (i + r) % n)).collect();
                assert_eq!(seen, want, "n={n} r={r}");
                assert!(rs.len() <= 3);
            }
        }
    }

    #[test]
    fn shift_rounds_keep_every_endpoint_busy_when_cycles_are_even() {
        // n=10, r=1: one cycle of 10, two rounds of 5 pairs each.
        let rs = shift_rounds(10, 1);
        assert_eq!(rs.len(), 2);
        assert!(rs.iter().all(|r| r.len() == 5));
        // n=9, r=3: three triangles; an odd cycle needs a third round.
        assert_eq!(shift_rounds(9, 3).len(), 3);
    }

    #[test]
    fn shift_default_and_bounded_rounds() {
        let rs = run(Pattern::Shift, 1000, None, 0);
        assert_eq!(rs.len(), SHIFT_DEFAULT_ROUNDS);
        check_disjoint(1000, &rs);
        assert!(rs.iter().all(|r| r.len() == 500), "every endpoint busy in every round");
        assert_eq!(run(Pattern::Shift, 1000, Some(3), 0).len(), 3);
        // Enough rounds cover every pair, as all-pairs does.
        let all = run(Pattern::Shift, 12, Some(1000), 0);
        assert_eq!(check_disjoint(12, &all).len(), 66);
    }

    #[test]
    fn shift_distances_spread_and_unique() {
        let d = shift_distances(1000);
        assert_eq!(&d[..3], &[1, 250, 125]);
        let set: BTreeSet<usize> = d.iter().copied().collect();
        assert_eq!(set.len(), 500);
        assert!(shift_distances(1).is_empty());
    }

    #[test]
    fn ring_is_both_neighbours() {
        let rs = run(Pattern::Ring, 6, None, 0);
        let seen = check_disjoint(6, &rs);
        assert_eq!(seen, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 5)].into_iter().collect());
        assert_eq!(run(Pattern::Ring, 6, Some(1), 0).len(), 1);
    }

    #[test]
    fn random_is_k_partners_and_repeats_from_its_seed() {
        let rs = run(Pattern::Random { k: 4 }, 100, None, 42);
        assert_eq!(rs.len(), 4);
        check_disjoint(100, &rs);
        assert_eq!(rs, run(Pattern::Random { k: 4 }, 100, None, 42));
        assert_ne!(rs, run(Pattern::Random { k: 4 }, 100, None, 43));
        let mut degree = [0; 100];
        rs.iter().flatten().for_each(|&(a, b)| {
            degree[a] += 1;
            degree[b] += 1;
        });
        assert!(degree.iter().all(|&d| (3..=4).contains(&d)), "{degree:?}");
        assert_eq!(run(Pattern::Random { k: 4 }, 100, Some(2), 42).len(), 2);
    }

    #[test]
    fn all_pairs_bounded() {
        assert_eq!(run(Pattern::AllPairs, 8, None, 0).len(), 7);
        assert_eq!(run(Pattern::AllPairs, 8, Some(2), 0).len(), 2);
    }

    #[test]
    fn leaf_order_interleaves_and_shift_never_stays_on_a_leaf() {
        // 4 leaves of 5 endpoints, by index: 0-4 leaf 0, 5-9 leaf 1...
        let leaf: Vec<Option<usize>> = (0..20).map(|e| Some(e / 5)).collect();
        let order = leaf_order(Some(&leaf), 20);
        assert_eq!(&order[..5], &[0, 5, 10, 15, 1]);
        let layout = Layout { order: &order, leaf: Some(&leaf), intra_leaf: false };
        let rs = rounds(Pattern::Shift, &layout, Some(100), 0);
        assert!(!rs.is_empty());
        for &(a, b) in rs.iter().flatten() {
            assert_ne!(leaf[a], leaf[b], "({a},{b}) on one leaf");
        }
        let layout = Layout { intra_leaf: true, ..layout };
        let all = rounds(Pattern::Shift, &layout, Some(100), 0);
        assert!(all.iter().flatten().any(|&(a, b)| leaf[a] == leaf[b]));
    }

    #[test]
    fn zoom_tests_suspects_against_known_good_partners() {
        let n = 20;
        // Endpoint 3's pairs were bad; its partners 2 and 4 had that one bad pair each.
        let known_good: Vec<bool> = (0..n).map(|e| ![2, 3, 4].contains(&e)).collect();
        let measured: BTreeSet<(usize, usize)> = [(2, 3), (3, 4), (5, 6)].into_iter().collect();
        let z = zoom_pairs(n, &[(2, 3), (3, 4)], &known_good, None, &measured);
        for e in [2, 3, 4] {
            let mine: Vec<_> = z.iter().filter(|&&(a, b)| a == e || b == e).collect();
            assert_eq!(mine.len(), ZOOM_PARTNERS, "{e}: {mine:?}");
            for &&(a, b) in &mine {
                let other = if a == e { b } else { a };
                assert!(known_good[other] && !measured.contains(&(a, b)));
            }
        }
        assert_eq!(z, zoom_pairs(n, &[(2, 3), (3, 4)], &known_good, None, &measured));
    }

    #[test]
    fn zoom_adds_a_partner_on_the_same_leaf() {
        let n = 12;
        let leaf: Vec<Option<usize>> = (0..n).map(|e| Some(e / 4)).collect();
        let known_good: Vec<bool> = (0..n).map(|e| leaf[e] != Some(0)).collect();
        let z = zoom_pairs(n, &[(0, 4)], &known_good, Some(&leaf), &BTreeSet::new());
        assert!(z.contains(&(0, 1)), "{z:?}");
        let across = z.iter().filter(|&&(a, b)| (a == 0 || b == 0) && leaf[a] != leaf[b]).count();
        assert_eq!(across, ZOOM_PARTNERS - 1, "the same-leaf partner is one of the {ZOOM_PARTNERS}");
    }
}
