#!/bin/sh
# Runs the Soft-RoCE tier where rxe0 exists (inside `soft-roce-setup.sh --vm`, or natively).
# Usage: tests/rxe/run.sh [--rails] RXE_TEST_BINARY [libtest args...]
# Without --rails every test but the rails ones (rails::, issue #29). With --rails only those, on
# a guest booted with `--rails N` (N >= 2; exit 2 elsewhere): rails::one_host:: in one guest, and
# rails:: (two_hosts too) in guest 1 of `--guests 2 --rails N`, where tests/rxe/two-hosts.sh runs
# them. Further filters given after the binary widen the selection (libtest ORs filters).
set -eu
rails=0
if [ "${1:-}" = --rails ]; then
	rails=1
	shift
fi
bin=$1
shift
if [ ! -e /sys/class/infiniband/rxe0 ]; then
	echo "rxe tier: no rxe0 here; run it through ./soft-roce-setup.sh --vm -- tests/rxe/run.sh ..." >&2
	exit 2
fi
# shellcheck disable=SC3045 # busybox sh and dash both take -l
ulimit -l unlimited 2>/dev/null || true
echo "rxe tier: $(uname -r), $(rdma link show 2>/dev/null | head -1)"
if [ $rails = 0 ]; then
	# One test at a time: fault tests change the guest's network.
	# qos::two_hosts and paths:: need the second guest: tests/rxe/two-hosts.sh runs them.
	exec "$bin" --test-threads=1 --skip rails:: --skip qos::two_hosts --skip paths:: "$@"
fi
case ${FABCHECK_VM_RAILS:-0} in
[2-8]) ;;
*)
	echo "rxe tier --rails: this guest has ${FABCHECK_VM_RAILS:-no} rails; boot it with ./soft-roce-setup.sh --vm --rails 4 -- tests/rxe/run.sh --rails ..." >&2
	exit 2
	;;
esac
echo "rxe tier --rails: $FABCHECK_VM_RAILS rails: $FABCHECK_VM_RAIL_DEVS on $FABCHECK_VM_RAIL_NETDEVS"
if [ -n "${FABCHECK_VM_PEER_ADDR:-}" ]; then
	exec "$bin" --test-threads=1 rails:: "$@"
fi
exec "$bin" --test-threads=1 rails::one_host:: "$@"
