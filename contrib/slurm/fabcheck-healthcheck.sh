#!/usr/bin/env bash
# Slurm HealthCheckProgram: runs `fabcheck check --format oneline` and drains this node with the
# first error as the reason; resumes it once the check passes again, but only a node that this
# script drained (its reason starts with "fabcheck"), never one an admin drained. See README.md.
#
# Flags for `fabcheck check` come from the command line, else from FABCHECK_CHECK_ARGS, which
# /etc/default/fabcheck-healthcheck may set (e.g. FABCHECK_CHECK_ARGS="--profile /etc/fabcheck/hdr.profile").
# As a string it is split at blanks; set there as an array, each element stays one flag or value
# (a path that holds a space: FABCHECK_CHECK_ARGS=(--profile "/etc/fabcheck/hdr fabric.profile")).
# FABCHECK names the binary (default: fabcheck on PATH), SCONTROL scontrol's, NODENAME the Slurm
# node name (default: SLURMD_NODENAME, which slurmd sets for its HealthCheckProgram, else the short
# host name). FABCHECK_HEALTHCHECK_DRY_RUN=1 prints the scontrol
# command instead of running it. Exits 0 when the node is healthy, 1 when it drained it.
set -uo pipefail

conf=${FABCHECK_HEALTHCHECK_CONF:-/etc/default/fabcheck-healthcheck}
# shellcheck source=/dev/null
[[ -r $conf ]] && . "$conf"
fabcheck=${FABCHECK:-fabcheck}
scontrol=${SCONTROL:-scontrol}
node=${NODENAME:-${SLURMD_NODENAME:-$(hostname -s)}}

if [[ $# -gt 0 ]]; then
	args=("$@")
elif [[ $(declare -p FABCHECK_CHECK_ARGS 2>/dev/null) == "declare -a"* ]]; then
	args=("${FABCHECK_CHECK_ARGS[@]}")
else
	read -r -a args <<<"${FABCHECK_CHECK_ARGS:-}"
fi

scontrol_run() {
	if [[ ${FABCHECK_HEALTHCHECK_DRY_RUN:-0} = 1 ]]; then
		printf '%q ' "$scontrol" "$@"
		echo
	else
		"$scontrol" "$@"
	fi
}

out=$("$fabcheck" check --format oneline "${args[@]}" 2>&1)
rc=$?
case $rc in
0) line="" ;;
1)
	line=$(grep -m 1 '^fabcheck check FAIL' <<<"$out")
	line=${line:-fabcheck check FAIL (exit 1)}
	;;
*)
	first=${out%%$'\n'*}
	line="fabcheck check could not run (exit $rc): ${first#fabcheck: }"
	;;
esac

if [[ -z $line ]]; then
	# Healthy: undo only our own drain.
	reason=$("$scontrol" show node "$node" 2>/dev/null | sed -n 's/.*Reason=\(.*\)/\1/p' | head -n 1)
	if [[ $reason == fabcheck* ]]; then
		scontrol_run update NodeName="$node" State=RESUME
	fi
	exit 0
fi
# slurmctld keeps a reason of any length, but sinfo shows the first ~ 50 characters; keep it short
# enough to stay one readable line in `scontrol show node`.
scontrol_run update NodeName="$node" State=DRAIN Reason="${line:0:250}"
exit 1
