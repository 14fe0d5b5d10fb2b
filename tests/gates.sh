#!/usr/bin/env bash
# The code gates of the test command: formatting, lints (every unsafe block documented), docs
# without warnings, shellcheck on every script, and the declared minimum Rust version.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gates: cargo fmt" >&2
cargo fmt --all -- --check

echo "== gates: cargo clippy" >&2
cargo clippy --locked --workspace --all-targets -- -D warnings -W clippy::undocumented_unsafe_blocks -W clippy::too_many_lines

echo "== gates: cargo doc" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps --quiet

echo "== gates: unsafe only in crates/fabcheck-verbs" >&2
if grep -rn --include='*.rs' -E '\bunsafe\b' src tests benches | grep -vE '^\S+:\s*//|deny\(unsafe_code\)|undocumented_unsafe_blocks'; then
	echo "gates: unsafe code outside crates/fabcheck-verbs (above)" >&2
	exit 1
fi
for root in src/lib.rs src/main.rs; do
	grep -q '#!\[deny(unsafe_code)\]' "$root" || { echo "gates: $root lacks #![deny(unsafe_code)]" >&2; exit 1; }
done

echo "== gates: shellcheck" >&2
mapfile -t scripts < <(git ls-files | while read -r f; do
	[[ -f $f ]] || continue
	case $f in
	# LBNL NHC 1.4.3, vendored unchanged to run our snippet under the real thing: not ours to lint.
	tests/nhc/nhc | tests/nhc/scripts/* | tests/nhc/helpers/*) ;;
	*.sh | *.nhc) echo "$f" ;;
	*) head -c 64 "$f" 2>/dev/null | head -n 1 | grep -qE '^#!.*\b(ba)?sh\b' && echo "$f" ;;
	esac
done)
shellcheck -x "${scripts[@]}"

echo "== gates: minimum Rust version" >&2
tests/msrv.sh
