#!/usr/bin/env bash
# soft-roce-setup.sh - Soft-RoCE (rdma_rxe) for fabcheck: on this machine, or in a throwaway qemu guest.
#
# Run with --help for usage. Exit codes: 0 ok; 1 usage or general error; 2 no RDMA support in this
# kernel, or the VM harness could not set up RDMA in the guest; 124 --vm timeout; with --vm otherwise
# the exit status of CMD.
set -euo pipefail

PROG=soft-roce-setup
SELF=$(readlink -f "${BASH_SOURCE[0]}")

usage() {
	cat <<'EOF'
Usage:
  soft-roce-setup.sh [--netdev IF] [--name rxe0]     create a Soft-RoCE device on this machine
  soft-roce-setup.sh --remove [--name rxe0]          delete it
  soft-roce-setup.sh --status                        show rxe devices, or why there can be none
  soft-roce-setup.sh --vm [VM OPTIONS] -- CMD [ARGS...]
                                                     run CMD in a throwaway qemu guest that has rxe0

Native mode (a kernel with CONFIG_RDMA_RXE, as root): loads crc32_generic/crc32-pclmul, rdma_rxe,
ib_uverbs and rdma_ucm, then creates rxe device NAME (default rxe0) on IF (default: the netdev of
the default route, else the first UP non-loopback netdev). Idempotent: if NAME already exists on IF
it says so and exits 0. If this kernel has no RDMA support it says so and exits 2.

--vm mode boots Debian's stock kernel (package linux-image-amd64's dependency, downloaded once with
apt-get) under qemu TCG with a small busybox initramfs, mounts the host's / read-only over virtio-9p,
chroots into it (tmpfs on /tmp and /run, devtmpfs on /dev), creates rxe0 and runs CMD there in the
current directory. CMD's stdout and stderr come back live; the script exits with CMD's status.
The current directory (the checkout) is shared on its own and mounted at its own path, so a clone
under /tmp works too; other host files under /tmp or /run are NOT visible in the guest (tmpfs
there) unless a --share holds them (a CARGO_TARGET_DIR outside the checkout, say).

VM options:
  --guests 1|2      1 (default): one guest, veth pair va(198.18.0.1)/vb(198.18.0.2), rxe0 on va;
                    both test endpoints use rxe0, out-of-band exchange over 127.0.0.1.
                    2: two guests joined by a qemu socket link on 127.0.0.1; rxe0 on eth0 in each;
                    guest 1 = 198.18.0.1 runs CMD, guest 2 = 198.18.0.2 runs --peer-cmd in the
                    background; CMD starts once guest 2 is set up and its peer command launched.
  --peer-cmd STR    shell command for guest 2 (default: $FABCHECK_VM_PEER_CMD, else none)
  --rails N         N rxe devices (1-8), rail k = rxeK on subnet 198.18.K.0/24, rail 0 as above:
                    one guest, veth pairs va/vb, va1/vb1, ...; two guests, N links eth0..ethN-1
                    (one qemu socket each). In the guest FABCHECK_VM_RAILS=N, FABCHECK_VM_RAIL_DEVS
                    and FABCHECK_VM_RAIL_NETDEVS (space-separated, in rail order) are set.
  --share DIR       also share DIR, read-only, mounted at its own path in the guest(s) (repeatable)
  --timeout SECS    kill the guest(s) and exit 124 after SECS (default 1800, $FABCHECK_VM_TIMEOUT)
  --mem MB          guest memory (default 1024, $FABCHECK_VM_MEM)
  --smp N           vCPUs per guest (default 2 with one guest, 1 each with two; $FABCHECK_VM_SMP)
  --verbose         show the guest console (kernel + init messages) on stderr ($FABCHECK_VM_VERBOSE=1)
  --keep            keep the run directory (logs) even on success ($FABCHECK_VM_KEEP=1)

In the guest: RUST_LOG, RUST_BACKTRACE and every FABCHECK_* variable are passed through, and
FABCHECK_IN_VM=1, FABCHECK_VM_GUEST=1|2, FABCHECK_VM_ADDR (own address), FABCHECK_VM_PEER_ADDR
(--guests 2 only), FABCHECK_VM_NETDEV and FABCHECK_RXE_DEV=rxe0 are set. `ulimit -l unlimited`.
Cache: ${FABCHECK_VM_CACHE:-/var/tmp/fabcheck-vm} (kernel, initramfs, per-run logs under runs/).
Other knobs: FABCHECK_VM_KERNEL_PKG (kernel package to use instead of linux-image-amd64's).

Other options:
  --netdev IF, --name NAME   native mode (see above)
  -h, --help                 this text
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 1; }
die2() { say "error: $*"; exit 2; }

# shq STRING: STRING quoted for any POSIX shell.
shq() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

now_ms() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((t / 1000)); }
fmt_s() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); }

is_root() { [[ $(id -u) -eq 0 ]]; }

# ----------------------------------------------------------------------------- packages

