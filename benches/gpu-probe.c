/*
 * benches/gpu-probe.c: what fabcheck's `--mem cuda` assumes of the CUDA driver, asked of the
 * driver itself (benches/gpu-check.sh builds and runs it). No CUDA headers needed: the few
 * prototypes are NVIDIA's cuda.h (CUDA 12), declared by hand as crates/fabcheck-verbs/src/cuda.rs
 * declares them, and libcuda.so.1 is opened at run time (FABCHECK_CUDA_LIBRARY names another,
 * e.g. the test double, to try this program without a GPU).
 *
 * Usage: gpu-probe ORDINAL. Prints `key=value` lines (benches/gpu-check.sh reads them):
 *   gpu=BUSID                     cuDeviceGetPCIBusId of the ordinal
 *   dmabuf_attr=0|1|error:NAME    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (124)
 *   align size=N mod4k=A mod64k=B one line per allocation: where cuMemAlloc puts pointers
 *   misaligned=K of=N             allocations whose pointer is not host-page aligned
 *   export_aligned=OK|NAME        a page-aligned allocation's whole range (fabcheck's 64 KiB buffers)
 *   export_unaligned_ptr=OK|NAME  the same range started 256 bytes in (cuda.h: must be aligned)
 *   export_page_below=OK|NAME     a small allocation's range rounded out to host pages, as
 *                                 fabcheck and perftest export an off-page pointer
 *   ctx_create_ms=X               retain + alloc + free + release with no other holder (the
 *                                 context is made and destroyed each time: fabcheck before #43)
 *   ctx_kept_ms=X                 the same while the context is held (fabcheck now)
 * Exit 0, or 2 when the driver cannot be used (then `error=...` says why).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice);
static CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long);
static CUresult (*cuGetErrorName)(CUresult, const char **);

static const char *name(CUresult rc)
{
	static char buf[32];
	const char *n = NULL;
	if (rc == 0)
		return "OK";
	if (cuGetErrorName && cuGetErrorName(rc, &n) == 0 && n)
		return n;
	snprintf(buf, sizeof buf, "CUresult_%d", rc);
	return buf;
}

static void *sym(void *lib, const char *s, int required)
{
	void *f = dlsym(lib, s);
	if (!f && required) {
		printf("error=libcuda has no %s\n", s);
		exit(2);
	}
	return f;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* An export of [ptr, ptr + len) as a dma-buf; the descriptor is closed again. */
static CUresult export(CUdeviceptr ptr, size_t len)
{
	int fd = -1;
	if (!cuMemGetHandleForAddressRange)
		return -1;
	CUresult rc = cuMemGetHandleForAddressRange(&fd, ptr, len, 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */, 0);
	if (rc == 0 && fd >= 0)
		close(fd);
	return rc;
}

