#!/bin/sh
# Guest 1 of `soft-roce-setup.sh --vm --guests 2`: a real two-host RoCE pair. Both agents are
# `fabcheck serve` (guest 2's is started by --peer-cmd); the controller runs here and reaches
# both over TCP with the shared token; traffic crosses the virtual link between the guests.
# Then the same over real ssh (guest 2 runs sshd, see tests/rxe/sshd.sh): a pair, and a mesh
# mixing local, ssh and tcp agents on both hosts. On guests booted with `--rails N` (N links, rxeK
# on ethK), last the rails tests: `tests/rxe/run.sh --rails RXE_TEST_BINARY` (tests/rxe/rails.rs:
# pair and mesh --rails across the guests over ssh, and pair --rails inside guest 1). Last, a real
# two-node Slurm across the guests (tests/rxe/slurm.sh).
#
# With --paths it runs only the --paths tests (tests/rxe/paths.rs), over the same ssh client and
# agents' copy, on guests of their own: run-all boots a fresh pair for them (a router namespace's
# virtio links, run after six minutes of the rest of this tier, stalled in qemu more often than on
# a fresh boot, where they passed 11 of 13; see docs/ci.md).
# Usage: tests/rxe/two-hosts.sh [--paths] FABCHECK_BINARY [RXE_TEST_BINARY]
set -eu
only_paths=0
if [ "${1:-}" = --paths ]; then
	only_paths=1
	shift
fi
bin=$1
rxe_bin=${2:-}
if [ "${FABCHECK_VM_RAILS:-1}" -ge 2 ] && [ ! -x "$rxe_bin" ]; then
	echo "two-hosts: the guests have $FABCHECK_VM_RAILS rails: pass the rxe test binary as the second argument" >&2
	exit 2
fi
: "${FABCHECK_TOKEN:?the token is passed to both guests in FABCHECK_TOKEN}"
a=${FABCHECK_VM_ADDR:-198.18.0.1}
b=${FABCHECK_VM_PEER_ADDR:-198.18.0.2}

# Real ssh: the key and an ssh that reads our config; guest 2's sshd was started before its serve.
# The agents' binary at one plain path on both guests: --remote-fabcheck takes letters, digits and
# /._-+ only (the remote shell would split a checkout's path such as `/tmp/a b/fabcheck`). Each
# guest copies it from the checkout it mounts at the same path (guest 2 over ssh), to its own /tmp.
# The rails and paths tests (tests/rxe/{rails,paths}.rs) find it in FABCHECK_REMOTE_BIN.
remote_setup() {
	: "${FABCHECK_SSHD_DIR:?the unpacked sshd and keys (tests/rxe/sshd.sh prepare) are passed in FABCHECK_SSHD_DIR}"
	PATH=$(tests/rxe/sshd.sh client "$FABCHECK_SSHD_DIR"):$PATH
	export PATH
	remote_dir=/tmp/fabcheck-remote-bin
	FABCHECK_REMOTE_BIN=$remote_dir/fabcheck
	export FABCHECK_REMOTE_BIN
	mkdir -p "$remote_dir"
	cp "$bin" "$FABCHECK_REMOTE_BIN"
	ssh -T -o BatchMode=yes "root@$b" "mkdir -p $remote_dir && cp $(shq "$bin") $FABCHECK_REMOTE_BIN" ||
		{ echo "two-hosts: cannot copy $bin to $FABCHECK_REMOTE_BIN on the peer guest" >&2; exit 1; }
}
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
# --paths across two equal-cost routed paths (issue #56, tests/rxe/paths.rs): it takes rails 1 and
# 2 into a router namespace in each guest and gives them back.
if [ "$only_paths" = 1 ]; then
	[ "${FABCHECK_VM_RAILS:-1}" -ge 3 ] || { echo "two-hosts --paths: boot with --rails 3 or more" >&2; exit 2; }
	remote_setup
	exec "$rxe_bin" --test-threads=1 paths::
fi
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
PY

remote_setup
set +e
"$bin" pair localhost/rxe0 "root@$b/rxe0" --remote-fabcheck "$FABCHECK_REMOTE_BIN" --tests send_lat,write_bw --iters 40 --direction both --json >/tmp/ssh-pair.json
rc_pair=$?
"$bin" mesh localhost/rxe0 "root@$b/rxe0" "tcp://$b:18515/rxe0" localhost/rxe0 --remote-fabcheck "$FABCHECK_REMOTE_BIN" \
	--tests write_bw,send_lat --iters 40 --json >/tmp/ssh-mesh.json
