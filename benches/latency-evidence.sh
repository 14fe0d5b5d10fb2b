#!/usr/bin/env bash
# benches/latency-evidence.sh - where a latency round trip goes, fabcheck next to perftest, on one
# node: the cost of a clock read, what every thread and CPU does while the loops run, system calls
# and user-space instructions per iteration on each side. Counts are differential (two iteration
# counts, the difference divided by the difference in iterations), so setup and teardown cancel.
#
# In the Soft-RoCE guest: ./soft-roce-setup.sh --vm --timeout 3000 -- benches/latency-evidence.sh
set -euo pipefail

PROG=latency-evidence.sh

usage() {
	cat <<'EOF'
Usage: benches/latency-evidence.sh [--tests LIST] [--iters N1,N2] [--census-iters N] [--cpu A,B]
                                   [--fabcheck PATH] [--no-clock] [--no-census] [--no-strace]
                                   [--no-callgrind]

  --tests LIST       send_lat,write_lat,read_lat (default all three), 2 B messages
  --iters N1,N2      iterations for the differential counts (default 1000,3000)
  --census-iters N   iterations of the run the thread census watches (default 30000)
  --cpu A,B          passed to `fabcheck pair --cpu` (default: fabcheck's own choice)

fabcheck's two ends run as `fabcheck serve` (endpoint A active, B passive) so each side's system
calls and instructions are counted apart; perftest's client (active) and server likewise.
Exit 0, or 2 when a tool could not run.
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 2; }

DEVICE=${FABCHECK_RXE_DEV:-rxe0}
TESTS=send_lat,write_lat,read_lat
ITERS=1000,3000
CENSUS_ITERS=30000
CPU=
FABCHECK=
DO_CLOCK=1 DO_CENSUS=1 DO_STRACE=1 DO_CALLGRIND=1
while [[ $# -gt 0 ]]; do
	case $1 in
	--tests) TESTS=${2:?}; shift 2 ;;
	--iters) ITERS=${2:?}; shift 2 ;;
	--census-iters) CENSUS_ITERS=${2:?}; shift 2 ;;
	--cpu) CPU=${2:?}; shift 2 ;;
	--fabcheck) FABCHECK=${2:?}; shift 2 ;;
	--no-clock) DO_CLOCK=0; shift ;;
	--no-census) DO_CENSUS=0; shift ;;
	--no-strace) DO_STRACE=0; shift ;;
	--no-callgrind) DO_CALLGRIND=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
IFS=, read -r N1 N2 <<<"$ITERS"
{ [[ $N1 =~ ^[0-9]+$ && $N2 =~ ^[0-9]+$ ]] && ((N1 >= 16 && N2 > N1)); } || die "--iters N1,N2 with 16 <= N1 < N2"
[[ $CENSUS_ITERS =~ ^[0-9]+$ ]] || die "--census-iters must be a number"
if [[ -z $FABCHECK ]]; then
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	FABCHECK=$here/target/release/fabcheck
	[[ -x $FABCHECK ]] || FABCHECK=$(command -v fabcheck) || die "no fabcheck: cargo build --release --bin fabcheck"
fi
command -v python3 >/dev/null || die "python3 is needed"
CPU_ARGS=()
[[ -z $CPU ]] || CPU_ARGS=(--cpu "$CPU")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fabcheck-latev.XXXXXX")
PIDS=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

PORT=20900
next_port() { PORT=$((PORT + 1)); }

# The GID index fabcheck picks (perftest needs it named).
"$FABCHECK" pair localhost localhost --device "$DEVICE" --tests send_lat --iters 10 --json >"$WORK/probe.json" 2>"$WORK/probe.err" ||
	die "fabcheck could not run on $DEVICE: $(tail -n 2 "$WORK/probe.err")"
GID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["a"].get("gid_index") or 0)' "$WORK/probe.json")
say "device $DEVICE, GID $GID, $(nproc) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# fabcheck's uncounted warm-up runs the same loop: a tenth of the iterations, at most 1000.
fab_iters() { local w=$(($1 / 10)); ((w > 1000)) && w=1000; echo $(($1 + w)); }

