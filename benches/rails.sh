#!/usr/bin/env bash
# benches/rails.sh - a node's rails one at a time and all at once: what running every rail
# together costs (issue #29). For write_bw and read_bw it measures each rail alone, one after the
# other, then every rail at the same time, and prints per test
#   test=write_bw rails=N single_sum_gbps=X aggregate_gbps=Y ratio=Y/X
# plus the spread of the concurrent rails (min, median, max over rails and rounds, and the lowest
# rail over its siblings' median: what `pair --rail-threshold` is set from). On real hardware the
# aggregate should be within 3% of the single-rail sum unless a shared bound (a PCIe switch uplink)
# is named; on rxe under emulation every figure is CPU-bound: reported, never judged.
set -euo pipefail

PROG=rails.sh

usage() {
	cat <<'EOF'
Usage: benches/rails.sh [--tool fabcheck|perftest] [--devices rxe0,rxe1,...] [--tests write_bw,read_bw]
                        [--size BYTES] [--iters N] [--rounds N] [--qdisc RAIL:SPEC]
                        [--peer ENDPOINT] [--server ADDR] [--fabcheck PATH]

On one node (in the Soft-RoCE guest: ./soft-roce-setup.sh --vm --rails 4 -- benches/rails.sh).
  --tool       fabcheck (default): `pair localhost PEER --rails DEV` for each rail alone, then
               `--rails DEV0,DEV1,...` (the document's per-rail results and its aggregate);
               perftest: ib_write_bw / ib_read_bw, server and client on each rail's device over
               127.0.0.1, one pair of processes per rail, all started together (-n ITERS each).
  --devices    the rails, in order (default: $FABCHECK_VM_RAIL_DEVS, else every rxe* device)
  --tests      default write_bw,read_bw          --size    default 65536
  --iters      per rail and run (default 300)    --rounds  concurrent runs (default 3)
  --qdisc      after the clean rounds, `tc qdisc add dev NETDEV root SPEC` on rail RAIL's netdev and
               as many rounds again; SPEC `tbf-quarter` is a tbf at a quarter of that rail's clean
               median. Prints how far the rail fell below its siblings' median. Needs root.
  --peer       fabcheck only: the other end (default localhost; e.g. root@198.18.0.2)
  --server     perftest only: the servers already run on ADDR (another guest), one per rail and test,
               rail k's ib_write_bw on port 18700+k and ib_read_bw on 18710+k, each with this
               --size and --iters, started again after every run (see tests/vm/README.md)
  --fabcheck   the binary (default target/release/fabcheck, else target/debug/fabcheck)
Exit 0 whatever the figures, 2 when a tool could not run.
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 2; }

TOOL=fabcheck DEVICES="" TESTS=write_bw,read_bw SIZE=65536 ITERS=300 ROUNDS=3 QDISC="" PEER=localhost FABCHECK="" SERVER=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--tool) TOOL=${2:?}; shift 2 ;;
	--devices) DEVICES=${2:?}; shift 2 ;;
	--tests) TESTS=${2:?}; shift 2 ;;
	--size) SIZE=${2:?}; shift 2 ;;
	--iters) ITERS=${2:?}; shift 2 ;;
	--rounds) ROUNDS=${2:?}; shift 2 ;;
	--qdisc) QDISC=${2:?}; shift 2 ;;
	--peer) PEER=${2:?}; shift 2 ;;
	--server) SERVER=${2:?}; shift 2 ;;
	--fabcheck) FABCHECK=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
case $TOOL in fabcheck | perftest) ;; *) die "--tool: fabcheck or perftest" ;; esac
[[ $SIZE =~ ^[0-9]+$ && $SIZE -gt 0 ]] || die "--size must be a positive integer"
[[ $ITERS =~ ^[0-9]+$ && $ITERS -ge 16 ]] || die "--iters must be a number >= 16"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -gt 0 ]] || die "--rounds must be a positive integer"
IFS=, read -ra TEST_LIST <<<"$TESTS"
for t in "${TEST_LIST[@]}"; do
	case $t in write_bw | read_bw) ;; *) die "--tests: write_bw and/or read_bw, not '$t'" ;; esac