rc_mesh=$?
set -e
# Every process whose command line is "<some path>/fabcheck agent": agents left behind, started
# by ssh (the copy) or here (the checkout's binary, by the path it runs from). No path in the
# pattern: the checkout's may hold what grep or the remote shell would read as their own.
agents_cmd="for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <\$f 2>/dev/null; echo; done | grep -c '/fabcheck agent \$' || true"
left_here=$(sh -c "$agents_cmd")
left_there=$(ssh -T -o BatchMode=yes "root@$b" "$agents_cmd")
python3 - "$rc_pair" "$rc_mesh" "$left_here" "$left_there" <<'PY'
import json, sys
rc_pair, rc_mesh = int(sys.argv[1]), int(sys.argv[2])
problems = []
pair = json.load(open("/tmp/ssh-pair.json"))
if rc_pair != 0:
    problems.append(f"pair over ssh: exit {rc_pair}, findings {pair.get('findings')}")
if pair["a"]["host"] == pair["b"]["host"]:
    problems.append("pair over ssh: both ends on one host")
if len([r for r in pair["results"] if not r.get("error")]) != 4:
    problems.append(f"pair over ssh: results {pair['results']}")
mesh = json.load(open("/tmp/ssh-mesh.json"))
first = [p for p in mesh["pairs"] if not p.get("retest")]
if rc_mesh not in (0, 1):
    problems.append(f"mesh: exit {rc_mesh}")
if mesh.get("unreachable"):
    problems.append(f"mesh: unreachable {mesh['unreachable']}")
if len(first) != 6:
    problems.append(f"mesh: {len(first)} pairs, want 6")
for p in first:
    ok = [r for r in p["results"] if not r.get("error")]
    if p.get("error") or len(ok) != 2:
        problems.append(f"mesh pair {p['a']} <-> {p['b']}: {p.get('error')} {p['results']}")
    else:
        print(f"two-hosts: mesh {p['a']:<26} <-> {p['b']:<26} {ok[0]['bw_gbps']} Gb/s", file=sys.stderr)
if sys.argv[3].strip() != "0" or sys.argv[4].strip() != "0":
    problems.append(f"agents left running: {sys.argv[3]!r} here, {sys.argv[4]!r} on the peer")
if problems:
    print("two-hosts: 0 passed, 1 failed:", "; ".join(problems))
    sys.exit(1)
print(f"two-hosts: over ssh, pair {pair['a']['host']} <-> {pair['b']['host']} and a 4-endpoint mesh (local, ssh, tcp): verdict {mesh['verdict']}")
print("1 passed, 0 failed")
PY

# --tclass on the wire (issue #42): tcpdump on this guest's link sees each RoCE v2 packet's ToS
# byte (tests/rxe/qos.rs, two_hosts: against guest 2's `fabcheck serve`).
if [ -x "$rxe_bin" ]; then
	"$rxe_bin" --test-threads=1 qos::two_hosts
fi

# Rails (issue #29): the ssh client set up above reaches guest 2 for the agents of each rail;
# the sessions of one host share one ssh login (src/control/ssh_share.rs). The token-bucket
# faults (tests/rxe/rails_shaped.rs) route their rail through a namespace (tests/rxe/shaped-rail.sh):
# a bucket on rxe's own netdev panicked Debian 6.1's kernel (packets still held in it keep a
# pointer to their QP's socket, freed when the QP is destroyed), a routed packet is orphaned.
if [ "${FABCHECK_VM_RAILS:-1}" -ge 2 ]; then
	tests/rxe/run.sh --rails "$rxe_bin"
fi

# A real Slurm across the two guests (issue #45, tests/rxe/slurm.sh): slurmctld here, a slurmd in
# each guest, munge; `mesh --launcher srun` under salloc and under contrib/slurm/fabcheck-mesh.sbatch,
# and a node drained and resumed by HealthCheckProgram (NHC with contrib/nhc/fabcheck.nhc, then
# contrib/slurm/fabcheck-healthcheck.sh) on a port taken down. Last: it needs the ssh client and the
# agents' copy above, and leaves no daemon behind.
tests/rxe/slurm.sh "$bin" "$FABCHECK_REMOTE_BIN"
