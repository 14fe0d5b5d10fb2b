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
Host files under /tmp are NOT visible in the guest (tmpfs there): keep scripts and executables in
the checkout, target/ or /var/tmp.

VM options:
  --guests 1|2      1 (default): one guest, veth pair va(198.18.0.1)/vb(198.18.0.2), rxe0 on va;
                    both test endpoints use rxe0, out-of-band exchange over 127.0.0.1.
                    2: two guests joined by a qemu socket link on 127.0.0.1; rxe0 on eth0 in each;
                    guest 1 = 198.18.0.1 runs CMD, guest 2 = 198.18.0.2 runs --peer-cmd in the
                    background; CMD starts once guest 2 is set up and its peer command launched.
  --peer-cmd STR    shell command for guest 2 (default: $FABCHECK_VM_PEER_CMD, else none)
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

# ----------------------------------------------------------------------------- VM: kernel + initramfs

CACHE=${FABCHECK_VM_CACHE:-/var/tmp/fabcheck-vm}
# Modules the guest loads, in this order (each with its dependencies). "opt" ones may fail.
GUEST_MODULES=(
	req:virtio_pci req:virtio_net req:virtio_console req:9pnet_virtio req:9p req:veth
	req:crc32_generic opt:crc32-pclmul
	req:rdma_rxe req:ib_uverbs req:rdma_ucm opt:ib_umad req:sch_netem
)

