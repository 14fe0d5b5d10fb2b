//! The guarantees of the safe verbs layer that are compile errors, each pinned to the error
//! the compiler gives (`ui/*.stderr`): an unpinned `compile_fail` doctest passes for any
//! error, a typo included. The expected output belongs to the toolchain that wrote it; after a
//! toolchain change regenerate it with
//! `TRYBUILD=overwrite cargo test -p fabcheck-verbs --test compile_fail` and review the diff
//! (see `ui/README.md`).

#[test]
fn misuse_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
