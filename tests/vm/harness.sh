#!/usr/bin/env bash
# tests/vm/harness.sh - the throwaway qemu guest behind `soft-roce-setup.sh --vm`: a Debian kernel that
# has rdma_rxe, a busybox initramfs, the checkout shared read-only, rxe0 on a veth (or two guests on a
# virtual link; with --rails N, rxe0..rxeN-1 on N veth pairs or N links), and CMD run inside. Sourced by soft-roce-setup.sh, which owns the flags and the helpers
# (say, die, ensure_pkgs...); not meant to be run by itself.
# shellcheck shell=bash

# ----------------------------------------------------------------------------- VM: kernel + initramfs

CACHE=${FABCHECK_VM_CACHE:-/var/tmp/fabcheck-vm}
# Modules the guest loads, in this order (each with its dependencies). "opt" ones may fail. A
# third field is the module's parameters (bonding: no bond0 of its own; tests/rxe/bond.rs makes
# the bond it reads).
GUEST_MODULES=(
	req:virtio_pci req:virtio_net req:virtio_console req:9pnet_virtio req:9p req:veth
	req:crc32_generic opt:crc32-pclmul
	req:rdma_rxe req:ib_uverbs req:rdma_ucm opt:ib_umad req:sch_netem opt:sch_tbf
	req:bonding:max_bonds=0
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
			KVER=$(find "$tmp/root/lib/modules" -mindepth 1 -maxdepth 1 -printf "%f\n" | sort | head -n1)
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
		# shellcheck disable=SC2012 # newest first; the names are our own hex keys
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

ROLE=main NET=veth ADDR=198.18.0.1 WAITPEER=0 RAILS=1
for w in $(cat /proc/cmdline); do
	case $w in
	fabcheck.role=*) ROLE=${w#*=} ;;
	fabcheck.net=*) NET=${w#*=} ;;
	fabcheck.addr=*) ADDR=${w#*=} ;;
	fabcheck.waitpeer=*) WAITPEER=${w#*=} ;;
	fabcheck.rails=*) RAILS=${w#*=} ;;
	esac
done
case $RAILS in [1-8]) ;; *) RAILS=1 ;; esac
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