# fab_pair TEST N WRAP_A WRAP_B OUT: endpoint A (active) and B (passive) as `fabcheck serve`, each
# under its wrapper (a word list in a file, or nothing), then `pair tcp://A tcp://B`.
fab_pair() {
	local test=$1 n=$2 wrap_a=$3 wrap_b=$4 out=$5 pa pb pid_a pid_b rc=0 w
	next_port; pa=$PORT; next_port; pb=$PORT
	local -a wa=() wb=()
	[[ -z $wrap_a ]] || mapfile -t wa <"$wrap_a"
	[[ -z $wrap_b ]] || mapfile -t wb <"$wrap_b"
	"${wa[@]}" "$FABCHECK" serve --listen "127.0.0.1:$pa" --max-sessions 1 >"$out.serve-a" 2>&1 &
	pid_a=$!
	"${wb[@]}" "$FABCHECK" serve --listen "127.0.0.1:$pb" --max-sessions 1 >"$out.serve-b" 2>&1 &
	pid_b=$!
	PIDS+=("$pid_a" "$pid_b")
	for w in $(seq 1 300); do
		grep -q listening "$out.serve-a" && grep -q listening "$out.serve-b" && break
		sleep 0.5
		((w < 300)) || { say "fabcheck serve did not start"; return 1; }
	done
	"$FABCHECK" pair "tcp://127.0.0.1:$pa" "tcp://127.0.0.1:$pb" --device "$DEVICE" --tests "$test" --size 2 --iters "$n" \
		"${CPU_ARGS[@]}" --stall-timeout-ms 600000 --timeout 3000 --json >"$out" 2>"$out.err" || rc=$?
	wait "$pid_a" "$pid_b" || true
	((rc <= 1)) || { say "fabcheck pair $test failed (exit $rc): $(tail -n 2 "$out.err")"; return 1; }
}

# pt_pair TEST N WRAP_CLIENT WRAP_SERVER OUT: perftest's server and client, each under its wrapper.
pt_pair() {
	local test=$1 n=$2 wrap_c=$3 wrap_s=$4 out=$5 tool=ib_$1 pid rc=0 try
	next_port
	local -a wc=() ws=()
	[[ -z $wrap_c ]] || mapfile -t wc <"$wrap_c"
	[[ -z $wrap_s ]] || mapfile -t ws <"$wrap_s"
	"${ws[@]}" "$tool" -d "$DEVICE" -x "$GID" -s 2 -n "$n" -F -p "$PORT" >"$out.server" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for try in $(seq 1 60); do
		sleep 1
		rc=0
		"${wc[@]}" "$tool" -d "$DEVICE" -x "$GID" -s 2 -n "$n" -F -p "$PORT" 127.0.0.1 >"$out" 2>&1 || rc=$?
		((rc == 0)) && break
		grep -q "Couldn't connect\|Unable to open file descriptor" "$out" || break
		((try < 60)) || break
	done
	wait "$pid" || true
	((rc == 0)) || { say "$tool failed (exit $rc): $(tail -n 3 "$out")"; return 1; }
}

wrapper() { # FILE WORDS...: a wrapper command, one word a line
	local f=$1; shift
	printf '%s\n' "$@" >"$f"
	echo "$f"
}

IFS=, read -r -a TEST_LIST <<<"$TESTS"

# ---------------------------------------------------------------- 1. the clock
if ((DO_CLOCK)) && command -v cc >/dev/null; then
	cat >"$WORK/clock.c" <<'C'
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(void) {
	struct timespec t; unsigned long long x = 0; int i, n = 20000, m = 2000000;
	double a = now();
	for (i = 0; i < n; i++) clock_gettime(CLOCK_MONOTONIC, &t);
	double b = now();
	for (i = 0; i < m; i++) x += __rdtsc();
	double c = now();
	printf("clock_gettime(CLOCK_MONOTONIC) %.0f ns, rdtsc %.1f ns (%llu)\n", (b - a) / n, (c - b) / m, x & 1);
	return 0;
}
C
	# Compiling under emulation takes minutes: a probe built beforehand (same source) is used.
	probe_bin=$(dirname "$FABCHECK")/clock-probe
	if [[ -x $probe_bin ]] || { probe_bin=$WORK/clock && cc -O2 -o "$probe_bin" "$WORK/clock.c" 2>"$WORK/cc.err"; }; then
		say "clock: $("$probe_bin"), clocksources available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null)"
		say "clock: TSC flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -o 'constant_tsc\|nonstop_tsc\|tsc_reliable\|hypervisor\|\btsc\b' | tr '\n' ' ')"
	else
		say "clock: could not compile the probe: $(head -n 2 "$WORK/cc.err")"
	fi
