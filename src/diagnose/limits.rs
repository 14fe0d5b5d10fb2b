//! Thresholds that more than one rule file judges by, with their sources (docs/checks.md
//! lists every threshold): kept apart so the rule files that share them import this, not each
//! other.

/// Post-FEC BER objective of Ethernet and InfiniBand links (IEEE 802.3 BER objective, IBTA
/// vol. 2 "effective BER"; ibdiagnet's default --ber_thresh): 1e-12.
pub const EFFECTIVE_BER_LIMIT: f64 = 1e-12;

/// A priority paused for this share of a soak window or more could send for less than half of
/// it: an error. fabcheck's threshold: below it the share is said, from `PAUSE_WARN` a warning.
pub const PAUSE_ERROR: f64 = 0.5;
/// A twentieth of the window paused: congestion worth a look (a warning).
pub const PAUSE_WARN: f64 = 0.05;

/// CNPs a second over a window (the larger of `np_cnp_sent` and `rp_cnp_handled`) from which a
/// RoCE port's congestion is a warning, not an info. fabcheck's threshold: DCQCN cuts a flow's
/// rate on every CNP it handles, so a thousand a second is the port's traffic slowed about
/// every millisecond for the whole window: congestion that lasts, not an incast's burst (an
/// allreduce ring, one flow a link, should see next to none).
pub const CNP_WARN_PER_S: f64 = 1000.0;
