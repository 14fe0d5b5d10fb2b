#!/usr/bin/env bash
# fabcheck's whole test suite, as CI runs it. Installs what it needs, then:
#   1. host tier: unit tests, CLI, protocol, and diagnosis of captured sysfs trees (no RDMA needed);
#   1a. packages: dist/package.sh builds the portable binary, the tar.gz, .deb and .rpm, and checks them;
#   1b. ibsim tier: `fabcheck fabric` against simulated InfiniBand subnets (ibsim + OpenSM on the host);
#   2. Soft-RoCE tier: every verbs path against a live rxe0, in a throwaway qemu guest whose Debian
#      kernel has rdma_rxe (soft-roce-setup.sh --vm). Set FABCHECK_RXE_NATIVE=1 to run it on this
#      machine instead (needs rxe0 on veth 'va' with 198.18.0.1/24, as the guest sets up).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

tests/deps.sh

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# A tier that ran no test at all (a filter that matched nothing, a test binary that found no
# tests, a guest that never started the binary) is a failure, not a pass.
tests_passed() {
	sed -n 's/^test result: ok\. \([0-9][0-9]*\) passed.*/\1/p' "$1" | awk '{ n += $1 } END { print n + 0 }'
}
require_tests() { # NAME LOG
	n=$(tests_passed "$2")
	if [ "$n" -eq 0 ]; then
		echo "run-all: the $1 ran 0 tests: failing rather than passing an empty tier" >&2
		exit 1
	fi
	echo "run-all: $1: $n tests passed" >&2
	ran+=("$1 ($n tests)")
}
ran=()

echo "== gates: fmt, clippy, doc, unsafe, shellcheck, MSRV" >&2
tests/gates.sh

# Every tier from here on runs from a copy of the tree at a path that holds what a user's clone
# may: a directory named `fabcheck` (git clone's default: it once matched every scratch directory's
# absolute path in dist/package.sh), a space (tests that spliced the checkout's path into a shell
# line, a sed expression or a systemd unit broke on one), a parent reached through a symlink, and,
# where this checkout lies there, /tmp, which the guests of the Soft-RoCE tiers do not see. Its
# target directory is this checkout's, through a symlink: nothing is built twice (cargo names a
# workspace's artifacts by paths inside it).
checkout=$PWD
copy_tree() { # DIR: the files git would build from (tracked, and untracked but not ignored), no .git
	git -C "$checkout" ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
		[[ -e $checkout/$f || -L $checkout/$f ]] && printf '%s\0' "$f"
	done | tar -C "$checkout" --null -T - -cf - | tar -C "$1" -xf -
}
clone_base="$checkout/target/clone-path"
rm -rf "$clone_base"
mkdir -p "$clone_base/scratch dir/fabcheck"
ln -s "scratch dir" "$clone_base/via-link"
tree="$clone_base/via-link/fabcheck"
copy_tree "$tree"
ln -s "$checkout/target" "$tree/target"
cd "$tree"
echo "run-all: the tiers run from $tree (a copy of $checkout)" >&2