fi

# ---------------------------------------------------------------- 2. census of threads and CPUs
# Samples every thread's CPU time, context switches and CPU, and the per-CPU interrupt and softirq
# counts, every 0.5 s while a long run goes on; reports the busiest window (the measured loop).
census() { # label out-prefix (runs while the tool runs in the background)
	local label=$1 prefix=$2 i=0
	while [[ -e $prefix.running ]]; do
		{
			echo "@ $(cut -d' ' -f1 /proc/uptime)"
			cat /proc/[0-9]*/task/[0-9]*/stat 2>/dev/null || true
			echo "@status"
			grep -H ctxt_switches /proc/[0-9]*/task/[0-9]*/status 2>/dev/null || true
			echo "@softirqs"
			cat /proc/softirqs
			echo "@interrupts"
			grep -E '^ *(LOC|RES|CAL|TLB):' /proc/interrupts
		} >"$prefix.s$i" 2>/dev/null
		i=$((i + 1))
		sleep 0.5
	done
	python3 - "$label" "$prefix" "$i" <<'PY'
import re, sys, collections
label, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
HZ = 100.0
def load(i):
    t, th, ctx, soft, irq, sect = 0.0, {}, {}, {}, {}, "stat"
    for line in open(f"{prefix}.s{i}", errors="replace"):
        if line.startswith("@ "):
            t = float(line.split()[1]); continue
        if line.startswith("@"):
            sect = line[1:].strip(); continue
        if sect == "stat":
            m = re.match(r"(\d+) \((.*)\) (\S) (.*)", line)
            if not m: continue
            f = m.group(4).split()
            # after state: ppid pgrp ... utime=f[10] stime=f[11] ... processor=f[35]
            th[int(m.group(1))] = (m.group(2), int(f[10]) + int(f[11]), int(f[35]), m.group(3))
        elif sect == "status":
            m = re.match(r"/proc/(\d+)/task/(\d+)/status:(\w+)_ctxt_switches:\s+(\d+)", line)
            if m: ctx[(int(m.group(2)), m.group(3))] = int(m.group(4))
        elif sect == "softirqs":
            f = line.split()
            if f and f[0].endswith(":"): soft[f[0][:-1]] = [int(x) for x in f[1:]]
        elif sect == "interrupts":
            f = line.split()
            irq[f[0][:-1]] = [int(x) for x in f[1:] if x.isdigit()]
    # tid -> pid of the stat line is the tid (we read task/*/stat): map tid to process name via comm
    return t, th, ctx, soft, irq
snaps = [load(i) for i in range(n)]
best = None
for i in range(len(snaps) - 1):
    a, b = snaps[i], snaps[i + 1]
    dt = b[0] - a[0]
    if dt <= 0: continue
    tool = sum(b[1][t][1] - a[1][t][1] for t in b[1] if t in a[1] and re.match(r"fabcheck|ib_", b[1][t][0]))
    if best is None or tool / dt > best[0]:
        best = (tool / dt, i)
if best is None:
    print(f"{label}: no census window"); sys.exit()
_, i = best
(ta, tha, ca, sa, ia), (tb, thb, cb, sb, ib) = snaps[i], snaps[i + 1]
dt = tb - ta
print(f"{label}: busiest {dt:.2f} s window (samples {i}..{i+1}); threads that ran in it:")
print(f"  {'thread':<22} {'tid':>6} {'cpu%':>6} {'vol':>6} {'invol':>6}  cpu (start->end)")
rows = []
for t, (comm, ticks, cpu, st) in thb.items():
    if t not in tha: continue
    d = ticks - tha[t][1]
    vol = ca.get((t, "voluntary")); vol = cb.get((t, "voluntary"), 0) - vol if vol is not None else 0
    inv = ca.get((t, "nonvoluntary")); inv = cb.get((t, "nonvoluntary"), 0) - inv if inv is not None else 0
    if d or vol or inv:
        rows.append((d, comm, t, vol, inv, tha[t][2], cpu))
for d, comm, t, vol, inv, c0, c1 in sorted(rows, reverse=True):
    print(f"  {comm:<22} {t:>6} {100 * d / HZ / dt:>6.0f} {vol:>6} {inv:>6}  {c0}->{c1}")
for name, d0, d1 in [(k, sa[k], sb[k]) for k in sb if k in sa] + [(k, ia[k], ib[k]) for k in ib if k in ia]:
    per = [y - x for x, y in zip(d0, d1)]
    if any(per):
        print(f"  {name:<10} per CPU in the window: {' '.join(str(p) for p in per)}  ({sum(per) / dt:.0f}/s)")
PY
}