APT_UPDATED=0
apt_update_once() {
	[[ $APT_UPDATED -eq 1 ]] && return 0
	say "apt-get update"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || say "warning: apt-get update failed"
	APT_UPDATED=1
}

pkg_installed() {
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true) == "install ok installed" ]]
}

# ensure_pkgs "cmd:package" ... : install the packages whose command is missing (or, on Debian,
# whose package is not installed: some are libraries or need a particular variant such as the static
# busybox). Only as root with apt-get; otherwise say what to install and exit 1.
ensure_pkgs() {
	local spec cmd pkg missing=()
	for spec in "$@"; do
		cmd=${spec%%:*} pkg=${spec#*:}
		if command -v dpkg-query >/dev/null 2>&1; then
			pkg_installed "$pkg" && continue
		elif [[ $cmd == -* ]] || command -v "$cmd" >/dev/null 2>&1; then
			continue
		fi
		missing+=("$pkg")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	if is_root && command -v apt-get >/dev/null 2>&1; then
		apt_update_once
		say "installing: ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
			die "apt-get install ${missing[*]} failed"
	else
		die "missing packages: ${missing[*]} (install them as root: apt-get install ${missing[*]})"
	fi
}

# ----------------------------------------------------------------------------- native mode

NO_RDMA_HINT="this kernel has no rdma_rxe; run tests with --vm, or use a kernel built with CONFIG_RDMA_RXE"

no_rdma() {
	say "kernel $(uname -r) has no RDMA support: $1"
	say "$NO_RDMA_HINT"
	exit 2
}

# Why this kernel cannot have rxe devices, or empty if it may. Loads nothing.
rdma_impossible_reason() {
	local kver; kver=$(uname -r)
	[[ -d /sys/module/rdma_rxe ]] && return 0
	if [[ ! -d /lib/modules/$kver ]]; then
		echo "rdma_rxe is not loaded or built in, and there is no /lib/modules/$kver to load it from"
		return 0
	fi
	if command -v modinfo >/dev/null 2>&1 && ! modinfo rdma_rxe >/dev/null 2>&1; then
		echo "no rdma_rxe module in /lib/modules/$kver"
	fi
}

load_module() { # NAME [optional]
	local m=$1 sysname=${1//-/_} out
	[[ -d /sys/module/$sysname ]] && return 0
	if out=$(modprobe "$m" 2>&1); then return 0; fi
	[[ ${2:-} == optional ]] && return 0
	echo "$out"
	return 1
}

native_load_modules() {
	local reason out m
	reason=$(rdma_impossible_reason)
	[[ -n $reason ]] && no_rdma "$reason"
	is_root || die "must be root to load modules and create rxe devices (try sudo)"
	command -v modprobe >/dev/null 2>&1 || ensure_pkgs modprobe:kmod
	# rdma link add fails with ENOENT unless a crc32 crypto module is there before rdma_rxe.
	load_module crc32_generic optional
	load_module crc32-pclmul optional
	out=$(load_module rdma_rxe) || no_rdma "modprobe rdma_rxe failed: $out"
	for m in ib_uverbs rdma_ucm; do
		out=$(load_module "$m") || die "modprobe $m failed: $out"
	done
}

default_netdev() {
	local dev
	dev=$({ ip -o route show default 2>/dev/null || true; } |
		awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
	if [[ -z $dev ]]; then
		dev=$({ ip -o link show up 2>/dev/null || true; } |
			awk -F': ' '{sub(/@.*/, "", $2); if ($2 != "lo") { print $2; exit }}')
	fi
	echo "$dev"
}

# rxe_netdev NAME: the netdev the RDMA link NAME/1 sits on (empty if NAME does not exist).
rxe_netdev() {
	{ rdma link show 2>/dev/null || true; } |
		awk -v n="$1/1" '$1 == "link" && $2 == n {for (i = 3; i < NF; i++) if ($i == "netdev") print $(i + 1)}'
}

wait_port_active() { # NAME
	local i state=""
	for ((i = 0; i < 100; i++)); do
		state=$(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null || true)
		[[ $state == *ACTIVE* ]] && return 0
		sleep 0.1
	done
	say "warning: $1 port 1 is not ACTIVE (state: ${state:-unknown}); is the netdev up?"
}

native_add() {
	local name=$1 netdev=$2 cur out
	native_load_modules
	# rdma (iproute2) to create the device; the rxe verbs provider so programs can use it
	ensure_pkgs rdma:iproute2 ip:iproute2 -:ibverbs-providers
	[[ -n $netdev ]] || netdev=$(default_netdev)
	[[ -n $netdev ]] || die "no netdev: no default route and no UP non-loopback interface; pass --netdev IF"
	[[ -d /sys/class/net/$netdev ]] || die "no such netdev: $netdev"
	cur=$(rxe_netdev "$name")
	if [[ -n $cur ]]; then
		if [[ $cur == "$netdev" ]]; then
			say "$name already exists on $netdev"
			exit 0
		fi
		die "$name already exists on $cur, not $netdev (remove it first: $0 --remove --name $name)"
	fi
	[[ -e /sys/class/infiniband/$name ]] && die "an RDMA device named $name exists but is not an rxe link"
	out=$(rdma link add "$name" type rxe netdev "$netdev" 2>&1) ||
		die "rdma link add $name type rxe netdev $netdev failed: $out"
	wait_port_active "$name"
	say "created $name on $netdev"
	rdma link show "$name/1" || true
}

native_remove() {
	local name=$1 out
	if [[ ! -e /sys/class/infiniband/$name ]]; then
		say "no RDMA device $name; nothing to remove"
		exit 0
	fi
	is_root || die "must be root to delete $name (try sudo)"
	command -v rdma >/dev/null 2>&1 || ensure_pkgs rdma:iproute2
	out=$(rdma link delete "$name" 2>&1) || die "rdma link delete $name failed: $out"
	say "removed $name"
}

native_status() {
	local reason devs=()
	reason=$(rdma_impossible_reason)
	if [[ -n $reason && ! -d /sys/class/infiniband ]]; then
		say "no rxe devices: kernel $(uname -r) has no RDMA support: $reason"
		say "$NO_RDMA_HINT"
		exit 2
	fi
	if [[ -d /sys/class/infiniband ]]; then
		shopt -s nullglob
		devs=(/sys/class/infiniband/*)
		shopt -u nullglob
	fi
	if [[ ${#devs[@]} -eq 0 ]]; then
		if [[ -d /sys/module/rdma_rxe ]]; then
			say "rdma_rxe is loaded but there is no RDMA device; create one: $0 [--netdev IF] [--name rxe0]"
		else
			say "this kernel can do Soft-RoCE, but rdma_rxe is not loaded and there is no RDMA device;" \
				"create one: $0 [--netdev IF] [--name rxe0]"
		fi
		exit 1
	fi
	if command -v rdma >/dev/null 2>&1; then
		rdma link show
	else
		local d
		for d in "${devs[@]}"; do echo "${d##*/}: $(cat "$d/ports/1/state" 2>/dev/null || echo '?')"; done
	fi
}

# ----------------------------------------------------------------------------- VM

# The qemu guest lives with the tests; this script only dispatches to it.
HARNESS=$(dirname "$SELF")/tests/vm/harness.sh

vm_mode() {
	[[ -r $HARNESS ]] || die "the VM harness $HARNESS is missing: --vm needs a fabcheck checkout"
	# shellcheck source=tests/vm/harness.sh
	source "$HARNESS"
	vm_main "$@"
}

# ----------------------------------------------------------------------------- main

main() {
	local mode=add name=rxe0 netdev="" guests=1 timeout=${FABCHECK_VM_TIMEOUT:-1800}
	local peer_cmd=${FABCHECK_VM_PEER_CMD:-}
	MEM=${FABCHECK_VM_MEM:-1024}
	SMP=${FABCHECK_VM_SMP:-}
	RAILS=""
	SHARES=()
	while [[ $# -gt 0 ]]; do
		case $1 in
		-h | --help) usage; exit 0 ;;
		--vm) mode=vm ;;
		--remove) mode=remove ;;
		--status) mode=status ;;
		--name) [[ $# -ge 2 ]] || die "--name needs a value"; name=$2; shift ;;
		--netdev) [[ $# -ge 2 ]] || die "--netdev needs a value"; netdev=$2; shift ;;
		--guests) [[ $# -ge 2 ]] || die "--guests needs a value"; guests=$2; shift ;;
		--timeout) [[ $# -ge 2 ]] || die "--timeout needs a value"; timeout=$2; shift ;;
		--mem) [[ $# -ge 2 ]] || die "--mem needs a value"; MEM=$2; shift ;;
		--smp) [[ $# -ge 2 ]] || die "--smp needs a value"; SMP=$2; shift ;;
		--peer-cmd) [[ $# -ge 2 ]] || die "--peer-cmd needs a value"; peer_cmd=$2; shift ;;
		--rails) [[ $# -ge 2 ]] || die "--rails needs a value"; RAILS=$2; shift ;;
		--share) [[ $# -ge 2 ]] || die "--share needs a directory"; SHARES+=("$2"); shift ;;
		--verbose) export FABCHECK_VM_VERBOSE=1 ;;
		--keep) export FABCHECK_VM_KEEP=1 ;;
		--) shift; break ;;
		-*) die "unknown option $1 (see --help)" ;;
		*) break ;;
		esac
		shift
	done
	[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad device name: $name"
	if [[ $mode != vm && $# -gt 0 ]]; then die "unexpected argument $1 (a command needs --vm)"; fi
	case $mode in
	add) native_add "$name" "$netdev" ;;
	remove) native_remove "$name" ;;
	status) native_status ;;
	vm) vm_mode "$guests" "$timeout" "$peer_cmd" "$@" ;;
	esac
}

main "$@"
