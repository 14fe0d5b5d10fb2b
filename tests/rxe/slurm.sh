#!/usr/bin/env bash
# A real Slurm across the two guests of `soft-roce-setup.sh --vm --guests 2` (issue #45), run by
# tests/rxe/two-hosts.sh in guest 1, last. Debian's slurmctld, slurmd and munge (tests/deps.sh
# installs them on the host; the guests run the host's binaries), started here by hand (no systemd
# in a guest), every file they read or write under /tmp/fabcheck-slurm (the guests' / is the
# host's, read-only; /tmp and /run are each guest's own tmpfs):
#
#   1. A two-node cluster over rail 0: guest 1 runs slurmctld and slurmd, guest 2 slurmd, each
#      node named by its host name (fabcheck-vm-main, fabcheck-vm-peer) and reached by its
#      NodeAddr= (198.18.0.1, .2); the commands and munged still look names up, so each guest
#      binds an /etc/hosts naming both (and a resolver that fails at once) over the host's,
#      undone at the stop. One munge key, made here and copied to
#      guest 2 over ssh with the rest of the directory. slurm.conf is generated here and named by
#      SLURM_CONF; /run/slurm/conf leads to it as well, where Slurm's commands look when
#      SLURM_CONF is unset (slurmd runs HealthCheckProgram with SLURMD_NODENAME alone in its
#      environment, and NHC's helpers run scontrol and sinfo from there). No cgroups:
#      proctrack/linuxproc, task/none, select/cons_tres (slurmd's cgroup plugin still loads: a
#      cgroup2 mounted on /sys/fs/cgroup in each guest, IgnoreSystemd=yes in cgroup.conf).
#   2. `salloc -N2 fabcheck mesh --launcher srun NODE NODE ...`, and contrib/slurm/fabcheck-mesh.sbatch
#      under `sbatch -N2 --wait`: a two-node mesh on rxe0, each agent a job step (srun --overlap),
#      passing; then no agent and no step of the job is left on either node.
#   3. contrib/slurm/slurm-healthcheck.conf's lines (HealthCheckProgram, HealthCheckInterval,
#      HealthCheckNodeState; only the program's path and the interval are replaced, see
#      slurm_conf below) with HealthCheckProgram first the vendored LBNL NHC (tests/nhc/) running
#      contrib/nhc/fabcheck.nhc, then contrib/slurm/fabcheck-healthcheck.sh: guest 2's last rail
#      is taken down (its rxe port DOWN; with one rail, its rxe0 deleted), slurmd's health check
#      drains that node with fabcheck's line as the reason (`scontrol show node`), the other node
#      stays up; the port comes back and the same program resumes the node. Outside these two
#      tests the program is `true` (NHC every few seconds would starve the emulated guests).
#   4. `salloc -N2 fabcheck accept --level 2 --launcher srun` (issue #54): passes; with guest 2's
#      fault (as in 3) it fails naming that node and its rail, `--drain` drains it (sinfo -R shows
#      `fabcheck accept: ...`), then the fault is undone, the node resumed, nothing left running.
#   5. The daemons stopped as an init system stops them (SIGTERM, `munged -s`), none left on
#      either guest.
#
# Every step fails loudly (a daemon that does not start, a node that never registers, a mesh with
# no pair): nothing passes by finding nothing to test. The daemons' logs are printed on a failure.
#
# Usage, in guest 1 (ssh to guest 2 on PATH as tests/rxe/sshd.sh client sets it up, the agents'
# binary at the same plain path in both guests as two-hosts.sh copies it):
#   tests/rxe/slurm.sh FABCHECK_BINARY AGENT_BINARY
# Internal, in each guest: tests/rxe/slurm.sh start main|peer  and  tests/rxe/slurm.sh stop
set -euo pipefail

W=/tmp/fabcheck-slurm
say() { printf 'slurm: %s %s\n' "$(date +%T)" "$*" >&2; }
# A word for the remote shell (ssh runs the command line through guest 2's /bin/sh).
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# --------------------------------------------------------------------------- in each guest