while read -r flag mod params; do
	# shellcheck disable=SC2086 # the parameters are words of their own
	if ! err=$(insmod "/lib/modules/$mod" $params 2>&1); then
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
# the host's tools, found on PATH inside the chroot (an absolute path, so busybox does not run its
# own applet of the same name instead)
C() { chroot /newroot /usr/bin/env "$@"; }
# The directories the command needs (the one it runs in, the checkout, and each --share DIR), each
# shared on its own and mounted at its own physical path: visible even where the host's / is not
# (under /tmp or /run, tmpfs here). $OUT/mounts: TAG<tab>PATH, shorter paths first (a share inside
# another is mounted after it). $OUT/aliases: PATH<tab>ALIAS, the path the host reached one by (a
# symlink on the way), made to lead there where it does not already (a symlink under /tmp).
TAB=$(printf '\t')
while IFS=$TAB read -r tag dir; do
	case $dir in /*) ;; *) die "share path '$dir' is not absolute" ;; esac
	[ -d "/newroot$dir" ] || mkdir -p "/newroot$dir" || die "cannot make $dir in the guest"
	mount9p "$tag" "/newroot$dir" ro,cache=loose
done <"$OUT/mounts"
while IFS=$TAB read -r dir alias; do
	C test -d "$alias" && continue
	real=""
	C mkdir -p "$alias" && real=$(C realpath "$alias")
	if [ -z "$real" ] || ! mount -o bind "/newroot$dir" "/newroot$real"; then
		die "cannot make $alias lead to $dir in the guest"
	fi
done <"$OUT/aliases"
say "filesystems mounted"

run() {
	err=$(C "$@" 2>&1) || die "$*: $err"
}
hostname "fabcheck-vm-$ROLE"
echo 'link set lo up' >/tmp/ip.batch
# Rail k (0 <= k < RAILS) is rxeK on its own netdev and subnet 198.18.K.0/24; rail 0 is what a
# guest without --rails has (va/vb or eth0, 198.18.0.0/24, rxe0).
HOSTNUM=${ADDR##*.}
NETDEVS=""
k=0
while [ $k -lt "$RAILS" ]; do
	case $NET in
	veth)
		if [ $k = 0 ]; then A=va B=vb; else A=va$k B=vb$k; fi
		printf '%s\n' "link add $A type veth peer name $B" "addr add 198.18.$k.1/24 dev $A" \
			"addr add 198.18.$k.2/24 dev $B" "link set $A up" "link set $B up" >>/tmp/ip.batch
		;;
	eth)
		A=eth$k
		i=0
		while [ ! -e /sys/class/net/$A ]; do
			i=$((i + 1)); [ $i -ge 100 ] && die "no $A (virtio-net) in the guest"
			sleep 0.1
		done
		# the links are given to qemu in rail order, so ethK is rail K's: its MAC says so
		if [ $k = 0 ]; then MAC=52:54:00:fa:bc:0$HOSTNUM; else MAC=52:54:00:fb:0$k:0$HOSTNUM; fi
		[ "$(cat /sys/class/net/$A/address)" = $MAC ] ||
			die "$A has MAC $(cat /sys/class/net/$A/address), not rail $k's $MAC"
		printf '%s\n' "addr add 198.18.$k.$HOSTNUM/24 dev $A" "link set $A up" >>/tmp/ip.batch
		;;
	*) die "unknown fabcheck.net=$NET" ;;
	esac
	NETDEVS="$NETDEVS $A"
	k=$((k + 1))
done
err=$(C ip -batch - </tmp/ip.batch 2>&1) || die "ip -batch: $err"
say "network up"
k=0
for A in $NETDEVS; do
	run rdma link add rxe$k type rxe netdev "$A"
	k=$((k + 1))
done
k=0
while [ $k -lt "$RAILS" ]; do
	i=0
	until grep -q ACTIVE /sys/class/infiniband/rxe$k/ports/1/state 2>/dev/null; do
		i=$((i + 1))
		[ $i -ge 150 ] && die "rxe$k port 1 did not become ACTIVE: $(cat /sys/class/infiniband/rxe$k/ports/1/state 2>&1)"
		sleep 0.1
	done
	i=0
	until [ -c /newroot/dev/infiniband/uverbs$k ] && [ -c /newroot/dev/infiniband/rdma_cm ]; do
		i=$((i + 1))
		[ $i -ge 50 ] && die "no /dev/infiniband/uverbs$k or rdma_cm: $(ls -l /newroot/dev/infiniband 2>&1)"
		sleep 0.1
	done
	if ! grep -q . /sys/class/infiniband/rxe$k/ports/1/gids/1 2>/dev/null ||
		grep -q '^0000:0000:0000:0000:0000:0000:0000:0000$' /sys/class/infiniband/rxe$k/ports/1/gids/1; then
		say "warning: rxe$k has no IPv4 RoCE v2 GID at index 1 yet"
	fi
	k=$((k + 1))
done

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
if [ "$RAILS" = 1 ]; then say "rxe0 ready; running the command"; else say "rxe0..rxe$((RAILS - 1)) ready; running the command"; fi
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
	key=$({ sha256sum "$SELF" "$HARNESS" "$bb"; echo "$KVER ${GUEST_MODULES[*]}"; } | sha256sum | cut -c1-16)
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
		flag=${spec%%:*} mod=${spec#*:} params=
		if [[ $mod == *:* ]]; then
			params=${mod#*:} mod=${mod%%:*}
		fi
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
			# The parameters go to the module named, not to what it depends on.
			if [[ $base == "${mod//-/_}.ko" || $base == "$mod.ko" ]]; then
				echo "$flag $base $params" >>"$tmp/root/modules.load"
			else
				echo "$flag $base" >>"$tmp/root/modules.load"
			fi
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
		if [[ -n $RAILS ]]; then
			local k devs="" netdevs=""
			for ((k = 0; k < RAILS; k++)); do
				devs+="${devs:+ }rxe$k"
				if [[ $netdev != va ]]; then netdevs+="${netdevs:+ }eth$k"
				elif ((k == 0)); then netdevs+="${netdevs:+ }va"
				else netdevs+="${netdevs:+ }va$k"; fi
			done
			echo "export FABCHECK_VM_RAILS=$RAILS"
			echo "export FABCHECK_VM_RAIL_DEVS=$(shq "$devs")"
			echo "export FABCHECK_VM_RAIL_NETDEVS=$(shq "$netdevs")"
		fi
		echo "ulimit -l unlimited 2>/dev/null || echo 'fabcheck-vm: warning: ulimit -l unlimited failed' >&2"
		echo "cd $(shq "$PWD") || { echo 'fabcheck-vm: cannot cd to '$(shq "$PWD")' in the guest' >&2; exit 2; }"
		printf 'exec'
		for v in "$@"; do printf ' %s' "$(shq "$v")"; done
		echo
	} >"$file"
}

QEMU_PIDS=()
AUX_PIDS=()
VIRTFS=()
SHARE_PHYS=()

# prepare_shares RUN DIR...: the directories the guest mounts at their own paths (the current one
# first, as fccwd; then fcshare1...): their -virtfs options in VIRTFS, their physical paths in
# SHARE_PHYS, and RUN/mounts and RUN/aliases for the guest's init (see there).
prepare_shares() {
	local run=$1 d given phys k=0 tag
	local -a lines=()
	shift
	: >"$run/aliases"
	for d in "$@"; do
		[[ -d $d ]] || die "--share $d: not a directory"
		given=$(CDPATH='' cd "$d" && pwd) || die "cannot enter $d"
		phys=$(CDPATH='' cd "$d" && pwd -P) || die "cannot enter $d"
		[[ $given$phys != *[$'\t\n']* ]] || die "$(printf '%q' "$phys"): a tab or a newline in the path of a directory the guest needs"
		case $phys/ in
		/proc/* | /sys/* | /dev/* | /run/*) die "$phys is a kernel or runtime filesystem: the guest cannot share it (run from the checkout)" ;;
		esac
		if ((k == 0)); then tag=fccwd; else tag=fcshare$k; fi
		k=$((k + 1))
		SHARE_PHYS+=("$phys")
		VIRTFS+=(-virtfs "local,path=${phys//,/,,},mount_tag=$tag,security_model=none,readonly=on,multidevs=remap")
		lines+=("$tag"$'\t'"$phys")
		[[ $given == "$phys" ]] || printf '%s\t%s\n' "$phys" "$given" >>"$run/aliases"
	done
	printf '%s\n' "${lines[@]}" | awk -F'\t' '{ print length($2) "\t" $0 }' | sort -n | cut -f 2- >"$run/mounts"
}
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
		"${VIRTFS[@]}" \
		"$@" </dev/null >/dev/null 2>"$RUN/qemu.$name.stderr" &
	QPID=$!
	QEMU_PIDS+=("$QPID")
}

port_in_use() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# link_mac RAIL GUEST: the MAC of GUEST's (1 or 2) end of rail RAIL's link; rail 0's is the one a
# guest without --rails has. The guest's init checks that ethK has rail K's.
link_mac() {
	if (($1 == 0)); then echo "52:54:00:fa:bc:0$2"; else echo "52:54:00:fb:0$1:0$2"; fi
}

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
	[[ -z $RAILS || $RAILS =~ ^[1-8]$ ]] || die "--rails must be a number from 1 to 8"
	case $PWD/ in
	/proc/* | /sys/* | /dev/* | /run/*)
		die "the current directory $PWD is a kernel or runtime filesystem; run from the checkout" ;;
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
	prepare_shares "$RUN" "$PWD" "${SHARES[@]}"
	# A file CMD names that the guest would not see (under the host's /tmp or /run, outside every
	# share: a CARGO_TARGET_DIR there) fails here, by name, rather than as "not found" in the guest.
	local arg phys share seen
	for arg in "$@"; do
		[[ $arg == /* && ( -e $arg || -L $arg ) ]] || continue
		phys=$(readlink -f -- "$arg") || continue
		case $phys/ in /tmp/* | /run/* | /dev/shm/*) ;; *) continue ;; esac
		seen=0
		for share in "${SHARE_PHYS[@]}"; do [[ $phys/ == "$share"/* ]] && seen=1; done
		((seen)) || die "$arg is hidden in the guest (its /tmp and /run are tmpfs) and lies outside the current directory: --share a directory that holds it"
	done
	trap vm_cleanup EXIT
	trap 'say "interrupted; stopping the guest"; exit 130' INT
	trap 'say "terminated; stopping the guest"; exit 143' TERM HUP

	local base="console=ttyS0 panic=-1 mitigations=off"
	if [[ ${FABCHECK_VM_VERBOSE:-0} != 1 ]]; then base+=" quiet loglevel=3"; fi
	# --rails N: N rxe devices, each on its own veth pair (one guest) or link (two guests)
	[[ -n $RAILS ]] && base+=" fabcheck.rails=$RAILS"
	local t0 t_started="" qpid1 qpid2="" port="" tries links=${RAILS:-1} k
	local -a ports=() listen=() connect=()

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
		# guest 2 listens on a free loopback port per link, guest 1 connects to each; rail k's link
		# is the k-th virtio-net device of both guests (ethK), its MACs rail 0's as without --rails
		for ((tries = 0; tries < 5; tries++)); do
			ports=() listen=() connect=()
			for ((k = 0; k < links; k++)); do
				port=$((20000 + RANDOM % 40000))
				port_in_use "$port" && continue 2
				[[ " ${ports[*]} " == *" $port "* ]] && continue 2
				ports+=("$port")
				listen+=(-netdev "socket,id=n$k,listen=127.0.0.1:$port" -device "virtio-net-pci,netdev=n$k,mac=$(link_mac "$k" 2),romfile=")
				connect+=(-netdev "socket,id=n$k,connect=127.0.0.1:$port" -device "virtio-net-pci,netdev=n$k,mac=$(link_mac "$k" 1),romfile=")
			done
			local f
			for f in out err; do # readers first: qemu's open of a FIFO waits for one
				sed -u 's/^/[guest 2] /' "$RUN/$f.peer.fifo" >&2 &
				AUX_PIDS+=($!)
			done
			start_qemu peer "$base fabcheck.role=peer fabcheck.net=eth fabcheck.addr=198.18.0.2" "${listen[@]}"
			qpid2=$QPID
			local i all
			for ((i = 0; i < 100; i++)); do
				all=1
				for port in "${ports[@]}"; do port_in_use "$port" || all=0; done
				[[ $all -eq 1 ]] && break
				kill -0 "$qpid2" 2>/dev/null || break
				sleep 0.05
			done
			[[ $all -eq 1 ]] && break
			kill "$qpid2" 2>/dev/null || true
			wait "$qpid2" 2>/dev/null || true
			qpid2=""
		done
		[[ -n $qpid2 ]] || die2 "could not start guest 2 listening on 127.0.0.1 (see $RUN/qemu.peer.stderr)"
		start_qemu main "$base fabcheck.role=main fabcheck.net=eth fabcheck.addr=198.18.0.1 fabcheck.waitpeer=1" "${connect[@]}"
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
		# A virtio link qemu stopped serving (seen under TCG on 2 cores, docs/ci.md): every RC test
		# over it stalls after. Said, so a failed run's log tells the emulator's stall apart.
		local stalled
		stalled=$(grep -h "NETDEV WATCHDOG" "$RUN"/console.*.log 2>/dev/null | head -n 1 || true)
		if [[ -n $stalled ]]; then
			say "an emulated link stalled in qemu (the guest kernel: ${stalled#*] }): the tests over it stalled with it"
		fi
	fi
	RUN_OK=1
	[[ $rc -ne 0 ]] && RUN_OK=0
	exit "$rc"
}
