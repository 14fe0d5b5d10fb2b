#!/usr/bin/env bash
# fabcheck's whole test suite, as CI runs it. Installs what it needs, then:
#   1. host tier: unit tests, CLI, protocol, and diagnosis of captured sysfs trees (no RDMA needed);
#   1b. ibsim tier: `fabcheck fabric` against simulated InfiniBand subnets (ibsim + OpenSM on the host);
#   2. Soft-RoCE tier: every verbs path against a live rxe0, in a throwaway qemu guest whose Debian
#      kernel has rdma_rxe (soft-roce-setup.sh --vm). Set FABCHECK_RXE_NATIVE=1 to run it on this
#      machine instead (needs rxe0 on veth 'va' with 198.18.0.1/24, as the guest sets up).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

tests/deps.sh

echo "== host tier" >&2
cargo test --locked --lib --bins --test integration

echo "== ibsim tier: fabcheck fabric against simulated InfiniBand subnets" >&2
tests/ibsim/run.sh

echo "== Soft-RoCE tier" >&2
rxe_bin=$(cargo test --locked --test rxe --no-run --message-format=json 2>/dev/null |
	sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
[ -x "$rxe_bin" ] || { echo "run-all: could not build the rxe test binary" >&2; exit 1; }
cargo build --locked --bin fabcheck
fabcheck="$PWD/target/debug/fabcheck"
if [ "${FABCHECK_RXE_NATIVE:-0}" = 1 ]; then
	tests/rxe/run.sh "$rxe_bin"
else
	./soft-roce-setup.sh --vm --timeout 2400 -- tests/rxe/run.sh "$rxe_bin"
	echo "== two hosts: two guests joined by a virtual link, agents as fabcheck serve and over ssh" >&2
	FABCHECK_SSHD_DIR=$(tests/rxe/sshd.sh prepare "${FABCHECK_VM_CACHE:-/var/tmp/fabcheck-vm}/sshd")
	export FABCHECK_SSHD_DIR
	FABCHECK_TOKEN="two-hosts-$$-$RANDOM" ./soft-roce-setup.sh --vm --guests 2 --timeout 900 \
		--peer-cmd "tests/rxe/sshd.sh serve $FABCHECK_SSHD_DIR && exec $fabcheck serve --listen 198.18.0.2:18515 --max-sessions 4" \
		-- tests/rxe/two-hosts.sh "$fabcheck"
fi
echo "run-all: both tiers passed in $(( $(date +%s) - start )) s" >&2
