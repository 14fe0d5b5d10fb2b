//! perftest parity (issue #55): the atomics and the per-QP knobs against the perftest tool and
//! flags they mirror, same device, same guest, alternating, best of three on each side, within
//! the 1.8x sanity bound of `pair::every_test_is_within_sanity_bounds_of_its_perftest_peer`
//! (a unit slip or a round trip reported one-way shows as 2x or more). benches/compare.sh
//! measures the ratios over rounds (rows atomic_lat, atomic_bw, send_lat_noinline,
//! send_lat_events, send_bw_events).
//!
//! perftest's atomic tools move 8 bytes and refuse another size (`DEF_SIZE_ATOMIC`), so they get
//! no `-s`; their columns are read's: latency `#bytes #iterations t_min ...` (t_min, index 2,
//! the full round trip, as fabcheck reports atomic_lat), bandwidth `#bytes #iterations BW_peak
//! BW_average MsgRate` (MsgRate in Mpps, index 4: at 8 bytes the Gb/s figures have too few
//! digits to compare).

use super::pair::{pair, perftest, perftest_row, result};
use super::{num, require_rxe};

struct Case {
    name: &'static str,
    test: &'static str,
    ours: &'static [&'static str],
    tool: &'static str,
    theirs: &'static str,
    size: u32,
    column: usize,
}

#[test]
fn atomics_inline_off_and_events_are_within_sanity_bounds_of_perftest() {
    const MAX_RATIO: f64 = 1.8;
    let _serial = require_rxe();
    let cases = [
        Case { name: "atomic_lat fetch_add", test: "atomic_lat", ours: &[], tool: "ib_atomic_lat", theirs: "", size: 8, column: 2 },
        Case {
            name: "atomic_lat cmp_swap",
            test: "atomic_lat",
            ours: &["--atomic", "cmp_swap"],
            tool: "ib_atomic_lat",
            theirs: "-A CMP_AND_SWAP",
            size: 8,
            column: 2,
        },
        // The message rate: at 8 bytes the Gb/s figure has too few digits to compare.
        Case { name: "atomic_bw fetch_add", test: "atomic_bw", ours: &[], tool: "ib_atomic_bw", theirs: "", size: 8, column: 4 },
        // perftest on rxe runs without inline whatever -I says ("Disabling it"): --inline 0 is
        // the setting that matches it exactly.
        Case { name: "send_lat --inline 0", test: "send_lat", ours: &["--inline", "0"], tool: "ib_send_lat", theirs: "-s 2", size: 2, column: 2 },
        // Completion channels (perftest's -e) on both tools: each side sleeps in poll(2).
        Case { name: "send_lat --events", test: "send_lat", ours: &["--events"], tool: "ib_send_lat", theirs: "-s 2 -e", size: 2, column: 2 },
        // perftest takes -e for sends only ("Events feature not available on WRITE verb").
        Case {
            name: "send_bw --events",
            test: "send_bw",
            ours: &["--events", "--size", "65536"],
            tool: "ib_send_bw",
            theirs: "-s 65536 -e",
            size: 65536,
            column: 4,
        },
    ];
    let mut report = Vec::new();
    // fabcheck's busy-polled send_lat (the `--inline 0` case, before the `--events` one).
    let mut busy_lat = f64::NAN;
    for c in cases {
        let latency = c.test.ends_with("_lat");
        let better = |best: f64, v: f64| if latency { best.min(v) } else { best.max(v) };
        let worst = if latency { f64::MAX } else { 0.0 };
        let (mut theirs, mut ours) = (worst, worst);
        let mut ratio = f64::NAN;
        for _attempt in 0..3 {
            for _ in 0..3 {
                if let Ok(text) = perftest(c.tool, &format!("{} -n 300", c.theirs)) {
                    theirs = better(theirs, perftest_row(&text, c.size)[c.column]);
                }
                let mut args = vec!["--tests", c.test, "--iters", "300", "--direction", "ab"];
                args.extend_from_slice(c.ours);
                let (_, doc) = pair(&args);
                let r = result(&doc, c.test, "a->b");
                assert!(r["error"].is_null(), "{}: {r}", c.name);
                assert_eq!(r["size"].as_u64(), Some(u64::from(c.size)), "{}: {r}", c.name);
                ours = better(ours, if latency { num(&r["lat_us"], "min") } else { num(r, "msg_rate_mpps") });
            }
            if theirs == worst {
                continue;
            }
            ratio = ours / theirs;
            if ratio > 1.0 / MAX_RATIO && ratio < MAX_RATIO {
                break;
            }
        }
        assert!(theirs != worst, "{} gave no figure in 9 runs", c.tool);
        report.push(format!("{}: fabcheck {ours} vs {} {theirs} ({}) ratio {ratio:.2}", c.name, c.tool, if latency { "us" } else { "Mpps" }));
        if c.name == "send_lat --inline 0" {
            busy_lat = ours;
        }
        if c.name == "send_lat --events" {
            // ib_send_lat -e's wake-up cost swings with how idle the guest's CPUs are: on a
            // quiet rehearsal its best of 9 was 53 us against fabcheck's 15.8 (ratio 0.30), on
            // busy ones within 1.1. So this case's floor is not perftest's: fabcheck with
            // --events must not be slower than it (the bound), and must be slower than its own
            // busy-polled send_lat (it really sleeps in poll(2) on a completion channel).
            assert!(ratio < MAX_RATIO && ours > busy_lat, "{}\n(busy-polled send_lat {busy_lat} us)", report.join("\n"));
            continue;
        }
        assert!(ratio > 1.0 / MAX_RATIO && ratio < MAX_RATIO, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}