done
if [[ -z $DEVICES ]]; then
	if [[ -n ${FABCHECK_VM_RAIL_DEVS:-} ]]; then
		DEVICES=${FABCHECK_VM_RAIL_DEVS// /,}
	else
		DEVICES=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 -name 'rxe*' -printf '%f\n' 2>/dev/null | sort -V | paste -sd, -)
	fi
fi
IFS=, read -ra DEVS <<<"$DEVICES"
((${#DEVS[@]} >= 1)) || die "no rails: pass --devices or boot the guest with --rails N"
for d in "${DEVS[@]}"; do
	[[ -e /sys/class/infiniband/${d%%:*} ]] || die "no RDMA device $d here"
done
N=${#DEVS[@]}
if [[ $TOOL == fabcheck && -z $FABCHECK ]]; then
	for FABCHECK in target/release/fabcheck target/debug/fabcheck; do [[ -x $FABCHECK ]] && break; done
fi
[[ $TOOL == perftest || -x $FABCHECK ]] || die "no fabcheck binary (cargo build --release --bin fabcheck, or --fabcheck PATH)"

SCRATCH=$(mktemp -d /tmp/rails-bench.XXXXXX)
BG_PIDS=()
APPLIED_DEV=""
cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -z $APPLIED_DEV ]] || tc qdisc del dev "$APPLIED_DEV" root 2>/dev/null || true
	rm -rf "$SCRATCH"
}
trap cleanup EXIT

# netdev_of DEV: the netdev under an rxe (or RoCE) device's port 1.
netdev_of() {
	local n
	n=$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/0" 2>/dev/null || true)
	[[ -n $n ]] || n=$(rdma link show "$1/1" 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1)}')
	echo "$n"
}

retries_of() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/completer_retry_err" 2>/dev/null || echo 0; }

# perftest_rails TEST OUT RAIL...: one perftest pair per rail, all at once; writes "RAIL GBPS" lines.
perftest_rails() {
	local test=$1 out=$2 r dev port pids=() crc base=18700
	shift 2
	[[ $test == write_bw ]] || base=18710
	: >"$out"
	for r in "$@"; do
		[[ -z $SERVER ]] || break
		dev=${DEVS[$r]} port=$((base + r))
		timeout 600 "ib_$test" -d "${dev%%:*}" -x 1 -F --report_gbits -s "$SIZE" -n "$ITERS" -p "$port" \
			>"$SCRATCH/srv.$r" 2>&1 &
		BG_PIDS+=($!)
	done
	[[ -n $SERVER ]] || sleep 1
	for r in "$@"; do
		dev=${DEVS[$r]} port=$((base + r))
		(
			# up to a minute: a loaded emulated guest takes seconds to start a server again
			for _ in $(seq 60); do
				timeout 600 "ib_$test" -d "${dev%%:*}" -x 1 -F --report_gbits -s "$SIZE" -n "$ITERS" \
					-p "$port" "${SERVER:-127.0.0.1}" >"$SCRATCH/cli.$r" 2>&1 && exit 0
				echo "(exit status $?)" >>"$SCRATCH/cli.$r"
				# not listening yet (guest 2 starts its servers again after each run): dial again
				[[ $(wc -l <"$SCRATCH/cli.$r") -le 1 ]] || grep -q "Couldn't connect\|Unable to open file descriptor" "$SCRATCH/cli.$r" || exit 1
				sleep 1
			done
			exit 1
		) &
		pids+=($!)
	done
	crc=0
	for r in "${pids[@]}"; do wait "$r" || crc=1; done
	wait "${BG_PIDS[@]}" 2>/dev/null || true
	BG_PIDS=()
	if [[ $crc -ne 0 || ${RAILS_BENCH_RAW:-0} == 1 ]]; then
		for r in "$@"; do say "rail $r client output:"; grep -v '^ *$' "$SCRATCH/cli.$r" | tail -n 8 >&2; done
	fi
	((crc == 0)) || { say "ib_$test failed on one rail at least (its output above)"; return 1; }
	for r in "$@"; do
		# the result row: "#bytes #iterations BW-peak BW-average MsgRate"
		awk -v r="$r" -v s="$SIZE" '$1 == s && NF >= 5 { print r, $4; found = 1 } END { if (!found) exit 1 }' "$SCRATCH/cli.$r" >>"$out" ||
			{ say "no result row in ib_$test's output on rail $r: $(tail -n 3 "$SCRATCH/cli.$r" | tr '\n' ' ')"; return 1; }
	done
	! grep -q "[[:space:]]inf$" "$out" || { say "ib_$test could not calibrate its clock (inf)"; return 1; }
}