apt_lists_key() {
	{ stat -c '%n %Y %s' /var/lib/apt/lists/*Packages* 2>/dev/null || true; } | sha256sum | cut -c1-16
}

resolve_kernel_pkg() {
	local pkg=${FABCHECK_VM_KERNEL_PKG:-} key memo=$CACHE/kernel/resolved
	if [[ -n $pkg ]]; then echo "$pkg"; return 0; fi
	# apt-cache takes seconds here: remember its answer for as long as the apt lists are unchanged
	key=$(apt_lists_key)
	if [[ -s $memo && $(head -n1 "$memo") == "$key" ]]; then
		sed -n 2p "$memo"
		return 0
	fi
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" {print $2; exit}' || true)
	if [[ -z $pkg ]] && is_root && command -v apt-get >/dev/null 2>&1; then
		apt_update_once
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" {print $2; exit}' || true)
		key=$(apt_lists_key)
	fi
	pkg=${pkg#<}; pkg=${pkg%>}
	if [[ -n $pkg ]]; then
		mkdir -p "$CACHE/kernel"
		printf '%s\n%s\n' "$key" "$pkg" >"$memo.tmp" && mv "$memo.tmp" "$memo"
	fi
	echo "$pkg"
}

# Sets KROOT (extracted package root), KVER, VMLINUZ.
prepare_kernel() {
	local pkg dir tmp deb
	pkg=$(resolve_kernel_pkg)
	dir=""
	if [[ -n $pkg && -e $CACHE/kernel/$pkg/.ok ]]; then
		dir=$CACHE/kernel/$pkg
	elif [[ -n $pkg ]]; then
		say "downloading guest kernel $pkg (once; cached in $CACHE/kernel)"
		mkdir -p "$CACHE/kernel"
		tmp=$(mktemp -d "$CACHE/kernel/.tmp.XXXXXX")
		chmod 755 "$tmp"
		if (cd "$tmp" && apt-get download "$pkg" >/dev/null 2>"$tmp/apt.err"); then
			deb=$(ls "$tmp"/*.deb)
			dpkg -x "$deb" "$tmp/root" || die "dpkg -x $deb failed"
			rm -f "$deb"
			# usrmerged kernel packages ship /usr/lib/modules
			if [[ ! -d $tmp/root/lib/modules && -d $tmp/root/usr/lib/modules ]]; then
				ln -s usr/lib "$tmp/root/lib"
			fi
			KVER=$(ls "$tmp/root/lib/modules" | head -n1)
			[[ -n $KVER && -e $tmp/root/boot/vmlinuz-$KVER ]] || die "unexpected layout in $pkg (no boot/vmlinuz-*)"
			depmod -b "$tmp/root" "$KVER" || die "depmod -b $tmp/root $KVER failed"
			echo "$KVER" >"$tmp/version"
			rm -f "$tmp/apt.err"
			touch "$tmp/.ok"
			rm -rf "${CACHE:?}/kernel/$pkg"
			mv "$tmp" "$CACHE/kernel/$pkg"
			dir=$CACHE/kernel/$pkg
			# drop older kernels
			local old
			for old in "$CACHE"/kernel/linux-image-*/; do
				old=${old%/}
				[[ $old == "$dir" ]] || rm -rf "$old"
			done
		else
			say "warning: apt-get download $pkg failed: $(tail -n1 "$tmp/apt.err")"
			rm -rf "$tmp"
		fi
	fi
	if [[ -z $dir ]]; then # fall back on any cached kernel
		local ok
		ok=$(ls -dt "$CACHE"/kernel/*/.ok 2>/dev/null | head -n1 || true)
		[[ -n $ok ]] || die2 "no guest kernel: could not resolve/download linux-image-amd64's kernel package (apt-get update as root?)"
		dir=${ok%/.ok}
		say "warning: using cached kernel ${dir##*/}"
	fi
	KROOT=$dir/root
	KVER=$(<"$dir/version")
	VMLINUZ=$KROOT/boot/vmlinuz-$KVER
	# An uncompressed ELF vmlinux boots through PVH and skips the self-decompression, which takes
	# seconds under TCG. Made once from vmlinuz; if that fails, boot vmlinuz as it is.
	if [[ ! -e $dir/vmlinux.done ]]; then
		extract_vmlinux "$VMLINUZ" "$KROOT/boot/config-$KVER" "$dir/vmlinux" || rm -f "$dir/vmlinux"
		touch "$dir/vmlinux.done"
	fi
	[[ -s $dir/vmlinux ]] && VMLINUZ=$dir/vmlinux
	return 0
}

# extract_vmlinux VMLINUZ CONFIG OUT: the ELF image inside a bzImage, if the kernel can boot via PVH.
extract_vmlinux() {
	local img=$1 config=$2 out=$3 magic tool off
	grep -q '^CONFIG_PVH=y' "$config" 2>/dev/null || return 1
	for magic in '\xfd7zXZ\x00:xz -dc' '\x28\xb5\x2f\xfd:zstd -qdc' '\x1f\x8b\x08:gzip -dc'; do
		tool=${magic#*:} magic=${magic%%:*}
		command -v "${tool%% *}" >/dev/null 2>&1 || continue
		for off in $(LC_ALL=C grep -obUaP "$magic" "$img" 2>/dev/null | cut -d: -f1 | head -n 5); do
			tail -c +$((off + 1)) "$img" | $tool >"$out.tmp" 2>/dev/null || true
			if [[ $(head -c 4 "$out.tmp" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]; then
				mv "$out.tmp" "$out"
				return 0
			fi
		done
	done
	rm -f "$out.tmp"
	return 1
}

static_busybox() {
	local b
	for b in /usr/bin/busybox /bin/busybox "$(command -v busybox 2>/dev/null || true)"; do
		[[ -n $b && -x $b ]] || continue
		if [[ $(LC_ALL=C ldd "$b" 2>&1 || true) == *"not a dynamic executable"* ]]; then
			echo "$b"
			return 0
		fi
	done
	return 1
}

# The guest's /init (busybox sh). Part of this script, so the initramfs is rebuilt when it changes.
guest_init() {
	cat <<'INIT'
#!/bin/busybox sh
# fabcheck VM init: generated by soft-roce-setup.sh
# /bin holds busybox and a symlink for each of its applets (made when the initramfs was built)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

ROLE=main NET=veth ADDR=198.18.0.1 WAITPEER=0
for w in $(cat /proc/cmdline); do
	case $w in
	fabcheck.role=*) ROLE=${w#*=} ;;
	fabcheck.net=*) NET=${w#*=} ;;
	fabcheck.addr=*) ADDR=${w#*=} ;;
	fabcheck.waitpeer=*) WAITPEER=${w#*=} ;;
	esac
done
OUT=/newroot/run/fabcheck-vm
SHARE_OK=0

say() { read -r up _ </proc/uptime; echo "fabcheck-vm[$ROLE] $up: $*"; }
halt_now() {
	sync
	poweroff -f
	sleep 10
	echo o >/proc/sysrq-trigger
}
die() {
	say "SETUP FAILED: $*"
	if [ $SHARE_OK = 1 ]; then
		echo "$*" >"$OUT/setup-error.$ROLE.tmp" && mv "$OUT/setup-error.$ROLE.tmp" "$OUT/setup-error.$ROLE"
	fi
	halt_now
}

while read -r flag mod; do
	if ! err=$(insmod "/lib/modules/$mod" 2>&1); then
		if [ "$flag" = req ]; then die "insmod $mod: $err"; fi
		say "optional module $mod not loaded: $err"
	fi
done </modules.load

mount9p() { # TAG DIR OPTS
	i=0
	until err=$(mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,$3" "$1" "$2" 2>&1); do
		i=$((i + 1))
		[ $i -ge 50 ] && die "cannot mount 9p share $1 on $2: $err"
		sleep 0.1
	done
}
say "modules loaded"
# cache=loose: executables start several times faster than with cache=none; the price is that a
# host file changed during the run may be seen stale in the guest
mount9p hostroot /newroot ro,cache=loose
for d in tmp run proc sys dev; do
	[ -d /newroot/$d ] || die "the host has no /$d directory to mount over"
done
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp || die "tmpfs on /tmp"
mount -t tmpfs -o mode=755 tmpfs /newroot/run || die "tmpfs on /run"
mount -t proc proc /newroot/proc || die "proc"
mount -t sysfs sysfs /newroot/sys || die "sysfs"
mount -t devtmpfs devtmpfs /newroot/dev || die "devtmpfs"
mkdir -p /newroot/dev/pts /newroot/dev/shm /newroot/run/lock $OUT
mount -t devpts -o newinstance,ptmxmode=0666 devpts /newroot/dev/pts || die "devpts"
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm || die "tmpfs on /dev/shm"
mount9p fcrun $OUT cache=none
SHARE_OK=1
say "filesystems mounted"

# the host's tools, found on PATH inside the chroot (an absolute path, so busybox does not run its
# own applet of the same name instead)
C() { chroot /newroot /usr/bin/env "$@"; }
run() {
	err=$(C "$@" 2>&1) || die "$*: $err"
}
hostname "fabcheck-vm-$ROLE"
echo 'link set lo up' >/tmp/ip.batch
case $NET in
veth)
	NETDEV=va
	printf '%s\n' 'link add va type veth peer name vb' 'addr add 198.18.0.1/24 dev va' \
		'addr add 198.18.0.2/24 dev vb' 'link set va up' 'link set vb up' >>/tmp/ip.batch
	err=$(C ip -batch - </tmp/ip.batch 2>&1) || die "ip -batch: $err"
	;;
eth)
	NETDEV=eth0
	i=0
	while [ ! -e /sys/class/net/eth0 ]; do
		i=$((i + 1)); [ $i -ge 100 ] && die "no eth0 (virtio-net) in the guest"
		sleep 0.1
	done
	printf '%s\n' "addr add $ADDR/24 dev eth0" 'link set eth0 up' >>/tmp/ip.batch
	err=$(C ip -batch - </tmp/ip.batch 2>&1) || die "ip -batch: $err"
	;;
*) die "unknown fabcheck.net=$NET" ;;
esac
say "network up"
run rdma link add rxe0 type rxe netdev "$NETDEV"
i=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
	i=$((i + 1))
	[ $i -ge 150 ] && die "rxe0 port 1 did not become ACTIVE: $(cat /sys/class/infiniband/rxe0/ports/1/state 2>&1)"
	sleep 0.1
done
i=0
until [ -c /newroot/dev/infiniband/uverbs0 ] && [ -c /newroot/dev/infiniband/rdma_cm ]; do
	i=$((i + 1))
	[ $i -ge 50 ] && die "no /dev/infiniband/uverbs0 or rdma_cm: $(ls -l /newroot/dev/infiniband 2>&1)"
	sleep 0.1
done
if ! grep -q . /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null ||
	grep -q '^0000:0000:0000:0000:0000:0000:0000:0000$' /sys/class/infiniband/rxe0/ports/1/gids/1; then
	say "warning: rxe0 has no IPv4 RoCE v2 GID at index 1 yet"
fi

# CMD's stdout and stderr: virtio serial ports named fabcheck.stdout and fabcheck.stderr
# (much faster than a UART under TCG)
i=0
while :; do
	for d in /sys/class/virtio-ports/*; do
		[ -e "$d/name" ] || continue
		case $(cat "$d/name") in
		fabcheck.stdout) STDOUT_DEV=/dev/${d##*/} ;;
		fabcheck.stderr) STDERR_DEV=/dev/${d##*/} ;;
		esac
	done
	[ -c "${STDOUT_DEV:-/nonexistent}" ] && [ -c "${STDERR_DEV:-/nonexistent}" ] && break
	i=$((i + 1))
	[ $i -ge 100 ] && die "no virtio serial ports fabcheck.stdout/fabcheck.stderr in the guest"
	sleep 0.1
done

if [ "$ROLE" = peer ]; then
	(
		env -i chroot /newroot /bin/bash /run/fabcheck-vm/cmd.peer.sh </dev/null >"$STDOUT_DEV" 2>"$STDERR_DEV"
		echo $? >"$OUT/rc.peer"
	) &
	touch "$OUT/ready.peer"
	say "peer ready"
	while :; do sleep 3600; done
fi

if [ "$WAITPEER" = 1 ]; then
	i=0
	until [ -e "$OUT/ready.peer" ]; do
		[ -e "$OUT/setup-error.peer" ] && die "guest 2 failed: $(cat "$OUT/setup-error.peer")"
		i=$((i + 1))
		[ $i -ge 3000 ] && die "guest 2 did not become ready within 300 s"
		sleep 0.1
	done
fi
say "rxe0 ready; running the command"
touch "$OUT/started"
env -i chroot /newroot /bin/bash /run/fabcheck-vm/cmd.main.sh </dev/null >"$STDOUT_DEV" 2>"$STDERR_DEV"
rc=$?
echo $rc >"$OUT/rc.tmp" && mv "$OUT/rc.tmp" "$OUT/rc"
say "command exited with status $rc"
halt_now
INIT
}

# strip_module_signature FILE: drop an appended module signature. Checking it costs the guest seconds
# under TCG; an unsigned module still loads (signatures are not enforced), it only taints the kernel.
strip_module_signature() {
	local f=$1 size b len
	[[ $(tail -c 28 "$f") == "~Module signature appended~" ]] || return 0
	size=$(stat -c %s "$f")
	read -r -a b < <(tail -c 32 "$f" | head -c 4 | od -An -tu1)
	len=$(((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]))
	((len > 0 && len + 40 < size)) && truncate -s $((size - 40 - len)) "$f"
	return 0
}

# Sets INITRD.
prepare_initramfs() {
	local bb key out tmp spec flag mod line path base
	bb=$(static_busybox) || die "no static busybox (apt-get install busybox-static)"
	key=$({ sha256sum "$SELF" "$bb"; echo "$KVER ${GUEST_MODULES[*]}"; } | sha256sum | cut -c1-16)
	INITRD=$CACHE/initramfs/initramfs-$KVER-$key.cpio.gz
	if [[ -s $INITRD ]]; then
		touch "$INITRD" # its age tells when it was last used: see the pruning below
		return 0
	fi
	say "building guest initramfs"
	mkdir -p "$CACHE/initramfs"
	tmp=$(mktemp -d "$CACHE/initramfs/.tmp.XXXXXX")
	chmod 755 "$tmp"
	mkdir -p "$tmp/root/bin" "$tmp/root/lib/modules"
	mkdir -p "$tmp/root/proc" "$tmp/root/sys" "$tmp/root/dev" "$tmp/root/tmp" "$tmp/root/newroot"
	cp "$bb" "$tmp/root/bin/busybox"
	local applet
	for applet in $("$bb" --list); do
		[[ $applet == busybox || $applet == */* ]] || ln -s busybox "$tmp/root/bin/$applet"
	done
	guest_init >"$tmp/root/init"
	chmod 755 "$tmp/root/init" "$tmp/root/bin/busybox"
	: >"$tmp/root/modules.load"
	declare -A seen=()
	for spec in "${GUEST_MODULES[@]}"; do
		flag=${spec%%:*} mod=${spec#*:}
		if ! out=$(modprobe -d "$KROOT" -S "$KVER" --show-depends "$mod" 2>&1); then
			[[ $flag == opt ]] && continue
			rm -rf "$tmp"
			die2 "guest kernel $KVER has no module $mod: $out"
		fi
		while read -r line; do
			[[ $line == insmod\ * ]] || continue # "builtin NAME" needs nothing
			path=${line#insmod }; path=${path%% *}
			base=${path##*/}; base=${base%.xz}; base=${base%.zst}; base=${base%.gz}
			if [[ -n ${seen[$base]:-} ]]; then
				# a module first needed by an optional one, now needed by a required one
				[[ $flag == req ]] && sed -i "s|^opt $base\$|req $base|" "$tmp/root/modules.load"
				continue
			fi
			seen[$base]=1
			case $path in
			*.xz) xz -dc "$path" >"$tmp/root/lib/modules/$base" ;;
			*.zst) zstd -qdc "$path" >"$tmp/root/lib/modules/$base" ;;
			*.gz) gzip -dc "$path" >"$tmp/root/lib/modules/$base" ;;
			*) cp "$path" "$tmp/root/lib/modules/$base" ;;
			esac
			strip_module_signature "$tmp/root/lib/modules/$base"
			echo "$flag $base" >>"$tmp/root/modules.load"
		done <<<"$out"
	done
	(cd "$tmp/root" && find . | "$bb" cpio -o -H newc -R 0:0 2>/dev/null | gzip -1 >"$tmp/initramfs.cpio.gz") ||
		die "could not build the initramfs"
	mv "$tmp/initramfs.cpio.gz" "$INITRD"
	rm -rf "$tmp"
	# drop initramfs images unused for a day (not at once: a concurrent run may be about to boot one)
	find "$CACHE/initramfs" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -path "$INITRD" -mtime +0 -delete 2>/dev/null || true

}

