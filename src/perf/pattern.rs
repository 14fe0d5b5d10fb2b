//! `--validate`: the seeded pattern every message of a test carries, and the receiver's check
//! of the bytes that arrived (perftest's `--data_validation`, src/host_validation.c: a pattern
//! known to both sides, compared by the receiving side).
//!
//! The pattern is the same for every message of a test (a bandwidth loop posts pre-built work
//! requests from one source buffer; changing it in flight would race the adapter's reads): a
//! splitmix64 stream from the spec's seed. Who checks, and when:
//! - `send_bw`: the passive receiver, each message it reaps at its receive completion, before
//!   the receive is posted again (outside any timed region: the sender measures; the cost shows
//!   as the rate the receiver keeps up with, benches/validate.sh). Every receive lands in one
//!   buffer, so a receiver slower than its sender checks the messages it reaches before the
//!   stop; the result counts them;
//! - `write_bw`: the passive side, the buffer the last write left, once stopped;
//! - `read_bw`: the active reader, the buffer the last read left, after its timed loop.
//!
//! The pattern and the expected copy are built before the loop; a check copies the message out
//! (volatile byte reads) into a buffer sized before and compares: no allocation per message.
//! A test-only fault knob, `FABCHECK_TEST_CORRUPT=OFFSET:MASK` in the agent's environment
//! (unset in production: nothing else reads it), flips MASK's bits at OFFSET of every message
//! checked, so the tests can prove a mismatch is found and named.

use crate::model::{DataCheck, DataMismatch};
use fabcheck_verbs::MemoryRegion;

/// The environment variable of the test-only fault knob.
pub const FAULT_ENV: &str = "FABCHECK_TEST_CORRUPT";

/// `len` bytes of the pattern of `seed` (splitmix64, little-endian words).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The first byte that differs (offset, expected, got) and how many differ.
pub fn compare(expected: &[u8], got: &[u8]) -> Option<(usize, u8, u8, u64)> {
    let first = expected.iter().zip(got).position(|(e, g)| e != g)?;
    let bytes = expected[first..].iter().zip(&got[first..]).filter(|(e, g)| e != g).count() as u64;
    Some((first, expected[first], got[first], bytes))
}

/// The fault knob's value: `OFFSET:MASK` (MASK decimal or `0x..`, not 0).
pub fn parse_fault(text: &str) -> Option<(usize, u8)> {
    let (offset, mask) = text.trim().split_once(':')?;
    let mask = match mask.trim().strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok()?,
        None => mask.trim().parse().ok()?,
    };
    Some((offset.trim().parse().ok()?, mask)).filter(|(_, m)| *m != 0)
}

/// A receiver's check of one test's messages.
pub struct Checker {
    seed: u64,
    expected: Vec<u8>,
    scratch: Vec<u8>,
    fault: Option<(usize, u8)>,
    checked: u64,
    bad: u64,
    first: Option<DataMismatch>,
}

impl Checker {
    /// For messages of `size` bytes of the pattern of `seed`; `fault`: the test-only knob.
    pub fn new(seed: u64, size: usize, fault: Option<(usize, u8)>) -> Checker {
        Checker { seed, expected: pattern(seed, size), scratch: vec![0; size], fault, checked: 0, bad: 0, first: None }
    }

    /// With the fault knob as this process's environment sets it.
    pub fn from_env(seed: u64, size: usize) -> Checker {
        let fault = std::env::var(FAULT_ENV).ok().as_deref().and_then(parse_fault);
        Checker::new(seed, size, fault)
    }

    /// The pattern, for the sender's buffer.
    pub fn pattern(&self) -> &[u8] {
        &self.expected
    }

    /// Checks `got` (a message's `size` bytes) as message `message` (`None`: a buffer's last
    /// contents).
    pub fn check_bytes(&mut self, message: Option<u64>, got: &[u8]) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.copy_from_slice(got);
        self.judge(message, buf);
    }

    /// Copies `size` bytes at `offset` of `mr` out and checks them.
    pub fn check_region(&mut self, mr: &MemoryRegion, offset: usize, message: Option<u64>) {
        let mut buf = std::mem::take(&mut self.scratch);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = mr.read_volatile(offset + i);
        }
        self.judge(message, buf);
    }

    /// Compares the copied-out message (the fault knob applied first) and keeps the buffer.
    fn judge(&mut self, message: Option<u64>, mut buf: Vec<u8>) {
        if let Some((at, mask)) = self.fault.filter(|(o, _)| *o < buf.len()) {
            buf[at] ^= mask;
        }
        self.checked += 1;
        if let Some((offset, expected, got, bytes)) = compare(&self.expected, &buf) {
            self.bad += 1;
            self.first.get_or_insert(DataMismatch { message, offset: offset as u64, expected, got, bytes });
        }
        self.scratch = buf;
    }

    /// Writes the pattern into `mr` at `offset` (the sender's source, a lender's buffer).
    pub fn fill(&self, mr: &MemoryRegion, offset: usize) {
        for (i, b) in self.expected.iter().enumerate() {
            mr.write_volatile(offset + i, *b);
        }
    }

    pub fn result(&self) -> DataCheck {
        DataCheck { seed: self.seed, checked: self.checked, bad: self.bad, first: self.first }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_the_seeds_and_differs_between_seeds() {
        assert_eq!(pattern(7, 100), pattern(7, 100));
        assert_ne!(pattern(7, 100), pattern(8, 100));
        assert_eq!(pattern(7, 3), pattern(7, 100)[..3]);
        // Not a constant fill: a stuck byte lane or a shifted copy shows.
        let p = pattern(1, 4096);
        assert!(p.windows(2).filter(|w| w[0] == w[1]).count() < 64);
    }

    #[test]
    fn a_flipped_bit_is_named_by_message_offset_and_bits() {
        let mut c = Checker::new(42, 64, None);
        let good = c.pattern().to_vec();
        c.check_bytes(Some(0), &good);
        let mut bad = good.clone();
        bad[17] ^= 0b0010_0000;
        bad[40] ^= 1;
        c.check_bytes(Some(1), &bad);
        c.check_bytes(Some(2), &bad);
        let r = c.result();
        assert_eq!((r.seed, r.checked, r.bad), (42, 3, 2));
        let m = r.first.unwrap();
        assert_eq!((m.message, m.offset, m.bits(), m.bytes), (Some(1), 17, 0b0010_0000, 2));
        assert_eq!(m.got, good[17] ^ 0b0010_0000);
    }

    #[test]
    fn the_fault_knob_corrupts_every_checked_message_and_is_off_unless_set() {
        assert_eq!(parse_fault("100:0x10"), Some((100, 0x10)));
        assert_eq!(parse_fault(" 3 : 255 "), Some((3, 255)));
        assert_eq!(parse_fault("3:0"), None, "a mask of 0 flips nothing");
        assert_eq!(parse_fault("x:1"), None);
        let mut c = Checker::new(9, 32, parse_fault("5:0x80"));
        let good = c.pattern().to_vec();
        c.check_bytes(Some(0), &good);
        let m = c.result().first.unwrap();
        assert_eq!((m.message, m.offset, m.bits()), (Some(0), 5, 0x80));
        // An offset beyond the message flips nothing.
        let mut c = Checker::new(9, 32, Some((32, 1)));
        let good = c.pattern().to_vec();
        c.check_bytes(None, &good);
        assert_eq!(c.result().bad, 0);
    }
}
