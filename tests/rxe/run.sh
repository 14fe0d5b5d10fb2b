#!/bin/sh
# Runs the Soft-RoCE tier where rxe0 exists (inside `soft-roce-setup.sh --vm`, or natively).
# Usage: tests/rxe/run.sh RXE_TEST_BINARY [libtest args...]
set -eu
bin=$1
shift
if [ ! -e /sys/class/infiniband/rxe0 ]; then
	echo "rxe tier: no rxe0 here; run it through ./soft-roce-setup.sh --vm -- tests/rxe/run.sh ..." >&2
	exit 2
fi
# shellcheck disable=SC3045 # busybox sh and dash both take -l
ulimit -l unlimited 2>/dev/null || true
echo "rxe tier: $(uname -r), $(rdma link show 2>/dev/null | head -1)"
# One test at a time: fault tests change the guest's network.
exec "$bin" --test-threads=1 "$@"