# Starts this guest's daemons: munged, slurmctld (main only), slurmd. The files are in $W already.
node_start() {
	local role=$1 i f
	export SLURM_CONF=$W/etc/slurm.conf
	[[ -r $SLURM_CONF && -r $W/munge/munge.key ]] || { say "no $SLURM_CONF or munge key in this guest"; return 1; }
	# munged's default socket (/run/munge/munge.socket.2), which Slurm's auth/munge uses: the
	# directory must be searchable by all; the key's, the log's and the seed's writable by root only.
	# Names: slurmctld, srun, sbatch and munged look up both nodes' names and their own, and the
	# guests see the host's /etc/hosts and a name server they cannot reach (each lookup waited
	# for its timeout: most of a minute a job). A cluster's /etc/hosts, and a resolver that fails
	# at once, over the host's files in this guest's mount table (undone by `stop`).
	for f in hosts resolv.conf; do
		mount --bind "$W/etc/$f" "/etc/$f" || { say "cannot bind $W/etc/$f over /etc/$f in $(hostname)"; return 1; }
	done
	mkdir -p /run/munge /run/slurm
	chmod 755 /run/munge
	ln -sfn "$W/etc" /run/slurm/conf
	# slurmd 22.05 loads a cgroup plugin whatever ProctrackType and TaskPlugin say, and fails
	# without a cgroup filesystem: the guests mount none (no systemd), so cgroup v2 is mounted
	# here with the system.slice systemd would make, and cgroup.conf says IgnoreSystemd (slurmd
	# makes its slurmstepd scope there itself).
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup ||
		{ say "cannot mount cgroup2 on /sys/fs/cgroup in $(hostname)"; return 1; }
	mkdir -p /sys/fs/cgroup/system.slice
	munged --key-file="$W/munge/munge.key" --pid-file="$W/run/munged.pid" \
		--log-file="$W/log/munged.log" --seed-file="$W/munge/munged.seed" </dev/null >>"$W/log/munged.out" 2>&1 ||
		{ say "munged did not start on $(hostname):"; tail -n 5 "$W/log/munged.log" "$W/log/munged.out" >&2 2>/dev/null; return 1; }
	munge -n </dev/null | unmunge >/dev/null 2>&1 || { say "munge cannot encode and decode a credential on $(hostname)"; return 1; }
	if [[ $role == main ]]; then
		slurmctld </dev/null >>"$W/log/slurmctld.out" 2>&1 ||
			{ say "slurmctld did not start:"; tail -n 20 "$W/log/slurmctld.log" "$W/log/slurmctld.out" >&2 2>/dev/null; return 1; }
		for ((i = 0; i < 100; i++)); do
			scontrol ping 2>/dev/null | grep -q 'is UP' && break
			sleep 0.2
		done
		scontrol ping | grep -q 'is UP' || { say "slurmctld does not answer:"; tail -n 20 "$W/log/slurmctld.log" >&2; return 1; }
	fi
	slurmd </dev/null >>"$W/log/slurmd.out" 2>&1 ||
		{ say "slurmd did not start on $(hostname):"; tail -n 20 "$W/log/slurmd.log" "$W/log/slurmd.out" >&2 2>/dev/null; return 1; }
	say "$(hostname): munged$([[ $role == main ]] && echo ', slurmctld'), slurmd started"
}

# Stops what node_start started here as an init system would (SIGTERM to slurmd and slurmctld,
# `munged -s`), then waits (a deadline) until none of munged, slurmd, slurmctld or slurmstepd is
# left in this guest; fails, naming them, if any is.
node_stop() {
	local f pid i still
	for f in slurmd slurmctld; do
		[[ -s $W/run/$f.pid ]] || continue
		pid=$(<"$W/run/$f.pid")
		kill -TERM "$pid" 2>/dev/null || true
	done
	[[ -e /run/munge/munge.socket.2 ]] && { munged -s >/dev/null 2>&1 || true; }
	for ((i = 0; i < 100; i++)); do
		still=$(pgrep -a -x 'munged|slurmd|slurmctld|slurmstepd' || true)
		[[ -z $still ]] && break
		sleep 0.2
	done
	for f in /etc/resolv.conf /etc/hosts; do
		while grep -q " $f " /proc/self/mounts; do umount "$f" || break; done
	done
	[[ -z $still ]] && return 0
	say "$(hostname): still running 20 s after the stop: $(tr '\n' ' ' <<<"$still")"
	return 1
}

