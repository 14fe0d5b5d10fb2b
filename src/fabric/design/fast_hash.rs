//! The topology parser's hasher (`topology`'s interned node ids and cabled ports): the maps of
//! a 100,000-node parse, where SipHash took a third of the time.

/// A multiply-rotate hasher (FxHash's step) for the parser's maps: SipHash took a third of the
/// parse of a 100,000-node file. Keyed per process (a random start from `RandomState`), so a
/// crafted file cannot aim collisions at a known function; the worst it can do is slow one
/// run, which `--deadline` bounds.
#[derive(Clone)]
pub struct FastHash(u64);

impl Default for FastHash {
    fn default() -> Self {
        use std::hash::BuildHasher;
        FastHash(std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1)
    }
}

impl std::hash::BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.0)
    }
}

pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(tail) ^ ((rest.len() as u64) << 59));
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Fold the high bits down: hashbrown takes its bucket from the low bits and its tag
        // from the top seven.
        self.0 ^ (self.0 >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn equal_keys_hash_equal_and_lengths_are_told_apart() {
        let h = FastHash::default();
        assert_eq!(h.hash_one("leaf1"), h.hash_one("leaf1"));
        assert_ne!(h.hash_one([0u8; 3].as_slice()), h.hash_one([0u8; 4].as_slice()), "the tail's length is mixed in");
        let map: std::collections::HashMap<Box<str>, u32, FastHash> = [("a".into(), 1), ("b".into(), 2)].into_iter().collect();
        assert_eq!((map["a"], map["b"]), (1, 2));
    }
}
