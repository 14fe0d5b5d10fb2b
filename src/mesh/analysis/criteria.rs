//! What a mesh's pairs are judged against: each pair's expected rate (its two ends'
//! capacities), the shares and factors that make a pair bad, and, with `--topology`, the
//! latency of pairs of the same hop count.

use super::PairMeasure;
use crate::units::median;

#[derive(Debug, Clone, PartialEq)]
pub struct Criteria {
    /// One rate for every pair whose ends' capacities are not both known (tests, `--expect
    /// rate`); `None`: such pairs are judged against the cluster's median.
    pub expected_bw_gbps: Option<f64>,
    /// What each endpoint (by index) can carry: its link's rate, or its PCIe link's where
    /// smaller; `None` where unknown or synthesized (Soft-RoCE). A pair is judged against the
    /// smaller of its own two ends' ([`Criteria::expected_for`]), so one slow port lowers the
    /// bar only for its own pairs, not the whole mesh's.
    pub capacity_gbps: Vec<Option<f64>>,
    /// Share of `expected_bw_gbps` a pair must reach (0.9).
    pub bw_fraction: f64,
    /// With no expected rate: share of the cluster's median bandwidth a pair must reach (0.8).
    pub outlier_fraction: f64,
    /// A pair's latency above this many times the cluster's median is bad (1.5).
    pub lat_outlier_factor: f64,
    /// With `--topology`: the median latency of the pairs of each hop count, a pair's latency
    /// judged against its own (`None`: against every pair's).
    pub hops: Option<HopMedians>,
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria { expected_bw_gbps: None, capacity_gbps: Vec::new(), bw_fraction: 0.9, outlier_fraction: 0.8, lat_outlier_factor: 1.5, hops: None }
    }
}

/// The rate a pair can reach: the smaller capacity of its two ends, when both are known.
pub fn pair_capacity(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a?.min(b?))
}

impl Criteria {
    /// The rate pair `(a, b)` is judged against: the smaller capacity of its own two ends when
    /// both are known, else [`Criteria::expected_bw_gbps`] (`None`: the cluster's median).
    pub fn expected_for(&self, a: usize, b: usize) -> Option<f64> {
        let cap = |i: usize| self.capacity_gbps.get(i).copied().flatten();
        pair_capacity(cap(a), cap(b)).or(self.expected_bw_gbps)
    }

    /// The rate most pairs are judged against: the largest pair capacity (every pair between
    /// two full-speed ends), else the one expected rate. What the heat map's colours scale to.
    pub fn typical_rate(&self) -> Option<f64> {
        let known: Vec<f64> = self.capacity_gbps.iter().flatten().copied().collect();
        let pairable = known.len() >= 2;
        let second_best = pairable.then(|| {
            let mut k = known.clone();
            k.sort_by(|x, y| y.total_cmp(x));
            k[1]
        });
        second_best.or(self.expected_bw_gbps)
    }
}

/// The first pass's median latency of the pairs inside one leaf switch (two hops: up to the
/// leaf and down) and of the pairs across the spine (four or more), from the leaves
/// `--topology` gives. A pair crossing the spine is slower by design; against one median of
/// every pair, a fabric whose pairs are mostly inside leaves would call every cross-leaf pair an
/// outlier and blame the endpoints alone on their leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct HopMedians {
    leaf_of: Vec<Option<usize>>,
    inside: Option<f64>,
    across: Option<f64>,
}

impl HopMedians {
    /// The medians of `first`'s non-failed pairs, by hop count; `leaf_of[e]`: endpoint e's leaf.
    pub fn from_first(leaf_of: &[Option<usize>], first: &[PairMeasure]) -> HopMedians {
        let mut hops = HopMedians { leaf_of: leaf_of.to_vec(), inside: None, across: None };
        let of =
            |want: bool| median(first.iter().filter(|m| !m.failed && hops.inside_leaf(m.a, m.b) == Some(want)).filter_map(|m| m.lat_us).collect());
        let (inside, across) = (of(true), of(false));
        hops.inside = inside;
        hops.across = across;
        hops
    }

    /// Whether both ends are on one leaf (`None`: a leaf is unknown).
    fn inside_leaf(&self, a: usize, b: usize) -> Option<bool> {
        let leaf = |e: usize| self.leaf_of.get(e).copied().flatten();
        Some(leaf(a)? == leaf(b)?)
    }

    /// The median latency of pairs of `(a, b)`'s hop count, where known.
    pub fn median_for(&self, a: usize, b: usize) -> Option<f64> {
        match self.inside_leaf(a, b)? {
            true => self.inside,
            false => self.across,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::analysis::is_bad;

    fn lat(a: usize, b: usize, us: f64) -> PairMeasure {
        PairMeasure { a, b, bw_gbps: None, lat_us: Some(us), failed: false, preempted: None }
    }

    /// Issue #44: six endpoints on one leaf and one on another; pairs across the spine take
    /// 1.7 us, inside the leaf 1.0. Against every pair's median (1.0) each cross pair is an
    /// outlier; against the cross pairs' own, only the one that really is (3.0 us).
    #[test]
    fn latency_is_judged_against_pairs_of_the_same_hop_count() {
        let leaf_of: Vec<Option<usize>> = vec![Some(0), Some(0), Some(0), Some(0), Some(0), Some(0), Some(1)];
        let mut first = Vec::new();
        for a in 0..6 {
            for b in a + 1..6 {
                first.push(lat(a, b, 1.0));
            }
            first.push(lat(a, 6, if a == 5 { 3.0 } else { 1.7 }));
        }
        let flat = Criteria::default();
        let (mb, ml) = crate::mesh::analysis::medians(&first);
        assert_eq!(ml, Some(1.0));
        assert_eq!(first.iter().filter(|m| is_bad(m, &flat, mb, ml)).count(), 6, "every cross pair, without hop counts");
        let hops = HopMedians::from_first(&leaf_of, &first);
        assert_eq!((hops.inside, hops.across), (Some(1.0), Some(1.7)));
        let by_hops = Criteria { hops: Some(hops), ..Criteria::default() };
        let bad: Vec<(usize, usize)> = first.iter().filter(|m| is_bad(m, &by_hops, mb, ml)).map(|m| (m.a, m.b)).collect();
        assert_eq!(bad, [(5, 6)]);
        // An endpoint whose leaf is unknown is judged against every pair's median.
        let unknown = HopMedians::from_first(&[Some(0), None], &[lat(0, 1, 1.0)]);
        assert_eq!(unknown.median_for(0, 1), None);
    }
}
