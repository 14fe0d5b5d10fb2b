#!/usr/bin/env bash
# benches/hotpath.sh - fabcheck's own cost per work request on the bandwidth hot path, next to
# perftest's, on one node: user-space instructions per WR (perf's PMU counter when there is one,
# else callgrind) and system calls per WR (strace). Both are differential: each tool runs at two
# iteration counts and the difference is divided by the difference in WRs, so setup, connection
# and teardown cancel out.
#
# What the figures include: everything the sending process executes in user space per WR (the
# tool's loop, libibverbs, the provider, libc), including empty completion-queue polls while it
# waits for the device. Kernel work (all of Soft-RoCE's protocol processing) is not counted.
set -euo pipefail

PROG=hotpath.sh

usage() {
	cat <<'EOF'
Usage: benches/hotpath.sh [--device NAME[:PORT]] [--test write_bw|send_bw|read_bw] [--size BYTES]
                          [--iters N1,N2] [--fabcheck PATH] [--no-callgrind] [--no-strace]

Runs on one node with an RDMA device (in the Soft-RoCE guest:
  ./soft-roce-setup.sh --vm --timeout 3000 -- benches/hotpath.sh). Defaults: write_bw, 64 B (the
message-rate path, where per-WR overhead matters most), iterations 2048 and 32768. fabcheck's sender
is a `fabcheck serve` (endpoint A of `pair tcp://127.0.0.1:P localhost`), perftest's is the client
of the perftest tool the test mirrors, given fabcheck's queue settings (-t 128 -l 16 -Q 16).
Exit 0, or 2 when a tool could not run.
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 2; }

DEVICE=${FABCHECK_RXE_DEV:-rxe0}
TEST=write_bw
SIZE=64
ITERS=2048,32768
FABCHECK=
USE_CALLGRIND=1
USE_STRACE=1
PORT=20700
while [[ $# -gt 0 ]]; do
	case $1 in
	--device) DEVICE=${2:?}; shift 2 ;;
	--test) TEST=${2:?}; shift 2 ;;
	--size) SIZE=${2:?}; shift 2 ;;
	--iters) ITERS=${2:?}; shift 2 ;;
	--fabcheck) FABCHECK=${2:?}; shift 2 ;;
	--no-callgrind) USE_CALLGRIND=0; shift ;;
	--no-strace) USE_STRACE=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
