//! The serve token compared without telling a guesser anything by the time it takes: neither
//! how much of it matched nor how long it is (0.3 returned at once on a length mismatch).

/// Whether `offered` is `want`, in a time that depends on `want`'s length only (and on whether
/// `offered` is shorter, which its sender knows).
pub fn same(offered: &[u8], want: &[u8]) -> bool {
    let mut diff = u8::from(offered.len() != want.len());
    for (i, w) in want.iter().enumerate() {
        diff |= w ^ offered.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn equal_only_when_equal() {
        assert!(same(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdeX", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcde", b"0123456789abcdef"), "a prefix");
        assert!(!same(b"0123456789abcdef0", b"0123456789abcdef"), "longer");
        assert!(!same(b"0123456789abcde\0", b"0123456789abcde"), "a NUL past the end is not a match");
        assert!(!same(b"", b"x"));
    }
}
