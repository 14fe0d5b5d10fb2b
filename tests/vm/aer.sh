#!/usr/bin/env bash
# tests/vm/aer.sh - AER counters raised for real (issue #44): a q35 guest with a pcie-root-port and
# an e1000e (an Intel 82574L) behind it, errors injected with qemu's HMP `pcie_aer_inject_error` (a
# correctable BadTLP, a non-fatal completion timeout) at the root port (qemu's e1000e cannot enable
# its own error messages: its Device Control reporting bits are not writable), and fabcheck's reader
# (`probe::pci::health` through examples/aer_read.rs, then `pcie_rules`) run in the guest on its live
# /sys, naming the function, the rows and the counts, and the device whose link it is.
#
# Usage: cargo build --example aer_read && tests/vm/aer.sh
# Reuses tests/vm/harness.sh's kernel cache (/var/tmp/fabcheck-vm: the Debian kernel, downloaded
# once) and builds a small initramfs of its own (busybox, the virtio and 9p modules). Prints the guest's
# lines and `aer-vm: PASS` or `aer-vm: FAIL ...`; exit 0 pass, 1 fail, 2 could not run.
# About 15-30 s once the kernel is cached (TCG).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
SELF=$PWD/tests/vm/aer.sh
HARNESS=$PWD/tests/vm/harness.sh
EXAMPLE=${FABCHECK_AER_EXAMPLE:-$PWD/target/debug/examples/aer_read}
LIMIT=${FABCHECK_AER_TIMEOUT:-90}
say() { printf 'aer-vm: %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }
die2() { say "cannot run: $*"; exit 2; }
is_root() { [[ $(id -u) -eq 0 ]]; }
apt_update_once() { apt-get update -qq >/dev/null 2>&1 || true; }
# shellcheck source=tests/vm/harness.sh
source "$HARNESS"

command -v qemu-system-x86_64 >/dev/null || die2 "qemu-system-x86_64 is not installed"
[[ -x $EXAMPLE ]] || die2 "no $EXAMPLE: run \`cargo build --example aer_read\` first"
started=$(date +%s.%N)
prepare_kernel

# The guest's /init: find the emulated function, say READY, wait for the counters to move, run the reader.
aer_init() {
	cat <<'INIT'
#!/bin/busybox sh
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
while read -r mod; do insmod "/lib/modules/$mod" || echo "AER-SETUP insmod $mod failed"; done </modules.load
EXAMPLE=$(sed -n 's/.*fabcheck.example=\([^ ]*\).*/\1/p' /proc/cmdline)
i=0
until mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro,cache=loose hostroot /newroot 2>/dev/null; do
	i=$((i + 1)); [ $i -ge 50 ] && { echo "AER-SETUP no 9p share"; poweroff -f; }
	sleep 0.1
done
mount -t sysfs sysfs /newroot/sys; mount -t proc proc /newroot/proc; mount -t devtmpfs devtmpfs /newroot/dev
BDF=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor")" = 0x8086 ] && [ "$(cat "$d/device")" = 0x10d3 ] && BDF=${d##*/}
done
[ -n "$BDF" ] || { echo "AER-SETUP no e1000e function"; poweroff -f; }
[ -e "/sys/bus/pci/devices/$BDF/aer_dev_correctable" ] || echo "AER-NOFILES $BDF: $(ls /sys/bus/pci/devices/$BDF | tr '\n' ' ')"
# The root port above it: qemu's e1000e has no writable error-reporting bits (Device Control),
# so it sends no error message; the root port has them (the kernel's AER service sets them), and
# its own errors are those of the link to the device: what the ABI document says a link partner
# counts. The errors are injected there, and read there.
DEV=$BDF
BDF=$(basename "$(dirname "$(readlink -f "/sys/bus/pci/devices/$DEV")")")
# Linux 6.1 leaves the port's own reporting bits to drivers (6.5+ sets them in the core): without
# Correctable Error Reporting Enable qemu sends no ERR_COR. Set them through sysfs config, a
# byte write into the PCI Express capability's Device Control (cap + 8).
rb() { dd if="$1" bs=1 skip=$(($2)) count=1 2>/dev/null | od -An -tu1 | tr -d ' '; }
wb() { printf "\\$(printf %03o "$3")" | dd of="$1" bs=1 seek=$(($2)) count=1 conv=notrunc 2>/dev/null; }
cfg=/sys/bus/pci/devices/$BDF/config
p=$(rb "$cfg" 0x34) c= n=0
while [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != 255 ] && [ $n -lt 48 ]; do
	[ "$(rb "$cfg" "$p")" = 16 ] && { c=$p; break; }
	p=$(rb "$cfg" $((p + 1))); n=$((n + 1))
done
[ -n "$c" ] || { echo "AER-SETUP no PCI Express capability on $BDF"; poweroff -f; }
wb "$cfg" $((c + 8)) $(($(rb "$cfg" $((c + 8))) | 15))
echo "AER-SETUP $BDF DevCtl low byte $(rb "$cfg" $((c + 8)))"
echo "AER-READY $BDF $DEV"
total() { sed -n "s/^$2 //p" "/sys/bus/pci/devices/$BDF/$1" 2>/dev/null; }
i=0
until [ "$(total aer_dev_nonfatal TOTAL_ERR_NONFATAL)" -ge 2 ] 2>/dev/null; do
	i=$((i + 1)); [ $i -ge 300 ] && { echo "AER-TIMEOUT the non-fatal counters did not move"; break; }
	sleep 0.1
done
# The correctable one was injected first: if this qemu forwards it, it has been counted by now.
i=0
until [ "$(total aer_dev_correctable TOTAL_ERR_COR)" -ge 1 ] 2>/dev/null; do
	i=$((i + 1)); [ $i -ge 20 ] && { echo "AER-NOCOR no correctable error counted"; break; }
	sleep 0.1
done
for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
	echo "AER-FILE $f: $(tr '\n' ' ' <"/sys/bus/pci/devices/$BDF/$f" 2>&1)"
done
dmesg | grep -i -e aer -e "$BDF" | tail -n 12 | sed 's/^/AER-DMESG /'
chroot /newroot "$EXAMPLE" /sys "$BDF" "$DEV" | sed 's/^/AER-OUT /'
echo "AER-DONE"
poweroff -f
INIT
}

# The initramfs: busybox, the modules for virtio and 9p, the init above (cached by their hash).
bb=$(static_busybox) || die2 "no static busybox (apt-get install busybox-static)"
key=$({ sha256sum "$SELF" "$bb"; echo "$KVER"; } | sha256sum | cut -c1-16)
INITRD=$CACHE/initramfs/aer-$KVER-$key.cpio.gz
if [[ ! -s $INITRD ]]; then
	mkdir -p "$CACHE/initramfs"
	tmp=$(mktemp -d "$CACHE/initramfs/.aer.XXXXXX")
	mkdir -p "$tmp/root/bin" "$tmp/root/lib/modules" "$tmp/root/proc" "$tmp/root/sys" "$tmp/root/dev" "$tmp/root/newroot"
	cp "$bb" "$tmp/root/bin/busybox"
	for applet in $("$bb" --list); do [[ $applet == busybox ]] || ln -s busybox "$tmp/root/bin/$applet"; done
	aer_init >"$tmp/root/init"
	chmod 755 "$tmp/root/init"
	declare -A seen=()
	for mod in virtio_pci 9pnet_virtio 9p; do
		while read -r line; do
			[[ $line == insmod\ * ]] || continue
			path=${line#insmod }; path=${path%% *}; base=${path##*/}
			[[ -n ${seen[$base]:-} ]] && continue
			seen[$base]=1
			cp "$path" "$tmp/root/lib/modules/$base"
			strip_module_signature "$tmp/root/lib/modules/$base"
			echo "$base" >>"$tmp/root/modules.load"
		done < <(modprobe -d "$KROOT" -S "$KVER" --show-depends "$mod")
	done
	(cd "$tmp/root" && find . | "$bb" cpio -o -H newc -R 0:0 2>/dev/null | gzip -1 >"$INITRD") || die2 "could not build the initramfs"
	rm -rf "$tmp"
fi

RUN=$(mktemp -d /var/tmp/fabcheck-aer.XXXXXX)
QPID=
trap '[[ -n $QPID ]] && kill "$QPID" 2>/dev/null; rm -rf "$RUN"' EXIT
# The reader where the guest sees it at a plain path: the guest mounts its own /tmp (a checkout
# there is out of its sight), and the path goes on the kernel command line, where a space (a
# clone at `/tmp/a b/fabcheck`) would split it.
cp "$EXAMPLE" "$RUN/aer_read" || die2 "cannot copy $EXAMPLE to $RUN"
EXAMPLE=$RUN/aer_read
: >"$RUN/console"
qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 1 -m 512 -display none -no-reboot -nic none \
	-kernel "$VMLINUZ" -initrd "$INITRD" \
	-append "console=ttyS0 panic=-1 mitigations=off no_timer_check pcie_ports=native pcie_port_pm=off quiet fabcheck.example=$EXAMPLE" \
	-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off \
	-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1 -device e1000e,id=nic1,bus=rp1 \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-monitor "unix:$RUN/monitor,server=on,wait=off" -serial "file:$RUN/console" &
QPID=$!

# hmp COMMAND: one human-monitor command over the monitor socket, its answer on stderr.
hmp() {
	python3 - "$RUN/monitor" "$1" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2)
time.sleep(0.2)
s.sendall(sys.argv[2].encode() + b"\n")
time.sleep(0.5)
try:
    out = s.recv(65536).decode(errors="replace")
except socket.timeout:
    out = ""
sys.stderr.write("".join(l + "\n" for l in out.splitlines() if l.strip() and "QEMU" not in l and not l.startswith("(qemu)")))
PY
}

deadline=$(($(date +%s) + LIMIT))
until grep -q '^AER-READY' "$RUN/console"; do
	kill -0 "$QPID" 2>/dev/null || { cat "$RUN/console" >&2; die "the guest stopped before it was ready"; }
	(($(date +%s) < deadline)) || { tail -n 20 "$RUN/console" >&2; die "the guest was not ready within $LIMIT s"; }
	sleep 0.2
done
booted=$(date +%s.%N)
hmp "pcie_aer_inject_error -c rp1 BAD_TLP"
hmp "pcie_aer_inject_error rp1 COMP_TIME"
hmp "pcie_aer_inject_error rp1 POISON_TLP"
while kill -0 "$QPID" 2>/dev/null && (($(date +%s) < deadline)); do sleep 0.2; done
kill "$QPID" 2>/dev/null
grep -a '^AER-' "$RUN/console" | tr -d '\r' >&2
bdf=$(sed -n 's/^AER-READY \([^ ]*\).*/\1/p' "$RUN/console" | tr -d '\r')
out=$(grep -a '^AER-OUT ' "$RUN/console" | tr -d '\r')
took=$(awk -v a="$started" -v b="$(date +%s.%N)" -v c="$booted" 'BEGIN { printf "ready after %.1f s, total %.1f s", c - a, b - a }')
grep -q '^AER-DONE' "$RUN/console" || die "the reader did not run ($took)"
# (Each later message also carries the bits of the ones before it: the port's status is not
# cleared when a recovery fails, so CmpltTO may be counted twice.)
if ! grep -q "aer_dev_nonfatal: [2-9] (.*CmpltTO [1-9]" <<<"$out" || ! grep -q "aer_dev_nonfatal: [2-9] (.*, TLP [1-9]" <<<"$out"; then
	die "the non-fatal CmpltTO and poisoned TLP were not both counted on $bdf ($took)"
fi
# A lifetime count is info with the uptime it covers (contract 0.5: only a rise in a window, check
# --soak, is a warning or an error).
grep -q "finding pcie.aer Info $bdf: .* non-fatal uncorrectable errors since boot[^:]*: CmpltTO [1-9], TLP [1-9]" <<<"$out" ||
	die "pcie.aer did not name $bdf's CmpltTO ($took)"
grep -q "finding pcie.aer Info $bdf: .*other end of device" <<<"$out" || die "pcie.aer did not say whose link $bdf is the other end of"
# Correctable errors: qemu 7.2 (Debian 12) forwards no correctable message from a port (its
# pcie_aer_msg_alldev passes only uncorrectable ones with SERR#; later qemu also passes ERR_COR
# under Correctable Error Reporting Enable), so the BadTLP is judged where it arrives.
if grep -q "aer_dev_correctable: [1-9].*BadTLP [1-9]" <<<"$out"; then
	cor="and the correctable BadTLP"
else
	cor="(no correctable error arrived: $(qemu-system-x86_64 --version | head -n1) forwards none)"
fi
say "PASS: the root port $bdf's CmpltTO and poisoned TLP counted by the kernel and named by pcie.aer $cor ($took)"
