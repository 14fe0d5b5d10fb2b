//! Deterministic mutation fuzzing of the bundle readers: what `check --sysfs-root DIR` reads
//! of a captured node (sysfs files, PCI config space, the tools' outputs, the kernel log, the
//! manifest) and judges. A real node we never saw may hold a file shaped unlike any fixture's,
//! so each fixture that `check` accepts is copied, one of its files at a time is replaced by a
//! mutation (bit flips, truncation, splices of tokens, random bytes, long lines, non-UTF-8, an
//! empty file, 1 MiB of junk), and the node is read and judged in-process, as `check` does.
//! Errors are answers; a panic is a defect, reported with the fixture, file and content.

use super::fixtures_dir;
use super::fuzz::Rng;
use fabcheck::diagnose::node::{self, Log};
use fabcheck::diagnose::{Expectations, Scope};
use fabcheck::probe::{self, Source};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Tokens that break numbers, fields and lines of sysfs attributes and tool outputs.
const INTERESTING: [&[u8]; 28] = [
    b"-1",
    b"0",
    b"18446744073709551616",
    b"4294967296",
    b"-9223372036854775808",
    b"nan",
    b"inf",
    b"-inf",
    b"1e309",
    b"0x",
    b"0xffffffffffffffffff",
    b":",
    b"::",
    b"\n",
    b"\n\n",
    b" ",
    b"\t",
    b"=",
    b",",
    b"/",
    b"..",
    b"\xff\xfe",
    b"\xe2\x82",
    b"\0",
    "\u{e9}".as_bytes(),
    "\u{20ac}".as_bytes(),
    "\u{fffd}".as_bytes(),
    "\u{1f600}".as_bytes(),
];

/// Numbers at the edges of what a field holds.
const EDGES: [&[u8]; 16] = [
    b"0",
    b"1",
    b"7",
    b"8",
    b"9",
    b"15",
    b"16",
    b"63",
    b"64",
    b"255",
    b"256",
    b"65536",
    b"4294967295",
    b"4294967296",
    b"18446744073709551615",
    b"99999999999999999999",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(12) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => data.truncate(rng.below(len)),
            2 | 3 => {
                let i = rng.below(len + 1);
                let token = INTERESTING[rng.below(INTERESTING.len())];
                data.splice(i..i, token.iter().copied());
            }
            4 if len > 0 => {
                let (a, b) = (rng.below(len), rng.below(len));
                let (a, b) = (a.min(b), a.max(b));
                let chunk = data[a..b].to_vec();
                let at = rng.below(data.len() + 1);
                data.splice(at..at, chunk);
            }
            5 => {
                let i = rng.below(len + 1);
                data.insert(i, rng.next() as u8);
            }
            6 if len > 1 => {
                let i = rng.below(len - 1);
                data.remove(i);
            }
            7 => {
                // A very long line: one field of many digits or letters.
                let i = rng.below(len + 1);
                let fill = if rng.below(2) == 0 { b'9' } else { b'x' };
                data.splice(i..i, std::iter::repeat_n(fill, 1 + rng.below(70_000)));
            }
            10 if len > 0 => {
                // A few bytes overwritten by a token: a character of several bytes where one
                // was (byte offsets that are no longer character boundaries).
                let i = rng.below(len);
                let end = (i + 1 + rng.below(3)).min(len);
                let token = INTERESTING[rng.below(INTERESTING.len())];
                data.splice(i..end, token.iter().copied());
            }
            8 | 9 => {
                // A number of the file replaced by an edge value: indexes (priorities, lanes,
                // TCs, DSCPs, offsets) past their table, widths of zero, overflowing sums.
                let starts: Vec<usize> = (0..len).filter(|&i| data[i].is_ascii_digit() && (i == 0 || !data[i - 1].is_ascii_alphanumeric())).collect();
                if !starts.is_empty() {
                    let a = starts[rng.below(starts.len())];
                    let b = (a..len).find(|&i| !data[i].is_ascii_alphanumeric()).unwrap_or(len);
                    let value = EDGES[rng.below(EDGES.len())];
                    data.splice(a..b, value.iter().copied());
                }
            }
            _ => {
                let i = rng.below(len + 1);
                let digits = (rng.next() % 100_000_000_000).to_string();
                data.splice(i..i, digits.bytes());
            }
        }
    }
    data
}