# ----------------------------------------------------------------------------- VM: run

# write_cmd_script FILE GUEST ADDR PEER_ADDR NETDEV -- ARGV...
write_cmd_script() {
	local file=$1 guest=$2 addr=$3 peer=$4 netdev=$5 v p path="" d
	shift 6
	# the host's PATH first, then the usual directories it lacks
	IFS=: read -ra p <<<"${PATH:-}"
	for d in "${p[@]}" /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
		[[ -n $d && :$path: != *:$d:* ]] && path=${path:+$path:}$d
	done
	{
		echo "# generated by soft-roce-setup.sh --vm; run by /bin/bash inside the guest's chroot"
		echo "export PATH=$(shq "$path")"
		echo "export HOME=$(shq "${HOME:-/root}")"
		echo "export LANG=$(shq "${LANG:-C.UTF-8}")"
		if [[ -t 1 ]]; then echo "export TERM=$(shq "${TERM:-dumb}")"; else echo "export TERM=dumb"; fi
		for v in RUST_LOG RUST_BACKTRACE $(compgen -e | grep -E '^FABCHECK_[A-Za-z0-9_]*$' || true); do
			[[ -n ${!v+x} ]] && echo "export $v=$(shq "${!v}")"
		done
		echo "export FABCHECK_IN_VM=1"
		echo "export FABCHECK_VM_GUEST=$guest"
		echo "export FABCHECK_VM_ADDR=$(shq "$addr")"
		if [[ -n $peer ]]; then echo "export FABCHECK_VM_PEER_ADDR=$(shq "$peer")"; else echo "unset FABCHECK_VM_PEER_ADDR"; fi
		echo "export FABCHECK_VM_NETDEV=$(shq "$netdev")"
		echo "export FABCHECK_RXE_DEV=rxe0"
		echo "ulimit -l unlimited 2>/dev/null || echo 'fabcheck-vm: warning: ulimit -l unlimited failed' >&2"
		echo "cd $(shq "$PWD") || { echo 'fabcheck-vm: cannot cd to '$(shq "$PWD")' in the guest' >&2; exit 2; }"
		printf 'exec'
		for v in "$@"; do printf ' %s' "$(shq "$v")"; done
		echo
	} >"$file"
}