#define CHECK(call)                                                               \
	do {                                                                      \
		CUresult rc_ = (call);                                            \
		if (rc_ != 0) {                                                   \
			printf("error=%s failed: %s\n", #call, name(rc_));        \
			exit(2);                                                  \
		}                                                                 \
	} while (0)

int main(int argc, char **argv)
{
	int ordinal = argc > 1 ? atoi(argv[1]) : 0;
	const char *path = getenv("FABCHECK_CUDA_LIBRARY");
	void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("error=cannot load the CUDA driver library: %s\n", dlerror());
		return 2;
	}
	*(void **)&cuInit = sym(lib, "cuInit", 1);
	*(void **)&cuDeviceGet = sym(lib, "cuDeviceGet", 1);
	*(void **)&cuDeviceGetPCIBusId = sym(lib, "cuDeviceGetPCIBusId", 1);
	*(void **)&cuDeviceGetAttribute = sym(lib, "cuDeviceGetAttribute", 1);
	*(void **)&cuDevicePrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain", 1);
	*(void **)&cuDevicePrimaryCtxRelease = sym(lib, "cuDevicePrimaryCtxRelease_v2", 1);
	*(void **)&cuCtxSetCurrent = sym(lib, "cuCtxSetCurrent", 1);
	*(void **)&cuMemAlloc = sym(lib, "cuMemAlloc_v2", 1);
	*(void **)&cuMemFree = sym(lib, "cuMemFree_v2", 1);
	*(void **)&cuMemGetHandleForAddressRange = sym(lib, "cuMemGetHandleForAddressRange", 0);
	*(void **)&cuGetErrorName = sym(lib, "cuGetErrorName", 0);
	CHECK(cuInit(0));
	CUdevice dev;
	CHECK(cuDeviceGet(&dev, ordinal));
	char bus[32] = { 0 };
	CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
	printf("gpu=%s\n", bus);

	int attr = 0;
	CUresult rc = cuDeviceGetAttribute(&attr, 124 /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */, dev);
	if (rc == 0)
		printf("dmabuf_attr=%d\n", attr);
	else
		printf("dmabuf_attr=error:%s\n", name(rc));

	CUcontext ctx;
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));

	/* Where pointers land: sizes interleaved, as a run's buffers are (2 B tests: 64 KiB). */
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	static const size_t sizes[] = { 4, 256, 1000, 4096, 65536, 131072, 1 << 20, 8 << 20 };
	enum { N = sizeof sizes / sizeof sizes[0], ROUNDS = 3 };
	CUdeviceptr ptrs[N * ROUNDS];
	int misaligned = 0;
	CUdeviceptr small = 0, aligned64k = 0;
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < N; i++) {
			CUdeviceptr *p = &ptrs[r * N + i];
			CHECK(cuMemAlloc(p, sizes[i]));
			printf("align size=%zu mod4k=%llu mod64k=%llu\n", sizes[i], *p % 4096, *p % 65536);
			if (*p % page != 0) {
				misaligned++;
				if (!small && sizes[i] <= 1000)
					small = *p;
			}
			if (!aligned64k && sizes[i] == 65536 && *p % page == 0)
				aligned64k = *p;
		}
	printf("misaligned=%d of=%d\n", misaligned, N * ROUNDS);

	if (!cuMemGetHandleForAddressRange) {
		printf("export_aligned=no cuMemGetHandleForAddressRange (CUDA < 11.7)\n");
	} else if (rc != 0 || attr == 0) {
		printf("export_aligned=not asked (dma-buf attribute %s)\n", rc ? name(rc) : "0");
	} else {
		if (aligned64k) {
			printf("export_aligned=%s\n", name(export(aligned64k, 65536)));
			printf("export_unaligned_ptr=%s\n", name(export(aligned64k + 256, 65536 - page)));
		} else {
			printf("export_aligned=no page-aligned 64 KiB allocation to try\n");
		}
		/* An off-page pointer (or, if none, a 256-byte allocation's page): its range rounded
		 * out to host pages, which reaches outside the allocation. */
		CUdeviceptr p = small ? small : ptrs[1];
		CUdeviceptr start = p - p % page;
		size_t len = ((p - start) + 256 + page - 1) / page * page;
		printf("export_page_below=%s\n", name(export(start, len)));
	}
	for (int i = 0; i < N * ROUNDS; i++)
		CHECK(cuMemFree(ptrs[i]));
	CHECK(cuCtxSetCurrent(NULL));
	CHECK(cuDevicePrimaryCtxRelease(dev));

	/* What a context costs: made and destroyed each time, against kept. */
	double t0 = now_ms();
	for (int i = 0; i < 5; i++) {
		CUdeviceptr p;
		CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
		CHECK(cuCtxSetCurrent(ctx));
		CHECK(cuMemAlloc(&p, 65536));
		CHECK(cuMemFree(p));
		CHECK(cuCtxSetCurrent(NULL));
		CHECK(cuDevicePrimaryCtxRelease(dev));
	}
	printf("ctx_create_ms=%.1f\n", (now_ms() - t0) / 5);
	CUcontext held;
	CHECK(cuDevicePrimaryCtxRetain(&held, dev));
	t0 = now_ms();
	for (int i = 0; i < 5; i++) {
		CUdeviceptr p;
		CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
		CHECK(cuCtxSetCurrent(ctx));
		CHECK(cuMemAlloc(&p, 65536));
		CHECK(cuMemFree(p));
		CHECK(cuDevicePrimaryCtxRelease(dev));
	}
	printf("ctx_kept_ms=%.1f\n", (now_ms() - t0) / 5);
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
