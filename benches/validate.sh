#!/usr/bin/env bash
# benches/validate.sh - the cost of `pair --validate` (issue #55): each bandwidth test it checks,
# with and without the check, alternately on the same device, round after round; prints the two
# figures side by side and the ratio validated/plain (min/median/max over the rounds).
#
# A benchmark, not a test: exit 0 whatever the ratios; 2 on bad usage or when a run failed.
# send_bw's receiver checks every message as it completes (64 KiB copied out and compared); write_bw
# and read_bw check the last buffer once, after the timed loop, so their ratio should be about 1.
set -euo pipefail

rounds=3
device=${FABCHECK_RXE_DEV:-rxe0}
iters=1000
fabcheck=target/release/fabcheck
[ -x "$fabcheck" ] || fabcheck=$(command -v fabcheck || true)

usage() {
	echo "Usage: benches/validate.sh [--rounds N] [--device NAME] [--iters N] [--fabcheck PATH]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?}; shift 2 ;;
	--device) device=${2:?}; shift 2 ;;
	--iters) iters=${2:?}; shift 2 ;;
	--fabcheck) fabcheck=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
if [ -z "$fabcheck" ] || [ ! -x "$fabcheck" ]; then
	echo "validate.sh: no fabcheck binary (cargo build --release --bin fabcheck, or --fabcheck PATH)" >&2
	exit 2
fi

# One run's Gb/s of TEST a->b (extra flags after the test).
gbps() {
	local test=$1
	shift
	local doc
	doc=$("$fabcheck" pair localhost localhost --device "$device" --json --tests "$test" --direction ab --iters "$iters" "$@") || {
		# exit 1 (a verdict) still carries the figure; exit 2 could not run.
		[ $? -eq 1 ] || { echo "validate.sh: $test $* could not run" >&2; exit 2; }
	}
	printf '%s' "$doc" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["results"][0]["bw_gbps"])'
}

# min/median/max of the numbers on stdin.
summary() {
	sort -g | awk '{v[NR]=$1} END {printf "%s/%s/%s", v[1], v[int((NR+1)/2)], v[NR]}'
}

for test in send_bw write_bw read_bw; do
	plain_all=() checked_all=() ratio_all=()
	for ((r = 1; r <= rounds; r++)); do
		# The order alternates between rounds.
		if ((r % 2)); then
			plain=$(gbps "$test")
			checked=$(gbps "$test" --validate)
		else
			checked=$(gbps "$test" --validate)
			plain=$(gbps "$test")
		fi
		plain_all+=("$plain") checked_all+=("$checked")
		ratio_all+=("$(awk -v a="$checked" -v b="$plain" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')")
		echo "round=$r test=$test plain_gbps=$plain validated_gbps=$checked"
	done
	p=$(printf '%s\n' "${plain_all[@]}" | summary)
	c=$(printf '%s\n' "${checked_all[@]}" | summary)
	q=$(printf '%s\n' "${ratio_all[@]}" | summary)
	echo "row=$test plain_gbps=$p validated_gbps=$c ratio=$q (min/median/max)"
done
