#!/usr/bin/env bash
# benches/mesh-scale.sh - the real `fabcheck mesh` controller (hub, protocol, analysis) against N
# simulated agents on loopback (examples/mesh_sim.rs: one process, one thread), with optional
# injected faults. Prints what the controller cost; the last line is the contract's:
#   endpoints=N pairs=P rounds=R controller_cpu_s=X peak_rss_mb=Y analysis_ms=Z wall_s=W
# pairs counts every pair measured (first pass, zoom-in and re-tests); rounds the first pass's.
# controller_cpu_s and peak_rss_mb are the mesh process's (user+system, and maximum resident
# set, from /usr/bin/time); analysis_ms is its own `timing.analysis_ms`; wall_s the mesh's run.
set -euo pipefail

PROG=mesh-scale.sh

usage() {
	cat <<'EOF'
Usage: benches/mesh-scale.sh --endpoints N [--pattern P] [--rounds R] [--topology] [--leaf-size S]
                             [--slow-node I] [--slow-link I:J] [--slow-uplink L] [--flaky I:J]
                             [--faults] [--keep DIR] [--no-build] [-- MESH_FLAGS...]

--pattern: all-pairs, shift, ring or random:K (default: mesh's own default for N).
--topology: hand the mesh the simulated fabric's ibnetdiscover file (leaves of --leaf-size
  endpoints, 32 by default, under two spines).
--faults: inject one of each (a slow node, a slow link, a flaky pair, and with --topology a slow
  leaf uplink) at fixed places, and print the suspects.
--keep DIR: keep the mesh's JSON, the hostfile and the topology there.
Anything after -- goes to `fabcheck mesh` (e.g. --tests write_bw).
Builds with CARGO_BUILD_JOBS=1 unless --no-build. Exit 0, or 2 when something could not run.
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
	say "error: $*"
	exit 2
}

ENDPOINTS=
PATTERN=
ROUNDS=
TOPOLOGY=0
LEAF_SIZE=32
FAULTS=0
KEEP=
BUILD=1
SIM_FLAGS=()
MESH_FLAGS=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--endpoints) ENDPOINTS=${2:?}; shift 2 ;;
	--pattern) PATTERN=${2:?}; shift 2 ;;
	--rounds) ROUNDS=${2:?}; shift 2 ;;
	--topology) TOPOLOGY=1; shift ;;
	--leaf-size) LEAF_SIZE=${2:?}; shift 2 ;;
	--slow-node | --slow-link | --slow-uplink | --flaky) SIM_FLAGS+=("$1" "${2:?}"); shift 2 ;;
	--faults) FAULTS=1; shift ;;
	--keep) KEEP=${2:?}; shift 2 ;;
	--no-build) BUILD=0; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; MESH_FLAGS+=("$@"); break ;;
	*) usage >&2; exit 2 ;;
	esac
done
[[ $ENDPOINTS =~ ^[0-9]+$ && $ENDPOINTS -ge 2 ]] || die "--endpoints N (at least 2)"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [[ $BUILD == 1 ]]; then
	CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} cargo build --release --quiet --bin fabcheck --example mesh_sim || die "build failed"
fi
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
FABCHECK=$TARGET/release/fabcheck
SIM=$TARGET/release/examples/mesh_sim
[[ -x $FABCHECK && -x $SIM ]] || die "build first: cargo build --release --bin fabcheck --example mesh_sim"

if [[ $FAULTS == 1 ]]; then
	# One of each, apart: the slow link and the flaky pair go on the first pair their endpoint is
	# measured in that no other fault touches (I:?), so every pattern measures them; the uplink is
	# the second leaf's.
	SIM_FLAGS+=(--slow-node $((ENDPOINTS / 3)) --slow-link "$((ENDPOINTS / 2)):?" --flaky "$((ENDPOINTS * 2 / 3)):?")
	if [[ $TOPOLOGY == 1 ]]; then
		SIM_FLAGS+=(--slow-uplink 1)
	fi
fi

WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK"
rm -f "$WORK/hosts" "$WORK/mesh.json" "$WORK/time"
SIM_PID=
cleanup() {
	if [[ -n $SIM_PID ]]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; fi
	if [[ -z $KEEP ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Both processes hold a descriptor per agent: raise the soft limit as far as the hard one goes.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$SIM" --agents "$ENDPOINTS" --hostfile "$WORK/hosts" --topology "$WORK/topology" --leaf-size "$LEAF_SIZE" "${SIM_FLAGS[@]}" &
SIM_PID=$!
for _ in $(seq 1 600); do
	[[ -s $WORK/hosts ]] && break
	kill -0 "$SIM_PID" 2>/dev/null || die "mesh_sim ended before listening"
	sleep 0.1
done
[[ -s $WORK/hosts ]] || die "mesh_sim did not start listening within a minute"

ARGS=(mesh --hostfile "$WORK/hosts" --json --fanout 256)
[[ -n $PATTERN ]] && ARGS+=(--pattern "$PATTERN")
[[ -n $ROUNDS ]] && ARGS+=(--rounds "$ROUNDS")
[[ $TOPOLOGY == 1 ]] && ARGS+=(--topology "$WORK/topology")
ARGS+=(--tests "write_bw,send_lat" "${MESH_FLAGS[@]}")
say "fabcheck ${ARGS[*]}"
START=$(date +%s.%N)
STATUS=0
/usr/bin/time -f '%U %S %M' -o "$WORK/time" "$FABCHECK" "${ARGS[@]}" >"$WORK/mesh.json" || STATUS=$?
END=$(date +%s.%N)
# Exit 1 is a mesh that found suspects: expected with faults.
[[ $STATUS -le 1 ]] || die "fabcheck mesh exited $STATUS (see above)"

read -r USER_S SYS_S MAXRSS_KB < <(tail -n 1 "$WORK/time")
python3 - "$WORK/mesh.json" "$USER_S" "$SYS_S" "$MAXRSS_KB" "$START" "$END" "$ENDPOINTS" <<'EOF'
import json, sys
path, user, sys_s, rss_kb, start, end, n = sys.argv[1:]
doc = json.load(open(path))
# Suspects by simulated host (n00042 is agent 42), not by loopback port.
hosts = {line.strip(): f"n{i:05}" for i, line in enumerate(open(path.rsplit("/", 1)[0] + "/hosts"))}
def named(text):
    for word in set(text.replace("<->", " ").split()):
        if word in hosts:
            text = text.replace(word, hosts[word])
    return text
pairs = len(doc["pairs"])
first = sum(1 for p in doc["pairs"] if not p.get("retest") and not p.get("zoom"))
zoom = sum(1 for p in doc["pairs"] if p.get("zoom"))
retest = sum(1 for p in doc["pairs"] if p.get("retest"))
pattern = doc.get("pattern", {})
cpu = float(user) + float(sys_s)
print(f"pattern {pattern.get('name')}: {first} pairs in {pattern.get('rounds')} rounds, {zoom} zoom-in, {retest} re-tested; "
      f"controller user {float(user):.2f} s, system {float(sys_s):.2f} s, {1000 * cpu / max(pairs, 1):.3f} ms per pair")
for s in doc["suspects"]:
    print(f"SUSPECT {s['kind']:<6} {named(s['subject'])}  {s['reason']}")
print(f"endpoints={n} pairs={pairs} rounds={pattern.get('rounds')} controller_cpu_s={cpu:.2f} "
      f"peak_rss_mb={int(rss_kb) / 1024:.0f} analysis_ms={doc.get('timing', {}).get('analysis_ms', 0):.0f} "
      f"wall_s={float(end) - float(start):.1f}")
EOF
