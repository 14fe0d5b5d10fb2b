#!/bin/sh
# The ibsim tier: `fabcheck fabric` against simulated InfiniBand subnets (ibsim + OpenSM +
# libumad2sim on this host: no VM, no RDMA kernel, no root-only pieces). Each test starts its
# own simulator on its own socket name and kills it on exit; tests run one at a time.
# Usage: tests/ibsim/run.sh [libtest args...]   (tests/deps.sh installs what it needs)
set -eu
cd "$(dirname "$0")/../.."
for f in /usr/bin/ibsim /usr/sbin/opensm /usr/sbin/ibportstate; do
	[ -e "$f" ] || { echo "ibsim tier: $f is missing: run tests/deps.sh (ibsim-utils opensm infiniband-diags)" >&2; exit 1; }
done
exec cargo test --locked --test ibsim -- --test-threads=1 "$@"
