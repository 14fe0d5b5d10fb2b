#!/usr/bin/env bash
# Slurm HealthCheckProgram: runs `fabcheck check --format oneline` and drains this node with the
# first error as the reason; resumes it once the check passes again, but only a node that this
# script drained (its reason starts with "fabcheck": `fabcheck: SUBJECT ID: MESSAGE`), never one an admin drained. See README.md.
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

# fabcheck's oneline `fabcheck check FAIL: SUBJECT: ID: MESSAGE` as a drain reason that leads with
# the subject, `fabcheck: SUBJECT ID: MESSAGE` (sinfo shows only a reason's first ~50 characters;
# the leading `fabcheck` is how a drain is recognised as fabcheck's). Any other line is kept.
function _fabcheck_reason() {
	local rest=${1#fabcheck check FAIL: }
	if [[ $rest == "$1" || $rest != *": "*": "* ]]; then
		printf '%s' "$1"
		return
	fi
	printf 'fabcheck: %s %s' "${rest%%: *}" "${rest#*: }"
}

# TEXT cut to at most MAX characters: at a clause boundary (before `;`, `:` or `,` and a space)
# when that keeps half of it, else after a whole word, then `...`; never mid-word.
function _fabcheck_cut() {
	local text=$1 max=$2 head reach clause word
	if ((${#text} <= max)); then
		printf '%s' "$text"
		return
	fi
	head=${text:0:max-3}
	reach=${text:0:max-2}
	clause=${reach%[;:,] *}
	word=${reach% *}
	if [[ $clause != "$reach" ]] && ((${#clause} * 2 >= max - 3)); then
		head=$clause
	elif [[ $word != "$reach" && -n $word ]]; then
		head=$word
	fi
	head=${head%"${head##*[!;:, ]}"}
	printf '%s...' "$head"
}

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
# enough to stay one readable line in `scontrol show node`, cut where a clause or word ends.
scontrol_run update NodeName="$node" State=DRAIN Reason="$(_fabcheck_cut "$(_fabcheck_reason "$line")" 250)"
exit 1
