//! fabcheck's own guarantees that are compile errors, each pinned to the error the compiler
//! gives (`ui/*.stderr`); the verbs crate has its own (`crates/fabcheck-verbs/tests/ui/`).
//! Regenerate after a toolchain change with `TRYBUILD=overwrite cargo test --test compile_fail`
//! and review the diff.

#[test]
fn misuse_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