if ((DO_CENSUS)); then
	for t in "${TEST_LIST[@]}"; do
		for tool in fabcheck perftest; do
			p=$WORK/census.$t.$tool
			: >"$p.running"
			(
				if [[ $tool == fabcheck ]]; then
					"$FABCHECK" pair localhost localhost --device "$DEVICE" --tests "$t" --size 2 --iters "$CENSUS_ITERS" "${CPU_ARGS[@]}" \
						--stall-timeout-ms 600000 --timeout 3000 --json >"$p.out" 2>"$p.err" || true
				else
					pt_pair "$t" "$CENSUS_ITERS" "" "" "$p.out" || true
				fi
				rm -f "$p.running"
			) &
			census "$t $tool" "$p"
			wait
		done
	done
fi

# ---------------------------------------------------------------- 3. system calls per iteration
# strace -f -c on each side; the per-iteration figure is (count at N2 - count at N1) / (N2 - N1).
RESULTS=$WORK/results.tsv
: >"$RESULTS"
result() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; } # test tool.side metric n value

strace_counts() { # test tool-side n file
	awk -v t="$1" -v s="$2" -v n="$3" '$NF ~ /^[a-z_0-9]+$/ && $(NF-1) ~ /^[0-9]+$/ && $NF != "total" {
		calls = ($(NF-2) ~ /^[0-9]+$/ && NF == 6) ? $(NF-2) : $(NF-1); print t "\t" s "\tsys:" $NF "\t" n "\t" calls }' "$4" >>"$RESULTS"
}

if ((DO_STRACE)) && command -v strace >/dev/null; then
	for t in "${TEST_LIST[@]}"; do
		for n in "$N1" "$N2"; do
			fab_pair "$t" "$n" "$(wrapper "$WORK/wa" strace -f -qq -c -o "$WORK/st.fab.a")" \
				"$(wrapper "$WORK/wb" strace -f -qq -c -o "$WORK/st.fab.b")" "$WORK/st.fab.json" || { say "fabcheck $t under strace failed"; continue; }
			strace_counts "$t" fabcheck.A "$(fab_iters "$n")" "$WORK/st.fab.a"
			strace_counts "$t" fabcheck.B "$(fab_iters "$n")" "$WORK/st.fab.b"
			pt_pair "$t" "$n" "$(wrapper "$WORK/wc" strace -f -qq -c -o "$WORK/st.pt.c")" \
				"$(wrapper "$WORK/ws" strace -f -qq -c -o "$WORK/st.pt.s")" "$WORK/st.pt.out" || { say "perftest $t under strace failed"; continue; }
			strace_counts "$t" perftest.client "$n" "$WORK/st.pt.c"
			strace_counts "$t" perftest.server "$n" "$WORK/st.pt.s"
		done
	done
fi

