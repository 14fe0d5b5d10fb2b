#!/usr/bin/env bash
# The declared rust-version holds. With that toolchain installed (rustup), build with it. Without it
# (this machine fetches no other toolchain), check the two halves that can break it: no locked
# dependency declares a newer rust-version, and clippy's incompatible_msrv lint (which reads the
# declared version) finds no newer standard-library API in fabcheck's own code.
set -euo pipefail
cd "$(dirname "$0")/.."
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[[ -n $msrv ]] || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 1; }
if command -v rustup >/dev/null && rustup toolchain list | grep -q "^$msrv"; then
	echo "msrv: building with Rust $msrv" >&2
	exec cargo "+$msrv" build --locked --workspace --all-targets
fi
echo "msrv: Rust $msrv is not installed; checking dependencies' declared versions and std API use instead" >&2
cargo metadata --locked --format-version 1 --filter-platform "$(rustc -vV | sed -n "s/^host: //p")" | python3 -c '
import json, sys
msrv = tuple(int(x) for x in sys.argv[1].split("."))
bad = []
for p in json.load(sys.stdin)["packages"]:
    rv = p.get("rust_version")
    if rv and tuple(int(x) for x in rv.split(".")[:3]) > msrv + (0,) * (3 - len(msrv)):
        bad.append("%s %s needs Rust %s" % (p["name"], p["version"], rv))
if bad:
    print("msrv: locked dependencies newer than the declared rust-version:", *bad, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("msrv: every locked dependency builds on Rust", sys.argv[1], file=sys.stderr)
' "$msrv"
cargo clippy --locked --workspace --all-targets --quiet -- -D clippy::incompatible_msrv
