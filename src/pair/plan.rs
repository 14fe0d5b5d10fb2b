//! Which tests run, at which sizes, in which directions, with what settings (pure).

use crate::control::protocol::{Role, TestKind, TestSpec};
use crate::model::Unparsed;
use crate::model::{AtomicOp, Direction, ATOMIC_SIZE};

/// Settings from the command line that shape the plan.
#[derive(Debug, Clone)]
pub struct PlanInput {
    pub tests: Vec<TestKind>,
    pub size: Option<u32>,
    pub sweep: bool,
    pub iters: Option<u64>,
    pub duration_ms: Option<u64>,
    pub qps: u32,
    pub directions: Option<Vec<Direction>>,
    pub stall_timeout_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTest {
    pub direction: Direction,
    /// The spec with A's role; B's differs only in role.
    pub spec: TestSpec,
}

impl PlannedTest {
    pub fn spec_for(&self, a_side: bool) -> TestSpec {
        let (ra, rb) = self.direction.roles();
        TestSpec { role: if a_side { ra } else { rb }, ..self.spec.clone() }
    }
}

pub const LAT_SIZE: u32 = 2;
pub const BW_SIZE: u32 = 65536;
pub const LAT_ITERS: u64 = 1000;
pub const BW_ITERS: u64 = 5000;
pub const SWEEP_MAX: u32 = 8 << 20;

/// Sizes of a sweep: 2 B to 8 MiB in powers of two.
pub fn sweep_sizes() -> Vec<u32> {
    sweep_up_to(SWEEP_MAX)
}

/// Sizes of a sweep up to `max` (perftest's `-a -s MAX`): the powers of two from 2 B below it,
/// then `max` itself.
pub fn sweep_up_to(max: u32) -> Vec<u32> {
    let mut sizes: Vec<u32> = (1..32).map(|p| 1u32 << p).take_while(|&s| s < max).collect();
    sizes.push(max);
    sizes
}

/// Bidirectional `send_bw` runs by count even in duration mode: each side's receives must match
/// the other's sends, and a duration stops the two senders at different counts (the unmatched
/// ones would be retried as RNR until the run timed out).
fn by_count_in_duration_mode(test: TestKind, direction: Direction) -> bool {
    test == TestKind::SendBw && direction == Direction::Bidi
}

/// What `--duration` did not apply to, said as an info finding (`pair.duration`): the tests of
/// the plan that ran by count while the others ran for the duration.
pub fn duration_note(plan: &[PlannedTest]) -> Option<String> {
    let timed = plan.iter().any(|t| t.spec.duration_ms.is_some());
    let mut by_count: Vec<String> = Vec::new();
    for t in plan.iter().filter(|t| t.spec.duration_ms.is_none()) {
        let name = format!("{} {}", t.spec.test.name(), t.direction);
        if !by_count.contains(&name) {
            by_count.push(name);
        }
    }
    (timed && !by_count.is_empty()).then(|| {
        format!(
            "{} ran by count ({} iterations), not for --duration: its receives must match the other side's sends",
            by_count.join(", "),
            plan.iter().find(|t| t.spec.duration_ms.is_none()).map_or(0, |t| t.spec.iters)
        )
    })
}

pub fn build(input: &PlanInput) -> Result<Vec<PlannedTest>, Unparsed> {
    if input.qps == 0 || input.qps > crate::control::protocol::MAX_QPS {
        return Err(format!("--qps must be 1..{}", crate::control::protocol::MAX_QPS).into());
    }
    let mut out = Vec::new();
    for &test in &input.tests {
        let sizes = match (input.size, input.sweep) {
            // An atomic is one 64-bit word: --size and --sweep shape the other tests.
            _ if test.is_atomic() => vec![ATOMIC_SIZE],
            (Some(max), true) if max < 2 => return Err(format!("--sweep up to --size {max}: give at least 2 bytes").into()),
            (Some(max), true) => sweep_up_to(max),
            (Some(size), false) => vec![size],
            (None, true) => sweep_sizes(),
            (None, false) => vec![if test.is_latency() { LAT_SIZE } else { BW_SIZE }],
        };
        let directions = match &input.directions {
            Some(d) => d.clone(),
            None if test.is_latency() => vec![Direction::AtoB],
            None => vec![Direction::AtoB, Direction::BtoA, Direction::Bidi],
        };
        for size in sizes {
            for &direction in &directions {
                if test.is_latency() && direction == Direction::Bidi {
                    // A ping-pong is already both ways.
                    continue;
                }
                let mut spec = spec(test, size, input);
                if by_count_in_duration_mode(test, direction) {
                    spec.duration_ms = None;
                }
                out.push(PlannedTest { direction, spec });
            }
        }
    }
    for t in &out {
        t.spec.validate().map_err(|e| format!("{} at {} bytes: {e}", t.spec.test.name(), t.spec.size))?;
    }
    Ok(out)
}

/// Bytes kept in flight per QP at most: 32 MiB covers the bandwidth-delay product of a 400G
/// link many times over, and keeps a slow responder (Soft-RoCE) from timing out and retrying.
const MAX_BYTES_IN_FLIGHT: u64 = 32 << 20;
/// A completion at least every 16 MiB, so progress (and a stall) is seen within seconds even
/// on emulated links.
const MAX_BYTES_PER_COMPLETION: u64 = 16 << 20;

/// Send queue depth, completion interval and post-list length for a message size:
/// perftest's depth of 128 (deeper only adds retries when the responder is slow), a
/// completion every 64 WRs, chains of 16, all shrunk for big messages.
pub fn bw_queue(size: u32) -> (u32, u32, u32) {
    let size = u64::from(size.max(1));
    let depth = (MAX_BYTES_IN_FLIGHT / size).clamp(4, 128);
    let depth = 1u64 << (63 - depth.leading_zeros());
    let cq_mod = (MAX_BYTES_PER_COMPLETION / size).clamp(1, 64).min(depth / 2);
    let cq_mod = 1u64 << (63 - cq_mod.leading_zeros());
    let post_list = cq_mod.min(16);
    (depth as u32, cq_mod as u32, post_list as u32)
}

fn spec(test: TestKind, size: u32, input: &PlanInput) -> TestSpec {
    let (default_iters, tx_depth, cq_mod, post_list) = if test == TestKind::LatUnderLoad {
        // The probe's queue is its own (perf::loaded_latency); these shape the load's.
        let (depth, cq_mod, post_list) = bw_queue(crate::perf::loaded_latency::LOAD_SIZE);
        (LAT_ITERS, depth, cq_mod, post_list)
    } else if test.full_round_trip() {
        // One read in flight, every one signaled: a send queue of one, as perftest's latency
        // QPs. The 64 of the other latency tests leaves room for 16 unsignaled WRs; here it
        // only made the provider walk a larger ring (1% on Soft-RoCE, docs/performance.md).
        (LAT_ITERS, 1, 1, 1)
    } else if test.is_latency() {
        (LAT_ITERS, 64, 16, 1)
    } else {
        // Big messages: fewer iterations in a sweep so 8 MiB does not take minutes.
        let iters = if size > BW_SIZE { (BW_ITERS * u64::from(BW_SIZE) / u64::from(size)).max(200) } else { BW_ITERS };
        let (depth, cq_mod, post_list) = bw_queue(size);
        (iters, depth, cq_mod, post_list)
    };
    let iters = input.iters.unwrap_or(default_iters);
    TestSpec {
        paths: false,
        test,
        role: Role::Active,
        size,
        iters,
        warmup: if test.is_latency() { (iters / 10).min(1000) } else { (iters / 10).min(500) },
        duration_ms: input.duration_ms,
        // lat_under_load's are its load's (its latency QP is one more).
        qps: if test.is_latency() && test != TestKind::LatUnderLoad { 1 } else { input.qps },
        tx_depth,
        cq_mod,
        post_list,
        stall_timeout_ms: input.stall_timeout_ms,
        atomic: AtomicOp::FetchAdd,
        inline: None,
        events: false,
        report_every_ms: None,
        validate_seed: None,
    }
}

/// perftest's per-QP knobs, applied to a built plan: `--atomic`, `--inline N`, `--tx-depth N`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tuning {
    pub atomic: AtomicOp,
    /// Inline bytes asked (0: off); `None`: fabcheck's default.
    pub inline: Option<u32>,
    /// Send queue depth of the bandwidth tests (perftest's `-t`); the completion interval and
    /// post list shrink to fit under it. Latency tests keep one round trip in flight.
    pub tx_depth: Option<u32>,
    /// Completion events instead of busy polling (perftest's `-e`).
    pub events: bool,
    /// `--report-every`: the agents' figures every this many milliseconds while a test runs.
    pub report_every_ms: Option<u64>,
    /// `--validate`: the pattern's seed, in the specs of the tests it checks.
    pub validate_seed: Option<u64>,
}

