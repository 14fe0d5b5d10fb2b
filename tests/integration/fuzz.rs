//! Deterministic mutation fuzzing of everything that parses input from outside: the control
//! protocol (what arrives from the wire), the line reader, profile files and endpoint specs.
//! Seeds are the corpus under tests/corpus/; each case is mutated many times (bit flips,
//! truncation, splices, random bytes, repeats). The parsers must return errors, never panic,
//! and anything the decoder accepts must survive a round trip.

use fabcheck::control::protocol::{self, Reply, Request};
use fabcheck::control::{endpoint, lines};
use fabcheck::diagnose::Expectations;
use std::path::Path;

/// xorshift64*: a fixed seed makes every run the same, so a failure reproduces. Shared with
/// `input_fuzz`.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: [&[u8]; 14] =
    [b"\"", b"{", b"}", b"[", b"]", b":", b",", b"null", b"-1", b"18446744073709551616", b"1e309", b"\\u0000", b"\n", b"\"v\":2"];

pub(super) fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => data.truncate(rng.below(len)),
            2 => {
                let i = rng.below(len + 1);
                let token = INTERESTING[rng.below(INTERESTING.len())];
                data.splice(i..i, token.iter().copied());
            }
            3 if len > 0 => {
                let (a, b) = (rng.below(len), rng.below(len));
                let (a, b) = (a.min(b), a.max(b));
                let chunk = data[a..b].to_vec();
                let at = rng.below(data.len() + 1);
                data.splice(at..at, chunk);
            }
            4 => {
                let i = rng.below(len + 1);
                data.insert(i, rng.next() as u8);
            }
            5 if len > 1 => {
                let i = rng.below(len - 1);
                data.remove(i);
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

pub(super) fn corpus(dir: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(dir);
    let mut seeds = Vec::new();
    // In name order: read_dir's order is the filesystem's, and the rounds must be the same everywhere.
    let mut paths: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read(path).unwrap();
        if dir == "protocol" || dir == "endpoint" {
            seeds.extend(text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec));
        } else {
            seeds.push(text);
        }
    }
    assert!(!seeds.is_empty(), "empty corpus {}", root.display());
    seeds
}

const ROUNDS: usize = 3000;

#[test]
fn protocol_decoder_never_panics_and_round_trips() {
    let seeds = corpus("protocol");
    // Every seed is a valid message of one direction.
    for s in &seeds {
        let text = std::str::from_utf8(s).unwrap();
        assert!(protocol::decode::<Request>(text).is_ok() || protocol::decode::<Reply>(text).is_ok(), "seed rejected: {text}");
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        let text = String::from_utf8_lossy(&data);
        if let Ok(req) = protocol::decode::<Request>(&text) {
            assert_eq!(protocol::decode::<Request>(&protocol::encode(&req)).unwrap(), req);
            if let Request::Prepare { spec, .. } = &req {
                let _ = spec.validate();
            }
        }
        if let Ok(reply) = protocol::decode::<Reply>(&text) {
            assert_eq!(protocol::decode::<Reply>(&protocol::encode(&reply)).unwrap(), reply);
        }
    }
}

#[test]
fn line_reader_never_panics() {
    let seeds = corpus("protocol");
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..ROUNDS {
        let mut stream = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let pick = rng.below(seeds.len());
            stream.extend(mutate(&mut rng, &seeds[pick]));
            if rng.below(2) == 0 {
                stream.push(b'\n');
            }
        }
        let mut reader = std::io::Cursor::new(stream);
        for _ in 0..10 {
            match lines::read_line(&mut reader, 256) {
                Ok(Some(line)) => assert!(line.len() <= 256),
                Ok(None) | Err(_) => break,
            }
        }
    }
}

#[test]
fn profile_parser_never_panics() {
    let seeds = corpus("profile");
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    for _ in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        let mut e = Expectations::default();
        if e.apply_profile("fuzz", &String::from_utf8_lossy(&data)).is_ok() {
            if let Some(rate) = e.rate {
                assert!(rate.is_finite() && rate > 0.0);
            }
            if let Some(mtu) = e.mtu {
                assert!([256, 512, 1024, 2048, 4096].contains(&mtu));
            }
        }
    }
}

#[test]
fn endpoint_parser_never_accepts_shell_or_option_characters() {
    let seeds = corpus("endpoint");
    let mut rng = Rng(0x0bad_c0de_0bad_c0de);
    for _ in 0..ROUNDS {
        let pick = rng.below(seeds.len());
        let data = mutate(&mut rng, &seeds[pick]);
        let text = String::from_utf8_lossy(&data);
        if let Ok(spec) = endpoint::parse(&text) {
            let shown = spec.to_string();
            for bad in [';', '|', '&', '$', '`', '(', ')', '<', '>', ' ', '\'', '"', '\\', '\n', '*', '?', '!'] {
                assert!(!shown.contains(bad), "{text:?} parsed to {shown:?}");
            }
            if let endpoint::HostSpec::Ssh { host, user } = &spec.host {
                assert!(!host.starts_with('-') && !user.as_deref().unwrap_or("").starts_with('-'), "{text:?}");
            }
        }
    }
}
