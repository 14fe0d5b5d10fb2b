//! Deterministic mutation fuzzing of the files and flag values an operator hands fabcheck
//! (`fuzz.rs` covers the wire protocol, profiles and endpoints; bundles are fuzzed apart): the
//! ibnetdiscover topology (`fabric`, `mesh`, `collective --topology`), the cabling plan and the
//! rail map (`fabric --plan`, `--rail-map`), an ibdiagnet capture (`fabric --ibdiagnet`), the
//! documents `compare` and `--baseline` read, a hostfile, `exporter --live-dir`'s state files,
//! and the free-text flag values the library parses. Seeds are the corpus under
//! tests/corpus/<parser>/, mutated by `fuzz.rs`'s mutator with a fixed seed. Each seed must
//! parse (a test that fed nothing fails), and no mutation may panic: a panic is reported naming
//! the parser and the input, escaped.

use super::fuzz::{corpus, mutate, Rng};
use fabcheck::fabric::design::{plan, rails, topology};
use fabcheck::fabric::ibdiagnet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

const ROUNDS: usize = 10_000;
/// Every this many rounds the input also goes through its file reader (a temp file).
const FILE_EVERY: usize = 10;
/// Rounds run through the binary (a process each), for the hostfile readers the library keeps private.
const BINARY_ROUNDS: usize = 150;

/// `f()`, or a failure naming `parser` and the input (escaped) when it panics.
fn no_panic<T>(parser: &str, input: &[u8], f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            let message =
                payload.downcast_ref::<String>().map(String::as_str).or_else(|| payload.downcast_ref::<&str>().copied()).unwrap_or("(not a string)");
            panic!("{parser} panicked on {:?}: {message}", String::from_utf8_lossy(input));
        }
    }
}

/// A fresh directory of this test process under the temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("fabcheck-input-fuzz-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, data).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

#[test]
fn topology_parser_never_panics() {
    let seeds = corpus("topology");
    for s in &seeds {
        let cabling = topology::parse("seed", &text(s)).unwrap_or_else(|e| panic!("seed rejected: {e}\n{}", text(s)));
        fabcheck::mesh::topology::Topology::from_cabling(&cabling).unwrap_or_else(|e| panic!("seed has no leaf: {e}\n{}", text(s)));
    }
    let scratch = Scratch::new("topology");
    let mut rng = Rng(0x7070_1091_cafe_0001);
    for round in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        let parsed = no_panic("topology::parse", &data, || topology::parse("fuzz", &text(&data)));
        if let Ok(cabling) = &parsed {
            for link in &cabling.links {
                assert!(cabling.nodes.contains_key(&link.a.0) && cabling.nodes.contains_key(&link.b.0), "{:?}", text(&data));
            }
            // mesh and collective --topology: the leaves of the same cabling.
            let _ = no_panic("mesh::topology::Topology::from_cabling", &data, || fabcheck::mesh::topology::Topology::from_cabling(cabling));
        }
        if round % FILE_EVERY == 0 {
            let path = scratch.write("t.net", &data);
            let loaded = no_panic("topology::load", &data, || topology::load(&path));
            if std::str::from_utf8(&data).is_ok() {
                assert_eq!(loaded.is_ok(), parsed.is_ok(), "load and parse disagree on {:?}", text(&data));
            }
        }
    }
}

#[test]
fn plan_parser_never_panics() {
    let seeds = corpus("plan");
    for s in &seeds {
        plan::parse("seed", &text(s)).unwrap_or_else(|e| panic!("seed rejected: {e}\n{}", text(s)));
    }
    let scratch = Scratch::new("plan");
    let mut rng = Rng(0x91a4_0000_0000_0002);
    for round in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        if let Ok(t) = no_panic("plan::parse", &data, || plan::parse("fuzz", &text(&data))) {
            assert!(t.links.iter().all(|l| l.a.1 > 0 && l.b.1 > 0 && l.a != l.b), "{:?}", text(&data));
        }
        if round % FILE_EVERY == 0 {
            let path = scratch.write("plan.csv", &data);
            let _ = no_panic("plan::load_until", &data, || plan::load_until(&path, None));
        }
    }
}

