#!/usr/bin/env bash
# benches/loaded-latency.sh - fabcheck's `lat_under_load` next to what perftest users do by hand
# for the same question: ib_send_lat alone, then ib_send_lat while ib_write_bw fills the link (two
# perftest runs at once, on the same device and traffic class). Round after round, alternately.
#
# A benchmark, not a test: exit 0 whatever the figures; 2 on bad usage or when a tool failed to run.
set -euo pipefail

PROG="loaded-latency.sh"

usage() {
	cat <<'EOF'
Usage: benches/loaded-latency.sh [OPTIONS]

Per round, on the same device:
  fabcheck  pair A B --tests lat_under_load --iters N     its idle phase, then its loaded phase
            (one connection: 2 B sends ping-pong while one QP of 64 KiB RDMA writes runs)
  perftest  ib_send_lat -s 2 -n N                          idle
            ib_write_bw -s 65536 -D SECS & ib_send_lat -s 2 -n N   loaded (the write starts first)
Prints per tool the idle and loaded p50/p99 (perftest: t_typical and 99%) and loaded/idle p99,
min/median/max over the rounds, then `tool=T idle_p99=.. loaded_p99=.. ratio=..` lines (medians).
fabcheck's ratio is its own `under_load.p99_ratio`; perftest's is computed the same way.

Options:
  --rounds N            rounds (default 3)
  --device NAME[:PORT]  RDMA device (default $FABCHECK_RXE_DEV, else rxe0)
  --iters N             pings per phase, both tools (default 2000)
  --load-secs S         ib_write_bw -D for perftest's loaded phase (default 30; it must outlast
                        the pings, and is ended when they are done)
  --hosts HOST_A HOST_B two nodes over ssh (fabcheck pair HOST_A HOST_B; perftest's servers on B,
                        clients on A); default: both ends on this node
  --fabcheck PATH       fabcheck (default target/release/fabcheck, else PATH's)
  --port N              first TCP port for perftest (default 20600)
  --timeout S           seconds any single tool run may take (default 300)
  -h, --help            this text

In the Soft-RoCE guest: ./soft-roce-setup.sh --vm --timeout 1800 -- benches/loaded-latency.sh
Two guests or nodes:    benches/loaded-latency.sh --hosts root@node1 root@node2 --device mlx5_0
On one guest rxe0 talks to itself (its loopback never crosses the netdev), so the loaded phase
there measures CPU contention, not a queue on a wire: read the two tools' ratios side by side.
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 2; }
need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