echo "== host tier" >&2
host_skip=()
if [ "${FABCHECK_RXE_NATIVE:-0}" = 1 ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
	# The 48-agent ssh fan-out needs agents that find no device; on an RDMA host it fails by design.
	host_skip=(--skip mesh_scale::ssh_agents_start_in_bounded_parallel_and_none_outlives_the_mesh)
	echo "run-all: NOT RUN on this RDMA host: mesh_scale::ssh_agents_start_in_bounded_parallel_and_none_outlives_the_mesh (needs a host without devices)" >&2
fi
cargo test --locked --workspace --lib --bins --test integration -- "${host_skip[@]}" 2>&1 | tee "$logs/host.log"
cargo test --locked --workspace --doc 2>&1 | tee -a "$logs/host.log"
require_tests "host tier" "$logs/host.log"

echo "== compile-fail: what the types forbid does not compile (trybuild, expected errors checked in)" >&2
cargo test --locked --workspace --test compile_fail 2>&1 | tee "$logs/compile_fail.log"
require_tests "compile-fail tier" "$logs/compile_fail.log"

echo "== packages: dist/package.sh builds and verifies the tar.gz, .deb and .rpm" >&2
pkg_start=$(date +%s)
# A well-formed maintainer of the test packages (the packages take theirs from configuration), and
# the reproducibility check: the binary rebuilt from a copy of the tree elsewhere, byte-identical.
# Its own target directory (the release build is another profile and target anyway), which also
# proves the script follows CARGO_TARGET_DIR. The tree it packages is the copy above (no checkout
# of its own: the packages take the commit and its date from this one).
pkg_target="$checkout/target/package/target"
pkg_epoch=$(git -C "$checkout" log -1 --format=%ct)
FABCHECK_MAINTAINER="${FABCHECK_MAINTAINER:-fabcheck CI <ci@fabcheck.example.org>}" FABCHECK_REPRO_CHECK=1 \
	SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$pkg_epoch}" FABCHECK_GIT_COMMIT="$(git -C "$checkout" rev-parse --short=12 HEAD)" \
	CARGO_TARGET_DIR="$pkg_target" "$tree/dist/package.sh"
ran+=("packages ($(( $(date +%s) - pkg_start )) s)")

echo "== ibsim tier: fabcheck fabric against simulated InfiniBand subnets" >&2
tests/ibsim/run.sh 2>&1 | tee "$logs/ibsim.log"
require_tests "ibsim tier" "$logs/ibsim.log"