# fabcheck_rails TEST OUT RAIL...: `pair --rails DEV,...` over those rails; writes "RAIL GBPS"
# lines (RAIL the index in DEVS) and "aggregate GBPS" when more than one rail ran.
fabcheck_rails() {
	local test=$1 out=$2 list="" r rc=0
	shift 2
	for r in "$@"; do list+="${list:+,}${DEVS[$r]}"; done
	"$FABCHECK" pair localhost "$PEER" --rails "$list" --tests "$test" --direction ab --size "$SIZE" \
		--iters "$ITERS" --json >"$SCRATCH/pair.json" 2>"$SCRATCH/pair.err" || rc=$?
	((rc <= 1)) || { say "fabcheck pair --rails $list: exit $rc: $(tail -n 3 "$SCRATCH/pair.err" | tr '\n' ' ')"; return 1; }
	python3 - "$SCRATCH/pair.json" "$test" "$@" >"$out" <<'PY' || return 1
import json, sys
doc, test, rails = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3:]
if len(doc.get("rails") or []) != len(rails):
    sys.exit(f"rails.sh: the document has {len(doc.get('rails') or [])} rails, want {len(rails)}")
for index, rail in zip(rails, doc["rails"]):
    got = [r for r in rail["results"] if r["test"] == test and r["direction"] == "a->b" and not r.get("error")]
    if not got:
        sys.exit(f"rails.sh: rail {rail['rail']} has no {test} a->b result: {rail['results']}")
    print(index, got[0]["bw_gbps"])
agg = [a for a in doc.get("aggregate") or [] if a["test"] == test and a["direction"] == "a->b"]
if agg:
    print("aggregate", agg[0]["bw_gbps"])
PY
}

run_rails() { if [[ $TOOL == perftest ]]; then perftest_rails "$@"; else fabcheck_rails "$@"; fi; }

# summary FILE...: over "RAIL GBPS" lines: min median max, and the lowest rail over its siblings'
# median per round (each file is one round).
ALL_RAILS=()
for ((k = 0; k < N; k++)); do ALL_RAILS+=("$k"); done

