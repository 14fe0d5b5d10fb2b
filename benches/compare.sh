#!/usr/bin/env bash
# benches/compare.sh - fabcheck next to the perftest tool each of its tests mirrors, on the same
# device in the same run, round after round, with fabcheck/perftest ratios.
#
# A benchmark, not a test: exit 0 whatever the ratios; 2 on bad usage or when a tool failed to run.
set -euo pipefail

PROG=compare.sh

usage() {
	cat <<'EOF'
Usage: benches/compare.sh [OPTIONS]

Runs fabcheck and perftest alternately on the same link, several rounds each (perftest twice a
round: at its own defaults and given fabcheck's settings), and prints per row fabcheck's figure,
perftest's figure and the ratio fabcheck/perftest as min/median/max over the rounds (the ratio is
taken within each round, then summarised). The output ends with one line per row and perftest
setting: `row=NAME fabcheck=MEDIAN perftest=MEDIAN ratio=MEDIAN_RATIO` (NAME: the row, with
`:matched` when perftest had fabcheck's settings; write_bw_64's message rate is write_bw_64_rate).

  send_lat    fabcheck send_lat  p50      vs ib_send_lat  t_typical   2 B      target ratio <= 1.00
  write_lat   fabcheck write_lat p50      vs ib_write_lat t_typical   2 B      target ratio <= 1.00
  read_lat    fabcheck read_lat  p50      vs ib_read_lat  t_typical   2 B      target ratio <= 1.00
  write_bw    fabcheck write_bw  Gb/s     vs ib_write_bw  BW average  64 KiB   target ratio >= 1.00
  write_bw_64 fabcheck write_bw  Gb/s+Mpps vs ib_write_bw BW, MsgRate 64 B     target ratio >= 1.00
  read_bw     fabcheck read_bw   Gb/s     vs ib_read_bw   BW average  64 KiB   target ratio >= 1.00
  send_bw     fabcheck send_bw   Gb/s     vs ib_send_bw   BW average  64 KiB   target ratio >= 1.00

Rows run only when named (--tests), issue #55:
  atomic_lat  fabcheck atomic_lat p50     vs ib_atomic_lat t_typical  8 B      target ratio <= 1.00
  atomic_bw   fabcheck atomic_bw Gb/s+Mpps vs ib_atomic_bw BW, MsgRate 8 B     target ratio >= 1.00
  send_lat_noinline  fabcheck send_lat --inline 0 vs ib_send_lat (-I 0 matched) 2 B
  send_lat_events    fabcheck send_lat --events   vs ib_send_lat -e          2 B
  send_bw_events     fabcheck send_bw --events    vs ib_send_bw -e           64 KiB

Options:
  --rounds N            rounds (default 5, at least 1; use 5 or more); the order of the tools
                        alternates between rounds
  --device NAME[:PORT]  RDMA device (default $FABCHECK_RXE_DEV, else rxe0)
  --iters N             iterations of every test, both tools (default: 2000 latency, 1024 at
                        64 KiB, 8192 at 64 B; rounded up to a multiple of the post list)
  --tests LIST          rows to run, comma separated (default all, names as above)
  --hosts HOST_A HOST_B two nodes instead of this one: `fabcheck pair HOST_A HOST_B`, perftest's
                        server started over ssh on HOST_B, its client over ssh on HOST_A
  --server-addr ADDR    address HOST_A's perftest client dials (default: HOST_B without user@)
  --gid-index N         GID index for both tools (default: the one fabcheck picks, read from its
                        JSON `a.gid_index` / `b.gid_index`)
  --perftest WHICH      defaults (perftest as people run it: ib_send_lat -s 2 -n N), matched
                        (given fabcheck's settings, see docs/performance.md) or both (default)
  --perftest-defaults   the same as --perftest defaults
  --cpu A,B             passed to `fabcheck pair --cpu` (default: fabcheck's own choice); perftest
                        is pinned to the same CPUs (taskset) when given
  --json FILE           also write every sample and the summary as JSON to FILE
  --fabcheck PATH       fabcheck on this node (default target/release/fabcheck, else PATH's)
  --remote-fabcheck P   fabcheck's path on ssh hosts (passed to `pair --remote-fabcheck`)
  --ssh CMD             ssh command for --hosts (default: ssh -o BatchMode=yes)
  --port N              first TCP port for perftest's exchange (default 20100)
  --timeout S           seconds any single tool run may take (default 600)
  -h, --help            this text

In the Soft-RoCE guest:  ./soft-roce-setup.sh --vm --timeout 3000 -- benches/compare.sh
On two real nodes:       benches/compare.sh --hosts node1 node2 --device mlx5_0
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 2; }

# ----------------------------------------------------------------------------- options

ROUNDS=5
DEVICE=${FABCHECK_RXE_DEV:-rxe0}
ITERS=
TESTS=send_lat,write_lat,read_lat,write_bw,write_bw_64,read_bw,send_bw
HOST_A=
HOST_B=
SERVER_ADDR=
GID_INDEX=
PT_MODES=(defaults matched)
CPU=
JSON_OUT=
FABCHECK=
REMOTE_FABCHECK=
SSH_CMD="ssh -o BatchMode=yes"
PORT_BASE=20100
TOOL_TIMEOUT=600

need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) need_arg "$@"; ROUNDS=$2; shift 2 ;;
	--device) need_arg "$@"; DEVICE=$2; shift 2 ;;
	--iters) need_arg "$@"; ITERS=$2; shift 2 ;;
	--tests) need_arg "$@"; TESTS=$2; shift 2 ;;
	--hosts)
		[[ $# -ge 3 && -n $2 && -n $3 ]] || die "--hosts needs two hosts: --hosts HOST_A HOST_B"
		HOST_A=$2; HOST_B=$3; shift 3 ;;
	--server-addr) need_arg "$@"; SERVER_ADDR=$2; shift 2 ;;
	--gid-index) need_arg "$@"; GID_INDEX=$2; shift 2 ;;
	--perftest-defaults) PT_MODES=(defaults); shift ;;
	--perftest)
		need_arg "$@"
		case $2 in defaults | matched) PT_MODES=("$2") ;; both) PT_MODES=(defaults matched) ;; *) die "--perftest: defaults, matched or both" ;; esac
		shift 2 ;;
	--cpu) need_arg "$@"; CPU=$2; shift 2 ;;
	--json) need_arg "$@"; JSON_OUT=$2; shift 2 ;;
	--fabcheck) need_arg "$@"; FABCHECK=$2; shift 2 ;;
	--remote-fabcheck) need_arg "$@"; REMOTE_FABCHECK=$2; shift 2 ;;
	--ssh) need_arg "$@"; SSH_CMD=$2; shift 2 ;;
	--port) need_arg "$@"; PORT_BASE=$2; shift 2 ;;
	--timeout) need_arg "$@"; TOOL_TIMEOUT=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done