case $TEST in write_bw | send_bw | read_bw) ;; *) die "--test: write_bw, send_bw or read_bw" ;; esac
if ! [[ $SIZE =~ ^[0-9]+$ ]] || ((SIZE < 1)); then die "--size must be a positive integer"; fi
IFS=, read -r N1 N2 <<<"$ITERS"
if ! [[ $N1 =~ ^[0-9]+$ && $N2 =~ ^[0-9]+$ ]] || ! ((N1 >= 16 && N2 > N1)); then die "--iters N1,N2 with 16 <= N1 < N2"; fi
N1=$(((N1 + 15) / 16 * 16)); N2=$(((N2 + 15) / 16 * 16)) # perftest: a multiple of the post list
DEV_NAME=${DEVICE%%:*}
DEV_PORT=1; [[ $DEVICE != *:* ]] || DEV_PORT=${DEVICE#*:}
TOOL=ib_$TEST
if [[ -z $FABCHECK ]]; then
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	FABCHECK=$here/target/release/fabcheck
	[[ -x $FABCHECK ]] || FABCHECK=$(command -v fabcheck) || die "no fabcheck: cargo build --release --bin fabcheck"
fi
command -v "$TOOL" >/dev/null || die "$TOOL not found: apt install perftest"
command -v python3 >/dev/null || die "python3 is needed"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fabcheck-hotpath.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

# fabcheck's bandwidth queue at this size (src/pair/plan.rs bw_queue), given to perftest too.
read -r DEPTH PL <<<"$(python3 -c '
import sys
s = int(sys.argv[1]); p2 = lambda v: 1 << (v.bit_length() - 1)
d = p2(min(max((32 << 20) // s, 4), 128)); c = p2(min(max((16 << 20) // s, 1), 64, d // 2))
print(d, min(c, 16))' "$SIZE")"
PT_FLAGS=(-d "$DEV_NAME" -i "$DEV_PORT" -s "$SIZE" -F -t "$DEPTH" -Q "$PL")
((PL <= 1)) || PT_FLAGS+=(-l "$PL")
if [[ $TEST != read_bw ]] && ((SIZE <= 220)); then PT_FLAGS+=(-I 220); fi
[[ $TEST != read_bw ]] || PT_FLAGS+=(-o 16)

next_port() { PORT=$((PORT + 1)); echo "$PORT"; }

# fabcheck_sender N WRAPPER...: runs `pair tcp://A localhost` with A = `fabcheck serve` under WRAPPER.
fabcheck_sender() {
	local n=$1; shift
	local port; port=$(next_port)
	"$@" "$FABCHECK" serve --listen "127.0.0.1:$port" --max-sessions 1 >"$WORK/serve.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	local rc=1
	for _ in $(seq 1 120); do
		sleep 1
		grep -q "listening" "$WORK/serve.log" && { rc=0; break; }
		kill -0 "$pid" 2>/dev/null || break
	done
	((rc == 0)) || { say "fabcheck serve did not start: $(tail -n 3 "$WORK/serve.log")"; return 1; }
	rc=0
	"$FABCHECK" pair "tcp://127.0.0.1:$port" localhost --device "$DEVICE" --tests "$TEST" --size "$SIZE" \
		--iters "$n" --direction ab --stall-timeout-ms 600000 --timeout 3000 --json >"$WORK/pair.json" 2>"$WORK/pair.err" || rc=$?
	wait "$pid" || true
	((rc <= 1)) || { say "fabcheck pair failed (exit $rc): $(tail -n 2 "$WORK/pair.err")"; return 1; }
}

# perftest_sender N WRAPPER...: perftest's server natively, its client (the sender) under WRAPPER.
perftest_sender() {
	local n=$1; shift
	local port; port=$(next_port)
	timeout 3000 "$TOOL" "${PT_FLAGS[@]}" -n "$n" -x "$GID" -p "$port" >"$WORK/pt-server.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	sleep 1
	local rc=0
	"$@" "$TOOL" "${PT_FLAGS[@]}" -n "$n" -x "$GID" -p "$port" 127.0.0.1 >"$WORK/pt-client.log" 2>&1 || rc=$?
	wait "$pid" || true
	((rc == 0)) || { say "$TOOL failed (exit $rc): $(tail -n 3 "$WORK/pt-client.log")"; return 1; }
}

# The GID index fabcheck picks (perftest needs it named).
"$FABCHECK" pair localhost localhost --device "$DEVICE" --tests send_lat --iters 10 --json >"$WORK/probe.json" 2>"$WORK/probe.err" ||
	die "fabcheck could not run on $DEVICE: $(tail -n 2 "$WORK/probe.err")"
GID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["a"].get("gid_index") or 0)' "$WORK/probe.json")

# fabcheck's warm-up (a tenth of the iterations, at most 500) runs the same loop: count it.
fab_wrs() { local n=$1 w=$(($1 / 10)); ((w > 500)) && w=500; echo $((n + w)); }

RESULTS=$WORK/results.tsv
: >"$RESULTS"
result() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; } # tool metric n value

say "$TEST ${SIZE} B on $DEVICE (GID $GID), iterations $N1 and $N2; perftest: $TOOL ${PT_FLAGS[*]}"

# ---------------------------------------------------------------- instructions: PMU or callgrind
PMU=0
if command -v perf >/dev/null && perf stat -x, -e instructions:u true 2>&1 >/dev/null | grep -q '^[0-9]'; then PMU=1; fi
if ((PMU)); then
	say "counting instructions with perf (PMU present)"
	for n in "$N1" "$N2"; do
		fabcheck_sender "$n" perf stat -x, -e instructions:u -o "$WORK/fab.$n.perf" --
		result fabcheck instr "$(fab_wrs "$n")" "$(awk -F, '/instructions/ { print $1; exit }' "$WORK/fab.$n.perf")"
		perftest_sender "$n" perf stat -x, -e instructions:u -o "$WORK/pt.$n.perf" --
		result perftest instr "$n" "$(awk -F, '/instructions/ { print $1; exit }' "$WORK/pt.$n.perf")"
	done
elif ((USE_CALLGRIND)) && command -v valgrind >/dev/null; then
	say "no PMU counter for instructions here (perf stat -e instructions:u: not supported); using callgrind (slow)"
	for n in "$N1" "$N2"; do
		fabcheck_sender "$n" valgrind --tool=callgrind --callgrind-out-file="$WORK/fab.$n.cg" -q ||
			die "fabcheck could not run under callgrind"
		perftest_sender "$n" valgrind --tool=callgrind --callgrind-out-file="$WORK/pt.$n.cg" -q ||
			die "$TOOL could not run under callgrind"
		for t in fab pt; do
			tool=$([[ $t == fab ]] && echo fabcheck || echo perftest)
			wrs=$([[ $t == fab ]] && fab_wrs "$n" || echo "$n")
			result "$tool" instr "$wrs" "$(awk '/^summary:|^totals:/ { print $2; exit }' "$WORK/$t.$n.cg")"
			# Per object (the tool, libibverbs, the provider, libc, the vDSO), read from the raw
			# profile: each cost line belongs to the object of its function (`ob=`); the line
			# after `calls=` is a callee's inclusive cost and is skipped.
			python3 - "$tool" "$wrs" "$WORK/$t.$n.cg" <<'PY' >>"$RESULTS"
import re, sys
tool, n, path = sys.argv[1:4]
names, acc, ob, skip = {}, {}, "?", False
for line in open(path, errors="replace"):
    if line.startswith(("ob=", "cob=")):
        # Names are given once, at first use (which may be a callee's `cob=`), then by number.
        m = re.match(r"c?ob=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
        key, name = m.group(1), m.group(2)
        if name and key:
            names[key] = name
        if line.startswith("ob="):
            ob = names.get(key, name) if key else name
    elif line.startswith("calls="):
        skip = True
    elif line[:1].isdigit() or line[:1] in "+-*":
        if skip:
            skip = False
            continue
        parts = line.split()
        if len(parts) >= 2:
            obj = re.sub(r"-rdmav\d+\.so$|\.so(\.\d+)*$", "", ob.rsplit("/", 1)[-1]) or "?"
            acc[obj] = acc.get(obj, 0) + int(parts[1])
for obj, ir in acc.items():
    print(f"{tool}\tinstr:{obj}\t{n}\t{ir}")
PY
		done
	done
else
	say "no PMU and no valgrind: instructions are not counted"
fi

# ---------------------------------------------------------------- system calls: strace
if ((USE_STRACE)) && command -v strace >/dev/null; then
	say "counting system calls with strace"
	for n in "$N1" "$N2"; do
		fabcheck_sender "$n" strace -f -qq -c -o "$WORK/fab.$n.strace" || die "fabcheck could not run under strace"
		perftest_sender "$n" strace -f -qq -c -o "$WORK/pt.$n.strace" || die "$TOOL could not run under strace"
		for t in fab pt; do
			tool=$([[ $t == fab ]] && echo fabcheck || echo perftest)
			wrs=$([[ $t == fab ]] && fab_wrs "$n" || echo "$n")
			awk -v tool="$tool" -v n="$wrs" '$NF ~ /^[a-z_0-9]+$/ && $(NF-1) ~ /^[0-9]+$/ && $NF != "total" {
				calls = ($(NF-2) ~ /^[0-9]+$/ && NF == 6) ? $(NF-2) : $(NF-1); print tool "\tsys:" $NF "\t" n "\t" calls }' \
				"$WORK/$t.$n.strace" >>"$RESULTS"
		done
	done
fi

# ---------------------------------------------------------------- report
python3 - "$RESULTS" "$N1" "$N2" "$TEST" "$SIZE" <<'PY'
import sys
path, n1, n2, test, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
vals = {}
for line in open(path):
    tool, metric, n, v = line.rstrip("\n").split("\t")
    try:
        vals.setdefault((tool, metric), []).append((int(n), float(v)))
    except ValueError:
        pass
def per_wr(tool, metric):
    pts = sorted(vals.get((tool, metric), []))
    if len(pts) < 2 or pts[-1][0] == pts[0][0]:
        return None
    (a, x), (b, y) = pts[0], pts[-1]
    return (y - x) / (b - a)
metrics = sorted({m for (_, m) in vals})
print()
print(f"Per work request, {test} {size} B, differential between {n1} and {n2} iterations (user space only):")
print(f"{'':<28} {'fabcheck':>12} {'perftest':>12}")
def row(label, m, digits):
    f, p = per_wr("fabcheck", m), per_wr("perftest", m)
    if f is None and p is None:
        return
    show = lambda v: "-" if v is None else f"{v:.{digits}f}"
    if abs(f or 0) < 10 ** -digits / 2 and abs(p or 0) < 10 ** -digits / 2:
        return
    print(f"{label:<28} {show(f):>12} {show(p):>12}")
row("instructions, total", "instr", 0)
for m in metrics:
    if m.startswith("instr:"):
        row("  in " + m[6:], m, 0)
for m in metrics:
    if m.startswith("sys:"):
        row(m[4:] + "()", m, 3)
print()
print("Empty completion-queue polls while waiting for the device count too: a sender faster than the")
print("device spins more, so compare the two tools in the same run, not against fixed numbers.")
PY