say "$TOOL, rails ${DEVS[*]}, ${TEST_LIST[*]}, $SIZE B, $ITERS iterations per rail and run, $ROUNDS concurrent rounds${QDISC:+, then with qdisc $QDISC}"
for test in "${TEST_LIST[@]}"; do
	single_sum=0
	for r in "${ALL_RAILS[@]}"; do
		run_rails "$test" "$SCRATCH/single.$test.$r" "$r" || die "$test on rail $r alone failed"
		g=$(awk '$1 != "aggregate" { print $2 }' "$SCRATCH/single.$test.$r")
		say "$test rail $r (${DEVS[$r]}) alone: $g Gb/s"
		single_sum=$(awk -v a="$single_sum" -v b="$g" 'BEGIN { printf "%.4f", a + b }')
	done
	phases=(clean)
	[[ -z $QDISC ]] || phases+=(fault)
	for phase in "${phases[@]}"; do
		if [[ $phase == fault ]]; then
			frail=${QDISC%%:*} spec=${QDISC#*:}
			[[ $frail =~ ^[0-9]+$ && $frail -lt $N ]] || die "--qdisc RAIL:SPEC: no rail $frail"
			APPLIED_DEV=$(netdev_of "${DEVS[$frail]%%:*}")
			[[ -n $APPLIED_DEV ]] || die "no netdev under ${DEVS[$frail]}"
			if [[ $spec == tbf-quarter ]]; then
				med=$(awk -v r="$frail" '$1 == r { print $2 }' "$SCRATCH"/clean."$test".* | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
				spec="tbf rate $(awk -v g="$med" 'BEGIN { printf "%d", g * 1000000 / 4 }')kbit burst 64kb latency 500ms"
			fi
			# shellcheck disable=SC2086 # SPEC is tc's words
			tc qdisc add dev "$APPLIED_DEV" root $spec || die "tc qdisc add dev $APPLIED_DEV root $spec failed"
			say "rail $frail ($APPLIED_DEV): tc qdisc $spec"
		fi
		for ((round = 1; round <= ROUNDS; round++)); do
			before=()
			for r in "${ALL_RAILS[@]}"; do before+=("$(retries_of "${DEVS[$r]%%:*}")"); done
			run_rails "$test" "$SCRATCH/$phase.$test.$round" "${ALL_RAILS[@]}" || die "$test on all rails at once failed"
			line="" retries=""
			for r in "${ALL_RAILS[@]}"; do
				line+=" rail$r=$(awk -v r="$r" '$1 == r { print $2 }' "$SCRATCH/$phase.$test.$round")"
				retries+=" $(($(retries_of "${DEVS[$r]%%:*}") - before[r]))"
			done
			say "$test $phase round $round:$line (requester retries per rail:$retries)"
		done
		python3 - "$test" "$phase" "${frail:-}" "$SCRATCH/$phase.$test".* <<'PY'
import statistics, sys
test, phase, frail, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
values, worst, faulty = [], [], []
for f in files:
    rows = dict(line.split() for line in open(f))
    rails = {k: float(v) for k, v in rows.items() if k != "aggregate"}
    values += rails.values()
    for k, v in rails.items():
        if len(rails) < 2:
            continue  # one rail has no siblings
        siblings = statistics.median([w for j, w in rails.items() if j != k])
        if phase == "fault" and k == frail:
            faulty.append(v / siblings if siblings else 0.0)
        elif phase == "clean":
            worst.append(v / siblings if siblings else 0.0)
line = f"spread test={test} phase={phase} rounds={len(files)} rail_min={min(values):.4f} rail_median={statistics.median(values):.4f} rail_max={max(values):.4f}"
if worst:
    line += f" lowest_over_sibling_median={min(worst):.3f} highest_over_sibling_median={max(worst):.3f}"
if faulty:
    line += f" faulty_rail={frail} faulty_over_sibling_median=" + ",".join(f"{x:.3f}" for x in faulty)
print(line)
PY
		if [[ $phase == fault ]]; then
			tc qdisc del dev "$APPLIED_DEV" root 2>/dev/null || true
			APPLIED_DEV=""
		fi
	done
	# The aggregate of the clean rounds: fabcheck's own (all bytes over the union of the windows),
	# or with perftest the sum of the rails' figures (each timed over its own -D window).
	agg=$(cat "$SCRATCH/clean.$test".* | awk '$1 == "aggregate" { a += $2; n++ } $1 != "aggregate" { s += $2 } END { if (n) printf "%.4f", a / n; else printf "%.4f", s / '"$ROUNDS"' }')
	ratio=$(awk -v a="$agg" -v s="$single_sum" 'BEGIN { if (s > 0) printf "%.3f", a / s; else print "nan" }')
	echo "test=$test rails=$N single_sum_gbps=$single_sum aggregate_gbps=$agg ratio=$ratio"
done