{ is_uint "$ROUNDS" && ((ROUNDS >= 1)); } || die "--rounds must be a positive integer"
[[ -z $ITERS ]] || { is_uint "$ITERS" && ((ITERS >= 16)); } || die "--iters must be an integer >= 16"
[[ -z $GID_INDEX ]] || is_uint "$GID_INDEX" || die "--gid-index must be a non-negative integer"
{ is_uint "$PORT_BASE" && ((PORT_BASE >= 1024 && PORT_BASE <= 64000)); } || die "--port must be 1024..64000"
{ is_uint "$TOOL_TIMEOUT" && ((TOOL_TIMEOUT >= 1)); } || die "--timeout must be a positive integer"
# The JSON is written after every round has run: a path that cannot be written (the Soft-RoCE
# guest sees the host's / read-only; use /tmp there) fails now, not after the runs.
[[ -z $JSON_OUT ]] || { : >>"$JSON_OUT"; } 2>/dev/null || die "--json $JSON_OUT: cannot write there"

# NAME[:PORT] -> perftest's -d NAME -i PORT.
DEV_NAME=${DEVICE%%:*}
DEV_PORT=1
if [[ $DEVICE == *:* ]]; then
	DEV_PORT=${DEVICE#*:}
	is_uint "$DEV_PORT" || die "--device '$DEVICE': the port after ':' must be a number"
fi

# Rows: name fabcheck-test size perftest-tool kind(lat|bw|rate)
declare -A ROW_TEST=([send_lat]=send_lat [write_lat]=write_lat [read_lat]=read_lat [write_bw]=write_bw [write_bw_64]=write_bw [read_bw]=read_bw [send_bw]=send_bw
	[atomic_lat]=atomic_lat [atomic_bw]=atomic_bw [send_lat_noinline]=send_lat [send_lat_events]=send_lat [send_bw_events]=send_bw)
declare -A ROW_SIZE=([send_lat]=2 [write_lat]=2 [read_lat]=2 [write_bw]=65536 [write_bw_64]=64 [read_bw]=65536 [send_bw]=65536
	[atomic_lat]=8 [atomic_bw]=8 [send_lat_noinline]=2 [send_lat_events]=2 [send_bw_events]=65536)
declare -A ROW_TOOL=([send_lat]=ib_send_lat [write_lat]=ib_write_lat [read_lat]=ib_read_lat [write_bw]=ib_write_bw [write_bw_64]=ib_write_bw [read_bw]=ib_read_bw [send_bw]=ib_send_bw
	[atomic_lat]=ib_atomic_lat [atomic_bw]=ib_atomic_bw [send_lat_noinline]=ib_send_lat [send_lat_events]=ib_send_lat [send_bw_events]=ib_send_bw)
# fabcheck's extra flags per row (perftest's matched flags follow them in perftest_flags).
declare -A ROW_FABCHECK_EXTRA=([send_lat_noinline]="--inline 0" [send_lat_events]="--events" [send_bw_events]="--events")
ROWS=()
IFS=, read -r -a _wanted <<<"$TESTS"
for r in "${_wanted[@]}"; do
	[[ -n $r ]] || continue
	[[ -n ${ROW_TEST[$r]:-} ]] || die "--tests: unknown row '$r' (one of: ${!ROW_TEST[*]})"
	ROWS+=("$r")
done
((${#ROWS[@]} > 0)) || die "--tests selects no row"

is_lat() { [[ ${ROW_TEST[$1]} == *_lat ]]; }

# fabcheck's bandwidth queue for a message size, as src/pair/plan.rs `bw_queue` computes it:
# depth = pow2floor(clamp(32 MiB / size, 4, 128)), cq_mod = pow2floor(min(clamp(16 MiB / size,
# 1, 64), depth / 2)), post list = min(cq_mod, 16). Prints "depth cq_mod post_list".
bw_queue() {
	local size=$1 depth cq p
	depth=$(((32 << 20) / size)); ((depth < 4)) && depth=4; ((depth > 128)) && depth=128
	p=1; while ((p * 2 <= depth)); do p=$((p * 2)); done; depth=$p
	cq=$(((16 << 20) / size)); ((cq < 1)) && cq=1; ((cq > 64)) && cq=64; ((cq > depth / 2)) && cq=$((depth / 2))
	p=1; while ((p * 2 <= cq)); do p=$((p * 2)); done; cq=$p
	echo "$depth $cq $((cq < 16 ? cq : 16))"
}

row_iters() {
	local row=$1 n
	if [[ -n $ITERS ]]; then n=$ITERS
	elif is_lat "$row"; then n=2000
	elif ((ROW_SIZE[$row] <= 4096)); then n=8192
	else n=1024; fi
	if ! is_lat "$row"; then
		# perftest wants the iterations to be a multiple of its post list.
		local q; read -r _ _ q <<<"$(bw_queue "${ROW_SIZE[$row]}")"
		n=$(((n + q - 1) / q * q))
	fi
	echo "$n"
}

# ----------------------------------------------------------------------------- tools

command -v python3 >/dev/null || die "python3 is needed to summarise (apt install python3)"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"
if [[ -z $FABCHECK ]]; then
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	if [[ -x $here/target/release/fabcheck ]]; then FABCHECK=$here/target/release/fabcheck
	elif command -v fabcheck >/dev/null; then FABCHECK=$(command -v fabcheck)
	else die "no fabcheck: build it (cargo build --release --bin fabcheck) or pass --fabcheck PATH"; fi
fi
[[ -x $FABCHECK ]] || die "--fabcheck '$FABCHECK' is not an executable"

REMOTE=0
if [[ -n $HOST_A ]]; then
	REMOTE=1
	for h in "$HOST_A" "$HOST_B"; do
		[[ $h != tcp://* ]] || die "--hosts takes ssh hosts ([user@]host): perftest is started over ssh"
		[[ $h != */* ]] || die "--hosts '$h': name the device with --device, not HOST/DEVICE"
	done
	[[ -n $SERVER_ADDR ]] || SERVER_ADDR=${HOST_B#*@}
else
	SERVER_ADDR=127.0.0.1
	for r in "${ROWS[@]}"; do
		command -v "${ROW_TOOL[$r]}" >/dev/null || die "${ROW_TOOL[$r]} not found: apt install perftest"
	done
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fabcheck-compare.XXXXXX")
SAMPLES=$WORK/samples.tsv
: >"$SAMPLES"
BG_PIDS=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FAILED=0
SEQ=0

# on HOST CMD...: runs CMD on HOST (locally when not --hosts), words quoted for the remote shell.
on() {
	local host=$1; shift
	if ((REMOTE == 0)); then
		"$@"
	else
		# shellcheck disable=SC2086
		$SSH_CMD -n "$host" "$(printf '%q ' "$@")"
	fi
}

fabcheck_run() { # row out-file
	local row=$1 out=$2 a=localhost b=localhost
	local args=(pair)
	((REMOTE == 0)) || { a=$HOST_A; b=$HOST_B; }
	args+=("$a" "$b" --device "$DEVICE" --tests "${ROW_TEST[$row]}" --size "${ROW_SIZE[$row]}"
		--iters "$(row_iters "$row")" --direction ab --json)
	# shellcheck disable=SC2206 # the row's extra flags are words by design
	[[ -z ${ROW_FABCHECK_EXTRA[$row]:-} ]] || args+=(${ROW_FABCHECK_EXTRA[$row]})
	[[ -z $GID_INDEX ]] || args+=(--gid-index "$GID_INDEX")
	[[ -z $CPU ]] || args+=(--cpu "$CPU")
	[[ -z $REMOTE_FABCHECK ]] || args+=(--remote-fabcheck "$REMOTE_FABCHECK")
	local rc=0
	timeout "$TOOL_TIMEOUT" "$FABCHECK" "${args[@]}" >"$out" 2>"$out.err" || rc=$?
	# 0 pass, 1 ran but the verdict failed (e.g. retransmissions): both carry figures.
	if ((rc > 1)); then
		say "fabcheck ${args[*]} failed (exit $rc): $(tail -n 3 "$out.err" | tr '\n' ' ')"
		return 1
	fi
}

# perftest flags beyond device, GID, size, iterations and port, for a row and a mode
# (defaults: none; matched: fabcheck's settings).
perftest_flags() {
	local row=$1 mode=$2 size=${ROW_SIZE[$1]} flags=(-F)
	is_lat "$row" || flags+=(--report_gbits)
	# The *_events rows: completion channels on both tools, whatever the mode.
	[[ $row != *_events ]] || flags+=(-e)
	if [[ $mode == matched ]] && is_lat "$row"; then
		# fabcheck's latency loops: busy polling (perftest's default; no --use_event), a send
		# completion every 16th send (perftest: every send, its tx depth being 1) and 2 B sends
		# and writes inline (perftest refuses -I on devices it does not know, rxe among them:
		# there it prints "Disabling it" and runs without). Write and read latency signal every
		# WR in perftest whatever -Q says.
		[[ ${ROW_TEST[$row]} != send_lat ]] || flags+=(-t 64 -Q 16)
		# Reads and atomics carry nothing inline (perftest forces 0); --inline 0 rows ask 0.
		if [[ $row == send_lat_noinline ]]; then flags+=(-I 0)
		elif [[ ${ROW_TEST[$row]} != read_lat && ${ROW_TEST[$row]} != atomic_lat ]]; then flags+=(-I 220); fi
	elif [[ $mode == matched ]]; then
		# fabcheck's queue: depth, completion every cq_mod, chains of post_list WRs. perftest
		# insists that its CQ moderation divides its post list, so it gets -Q = post list.
		local depth cq pl
		read -r depth cq pl <<<"$(bw_queue "$size")"
		flags+=(-t "$depth" -Q "$pl")
		((pl <= 1)) || flags+=(-l "$pl")
		# fabcheck inlines sends and writes up to 220 B (perftest: 0 in bandwidth tests; and
		# always 0 on devices it does not know, rxe among them).
		if [[ $row != read_bw && $row != atomic_bw ]] && ((size <= 220)); then flags+=(-I 220); fi
		# fabcheck keeps 16 reads or atomics outstanding (perftest: the device maximum, 128 on rxe).
		[[ $row != read_bw && $row != atomic_bw ]] || flags+=(-o 16)
	fi
	printf '%s\n' "${flags[@]}"
}

perftest_run() { # row mode out-file
	local row=$1 mode=$2 out=$3 tool=${ROW_TOOL[$1]} port srv_pid rc try attempt
	local flags; mapfile -t flags <<<"$(perftest_flags "$row" "$mode")"
	local common=(-d "$DEV_NAME" -i "$DEV_PORT" -s "${ROW_SIZE[$row]}" -n "$(row_iters "$row")" "${flags[@]}")
	for attempt in 1 2 3; do
		SEQ=$((SEQ + 1))
		port=$((PORT_BASE + SEQ % 500))
		# In the background and without a subshell in between, so that killing srv_pid reaches
		# timeout (which passes the signal on to perftest) or ssh (the remote perftest then ends
		# at its own timeout).
		if ((REMOTE == 0)); then
			"${RUN_PIN_B[@]}" timeout "$TOOL_TIMEOUT" "$tool" "${common[@]}" -x "$GID_B" -p "$port" >"$out.srv" 2>&1 &
		else
			# shellcheck disable=SC2086
			$SSH_CMD -n "$HOST_B" "$(printf '%q ' timeout "$TOOL_TIMEOUT" "$tool" "${common[@]}" -x "$GID_B" -p "$port")" >"$out.srv" 2>&1 &
		fi
		srv_pid=$!
		BG_PIDS+=("$srv_pid")
		rc=1
		for try in 1 2 3 4 5 6 7 8 9 10; do
			sleep "$([[ $try -eq 1 ]] && echo 0.5 || echo 1)"
			rc=0
			on "$HOST_A" "${RUN_PIN_A[@]}" timeout "$TOOL_TIMEOUT" "$tool" "${common[@]}" -x "$GID_A" -p "$port" "$SERVER_ADDR" >"$out" 2>&1 || rc=$?
			((rc == 0)) && break
			# Not listening yet: the server is still waiting, so dialing again is safe.
			grep -q "Couldn't connect\|Unable to open file descriptor" "$out" || break
		done
		if ((rc != 0)); then
			kill "$srv_pid" 2>/dev/null || true
			wait "$srv_pid" 2>/dev/null || true
			say "$tool failed (exit $rc): $(grep -v '^ *$' "$out" | tail -n 3 | tr '\n' ' ')"
			return 1
		fi
		wait "$srv_pid" 2>/dev/null || true
		# perftest times with the TSC, calibrated against gettimeofday at start; when that fails
		# (r^2 < 0.9, common under emulation) every figure is inf. Such a run is run again.
		grep -q "Correlation coefficient\|[[:space:]]inf[[:space:]]" "$out" || return 0
		say "$tool could not calibrate its clock (attempt $attempt of 3)"
	done
	say "$tool gave no finite figures in 3 attempts"
	return 1
}

# Two sums of the port's hw_counters, read in one pass around every run of either tool, so both
# are judged by the same counters: the retransmission-related ones (rxe: completer_retry_err,
# duplicate_request, rcvd_seq_err, ...; mlx5: local_ack_timeout_err, out_of_sequence, ...), and
# of those the requester's retries alone (rxe: completer_retry_err; mlx5: local_ack_timeout_err):
# each one on Soft-RoCE is a wait of the QP's full timeout (4.096 us * 2^14 = 67 ms, both tools),
# which decides the 64 KiB rows there (docs/performance.md). Prints "RETX RETRIES".
# shellcheck disable=SC2016 # expanded by the shell that runs the snippet, not here
COUNTERS_SNIPPET='a=0; b=0; for f in "$1"/*; do n=${f##*/}; case $n in *retry*|*duplicate*|*seq*|*timeout*|*rnr*) read -r v <"$f" 2>/dev/null || continue; a=$((a + v)); case $n in completer_retry_err|local_ack_timeout_err) b=$((b + v)) ;; esac ;; esac; done; echo "$a $b"'
# counter_totals: "RETX RETRIES" on this node, or summed over both nodes with --hosts.
counter_totals() {
	local dir=/sys/class/infiniband/$DEV_NAME/ports/$DEV_PORT/hw_counters a=0 b=0 x y h
	if ((REMOTE == 0)); then
		sh -c "$COUNTERS_SNIPPET" sh "$dir" 2>/dev/null || echo "0 0"
		return
	fi
	for h in "$HOST_A" "$HOST_B"; do
		read -r x y <<<"$(on "$h" sh -c "$COUNTERS_SNIPPET" sh "$dir" 2>/dev/null || echo "0 0")"
		a=$((a + ${x:-0}))
		b=$((b + ${y:-0}))
	done
	echo "$a $b"
}

# Appends a sample: round row tool metric value
sample() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$SAMPLES"; }

# fabcheck's JSON -> samples (python: no jq needed).
fabcheck_samples() { # round row file
	python3 - "$@" <<'PY' >>"$SAMPLES"
import json, sys
rnd, row, path = sys.argv[1:4]
doc = json.load(open(path))
r = doc["results"][0]
if r.get("error"):
    sys.exit(f"fabcheck {row}: {r['error']}")
if r.get("lat_us"):
    print(f"{rnd}\t{row}\tfabcheck\tlat_us\t{r['lat_us']['p50']}")
    print(f"{rnd}\t{row}\tfabcheck\tlat_min_us\t{r['lat_us']['min']}")
    print(f"{rnd}\t{row}\tfabcheck\tlat_p99_us\t{r['lat_us']['p99']}")
else:
    print(f"{rnd}\t{row}\tfabcheck\tgbps\t{r['bw_gbps']}")
    print(f"{rnd}\t{row}\tfabcheck\tmpps\t{r['msg_rate_mpps']}")
PY
}

# perftest's result row (the first line starting with the size) -> samples.
perftest_samples() { # round row tool file
	local rnd=$1 row=$2 tool=$3 file=$4 size=${ROW_SIZE[$2]} line
	line=$(awk -v s="$size" '$1 == s && NF >= 5 { print; exit }' "$file")
	[[ -n $line ]] || { say "${ROW_TOOL[$row]}: no result row for $size B in its output"; return 1; }
	read -r -a f <<<"$line"
	if is_lat "$row"; then
		# #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
		sample "$rnd" "$row" "$tool" lat_us "${f[4]}"
		sample "$rnd" "$row" "$tool" lat_min_us "${f[2]}"
		sample "$rnd" "$row" "$tool" lat_p99_us "${f[7]:-nan}"
	else
		# #bytes #iterations BW_peak BW_average MsgRate. perftest prints the average with two
		# decimals: on Soft-RoCE (~0.25 Gb/s) a step of 4%, enough to move a ratio across 1.00.
		# The message rate (six decimals) comes from the same cycles, so the average is
		# MsgRate x size x 8 / 1000 Gb/s, to 0.2%; the printed figure is kept when the two do not
		# agree to its rounding (a perftest that counts otherwise).
		sample "$rnd" "$row" "$tool" gbps "$(awk -v avg="${f[3]}" -v rate="${f[4]}" -v size="$size" 'BEGIN {
			g = rate * size * 8 / 1000; d = g - avg; if (d < 0) d = -d
			if (rate > 0 && d <= 0.005 + avg * 0.01) printf "%.6f", g; else printf "%s", avg }')"
		sample "$rnd" "$row" "$tool" mpps "${f[4]}"
	fi
}

# ----------------------------------------------------------------------------- run

# GID indexes (and the CPUs fabcheck pins its loops to): as given, else the ones fabcheck picks
# (the first run also warms both tools' binaries up).
GID_A=${GID_INDEX:-}
GID_B=${GID_INDEX:-}
probe=$WORK/probe.json
fabcheck_run send_lat "$probe" || die "fabcheck could not run a first test on $DEVICE; see above"
read -r PROBE_GID_A PROBE_GID_B CPU_A CPU_B <<<"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = lambda s, k, none: none if d[s].get(k) is None else d[s][k]
print(v("a", "gid_index", 0), v("b", "gid_index", 0), v("a", "cpu", "-"), v("b", "cpu", "-"))' "$probe")" ||
	die "fabcheck's first test gave no endpoints; see $probe"
[[ -n $GID_INDEX ]] || { GID_A=$PROBE_GID_A; GID_B=$PROBE_GID_B; }
# perftest with matched settings runs where fabcheck's loops run (taskset, as perftest users pin).
PIN_A=()
PIN_B=()
RUN_PIN_A=()
RUN_PIN_B=()
if [[ $CPU_A != - && $CPU_B != - ]] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c "$CPU_A")
	PIN_B=(taskset -c "$CPU_B")
fi

where=$([[ $REMOTE -eq 1 ]] && echo "$HOST_A -> $HOST_B" || echo "$(hostname) (one node, loopback)")
say "device $DEVICE on $where; GID index a=$GID_A b=$GID_B; fabcheck's loops on CPUs a=$CPU_A b=$CPU_B; $ROUNDS rounds; perftest: ${PT_MODES[*]}"
for r in "${ROWS[@]}"; do
	for m in "${PT_MODES[@]}"; do
		say "  $r: fabcheck ${ROW_TEST[$r]} ${ROW_SIZE[$r]} B x $(row_iters "$r") | ${ROW_TOOL[$r]} ($m) $(perftest_flags "$r" "$m" | tr '\n' ' ')"
	done
done

TOOLS=(fabcheck)
for m in "${PT_MODES[@]}"; do TOOLS+=("perftest.$m"); done
started=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
	for r in "${ROWS[@]}"; do
		# Alternate the order, so warm caches or a drifting machine favour no tool.
		order=("${TOOLS[@]}")
		if ((round % 2 == 0)); then
			order=()
			for ((k = ${#TOOLS[@]} - 1; k >= 0; k--)); do order+=("${TOOLS[k]}"); done
		fi
		for tool in "${order[@]}"; do
			out=$WORK/$round.$r.$tool
			read -r retx_before retry_before <<<"$(counter_totals)"
			if [[ $tool == fabcheck ]]; then
				if fabcheck_run "$r" "$out" && fabcheck_samples "$round" "$r" "$out"; then :; else FAILED=1; fi
			else
				mode=${tool#perftest.}
				RUN_PIN_A=()
				RUN_PIN_B=()
				if [[ $mode == matched ]]; then RUN_PIN_A=("${PIN_A[@]}") RUN_PIN_B=("${PIN_B[@]}"); fi
				if perftest_run "$r" "$mode" "$out" &&
					perftest_samples "$round" "$r" "$tool" "$out"; then :; else FAILED=1; fi
			fi
			read -r retx_after retry_after <<<"$(counter_totals)"
			sample "$round" "$r" "$tool" retx $((retx_after - retx_before))
			sample "$round" "$r" "$tool" retries $((retry_after - retry_before))
		done
	done
	say "round $round/$ROUNDS done ($((SECONDS - started)) s)"
done

# ----------------------------------------------------------------------------- report

META=$(printf '%s\n' "device=$DEVICE" "where=$where" "rounds=$ROUNDS" "perftest_settings=${PT_MODES[*]}" \
	"cpus=a:$CPU_A b:$CPU_B" "load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" \
	"fabcheck=$("$FABCHECK" --version 2>/dev/null | head -n 1 || echo unknown)" \
	"perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo unknown)" \
	"kernel=$(uname -r)" "in_vm=${FABCHECK_IN_VM:-0}" "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)")
for r in "${ROWS[@]}"; do
	for m in "${PT_MODES[@]}"; do
		META+=$'\n'"row.$r.$m=${ROW_TEST[$r]} ${ROW_SIZE[$r]} B x $(row_iters "$r") | ${ROW_TOOL[$r]} $(perftest_flags "$r" "$m" | tr '\n' ' ')"
	done
done

COMPARE_META=$META python3 - "$SAMPLES" "$JSON_OUT" "${ROWS[*]}" "${PT_MODES[*]}" <<'PY'
import json, os, statistics, sys
samples_path, json_out, rows, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
meta = dict(l.split("=", 1) for l in os.environ["COMPARE_META"].splitlines() if "=" in l)
data = {}
for line in open(samples_path):
    rnd, row, tool, metric, value = line.rstrip("\n").split("\t")
    try:
        v = float(value)
    except ValueError:
        continue
    data.setdefault((row, metric), {}).setdefault(tool, {})[int(rnd)] = v

# (row, metric, machine name, what is compared, unit, lower is better)
lines = []
for row in rows:
    test = row.replace("_64", "")
    if row.endswith("_lat"):
        lines.append((row, "lat_us", row, f"{test} 2 B | ib_{test}", "us", True))
    elif row == "write_bw_64":
        lines.append((row, "gbps", row, f"{test} 64 B | ib_{test}", "Gb/s", False))
        lines.append((row, "mpps", row + "_rate", f"{test} 64 B rate | ib_{test}", "Mpps", False))
    else:
        lines.append((row, "gbps", row, f"{test} 64 KiB | ib_{test}", "Gb/s", False))

def mmm(vals):
    return (min(vals), statistics.median(vals), max(vals)) if vals else None

def fmt(t, digits):
    return "-" if t is None else "/".join(f"{v:.{digits}f}" for v in t)

summary, machine = [], []
for mode in modes:
    pt_tool = f"perftest.{mode}"
    hdr = f"{'fabcheck | perftest':<30} {'unit':<5} {'fabcheck min/med/max':<27} {'perftest min/med/max':<27} {'ratio min/med/max':<17} {'target':<7} mark"
    print()
    print(f"fabcheck vs perftest ({mode}) on {meta.get('device')}, {meta.get('where')}, {meta.get('rounds')} rounds, load {meta.get('load')}")
    print(hdr)
    print("-" * len(hdr))
    for row, metric, mname, name, unit, lower in lines:
        d = data.get((row, metric), {})
        fab, pt = d.get("fabcheck", {}), d.get(pt_tool, {})
        ratios = [fab[r] / pt[r] for r in sorted(fab) if r in pt and pt[r] > 0]
        f3, p3, r3 = mmm(list(fab.values())), mmm(list(pt.values())), mmm(ratios)
        digits = 6 if unit == "Mpps" else 3 if unit == "Gb/s" else 2
        target = "<= 1.00" if lower else ">= 1.00"
        mark = "FAILED" if r3 is None else "PASS" if (r3[1] <= 1.0 if lower else r3[1] >= 1.0) else "SHORT"
        print(f"{name:<30} {unit:<5} {fmt(f3, digits):<27} {fmt(p3, digits):<27} {fmt(r3, 2):<17} {target:<7} {mark}")
        summary.append({"row": row, "metric": metric, "perftest_settings": mode, "unit": unit, "target": target,
                        "fabcheck": dict(zip(("min", "median", "max"), f3)) if f3 else None,
                        "perftest": dict(zip(("min", "median", "max"), p3)) if p3 else None,
                        "ratio": dict(zip(("min", "median", "max"), r3)) if r3 else None,
                        "mark": mark, "rounds": len(ratios)})
        label = mname if mode == "defaults" else f"{mname}:{mode}"
        show = lambda t, k: "nan" if t is None else f"{t[1]:.{k}f}"
        machine.append(f"row={label} fabcheck={show(f3, digits + 1)} perftest={show(p3, digits + 1)} ratio={show(r3, 3)}")
tools = ["fabcheck"] + [f"perftest.{m}" for m in modes]
retx = {(row, t): sum(data.get((row, "retx"), {}).get(t, {}).values()) for row in rows for t in tools}
noisy = [row for row in rows if any(retx[(row, t)] for t in tools)]
print()
print("Latency: fabcheck p50 vs perftest t_typical (its median); send and write one-way, read round trip.")
print("Ratio: fabcheck/perftest within a round, median over rounds. Parity: <= 1.00 for latency (lower is")
print("better), >= 1.00 for bandwidth and message rate (higher is better).")
if noisy:
    print("Retransmission counters (hw_counters, all rounds) rose: " + ", ".join(
        f"{r} " + " ".join(f"{t} +{retx[(r, t)]:.0f}" for t in tools) for r in noisy) + ".")
# The requester's retries, median per run: on Soft-RoCE each is a 67 ms QP timeout, and a 64 KiB
# run's time is about that times their count, so a round's bandwidth ratio is mostly the ratio of
# two tools' retry counts (fabcheck's include its warm-up, a tenth more messages at 1024).
retries = {(row, t): list(data.get((row, "retries"), {}).get(t, {}).values()) for row in rows for t in tools}
slowed = [row for row in rows if any(retries[(row, t)] and statistics.median(retries[(row, t)]) for t in tools)]
if slowed:
    print("Requester retries (rxe completer_retry_err, mlx5 local_ack_timeout_err), median per run: " + ", ".join(
        f"{r} " + " ".join(f"{t} {statistics.median(retries[(r, t)]):g}" for t in tools if retries[(r, t)]) for r in slowed) + ".")
for k in sorted(meta):
    if k.startswith("row."):
        print(f"  {k[4:]}: {meta[k]}")
print(f"  {meta.get('fabcheck')}; perftest {meta.get('perftest')}; kernel {meta.get('kernel')}; fabcheck's CPUs {meta.get('cpus')}; {meta.get('date')}")
print()
print("\n".join(machine))
if json_out:
    raw = [dict(zip(("round", "row", "tool", "metric", "value"), l.rstrip("\n").split("\t"))) for l in open(samples_path)]
    with open(json_out, "w") as f:
        json.dump({"schema": "fabcheck.bench.compare.v2", "meta": meta, "summary": summary, "samples": raw}, f, indent=1)
        f.write("\n")
PY

if ((FAILED)); then
	say "at least one tool run failed (see above); the table holds what did run"
	exit 2
fi
exit 0