case ${1:-} in
start) node_start "${2:?start main|peer}"; exit ;;
stop) node_stop; exit ;;
esac

# --------------------------------------------------------------------------- in guest 1

bin=${1:?usage: tests/rxe/slurm.sh FABCHECK_BINARY AGENT_BINARY}
agent_bin=${2:?usage: tests/rxe/slurm.sh FABCHECK_BINARY AGENT_BINARY}
b=${FABCHECK_VM_PEER_ADDR:?run in guest 1 of soft-roce-setup.sh --vm --guests 2}
a=${FABCHECK_VM_ADDR:?run in guest 1 of soft-roce-setup.sh --vm --guests 2}
rails=${FABCHECK_VM_RAILS:-1}
checkout=$PWD
self="$checkout/tests/rxe/slurm.sh"
start=$SECONDS
# The test's health checks run every few seconds (the operator's file says 300): the drain and the
# resume are each seen within about two of them.
hc_interval=${FABCHECK_SLURM_HC_INTERVAL:-5}
peer() { ssh -T -o BatchMode=yes "root@$b" "$@"; }
fail() {
	say "FAIL: $*"
	exit 1
}
phase_start=$SECONDS
phase() { # NAME: the seconds since the last phase
	say "$1 ($((SECONDS - phase_start)) s)"
	phase_start=$SECONDS
}

for tool in munged munge unmunge mungekey slurmctld slurmd scontrol sinfo squeue srun salloc sbatch; do
	command -v "$tool" >/dev/null ||
		fail "no $tool: the Slurm tier needs Debian's slurmctld, slurmd, slurm-client and munge on the host (tests/deps.sh installs them)"
done
[[ -x $bin && -x $agent_bin ]] || fail "no fabcheck binary at $bin or $agent_bin"
[[ $agent_bin =~ ^/[A-Za-z0-9/._+-]+$ ]] || fail "the agents' binary must have a plain path (--remote-fabcheck): $agent_bin"
main_node=$(hostname -s)
peer_node=$(peer hostname -s) || fail "cannot reach guest 2 over ssh"
[[ $main_node != "$peer_node" ]] || fail "both guests are named $main_node"