QEMU_PIDS=()
AUX_PIDS=()
RUN=""
RUN_OK=0

vm_cleanup() {
	local p i
	for p in "${QEMU_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for ((i = 0; i < 30; i++)); do
		local alive=0
		for p in "${QEMU_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[[ $alive -eq 0 ]] && break
		sleep 0.1
	done
	for p in "${QEMU_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${AUX_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	if [[ -n $RUN && $RUN_OK -eq 1 && ${FABCHECK_VM_KEEP:-0} != 1 ]]; then
		rm -rf "$RUN"
	fi
}

# start_qemu NAME APPEND [EXTRA QEMU ARGS...]; sets QPID. The guest's stdout and stderr ports go to
# FIFOs $RUN/out.NAME.fifo and $RUN/err.NAME.fifo (and logs $RUN/stdout.NAME.log, stderr.NAME.log).
start_qemu() {
	local name=$1 append=$2
	shift 2
	qemu-system-x86_64 -accel tcg -cpu max -smp "$SMP" -m "$MEM" \
		-nodefaults -no-user-config -display none -no-reboot -nic none \
		-kernel "$VMLINUZ" -initrd "$INITRD" -append "$append" \
		-chardev "file,id=con,path=$RUN/console.$name.log" -serial chardev:con \
		-device virtio-serial-pci,max_ports=4 \
		-chardev "file,id=out,path=$RUN/out.$name.fifo,logfile=$RUN/stdout.$name.log" \
		-device virtserialport,chardev=out,name=fabcheck.stdout \
		-chardev "file,id=err,path=$RUN/err.$name.fifo,logfile=$RUN/stderr.$name.log" \
		-device virtserialport,chardev=err,name=fabcheck.stderr \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$RUN,mount_tag=fcrun,security_model=none,multidevs=remap" \
		"$@" </dev/null >/dev/null 2>"$RUN/qemu.$name.stderr" &
	QPID=$!
	QEMU_PIDS+=("$QPID")
}

