#!/bin/sh
# Guest 1 of `soft-roce-setup.sh --vm --guests 2`: a real two-host RoCE pair. Both agents are
# `fabcheck serve` (guest 2's is started by --peer-cmd); the controller runs here and reaches
# both over TCP with the shared token; traffic crosses the virtual link between the guests.
# Usage: tests/rxe/two-hosts.sh FABCHECK_BINARY
set -eu
bin=$1
: "${FABCHECK_TOKEN:?the token is passed to both guests in FABCHECK_TOKEN}"
a=${FABCHECK_VM_ADDR:-198.18.0.1}
b=${FABCHECK_VM_PEER_ADDR:-198.18.0.2}
"$bin" serve --listen "$a:18515" --max-sessions 1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
# Both servers must be listening; the peer guest starts its own before this script runs.
python3 -c '
import socket, sys, time
for _ in range(40):
    try:
        socket.create_connection((sys.argv[1], 18515), 1).close(); sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit("two-hosts: the peer guest never listened on " + sys.argv[1])' "$b"
out=/tmp/two-hosts.json
set +e
"$bin" pair "tcp://$a:18515" "tcp://$b:18515" --device rxe0 --tests all --iters 40 --direction both --json >"$out"
rc=$?
set -e
python3 - "$out" "$rc" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
problems = []
if rc != 0:
    problems.append(f"exit code {rc}, findings {doc.get('findings')}")
if doc["schema"] != "fabcheck.pair.v1":
    problems.append("schema")
if doc["a"]["host"] == doc["b"]["host"]:
    problems.append("both ends on one host: " + doc["a"]["host"])
tests = {(r["test"], r["direction"]) for r in doc["results"] if not r.get("error")}
want = {(t, "a->b") for t in ["send_lat", "write_lat", "read_lat", "write_bw", "read_bw", "send_bw"]}
want |= {(t, "b->a") for t in ["write_bw", "read_bw", "send_bw"]}
missing = want - tests
if missing:
    problems.append(f"missing results {sorted(missing)}")
for r in doc["results"]:
    summary = r.get("lat_us", {}).get("p50") if r.get("lat_us") else r.get("bw_gbps")
    print(f"two-hosts: {r['test']:<9} {r['direction']:<5} {r['size']:>6} B  {summary}", file=sys.stderr)
if problems:
    print("two-hosts: 0 passed, 1 failed:", "; ".join(problems))
    sys.exit(1)
print(f"two-hosts: {doc['a']['host']} <-> {doc['b']['host']}: {len(doc['results'])} results, verdict {doc['verdict']}")
print("1 passed, 0 failed")
PY