# On any failure: every daemon's log from both guests, then the daemons stopped.
dump_logs() {
	local f
	for f in "$W"/log/*; do
		[[ -s $f ]] || continue
		say "---- guest 1 $f (last 40 lines)"
		tail -n 40 "$f" >&2
	done
	peer "for f in $W/log/*; do [ -s \"\$f\" ] || continue; echo \"slurm: ---- guest 2 \$f (last 40 lines)\"; tail -n 40 \"\$f\"; done" >&2 || true
}
finished=0
on_exit() {
	local rc=$?
	((finished)) && return
	((rc == 0)) && rc=1
	say "failed after $((SECONDS - start)) s; the daemons' logs:"
	dump_logs
	"$self" stop >/dev/null 2>&1 || true
	peer "$(shq "$self") stop" >/dev/null 2>&1 || true
	exit "$rc"
}
trap on_exit EXIT

# ---- the cluster's files, made here and copied to guest 2 (same paths, same contents)
rm -rf "$W"
mkdir -p "$W"/{etc,munge,log,run,state,spool,job,nhc/scripts,bin}
chmod 700 "$W/munge"
chmod 755 "$W" "$W"/{etc,log,run}
# The checkout's files by paths that hold no blank (NHC runs its helpers by unquoted variables;
# the checkout's path may hold a space): $W/src is the checkout, so every file below is the
# checked-in one, read where it lies.
ln -s "$checkout" "$W/src"
printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "$a" "$main_node" "$b" "$peer_node" >"$W/etc/hosts"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$W/etc/resolv.conf"
mungekey --create --keyfile="$W/munge/munge.key" || fail "mungekey could not make a key"

# The operator's health-check lines, from the very file contrib/slurm/README.md documents. Two
# values differ here, and the test fails if either line is not there to replace: the program's
# path (an installed one there; here the stand-in below, which runs the checked-in program) and
# the interval (300 s there; seconds here).
hc_conf=$checkout/contrib/slurm/slurm-healthcheck.conf
hc_lines=$(grep -E '^[[:space:]]*Health' "$hc_conf") || fail "no Health* lines in $hc_conf"
for key in HealthCheckProgram HealthCheckInterval HealthCheckNodeState; do
	[[ $(grep -c "^$key=" <<<"$hc_lines") == 1 ]] || fail "$hc_conf: want one $key= line, have: $hc_lines"
done
hc_lines=$(sed -e "s|^HealthCheckProgram=.*|HealthCheckProgram=$W/bin/healthcheck|" \
	-e "s|^HealthCheckInterval=.*|HealthCheckInterval=$hc_interval|" <<<"$hc_lines")

cat >"$W/etc/slurm.conf" <<EOF
# generated by tests/rxe/slurm.sh for the two Soft-RoCE guests
ClusterName=fabcheck
SlurmctldHost=$main_node($a)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
# no cgroup limits in the guests: track processes by /proc, bind no task
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=5
# emulated guests answer slowly
MessageTimeout=30
SlurmdTimeout=120
InactiveLimit=0
NodeName=$main_node NodeAddr=$a CPUs=1 State=UNKNOWN
NodeName=$peer_node NodeAddr=$b CPUs=1 State=UNKNOWN
PartitionName=fabcheck Nodes=ALL Default=YES MaxTime=30 State=UP
# contrib/slurm/slurm-healthcheck.conf
$hc_lines
EOF

cat >"$W/etc/cgroup.conf" <<EOF
# generated by tests/rxe/slurm.sh: slurmd's cgroup plugin on guests without systemd
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
EOF

# HealthCheckProgram: slurmd runs it with no arguments and SLURMD_NODENAME alone in its
# environment. $W/bin/healthcheck leads (in the drain tests) to one of two stand-ins for what
# an operator installs:
#  - nhc: /usr/sbin/nhc reading /etc/nhc/nhc.conf, here the vendored NHC with a scratch
#    configuration: NHC's common.nhc and contrib/nhc/fabcheck.nhc (the checked-in files) in its
#    scripts directory, and the line contrib/nhc/fabcheck.nhc documents;
#  - fabcheck-healthcheck: contrib/slurm/fabcheck-healthcheck.sh itself, told where its
#    /etc/default/fabcheck-healthcheck is (here $W/etc/fabcheck-healthcheck).
# Both find the binary in FABCHECK, as on a node whose fabcheck is not on NHC's PATH.
ln -s "$W/src/tests/nhc/scripts/common.nhc" "$W/nhc/scripts/common.nhc"
ln -s "$W/src/contrib/nhc/fabcheck.nhc" "$W/nhc/scripts/fabcheck.nhc"
# `--since 1s`: the port this test takes down and up is a link.flap in the kernel log for the
# default 24 h (issue #55: a flapped node stays drained for the window); here the window is one
# second so the resume is seen within the test, as an operator who accepts a flap would set it.
echo '* || check_fabcheck --since 1s' >"$W/nhc/nhc.conf"
cat >"$W/bin/nhc" <<EOF
#!/bin/bash
export FABCHECK=$agent_bin
exec /bin/bash $W/src/tests/nhc/nhc -D $W/nhc -c $W/nhc/nhc.conf -l $W/log/nhc.log -t 50 NHC_RM=slurm HELPERDIR=$W/src/tests/nhc/helpers
EOF
printf 'FABCHECK=%q\nFABCHECK_CHECK_ARGS="--since 1s"\n' "$agent_bin" >"$W/etc/fabcheck-healthcheck"
cat >"$W/bin/fabcheck-healthcheck" <<EOF
#!/bin/sh
FABCHECK_HEALTHCHECK_CONF=$W/etc/fabcheck-healthcheck exec $W/src/contrib/slurm/fabcheck-healthcheck.sh >>$W/log/fabcheck-healthcheck.log 2>&1
EOF
chmod 755 "$W/bin/nhc" "$W/bin/fabcheck-healthcheck"
# Until the drain tests, the program is `true`: NHC every few seconds on each node would take
# most of an emulated guest's one CPU from the jobs.
ln -s /bin/true "$W/bin/healthcheck"

tar -C / -cf - "${W#/}" | peer "rm -rf $W && tar -C / -xf -" || fail "cannot copy $W to guest 2"
export SLURM_CONF=$W/etc/slurm.conf
phase "the cluster's files made and copied to guest 2"

# ---- the daemons
"$self" start main || fail "the daemons did not start in guest 1"
peer "$(shq "$self") start peer" || fail "the daemons did not start in guest 2"
# Both nodes registered and idle (the health check runs once before slurmd registers).
node_state() { # NODE: State= of `scontrol show node NODE` (IDLE, IDLE+DRAIN, ...)
	scontrol show node "$1" 2>/dev/null | sed -n 's/^ *State=\([^ ]*\).*/\1/p' | head -n 1
}
node_reason() { # NODE: Reason= of `scontrol show node NODE`, the rest of its line
	scontrol show node "$1" 2>/dev/null | sed -n 's/^ *Reason=//p' | head -n 1
}
wait_for() { # SECONDS WHAT COMMAND...: polls COMMAND every second
	local limit=$1 what=$2 t=$SECONDS
	shift 2
	until "$@"; do
		((SECONDS - t < limit)) || { say "$what: not within $limit s"; return 1; }
		sleep 1
	done
}
idle() { # NODE: registered, idle, not drained
	local s
	s=$(node_state "$1")
	[[ $s == IDLE || $s == IDLE+* ]] && [[ $s != *DRAIN* && $s != *NOT_RESPONDING* ]]
}
both_idle() { idle "$main_node" && idle "$peer_node"; }
wait_for 90 "both nodes idle" both_idle || { sinfo -N >&2 || true; fail "the nodes did not register with slurmctld"; }
sinfo -N -l >&2
phase "two nodes up: $main_node and $peer_node idle"