# ---------------------------------------------------------------- 4. instructions per iteration
cg_counts() { # test tool-side n file
	python3 - "$@" <<'PY' >>"$RESULTS"
import re, sys
test, side, n, path = sys.argv[1:5]
names, acc, ob, fn, skip, fns = {}, {}, "?", "?", False, {}
total = 0
for line in open(path, errors="replace"):
    if line.startswith(("ob=", "cob=")):
        m = re.match(r"c?ob=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
        key, name = m.group(1), m.group(2)
        if name and key: names[key] = name
        if line.startswith("ob="): ob = names.get(key, name) if key else name
    elif line.startswith("fn="):
        m = re.match(r"fn=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
        key, name = m.group(1), m.group(2)
        if name and key: fns[key] = name
        fn = fns.get(key, name) if key else name
    elif line.startswith("cfn="):
        m = re.match(r"cfn=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
        if m.group(1) and m.group(2): fns[m.group(1)] = m.group(2)
    elif line.startswith("calls="):
        skip = True
    elif line[:1].isdigit() or line[:1] in "+-*":
        if skip:
            skip = False; continue
        parts = line.split()
        if len(parts) >= 2:
            obj = re.sub(r"-rdmav\d+\.so$|\.so(\.\d+)*$", "", ob.rsplit("/", 1)[-1]) or "?"
            acc[obj] = acc.get(obj, 0) + int(parts[1])
            total += int(parts[1])
print(f"{test}\t{side}\tinstr\t{n}\t{total}")
for obj, ir in acc.items():
    print(f"{test}\t{side}\tinstr:{obj}\t{n}\t{ir}")
PY
}

if ((DO_CALLGRIND)) && command -v valgrind >/dev/null; then
	for t in "${TEST_LIST[@]}"; do
		# Under callgrind and emulation, preparing read_lat's responder outlasts the controller's
		# 30 s step deadline; its responder is the kernel (the passive side only waits), so in
		# read_lat only the active side runs under callgrind.
		callgrind_b=1
		[[ $t != read_lat ]] || callgrind_b=0
		for n in "$N1" "$N2"; do
			wrap_b=; wrap_s=
			if ((callgrind_b)); then
				wrap_b=$(wrapper "$WORK/wb" valgrind --tool=callgrind -q --callgrind-out-file="$WORK/cg.fab.b")
				wrap_s=$(wrapper "$WORK/ws" valgrind --tool=callgrind -q --callgrind-out-file="$WORK/cg.pt.s")
			fi
			fab_pair "$t" "$n" "$(wrapper "$WORK/wa" valgrind --tool=callgrind -q --callgrind-out-file="$WORK/cg.fab.a")" \
				"$wrap_b" "$WORK/cg.fab.json" ||
				{ say "fabcheck $t under callgrind failed"; continue; }
			cg_counts "$t" fabcheck.A "$(fab_iters "$n")" "$WORK/cg.fab.a"
			((callgrind_b == 0)) || cg_counts "$t" fabcheck.B "$(fab_iters "$n")" "$WORK/cg.fab.b"
			pt_pair "$t" "$n" "$(wrapper "$WORK/wc" valgrind --tool=callgrind -q --callgrind-out-file="$WORK/cg.pt.c")" \
				"$wrap_s" "$WORK/cg.pt.out" ||
				{ say "perftest $t under callgrind failed"; continue; }
			cg_counts "$t" perftest.client "$n" "$WORK/cg.pt.c"
			((callgrind_b == 0)) || cg_counts "$t" perftest.server "$n" "$WORK/cg.pt.s"
		done
	done
fi

# ---------------------------------------------------------------- report
python3 - "$RESULTS" <<'PY'
import sys, collections
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    test, side, metric, n, v = line.rstrip("\n").split("\t")
    try:
        vals[(test, side, metric)].append((int(n), float(v)))
    except ValueError:
        pass
def per_iter(k):
    pts = sorted(vals.get(k, []))
    if len(pts) < 2 or pts[-1][0] == pts[0][0]:
        return None
    (a, x), (b, y) = pts[0], pts[-1]
    return (y - x) / (b - a)
tests = sorted({k[0] for k in vals})
sides = ["fabcheck.A", "perftest.client", "fabcheck.B", "perftest.server"]
for test in tests:
    metrics = sorted({k[2] for k in vals if k[0] == test}, key=lambda m: (not m == "instr", m))
    print()
    print(f"{test} 2 B, per iteration (differential), A/client = active side, B/server = passive side:")
    print(f"  {'':<26}" + "".join(f"{s:>17}" for s in sides))
    for m in metrics:
        cells = [per_iter((test, s, m)) for s in sides]
        if all(c is None or abs(c) < 0.005 for c in cells):
            continue
        digits = 0 if m.startswith("instr") else 2
        label = "instructions" if m == "instr" else "  in " + m[6:] if m.startswith("instr:") else m[4:] + "()"
        print(f"  {label:<26}" + "".join(f"{'-' if c is None else f'{c:.{digits}f}':>17}" for c in cells))
PY