ROUNDS=3
DEVICE=${FABCHECK_RXE_DEV:-rxe0}
ITERS=2000
LOAD_SECS=30
HOST_A=
HOST_B=
FABCHECK=
PORT=20600
TOOL_TIMEOUT=300
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) need_arg "$@"; ROUNDS=$2; shift 2 ;;
	--device) need_arg "$@"; DEVICE=$2; shift 2 ;;
	--iters) need_arg "$@"; ITERS=$2; shift 2 ;;
	--load-secs) need_arg "$@"; LOAD_SECS=$2; shift 2 ;;
	--hosts)
		[[ $# -ge 3 && -n $2 && -n $3 ]] || die "--hosts needs two hosts"
		HOST_A=$2; HOST_B=$3; shift 3 ;;
	--fabcheck) need_arg "$@"; FABCHECK=$2; shift 2 ;;
	--port) need_arg "$@"; PORT=$2; shift 2 ;;
	--timeout) need_arg "$@"; TOOL_TIMEOUT=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
{ is_uint "$ROUNDS" && ((ROUNDS >= 1)); } || die "--rounds must be a positive integer"
{ is_uint "$ITERS" && ((ITERS >= 16)); } || die "--iters must be an integer >= 16"
{ is_uint "$LOAD_SECS" && ((LOAD_SECS >= 2)); } || die "--load-secs must be an integer >= 2"
{ is_uint "$PORT" && ((PORT >= 1024 && PORT <= 64000)); } || die "--port must be 1024..64000"
{ is_uint "$TOOL_TIMEOUT" && ((TOOL_TIMEOUT >= 1)); } || die "--timeout must be a positive integer"
DEV_NAME=${DEVICE%%:*}
DEV_PORT=1
[[ $DEVICE != *:* ]] || DEV_PORT=${DEVICE#*:}
is_uint "$DEV_PORT" || die "--device '$DEVICE': the port after ':' must be a number"

command -v python3 >/dev/null || die "python3 is needed to summarise"
if [[ -z $FABCHECK ]]; then
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	if [[ -x $here/target/release/fabcheck ]]; then FABCHECK=$here/target/release/fabcheck
	elif command -v fabcheck >/dev/null; then FABCHECK=$(command -v fabcheck)
	else die "no fabcheck: build it (cargo build --release --bin fabcheck) or pass --fabcheck PATH"; fi
fi
[[ -x $FABCHECK ]] || die "--fabcheck '$FABCHECK' is not an executable"
if [[ -z $HOST_A ]]; then
	for t in ib_send_lat ib_write_bw; do command -v "$t" >/dev/null || die "$t not found: apt install perftest"; done
	SERVER_ADDR=127.0.0.1
else
	SERVER_ADDR=${HOST_B#*@}
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fabcheck-loaded.XXXXXX")
SAMPLES=$WORK/samples.tsv
: >"$SAMPLES"
BG=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# on HOST CMD...: on this node, or over ssh with the words quoted for the remote shell.
on() {
	local host=$1; shift
	if [[ -z $host ]]; then "$@"; else ssh -o BatchMode=yes -n "$host" "$(printf '%q ' "$@")"; fi
}

fabcheck_round() { # round
	local out=$WORK/fab.json a=localhost b=localhost rc=0
	[[ -z $HOST_A ]] || { a=$HOST_A; b=$HOST_B; }
	timeout "$TOOL_TIMEOUT" "$FABCHECK" pair "$a" "$b" --device "$DEVICE" --tests lat_under_load \
		--iters "$ITERS" --direction ab --json >"$out" 2>"$out.err" || rc=$?
	((rc <= 1)) || die "fabcheck failed (exit $rc): $(tail -n 3 "$out.err" | tr '\n' ' ')"
	python3 - "$1" "$out" >>"$SAMPLES" <<'PY'
import json, sys
rnd, path = sys.argv[1:3]
doc = json.load(open(path))
r = doc["results"][0]
if r.get("error"):
    sys.exit(f"fabcheck lat_under_load: {r['error']}")
u = r["under_load"]
print(f"{rnd}\tfabcheck\tidle_p50\t{u['idle_lat_us']['p50']}\n{rnd}\tfabcheck\tidle_p99\t{u['idle_lat_us']['p99']}")
print(f"{rnd}\tfabcheck\tloaded_p50\t{r['lat_us']['p50']}\n{rnd}\tfabcheck\tloaded_p99\t{r['lat_us']['p99']}")
print(f"{rnd}\tfabcheck\tratio\t{u['p99_ratio']}")
PY
	GID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["a"].get("gid_index") or 0)' "$out")
}

# One ib_send_lat, its server on B: prints "t_typical 99%" of its 2 B row.
send_lat() { # port out
	local port=$1 out=$2 srv try rc=1
	local common=(-d "$DEV_NAME" -i "$DEV_PORT" -x "$GID" -s 2 -n "$ITERS" -F -p "$port")
	on "$HOST_B" timeout "$TOOL_TIMEOUT" ib_send_lat "${common[@]}" >"$out.srv" 2>&1 &
	srv=$!
	BG+=("$srv")
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sleep "$([[ $try -eq 1 ]] && echo 0.5 || echo 1)"
		rc=0
		on "$HOST_A" timeout "$TOOL_TIMEOUT" ib_send_lat "${common[@]}" "$SERVER_ADDR" >"$out" 2>&1 || rc=$?
		((rc == 0)) && break
		grep -q "Couldn't connect" "$out" || break
	done
	wait "$srv" 2>/dev/null || true
	((rc == 0)) || die "ib_send_lat failed (exit $rc): $(tail -n 3 "$out" | tr '\n' ' ')"
	awk '$1 == 2 && NF >= 8 { print $5, $8; exit }' "$out"
}

perftest_round() { # round
	local rnd=$1 idle loaded wsrv wcli
	idle=$(send_lat "$PORT" "$WORK/idle.txt")
	[[ -n $idle ]] || die "ib_send_lat printed no 2 B row (idle): $(tail -n 3 "$WORK/idle.txt" | tr '\n' ' ')"
	# The load: ib_write_bw for LOAD_SECS, started first; the pings run inside its window.
	local load=(timeout "$TOOL_TIMEOUT" ib_write_bw -d "$DEV_NAME" -i "$DEV_PORT" -x "$GID" -s 65536 -D "$LOAD_SECS" -F -p $((PORT + 1)))
	# Started without a function in between, so that killing the job reaches `timeout` (which
	# passes the signal on) or ssh.
	if [[ -z $HOST_B ]]; then "${load[@]}" >"$WORK/wbw.srv" 2>&1 & else ssh -o BatchMode=yes -n "$HOST_B" "$(printf '%q ' "${load[@]}")" >"$WORK/wbw.srv" 2>&1 & fi
	wsrv=$!
	BG+=("$wsrv")
	sleep 1
	if [[ -z $HOST_A ]]; then "${load[@]}" "$SERVER_ADDR" >"$WORK/wbw.txt" 2>&1 & else ssh -o BatchMode=yes -n "$HOST_A" "$(printf '%q ' "${load[@]}" "$SERVER_ADDR")" >"$WORK/wbw.txt" 2>&1 & fi
	wcli=$!
	BG+=("$wcli")
	sleep 2
	loaded=$(send_lat $((PORT + 2)) "$WORK/loaded.txt")
	[[ -n $loaded ]] || die "ib_send_lat printed no 2 B row (loaded): $(tail -n 3 "$WORK/loaded.txt" | tr '\n' ' ')"
	kill -0 "$wcli" 2>/dev/null || say "round $rnd: ib_write_bw ended before the loaded pings did (raise --load-secs)"
	# The load has done its part: end it (over ssh, the remote ib_write_bw ends at its -D).
	kill "$wcli" "$wsrv" 2>/dev/null || true
	wait "$wcli" 2>/dev/null || true
	wait "$wsrv" 2>/dev/null || true
	read -r ip50 ip99 <<<"$idle"
	read -r lp50 lp99 <<<"$loaded"
	printf '%s\tperftest\t%s\t%s\n' "$rnd" idle_p50 "$ip50" "$rnd" idle_p99 "$ip99" "$rnd" loaded_p50 "$lp50" "$rnd" loaded_p99 "$lp99" >>"$SAMPLES"
	printf '%s\tperftest\tratio\t%s\n' "$rnd" "$(awk -v l="$lp99" -v i="$ip99" 'BEGIN { printf "%.3f", (i > 0 ? l / i : 0) }')" >>"$SAMPLES"
}

GID=0
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then fabcheck_round "$r"; perftest_round "$r"; else perftest_round "$r"; fabcheck_round "$r"; fi
	PORT=$((PORT + 3))
	say "round $r of $ROUNDS done"
done

python3 - "$SAMPLES" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    rnd, tool, metric, value = line.rstrip("\n").split("\t")
    v = float(value)
    # perftest prints inf when its clock calibration failed (common under emulation): not a figure.
    if v == v and v not in (float("inf"), float("-inf")):
        rows.setdefault((tool, metric), []).append(v)
metrics = ["idle_p50", "idle_p99", "loaded_p50", "loaded_p99", "ratio"]
print(f"{'tool':<9}" + "".join(f"{m:>28}" for m in metrics))
for tool in ["fabcheck", "perftest"]:
    cells = []
    for m in metrics:
        v = rows.get((tool, m), [])
        cells.append(f"{min(v):.1f}/{statistics.median(v):.1f}/{max(v):.1f}" if v else "-")
    print(f"{tool:<9}" + "".join(f"{c:>28}" for c in cells))
print("(min/median/max over the rounds, perftest's inf left out; us, ratio = loaded p99 / idle p99)")
for tool in ["fabcheck", "perftest"]:
    med = {m: statistics.median(rows[(tool, m)]) for m in metrics if rows.get((tool, m))}
    print(f"tool={tool} idle_p99={med.get('idle_p99', 0):.1f} loaded_p99={med.get('loaded_p99', 0):.1f} ratio={med.get('ratio', 0):.3f}")
PY