# ---- mesh inside an allocation
# No agent and no step of the job left on either node once it ended (within a few seconds: the
# job's steps are killed when it ends).
# (pgrep: a scan of /proc with one tr per process takes most of a minute in an emulated guest.)
left_cmd="pgrep -c -f '/fabcheck agent\$|^slurmstepd' || true"
leftovers() { [[ $(sh -c "$left_cmd") == 0 && $(peer "$left_cmd") == 0 ]]; }
check_mesh() { # LABEL RC JSON
	python3 - "$@" "$main_node" "$peer_node" <<'PY'
import json, sys
label, rc, path, main, peer = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
problems = []
try:
    doc = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"slurm: {label}: no mesh document ({e})", file=sys.stderr)
    sys.exit(1)
if rc != 0:
    problems.append(f"exit {rc}, verdict {doc.get('verdict')}, suspects {doc.get('suspects')}")
if doc.get("schema") != "fabcheck.mesh.v1":
    problems.append(f"schema {doc.get('schema')}")
if doc.get("unreachable"):
    problems.append(f"unreachable {doc['unreachable']}")
first = [p for p in doc.get("pairs", []) if not p.get("retest")]
if len(first) != 1:
    problems.append(f"{len(first)} pairs, want 1")
for p in first:
    hosts = {p["a"].split("/")[0], p["b"].split("/")[0]}
    if hosts != {main, peer}:
        problems.append(f"pair {p['a']} <-> {p['b']}: not one endpoint on each node")
    ok = [r for r in p["results"] if not r.get("error")]
    if p.get("error") or len(ok) != 2:
        problems.append(f"pair {p['a']} <-> {p['b']}: {p.get('error')} {p['results']}")
    for r in ok:
        figure = r.get("bw_gbps") if r.get("bw_gbps") is not None else (r.get("lat_us") or {}).get("p50")
        print(f"slurm: {label}: {p['a']} <-> {p['b']} {r['test']} {r.get('direction', '')} {figure}", file=sys.stderr)
if problems:
    print(f"slurm: {label}: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"slurm: {label}: verdict {doc['verdict']}", file=sys.stderr)
PY
}
# A job's deadline: the mesh itself takes about 15 s in the emulated guests.
job_limit=180
mesh_flags=(--device rxe0 --remote-fabcheck "$agent_bin" --tests "write_bw,send_lat" --iters 40)

