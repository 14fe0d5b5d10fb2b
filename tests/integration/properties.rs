//! Property tests (proptest): generated inputs, shrunk to the smallest failing case when a
//! property breaks. Beside the deterministic mutation corpus (`fuzz.rs`), these check what the
//! parsers must do for every input, not just that they do not panic:
//! - the protocol decoder never panics, and whatever it accepts survives a round trip;
//! - a test spec's `validate` accepts exactly the specs within the protocol's limits (checked
//!   against an independent model of those limits);
//! - a profile applies exactly the settings its lines state, in any layout (spacing, case,
//!   comments, `:` or `=`), and names the first bad line.

use fabcheck::control::protocol::{self, Reply, Request, Role, TestKind, TestSpec, MAX_DURATION_MS, MAX_ITERS, MAX_QPS, MAX_SIZE};
use fabcheck::diagnose::Expectations;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn decoder_never_panics_and_what_it_accepts_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(req) = protocol::decode::<Request>(&text) {
            prop_assert_eq!(protocol::decode::<Request>(&protocol::encode(&req)).unwrap(), req);
        }
        if let Ok(reply) = protocol::decode::<Reply>(&text) {
            prop_assert_eq!(protocol::decode::<Reply>(&protocol::encode(&reply)).unwrap(), reply);
        }
    }

    #[test]
    fn json_shaped_lines_never_panic(
        kind in prop::sample::select(vec!["hello", "inventory", "prepare", "connect", "run", "stop", "finish", "bye", "ready", "done", "error", "x"]),
        v in prop::sample::select(vec!["1", "2", "0", "-1", "1e309", "\"1\"", "null", "18446744073709551616"]),
        extra in "[a-z_]{0,8}",
        value in prop::sample::select(vec!["null", "0", "-1", "4294967296", "\"\"", "[]", "{}", "true", "1.5"]),
    ) {
        let line = format!("{{\"v\":{v},\"type\":\"{kind}\",\"{extra}\":{value}}}");
        let _ = protocol::decode::<Request>(&line);
        let _ = protocol::decode::<Reply>(&line);
    }

    #[test]
    fn validate_accepts_exactly_the_specs_within_limits(
        test in prop::sample::select(TestKind::ALL.into_iter().chain(TestKind::NAMED_ONLY).collect::<Vec<_>>()),
        size in prop::sample::select(vec![0u32, 1, 2, 8, 65536, MAX_SIZE, MAX_SIZE + 1, u32::MAX]),
        iters in prop::sample::select(vec![0u64, 1, 1000, MAX_ITERS, MAX_ITERS + 1, u64::MAX]),
        warmup in prop::sample::select(vec![0u64, 100, MAX_ITERS, MAX_ITERS + 1]),
        duration_ms in prop::sample::select(vec![None, Some(0u64), Some(1), Some(MAX_DURATION_MS), Some(MAX_DURATION_MS + 1)]),
        qps in prop::sample::select(vec![0u32, 1, 2, MAX_QPS, MAX_QPS + 1]),
        tx_depth in prop::sample::select(vec![0u32, 1, 128, 8192, 8193]),
        cq_mod in prop::sample::select(vec![0u32, 1, 16, 64, 100, 8193]),
        post_list in prop::sample::select(vec![0u32, 1, 4, 16, 3]),
        stall in prop::sample::select(vec![0u64, 1, 5000, 600_000, 600_001]),
    ) {
        let spec = TestSpec {
            test, role: Role::Active, size, iters, warmup, duration_ms, qps, tx_depth, cq_mod, post_list, stall_timeout_ms: stall, atomic: Default::default(), inline: None, events: false, report_every_ms: None, validate_seed: None, paths: false,
        };
        let model = (1..=MAX_SIZE).contains(&size)
            && (1..=MAX_QPS).contains(&qps)
            && (!test.is_latency() || test == TestKind::LatUnderLoad || qps == 1)
            && (!test.is_atomic() || size == 8)
            && (duration_ms.is_some() || (1..=MAX_ITERS).contains(&iters))
            && warmup <= MAX_ITERS
            && duration_ms.is_none_or(|ms| (1..=MAX_DURATION_MS).contains(&ms))
            && (1..=8192).contains(&tx_depth) && (1..=tx_depth).contains(&cq_mod)
            && (1..=cq_mod).contains(&post_list) && cq_mod % post_list == 0
            && (1..=600_000).contains(&stall);
        prop_assert_eq!(spec.validate().is_ok(), model, "{:?}: {:?}", spec, spec.validate());
        // And it survives the wire.
        let req = Request::Prepare { target: fabcheck::model::Target { device: None, port: None, gid_index: None, cm: None, conditions: Default::default(), cpu_slot: None }, spec: spec.clone() };
        prop_assert_eq!(protocol::decode::<Request>(&protocol::encode(&req)).unwrap(), req);
    }

    #[test]
    fn a_profile_applies_exactly_what_its_lines_say(
        lines in proptest::collection::vec(
            (
                prop::sample::select(vec![
                    ("rate", "200"), ("rate", "400 Gb/s"), ("width", "4x"), ("width", "2X"), ("speed", "HDR"), ("speed", "ndr"),
                    ("link_layer", "InfiniBand"), ("link_layer", "roce"), ("mtu", "4096"), ("mtu", "1024"), ("fw", "28.39.1002"),
                    ("devices", "8"), ("state", "ACTIVE"),
                ]),
                prop::sample::select(vec![" = ", "=", ": ", " : "]),
                prop::sample::select(vec!["", "   # a comment", "#x"]),
                prop::bool::ANY,
            ),
            0..12,
        )
    ) {
        let mut text = String::new();
        let mut expected = Expectations::default();
        for ((key, value), sep, comment, upper) in &lines {
            let key = if *upper { key.to_ascii_uppercase() } else { key.to_string() };
            text.push_str(&format!("  {key}{sep}{value}{comment}\n# between\n\n"));
            expected.set(&format!("{key}={value}")).unwrap();
        }
        let mut got = Expectations::default();
        got.apply_profile("p", &text).unwrap();
        prop_assert_eq!(format!("{got:?}"), format!("{expected:?}"));
    }

    #[test]
    fn a_bad_profile_line_is_named(good in 0usize..5, bad in prop::sample::select(vec!["rate=fast", "colour=red", "mtu=1500", "width", "speed=ZDR"])) {
        let mut text = "rate=200\n".repeat(good);
        text.push_str(bad);
        text.push('\n');
        let err = Expectations::default().apply_profile("p", &text).unwrap_err().to_string();
        let needle = format!("p:{}:", good + 1);
        prop_assert!(err.contains(&needle), "{} lacks {}", err, needle);
    }

    #[test]
    fn profile_parser_never_panics(text in "(?s).{0,400}") {
        let _ = Expectations::default().apply_profile("p", &text);
    }
}