#[test]
fn rail_map_parser_never_panics() {
    let seeds = corpus("rail-map");
    for s in &seeds {
        rails::parse_map("seed", &text(s)).unwrap_or_else(|e| panic!("seed rejected: {e}\n{}", text(s)));
    }
    let scratch = Scratch::new("rail-map");
    let mut rng = Rng(0x4a11_0000_0000_0003);
    for round in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        if let Ok(map) = no_panic("rails::parse_map", &data, || rails::parse_map("fuzz", &text(&data))) {
            assert!(map.rails.values().all(|&r| r < 1024), "{:?}", text(&data));
        }
        if round % FILE_EVERY == 0 {
            let path = scratch.write("rails.csv", &data);
            let _ = no_panic("rails::load_map", &data, || rails::load_map(&path, None));
        }
    }
}

#[test]
fn ibdiagnet_parser_never_panics() {
    let (dbs, ans) = (corpus("ibdiagnet-db"), corpus("ibdiagnet-an"));
    for db in &dbs {
        for an in ans.iter().map(|a| Some(text(a))).chain([None]) {
            let c = ibdiagnet::parse(&text(db), an.as_deref()).unwrap_or_else(|e| panic!("seed rejected: {e:?}\n{}", text(db)));
            assert!(!c.switches.is_empty() && c.ar.is_some() && c.cc.is_some(), "seed read as {c:?}");
            ibdiagnet::judge(&c);
        }
    }
    let scratch = Scratch::new("ibdiagnet");
    let mut rng = Rng(0x1bd1_a600_0000_0004);
    for round in 0..ROUNDS {
        let pick = rng.below(dbs.len());
        let db = mutate(&mut rng, &dbs[pick]);
        let an = match rng.below(3) {
            0 => None,
            _ => {
                let pick = rng.below(ans.len());
                Some(mutate(&mut rng, &ans[pick]))
            }
        };
        let input = [&db[..], b"\n--- sharp_an_info ---\n", an.as_deref().unwrap_or(b"(none)")].concat();
        let an_text = an.as_deref().map(text);
        if let Ok(c) = no_panic("ibdiagnet::parse", &input, || ibdiagnet::parse(&text(&db), an_text.as_deref())) {
            no_panic("ibdiagnet::judge", &input, || ibdiagnet::judge(&c));
        }
        if round % FILE_EVERY == 0 {
            scratch.write(ibdiagnet::DB_CSV, &db);
            match &an {
                Some(an) => {
                    scratch.write(ibdiagnet::SHARP_AN_INFO, an);
                }
                None => {
                    let _ = std::fs::remove_file(scratch.0.join(ibdiagnet::SHARP_AN_INFO));
                }
            }
            let _ = no_panic("ibdiagnet::load", &input, || ibdiagnet::load(&scratch.0));
        }
    }
}

#[test]
fn compare_documents_never_panic() {
    use fabcheck::compare::{self, read::Doc, render};
    let seeds = corpus("compare");
    for s in &seeds {
        let doc = Doc::read(&s[..]).unwrap_or_else(|e| panic!("seed rejected: {e}\n{}", text(s)));
        let c = compare::compare_docs(&doc, &doc, 5.0).unwrap_or_else(|e| panic!("seed not comparable with itself: {e}\n{}", text(s)));
        assert!(!c.differences.is_empty(), "a seed with no figure: {}", text(s));
    }
    let mut rng = Rng(0xc0a1_9a8e_0000_0005);
    for _ in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let old = mutate(&mut rng, &seeds[pick]);
        // Mostly two versions of one document (the same command, so the figures are compared).
        let other = if rng.below(4) == 0 { rng.below(seeds.len()) } else { pick };
        let new = match rng.below(3) {
            0 => seeds[other].clone(),
            _ => mutate(&mut rng, &seeds[other]),
        };
        let input = [&old[..], b"\n--- NEW ---\n", &new[..]].concat();
        let (Ok(a), Ok(b)) =
            (no_panic("compare Doc::read", &old, || Doc::read(&old[..])), no_panic("compare Doc::read", &new, || Doc::read(&new[..])))
        else {
            continue;
        };
        let pct = [0.0, 5.0, 100.0][rng.below(3)];
        let Ok(c) = no_panic("compare::compare_docs", &input, || compare::compare_docs(&a, &b, pct)) else { continue };
        let (sa, sb) = (render::Source::of_meta("OLD.json", &a.meta), render::Source::of_meta("NEW.json", &b.meta));
        no_panic("compare render::human", &input, || render::human(&sa, &sb, &c));
        let json = no_panic("compare render::doc", &input, || serde_json::to_vec(&render::doc(&sa, &sb, &c)));
        assert!(json.is_ok(), "the compare document of {:?} is not written: {json:?}", text(&input));
    }
}