/// Applies `tuning` to every test of the plan, and re-checks each spec's limits.
pub fn tune(plan: &mut [PlannedTest], tuning: &Tuning) -> Result<(), Unparsed> {
    for t in plan.iter_mut() {
        t.spec.atomic = tuning.atomic;
        t.spec.inline = tuning.inline;
        t.spec.events = tuning.events;
        t.spec.report_every_ms = tuning.report_every_ms;
        t.spec.validate_seed = tuning.validate_seed.filter(|_| super::data::checked(t.spec.test) && t.direction != crate::model::Direction::Bidi);
        if let Some(depth) = tuning.tx_depth.filter(|_| !t.spec.test.is_latency() || t.spec.test == TestKind::LatUnderLoad) {
            // cq_mod and post_list are powers of two: the largest not above the depth (half of
            // it where it can be, so a completion comes before the queue is full) divides both.
            let half = (depth / 2).max(1);
            let fit = 1u32 << (31 - half.leading_zeros());
            t.spec.tx_depth = depth;
            t.spec.cq_mod = t.spec.cq_mod.min(fit);
            t.spec.post_list = t.spec.post_list.min(t.spec.cq_mod);
        }
        t.spec.validate().map_err(|e| format!("{} at {} bytes: {e}", t.spec.test.name(), t.spec.size))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> PlanInput {
        PlanInput {
            tests: TestKind::ALL.to_vec(),
            size: None,
            sweep: false,
            iters: None,
            duration_ms: None,
            qps: 1,
            directions: None,
            stall_timeout_ms: 5000,
        }
    }

    #[test]
    fn default_plan() {
        let plan = build(&input()).unwrap();
        // 3 latency tests one way, 3 bandwidth tests three ways.
        assert_eq!(plan.len(), 3 + 9);
        let lat = &plan[0];
        assert_eq!((lat.spec.size, lat.spec.iters, lat.direction), (2, 1000, Direction::AtoB));
        let bw = plan.iter().find(|t| t.spec.test == TestKind::WriteBw).unwrap();
        assert_eq!((bw.spec.size, bw.spec.iters), (65536, 5000));
        assert_eq!(plan[3].spec_for(false).role, Role::Passive);
    }

    #[test]
    fn sweep_and_contradictions() {
        let mut i = input();
        i.tests = vec![TestKind::WriteBw];
        i.sweep = true;
        i.directions = Some(vec![Direction::AtoB]);
        let plan = build(&i).unwrap();
        assert_eq!(plan.len(), 23);
        assert_eq!(plan.last().unwrap().spec.size, SWEEP_MAX);
        assert!(plan.last().unwrap().spec.iters >= 200);
        // perftest's -a -s MAX: the sweep stops at MAX.
        i.size = Some(64);
        let sizes: Vec<u32> = build(&i).unwrap().iter().map(|t| t.spec.size).collect();
        assert_eq!(sizes, [2, 4, 8, 16, 32, 64]);
        i.size = Some(100);
        assert_eq!(build(&i).unwrap().last().unwrap().spec.size, 100);
        i.size = Some(1);
        assert!(build(&i).is_err());
        let mut z = input();
        z.size = Some(0);
        assert!(build(&z).is_err());
        let mut q = input();
        q.qps = 0;
        assert!(build(&q).is_err());
    }

    /// `pair A B -D 5s` with the default tests: every test runs for the duration but
    /// bidirectional send_bw, which runs by count and is said.
    #[test]
    fn duration_mode_runs_every_default_test() {
        let mut d = input();
        d.duration_ms = Some(5000);
        let plan = build(&d).expect("-D 5s with the default tests is a plan");
        assert_eq!(plan.len(), 3 + 9);
        let by_count: Vec<_> = plan.iter().filter(|t| t.spec.duration_ms.is_none()).map(|t| (t.spec.test, t.direction)).collect();
        assert_eq!(by_count, [(TestKind::SendBw, Direction::Bidi)]);
        assert!(plan.iter().filter(|t| t.spec.duration_ms.is_some()).all(|t| t.spec.duration_ms == Some(5000)));
        let note = duration_note(&plan).expect("said");
        assert!(note.starts_with("send_bw bidi ran by count (5000 iterations)"), "{note}");
        assert_eq!(duration_note(&build(&input()).unwrap()), None, "nothing to say without --duration");
        d.tests = vec![TestKind::WriteBw];
        assert_eq!(duration_note(&build(&d).unwrap()), None, "nothing ran by count");
    }

    /// Atomics move one 64-bit word whatever --size and --sweep say (perftest's atomic tools
    /// refuse another size); atomic_lat keeps one in flight, as read_lat.
    #[test]
    fn atomics_are_eight_bytes_and_not_in_the_groups() {
        let mut i = input();
        i.tests = vec![TestKind::AtomicLat, TestKind::AtomicBw];
        i.size = Some(65536);
        i.sweep = true;
        let plan = build(&i).unwrap();
        assert!(plan.iter().all(|t| t.spec.size == ATOMIC_SIZE), "{plan:?}");
        assert_eq!(plan.iter().filter(|t| t.spec.test == TestKind::AtomicLat).count(), 1);
        let lat = plan.iter().find(|t| t.spec.test == TestKind::AtomicLat).unwrap();
        assert_eq!((lat.spec.tx_depth, lat.spec.cq_mod, lat.spec.post_list), (1, 1, 1));
        assert!(!TestKind::parse_list("all").unwrap().iter().any(|t| t.is_atomic()));
        assert_eq!(TestKind::parse_list("atomic_bw,atomic_lat").unwrap(), [TestKind::AtomicBw, TestKind::AtomicLat]);
    }

    /// --tx-depth N: the bandwidth queue is N deep with its completion interval and post list
    /// shrunk to fit (valid for every N); latency queues keep their shape; --inline and
    /// --atomic reach every spec.
    #[test]
    fn tuning_reaches_every_spec_and_keeps_it_valid() {
        for depth in [1, 2, 3, 7, 16, 100, 128, 8192] {
            let mut plan = build(&input()).unwrap();
            let tuning = Tuning {
                atomic: AtomicOp::CmpSwap,
                inline: Some(0),
                tx_depth: Some(depth),
                events: true,
                report_every_ms: None,
                validate_seed: None,
            };
            tune(&mut plan, &tuning).unwrap_or_else(|e| panic!("--tx-depth {depth}: {e}"));
            for t in &plan {
                assert_eq!((t.spec.atomic, t.spec.inline, t.spec.events), (AtomicOp::CmpSwap, Some(0), true));
                if t.spec.test.is_latency() {
                    assert!(t.spec.tx_depth <= 64, "{t:?}");
                } else {
                    assert_eq!(t.spec.tx_depth, depth);
                    assert!(t.spec.cq_mod <= depth.div_ceil(2).max(1), "{t:?}");
                }
            }
        }
        let mut plan = build(&input()).unwrap();
        assert!(tune(&mut plan, &Tuning { inline: Some(crate::model::MAX_INLINE + 1), ..Tuning::default() }).is_err());
    }

    /// lat_under_load: one way (A's probe and load), the latency tests' size and count, the
    /// load's queue shape and --qps; not in the groups.
    #[test]
    fn lat_under_load_is_one_way_with_the_load_s_queue() {
        let mut i = input();
        i.tests = vec![TestKind::LatUnderLoad];
        i.qps = 2;
        let plan = build(&i).unwrap();
        assert_eq!(plan.len(), 1, "{plan:?}");
        let t = &plan[0];
        assert_eq!((t.direction, t.spec.size, t.spec.iters, t.spec.qps), (Direction::AtoB, LAT_SIZE, LAT_ITERS, 2));
        assert_eq!((t.spec.tx_depth, t.spec.cq_mod, t.spec.post_list), bw_queue(65536));
        assert!(!TestKind::parse_list("all,lat,bw").unwrap().contains(&TestKind::LatUnderLoad));
        assert_eq!(TestKind::parse_list("lat_under_load").unwrap(), [TestKind::LatUnderLoad]);
        let mut plan = build(&i).unwrap();
        tune(&mut plan, &Tuning { tx_depth: Some(16), ..Tuning::default() }).unwrap();
        assert_eq!(plan[0].spec.tx_depth, 16, "--tx-depth shapes the load");
    }

    #[test]
    fn queue_shape_follows_size() {
        assert_eq!(bw_queue(64), (128, 64, 16));
        assert_eq!(bw_queue(65536), (128, 64, 16));
        assert_eq!(bw_queue(1 << 20), (32, 16, 16));
        assert_eq!(bw_queue(8 << 20), (4, 2, 2));
        assert_eq!(bw_queue(64 << 20), (4, 1, 1));
        for p in 1..=26 {
            let (d, c, l) = bw_queue(1 << p);
            assert!(c <= d && c % l == 0 && d.is_power_of_two(), "size 2^{p}: {d} {c} {l}");
        }
    }

    #[test]
    fn latency_queues_hold_what_each_test_keeps_in_flight() {
        let shape = |t| {
            let s = spec(t, 2, &input());
            (s.tx_depth, s.cq_mod, s.post_list)
        };
        // Room for 16 unsignaled sends or writes; a read is signaled and waited for each time.
        assert_eq!(shape(TestKind::SendLat), (64, 16, 1));
        assert_eq!(shape(TestKind::WriteLat), (64, 16, 1));
        assert_eq!(shape(TestKind::ReadLat), (1, 1, 1));
        assert!(spec(TestKind::ReadLat, 2, &input()).validate().is_ok());
    }

    #[test]
    fn directions() {
        assert_eq!(Direction::parse_list("all").unwrap().len(), 3);
        assert!(Direction::parse_list("sideways").is_err());
        assert_eq!(Direction::Bidi.roles(), (Role::Both, Role::Both));
    }
}
