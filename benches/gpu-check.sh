#!/usr/bin/env bash
# benches/gpu-check.sh - what `--mem cuda` assumes of a GPU node, checked on one with a GPU and
# no RDMA NIC (issue #43), in about 5 minutes. No machine in fabcheck's CI has a GPU: this is
# the check a person runs where there is one, and pastes the summary into the issue.
#
#   1. the CUDA driver itself (benches/gpu-probe.c, built with cc): CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
#      (124), where cuMemAlloc puts pointers, dma-buf export of an aligned range, of a range off a
#      page boundary (cuda.h: refused) and of an off-page pointer's range rounded out to host pages
#      (what fabcheck and perftest export), and what a primary context costs made per test against kept;
#   2. fabcheck's own CUDA layer on the real driver: `cargo test -p fabcheck-verbs --test cuda_gpu`;
#   3. `pair --mem cuda` on Soft-RoCE as far as it goes: rxe has no dma-buf memory regions and cannot
#      pin GPU memory, so the run must end in a GPU-registration error naming the GPU, exit 2, by
#      ordinal and by bus id. Needs rxe0 (created here when run as root on a kernel with rdma_rxe).
#
# Usage: benches/gpu-check.sh [--gpu N] [--fabcheck PATH] [--no-rxe]
# Exit 0 every check passed (INFO lines are figures, not judged), 1 a check failed, 2 no usable GPU.
set -euo pipefail

PROG='gpu-check.sh'
cd "$(dirname "$0")/.."

usage() {
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
}

gpu=0
fabcheck=
rxe=1
while [ $# -gt 0 ]; do
	case $1 in
	--gpu) gpu=${2:?--gpu N}; shift 2 ;;
	--fabcheck) fabcheck=${2:?--fabcheck PATH}; shift 2 ;;
	--no-rxe) rxe=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "$PROG: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

failed=0
results=()
say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
result() { # STATUS CHECK DETAIL
	results+=("$(printf '%-5s %-28s %s' "$1" "$2" "$3")")
	[ "$1" != FAIL ] || failed=1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fabcheck-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

say "1/3 the CUDA driver (benches/gpu-probe.c)"
command -v cc >/dev/null || { say "cc is needed to build the probe (build-essential)"; exit 2; }
cc -O1 -Wall -o "$work/gpu-probe" benches/gpu-probe.c -ldl
if ! timeout 120 "$work/gpu-probe" "$gpu" >"$work/probe.txt"; then
	cat "$work/probe.txt" >&2
	say "the CUDA driver cannot be used here: $(sed -n 's/^error=//p' "$work/probe.txt")"
	exit 2
fi
cat "$work/probe.txt" >&2
value() { sed -n "s/^$1=//p" "$work/probe.txt" | head -n 1; }
bus=$(value gpu | tr 'A-F' 'a-f')
attr=$(value dmabuf_attr)
case $attr in
0 | 1) result INFO "dma-buf attribute (124)" "$attr on $bus ($([ "$attr" = 1 ] && echo "dma-buf is tried first" || echo "peer memory only"))" ;;
*) result FAIL "dma-buf attribute (124)" "$attr: fabcheck treats an error here as an error" ;;
esac
result INFO "cuMemAlloc alignment" "$(value misaligned | sed 's/ of=/ of /') allocations off a host page; 64 KiB ones: $(awk '/^align size=65536 /{print $3}' "$work/probe.txt" | tr '\n' ' ')"
aligned=$(value export_aligned)
case $aligned in
OK) result PASS "export, aligned range" "a 64 KiB allocation exports as dma-buf" ;;
CUDA_ERROR_NOT_SUPPORTED*) result INFO "export, aligned range" "$aligned: fabcheck falls back to peer memory" ;;
"not asked"* | "no "*) result INFO "export, aligned range" "$aligned" ;;
*) result FAIL "export, aligned range" "$aligned" ;;
esac
unaligned=$(value export_unaligned_ptr)
case $unaligned in
"") ;;
CUDA_ERROR_INVALID_VALUE) result PASS "export, pointer off a page" "refused ($unaligned), as cuda.h says: why fabcheck rounds down" ;;
*) result INFO "export, pointer off a page" "$unaligned (cuda.h says it must be refused)" ;;
esac
below=$(value export_page_below)
case $below in
"") ;;
OK) result PASS "export, rounded to pages" "an off-page pointer's range, rounded out to host pages, exports (fabcheck's and perftest's call)" ;;
CUDA_ERROR_NOT_SUPPORTED*) result INFO "export, rounded to pages" "$below: fabcheck falls back to peer memory" ;;
*) result FAIL "export, rounded to pages" "$below: fabcheck's export of an off-page buffer would fail here" ;;
esac
result INFO "context made per test" "$(value ctx_create_ms) ms each (retain+alloc+free+release from nothing)"
result INFO "context kept" "$(value ctx_kept_ms) ms each (fabcheck since #43)"

say "2/3 fabcheck's CUDA layer on the real driver (cargo test -p fabcheck-verbs --test cuda_gpu)"
if command -v cargo >/dev/null; then
	if timeout 300 cargo test --locked -p fabcheck-verbs --test cuda_gpu -- --nocapture >"$work/cuda_gpu.txt" 2>&1; then
		if grep -q SKIPPED "$work/cuda_gpu.txt"; then
			result FAIL "fabcheck-verbs cuda_gpu" "skipped, though the probe used the driver: $(grep SKIPPED "$work/cuda_gpu.txt")"
		else
			result PASS "fabcheck-verbs cuda_gpu" "$(grep -m1 '^dma-buf' "$work/cuda_gpu.txt" || echo 'init, alloc, export, free')"
		fi
	else
		tail -n 20 "$work/cuda_gpu.txt" >&2
		result FAIL "fabcheck-verbs cuda_gpu" "see above"
	fi
else
	result INFO "fabcheck-verbs cuda_gpu" "not run: no cargo here"
fi

say "3/3 pair --mem cuda on Soft-RoCE"
if [ "$rxe" = 0 ]; then
	result INFO "pair on rxe" "not run (--no-rxe)"
else
	if [ ! -e /sys/class/infiniband/rxe0 ] && [ "$(id -u)" = 0 ]; then
		./soft-roce-setup.sh >&2 || true
	fi
	if [ ! -e /sys/class/infiniband/rxe0 ]; then
		result INFO "pair on rxe" "not run: no rxe0 ($(./soft-roce-setup.sh --status 2>&1 | tail -n 1)); as root: ./soft-roce-setup.sh"
	else
		if [ -z "$fabcheck" ]; then
			fabcheck=target/debug/fabcheck
			[ -x "$fabcheck" ] || cargo build --locked --bin fabcheck >&2
		fi
		for mem in "cuda:$gpu" "cuda:$bus"; do
			set +e
			timeout 120 "$fabcheck" pair localhost localhost --device rxe0 --mem "$mem" --tests send_lat --iters 10 --timeout 60 \
				>"$work/pair.out" 2>"$work/pair.err"
			rc=$?
			set -e
			if [ "$rc" = 2 ] && grep -q "registering GPU memory of $bus" "$work/pair.err"; then
				result PASS "pair --mem $mem" "exit 2: $(grep -m1 'registering GPU memory' "$work/pair.err" | cut -c1-160)"
			else
				cat "$work/pair.err" >&2
				result FAIL "pair --mem $mem" "exit $rc, not the GPU-registration error (exit 2) rxe must end in"
			fi
		done
	fi
fi

echo
echo "gpu-check on $(hostname) GPU cuda:$gpu ($bus):"
printf '  %s\n' "${results[@]}"
exit "$failed"