#[test]
fn live_state_parser_never_panics() {
    use fabcheck::exporter::live;
    let seeds = corpus("live");
    for s in &seeds {
        assert!(!live::parse(&text(s), 1000.5).is_empty(), "seed read as no figure: {}", text(s));
    }
    let mut rng = Rng(0x11fe_0000_0000_0006);
    for _ in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        for f in no_panic("exporter::live::parse", &data, || live::parse(&text(&data), 1000.5)) {
            assert!(f.test.len() <= 200 * 4 && !f.test.contains('\n'), "{:?}", text(&data));
            assert!(f.gbps.is_none_or(f64::is_finite), "{:?}", text(&data));
        }
    }
}

/// A hostfile's lines as `mesh`, `collective` and `accept` read them (`#` comments, blank
/// lines skipped), each an endpoint; the readers themselves are private to `commands` and are
/// run through the binary in [`hostfile_readers_never_panic`].
#[test]
fn hostfile_lines_never_panic() {
    use fabcheck::control::endpoint;
    let seeds = corpus("hostfile");
    let lines = |data: &str| -> Vec<String> {
        data.lines().map(|l| l.split('#').next().unwrap_or("").trim().to_string()).filter(|l| !l.is_empty()).collect()
    };
    for s in &seeds {
        for line in lines(&text(s)) {
            endpoint::parse_with_tcp_port(&line, Some(18515)).unwrap_or_else(|e| panic!("seed line {line:?} rejected: {e}"));
        }
    }
    let mut rng = Rng(0x4057_f11e_0000_0007);
    for _ in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        let port = [None, Some(1), Some(65535)][rng.below(3)];
        for line in lines(&text(&data)) {
            if let Ok(spec) =
                no_panic("endpoint::parse_with_tcp_port (hostfile line)", line.as_bytes(), || endpoint::parse_with_tcp_port(&line, port))
            {
                no_panic("EndpointSpec::to_string", line.as_bytes(), || spec.to_string());
            }
        }
    }
}

/// `mesh --hostfile` and `accept --hostfile` as the binary reads them: each run stops with a
/// usage error after the hostfile (a zero `--threshold`, an absent `--token-file`), before any
/// agent is started, so a valid mutation launches nothing.
#[test]
fn hostfile_readers_never_panic() {
    let seeds = corpus("hostfile");
    let scratch = Scratch::new("hostfile");
    let absent = scratch.0.join("no-token");
    let runs = |file: &Path| -> [Vec<String>; 2] {
        let file = file.display().to_string();
        let absent = absent.display().to_string();
        [
            ["mesh", "--hostfile", &file, "--threshold", "0", "-d", "mlx5_0:1"].map(String::from).to_vec(),
            ["accept", "--hostfile", &file, "--token-file", &absent].map(String::from).to_vec(),
        ]
    };
    let run = |args: &[String], data: &[u8]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = super::output_within(
            std::process::Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(&args),
            std::time::Duration::from_secs(60),
            "fabcheck with a fuzzed hostfile",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "fabcheck {} panicked on {:?}:\n{stderr}", args[0], String::from_utf8_lossy(data));
        assert_eq!(out.status.code(), Some(2), "fabcheck {} on {:?}:\n{stderr}", args[0], String::from_utf8_lossy(data));
        stderr.into_owned()
    };
    for s in &seeds {
        let path = scratch.write("hosts", s);
        let [mesh, accept] = runs(&path);
        let said = [run(&mesh, s), run(&accept, s)];
        // The seed is read whole: the runs stop at the flag after the hostfile.
        assert!(said[0].contains("--threshold") && said[1].contains("token"), "seed not read whole: {said:?}");
    }
    let mut rng = Rng(0x4057_f11e_0000_0008);
    for _ in 0..BINARY_ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        let path = scratch.write("hosts", &data);
        for args in runs(&path) {
            run(&args, &data);
        }
    }
}