port_in_use() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

vm_main() {
	local guests=$1 timeout=$2 peer_cmd=$3
	shift 3
	[[ $# -gt 0 ]] || die "--vm needs a command: $0 --vm [options] -- CMD [ARGS...]"
	[[ ${FABCHECK_IN_VM:-} == 1 ]] && die "already inside a fabcheck VM"
	[[ $guests == 1 || $guests == 2 ]] || die "--guests must be 1 or 2"
	# two TCG guests on a 2-core host boot and run faster with one vCPU each
	[[ -n $SMP ]] || SMP=$((guests == 2 ? 1 : 2))
	[[ $timeout =~ ^[0-9]+$ && $timeout -gt 0 ]] || die "--timeout must be a positive number of seconds"
	[[ $MEM =~ ^[0-9]+$ && $MEM -ge 256 ]] || die "--mem must be a number of MB >= 256"
	[[ $SMP =~ ^[0-9]+$ && $SMP -ge 1 ]] || die "--smp must be a positive number"
	case $PWD/ in
	/tmp/* | /proc/* | /sys/* | /dev/* | /run/*)
		die "the current directory $PWD is not visible in the guest (tmpfs/procfs there); run from elsewhere" ;;
	esac
	case $CACHE/ in
	/tmp/* | /run/* | /proc/* | /sys/* | /dev/*) die "FABCHECK_VM_CACHE=$CACHE must not be under /tmp or /run" ;;
	esac

	ensure_pkgs qemu-system-x86_64:qemu-system-x86 busybox:busybox-static depmod:kmod \
		ip:iproute2 rdma:iproute2 -:rdma-core -:ibverbs-providers ibv_devinfo:ibverbs-utils \
		ib_write_bw:perftest rping:rdmacm-utils ibstat:infiniband-diags
	mkdir -p "$CACHE" || die "cannot create $CACHE"
	exec 9>"$CACHE/.lock"
	flock 9
	rm -rf "$CACHE"/kernel/.tmp.* "$CACHE"/initramfs/.tmp.* # left by an interrupted run
	prepare_kernel
	prepare_initramfs
	flock -u 9
	exec 9>&-

	mkdir -p "$CACHE/runs"
	find "$CACHE/runs" -mindepth 1 -maxdepth 1 -mtime +2 -exec rm -rf {} + 2>/dev/null || true
	RUN=$(mktemp -d "$CACHE/runs/$(date +%Y%m%d-%H%M%S).XXXXXX")
	trap vm_cleanup EXIT
	trap 'say "interrupted; stopping the guest"; exit 130' INT
	trap 'say "terminated; stopping the guest"; exit 143' TERM HUP

	local base="console=ttyS0 panic=-1 mitigations=off"
	if [[ ${FABCHECK_VM_VERBOSE:-0} != 1 ]]; then base+=" quiet loglevel=3"; fi
	local t0 t_started="" qpid1 qpid2="" port="" tries

	if [[ $guests == 1 ]]; then
		write_cmd_script "$RUN/cmd.main.sh" 1 198.18.0.1 "" va -- "$@"
	else
		write_cmd_script "$RUN/cmd.main.sh" 1 198.18.0.1 198.18.0.2 eth0 -- "$@"
		if [[ -n $peer_cmd ]]; then
			write_cmd_script "$RUN/cmd.peer.sh" 2 198.18.0.2 198.18.0.1 eth0 -- /bin/bash -c "$peer_cmd"
		else
			write_cmd_script "$RUN/cmd.peer.sh" 2 198.18.0.2 198.18.0.1 eth0 -- true
		fi
	fi

	# CMD's output: qemu writes the guest's stdout/stderr ports into FIFOs, cat copies them to
	# our stdout/stderr. Guest 2's output goes to our stderr, each line prefixed with "[guest 2] ".
	mkfifo "$RUN/out.main.fifo" "$RUN/err.main.fifo"
	cat "$RUN/out.main.fifo" &
	AUX_PIDS+=($!)
	cat "$RUN/err.main.fifo" >&2 &
	AUX_PIDS+=($!)
	[[ $guests == 2 ]] && mkfifo "$RUN/out.peer.fifo" "$RUN/err.peer.fifo"

	t0=$(now_ms)
	if [[ $guests == 2 ]]; then
		# guest 2 listens on a free loopback port, guest 1 connects to it
		for ((tries = 0; tries < 5; tries++)); do
			port=$((20000 + RANDOM % 40000))
			port_in_use "$port" && continue
			local f
			for f in out err; do # readers first: qemu's open of a FIFO waits for one
				sed -u 's/^/[guest 2] /' "$RUN/$f.peer.fifo" >&2 &
				AUX_PIDS+=($!)
			done
			start_qemu peer "$base fabcheck.role=peer fabcheck.net=eth fabcheck.addr=198.18.0.2" \
				-netdev "socket,id=n0,listen=127.0.0.1:$port" \
				-device virtio-net-pci,netdev=n0,mac=52:54:00:fa:bc:02,romfile=
			qpid2=$QPID
			local i
			for ((i = 0; i < 100; i++)); do
				port_in_use "$port" && break
				kill -0 "$qpid2" 2>/dev/null || break
				sleep 0.05
			done
			port_in_use "$port" && break
			kill "$qpid2" 2>/dev/null || true
			wait "$qpid2" 2>/dev/null || true
			qpid2=""
		done
		[[ -n $qpid2 ]] || die2 "could not start guest 2 listening on 127.0.0.1 (see $RUN/qemu.peer.stderr)"
		start_qemu main "$base fabcheck.role=main fabcheck.net=eth fabcheck.addr=198.18.0.1 fabcheck.waitpeer=1" \
			-netdev "socket,id=n0,connect=127.0.0.1:$port" \
			-device virtio-net-pci,netdev=n0,mac=52:54:00:fa:bc:01,romfile=
	else
		start_qemu main "$base fabcheck.role=main fabcheck.net=veth"
	fi
	qpid1=$QPID
	if [[ ${FABCHECK_VM_VERBOSE:-0} == 1 ]]; then
		if [[ $guests == 2 ]]; then
			tail -n +1 -F -s 0.2 --pid="$qpid1" "$RUN/console.main.log" "$RUN/console.peer.log" >&2 2>/dev/null &
		else
			tail -n +1 -F -s 0.2 --pid="$qpid1" "$RUN/console.main.log" >&2 2>/dev/null &
		fi
		AUX_PIDS+=($!)
	fi

	local deadline=$((t0 + timeout * 1000)) timed_out=0 peer_died=0
	while kill -0 "$qpid1" 2>/dev/null; do
		[[ -z $t_started && -e $RUN/started ]] && t_started=$(now_ms)
		if [[ -n $qpid2 && ! -e $RUN/rc && $peer_died -eq 0 ]] && ! kill -0 "$qpid2" 2>/dev/null; then
			peer_died=1
			[[ -e $RUN/setup-error.peer ]] || say "error: guest 2 exited unexpectedly (console: $RUN/console.peer.log)"
			kill "$qpid1" 2>/dev/null || true
		fi
		if (($(now_ms) > deadline)); then
			timed_out=1
			kill "$qpid1" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$qpid1" 2>/dev/null || true
	local t_end; t_end=$(now_ms)
	[[ -z $t_started && -e $RUN/started ]] && t_started=$t_end
	if [[ -n $qpid2 ]]; then kill "$qpid2" 2>/dev/null || true; wait "$qpid2" 2>/dev/null || true; fi
	# let the output copies drain (a read-write open never blocks, even if cat is gone)
	local fd f
	for f in "$RUN"/*.fifo; do exec {fd}<>"$f"; exec {fd}>&-; done
	for f in "${AUX_PIDS[@]}"; do # (the console tail -F stops by itself once qemu is gone)
		wait "$f" 2>/dev/null || true
	done
	AUX_PIDS=()

	local timing
	timing="boot $([[ -n $t_started ]] && fmt_s $((t_started - t0)) || echo '?') s"
	[[ -n $t_started ]] && timing+=", run $(fmt_s $((t_end - t_started))) s"
	timing+=", total $(fmt_s $((t_end - t0))) s"

	if [[ $timed_out -eq 1 ]]; then
		say "error: the guest did not finish within $timeout s; killed it ($timing)"
		say "console log: $RUN/console.main.log"
		exit 124
	fi
	local g
	for g in main peer; do
		if [[ -e $RUN/setup-error.$g ]]; then
			say "error: guest setup failed${qpid2:+ in $([[ $g == main ]] && echo 'guest 1' || echo 'guest 2')}: $(<"$RUN/setup-error.$g")"
			say "console log: $RUN/console.$g.log"
			exit 2
		fi
	done
	if [[ ! -e $RUN/rc ]]; then
		say "error: the guest stopped without reporting CMD's exit status ($timing); last console lines:"
		tail -n 25 "$RUN/console.main.log" >&2 2>/dev/null || true
		[[ -s $RUN/qemu.main.stderr ]] && { say "qemu said:"; cat "$RUN/qemu.main.stderr" >&2; }
		say "console log: $RUN/console.main.log"
		exit 2
	fi
	local rc; rc=$(<"$RUN/rc")
	[[ $rc =~ ^[0-9]+$ ]] || rc=2
	if [[ $guests == 2 ]]; then
		say "guest 2: peer command status: $(cat "$RUN/rc.peer" 2>/dev/null || echo 'still running')"
	fi
	say "vm: $timing; exit status $rc"
	if [[ $rc -ne 0 ]]; then
		say "console log: $RUN/console.main.log"
	fi
	RUN_OK=1
	[[ $rc -ne 0 ]] && RUN_OK=0
	exit "$rc"
}

# ----------------------------------------------------------------------------- main

main() {
	local mode=add name=rxe0 netdev="" guests=1 timeout=${FABCHECK_VM_TIMEOUT:-1800}
	local peer_cmd=${FABCHECK_VM_PEER_CMD:-}
	MEM=${FABCHECK_VM_MEM:-1024}
	SMP=${FABCHECK_VM_SMP:-}
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
	vm) vm_main "$guests" "$timeout" "$peer_cmd" "$@" ;;
	esac
}

main "$@"