echo "== Soft-RoCE tier" >&2
# The build's diagnostics stay on stderr: a compile error must be seen, not just "could not build".
# The rxe test binary itself: cargo also lists the fabcheck binary it builds, in any order (read as
# JSON: a path may hold what a pattern over the text would not take).
rxe_bin=$(cargo test --locked --test rxe --no-run --message-format=json | python3 -c '
import json, sys
exes = [m["executable"] for m in map(json.loads, sys.stdin)
        if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "rxe"]
print(exes[-1] if exes else "")')
[ -x "$rxe_bin" ] || { echo "run-all: could not build the rxe test binary" >&2; exit 1; }
cargo build --locked --bin fabcheck
target_dir=$(cargo metadata --locked --no-deps --format-version 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
fabcheck="$target_dir/debug/fabcheck"
[ -x "$fabcheck" ] || { echo "run-all: no $fabcheck" >&2; exit 1; }
# The guests mount the current directory (the copy) at its own path; the target directory lies
# outside it (a symlink to this checkout's, or CARGO_TARGET_DIR): shared as well.
vm_share=(--share "$target_dir")
if [ "${FABCHECK_RXE_NATIVE:-0}" = 1 ]; then
	tests/rxe/run.sh "$rxe_bin" 2>&1 | tee "$logs/rxe.log"
	require_tests "Soft-RoCE tier" "$logs/rxe.log"
	echo "run-all: FABCHECK_RXE_NATIVE=1: the two-host and rails tiers were NOT run (they need two guests)" >&2
else
	./soft-roce-setup.sh --vm "${vm_share[@]}" --timeout 2400 -- tests/rxe/run.sh "$rxe_bin" 2>&1 | tee "$logs/rxe.log"
	require_tests "Soft-RoCE tier" "$logs/rxe.log"
	echo "== two hosts: two guests joined by 4 virtual links (rails), agents as fabcheck serve and over ssh" >&2
	FABCHECK_SSHD_DIR=$(tests/rxe/sshd.sh prepare "${FABCHECK_VM_CACHE:-/var/tmp/fabcheck-vm}/sshd")
	export FABCHECK_SSHD_DIR
	# The same boot runs the rails tier (tests/rxe/rails.rs through tests/rxe/run.sh --rails, last
	# in two-hosts.sh): rail 0 is the link the two-host tests use, rails 1-3 are three more.
	# The peer command is a bash line in guest 2: the paths in it quoted (a clone's may hold a space).
	# --max-sessions: every session the tier opens to guest 2's serve (the two-host pair, the mesh's
	# with its tcp endpoint, qos::two_hosts' three pairs: 6 in all); it exits after the last, so
	# nothing is left running. A test that adds a session there raises it.
	peer_cmd="tests/rxe/sshd.sh serve $(printf %q "$FABCHECK_SSHD_DIR") && exec $(printf %q "$fabcheck") serve --listen 198.18.0.2:18515 --max-sessions 6"
	# Two fresh guests running `tests/rxe/two-hosts.sh ARGS`, the output into LOG.
	boot_two_guests() { # LOG TIMEOUT ARGS...
		local log=$1 timeout=$2
		shift 2
		FABCHECK_TOKEN="fabcheck-two-hosts-$$-$RANDOM" ./soft-roce-setup.sh --vm "${vm_share[@]}" --guests 2 --rails 4 \
			--timeout "$timeout" --peer-cmd "$peer_cmd" -- tests/rxe/two-hosts.sh "$@" 2>&1 | tee "$log"
	}
	# A two-guest run that fails goes once more on fresh guests: the emulated link between them has
	# dropped mid-run ("No route to host") and stalled in qemu (below); a defect fails twice. A
	# second run that the harness says stalled in qemu again (its line "an emulated link stalled in
	# qemu", from the guest kernel's NETDEV WATCHDOG) gets a third and last: the paths boot needed
	# its rerun in 2 of the 3 last rehearsals here, so two stalls in a row are not rare enough to
	# fail CI on; any other second failure still fails it.
	two_guests() { # NAME LOG TIMEOUT ARGS...
		local name=$1 log=$2
		shift
		if boot_two_guests "$@"; then
			ran+=("$name")
			return
		fi
		echo "run-all: the $name failed; running it once more on fresh guests" >&2
		if boot_two_guests "$@"; then
			ran+=("$name (passed on its second run)")
			return
		fi
		grep -q "an emulated link stalled in qemu" "$log" || exit 1
		echo "run-all: the $name's emulated link stalled in qemu again; a third and last run on fresh guests" >&2
		boot_two_guests "$@"
		ran+=("$name (passed on its third run, after two qemu link stalls)")
	}
	two_guests "two-host tier" "$logs/two-hosts.log" 1500 "$fabcheck" "$rxe_bin"
	require_tests "rails tier" "$logs/two-hosts.log"
	# --paths (tests/rxe/paths.rs) on two guests of their own, after six minutes of the tier above
	# no more: there a router namespace's virtio link stalled in qemu (`NETDEV WATCHDOG: transmit
	# queue 0 timed out` in guest 1's console, every RC test over it stalled after) in three tier
	# runs on one machine; on fresh guests they passed 11 of 13 (the two others stalled in or right
	# after the lossy test; each rerun passed). Booted as the tier above.
	echo "== paths: two fresh guests, rails 1 and 2 routed through a namespace as two equal-cost paths" >&2
	two_guests "paths boot" "$logs/paths.log" 900 --paths "$fabcheck" "$rxe_bin"
	require_tests "paths tier" "$logs/paths.log"
	# PCIe AER raised for real (issue #44): a q35 guest of its own, errors injected through qemu's
	# monitor at a root port and named by pcie.aer in the guest (about 20 s; the same kernel cache).
	echo "== AER guest: pcie_aer_inject_error at a pcie-root-port, read by pcie.aer" >&2
	cargo build --locked --example aer_read
	tests/vm/aer.sh 2>&1 | tee "$logs/aer.log"
	grep -q '^aer-vm: PASS' "$logs/aer.log" || { echo "run-all: the AER guest did not pass" >&2; exit 1; }
	ran+=("AER guest")
fi
summary=$(printf '%s, ' "${ran[@]}")
echo "run-all: passed in $(( $(date +%s) - start )) s: ${summary%, }" >&2