/// 1 MiB of junk: numbers, tokens and raw bytes mixed (the readers must cap what they read).
fn junk(rng: &mut Rng) -> Vec<u8> {
    let mut data = Vec::with_capacity(1 << 20);
    while data.len() < 1 << 20 {
        match rng.below(4) {
            0 => data.extend_from_slice(INTERESTING[rng.below(INTERESTING.len())]),
            1 => data.push(rng.next() as u8),
            _ => data.extend_from_slice(format!("{} ", rng.next() % 1_000_000).as_bytes()),
        }
    }
    data.truncate(1 << 20);
    data
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-bundle-fuzz-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The regular files of a tree (links not followed, so each file once), less what `check` never
/// reads (the case description, generator scripts, notes).
fn files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            files(root, &path, out);
        } else if meta.is_file() {
            let name = path.file_name().unwrap().to_string_lossy();
            if name != "case.json" && !name.ends_with(".py") && !name.ends_with(".md") {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
}

/// Reads and judges the tree as `check --sysfs-root` does (manifest, node, kernel log, every
/// rule); `Err` carries the panic's message.
fn check(root: &Path) -> Result<Option<String>, String> {
    let run = || {
        let _ = probe::bundle::origin(root);
        let source = Source::Sysfs(root.to_path_buf());
        let Ok(read) = probe::node::read(&source, &[]) else { return None };
        let log = if read.inventory.devices.is_empty() { None } else { probe::kernel_log::read(&source) };
        let log = log.as_ref().map(|(log, end)| Log {
            log: log.as_ref().map_err(String::as_str),
            window: fabcheck::diagnose::flap_rules::LogWindow { end: *end, seconds: 86_400 },
        });
        let judged = node::judge_with_log(&read, &Expectations::default(), &Scope::default(), None, log.as_ref());
        Some(serde_json::to_string(&judged.report).unwrap())
    };
    panic::catch_unwind(AssertUnwindSafe(run))
        .map_err(|e| e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default())
}

/// The content, shortened for a report.
fn shown(data: &[u8]) -> String {
    let text = format!("{:?}", String::from_utf8_lossy(&data[..data.len().min(300)]));
    if data.len() > 300 {
        format!("{text}... ({} bytes)", data.len())
    } else {
        text
    }
}

/// Mutations per bundle (the first replaces a file by nothing, the second by 1 MiB of junk).
const ROUNDS: usize = 48;
/// A tree of hundreds of PCI functions (the GPU nodes') costs a dozen plain ones a read: it gets
/// a quarter of the rounds, which keeps the test near 20 s in a debug build.
const LARGE_TREE_FILES: usize = 300;

#[test]
fn bundle_readers_never_panic_on_mutated_files() {
    let dir = scratch("trees");
    let mut rng = Rng(0x5eed_b0d1_e5f0_22ed);
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let (mut fuzzed, mut rounds, mut failures, mut changed, mut refused) = (0, 0, Vec::new(), 0, 0);
    for name in &names {
        let root = dir.join(name);
        let ok = Command::new("cp").arg("-a").arg(fixtures_dir().join(name)).arg(&root).status().unwrap().success();
        assert!(ok, "cp -a {name}");
        // A bundle is what `check` reads: a fixture it refuses (no device tree) is something else.
        match probe::node::read(&Source::Sysfs(root.clone()), &[]) {
            Ok(read) if !read.inventory.devices.is_empty() => {}
            _ => {
                std::fs::remove_dir_all(&root).ok();
                continue;
            }
        }
        let base = match check(&root) {
            Err(why) => {
                failures.push(format!("{name} as it is: {why}"));
                None
            }
            Ok(v) => v,
        };
        let mut all = Vec::new();
        files(&root, &root, &mut all);
        let budget = if all.len() > LARGE_TREE_FILES { ROUNDS / 4 } else { ROUNDS };
        // Files grouped by name (`config`, `vendor`, `ibstat.txt`...): a group is picked, then a
        // file of it, so each kind of file gets its share of rounds.
        let mut groups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for f in all {
            groups.entry(f.file_name().unwrap().to_string_lossy().into_owned()).or_default().push(f);
        }
        let groups: Vec<Vec<PathBuf>> = groups.into_values().collect();
        for round in 0..budget {
            let group = &groups[rng.below(groups.len())];
            let file = &group[rng.below(group.len())];
            let path = root.join(file);
            let original = std::fs::read(&path).unwrap();
            let data = match round {
                0 => Vec::new(),
                1 => junk(&mut rng),
                _ => mutate(&mut rng, &original),
            };
            std::fs::write(&path, &data).unwrap();
            match check(&root) {
                Err(why) => failures.push(format!("{name}/{}: {why}\n    content: {}", file.display(), shown(&data))),
                Ok(None) => refused += 1,
                Ok(v) if v != base => changed += 1,
                Ok(_) => {}
            }
            std::fs::write(&path, &original).unwrap();
            rounds += 1;
        }
        fuzzed += 1;
        std::fs::remove_dir_all(&root).ok();
    }
    std::fs::remove_dir_all(&dir).ok();
    eprintln!("bundle_fuzz: {fuzzed} bundles, {rounds} mutated reads ({changed} judged otherwise, {refused} refused)");
    assert!(fuzzed >= 20, "only {fuzzed} fixtures read as bundles: the test fuzzed (almost) nothing");
    // The mutations reach the readers: a good share of them changes what the checklist says.
    assert!(changed * 10 >= rounds, "only {changed} of {rounds} mutated reads were judged otherwise: are the files read?");
    assert!(failures.is_empty(), "{} panics:\n{}", failures.len(), failures.join("\n"));
}