# As an operator runs it by hand: salloc runs the controller here, srun starts the agents.
set +e
timeout "$job_limit" salloc -N2 -t 10 "$bin" mesh --launcher srun "$main_node" "$peer_node" "${mesh_flags[@]}" --json >"$W/job/salloc-mesh.json"
rc=$?
set -e
say "salloc: exit $rc"
((rc != 124)) || fail "salloc did not end within $job_limit s"
check_mesh "salloc mesh" "$rc" "$W/job/salloc-mesh.json" || fail "salloc -N2 fabcheck mesh --launcher srun did not pass"
wait_for 20 "no agent or step left after the salloc job" leftovers || fail "agents or steps outlived the salloc job: here $(sh -c "$left_cmd"), guest 2 $(peer "$left_cmd")"
phase "salloc -N2 fabcheck mesh --launcher srun: passed, nothing left"

# As a batch job, with the operator's script (the controller in the batch step on the first node).
cd "$W/job"
set +e
jobid=$(FABCHECK=$agent_bin timeout "$job_limit" sbatch -N2 -t 10 --parsable --wait "$W/src/contrib/slurm/fabcheck-mesh.sbatch" "${mesh_flags[@]}")
rc=$?
set -e
cd "$checkout"
((rc != 124)) || fail "sbatch --wait did not end within $job_limit s"
jobid=${jobid%%;*}
[[ $jobid =~ ^[0-9]+$ ]] || fail "sbatch gave no job id (exit $rc): $jobid"
say "sbatch job $jobid: exit $rc; its output:"
sed 's/^/  /' "$W/job/fabcheck-mesh-$jobid.out" >&2 || true
check_mesh "sbatch mesh" "$rc" "$W/job/fabcheck-mesh-$jobid.json" || fail "contrib/slurm/fabcheck-mesh.sbatch did not pass"
[[ -s $W/job/fabcheck-mesh-$jobid.html ]] || fail "the batch job wrote no fabcheck-mesh-$jobid.html"
wait_for 20 "no agent or step left after the batch job" leftovers || fail "agents or steps outlived batch job $jobid: here $(sh -c "$left_cmd"), guest 2 $(peer "$left_cmd")"
[[ -z $(squeue -h) ]] || fail "jobs still queued: $(squeue)"
phase "sbatch -N2 contrib/slurm/fabcheck-mesh.sbatch: passed, nothing left"

# ---- a node drained by the health check, and resumed
# Guest 2's fault: its last rail's netdev down (rxeK's port DOWN), or with one rail (whose link
# carries Slurm itself) its rxe0 deleted.
if ((rails >= 2)); then
	k=$((rails - 1))
	fault_on="ip link set eth$k down"
	fault_off="ip link set eth$k up && i=0 && until grep -q ACTIVE /sys/class/infiniband/rxe$k/ports/1/state; do i=\$((i+1)); [ \$i -lt 100 ] || exit 1; sleep 0.1; done"
	fault="eth$k down (rxe$k's port DOWN)"
else
	fault_on="rdma link delete rxe0"
	fault_off="rdma link add rxe0 type rxe netdev eth0 && i=0 && until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do i=\$((i+1)); [ \$i -lt 100 ] || exit 1; sleep 0.1; done"
	fault="rxe0 deleted"
