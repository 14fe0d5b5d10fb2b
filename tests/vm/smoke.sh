#!/usr/bin/env bash
# tests/vm/smoke.sh - prove that Soft-RoCE works where this runs (normally inside
# `soft-roce-setup.sh --vm -- tests/vm/smoke.sh`): device info, an RC ping-pong and an RDMA-write
# bandwidth run, each server + client on one rxe device with the out-of-band exchange on 127.0.0.1.
# Exits non-zero if any step fails.
set -u

DEV=${FABCHECK_RXE_DEV:-rxe0}
GID=${FABCHECK_SMOKE_GID:-1}        # GID index 1 = IPv4-mapped RoCE v2 GID on a fresh rxe device
STEP_TIMEOUT=${FABCHECK_SMOKE_TIMEOUT:-120}
passed=0 failed=0

log() { printf 'smoke: %s\n' "$*"; }
result() { # NAME STATUS
	if [[ $2 -eq 0 ]]; then passed=$((passed + 1)); log "PASS $1"; else failed=$((failed + 1)); log "FAIL $1 (status $2)"; fi
}

# wait_listen PORT PID: wait until a TCP listener on PORT exists (or PID died).
wait_listen() {
	local i
	for ((i = 0; i < 300; i++)); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# pair NAME PORT CMD...: run CMD -p PORT as a server, then CMD -p PORT 127.0.0.1 as its client.
pair() {
	local name=$1 port=$2 spid src crc
	shift 2
	log "== $name: $*"
	timeout "$STEP_TIMEOUT" "$@" -p "$port" &
	spid=$!
	if ! wait_listen "$port" "$spid"; then
		log "$name: server did not start listening on port $port"
		kill "$spid" 2>/dev/null
		wait "$spid"
		result "$name" 1
		return
	fi
	timeout "$STEP_TIMEOUT" "$@" -p "$port" 127.0.0.1
	crc=$?
	wait "$spid"
	src=$?
	log "$name: client status $crc, server status $src"
	result "$name" $((crc != 0 || src != 0))
}

log "kernel $(uname -r), FABCHECK_IN_VM=${FABCHECK_IN_VM:-0}, device $DEV"
log "== ibv_devinfo -v -d $DEV"
timeout "$STEP_TIMEOUT" ibv_devinfo -v -d "$DEV"
result ibv_devinfo $?

pair ibv_rc_pingpong 18515 ibv_rc_pingpong -g "$GID" -d "$DEV"
pair ib_write_bw 18516 ib_write_bw -x "$GID" -d "$DEV" -n 200

log "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