/// A flag value parser of the library, by the name the corpus gives it (`values/flags.txt`:
/// one `NAME<TAB>VALUE` a line).
fn parse_value(name: &str, value: &str) -> Result<(), String> {
    use fabcheck::cli::values;
    use fabcheck::model::{self, rails::RailSpec, rails::RailThreshold};
    let e = |e: &dyn std::fmt::Display| e.to_string();
    match name {
        "size" => values::parse_size(value).map(drop).map_err(|x| e(&x)),
        "mtu" => values::parse_mtu(value).map(drop).map_err(|x| e(&x)),
        "duration" => {
            let d = values::duration(value).map_err(|x| e(&x))?;
            let _ = (values::window(value), values::seconds_up_to_a_day(value), values::seconds_1_to_a_day(value), values::parse_seconds(value));
            assert!(d.as_secs_f64() <= 1e9, "{value:?} read as {d:?}");
            Ok(())
        }
        "tests" => values::parse_tests(value).map(drop).map_err(|x| e(&x)),
        "direction" => model::Direction::parse_list(value).map(drop).map_err(|x| e(&x)),
        "mem" => model::MemChoice::parse(value).map(|m| drop(m.to_string())).map_err(|x| e(&x)),
        "atomic" => model::AtomicOp::parse(value).map(drop),
        "device" => model::parse_device_port(value).map(drop).map_err(|x| e(&x)),
        "rails" => match RailSpec::parse(value).map_err(|x| e(&x))? {
            RailSpec::List(names) => {
                assert!(names.len() <= model::rails::MAX_RAILS, "{value:?} read as {} rails", names.len());
                Ok(())
            }
            _ => Ok(()),
        },
        "rail-threshold" => RailThreshold::parse(value).map(drop).map_err(|x| e(&x)),
        "cpu" => fabcheck::pair::CpuChoice::parse(value).map(drop).map_err(|x| e(&x)),
        "rails-cpu" => fabcheck::pair::rails::RailsConfig::parse("auto", Some("50"), Some(value)).map(drop).map_err(|x| e(&x)),
        "pattern" => fabcheck::mesh::pattern::Pattern::parse(value).map(drop).map_err(|x| e(&x)),
        "op" => fabcheck::collective::op::Op::parse(value).map(drop).map_err(|x| e(&x)),
        "fabric-expect" => fabcheck::fabric::FabricExpect::default().set(value).map_err(|x| e(&x)),
        "check-expect" => fabcheck::diagnose::Expectations::default().set(value).map_err(|x| e(&x)),
        other => panic!("values/flags.txt names no parser {other:?}"),
    }
}

#[test]
fn flag_values_never_panic() {
    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    for file in corpus("values") {
        for line in text(&file).lines().filter(|l| !l.trim().is_empty()) {
            let (name, value) = line.split_once('\t').unwrap_or_else(|| panic!("values line without a tab: {line:?}"));
            parse_value(name, value).unwrap_or_else(|e| panic!("seed {name} {value:?} rejected: {e}"));
            seeds.push((name.to_string(), value.as_bytes().to_vec()));
        }
    }
    assert!(seeds.len() > 20, "{} value seeds", seeds.len());
    let mut rng = Rng(0x7a1e_5000_0000_0009);
    for _ in 0..ROUNDS * 3 {
        let (name, seed) = &seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, seed);
        let _ = no_panic(name, &data, || parse_value(name, &text(&data)));
    }
}