fi
drained() { # NODE REASON_PREFIX
	local s r
	s=$(node_state "$1")
	r=$(node_reason "$1")
	[[ $s == *DRAIN* && $r == "$2"* ]]
}
resumed() { # NODE
	idle "$1" && [[ -z $(node_reason "$1") ]]
}
drain_and_resume() { # PROGRAM LEADER: the drain reason starts with LEADER and fabcheck's line, subject first
	local program=$1 leader=$2 line reason rest t
	idle "$peer_node" || fail "$peer_node is not idle before $program runs: $(node_state "$peer_node") $(node_reason "$peer_node")"
	# In one ssh session (each takes seconds in the emulated guests): the fault, then what the
	# program must say, fabcheck's own line on guest 2 now (the program is still `true`: nothing
	# else runs there), then the program on guest 2; here too (the healthy node must stay up).
	line=$(peer "$fault_on >&2 || { echo 'cannot make the fault'; exit 0; }; $agent_bin check --format oneline; ln -sfn $program $W/bin/healthcheck >&2" || true)
	ln -sfn "$program" "$W/bin/healthcheck"
	[[ $line == "fabcheck check FAIL: "* ]] || fail "fabcheck check does not fail on guest 2 with $fault ($fault_on): $line"
	# The reason the contrib scripts make of it (issue #57): `fabcheck: SUBJECT ID: MESSAGE`.
	rest=${line#fabcheck check FAIL: }
	reason="fabcheck: ${rest%%: *} ${rest#*: }"
	t=$SECONDS
	wait_for $((6 * hc_interval + 60)) "$peer_node drained by $program" drained "$peer_node" "$leader${reason:0:120}" ||
		fail "$program did not drain $peer_node with fabcheck's line ($leader$reason): $(scontrol show node "$peer_node")"
	say "$program drained $peer_node in $((SECONDS - t)) s; scontrol show node $peer_node:"
	scontrol show node "$peer_node" | grep -E '^ *(NodeName|State|Reason)=' | sed 's/^/  /' >&2
	idle "$main_node" || fail "$main_node is not up while only $peer_node failed: $(node_state "$main_node") $(node_reason "$main_node")"
	[[ -z $(node_reason "$main_node") ]] || fail "$main_node has a reason: $(node_reason "$main_node")"
	peer "$fault_off" || fail "cannot undo the fault on guest 2 ($fault_off)"
	t=$SECONDS
	wait_for $((6 * hc_interval + 60)) "$peer_node resumed by $program" resumed "$peer_node" ||
		fail "$program did not resume $peer_node: $(scontrol show node "$peer_node")"
	say "$program resumed $peer_node in $((SECONDS - t)) s: $(node_state "$peer_node")"
	ln -sfn /bin/true "$W/bin/healthcheck"
	peer "ln -sfn /bin/true $W/bin/healthcheck"
}
drain_and_resume nhc "NHC: "
phase "HealthCheckProgram NHC with contrib/nhc/fabcheck.nhc: drained $peer_node on $fault, resumed it"
drain_and_resume fabcheck-healthcheck ""
phase "HealthCheckProgram contrib/slurm/fabcheck-healthcheck.sh: drained $peer_node on $fault, resumed it"

# ---- fabcheck accept --level 2 inside an allocation (issue #54): both nodes pass; with guest 2's
# fault (its last rail down) it fails naming that node and rail, --drain drains it (sinfo shows
# the reason), the fault is undone and the node resumed, nothing left running.
# Two rails keep it short: rail 0 and the last, the one the fault takes down (one rail: rxe0).
accept_rails=rxe0
((rails >= 2)) && accept_rails="rxe0,rxe$((rails - 1))"
accept_flags=(--level 2 --launcher srun --remote-fabcheck "$agent_bin" --rails "$accept_rails" --iters 40 --no-progress)
check_accept() { # LABEL RC JSON WANT: pass, or fail naming guest 2 (and its rail rxeK where K is given)
	python3 - "$@" "$main_node" "$peer_node" <<'PY'
import json, sys
label, rc, path, want, rail, main, peer = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
problems = []
try:
    doc = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"slurm: {label}: no accept document ({e})", file=sys.stderr)
    sys.exit(1)
nodes = {n["host"]: n for n in doc.get("nodes", [])}
stages = [(s["name"], s["verdict"], s.get("skipped") or s.get("error") or "") for s in doc.get("stages", [])]
for name, verdict, note in stages:
    print(f"slurm: {label}: stage {name}: {verdict} {note}", file=sys.stderr)
if doc.get("schema") != "fabcheck.accept.v1" or doc.get("level") != 2:
    problems.append(f"schema {doc.get('schema')} level {doc.get('level')}")
if [s[0] for s in stages] != ["check", "drift", "pair", "fabric"]:
    problems.append(f"stages {stages}")
if sorted(nodes) != sorted([main, peer]):
    problems.append(f"nodes {sorted(nodes)}, want {main} and {peer}")
pair = next((s for s in doc.get("stages", []) if s["name"] == "pair"), {})
pairs = (pair.get("document") or {}).get("pairs", []) if isinstance(pair.get("document"), dict) else []
if not pairs:
    problems.append("the pair stage measured no pair")
errors = lambda host: [f"{f['id']} {f['subject']}" for f in nodes.get(host, {}).get("findings", []) if f["severity"] == "error"]
if want == "pass":
    if rc != 0 or doc.get("verdict") != "pass":
        problems.append(f"exit {rc}, verdict {doc.get('verdict')}, errors {errors(main)} {errors(peer)}, drain {doc.get('drain')}")
else:
    if rc != 1 or doc.get("verdict") != "fail":
        problems.append(f"exit {rc}, verdict {doc.get('verdict')}, want 1 and fail")
    if nodes.get(main, {}).get("verdict") != "pass":
        problems.append(f"{main} does not pass: {errors(main)}")
    if nodes.get(peer, {}).get("verdict") != "fail":
        problems.append(f"{peer} does not fail")
    # The pair ring's own finding, not only check's: pair.rail HOST/rxeK.
    if rail and not any(e.startswith("pair.rail ") and e.endswith(rail) for e in errors(peer)):
        problems.append(f"no pair.rail error of {peer} names {rail}: {errors(peer)}")
    if [d["host"] for d in doc.get("drain", [])] != [peer]:
        problems.append(f"drain list {doc.get('drain')}, want {peer} alone")
    print(f"slurm: {label}: {peer}: {errors(peer)}", file=sys.stderr)
if problems:
    print(f"slurm: {label}: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"slurm: {label}: verdict {doc['verdict']}, drain {[d['host'] for d in doc.get('drain', [])]}", file=sys.stderr)
PY
}
set +e
timeout "$job_limit" salloc -N2 -t 10 "$bin" accept "$main_node" "$peer_node" "${accept_flags[@]}" --json >"$W/job/accept-pass.json"
rc=$?
set -e
((rc != 124)) || fail "salloc accept did not end within $job_limit s"
check_accept "accept --level 2" "$rc" "$W/job/accept-pass.json" pass "" || fail "salloc -N2 fabcheck accept --level 2 did not pass"
wait_for 20 "no agent or step left after the accept job" leftovers || fail "agents or steps outlived the accept job: here $(sh -c "$left_cmd"), guest 2 $(peer "$left_cmd")"
phase "salloc -N2 fabcheck accept --level 2 --launcher srun: passed, nothing left"
peer "$fault_on" || fail "cannot make the fault on guest 2 ($fault_on)"
set +e
timeout "$job_limit" salloc -N2 -t 10 "$bin" accept "$main_node" "$peer_node" "${accept_flags[@]}" --drain --json >"$W/job/accept-fail.json"
rc=$?
set -e
((rc != 124)) || fail "salloc accept --drain did not end within $job_limit s"
rail_name=""
((rails >= 2)) && rail_name="rxe$k"
check_accept "accept --level 2 --drain, $fault" "$rc" "$W/job/accept-fail.json" fail "$rail_name" ||
	fail "accept --level 2 did not fail naming $peer_node ${rail_name:-} and drain it alone"
sinfo_reason() { sinfo -h -N -R -n "$peer_node" -o '%E' 2>/dev/null | head -n 1; }
accept_drained() { [[ $(sinfo_reason) == "fabcheck accept: "* ]] && drained "$peer_node" "fabcheck accept: "; }
wait_for 30 "$peer_node drained by accept --drain" accept_drained || fail "accept --drain did not drain $peer_node: $(scontrol show node "$peer_node")"
say "sinfo -R: $peer_node: $(sinfo_reason)"
idle "$main_node" || fail "$main_node is not up while only $peer_node failed: $(node_state "$main_node") $(node_reason "$main_node")"
peer "$fault_off" || fail "cannot undo the fault on guest 2 ($fault_off)"
scontrol update nodename="$peer_node" state=resume || fail "scontrol could not resume $peer_node"
wait_for 30 "$peer_node resumed after accept's drain" resumed "$peer_node" || fail "$peer_node was not resumed: $(scontrol show node "$peer_node")"
wait_for 20 "no agent or step left after the accept --drain job" leftovers || fail "agents or steps outlived the accept job: here $(sh -c "$left_cmd"), guest 2 $(peer "$left_cmd")"
[[ -z $(squeue -h) ]] || fail "jobs still queued: $(squeue)"
phase "accept --level 2 --drain with $fault: failed naming $peer_node ${rail_name:-}, drained it, resumed, nothing left"

# ---- stop
peer "$(shq "$self") stop" || fail "daemons left in guest 2"
"$self" stop || fail "daemons left in guest 1"
phase "slurmctld, both slurmds and both munged stopped, none left"
finished=1
say "1 passed, 0 failed ($((SECONDS - start)) s in all)"
