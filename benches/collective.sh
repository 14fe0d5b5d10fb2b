#!/usr/bin/env bash
# benches/collective.sh - what the collective controller costs per member: the planner, the
# step model (a simulation of every member's plan), figures, judgment and blame over N members
# (examples/collective_sim.rs, one process). One line per run:
#   members=N rails=R op=OP verdict=V cpu_s=X peak_rss_mb=Y cpu_us_per_member=Z rss_kb_per_member=W
# cpu_s includes the simulation of every step (2(n-1) per ring member for allreduce), which
# grows as n^2 per ring; the controller's own share is the planning and judging around it.
set -euo pipefail

PROG=collective.sh
say() { printf '%s: %s\n' "$PROG" "$*" >&2; }

BUILD=1
SIZES=(1024 4096 10000)
while [ $# -gt 0 ]; do
	case "$1" in
	--no-build) BUILD=0 ;;
	--members)
		shift
		IFS=, read -r -a SIZES <<<"${1:?--members N,N,...}"
		;;
	-h | --help)
		echo "Usage: benches/collective.sh [--members N,N,...] [--no-build]"
		exit 0
		;;
	*)
		say "unknown argument: $1"
		exit 2
		;;
	esac
	shift
done

cd "$(dirname "$0")/.."
if [ "$BUILD" = 1 ]; then
	CARGO_BUILD_JOBS=1 cargo build --release --example collective_sim >&2 || exit 2
fi
BIN=target/release/examples/collective_sim
[ -x "$BIN" ] || {
	say "no $BIN: build it (cargo build --release --example collective_sim)"
	exit 2
}
for n in "${SIZES[@]}"; do
	"$BIN" "$n" 1 allreduce || exit 2
	"$BIN" "$n" 8 allreduce || exit 2
done
"$BIN" 512 1 alltoall || exit 2
"$BIN" 1024 8 incast:4 || exit 2
