#!/usr/bin/env bash
# Installs what building and testing fabcheck needs on Debian/Ubuntu (idempotent).
# Build: libibverbs/librdmacm headers and libclang (rdma-sys runs bindgen).
# Run and compare: rdma-core, the rxe provider, ibverbs-utils and perftest.
# fabric: the MAD library headers (bindgen), and ibsim + OpenSM for the ibsim tier.
# Guest for the Soft-RoCE tier: qemu, busybox, kmod (the kernel itself comes via soft-roce-setup.sh).
# Packages (dist/package.sh): binutils (objcopy, readelf), rpmbuild, rpm2cpio and cpio, man and groff
# to render the man pages, python3-venv for zig and cargo-zigbuild from PyPI, lintian and rpmlint.
# The exporter's tests: prometheus (the server, and promtool for `check metrics` and `test rules`),
# prometheus-alertmanager (amtool check-config for the shipped inhibit rules).
# JUnit output: libxml2-utils (xmllint --schema against tests/schemas/junit-10.xsd).
# JSON output: python3-jsonschema (tests/schemas/validate.py against docs/schemas/).
# The Soft-RoCE tier's wire check of --tclass (the guest runs the host's binaries): tcpdump.
# The two-guest tier's real Slurm (tests/rxe/slurm.sh): slurmctld, slurmd, slurm-client, munge.
# accept --html checked in a real headless browser (tests/integration/accept_levels.rs): chromium.
set -euo pipefail
packages=(
	build-essential pkg-config libibverbs-dev librdmacm-dev libclang-dev clang
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils infiniband-diags perftest iproute2 util-linux
	libibumad-dev libibmad-dev libibnetdisc-dev ibsim-utils opensm
	qemu-system-x86 busybox-static kmod python3 shellcheck
	binutils rpm rpm2cpio cpio man-db groff-base python3-venv lintian rpmlint
	prometheus prometheus-alertmanager libxml2-utils python3-jsonschema tcpdump
	slurmctld slurmd slurm-client munge chromium
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all present" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 2; }
	sudo=sudo
fi
echo "deps: installing ${missing[*]}" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
